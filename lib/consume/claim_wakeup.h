// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Where a consumer group's blocked claims wait (ClaimOptions::wait). A
// claim reads the wake sequence (seq) before it looks for tasks and then
// sleeps until Wake moves the sequence past what it read, so that a wake
// between its look and its sleep is never lost.

#ifndef HQ_LIB_CONSUME_CLAIM_WAKEUP_H_
#define HQ_LIB_CONSUME_CLAIM_WAKEUP_H_

#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "lib/util/sync.h"

namespace hq {

// Thread-safe. Its mutex is taken alone: no other lock is taken while it
// is held, and it may be called with any lock held.
class ClaimWakeup {
 public:
  // A claim begins (Enter) or ends (Exit) its wait; has_waiters() lets a
  // caller skip Wake when no claim waits.
  void Enter() { waiters_.fetch_add(1); }
  void Exit() { waiters_.fetch_sub(1); }
  bool has_waiters() const { return waiters_.load() > 0; }
  int waiters() const { return waiters_.load(); }
  // Of the waiting claims, those asleep in WaitPast (for tests: a claim
  // that has Entered may not have looked for tasks yet).
  int sleepers() const { return sleepers_.load(); }

  uint64_t seq() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    return seq_;
  }
  // Moves the sequence and wakes every waiting claim.
  void Wake() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    ++seq_;
    cv_.SignalAll();
  }
  // Blocks until the sequence is past `seen` (a seq() read earlier).
  void WaitPast(uint64_t seen) ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    sleepers_.fetch_add(1);
    while (seq_ == seen) cv_.Wait(&mu_);
    sleepers_.fetch_sub(1);
  }

 private:
  Mutex mu_;
  CondVar cv_;
  uint64_t seq_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int> waiters_{0};
  std::atomic<int> sleepers_{0};
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_CLAIM_WAKEUP_H_
