// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/util/leveldb_status.h"

#include <cerrno>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "hq/status.h"
#include "lib/util/strings.h"

namespace hq {

absl::Status FromLevelDb(const leveldb::Status& s, std::string_view context) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = absl::StrCat(Av(context), ": ", s.ToString());
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  return absl::InternalError(msg);
}

absl::Status LockFileError(const leveldb::Status& s, std::string_view dir,
                           std::string_view hint) {
  if (s.ok()) return absl::OkStatus();
  const std::string text = s.ToString();
  // LevelDB's POSIX Env (env_posix.cc, LockFile): "IO error: lock <file>:
  // <strerror>" when fcntl finds the lock taken, "... already held by
  // process" within one process, and "IO error: <file>: <strerror>" (from
  // PosixError) when LOCK cannot be opened.
  if (s.IsIOError() && (absl::StartsWith(text, "IO error: lock ") ||
                        absl::StrContains(text, "already held by process"))) {
    return WithErrorDetail(
        absl::FailedPreconditionError(absl::StrCat(
            "hq database directory '", Av(dir),
            "' is in use by another process (LevelDB: ", text, ")", Av(hint))),
        ErrorDetail::kDbLocked);
  }
  struct Errno {
    int code;
    const char* name;
  };
  for (const Errno& e : {Errno{EACCES, "EACCES"}, Errno{EPERM, "EPERM"},
                         Errno{EROFS, "EROFS"}}) {
    const std::string words = std::strerror(e.code);
    if (s.IsIOError() && absl::EndsWith(text, absl::StrCat(": ", words))) {
      return absl::PermissionDeniedError(absl::StrCat(
          "cannot open '", Av(dir), "/LOCK' for writing: ", words, " (", e.name,
          "); hq needs write access to the database directory and its "
          "files, also to read it",
          Av(hint)));
    }
  }
  const absl::Status other =
      FromLevelDb(s, absl::StrCat("locking '", Av(dir), "/LOCK'"));
  return absl::Status(other.code(), absl::StrCat(other.message(), Av(hint)));
}

}  // namespace hq
