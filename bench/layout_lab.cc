// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "bench/layout_lab.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "bench/bench_util.h"
#include "leveldb/db.h"
#include "leveldb/iterator.h"
#include "leveldb/write_batch.h"
#include "lib/util/status_macros.h"

namespace hq::bench {
namespace {

enum class Field { kSalt, kIndex, kSegment, kTime, kJob };

struct LabLayout {
  std::string name;
  std::vector<Field> fields;
  bool scan = false;  // `index` is last: a segment is one key range.
};

absl::StatusOr<LabLayout> ParseLayout(const std::string& name) {
  LabLayout layout;
  layout.name = name;
  bool seen[5] = {};
  for (absl::string_view part : absl::StrSplit(name, '_')) {
    Field f;
    if (part == "salt") {
      f = Field::kSalt;
    } else if (part == "index") {
      f = Field::kIndex;
    } else if (part == "segment") {
      f = Field::kSegment;
    } else if (part == "time") {
      f = Field::kTime;
    } else if (part == "job") {
      f = Field::kJob;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("layout '", name, "': unknown field '", part,
                       "' (fields: salt, index, segment, time, job)"));
    }
    bool& s = seen[static_cast<int>(f)];
    if (s) {
      return absl::InvalidArgumentError(
          absl::StrCat("layout '", name, "': field '", part, "' twice"));
    }
    s = true;
    layout.fields.push_back(f);
  }
  for (Field f : {Field::kIndex, Field::kSegment, Field::kTime, Field::kJob}) {
    if (!seen[static_cast<int>(f)]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layout '", name,
          "' must hold index, segment, time and job (salt is optional)"));
    }
  }
  layout.scan = layout.fields.back() == Field::kIndex;
  return layout;
}

// The messages: segment s belongs to job s % 4, run at a time that steps a
// minute every 4 segments, and has a salt of 4 letters drawn at random.
class LabData {
 public:
  explicit LabData(const LayoutLabOptions& o)
      : segment_size_(o.segment_size),
        segments_(std::max<int64_t>(1, o.messages / o.segment_size)),
        value_size_(std::max<size_t>(o.value_size, 16)) {
    index_width_ = static_cast<int>(absl::StrCat(segment_size_ - 1).size());
    index_width_ = std::max(index_width_, 5);
    std::mt19937_64 rng(2016);
    std::uniform_int_distribution<int> letter('a', 'z');
    for (int64_t s = 0; s < segments_; ++s) {
      std::string salt(4, 'a');
      for (char& c : salt) c = static_cast<char>(letter(rng));
      salts_.push_back(std::move(salt));
    }
    // Filler: half random printable bytes, half their repeat (Snappy
    // halves it, as db_bench's values).
    std::uniform_int_distribution<int> printable(' ', '~');
    filler_.resize(value_size_);
    for (size_t i = 0; i < value_size_; ++i) {
      filler_[i] = i < value_size_ / 2 ? static_cast<char>(printable(rng))
                                       : filler_[i - value_size_ / 2];
    }
  }

  int64_t segments() const { return segments_; }
  int64_t segment_size() const { return segment_size_; }

  void AppendField(std::string* key, Field f, int64_t segment,
                   int64_t index) const {
    switch (f) {
      case Field::kSalt:
        key->append(salts_[static_cast<size_t>(segment)]);
        break;
      case Field::kIndex:
        absl::StrAppendFormat(key, "%0*d", index_width_, index);
        break;
      case Field::kSegment:
        absl::StrAppendFormat(key, "%06d", segment);
        break;
      case Field::kTime:
        absl::StrAppendFormat(key, "%013d",
                              int64_t{1700000000000} + segment / 4 * 60000);
        break;
      case Field::kJob:
        absl::StrAppendFormat(key, "%08d", 10000000 + segment % 4);
        break;
    }
  }

  void Key(const LabLayout& layout, int64_t segment, int64_t index,
           std::string* key) const {
    key->clear();
    for (size_t i = 0; i < layout.fields.size(); ++i) {
      if (i > 0) key->push_back('_');
      AppendField(key, layout.fields[i], segment, index);
    }
  }

  // The key of `segment` up to (not including) its index: the prefix every
  // message of the segment shares when `index` is last.
  void SegmentPrefix(const LabLayout& layout, int64_t segment,
                     std::string* key) const {
    key->clear();
    for (size_t i = 0; i + 1 < layout.fields.size(); ++i) {
      AppendField(key, layout.fields[i], segment, 0);
      key->push_back('_');
    }
  }

  // 16 bytes naming the message, then filler.
  void Value(int64_t segment, int64_t index, std::string* value) const {
    value->assign(filler_);
    const std::string id = absl::StrFormat("%08x%08x", segment, index);
    value->replace(0, 16, id);
  }
  static bool ValueIs(std::string_view value, int64_t segment, int64_t index) {
    return value.size() >= 16 &&
           value.substr(0, 16) == absl::StrFormat("%08x%08x", segment, index);
  }

 private:
  const int64_t segment_size_;
  const int64_t segments_;
  const size_t value_size_;
  int index_width_ = 5;
  std::vector<std::string> salts_;
  std::string filler_;
};

