// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq::Clock is the one source of time in hq. MessageId timestamps, leases,
// TTL and redelivery deadlines all read the Clock given in
// hq::Options::clock, so a test can drive queue semantics with a
// SimulatedClock instead of sleeping.

#ifndef HQ_CLOCK_H_
#define HQ_CLOCK_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "absl/time/time.h"
#include "hq/export.h"

namespace hq {

// A source of wall-clock time.
//
// Thread safety: implementations must be safe to call from any thread.
class HQ_EXPORT Clock {
 public:
  Clock() = default;
  virtual ~Clock() = default;
  Clock(const Clock&) = delete;
  Clock& operator=(const Clock&) = delete;

  // Returns the current time. May go backwards (a stepped system clock);
  // hq copes with that (see MessageId in message.h).
  virtual absl::Time Now() const = 0;

  // Told when a clock that does not follow real time jumps.
  class Listener {
   public:
    virtual ~Listener() = default;
    // Called after the clock moved, on the thread that moved it.
    virtual void OnTimeChanged() = 0;
  };

  // Whether Now() follows real time. hq sleeps until a deadline on a
  // real-time clock; on any other clock it waits for OnTimeChanged.
  // Default: true.
  virtual bool IsRealTime() const { return true; }

  // Register and unregister a listener (a Db registers one per clock). A
  // real-time clock may ignore them. RemoveListener does not return while
  // the listener is being called.
  virtual void AddListener(Listener* /*listener*/) {}
  virtual void RemoveListener(Listener* /*listener*/) {}

  // Returns the process-wide system clock (absl::Now()). Never deleted.
  static Clock* Default();
};

// A clock that only moves when told to. For tests.
// Holds nanoseconds since the Unix epoch: times outside years 1678..2261 are
// clamped to that range.
//
// Deterministic expiry: Advance and Set return only after every Db using
// this clock has run the lease expiries (scanner leases, timers) that are
// due at the new time. Work a timer hands to another thread (the TTL sweep
// runs on the janitor thread) may still be running: tests call
// Db::CompactExpired() for a deterministic sweep. Do not call Advance or Set
// from a lease's expiry action.
//
// Thread safety: all methods may be called concurrently.
class HQ_EXPORT SimulatedClock final : public Clock {
 public:
  // Starts at `start`, by default 2026-01-01T00:00:00Z.
  explicit SimulatedClock(absl::Time start = absl::FromUnixSeconds(1767225600));

  absl::Time Now() const override;

  // Moves the clock by `d`. `d` may be negative (a step backwards).
  void Advance(absl::Duration d);

  // Sets the clock to `t`, forwards or backwards.
  void Set(absl::Time t);

  bool IsRealTime() const override { return false; }
  void AddListener(Listener* listener) override;
  void RemoveListener(Listener* listener) override;

 private:
  void Notify();

  std::atomic<int64_t> now_ns_;
  std::mutex listeners_mu_;  // Held while listeners are called.
  std::vector<Listener*> listeners_;
};

}  // namespace hq

#endif  // HQ_CLOCK_H_
