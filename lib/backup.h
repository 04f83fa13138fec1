// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Backup (lib/backup.cc): a consistent copy of a live Db, made by the
// process that has it open.
//
// Why it is consistent. LevelDB's state is its MANIFEST (which tables, from
// which log on to replay) plus the logs. Tables are never modified once
// written and logs only appended to; files are deleted only after the
// MANIFEST stopped naming them. So Backup:
//   1. pins the Db's files: while a backup runs, LevelDB's deletions of
//      tables, logs and MANIFESTs are deferred (FilePinEnv below, the Env
//      LevelDB is opened with), so every file the copy needs stays;
//   2. reads the MANIFEST up to its last complete edit: a version V whose
//      tables all exist (pinned), and the first log V needs;
//   3. links (or copies) V's tables;
//   4. lists the logs from V's first on and copies them in number order,
//      the last one up to its last complete record. LevelDB starts a new
//      log only after the previous one's last append, so every log but the
//      last is complete; records flushed into tables after step 2 are in
//      these logs too (pinned), so replaying them over V gives the Db as of
//      the end of the last log's copy: a prefix of the writes in commit
//      order, containing every write acknowledged before Backup began;
//   5. writes V's MANIFEST bytes and CURRENT, syncs, unpins.
// RocksDB's Checkpoint does the same with DisableFileDeletions; LevelDB 1.23
// has no such call, hence the Env. The hq tool's LiveCopy
// (tools/live_view.h) copies a Db held by another process the same way but
// cannot pin its files: it retries when the MANIFEST changed under it.

#ifndef HQ_LIB_BACKUP_H_
#define HQ_LIB_BACKUP_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "leveldb/env.h"
#include "lib/sync.h"

namespace hq {

// A leveldb::Env wrapper that, while pinned, defers the removal of
// LevelDB's tables, logs and MANIFESTs: RemoveFile succeeds and the file
// stays until the last pin is released, when it is removed. LevelDB never
// reuses a file number within a process, so a deferred name is not
// created again meanwhile. Thread-safe.
class FilePinEnv final : public leveldb::EnvWrapper {
 public:
  explicit FilePinEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}

  leveldb::Status RemoveFile(const std::string& name) override;

  void Pin();
  // Removes the deferred files when the last pin goes (errors ignored, as
  // LevelDB ignores them: the next Open's cleanup retries).
  void Unpin();

  // Files whose removal is deferred now.
  size_t TEST_Deferred();

 private:
  Mutex mu_;
  int pins_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_set<std::string> deferred_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hq

#endif  // HQ_LIB_BACKUP_H_
