// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// File operations through a leveldb::Env, for Db::Backup and Db::Repair:
// copies that are synced before they count, hard links where the Env is
// the real file system, directory listings and syncs. An Env other than
// leveldb::Env::Default() (the in-memory Env of tests, a fault-injecting
// wrapper) gets copies instead of links, and directory syncs are its
// files' own business.

#ifndef HQ_LIB_UTIL_FILE_UTIL_H_
#define HQ_LIB_UTIL_FILE_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "leveldb/env.h"

namespace hq::file_util {

// Whether `env` is the real file system (so POSIX calls on the same paths
// are allowed: links, directory syncs, free space).
bool IsDefaultEnv(leveldb::Env* env);

// Converts a failed leveldb::Status of an operation on files (`what`
// names it): NotFound stays NotFound, a permission error is
// PermissionDenied, a full disk ResourceExhausted, the rest Internal.
absl::Status FromIo(const leveldb::Status& s, std::string_view what);

// `s` if OK, else the same message with code Internal: for callers whose
// contract names no finer code for storage errors (Db::Open's log
// recovery, hq/db.h).
absl::Status AsInternal(const absl::Status& s);

// Copies the first `limit` bytes of `from` (all of it if it is shorter)
// into a new file `to`, synced. Returns the bytes copied.
absl::StatusOr<uint64_t> CopyFile(leveldb::Env* env, const std::string& from,
                                  const std::string& to,
                                  uint64_t limit = UINT64_MAX);

// Writes `data` to a new file `path`, synced.
absl::Status WriteFile(leveldb::Env* env, const std::string& path,
                       std::string_view data);

// Hard-links `from` as `to` when `env` is the real file system and the
// file system allows it; copies otherwise. Sets *linked to which it did
// and returns the file's size.
absl::StatusOr<uint64_t> LinkOrCopy(leveldb::Env* env, const std::string& from,
                                    const std::string& to, bool* linked);

// Makes the entries of directory `dir` durable (fsync of the directory on
// the real file system; nothing on other Envs).
absl::Status SyncDir(leveldb::Env* env, const std::string& dir);

// A file under a directory, by its path relative to that directory
// ("000005.ldb", "lost/000003.log").
struct Entry {
  std::string name;
  uint64_t bytes = 0;
};

// Every file under `dir`, subdirectories included, in name order. On the
// real file system, what is neither a file nor a directory (a socket, a
// dangling link) is an error.
absl::StatusOr<std::vector<Entry>> ListFiles(leveldb::Env* env,
                                             const std::string& dir);

// True if `path` exists as a directory (on Envs without directories: if
// any file lies under it).
bool DirExists(leveldb::Env* env, const std::string& path);

// The free bytes of the file system holding `dir`; -1 when `env` is not
// the real file system or it cannot be told.
int64_t FreeBytes(leveldb::Env* env, const std::string& dir);

}  // namespace hq::file_util

#endif  // HQ_LIB_UTIL_FILE_UTIL_H_
