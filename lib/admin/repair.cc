// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Repair (hq/db.h has the steps and the contract):
//   - repair::ReadFiles: the read of the files as they were ("before");
//   - CopyAside: the copy of the directory beside it;
//   - CutAllLogs (lib/engine/log_recovery.h) and LevelDB's RepairDB;
//   - RecreateLostQueues: catalog records written again for queues whose
//     record was lost while their messages remain;
//   - Mender: one pass over the repaired LevelDB in key order that mends
//     hq's records. It checks what Db::Verify checks (lib/admin/verify.cc), in
//     the same order and with the same per-queue memory, and for each
//     problem either corrects the record (a counter, a cursor beyond its
//     lane's end, an empty value), adds a missing one (lane directory
//     entry, reservation, TTL index record, fence) or moves the record
//     aside into a LevelDB of its own (SideDb): nothing is deleted.
// A record that Verify would accept is never changed.

#include "lib/admin/repair.h"

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

}  // namespace

void Census::Add(std::string_view key, std::string_view value) {
  ++keys_;
  if (key.empty() ||
      (static_cast<unsigned char>(key[0]) > format::kCheckpointTag &&
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

namespace {
std::atomic<bool> skip_mending{false};
}  // namespace

void TEST_SetSkipMending(bool skip) { skip_mending.store(skip); }

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

  // CURRENT and the MANIFEST it names: only to report them, and the
  // tables the MANIFEST names that are missing.
  manifest::State state;
  bool have_state = false;
  std::string current;
  if (!env->FileExists(dir + "/CURRENT")) {
    out->damage.push_back({"CURRENT", "missing", ""});
  } else if (!leveldb::ReadFileToString(env, dir + "/CURRENT", &current).ok() ||
             current.empty() || current.back() != '\n') {
    out->damage.push_back({"CURRENT", "does not name a MANIFEST", ""});
  } else {
    current.pop_back();
    uint64_t n;
    std::string data, error;
    if (!manifest::ParseManifestName(current, &n)) {
      out->damage.push_back({"CURRENT", "does not name a MANIFEST", ""});
    } else if (!leveldb::ReadFileToString(env, dir + "/" + current, &data)
                    .ok()) {
      out->damage.push_back({current, "missing or unreadable", ""});
    } else if (!manifest::Read(data, &state, &error)) {
      out->damage.push_back({current, error, ""});
    } else {
      have_state = true;
    }
  }
  auto range = [&](uint64_t number) -> std::string {
    if (!have_state) return "";
    auto it = state.tables.find(number);
    if (it == state.tables.end()) return "";
    return absl::StrCat("from ", Hex(manifest::UserKey(it->second.smallest)),
                        " to ", Hex(manifest::UserKey(it->second.largest)));
  };
  if (have_state) {
    for (const auto& [n, t] : state.tables) {
      if (!tables.contains(n)) {
        out->damage.push_back(
            {TableName(n), "missing (the MANIFEST names it)", range(n), true});
      }
    }
  }

  std::vector<std::unique_ptr<Source>> sources;
  for (const auto& [n, name] : tables) {
    ++out->tables;
    const std::string path = dir + "/" + name;
    uint64_t size = 0;
    s = env->GetFileSize(path, &size);
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
      if (have_state && state.tables.contains(n) &&
          state.tables[n].bytes != size) {
        absl::StrAppend(&what, " (", size, " bytes; the MANIFEST says ",
                        state.tables[n].bytes, ")");
      }
      out->damage.push_back({name, what, range(n), true});
      continue;
    }
    sources.push_back(std::make_unique<TableSource>(
        name, std::move(file), std::unique_ptr<leveldb::Table>(raw_table),
        out));
  }

  // The logs, in number order, up to the first damaged record.
  std::vector<std::pair<std::string, std::string>> entries;
  for (const auto& [n, name] : logs) {
    ++out->logs;
    std::string data;
    s = leveldb::ReadFileToString(env, dir + "/" + name, &data);
    if (!s.ok()) return file_util::FromIo(s, absl::StrCat("reading ", name));
    const log_check::LogCheck c =
        log_check::Check(data, [&](std::string_view record) {
          if (AddBatch(record, &entries)) ++out->entries;
        });
    if (c.state == log_check::LogCheck::State::kDamaged) break;
  }
  sources.push_back(std::make_unique<VectorSource>(std::move(entries)));

  // Merge: the smallest internal key first; for each user key only its
  // newest entry counts.
  auto greater = [](const Source* a, const Source* b) {
    return Order().Compare(a->key(), b->key()) > 0;
  };
  std::priority_queue<Source*, std::vector<Source*>, decltype(greater)> heap(
      greater);
  for (auto& src : sources) {
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
  DescribeGaps(out);
  return absl::OkStatus();
}

namespace {

// Collects what LevelDB's RepairDB logs.
class CaptureLogger final : public leveldb::Logger {
 public:
  void Logv(const char* format, va_list ap) override {
    char buf[1024];
    std::vsnprintf(buf, sizeof buf, format, ap);
    std::string line(buf);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) {
      line.pop_back();
    }
    MutexLock l(&mu_);
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> lines() {
    MutexLock l(&mu_);
    return lines_;
  }

 private:
  Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

// Where records that cannot be mended go: a LevelDB database of their own,
// created at the first one.
class SideDb {
 public:
  SideDb(leveldb::Env* env, std::string dir)
      : env_(env), dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }
  bool used() const { return db_ != nullptr; }

  absl::Status Write(leveldb::WriteBatch* b) {
    if (db_ == nullptr) {
      const size_t slash = dir_.rfind('/');
      if (slash != std::string::npos) env_->CreateDir(dir_.substr(0, slash));
      leveldb::Options o;
      o.env = env_;
      o.create_if_missing = true;
      o.paranoid_checks = true;
      leveldb::DB* raw = nullptr;
      leveldb::Status s = leveldb::DB::Open(o, dir_, &raw);
      if (!s.ok()) {
        return file_util::FromIo(s, absl::StrCat("creating ", dir_));
      }
      db_.reset(raw);
    }
    leveldb::WriteOptions wo;
    wo.sync = true;
    return file_util::FromIo(db_->Write(wo, b),
                             absl::StrCat("writing to ", dir_));
  }

 private:
  leveldb::Env* const env_;
  const std::string dir_;
  std::unique_ptr<leveldb::DB> db_;
};

struct QueueEntry {
  std::string name;
  format::QueueRecord record;
  bool has_ttl_record = false;
  absl::flat_hash_set<uint32_t> groups;
  absl::flat_hash_set<uint32_t> subs;
};

using Action = RepairReport::Change::Action;

// One pass over the repaired LevelDB, in key order, on a snapshot; its
// changes are written in batches as it goes (records moved aside are
// written to the side Db first). Checks mirror lib/admin/verify.cc's Verifier.
class Mender {
 public:
  Mender(leveldb::DB* db, absl::Time now, SideDb* side, RepairReport* report)
      : db_(db), now_(now), side_(side), report_(report) {
    ro_ = CheckedReadOptions();
    ro_.fill_cache = false;
    ro_.snapshot = db_->GetSnapshot();
  }
  ~Mender() { db_->ReleaseSnapshot(ro_.snapshot); }

  // Returns the number of changes made.
  absl::StatusOr<int64_t> Run() {
    HQ_RETURN_IF_ERROR(ReadDropMarkers());
    {
      std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(db_, ro_));
      lane_it_.reset(NewCheckedIterator(db_, ro_));
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        key_ = View(it->key());
        value_ = View(it->value());
        Check();
        HQ_RETURN_IF_ERROR(status_);
        if (fix_.ApproximateSize() + aside_.ApproximateSize() > (4 << 20)) {
          HQ_RETURN_IF_ERROR(Flush());
        }
      }
      HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "repair: reading"));
      HQ_RETURN_IF_ERROR(
          FromLevelDb(lane_it_->status(), "repair: reading a lane"));
      lane_it_.reset();
    }
    EndLane();
    Finish();
    HQ_RETURN_IF_ERROR(status_);
    HQ_RETURN_IF_ERROR(Flush());
    return changes_;
  }

 private:
  // ---- Changes.

  void Note(std::string_view key, std::string problem, Action action) {
    ++changes_;
    ++report_->change_count;
    if (report_->changes.size() < RepairReport::kMaxListedChanges) {
      report_->changes.push_back({Hex(key), std::move(problem), action});
    }
  }
  // Moves the current record aside.
  void Aside(std::string problem) {
    aside_.Put(leveldb::Slice(key_.data(), key_.size()),
               leveldb::Slice(value_.data(), value_.size()));
    fix_.Delete(leveldb::Slice(key_.data(), key_.size()));
    ++report_->moved_aside;
    Note(key_, absl::StrCat(problem, ": moved aside"), Action::kMovedAside);
  }
  void Write(std::string_view key, std::string_view value, std::string problem,
             Action action) {
    fix_.Put(leveldb::Slice(key.data(), key.size()),
             leveldb::Slice(value.data(), value.size()));
    Note(key, std::move(problem), action);
  }
  absl::Status Flush() {
    leveldb::WriteBatch empty;
    if (aside_.ApproximateSize() > empty.ApproximateSize()) {
      HQ_RETURN_IF_ERROR(side_->Write(&aside_));
      aside_.Clear();
    }
    if (fix_.ApproximateSize() > empty.ApproximateSize()) {
      leveldb::WriteOptions wo;
      wo.sync = true;
      HQ_RETURN_IF_ERROR(FromLevelDb(db_->Write(wo, &fix_), "repair: writing"));
      fix_.Clear();
    }
    return absl::OkStatus();
  }

  static uint64_t PartitionKey(uint32_t queue_id, uint32_t partition) {
    return (uint64_t{queue_id} << 16) | partition;
  }
  // Records that `id` is referred to in a partition (see Finish).
  void Refer(uint32_t queue_id, uint32_t partition, MessageId id) {
    uint64_t& m = referred_[PartitionKey(queue_id, partition)];
    m = std::max(m, id.ms);
  }

  // ---- The walk (as Verifier's).

  absl::Status ReadDropMarkers() {
    std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(db_, ro_));
    const std::string prefix = format::DropPrefix();
    for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
         it->Next()) {
      const std::string_view key = View(it->key());
      if (key.size() == 5) {
        const uint32_t id = coding::DecodeFixed32(key.data() + 1);
        dropping_.insert(id);
        max_queue_id_ = std::max(max_queue_id_, id);
      }
    }
    return FromLevelDb(it->status(), "repair: reading drop markers");
  }

  void Check() {
    if (key_.empty()) return Aside("empty key");
    if (key_[0] != format::kMessageTag) EndLane();
    switch (key_[0]) {
      case format::kMetaTag:
        return CheckMeta();
      case format::kCatalogTag:
        return CheckCatalog();
      case format::kReserveTag:
        return CheckReserve();
      case format::kDropTag:
        if (key_.size() != 5) Aside("malformed drop marker");
        return;
      case format::kLaneDirTag:
        return CheckLaneDir();
      case format::kTtlTag:
        return CheckTtl();
      case format::kGroupTag:
        return CheckGroupOrSub(/*is_group=*/true);
      case format::kSubTag:
        return CheckGroupOrSub(/*is_group=*/false);
      case format::kCursorTag:
        return CheckCursor();
      case format::kTaskTag:
        return CheckTask();
      case format::kDeadTag:
        return CheckDead();
      case format::kDedupTag:
        return CheckDedup();
      case format::kCheckpointTag:
        return CheckCheckpoint();
      case format::kMessageTag:
        return CheckMessage();
      default:
        return Aside(absl::StrFormat("unknown record tag 0x%02x",
                                     static_cast<unsigned char>(key_[0])));
    }
  }

  static bool DecodeU32(std::string_view in, uint32_t* v) {
    return coding::GetFixed32(&in, v) && in.empty();
  }

  void CheckMeta() {
    const std::string_view name = key_.substr(1);
    uint32_t v;
    if (name == "format") {
      has_format_ = true;
      if (!DecodeU32(value_, &v)) {
        Write(key_, Fixed32(format::kFormatVersion),
              "malformed format record: rewritten", Action::kRewritten);
      }
      return;
    }
    if (name == "next_queue_id") {
      has_next_queue_id_ = true;
      if (DecodeU32(value_, &v)) {
        next_queue_id_ = v;
      } else {
        bad_next_queue_id_ = true;
      }
      return;
    }
    if (name == "next_group_id") {
      has_next_group_id_ = true;
      if (DecodeU32(value_, &v) && v != 0) {
        next_group_id_ = v;
      } else {
        bad_next_group_id_ = true;
      }
      return;
    }
    Aside(absl::StrCat("unknown metadata record '", Printable(name), "'"));
  }

  void CheckCatalog() {
    const std::string_view name = key_.substr(1);
    if (absl::Status s = format::ValidateQueueName(name); !s.ok()) {
      return Aside(absl::StrCat("malformed catalog key: ", s.message()));
    }
    format::QueueRecord r;
    if (absl::Status s = format::DecodeQueueRecord(value_, &r); !s.ok()) {
      return Aside(absl::StrCat("malformed catalog value: ", s.message()));
    }
    if (r.id == 0) return Aside("queue id 0");
    if (queues_.contains(r.id)) {
      return Aside(absl::StrFormat("queue id %d used by queues '%s' and '%s'",
                                   r.id, queues_[r.id].name, Printable(name)));
    }
    max_queue_id_ = std::max(max_queue_id_, r.id);
    queues_[r.id] = QueueEntry{std::string(name), r};
  }

  // As Verifier::QueueOf; what it rejects is moved aside, except the
  // records of a queue being dropped (Open finishes the drop).
  QueueEntry* QueueOf(std::string_view kind, size_t min_size) {
    if (key_.size() < min_size) {
      Aside(absl::StrCat("malformed ", Av(kind), " key (too short)"));
      return nullptr;
    }
    const uint32_t id = coding::DecodeFixed32(key_.data() + 1);
    auto it = queues_.find(id);
    if (it != queues_.end()) return &it->second;
    if (!dropping_.contains(id)) {
      Aside(absl::StrFormat("%s of queue id %d, which is not in the catalog",
                            kind, id));
    }
    return nullptr;
  }

  bool Lane(std::string_view kind, const QueueEntry& q, std::string_view lane,
            uint32_t* partition = nullptr) {
    uint32_t p;
    int priority;
    std::string_view topic;
    const bool has_topic = q.record.options.layout == Layout::kTopic;
    if (!LayoutCodec::ParseLanePrefix(lane, has_topic, &p, &priority, &topic) ||
        topic.size() > format::kMaxTopicBytes) {
      Aside(absl::StrCat("malformed ", Av(kind), " key: not a lane of queue '",
                         q.name, "'"));
      return false;
    }
    if (p >= q.record.options.partitions ||
        priority >= q.record.options.priorities) {
      Aside(absl::StrFormat(
          "%s key: partition %d or priority %d out of range of queue '%s'",
          kind, p, priority, q.name));
      return false;
    }
    if (partition != nullptr) *partition = p;
    return true;
  }

  static std::string LanePrefix(uint32_t queue_id, std::string_view rest) {
    std::string lane = format::MessagePrefix(queue_id);
    lane.append(rest);
    return lane;
  }

  static std::string Fixed32(uint32_t v) {
    std::string s;
    coding::PutFixed32(&s, v);
    return s;
  }
  static std::string Fixed64(uint64_t v) {
    std::string s;
    coding::PutFixed64(&s, v);
    return s;
  }

  void CheckReserve() {
    QueueEntry* q = QueueOf("reservation", 5);
    if (q == nullptr) return;
    if (key_.size() != 7) return Aside("malformed reservation key");
    const uint32_t p = coding::DecodeFixed16(key_.data() + 5);
    if (p >= q->record.options.partitions) {
      return Aside(absl::StrFormat(
          "reservation key: partition %d out of range (queue '%s' has %d)", p,
          q->name, q->record.options.partitions));
    }
    std::string_view in = value_;
    uint64_t ms;
    const uint64_t pk = PartitionKey(q->record.id, p);
    if (!coding::GetFixed64(&in, &ms) || !in.empty() ||
        ms > MessageId::kMaxMs + 1) {
      bad_reservation_.insert(pk);
      return;
    }
    reserved_[pk] = ms;
  }

  void CheckLaneDir() {
    QueueEntry* q = QueueOf("lane directory", LayoutCodec::kHeadSize);
    if (q == nullptr) return;
    if (!Lane("lane directory", *q, LanePrefix(q->record.id, key_.substr(5)))) {
      return;
    }
    if (!value_.empty()) {
      Write(key_, "", "malformed lane directory value (not empty): emptied",
            Action::kRewritten);
    }
  }

  void CheckTtl() {
    QueueEntry* q = QueueOf("TTL index", 5);
    if (q == nullptr) return;
    if (key_.size() != 5) return Aside("malformed TTL index key");
    if (q->record.options.ttl == absl::InfiniteDuration()) {
      return Aside(absl::StrCat("TTL index record of queue '", q->name,
                                "', which has no TTL"));
    }
    q->has_ttl_record = true;
    if (value_ != q->name) {
      Write(key_, q->name,
            absl::StrCat("TTL index record does not name queue '", q->name,
                         "': rewritten"),
            Action::kRewritten);
    }
  }

  void CheckGroupOrSub(bool is_group) {
    const std::string_view kind = is_group ? "group" : "subscription";
    QueueEntry* q = QueueOf(kind, 5);
    if (q == nullptr) return;
    const std::string_view name = key_.substr(5);
    if (absl::Status s = format::ValidateGroupName(name); !s.ok()) {
      return Aside(absl::StrCat("malformed ", Av(kind), " key: ", s.message()));
    }
    uint32_t id;
    if (is_group) {
      format::GroupRecord r;
      if (absl::Status s = format::DecodeGroupRecord(value_, &r); !s.ok()) {
        return Aside(absl::StrCat("malformed group value: ", s.message()));
      }
      id = r.id;
    } else {
      format::SubRecord r;
      if (absl::Status s = format::DecodeSubRecord(value_, &r); !s.ok()) {
        return Aside(
            absl::StrCat("malformed subscription value: ", s.message()));
      }
      for (uint32_t p : r.partitions) {
        if (p >= q->record.options.partitions) {
          return Aside(absl::StrFormat(
              "subscription value: partition %d out of range (queue '%s' has "
              "%d)",
              p, q->name, q->record.options.partitions));
        }
      }
      id = r.id;
    }
    if (id == 0) return Aside(absl::StrCat(Av(kind), " id 0"));
    if (!group_ids_.insert(id).second) {
      return Aside(absl::StrFormat(
          "%s id %d already used by another group or subscription", kind, id));
    }
    max_group_id_ = std::max(max_group_id_, id);
    (is_group ? q->groups : q->subs).insert(id);
  }

  QueueEntry* OwnerOf(std::string_view kind, bool of_group) {
    QueueEntry* q = QueueOf(kind, format::kGroupRecordPrefixSize);
    if (q == nullptr) return nullptr;
    const uint32_t id = coding::DecodeFixed32(key_.data() + 5);
    if (!(of_group ? q->groups : q->subs).contains(id)) {
      Aside(absl::StrFormat("%s of %s id %d, which queue '%s' does not have",
                            kind, of_group ? "group" : "subscription", id,
                            q->name));
      return nullptr;
    }
    return q;
  }

  // As Verifier::LaneEnd: after the lane's last message, or its TTL
  // watermark if higher; Min() for an empty lane.
  MessageId LaneEnd(std::string_view lane) {
    std::string fence(lane);
    LayoutCodec::AppendMessageId(&fence, MessageId::Max());
    MessageId end = MessageId::Min();
    lane_it_->Seek(fence);
    if (lane_it_->Valid()) {
      lane_it_->Prev();
    } else {
      lane_it_->SeekToLast();
    }
    MessageId last;
    if (lane_it_->Valid() &&
        LayoutCodec::LaneMessage(View(lane_it_->key()), lane, &last)) {
      end = last.Next();
    }
    lane_it_->Seek(leveldb::Slice(lane.data(), lane.size()));
    if (lane_it_->Valid() && View(lane_it_->key()) == lane &&
        lane_it_->value().size() == LayoutCodec::kMessageIdSize) {
      end =
          std::max(end, LayoutCodec::DecodeMessageId(lane_it_->value().data()));
    }
    return end;
  }

  void CheckCursor() {
    QueueEntry* q = OwnerOf("cursor", /*of_group=*/true);
    if (q == nullptr) return;
    const std::string lane =
        LanePrefix(q->record.id, key_.substr(format::kGroupRecordPrefixSize));
    uint32_t p;
    if (!Lane("cursor", *q, lane, &p)) return;
    format::CursorValue c;
    if (!format::DecodeCursor(value_, &c)) {
      return Aside("malformed cursor value");
    }
    MessageId limit = LaneEnd(lane);
    if (q->record.options.ttl != absl::InfiniteDuration()) {
      limit = std::max(limit, MessageId::AtTime(now_ - q->record.options.ttl));
    }
    if (limit < c.scan) {
      const MessageId old = c.scan;
      c.scan = limit;
      c.done = std::min(c.done, limit);
      Write(key_, format::EncodeCursor(c),
            absl::StrCat("scan cursor ", old.ToString(),
                         " beyond the lane end ", limit.ToString(),
                         ": lowered to it (messages after it are delivered)"),
            Action::kRewritten);
    }
    Refer(q->record.id, p, c.scan);
  }

  void CheckTask() {
    QueueEntry* q = OwnerOf("task", /*of_group=*/true);
    if (q == nullptr) return;
    if (key_.size() <
        format::kGroupRecordPrefixSize + 3 + LayoutCodec::kMessageIdSize) {
      return Aside("malformed task key (too short)");
    }
    const std::string lane = LanePrefix(
        q->record.id, key_.substr(format::kGroupRecordPrefixSize,
                                  key_.size() - format::kGroupRecordPrefixSize -
                                      LayoutCodec::kMessageIdSize));
    uint32_t p;
    if (!Lane("task", *q, lane, &p)) return;
    format::TaskValue t;
    if (!format::DecodeTask(value_, &t)) return Aside("malformed task value");
    Refer(q->record.id, p,
          LayoutCodec::DecodeMessageId(key_.data() + key_.size() -
                                       LayoutCodec::kMessageIdSize));
  }

  void CheckDead() {
    QueueEntry* q = OwnerOf("dead letter", /*of_group=*/true);
    if (q == nullptr) return;
    if (key_.size() !=
        format::kGroupRecordPrefixSize + 2 + LayoutCodec::kMessageIdSize) {
      return Aside("malformed dead letter key");
    }
    format::DeadValue d;
    if (!format::DecodeDead(value_, &d) || d.reason < 1 || d.reason > 3) {
      return Aside("malformed dead letter value");
    }
    if (d.original_partition >= q->record.options.partitions ||
        d.priority >= q->record.options.priorities) {
      return Aside(absl::StrFormat(
          "dead letter value: partition %d or priority %d out of range of "
          "queue '%s'",
          d.original_partition, d.priority, q->name));
    }
  }

  void CheckDedup() {
    QueueEntry* q = QueueOf("dedup", 6);
    if (q == nullptr) return;
    if (key_.size() - 5 > format::kMaxKeyBytes) {
      return Aside("malformed dedup key (dedup key over 1024 bytes)");
    }
    uint32_t p;
    MessageId id;
    if (!format::DecodeDedup(value_, &p, &id)) {
      return Aside("malformed dedup value");
    }
    if (p >= q->record.options.partitions) {
      return Aside(absl::StrFormat(
          "dedup value: partition %d out of range (queue '%s' has %d)", p,
          q->name, q->record.options.partitions));
    }
    Refer(q->record.id, p, id);
  }

  void CheckCheckpoint() {
    QueueEntry* q = OwnerOf("checkpoint", /*of_group=*/false);
    if (q == nullptr) return;
    const std::string lane =
        LanePrefix(q->record.id, key_.substr(format::kGroupRecordPrefixSize));
    uint32_t p;
    if (!Lane("checkpoint", *q, lane, &p)) return;
    MessageId next;
    if (!format::DecodeCheckpoint(value_, &next)) {
      return Aside("malformed checkpoint value");
    }
    Refer(q->record.id, p, next);
  }

  // The lane the walk is in ends: a lane with keys gets a fence if it has
  // none (every lane ever written has one: layout_codec.h).
  void EndLane() {
    if (lane_.empty()) return;
    if (!lane_has_fence_) {
      std::string fence;
      LayoutCodec::AppendLaneFence(&fence, lane_);
      Write(fence, "", "lane fence missing: added", Action::kAdded);
    }
    lane_.clear();
  }

  void CheckMessage() {
    QueueEntry* q = QueueOf("message", LayoutCodec::kHeadSize);
    if (q == nullptr) return;
    size_t lane_size = LayoutCodec::kHeadSize;
    const bool has_topic = q->record.options.layout == Layout::kTopic;
    const std::string malformed = absl::StrCat(
        "malformed message key: not a key of queue '", q->name, "' (",
        Av(LayoutName(q->record.options.layout)), " layout)");
    if (has_topic) {
      if (key_.size() < LayoutCodec::kHeadSize + 2) return Aside(malformed);
      lane_size +=
          2 + coding::DecodeFixed16(key_.data() + LayoutCodec::kHeadSize);
    }
    const std::string_view rest =
        key_.size() >= lane_size ? key_.substr(lane_size) : std::string_view();
    const bool head = key_.size() == lane_size;
    if (key_.size() < lane_size ||
        (!head && rest.size() < LayoutCodec::kMessageIdSize) ||
        (has_topic && !head && rest.size() != LayoutCodec::kMessageIdSize) ||
        (!has_topic &&
         rest.size() > LayoutCodec::kMessageIdSize + format::kMaxTopicBytes)) {
      return Aside(malformed);
    }
    const std::string_view lane = key_.substr(0, lane_size);
    uint32_t partition = 0;
    if (!Lane("message", *q, lane, &partition)) return;
    if (lane != lane_) {
      EndLane();
      lane_.assign(lane);
      lane_has_fence_ = false;
      std::string dir;
      format::AppendLaneDirKey(&dir, lane);
      std::string unused;
      const leveldb::Status s = CheckedGet(db_, ro_, dir, &unused);
      if (s.IsNotFound()) {
        Write(dir, "", "message lane missing from the lane directory: added",
              Action::kAdded);
      } else if (!s.ok()) {
        status_ = FromLevelDb(s, "repair: reading the lane directory");
        return;
      }
    }
    if (head) {
      if (value_.size() != LayoutCodec::kMessageIdSize) {
        return Aside("malformed lane head value (TTL watermark)");
      }
      Refer(q->record.id, partition,
            LayoutCodec::DecodeMessageId(value_.data()));
      return;
    }
    const MessageId id = LayoutCodec::DecodeMessageId(rest.data());
    if (id == MessageId::Max()) {
      if (rest.size() != LayoutCodec::kMessageIdSize) {
        return Aside("malformed lane fence (a topic after it)");
      }
      lane_has_fence_ = true;
      if (!value_.empty()) {
        Write(key_, "", "malformed lane fence (a value): emptied",
              Action::kRewritten);
      }
      return;
    }
    std::string_view k, payload;
    if (!format::DecodeMessageValue(value_, &k, &payload)) {
      return Aside("malformed message value");
    }
    const uint64_t pk = PartitionKey(q->record.id, partition);
    uint64_t& m = message_ms_[pk];
    m = std::max(m, id.ms + 1);
    Refer(q->record.id, partition, id);
  }

  // What can only be decided after the walk: counters, reservations and
  // TTL index records.
  void Finish() {
    // A Db left without any hq record is empty: Open initializes it.
    if (!has_format_ && !has_next_queue_id_ && queues_.empty()) return;
    if (!has_format_) {
      Write(format::MetaKey("format"), Fixed32(format::kFormatVersion),
            "format record missing: added", Action::kAdded);
    }
    const uint32_t need_queue_id = max_queue_id_ + 1;
    if (!has_next_queue_id_) {
      Write(format::MetaKey("next_queue_id"), Fixed32(need_queue_id),
            absl::StrCat("next_queue_id missing: set to ", need_queue_id),
            Action::kAdded);
    } else if (bad_next_queue_id_ || next_queue_id_ < need_queue_id) {
      Write(format::MetaKey("next_queue_id"), Fixed32(need_queue_id),
            absl::StrCat("next_queue_id malformed or not above queue id ",
                         max_queue_id_, ": set to ", need_queue_id),
            Action::kRewritten);
    }
    const uint32_t need_group_id = max_group_id_ + 1;
    if (bad_next_group_id_ ||
        (need_group_id > 1 && next_group_id_ < need_group_id)) {
      Write(format::MetaKey("next_group_id"), Fixed32(need_group_id),
            absl::StrCat(
                "next_group_id ",
                has_next_group_id_ ? "malformed or not above" : "missing, with",
                " group id ", max_group_id_, ": set to ", need_group_id),
            has_next_group_id_ ? Action::kRewritten : Action::kAdded);
    }
    // Reservations: every message id of a partition must be below it; it
    // is set above every id the partition's records refer to (cursors,
    // checkpoints, tasks, dedup records, watermarks), so that no id below
    // one of them is handed out again.
    std::set<uint64_t> partitions(bad_reservation_.begin(),
                                  bad_reservation_.end());
    for (const auto& [pk, ms] : message_ms_) partitions.insert(pk);
    for (uint64_t pk : partitions) {
      const uint64_t need = std::min(
          std::max(message_ms_[pk], referred_[pk] + 1), MessageId::kMaxMs + 1);
      auto stored = reserved_.find(pk);
      const uint32_t qid = static_cast<uint32_t>(pk >> 16);
      const uint32_t p = static_cast<uint32_t>(pk & 0xffff);
      const std::string key = format::ReserveKey(qid, p);
      if (bad_reservation_.contains(pk)) {
        Write(key, Fixed64(need),
              absl::StrCat("malformed reservation value: set to ms ", need),
              Action::kRewritten);
      } else if (stored == reserved_.end()) {
        Write(key, Fixed64(need),
              absl::StrCat("partition without an id reservation: set to ms ",
                           need),
              Action::kAdded);
      } else if (stored->second < message_ms_[pk]) {
        Write(key, Fixed64(need),
              absl::StrCat("reservation ms ", stored->second,
                           " not above the partition's messages: raised to ",
                           need),
              Action::kRewritten);
      }
    }
    for (const auto& [id, q] : queues_) {
      if (q.record.options.ttl != absl::InfiniteDuration() &&
          !q.has_ttl_record) {
        Write(format::TtlKey(id), q.name,
              absl::StrCat("queue '", q.name,
                           "' has a TTL but no TTL index record: added"),
              Action::kAdded);
      }
    }
  }

  leveldb::DB* const db_;
  const absl::Time now_;
  SideDb* const side_;
  RepairReport* const report_;
  leveldb::ReadOptions ro_;
  std::unique_ptr<leveldb::Iterator> lane_it_;
  std::string_view key_, value_;
  absl::Status status_;
  int64_t changes_ = 0;
  leveldb::WriteBatch fix_, aside_;

  bool has_format_ = false;
  bool has_next_queue_id_ = false, has_next_group_id_ = false;
  bool bad_next_queue_id_ = false, bad_next_group_id_ = false;
  uint32_t next_queue_id_ = 0, next_group_id_ = 1;
  uint32_t max_queue_id_ = 0, max_group_id_ = 0;
  absl::flat_hash_set<uint32_t> dropping_;
  absl::flat_hash_map<uint32_t, QueueEntry> queues_;
  absl::flat_hash_set<uint32_t> group_ids_;
  // Per partition (PartitionKey): the stored reservation, malformed ones,
  // just past the last message's ms, and the highest ms referred to.
  absl::flat_hash_map<uint64_t, uint64_t> reserved_;
  absl::flat_hash_set<uint64_t> bad_reservation_;
  absl::flat_hash_map<uint64_t, uint64_t> message_ms_;
  absl::flat_hash_map<uint64_t, uint64_t> referred_;
  std::string lane_;  // The message lane the walk is in.
  bool lane_has_fence_ = false;
};

