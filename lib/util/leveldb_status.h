// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#ifndef HQ_LIB_UTIL_LEVELDB_STATUS_H_
#define HQ_LIB_UTIL_LEVELDB_STATUS_H_

#include <string_view>

#include "absl/status/status.h"
#include "leveldb/status.h"

namespace hq {

// A LevelDB status as an absl::Status, its message prefixed by `context`:
// Corruption is DataLoss, NotFound NotFound, anything else Internal.
absl::Status FromLevelDb(const leveldb::Status& s, std::string_view context);

// The Status of a failed leveldb::Env::LockFile of the LOCK file of the Db
// directory `dir`, with `hint` appended to its message:
//   - the lock is held (by another process, or by this one):
//     FailedPrecondition with ErrorDetail::kDbLocked (hq/status.h);
//   - LOCK cannot be opened for writing (EACCES, EPERM or EROFS, as a
//     read-only directory or file system gives): PermissionDenied naming
//     the file and the errno;
//   - anything else as FromLevelDb.
absl::Status LockFileError(const leveldb::Status& s, std::string_view dir,
                           std::string_view hint = "");

}  // namespace hq

#endif  // HQ_LIB_UTIL_LEVELDB_STATUS_H_
