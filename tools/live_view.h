// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The hq tool's view of a database that another process holds open (LevelDB
// lets one process open a directory at a time).
//
// LockOwner names that process: LevelDB's LOCK is a POSIX record lock, and
// fcntl(F_GETLK) reports its holder's pid.
//
// LiveCopy takes a crash-consistent copy of the directory without the
// owner's help and without changing the directory: the table files, which
// LevelDB never modifies once written, are hard-linked (copied when linking
// fails, e.g. across file systems); the current MANIFEST and the write-ahead
// logs are copied; CURRENT is written. Tables numbered from the MANIFEST's
// next file number on are left out: one may still be being written, and the
// copy's LevelDB, handing out those numbers itself, would truncate it
// through the link. The copy is valid if the MANIFEST named by
// CURRENT did not change while it was taken (every flush and compaction
// records itself there before deleting a file, so no file the copied
// MANIFEST needs can have gone); otherwise it is taken again. Opening the
// copy is what a restart of the owner after kill -9 at that moment would
// see: every write the owner made before the copy (synced or not), a torn
// last log record dropped, and nothing of the owner's memory (tasks in
// flight and their leases show as due for redelivery, as after a restart).
// It costs the owner nothing (no lock, no signal, page-cache reads); the
// tool pays for copying the logs (up to two write buffers,
// Options::write_buffer_bytes, 64 MiB by default) and replaying them.

#ifndef HQ_TOOLS_LIVE_VIEW_H_
#define HQ_TOOLS_LIVE_VIEW_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hq::tool {

// The pid of the process holding `db_dir`'s LevelDB lock; 0 if none does;
// an error if the lock file cannot be read.
absl::StatusOr<pid_t> LockOwner(const std::string& db_dir);

// A copy of a live database directory, deleted with this object.
// Thread-compatible.
class LiveCopy {
 public:
  // Copies `db_dir` into a new directory beside it (named
  // .hq-view-PID-XXXXXX in its parent) or, if the parent is not writable, in
  // $TMPDIR. Retries while the owner changes the MANIFEST under it; fails
  // with Unavailable after 10 attempts.
  static absl::StatusOr<LiveCopy> Take(const std::string& db_dir);

  LiveCopy(LiveCopy&& other) noexcept;
  LiveCopy& operator=(LiveCopy&&) = delete;
  LiveCopy(const LiveCopy&) = delete;
  ~LiveCopy();

  // The copy's directory: open it as a Db. Close the Db before destroying
  // this object.
  const std::string& path() const { return path_; }
  // When the copy was complete: the view is the database as of then.
  absl::Time taken() const { return taken_; }
  // How long taking it took.
  absl::Duration took() const { return took_; }
  // Bytes copied (not linked).
  uint64_t copied_bytes() const { return copied_bytes_; }

 private:
  LiveCopy() = default;

  std::string path_;
  absl::Time taken_;
  absl::Duration took_;
  uint64_t copied_bytes_ = 0;
};

// What CopyLiveInto made.
struct LiveCopyStats {
  absl::Time taken;           // When the copy was complete.
  absl::Duration took;        // How long it took, all attempts.
  uint64_t copied_bytes = 0;  // Bytes copied (not linked).
  int attempts = 0;
};

// `hq backup` of a database another process holds: the copy LiveCopy
// takes, made in `dest` (which must not exist, its parent must, or be an
// empty directory) and kept. It cannot pin the owner's files as
// Db::Backup does from inside the owner, so it retries while the owner
// changes its MANIFEST, and fails with Unavailable after 10 attempts;
// what it made in `dest` is then removed. Errors: AlreadyExists (`dest`
// is a file or not empty), NotFound, Unavailable.
absl::StatusOr<LiveCopyStats> CopyLiveInto(const std::string& db_dir,
                                           const std::string& dest);

}  // namespace hq::tool

#endif  // HQ_TOOLS_LIVE_VIEW_H_