// Queues whose catalog record was lost while their records remain (the
// block holding the catalog was damaged): the catalog record is written
// again, with options read off the records, so that the messages stay in a
// queue instead of going aside with everything else of it. Its name: the
// one its TTL index record keeps, else "recovered-<id>". Its options: the
// highest partition and priority its records use, the layout its keys
// have (topic if every message and lane directory key parses as one), no
// TTL (the TTL is not stored anywhere else), the default payload limit.
// Queue ids with no message and no lane directory record are left to the
// Mender. Returns the number of queues written.
absl::StatusOr<int64_t> RecreateLostQueues(leveldb::DB* db, absl::Time now,
                                           RepairReport* report) {
  struct Orphan {
    uint32_t max_partition = 0;
    int max_priority = 0;
    bool evidence = false;  // A message or lane directory record.
    bool topic = true;      // Every key parses in the topic layout.
    std::string ttl_name;
  };
  absl::flat_hash_set<uint32_t> known, dropping;
  absl::flat_hash_set<std::string> names;
  std::map<uint32_t, Orphan> orphans;
  const leveldb::ReadOptions ro = CheckedReadOptions();
  {
    std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(db, ro));
    const std::string prefix = format::DropPrefix();
    for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
         it->Next()) {
      if (it->key().size() == 5) {
        dropping.insert(coding::DecodeFixed32(it->key().data() + 1));
      }
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "repair: reading"));
  }
  std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(db, ro));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view key = View(it->key());
    if (key.empty()) continue;
    const char tag = key[0];
    if (tag == format::kCatalogTag) {
      format::QueueRecord r;
      if (format::DecodeQueueRecord(View(it->value()), &r).ok()) {
        known.insert(r.id);
        names.insert(std::string(key.substr(1)));
      }
      continue;
    }
    if (key.size() < 5 ||
        (tag != format::kReserveTag && tag != format::kLaneDirTag &&
         tag != format::kTtlTag && tag != format::kMessageTag)) {
      continue;
    }
    const uint32_t id = coding::DecodeFixed32(key.data() + 1);
    if (id == 0 || known.contains(id) || dropping.contains(id)) continue;
    Orphan& o = orphans[id];
    if (tag == format::kTtlTag) {
      if (key.size() == 5 &&
          format::ValidateQueueName(View(it->value())).ok()) {
        o.ttl_name = std::string(View(it->value()));
      }
      continue;
    }
    if (key.size() < 7) continue;
    o.max_partition = std::max<uint32_t>(o.max_partition,
                                         coding::DecodeFixed16(key.data() + 5));
    if (tag == format::kReserveTag || key.size() < LayoutCodec::kHeadSize) {
      continue;
    }
    o.evidence = true;
    o.max_priority =
        std::max(o.max_priority, 255 - static_cast<unsigned char>(key[7]));
    // Topic layout: head fixed16 len topic [message_id].
    const size_t n = key.size();
    const size_t len =
        n >= LayoutCodec::kHeadSize + 2
            ? coding::DecodeFixed16(key.data() + LayoutCodec::kHeadSize)
            : SIZE_MAX;
    const size_t base = LayoutCodec::kHeadSize + 2 + len;
    if (len == SIZE_MAX ||
        (n != base && n != base + LayoutCodec::kMessageIdSize)) {
      o.topic = false;
    }
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "repair: reading"));
  it.reset();

  leveldb::WriteBatch b;
  int64_t written = 0;
  for (const auto& [id, o] : orphans) {
    if (!o.evidence) continue;
    format::QueueRecord r;
    r.id = id;
    r.options.partitions = o.max_partition + 1;
    r.options.priorities = o.max_priority + 1;
    r.options.layout = o.topic ? Layout::kTopic : Layout::kTime;
    r.options.ttl = absl::InfiniteDuration();
    r.created = now;
    if (!format::ValidateQueueOptions(r.options).ok()) continue;
    std::string name = o.ttl_name;
    if (name.empty() || names.contains(name)) {
      name = absl::StrCat("recovered-", id);
      for (int i = 2; names.contains(name); ++i) {
        name = absl::StrCat("recovered-", id, "-", i);
      }
    }
    names.insert(name);
    const std::string key = format::CatalogKey(name);
    b.Put(key, format::EncodeQueueRecord(r));
    ++written;
    ++report->change_count;
    if (report->changes.size() < RepairReport::kMaxListedChanges) {
      report->changes.push_back(
          {Hex(key),
           absl::StrFormat(
               "queue id %d lost its catalog record, not its records: "
               "recreated as '%s' with %d partitions, %d priorities, %s "
               "layout (read off its records), no TTL",
               id, name, r.options.partitions, r.options.priorities,
               std::string(LayoutName(r.options.layout))),
           RepairReport::Change::Action::kAdded});
    }
  }
  if (written > 0) {
    leveldb::WriteOptions wo;
    wo.sync = true;
    HQ_RETURN_IF_ERROR(FromLevelDb(db->Write(wo, &b), "repair: writing"));
  }
  return written;
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// Copies every file of `path` (listed in `files`, relative names) but LOCK
// into a new directory beside it. Nothing in `path` changes; on failure
// what was created is removed.
absl::Status CopyAside(leveldb::Env* env, const std::string& path,
                       const std::vector<file_util::Entry>& files,
                       const std::string& stamp, RepairReport* report) {
  std::string aside = absl::StrCat(path, ".before-repair-", stamp);
  for (int i = 2; file_util::DirExists(env, aside) ||
                  (file_util::IsDefaultEnv(env) && env->FileExists(aside));
       ++i) {
    if (i > 9) {
      return absl::AlreadyExistsError(
          absl::StrCat("Repair: the copy aside '", aside, "' exists"));
    }
    aside = absl::StrCat(path, ".before-repair-", stamp, "-", i);
  }
  HQ_RETURN_IF_ERROR(file_util::FromIo(
      env->CreateDir(aside), absl::StrCat("Repair: creating the copy aside '",
                                          aside, "' (nothing was changed)")));
  std::vector<std::string> created, dirs = {aside};
  absl::Status s;
  for (const file_util::Entry& e : files) {
    if (e.name == "LOCK") continue;
    // Subdirectories (dropped/, lost/) first.
    for (size_t slash = e.name.find('/'); slash != std::string::npos;
         slash = e.name.find('/', slash + 1)) {
      const std::string d = aside + "/" + e.name.substr(0, slash);
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) {
        env->CreateDir(d);
        dirs.push_back(d);
      }
    }
    const std::string to = aside + "/" + e.name;
    absl::StatusOr<uint64_t> n =
        file_util::CopyFile(env, path + "/" + e.name, to);
    created.push_back(to);
    if (!n.ok()) {
      s = n.status();
      break;
    }
    report->copied_bytes += *n;
  }
  for (auto d = dirs.rbegin(); s.ok() && d != dirs.rend(); ++d) {
    s = file_util::SyncDir(env, *d);
  }
  if (s.ok()) s = file_util::SyncDir(env, Parent(aside));
  if (!s.ok()) {
    for (const std::string& f : created) env->RemoveFile(f);
    for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) env->RemoveDir(*d);
    return absl::Status(s.code(),
                        absl::StrCat("Repair: copying the database aside "
                                     "(nothing was changed): ",
                                     s.message()));
  }
  report->copied_to = aside;
  return absl::OkStatus();
}

