// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "hq/clock.h"

#include "absl/time/clock.h"

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

SimulatedClock::SimulatedClock(absl::Time start)
    : now_ns_(absl::ToUnixNanos(start)) {}

absl::Time SimulatedClock::Now() const {
  return absl::FromUnixNanos(now_ns_.load(std::memory_order_acquire));
}

void SimulatedClock::Advance(absl::Duration d) {
  const int64_t delta = absl::ToInt64Nanoseconds(d);  // Saturates.
  int64_t cur = now_ns_.load(std::memory_order_relaxed);
  int64_t next;
  do {
    if (__builtin_add_overflow(cur, delta, &next)) {
      next = delta > 0 ? INT64_MAX : INT64_MIN;
    }
  } while (
      !now_ns_.compare_exchange_weak(cur, next, std::memory_order_acq_rel));
  Notify();
}

void SimulatedClock::Set(absl::Time t) {
  now_ns_.store(absl::ToUnixNanos(t), std::memory_order_release);
  Notify();
}

void SimulatedClock::AddListener(Listener* listener) {
  std::lock_guard<std::mutex> l(listeners_mu_);
  listeners_.push_back(listener);
}

void SimulatedClock::RemoveListener(Listener* listener) {
  std::lock_guard<std::mutex> l(listeners_mu_);
  std::erase(listeners_, listener);
}

void SimulatedClock::Notify() {
  std::lock_guard<std::mutex> l(listeners_mu_);
  for (Listener* listener : listeners_) listener->OnTimeChanged();
}

}  // namespace hq
