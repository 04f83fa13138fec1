// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Verify: the damage LevelDB's files show (tables, dropped logs), then
// one pass over every key of a snapshot that reports each record breaking
// a rule of lib/admin/record_walk.h, naming its key.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "leveldb/db.h"
#include "lib/admin/inspect.h"
#include "lib/admin/record_walk.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/log_recovery.h"
#include "lib/engine/table_check.h"
#include "lib/util/progress.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

// LevelDB's approximate size of the keys before `key` (of every key when
// `key` is empty).
uint64_t ApproximateBytes(leveldb::DB* db, std::string_view key) {
  const std::string end =
      key.empty() ? std::string(8, '\xff') : std::string(key);
  const leveldb::Range range{leveldb::Slice(), leveldb::Slice(end)};
  uint64_t bytes = 0;
  db->GetApproximateSizes(&range, 1, &bytes);
  return bytes;
}

// Verify's policy: every finding is a problem of the report, named by its
// key; the record stays.
// Progress: every kProgressKeys keys, the approximate bytes of `db`'s key
// range before the key.
class Reporter : public WalkPolicy {
 public:
  Reporter(VerifyReport* report, leveldb::DB* db, PhaseProgress* progress)
      : report_(report), db_(db), progress_(progress) {}

  bool Found(const Finding& f) override {
    report_->AddProblem({.key_hex = absl::BytesToHexString(Av(f.key)),
                         .description = f.problem});
    return true;
  }

  void Walking(std::string_view key, int64_t keys) override {
    if (progress_ == nullptr || keys % kProgressKeys != 0) return;
    progress_->Set(ApproximateBytes(db_, key));
  }

 private:
  static constexpr int64_t kProgressKeys = 4096;

  VerifyReport* const report_;
  leveldb::DB* const db_;
  PhaseProgress* const progress_;
};

// The records' problems (RecordWalker, lib/admin/record_walk.h) are added
// to `report`, which holds what the caller found before (damaged blocks,
// dropped logs). With `past_damage`, the walk reads on past damaged blocks
// instead of failing at the first: the caller has reported them.
absl::StatusOr<VerifyReport> CheckRecords(leveldb::DB* db,
                                          const leveldb::ReadOptions& ro,
                                          absl::Time now, VerifyReport report,
                                          bool past_damage,
                                          const ProgressCallback& callback) {
  PhaseProgress progress(callback, "checking records",
                         ApproximateBytes(db, std::string_view()));
  Reporter reporter(&report, db, callback ? &progress : nullptr);
  RecordWalker walker(db, ro, now, &reporter, {.past_damage = past_damage});
  HQ_RETURN_IF_ERROR(walker.Run());
  report.keys += walker.facts().keys;
  report.messages += walker.facts().messages;
  report.queues = static_cast<int64_t>(walker.facts().queues.size());
  progress.Finish();
  return report;
}

void AddDamage(const table_check::Report& tables, VerifyReport* report) {
  report->tables = tables.tables;
  report->blocks = tables.blocks;
  for (const table_check::Damage& d : tables.damage) {
    // A block's `what` names its file and offset (TableCheckEnv's words).
    std::string description =
        d.bytes == 0 ? absl::StrCat("table file ", d.file, ": ", d.what)
                     : d.what;
    if (!d.key_before.empty() || !d.key_after.empty()) {
      absl::StrAppend(
          &description, "; unreadable keys lie after ",
          d.key_before.empty() ? std::string("the table's start")
                               : absl::BytesToHexString(d.key_before),
          " and before ",
          d.key_after.empty() ? std::string("the table's end")
                              : absl::BytesToHexString(d.key_after));
    }
    report->AddProblem({.key_hex = absl::BytesToHexString(d.key_before),
                        .description = std::move(description),
                        .file = d.file});
  }
}

// What recovery kept under dropped/ (log_recovery.h): a hole or a later
// log is a problem (intact writes were dropped to keep a prefix); a torn
// tail is only listed.
void AddDropped(leveldb::Env* env, const std::string& dir,
                VerifyReport* report) {
  std::vector<std::string> names;
  if (!env->GetChildren(dir + "/" + kDroppedDir, &names).ok()) return;
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    if (n == "." || n == "..") continue;
    const std::string file = absl::StrCat(kDroppedDir, "/", n);
    report->dropped.push_back(file);
    if (n.find(kTornAt) != std::string::npos) continue;
    uint64_t bytes = 0;
    env->GetFileSize(dir + "/" + file, &bytes).ok();
    report->AddProblem(
        {.description = absl::StrCat(
             "recovery dropped ", bytes, " bytes of write-ahead log (",
             n.find(kHoleAt) != std::string::npos
                 ? "from damage to the log's end"
                 : "a whole log after a damaged one",
             ") to keep a prefix of the writes; they are kept in ", file),
         .file = file});
  }
}

}  // namespace

absl::StatusOr<VerifyReport> VerifyDb(DbImpl* db,
                                      const ProgressCallback& progress) {
  DbImpl::OpScope op(db, /*despite_damage=*/true);
  HQ_RETURN_IF_ERROR(op.status());
  // Damage first (tables, then dropped logs), then the records' problems in
  // key order.
  VerifyReport damage;
  HQ_ASSIGN_OR_RETURN(std::vector<table_check::LiveTable> live,
                      table_check::LiveTables(db->leveldb()));
  uint64_t table_bytes = 0;
  for (const table_check::LiveTable& t : live) table_bytes += t.size;
  PhaseProgress checked(progress, "checking tables", table_bytes);
  const table_check::Report tables = table_check::CheckTables(
      db->leveldb(), db->leveldb_env(), db->path(), live,
      [&](uint64_t bytes) { checked.Add(bytes); });
  checked.Finish();
  AddDamage(tables, &damage);
  AddDropped(db->leveldb_env(), db->path(), &damage);

  leveldb::ReadOptions ro = CheckedReadOptions();
  ro.fill_cache = false;
  ro.snapshot = db->leveldb()->GetSnapshot();
  absl::StatusOr<VerifyReport> report;
  // Its iterators go before the snapshot is released.
  report =
      CheckRecords(db->leveldb(), ro, db->clock()->Now(), std::move(damage),
                   /*past_damage=*/!tables.damage.empty(), progress);
  db->leveldb()->ReleaseSnapshot(ro.snapshot);
  return report;
}

}  // namespace hq