// Before LevelDB's repair, moves into lost/: every file of dropped/
// (Repair reports it, so the repaired Db no longer answers for it in
// Verify), and an earlier repair's lost/MANIFEST-N, when the directory
// holds a MANIFEST-N too, renamed MANIFEST-N.before-repair-STAMP (LevelDB's
// repair archives every MANIFEST into lost/, replacing a file of that name;
// its own MANIFEST-1 is left when a repair stopped before hq opened it). The
// renamed manifests go into `lost_before`, so they are not reported as new; the
// cuts in `logs` are renamed to where their bytes now are.
absl::Status ClearLost(leveldb::Env* env, const std::string& path,
                       const std::string& stamp,
                       std::set<std::string>* lost_before,
                       RecoveryReport* logs) {
  const std::string lost = path + "/lost";
  env->CreateDir(lost);  // Fails if it exists; a rename below says if not.
  std::vector<std::string> names;
  if (env->GetChildren(lost, &names).ok()) {
    for (const std::string& n : names) {
      if (!n.starts_with("MANIFEST-") || !env->FileExists(path + "/" + n)) {
        continue;
      }
      const std::string to = absl::StrCat(n, ".before-repair-", stamp);
      HQ_RETURN_IF_ERROR(
          file_util::FromIo(env->RenameFile(lost + "/" + n, lost + "/" + to),
                            absl::StrCat("Repair: renaming lost/", n)));
      lost_before->insert("lost/" + to);
    }
  }
  const std::string dropped = absl::StrCat(path, "/", kDroppedDir);
  names.clear();
  if (!env->GetChildren(dropped, &names).ok()) return absl::OkStatus();
  for (const std::string& n : names) {
    if (n == "." || n == "..") continue;
    std::string to = absl::StrCat("lost/", n);
    if (env->FileExists(path + "/" + to)) to += absl::StrCat(".", stamp);
    HQ_RETURN_IF_ERROR(file_util::FromIo(
        env->RenameFile(dropped + "/" + n, path + "/" + to),
        absl::StrCat("Repair: moving ", kDroppedDir, "/", n, " into lost/")));
    for (RecoveryReport::Dropped& d : logs->dropped) {
      if (d.saved_as == absl::StrCat(kDroppedDir, "/", n)) d.saved_as = to;
    }
  }
  env->RemoveDir(dropped);
  return file_util::SyncDir(env, lost);
}

}  // namespace
}  // namespace repair