absl::StatusOr<Result> Write(const LabData& data, const LabLayout& layout,
                             leveldb::DB* db, size_t value_size) {
  std::string key, value;
  leveldb::WriteBatch batch;
  int64_t written = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  for (int64_t base = 0; base < data.segment_size(); base += 100) {
    const int64_t end = std::min(data.segment_size(), base + 100);
    for (int64_t s = 0; s < data.segments(); ++s) {
      for (int64_t i = base; i < end; ++i) {
        data.Key(layout, s, i, &key);
        data.Value(s, i, &value);
        batch.Put(key, value);
        if (++written % 1000 == 0) {
          HQ_RETURN_IF_ERROR(FromLevelDb(db->Write({}, &batch), "Write"));
          batch.Clear();
        }
      }
    }
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(db->Write({}, &batch), "Write"));
  return Result{MicrosSince(start) / 1e6, written,
                written * static_cast<int64_t>(value_size)};
}

absl::StatusOr<Result> Read(const LabData& data, const LabLayout& layout,
                            leveldb::DB* db,
                            const std::vector<int64_t>& segments,
                            size_t value_size) {
  std::string key, value;
  int64_t read = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  for (const int64_t s : segments) {
    if (layout.scan) {
      std::string prefix;
      data.SegmentPrefix(layout, s, &prefix);
      std::unique_ptr<leveldb::Iterator> it(db->NewIterator({}));
      int64_t i = 0;
      for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
           it->Next(), ++i) {
        const leveldb::Slice v = it->value();
        if (!LabData::ValueIs(std::string_view(v.data(), v.size()), s, i)) {
          return absl::DataLossError(absl::StrFormat(
              "%s: segment %d message %d: wrong value", layout.name, s, i));
        }
      }
      HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "iterating"));
      if (i != data.segment_size()) {
        return absl::DataLossError(
            absl::StrFormat("%s: segment %d: scanned %d messages of %d",
                            layout.name, s, i, data.segment_size()));
      }
      read += i;
    } else {
      for (int64_t i = 0; i < data.segment_size(); ++i) {
        data.Key(layout, s, i, &key);
        HQ_RETURN_IF_ERROR(FromLevelDb(db->Get({}, key, &value), key));
        if (!LabData::ValueIs(value, s, i)) {
          return absl::DataLossError(absl::StrFormat(
              "%s: segment %d message %d: wrong value", layout.name, s, i));
        }
        ++read;
      }
    }
  }
  return Result{MicrosSince(start) / 1e6, read,
                read * static_cast<int64_t>(value_size)};
}

}  // namespace

absl::Status CheckLabLayout(const std::string& name) {
  return ParseLayout(name).status();
}

absl::Status RunLayoutLab(const LayoutLabOptions& lab, const Options& hq,
                          const std::string& dir) {
  if (lab.layouts.empty()) {
    return absl::InvalidArgumentError("--lab_layouts is empty");
  }
  if (lab.segment_size < 1 || lab.read_segments < 1) {
    return absl::InvalidArgumentError(
        "--lab_segment_size and --lab_read_segments must be >= 1");
  }
  std::vector<LabLayout> layouts;
  for (const std::string& name : lab.layouts) {
    HQ_ASSIGN_OR_RETURN(LabLayout l, ParseLayout(name));
    layouts.push_back(std::move(l));
  }
  const LabData data(lab);
  // The segments read: the same random ones for every layout.
  std::vector<int64_t> segments(static_cast<size_t>(data.segments()));
  std::iota(segments.begin(), segments.end(), 0);
  std::shuffle(segments.begin(), segments.end(), std::mt19937_64(7));
  segments.resize(static_cast<size_t>(
      std::min<int64_t>(lab.read_segments, data.segments())));
  std::printf("layout_lab : %lld segments of %lld messages; reading %zu\n",
              static_cast<long long>(data.segments()),
              static_cast<long long>(data.segment_size()), segments.size());
  for (const LabLayout& layout : layouts) {
    std::printf("layout_lab %s : reads a segment with %s\n",
                layout.name.c_str(),
                layout.scan ? "one scan" : "one Get per message");
  }

  std::vector<Result> reads;
  for (const LabLayout& layout : layouts) {
    const std::string path = absl::StrCat(dir, "/lab-", layout.name);
    RawDb raw;
    HQ_RETURN_IF_ERROR(OpenFreshRawDb(hq, path, &raw));
    HQ_ASSIGN_OR_RETURN(const Result write,
                        Write(data, layout, raw.db.get(), lab.value_size));
    PrintLine(absl::StrCat("lab_write[", layout.name, "]"), write);
    WaitForCompactions(raw.db.get());
    // Reopen: a cold block cache.
    HQ_RETURN_IF_ERROR(ReopenRawDb(hq, path, &raw));
    leveldb::DB* db = raw.db.get();
    HQ_ASSIGN_OR_RETURN(const Result read,
                        Read(data, layout, db, segments, lab.value_size));
    PrintLine(absl::StrCat("lab_read[", layout.name, "]"), read);
    std::fflush(stdout);
    reads.push_back(read);
  }
  for (size_t i = 1; i < layouts.size(); ++i) {
    PrintRatio(absl::StrCat("layout_lab_read[", layouts[i].name, "]/[",
                            layouts[0].name, "]"),
               reads[i], reads[0]);
  }
  return absl::OkStatus();
}

}  // namespace hq::bench
