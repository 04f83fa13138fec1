// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "bench/sqlite_peer.h"

#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "lib/util/status_macros.h"
#include "sqlite3.h"

namespace hq::bench {

Sqlite::~Sqlite() {
  for (sqlite3_stmt* s : statements_) sqlite3_finalize(s);
  if (db_ != nullptr) sqlite3_close(db_);
}

absl::Status Sqlite::Open(const std::string& path) {
  if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
    return Error(absl::StrCat("opening ", path));
  }
  return absl::OkStatus();
}

absl::Status Sqlite::Exec(const char* sql) {
  if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
    return Error(sql);
  }
  return absl::OkStatus();
}

absl::StatusOr<sqlite3_stmt*> Sqlite::Prepare(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
    return Error(sql);
  }
  statements_.push_back(s);
  return s;
}

absl::Status Sqlite::StepDone(sqlite3_stmt* s) {
  const int rc = sqlite3_step(s);
  sqlite3_reset(s);
  if (rc != SQLITE_DONE) return Error("step");
  return absl::OkStatus();
}

absl::Status Sqlite::Error(std::string_view what) const {
  return absl::InternalError(
      absl::StrCat("sqlite: ", absl::string_view(what.data(), what.size()),
                   ": ", sqlite3_errmsg(db_)));
}

absl::Status OpenSqliteQueue(const std::string& path, bool sync, Sqlite* db) {
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    std::filesystem::remove(path + suffix, ec);
  }
  HQ_RETURN_IF_ERROR(db->Open(path));
  HQ_RETURN_IF_ERROR(db->Exec("PRAGMA journal_mode=WAL"));
  HQ_RETURN_IF_ERROR(
      db->Exec(sync ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL"));
  HQ_RETURN_IF_ERROR(
      db->Exec("CREATE TABLE tasks(id INTEGER PRIMARY KEY, priority INTEGER, "
               "topic TEXT, payload BLOB, state INTEGER, lease_until INTEGER, "
               "attempts INTEGER)"));
  return db->Exec(
      "CREATE INDEX tasks_ready ON tasks(state, priority DESC, id)");
}

}  // namespace hq::bench
