// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Repair's read of a damaged directory as it is, changing nothing
// (repair::ReadFiles, repair::Census: lib/admin/repair.h).

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "hq/clock.h"
#include "hq/status.h"
#include "leveldb/comparator.h"
#include "leveldb/db.h"
#include "leveldb/filter_policy.h"
#include "leveldb/table.h"
#include "leveldb/write_batch.h"
#include "lib/admin/repair.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/log_recovery.h"
#include "lib/engine/options_check.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/format/log_check.h"
#include "lib/format/manifest.h"
#include "lib/util/file_util.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"
#include "lib/util/sync.h"

namespace hq {
namespace repair {
namespace {

std::string Hex(std::string_view s) { return absl::BytesToHexString(Av(s)); }

// LevelDB's internal keys: user key, then fixed64 little-endian
// (sequence << 8 | type); type 1 is a value, 0 a deletion. DO NOT CHANGE:
// LevelDB's format (db/dbformat.h).
constexpr uint8_t kTypeValue = 1;

uint64_t Little64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

void PutLittle64(std::string* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst->push_back(static_cast<char>(v >> (8 * i)));
}

// LevelDB's order of internal keys (user keys bytewise, then newest
// first), so that tables read outside a Db can be merged and sought.
class InternalOrder final : public leveldb::Comparator {
 public:
  int Compare(const leveldb::Slice& a, const leveldb::Slice& b) const override {
    if (a.size() < 8 || b.size() < 8) return a.compare(b);
    const leveldb::Slice ua(a.data(), a.size() - 8), ub(b.data(), b.size() - 8);
    const int r = ua.compare(ub);
    if (r != 0) return r;
    const uint64_t na = Little64(a.data() + a.size() - 8);
    const uint64_t nb = Little64(b.data() + b.size() - 8);
    return na > nb ? -1 : (na < nb ? 1 : 0);
  }
  const char* Name() const override { return "leveldb.InternalKeyComparator"; }
  void FindShortestSeparator(std::string*,
                             const leveldb::Slice&) const override {}
  void FindShortSuccessor(std::string*) const override {}
};

const InternalOrder& Order() {
  static const InternalOrder* const kOrder = new InternalOrder;
  return *kOrder;
}

// A sorted stream of (internal key, value).
class Source {
 public:
  virtual ~Source() = default;
  virtual bool Valid() const = 0;
  virtual leveldb::Slice key() const = 0;
  virtual leveldb::Slice value() const = 0;
  virtual void Next() = 0;
};

// The entries of one table file that can be read. A damaged block is
// skipped (LevelDB's table iterator steps over it and keeps the first
// error): each skip is reported as damage, with the readable keys on
// either side, and the iterator is made again past it so that the next
// skip shows too.
class TableSource final : public Source {
 public:
  TableSource(std::string file, std::unique_ptr<leveldb::RandomAccessFile> f,
              std::unique_ptr<leveldb::Table> table, FileRead* out)
      : file_(std::move(file)),
        f_(std::move(f)),
        table_(std::move(table)),
        out_(out) {
    it_.reset(NewIterator());
    it_->SeekToFirst();
    Settle();
  }
  bool Valid() const override { return it_->Valid(); }
  leveldb::Slice key() const override { return it_->key(); }
  leveldb::Slice value() const override { return it_->value(); }
  void Next() override {
    prev_.assign(it_->key().data(), it_->key().size());
    it_->Next();
    Settle();
  }

 private:
  leveldb::Iterator* NewIterator() {
    leveldb::ReadOptions ro;
    ro.verify_checksums = true;
    ro.fill_cache = false;
    return table_->NewIterator(ro);
  }
  void Settle() {
    if (it_->Valid()) ++out_->entries;
    if (it_->status().ok()) return;
    const std::string after =
        prev_.empty() ? "the table's start" : Hex(manifest::UserKey(prev_));
    const std::string before = it_->Valid()
                                   ? Hex(manifest::UserKey(View(it_->key())))
                                   : std::string("the table's end");
    out_->damage.push_back({file_, it_->status().ToString(),
                            absl::StrCat("between ", after, " and ", before),
                            true});
    out_->gaps.push_back(
        {out_->damage.size() - 1, std::string(manifest::UserKey(prev_)),
         it_->Valid() ? std::string(manifest::UserKey(View(it_->key())))
                      : std::string()});
    if (!it_->Valid()) return;
    const std::string resume(it_->key().data(), it_->key().size());
    it_.reset(NewIterator());
    it_->Seek(resume);
  }

