// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The SQLite peer of hq_bench: a connection with its prepared statements,
// and the work-queue table the SQLite workloads (put_sqlite,
// claim_complete_sqlite) fill and drain.

#ifndef HQ_BENCH_SQLITE_PEER_H_
#define HQ_BENCH_SQLITE_PEER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "sqlite3.h"

namespace hq::bench {

// A SQLite connection; finalizes its statements and closes when destroyed.
class Sqlite {
 public:
  Sqlite() = default;
  Sqlite(const Sqlite&) = delete;
  Sqlite& operator=(const Sqlite&) = delete;
  ~Sqlite();

  absl::Status Open(const std::string& path);
  absl::Status Exec(const char* sql);
  // A statement owned by the connection.
  absl::StatusOr<sqlite3_stmt*> Prepare(const std::string& sql);
  // Runs a statement that returns no rows, then resets it.
  absl::Status StepDone(sqlite3_stmt* s);
  // An Internal error naming `what` and SQLite's last error message.
  absl::Status Error(std::string_view what) const;

 private:
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> statements_;
};

// Opens a fresh SQLite work queue at `path` (removing what is there, with
// its -wal and -shm files) into `db`: WAL journal, synchronous NORMAL (FULL
// if `sync`), a table tasks(id INTEGER PRIMARY KEY, priority, topic,
// payload, state, lease_until, attempts) and its index on (state, priority
// DESC, id).
absl::Status OpenSqliteQueue(const std::string& path, bool sync, Sqlite* db);

}  // namespace hq::bench

#endif  // HQ_BENCH_SQLITE_PEER_H_
