// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq::Clock is the one source of time in hq. MessageId timestamps (and, in
// later releases, leases, TTL and redelivery deadlines) all read the Clock
// given in hq::Options::clock, so a test can drive queue semantics with a
// SimulatedClock instead of sleeping.

#ifndef HQ_CLOCK_H_
#define HQ_CLOCK_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"

namespace hq {

// A source of wall-clock time.
//
// Thread safety: implementations must be safe to call from any thread.
class Clock {
 public:
  virtual ~Clock() = default;

  // Returns the current time. May go backwards (a stepped system clock);
  // hq copes with that (see MessageId in message.h).
  virtual absl::Time Now() const = 0;

  // Returns the process-wide system clock (absl::Now()). Never deleted.
  static Clock* Default();
};

// A clock that only moves when told to. For tests.
// Holds nanoseconds since the Unix epoch: times outside years 1678..2261 are
// clamped to that range.
//
// Thread safety: all methods may be called concurrently (lock-free).
class SimulatedClock final : public Clock {
 public:
  // Starts at `start`, by default 2026-01-01T00:00:00Z.
  explicit SimulatedClock(absl::Time start = absl::FromUnixSeconds(1767225600));

  absl::Time Now() const override;

  // Moves the clock by `d`. `d` may be negative (a step backwards).
  void Advance(absl::Duration d);

  // Sets the clock to `t`, forwards or backwards.
  void Set(absl::Time t);

 private:
  std::atomic<int64_t> now_ns_;
};

}  // namespace hq

#endif  // HQ_CLOCK_H_