  const std::string file_;
  const std::unique_ptr<leveldb::RandomAccessFile> f_;
  const std::unique_ptr<leveldb::Table> table_;  // Reads f_.
  FileRead* const out_;
  std::unique_ptr<leveldb::Iterator> it_;  // Of table_.
  std::string prev_;
};

// Entries of the logs, sorted.
class VectorSource final : public Source {
 public:
  explicit VectorSource(std::vector<std::pair<std::string, std::string>> v)
      : v_(std::move(v)) {
    std::sort(v_.begin(), v_.end(), [](const auto& a, const auto& b) {
      return Order().Compare(a.first, b.first) < 0;
    });
  }
  bool Valid() const override { return i_ < v_.size(); }
  leveldb::Slice key() const override { return v_[i_].first; }
  leveldb::Slice value() const override { return v_[i_].second; }
  void Next() override { ++i_; }

 private:
  std::vector<std::pair<std::string, std::string>> v_;
  size_t i_ = 0;
};

// Adds the writes of one log record (a LevelDB WriteBatch: fixed64 LE
// sequence, fixed32 LE count, then per write a type byte, the key and, for
// a value, the value, each varint32-length-prefixed) to *entries. False if
// it does not decode.
bool AddBatch(std::string_view rep,
              std::vector<std::pair<std::string, std::string>>* entries) {
  if (rep.size() < 12) return false;
  uint64_t seq = Little64(rep.data());
  rep.remove_prefix(12);
  while (!rep.empty()) {
    const uint8_t type = static_cast<uint8_t>(rep[0]);
    rep.remove_prefix(1);
    std::string_view key, value;
    if (type > kTypeValue || !coding::GetLengthPrefixed(&rep, &key) ||
        (type == kTypeValue && !coding::GetLengthPrefixed(&rep, &value))) {
      return false;
    }
    std::string ikey(key);
    PutLittle64(&ikey, (seq++ << 8) | type);
    entries->emplace_back(std::move(ikey), std::string(value));
  }
  return true;
}

// The lane of message key `key` and its id, in words ("queue 'q'
// partition 1 priority 0", "1767225600000-3"); false if it is not a
// message of a queue in the catalog.
bool DescribeMessage(const Census& census, std::string_view key,
                     std::string* lane, std::string* id) {
  if (key.size() < LayoutCodec::kHeadSize + LayoutCodec::kMessageIdSize ||
      key[0] != format::kMessageTag) {
    return false;
  }
  const uint32_t qid = coding::DecodeFixed32(key.data() + 1);
  auto layout = census.layouts().find(qid);
  auto name = census.names().find(qid);
  DecodedKey d;
  if (layout == census.layouts().end() || name == census.names().end() ||
      !LayoutCodec::For(layout->second).DecodeMessageKey(key, qid, &d)) {
    return false;
  }
  *lane =
      absl::StrFormat("queue '%s' partition %d priority %d%s", name->second,
                      d.partition, d.priority,
                      layout->second == Layout::kTopic
                          ? absl::StrCat(" topic '", Printable(d.topic), "'")
                          : "");
  *id = d.id == MessageId::Max() ? "the lane's end" : d.id.ToString();
  return true;
}

// Adds what an unreadable block held, in hq's terms, where both sides of
// the gap are messages.
void DescribeGaps(FileRead* out) {
  for (const FileRead::Gap& g : out->gaps) {
    std::string lane_a, id_a, lane_b, id_b;
    const bool a = DescribeMessage(out->census, g.before, &lane_a, &id_a);
    const bool b = DescribeMessage(out->census, g.after, &lane_b, &id_b);
    std::string& text = out->damage[g.damage].lost_keys;
    if (a && b && lane_a == lane_b) {
      absl::StrAppend(&text, " (messages of ", lane_a, " after ", id_a,
                      " and before ", id_b, ")");
    } else if (a && b) {
      absl::StrAppend(&text, " (from ", lane_a, " after ", id_a, " to ", lane_b,
                      " before ", id_b, ")");
    } else if (b) {
      absl::StrAppend(&text, " (up to ", lane_b, " before ", id_b, ")");
    } else if (a) {
      absl::StrAppend(&text, " (from ", lane_a, " after ", id_a, ")");
    }
  }
}

std::string TableName(uint64_t number) {
  return absl::StrFormat("%06d.ldb", number);
}

// The MANIFEST that CURRENT names, as far as it can be read: only to
// report it, and the key range of each table it names.
struct ManifestView {
  bool read = false;  // False: CURRENT or the MANIFEST is missing or damaged.
  manifest::State state;

