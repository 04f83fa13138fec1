// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "hq/clock.h"

namespace hq {
namespace {

class SystemClock final : public Clock {
 public:
  absl::Time Now() const override { return absl::Now(); }
};

}  // namespace

Clock* Clock::Default() {
  static SystemClock* const clock = new SystemClock;
  return clock;
}

SimulatedClock::SimulatedClock(absl::Time start) : now_(start) {}

absl::Time SimulatedClock::Now() const {
  absl::MutexLock l(&mu_);
  return now_;
}

void SimulatedClock::Advance(absl::Duration d) {
  absl::MutexLock l(&mu_);
  now_ += d;
}

void SimulatedClock::Set(absl::Time t) {
  absl::MutexLock l(&mu_);
  now_ = t;
}

}  // namespace hq
