// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/table_check.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "leveldb/options.h"
#include "leveldb/table.h"
#include "lib/engine/checked_read.h"
#include "lib/util/strings.h"

namespace hq::table_check {
namespace {

// LevelDB's internal keys end with 8 bytes of sequence number and type.
constexpr size_t kInternalKeyTrailer = 8;

std::string UserKey(const leveldb::Slice& internal_key) {
  if (internal_key.size() < kInternalKeyTrailer) return "";
  return std::string(internal_key.data(),
                     internal_key.size() - kInternalKeyTrailer);
}

// Records every failed read of the file it wraps, then fails it as the
// base did: LevelDB's table iterator steps over a block whose read failed
// and keeps only the first error, so this is how every one is seen.
class RecordingFile final : public leveldb::RandomAccessFile {
 public:
  explicit RecordingFile(leveldb::RandomAccessFile* f) : f_(f) {}

  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
    leveldb::Status s = f_->Read(offset, n, result, scratch);
    absl::MutexLock l(&mu_);
    ++reads_;
    if (!s.ok()) failures_.push_back({offset, n, StatusMessage(s)});
    return s;
  }

  struct Failure {
    uint64_t offset;
    uint64_t bytes;
    std::string what;
  };
  // The failures recorded since the last call.
  std::vector<Failure> TakeFailures() {
    absl::MutexLock l(&mu_);
    return std::exchange(failures_, {});
  }
  int64_t reads() const {
    absl::MutexLock l(&mu_);
    return reads_;
  }

 private:
  const std::unique_ptr<leveldb::RandomAccessFile> f_;
  mutable absl::Mutex mu_;
  mutable std::vector<Failure> failures_ ABSL_GUARDED_BY(mu_);
  mutable int64_t reads_ ABSL_GUARDED_BY(mu_) = 0;
};

std::string TableName(const std::string& dir, uint64_t number,
                      const char* suffix) {
  return absl::StrFormat("%s/%06d.%s", dir, number, suffix);
}

bool StillLive(leveldb::DB* db, uint64_t number) {
  absl::StatusOr<std::vector<LiveTable>> live = LiveTables(db);
  if (!live.ok()) return true;  // Unknown: report what was seen.
  for (const LiveTable& t : *live) {
    if (t.number == number) return true;
  }
  return false;
}

// Walks one table; appends what is damaged to `report`.
void CheckTable(leveldb::DB* db, leveldb::Env* env, const std::string& dir,
                const LiveTable& t, Report* report) {
  std::string path = TableName(dir, t.number, "ldb");
  if (!env->FileExists(path)) {
    const std::string old = TableName(dir, t.number, "sst");
    if (env->FileExists(old)) path = old;
  }
  const std::string file = path.substr(dir.size() + 1);
  auto whole_file = [&](std::string what) {
    report->damage.push_back({.file = file, .what = std::move(what)});
  };
  if (!env->FileExists(path)) {
    if (StillLive(db, t.number)) {
      whole_file("missing: the database's MANIFEST names it");
    }
    return;
  }
  uint64_t size = 0;
  leveldb::Status s = env->GetFileSize(path, &size);
  leveldb::RandomAccessFile* raw = nullptr;
  if (s.ok()) s = env->NewRandomAccessFile(path, &raw);
  // Gone since FileExists: a compaction finished meanwhile, unless the
  // MANIFEST still names it.
  if (!s.ok() && !env->FileExists(path) && !StillLive(db, t.number)) return;
  ++report->tables;
  if (s.ok() && size != t.size) {
    delete raw;
    return whole_file(absl::StrCat("truncated or grown: ", size,
                                   " bytes, the MANIFEST says ", t.size));
  }
  if (!s.ok()) return whole_file(StatusMessage(s));
  auto* recording = new RecordingFile(raw);
  std::unique_ptr<leveldb::RandomAccessFile> owned(recording);
  leveldb::Options options;  // No cache, no filter: read every block.
  leveldb::Table* table_raw = nullptr;
  s = leveldb::Table::Open(options, recording, size, &table_raw);
  std::unique_ptr<leveldb::Table> table(table_raw);
  if (!s.ok()) return whole_file(StatusMessage(s));

  leveldb::ReadOptions ro = CheckedReadOptions();
  ro.fill_cache = false;
  std::unique_ptr<leveldb::Iterator> it(table->NewIterator(ro));
  std::string before;
  auto note = [&](const std::string& after) {
    for (RecordingFile::Failure& f : recording->TakeFailures()) {
      report->damage.push_back({.file = file,
                                .offset = f.offset,
                                .bytes = f.bytes,
                                .what = std::move(f.what),
                                .key_before = before,
                                .key_after = after});
    }
  };
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string key = UserKey(it->key());
    note(key);
    before = key;
  }
  note("");
  report->blocks += recording->reads();
}

}  // namespace

bool ParseSstables(std::string_view text, std::vector<LiveTable>* out) {
  for (absl::string_view piece : absl::StrSplit(Av(text), '\n')) {
    std::string_view line(piece.data(), piece.size());
    // " 12:4096['a' @ 1 : 1 .. 'b' @ 9 : 1]": a table; "--- level 0 ---".
    if (!line.starts_with(' ')) continue;
    line.remove_prefix(1);
    const size_t colon = line.find(':');
    const size_t bracket = line.find('[');
    LiveTable t;
    if (colon == std::string_view::npos || bracket == std::string_view::npos ||
        bracket < colon ||
        !absl::SimpleAtoi(Av(line.substr(0, colon)), &t.number) ||
        !absl::SimpleAtoi(Av(line.substr(colon + 1, bracket - colon - 1)),
                          &t.size)) {
      return false;
    }
    out->push_back(t);
  }
  return true;
}

absl::StatusOr<std::vector<LiveTable>> LiveTables(leveldb::DB* db) {
  std::string text;
  if (!db->GetProperty("leveldb.sstables", &text)) {
    return absl::InternalError("LevelDB has no property leveldb.sstables");
  }
  std::vector<LiveTable> out;
  if (!ParseSstables(text, &out)) {
    return absl::InternalError(
        absl::StrCat("cannot parse LevelDB's leveldb.sstables: ", text));
  }
  return out;
}

Report CheckTables(leveldb::DB* db, leveldb::Env* env, const std::string& dir,
                   const std::vector<LiveTable>& tables,
                   const std::function<void(uint64_t bytes)>& after_table) {
  Report report;
  for (const LiveTable& t : tables) {
    CheckTable(db, env, dir, t, &report);
    if (after_table) after_table(t.size);
  }
  return report;
}

}  // namespace hq::table_check
