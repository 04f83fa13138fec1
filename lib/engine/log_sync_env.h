// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#ifndef HQ_LIB_ENGINE_LOG_SYNC_ENV_H_
#define HQ_LIB_ENGINE_LOG_SYNC_ENV_H_

#include <atomic>
#include <deque>
#include <memory>
#include <string>
#include <thread>

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
// This Env closes that hole without putting an fsync on the writer's
// thread at every switch. A log file LevelDB closes (or destroys) is handed
// to one background thread, which syncs and closes the logs in the order
// they were handed over. Contract:
//   - Sync() of a log returns OK only once every log closed before it is
//     synced: a write acknowledged with sync survives a power cut together
//     with every write before it, in this log and in all earlier ones.
//   - Append() and Flush() never wait for the background: writers without
//     sync are not slowed by a switch. Until the old log's background sync
//     is done (one fsync's time after the switch), a power cut with no
//     sync write since the switch may keep pages of the new log that the
//     operating system wrote early while losing the old log's unsynced tail.
//     Open's point-in-time recovery (lib/engine/log_recovery.h) reads an old
//     log cut short before a later log's records as a hole and drops the
//     later logs, so what survives is still a prefix of the writes.
//   - If a background sync fails, the error is sticky: every later Append
//     and Sync of any log fails with it, so the write that meets it fails
//     and hq refuses writes until reopened (db.h). LevelDB itself does not
//     look at the status of closing a log.
//   - Destroying the Env syncs and closes every log still pending, and
//     joins the thread: a Db's close waits for them.
//
// Thread safety: every method may be called from any thread.
class LogSyncEnv final : public leveldb::EnvWrapper {
 public:
  explicit LogSyncEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}
  ~LogSyncEnv() override;

  leveldb::Status NewWritableFile(const std::string& name,
                                  leveldb::WritableFile** result) override;

  // Waits until every log closed so far is synced; returns the sticky
  // error of a failed background sync, or OK.
  leveldb::Status WaitForClosedLogs();

  // ---- Test hooks.

  // While held, the background thread starts no sync (destroying the Env
  // still syncs everything pending).
  void TEST_HoldSyncs(bool hold);
  // Closed logs whose sync has not finished.
  int TEST_PendingSyncs();
  // Sync() calls now waiting for earlier logs.
  int TEST_WaitingSyncs();
  // Waits until at least `min_pending` syncs are pending and `min_waiting`
  // Sync() calls wait, or `deadline` passed; true if that holds.
  bool TEST_Await(int min_pending, int min_waiting, absl::Duration deadline);

 private:
  class LogFile;
  struct Closed {
    std::unique_ptr<leveldb::WritableFile> file;
    std::string name;
  };

  // Takes `file` (named `name`) to sync and close in the background.
  void HandOver(std::unique_ptr<leveldb::WritableFile> file,
                const std::string& name);
  void Loop();
  // The sticky error. REQUIRES: failed_.
  leveldb::Status Failed();
  leveldb::Status FailedLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Set once a background sync failed; read without mu_ on every Append.
  std::atomic<bool> failed_{false};

  Mutex mu_;
  CondVar cv_;  // Signalled when any field below changes.
  std::deque<Closed> closed_ ABSL_GUARDED_BY(mu_);  // Oldest first.
  int syncing_ ABSL_GUARDED_BY(mu_) = 0;  // Taken off closed_, not done.
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;  // In WaitForClosedLogs.
  bool hold_ ABSL_GUARDED_BY(mu_) = false;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::string error_ ABSL_GUARDED_BY(mu_);   // The first failure, if any.
  std::thread thread_ ABSL_GUARDED_BY(mu_);  // Started at the first close.
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_LOG_SYNC_ENV_H_