absl::StatusOr<RepairReport> Db::Repair(const std::string& path_arg,
                                        const Options& options) {
  using repair::Census;
  if (path_arg.empty()) {
    return absl::InvalidArgumentError("Repair: the database path is empty");
  }
  HQ_RETURN_IF_ERROR(ValidateOptions(options));
  leveldb::Env* env = options.env ? options.env : leveldb::Env::Default();
  std::string path = path_arg;
  if (file_util::IsDefaultEnv(env)) {
    // Absolute, so that "." or "db/" gets its copy aside beside it.
    std::error_code ec;
    const std::filesystem::path abs =
        std::filesystem::absolute(path, ec).lexically_normal();
    if (!ec) path = abs.string();
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (!file_util::DirExists(env, path)) {
    return absl::NotFoundError(
        absl::StrCat("Repair: no directory '", path, "'"));
  }

  // Held open neither in this process nor in another.
  std::string claim;
  HQ_ASSIGN_OR_RETURN(claim, DbImpl::ClaimDirectory(path, env));
  absl::Cleanup release = [&claim] {
    if (!claim.empty()) DbImpl::ReleaseDirectory(claim);
  };
  leveldb::FileLock* lock = nullptr;
  if (leveldb::Status s = env->LockFile(path + "/LOCK", &lock); !s.ok()) {
    return WithErrorDetail(absl::FailedPreconditionError(absl::StrCat(
                               "hq database directory '", path,
                               "' is in use by another process (LevelDB: ",
                               s.ToString(), "); Repair needs it closed")),
                           ErrorDetail::kDbLocked);
  }
  absl::Cleanup unlock = [&] {
    if (lock != nullptr) env->UnlockFile(lock);
  };

  HQ_ASSIGN_OR_RETURN(const std::vector<file_util::Entry> files,
                      file_util::ListFiles(env, path));
  uint64_t total = 0, log_bytes = 0;
  bool leveldb_files = false;
  std::set<std::string> lost_before;
  for (const file_util::Entry& e : files) {
    uint64_t n;
    total += e.bytes;
    if (manifest::ParseLogName(e.name, &n)) log_bytes += e.bytes;
    if (e.name == "CURRENT" || manifest::ParseTableName(e.name, &n) ||
        manifest::ParseLogName(e.name, &n) ||
        manifest::ParseManifestName(e.name, &n)) {
      leveldb_files = true;
    }
    if (e.name.starts_with("lost/")) lost_before.insert(e.name);
  }
  if (!leveldb_files) {
    return absl::NotFoundError(absl::StrCat("Repair: no hq database in '", path,
                                            "' (no LevelDB file in it)"));
  }

  // 2. The files as they were.
  RepairReport report;
  repair::FileRead before;
  HQ_RETURN_IF_ERROR(repair::ReadFiles(env, path, &before));
  const Census& bc = before.census;
  if (bc.has_format() && bc.format_version() != 0 &&
      bc.format_version() != format::kFormatVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "Repair: '%s' has hq format version %d; this hq repairs version %d "
        "(nothing was changed)",
        path, bc.format_version(), format::kFormatVersion));
  }
  if (!bc.has_format() && !bc.looks_like_hq() && bc.keys() > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("Repair: '", path,
                     "' holds a LevelDB database that is not an hq database "
                     "(nothing was changed)"));
  }
  report.damage = before.damage;

  // 1. Room and permission, before anything changes.
  const std::string parent = repair::Parent(path);
  if (file_util::IsDefaultEnv(env)) {
    for (const std::string& d : {path, parent}) {
      if (access(d.c_str(), W_OK | X_OK) != 0) {
        return absl::PermissionDeniedError(absl::StrCat(
            "Repair: cannot write in '", d, "' (nothing was changed)"));
      }
    }
  }
  uint64_t damaged_table_bytes = 0;
  for (const RepairReport::Damage& d : before.damage) {
    for (const file_util::Entry& e : files) {
      if (e.name == d.file) damaged_table_bytes += e.bytes;
    }
  }
  const uint64_t need = total + log_bytes + damaged_table_bytes + (1 << 20);
  if (const int64_t free_bytes = file_util::FreeBytes(env, parent);
      free_bytes >= 0 && static_cast<uint64_t>(free_bytes) < need) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "Repair: %d bytes free beside '%s', and repairing it needs about %d "
        "(a copy aside of %d bytes, and room for the tables it rebuilds); "
        "nothing was changed",
        free_bytes, path, need, total));
  }

  // 3. The copy aside.
  const std::string stamp =
      absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone());
  HQ_RETURN_IF_ERROR(repair::CopyAside(env, path, files, stamp, &report));
  auto failed = [&report](const absl::Status& s) {
    return WithErrorDetail(
        absl::Status(s.code(), absl::StrCat(s.message(),
                                            "; the database as it was is in ",
                                            report.copied_to)),
        GetErrorDetail(s));
  };

  // 4. Logs cut to a prefix; 5. LevelDB's repair.
  if (absl::Status s = CutAllLogs(env, path, &report.logs); !s.ok()) {
    return failed(s);
  }
  if (absl::Status s =
          repair::ClearLost(env, path, stamp, &lost_before, &report.logs);
      !s.ok()) {
    return failed(s);
  }
  std::unique_ptr<const leveldb::FilterPolicy> filter(
      options.bloom_bits_per_key > 0
          ? leveldb::NewBloomFilterPolicy(options.bloom_bits_per_key)
          : nullptr);
  {
    repair::CaptureLogger logger;
    leveldb::Options lo;
    lo.env = env;
    lo.paranoid_checks = true;  // Verify every block it copies.
    lo.info_log = &logger;
    lo.filter_policy = filter.get();
    const leveldb::Status s = leveldb::RepairDB(path, lo);
    report.leveldb_log = logger.lines();
    if (!s.ok())
      return failed(file_util::FromIo(s, "Repair: LevelDB's repair"));
  }
  if (absl::StatusOr<std::vector<file_util::Entry>> after =
          file_util::ListFiles(env, path);
      after.ok()) {
    for (const file_util::Entry& e : *after) {
      if (e.name.starts_with("lost/") && !lost_before.contains(e.name)) {
        report.moved_to_lost.push_back(e.name);
      }
    }
  }
  env->UnlockFile(lock);  // LevelDB's Open takes it next.
  lock = nullptr;

  // 6, 7. Mend, then verify with hq's own Open, until clean.
  Clock* clock = options.clock ? options.clock : Clock::Default();
  repair::SideDb side(env, absl::StrCat(path, "/lost/hq-records-", stamp));
  Options open_options = options;
  open_options.create_if_missing = false;
  open_options.error_if_exists = false;
  open_options.ttl_sweep_interval = absl::ZeroDuration();
  open_options.recovery = Options::Recovery::kPointInTime;
  for (int round = 0; round < 3; ++round) {
    int64_t changes = 0;
    {
      leveldb::Options lo;
      lo.env = env;
      lo.paranoid_checks = true;
      lo.filter_policy = filter.get();
      lo.write_buffer_size = options.write_buffer_bytes;
      leveldb::DB* raw = nullptr;
      leveldb::Status s = leveldb::DB::Open(lo, path, &raw);
      if (!s.ok()) {
        return failed(
            file_util::FromIo(s, "Repair: opening the repaired database"));
      }
      std::unique_ptr<leveldb::DB> db(raw);
      if (!repair::skip_mending.load()) {
        absl::StatusOr<int64_t> queues =
            repair::RecreateLostQueues(db.get(), clock->Now(), &report);
        if (!queues.ok()) return failed(queues.status());
        repair::Mender mender(db.get(), clock->Now(), &side, &report);
        absl::StatusOr<int64_t> n = mender.Run();
        if (!n.ok()) return failed(n.status());
        changes = *queues + *n;
      }
    }
    DbImpl::ReleaseDirectory(claim);
    claim.clear();
    {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, open_options);
      if (!db.ok()) return failed(db.status());
      absl::StatusOr<VerifyReport> v = (*db)->Verify();
      if (!v.ok()) return failed(v.status());
      report.verify = *std::move(v);
      // The counts after.
      Census census;
      leveldb::DB* ldb = static_cast<DbImpl*>(db->get())->leveldb();
      leveldb::ReadOptions ro = CheckedReadOptions();
      ro.fill_cache = false;
      std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(ldb, ro));
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        census.Add(View(it->key()), View(it->value()));
      }
      if (!it->status().ok()) {
        return failed(FromLevelDb(it->status(), "Repair: counting"));
      }
      report.keys_after = census.keys();
      report.messages_after = census.messages();
      report.queues.clear();
      std::map<uint32_t, RepairReport::QueueCount> queues;
      auto name = [](const Census& c, uint32_t id) {
        auto n = c.names().find(id);
        return n != c.names().end() ? n->second : absl::StrCat("queue id ", id);
      };
      for (const auto& [id, n] : bc.per_queue()) {
        queues[id].queue = name(bc, id);
        queues[id].messages_before = n;
      }
      for (const auto& [id, n] : census.per_queue()) {
        if (queues[id].queue.empty() || census.names().contains(id)) {
          queues[id].queue = name(census, id);
        }
        queues[id].messages_after = n;
      }
      for (auto& [id, q] : queues) report.queues.push_back(std::move(q));
    }
    HQ_ASSIGN_OR_RETURN(claim, DbImpl::ClaimDirectory(path, env));
    if (report.verify.ok() || changes == 0) break;
  }
  report.keys_before = bc.keys();
  report.messages_before = bc.messages();
  if (side.used()) report.moved_aside_to = side.dir();
  return report;
}

}  // namespace hq
