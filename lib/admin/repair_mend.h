// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Repair's mending of hq's records after LevelDB's RepairDB
// (lib/admin/repair.cc runs them; hq/db.h has the contract).

#ifndef HQ_LIB_ADMIN_REPAIR_MEND_H_
#define HQ_LIB_ADMIN_REPAIR_MEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "hq/db.h"
#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/write_batch.h"
#include "lib/util/file_util.h"

namespace hq::repair {

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

// Writes a catalog record again for each queue whose record was lost while
// records of it remain (its name from its TTL index record, else
// "recovered-<id>"; its options read off its records; no TTL). Returns the
// number of queues recreated; each is a change in `report`.
absl::StatusOr<int64_t> RecreateLostQueues(leveldb::DB* db, absl::Time now,
                                           RepairReport* report);

// One pass over the repaired LevelDB `db` in key order that mends hq's
// records as Db::Verify checks them (lib/admin/verify.cc): counters and
// cursors corrected, missing records added, what cannot be mended moved
// into `side`; nothing is deleted. Returns the number of changes, each in
// `report`.
absl::StatusOr<int64_t> MendRecords(leveldb::DB* db, absl::Time now,
                                    SideDb* side, RepairReport* report);

}  // namespace hq::repair

#endif  // HQ_LIB_ADMIN_REPAIR_MEND_H_
