// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq::Mutex, hq::MutexLock and hq::CondVar: absl::Mutex and absl::CondVar
// with the same interface, plus ThreadSanitizer annotations.
//
// Why: Debian's libabsl is not built with -fsanitize=thread, so TSan cannot
// see the happens-before edges absl::Mutex creates (its fast path is an
// atomic inside the uninstrumented library) and reports every guarded
// access as a race. Under TSan these wrappers announce each acquire and
// release on the mutex's address; otherwise they compile to plain absl calls.

#ifndef HQ_LIB_UTIL_SYNC_H_
#define HQ_LIB_UTIL_SYNC_H_

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

#if defined(__SANITIZE_THREAD__)
#define HQ_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HQ_TSAN 1
#endif
#endif

#ifdef HQ_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace hq {

class CondVar;

class ABSL_LOCKABLE Mutex {
 public:
  constexpr explicit Mutex(absl::ConstInitType c) : mu_(c) {}
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    mu_.Lock();
    Acquired();
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    Releasing();
    mu_.Unlock();
  }
  // Takes the lock if it is free and returns true; false at once if not.
  bool TryLock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    if (!mu_.TryLock()) return false;
    Acquired();
    return true;
  }
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() { mu_.AssertHeld(); }

  // No Await(Condition): absl evaluates conditions inside the
  // uninstrumented library, where TSan cannot see the lock held. Use a
  // CondVar loop.

 private:
  friend class CondVar;
  void Acquired() {
#ifdef HQ_TSAN
    __tsan_acquire(this);
#endif
  }
  void Releasing() {
#ifdef HQ_TSAN
    __tsan_release(this);
#endif
  }

  absl::Mutex mu_;
};

class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // Atomically releases `mu`, waits for Signal/SignalAll (or a spurious
  // wakeup), and reacquires `mu`. REQUIRES: `mu` held.
  void Wait(Mutex* mu) {
    mu->Releasing();
    cv_.Wait(&mu->mu_);
    mu->Acquired();
  }
  // As Wait, but returns after `timeout` at the latest; true if it timed
  // out.
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout) {
    mu->Releasing();
    const bool timed_out = cv_.WaitWithTimeout(&mu->mu_, timeout);
    mu->Acquired();
    return timed_out;
  }
  void Signal() { cv_.Signal(); }
  void SignalAll() { cv_.SignalAll(); }

 private:
  absl::CondVar cv_;
};

}  // namespace hq

#endif  // HQ_LIB_UTIL_SYNC_H_
