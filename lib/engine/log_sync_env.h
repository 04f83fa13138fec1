// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#ifndef HQ_LIB_ENGINE_LOG_SYNC_ENV_H_
#define HQ_LIB_ENGINE_LOG_SYNC_ENV_H_

#include <atomic>
#include <deque>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "leveldb/env.h"
#include "lib/util/sync.h"

namespace hq {

// LevelDB 1.23 drops a full log file without syncing it when it switches
// to a new one, and flushes that log's memtable to a table in the
// background. A sync=true write to the new log made before the flush is
// done could then survive a power cut while the unsynced writes before it
// (in the old log) were lost: a hole in a lane, or a message whose queue's
// catalog record is gone.
//
// This Env closes that hole without any fsync that raw LevelDB would not
// make. A log file LevelDB closes (or destroys) is kept open, unsynced, in
// a list of closed logs, until one of two things happens first:
//   - a Sync() of a later log (a sync write) syncs and closes every closed
//     log, oldest first, before its own: a write acknowledged with sync
//     survives a power cut together with every write before it;
//   - LevelDB removes the log (RemoveFile), which it does only once the
//     log's memtable is in a table that it synced and recorded in a synced
//     MANIFEST: the log's writes are durable without it, and it is closed
//     unsynced.
// So writers without sync pay nothing for this: no fsync on any thread,
// as with raw LevelDB. Contract:
//   - Append() and Flush() never wait for a sync of a closed log.
//   - Sync() of a log returns OK only once every log closed before it is
//     synced or removed as above.
//   - Until then, a power cut with no sync write since the switch may keep
//     pages of the new log that the operating system wrote early while
//     losing the old log's unsynced tail. Open's point-in-time recovery
//     (lib/engine/log_recovery.h) reads an old log cut short before a later
//     log's records as a hole and drops the later logs, so what survives is
//     still a prefix of the writes.
//   - If a sync of a closed log fails, the error is sticky: every later
//     Append and Sync of any log fails with it, so the write that meets it
//     fails and hq refuses writes until reopened (db.h). LevelDB itself does
//     not look at the status of closing a log.
//   - Destroying the Env syncs and closes every closed log still listed.
//
// Thread safety: every method may be called from any thread. Closed logs
// are synced by the thread that needs them synced; a second such thread
// waits for the first.
class LogSyncEnv final : public leveldb::EnvWrapper {
 public:
  explicit LogSyncEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}
  ~LogSyncEnv() override;

  leveldb::Status NewWritableFile(const std::string& name,
                                  leveldb::WritableFile** result) override;
  // Forgets (closes unsynced) a closed log before removing it.
  leveldb::Status RemoveFile(const std::string& name) override;

  // Syncs and closes every log closed so far (waiting for another thread
  // that is syncing them); returns the sticky error of a failed sync, or
  // OK.
  leveldb::Status SyncClosedLogs();

  // ---- Test hooks.

  // While held, no closed log is synced: SyncClosedLogs (and so the Sync()
  // of a log) waits. Destroying the Env still syncs everything listed.
  void TEST_HoldSyncs(bool hold);
  // Closed logs neither synced nor removed yet.
  int TEST_PendingSyncs();
  // SyncClosedLogs calls now waiting.
  int TEST_WaitingSyncs();
  // Waits until at least `min_pending` closed logs are pending and
  // `min_waiting` SyncClosedLogs calls wait, or `deadline` passed; true if
  // that holds.
  bool TEST_Await(int min_pending, int min_waiting, absl::Duration deadline);

 private:
  class LogFile;
  struct Closed {
    std::unique_ptr<leveldb::WritableFile> file;
    std::string name;
  };

  // Takes `file` (named `name`), which LevelDB closed, into closed_.
  void HandOver(std::unique_ptr<leveldb::WritableFile> file,
                const std::string& name);
  // Syncs and closes `c`; records a failure as the sticky error.
  void SyncAndClose(Closed& c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The sticky error. REQUIRES: failed_.
  leveldb::Status Failed();
  leveldb::Status FailedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Set once a sync of a closed log failed; read without mu_ on every
  // Append.
  std::atomic<bool> failed_{false};

  Mutex mu_;
  CondVar cv_;  // Signalled when any field below changes.
  std::deque<Closed> closed_ ABSL_GUARDED_BY(mu_);  // Oldest first.
  int syncing_ ABSL_GUARDED_BY(mu_) = 0;  // Taken off closed_, not done.
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;  // In SyncClosedLogs.
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  std::string error_ ABSL_GUARDED_BY(mu_);  // The first failure, if any.
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_LOG_SYNC_ENV_H_
