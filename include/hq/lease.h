// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq::LeaseManager: named deadlines with expiry actions (HBase's Leases),
// driven by the Db's Clock. hq uses it for scanner leases and timers; users
// may hold leases of their own (a crawler's fetch deadline, say).

#ifndef HQ_LEASE_H_
#define HQ_LEASE_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hq/export.h"

namespace hq {

// Identifies a lease. Never 0. Ids are not reused while their lease lives.
using LeaseId = uint64_t;

// One per Db (Db::leases()): a thread that sleeps until the earliest
// deadline (a heap ordered by deadline), or until a lease or the clock
// changes; it never walks all leases. Create, Renew and Cancel are
// O(log n) in the number of live leases.
//
// Guarantees, for each lease:
//  - its action runs at most once, on the lease thread, at or after its
//    deadline by the Db's Clock;
//  - never after Cancel returned OK;
//  - never concurrently with a Renew that returns OK, and not before the
//    deadline that Renew set. Renew and expiry are decided under one lock:
//    either the Renew wins (OK, new deadline) or the expiry does (the Renew
//    gets FailedPrecondition and the action runs or has run).
// Leases due at the same deadline expire in the order their deadline was
// set (Create, or the last Renew). With a SimulatedClock, Advance returns
// after every action due at the new time has run, so tests see expiries
// deterministically.
//
// Actions run outside the manager's lock and may call Create, Renew and
// Cancel (Cancel of their own lease returns FailedPrecondition at once). A
// slow action delays the others: hand long work to another thread.
//
// Thread safety: all methods may be called concurrently.
class HQ_EXPORT LeaseManager {
 public:
  LeaseManager() = default;
  virtual ~LeaseManager() = default;
  LeaseManager(const LeaseManager&) = delete;
  LeaseManager& operator=(const LeaseManager&) = delete;

  // Creates a lease expiring `duration` from now. Errors: InvalidArgument
  // (negative or infinite duration, empty action), FailedPrecondition (the
  // Db is closing).
  virtual absl::StatusOr<LeaseId> Create(absl::Duration duration,
                                         std::function<void()> on_expire) = 0;

  // Moves the deadline to `duration` from now. Errors: FailedPrecondition
  // if the lease expired (its action ran or is running); NotFound if the id
  // is unknown (cancelled, or expired long ago); InvalidArgument for a
  // negative or infinite duration.
  virtual absl::Status Renew(LeaseId id, absl::Duration duration) = 0;

  // Removes the lease; OK means its action will never run. If the action
  // is running, waits for it to finish, then returns FailedPrecondition
  // (called from that action itself: returns at once). Errors as Renew.
  virtual absl::Status Cancel(LeaseId id) = 0;

  // The deadline of a live lease. Errors as Renew.
  virtual absl::StatusOr<absl::Time> Deadline(LeaseId id) = 0;

  // Number of live leases: not cancelled, and not expired (one whose action
  // is running still counts). Includes hq's own leases: scanner leases and
  // the TTL sweep timer.
  virtual size_t size() = 0;
};

}  // namespace hq

#endif  // HQ_LEASE_H_
