// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#ifndef HQ_LIB_ENGINE_LEASE_MANAGER_H_
#define HQ_LIB_ENGINE_LEASE_MANAGER_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "hq/clock.h"
#include "hq/lease.h"
#include "lib/util/sync.h"

namespace hq {

// Leases live in a slab of slots; an id is (generation << 32 | slot + 1),
// so lookup is O(1) and a stale id never matches a reused slot. The heap is
// an array of slot numbers ordered by deadline; every slot knows its heap
// position, so Renew and Cancel fix the heap in O(log n) without searching.
// About 72 bytes per live lease (more if the action captures more than
// std::function stores inline).
class LeaseManagerImpl final : public LeaseManager, private Clock::Listener {
 public:
  explicit LeaseManagerImpl(Clock* clock);
  // Stops the thread; pending actions never run.
  ~LeaseManagerImpl() override;

  absl::StatusOr<LeaseId> Create(absl::Duration duration,
                                 std::function<void()> on_expire) override;
  // As Create, with an absolute deadline on the clock (one already passed
  // expires at once). For timers computed from an earlier clock reading:
  // a relative duration would move them later by the time since.
  absl::StatusOr<LeaseId> CreateAt(absl::Time deadline,
                                   std::function<void()> on_expire);
  absl::Status Renew(LeaseId id, absl::Duration duration) override;
  absl::Status Cancel(LeaseId id) override;
  absl::StatusOr<absl::Time> Deadline(LeaseId id) override;
  size_t size() override;

  // Stops accepting leases, joins the thread and destroys the actions that
  // will never run (idempotent).
  void Shutdown();

 private:
  enum class State : uint8_t { kFree, kActive, kFiring };
  struct Slot {
    absl::Time deadline;
    uint64_t seq = 0;  // When the deadline was set: orders equal deadlines.
    std::function<void()> action;
    uint32_t heap_pos = 0;
    uint32_t generation = 1;
    State state = State::kFree;
    bool last_expired = false;  // The previous generation expired.
  };

  void OnTimeChanged() override;
  void Run();

  // Finds the live slot of `id`, or the error Renew and Cancel return.
  absl::StatusOr<uint32_t> Find(LeaseId id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Time DeadlineAfter(absl::Duration d) const;
  void Free(uint32_t slot, bool expired) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  void HeapPush(uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void HeapRemove(uint32_t pos) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Restores the heap around `pos` after its deadline changed.
  void HeapFix(uint32_t pos) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool SiftUp(uint32_t pos) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SiftDown(uint32_t pos) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Place(uint32_t pos, uint32_t slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether slot `a` expires before slot `b`: deadline, then seq.
  bool Before(uint32_t a, uint32_t b) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Clock* const clock_;

  Mutex mu_;
  CondVar wake_;   // The thread: the earliest deadline or the time changed.
  CondVar fired_;  // An action finished; a time change was processed.
  std::vector<Slot> slots_ ABSL_GUARDED_BY(mu_);
  std::deque<uint32_t> free_ ABSL_GUARDED_BY(mu_);  // FIFO: slow reuse.
  std::vector<uint32_t> heap_ ABSL_GUARDED_BY(mu_);
  size_t live_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  // Simulated clocks: OnTimeChanged bumps epoch_ and waits until the thread
  // has run everything due at that time (processed_ >= its epoch).
  uint64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t processed_ ABSL_GUARDED_BY(mu_) = 0;

  std::thread thread_;
  std::thread::id thread_id_;  // Set before any lease exists.
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_LEASE_MANAGER_H_
