// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "tools/stop_signals.h"

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <ctime>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace hq::tool {
namespace {

sigset_t StopSet() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

bool stopped = false;  // Read and written by the waiting thread only.

}  // namespace

void BlockStopSignals() {
  const sigset_t set = StopSet();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

void UnblockStopSignals() {
  const sigset_t set = StopSet();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

bool SleepUnlessStopped(absl::Duration d) {
  if (stopped) return true;
  const sigset_t set = StopSet();
  const absl::Time end = absl::Now() + d;
  for (;;) {
    const absl::Duration left = end - absl::Now();
    if (left <= absl::ZeroDuration()) return false;
    const timespec ts = absl::ToTimespec(left);
    const int sig = sigtimedwait(&set, nullptr, &ts);
    if (sig == SIGINT || sig == SIGTERM) {
      stopped = true;
      return true;
    }
    // EAGAIN: the time is up; EINTR: another signal's handler ran.
    if (sig < 0 && errno == EAGAIN) return false;
  }
}

}  // namespace hq::tool