  // "from K1 to K2", the keys of table `number` the MANIFEST records, or
  // "" if it records none.
  std::string Range(uint64_t number) const {
    if (!read) return "";
    auto it = state.tables.find(number);
    if (it == state.tables.end()) return "";
    return absl::StrCat("from ", Hex(manifest::UserKey(it->second.smallest)),
                        " to ", Hex(manifest::UserKey(it->second.largest)));
  }
};

// Reads CURRENT and the MANIFEST it names; reports each missing or damaged
// one, and each table the MANIFEST names that is not among `tables`.
ManifestView ReadManifest(leveldb::Env* env, const std::string& dir,
                          const std::map<uint64_t, std::string>& tables,
                          FileRead* out) {
  ManifestView view;
  std::string current;
  if (!env->FileExists(dir + "/CURRENT")) {
    out->damage.push_back({"CURRENT", "missing", ""});
    return view;
  }
  std::string_view name;
  if (!leveldb::ReadFileToString(env, dir + "/CURRENT", &current).ok() ||
      !manifest::ParseCurrent(current, &name)) {
    out->damage.push_back({"CURRENT", "does not name a MANIFEST", ""});
    return view;
  }
  std::string data, error;
  if (!leveldb::ReadFileToString(env, absl::StrCat(dir, "/", Av(name)), &data)
           .ok()) {
    out->damage.push_back({std::string(name), "missing or unreadable", ""});
  } else if (!manifest::Read(data, &view.state, &error)) {
    out->damage.push_back({std::string(name), error, ""});
  } else {
    view.read = true;
    for (const auto& [number, t] : view.state.tables) {
      if (!tables.contains(number)) {
        out->damage.push_back({TableName(number),
                               "missing (the MANIFEST names it)",
                               view.Range(number), true});
      }
    }
  }
  return view;
}

// Opens each of `tables` as a source of entries; a table that cannot be
// opened is damage, reported with its size against the MANIFEST's.
absl::Status OpenTables(leveldb::Env* env, const std::string& dir,
                        const std::map<uint64_t, std::string>& tables,
                        const ManifestView& manifest, FileRead* out,
                        std::vector<std::unique_ptr<Source>>* sources) {
  for (const auto& [n, name] : tables) {
    ++out->tables;
    const std::string path = dir + "/" + name;
    uint64_t size = 0;
    leveldb::Status s = env->GetFileSize(path, &size);
    if (!s.ok()) return file_util::FromIo(s, absl::StrCat("reading ", path));
    leveldb::RandomAccessFile* raw_file = nullptr;
    s = env->NewRandomAccessFile(path, &raw_file);
    if (!s.ok()) return file_util::FromIo(s, absl::StrCat("reading ", path));
    std::unique_ptr<leveldb::RandomAccessFile> file(raw_file);
    leveldb::Options o;
    o.comparator = &Order();
    o.paranoid_checks = true;
    leveldb::Table* raw_table = nullptr;
    s = leveldb::Table::Open(o, file.get(), size, &raw_table);
    if (!s.ok()) {
      std::string what = s.ToString();
      if (auto it = manifest.state.tables.find(n);
          manifest.read && it != manifest.state.tables.end() &&
          it->second.bytes != size) {
        absl::StrAppend(&what, " (", size, " bytes; the MANIFEST says ",
                        it->second.bytes, ")");
      }
      out->damage.push_back({name, what, manifest.Range(n), true});
      continue;
    }
    sources->push_back(std::make_unique<TableSource>(
        name, std::move(file), std::unique_ptr<leveldb::Table>(raw_table),
        out));
  }
  return absl::OkStatus();
}

// Adds one source of the writes in `logs`, read in number order up to the
// first damaged record.
absl::Status ReadLogs(leveldb::Env* env, const std::string& dir,
                      const std::map<uint64_t, std::string>& logs,
                      FileRead* out,
                      std::vector<std::unique_ptr<Source>>* sources) {
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [n, name] : logs) {
    ++out->logs;
    std::string data;
    const leveldb::Status s =
        leveldb::ReadFileToString(env, dir + "/" + name, &data);
    if (!s.ok()) return file_util::FromIo(s, absl::StrCat("reading ", name));
    const log_check::LogCheck c =
        log_check::Check(data, [&](std::string_view record) {
          if (AddBatch(record, &entries)) ++out->entries;
        });
    if (c.state == log_check::LogCheck::State::kDamaged) {
      out->log_damaged = true;
      break;
    }
  }
  sources->push_back(std::make_unique<VectorSource>(std::move(entries)));
  return absl::OkStatus();
}

// Merges `sources` as LevelDB would, the smallest internal key first, and
// adds the newest entry of each user key, if it is a value, to the census.
void MergeIntoCensus(const std::vector<std::unique_ptr<Source>>& sources,
                     FileRead* out) {
  auto greater = [](const Source* a, const Source* b) {
    return Order().Compare(a->key(), b->key()) > 0;
  };
  std::priority_queue<Source*, std::vector<Source*>, decltype(greater)> heap(
      greater);
  for (const auto& src : sources) {
    if (src->Valid()) heap.push(src.get());
  }
  std::string last_user_key;
  bool have_last = false;
  while (!heap.empty()) {
    Source* src = heap.top();
    heap.pop();
    const std::string_view ikey = View(src->key());
    if (ikey.size() >= 8) {
      const std::string_view user_key = manifest::UserKey(ikey);
      if (!have_last || user_key != last_user_key) {
        have_last = true;
        last_user_key.assign(user_key);
        const uint8_t type = static_cast<uint8_t>(ikey[ikey.size() - 8]);
        if (type == kTypeValue) out->census.Add(user_key, View(src->value()));
      }
    }
    src->Next();
    if (src->Valid()) heap.push(src);
  }
}

}  // namespace

void Census::Add(std::string_view key, std::string_view value) {
  ++keys_;
  if (key.empty() || (static_cast<unsigned char>(key[0]) > format::kPaceTag &&
                      key[0] != format::kMessageTag)) {
    ++foreign_keys_;
    return;
  }
  if (key[0] == format::kMetaTag) {
    std::string_view in = value;
    uint32_t v = 0;
    const bool decodes = coding::GetFixed32(&in, &v) && in.empty();
    if (key.substr(1) == "format") {
      has_format_ = true;
      format_version_ = decodes ? v : 0;
    } else if (key.substr(1) == "next_queue_id") {
      has_hq_records_ = true;
    }
    return;
  }
  if (key[0] == format::kCatalogTag) {
    format::QueueRecord r;
    if (format::DecodeQueueRecord(value, &r).ok()) {
      has_hq_records_ = true;
      names_[r.id] = std::string(key.substr(1));
      layouts_[r.id] = r.options.layout;
    }
    return;
  }
  if (key[0] != format::kMessageTag ||
      key.size() < LayoutCodec::kHeadSize + LayoutCodec::kMessageIdSize) {
    return;
  }
  const uint32_t qid = coding::DecodeFixed32(key.data() + 1);
  bool message;
  if (auto it = layouts_.find(qid); it != layouts_.end()) {
    DecodedKey d;
    message = LayoutCodec::For(it->second).DecodeMessageKey(key, qid, &d) &&
              !(d.id == MessageId::Max());
  } else {
    // A queue missing from the catalog: its keys that are not fences (a
    // fence ends with Max(), eight 0xff bytes).
    message = key.substr(key.size() - 8) != std::string_view(
                                                "\xff\xff\xff\xff"
                                                "\xff\xff\xff\xff",
                                                8);
  }
  if (message) {
    ++messages_;
    ++per_queue_[qid];
    std::string_view k, payload;
    if (format::DecodeMessageValue(value, &k, &payload)) ++decoded_messages_;
  }
}

absl::Status ReadFiles(leveldb::Env* env, const std::string& dir,
                       FileRead* out) {
  std::vector<std::string> children;
  leveldb::Status s = env->GetChildren(dir, &children);
  if (!s.ok()) return file_util::FromIo(s, absl::StrCat("listing ", dir));
  std::map<uint64_t, std::string> tables, logs;
  for (const std::string& c : children) {
    uint64_t n;
    if (manifest::ParseTableName(c, &n)) tables[n] = c;
    if (manifest::ParseLogName(c, &n)) logs[n] = c;
  }
  const ManifestView manifest = ReadManifest(env, dir, tables, out);
  std::vector<std::unique_ptr<Source>> sources;
  HQ_RETURN_IF_ERROR(OpenTables(env, dir, tables, manifest, out, &sources));
  HQ_RETURN_IF_ERROR(ReadLogs(env, dir, logs, out, &sources));
  MergeIntoCensus(sources, out);
  DescribeGaps(out);
  return absl::OkStatus();
}

}  // namespace repair
}  // namespace hq
