// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// One claim of a paged consumer group (a topic layout queue's group, see
// lib/consume/group_impl.h): how it finds its tasks in a working set of at
// most max_active_lanes lanes that come from the group's LaneSource.
//
// Priorities are served highest first. On each: the tasks due for
// redelivery, then new messages round-robin over the active lanes. When
// the lanes the claim may take fall short of what it wants (Shortfall), it
// pages more in from the source, within the working set's cap and a budget
// of lanes per claim, so that stale hints or a walk over drained lanes do
// not hold the group's lock for long (the claim then goes on after
// releasing it: GroupClaimPass::more). Active lanes of lower priorities
// make room (evicted behind the lanes waiting on disk, with a new hint). A
// lane that had its turn and still has messages goes behind the lanes
// waiting, if any (a new hint brings it back), and when the source has
// nothing more of the priority those lanes have their turn again. A claim
// with a filter (partitions, topics, an ordered consumer) may go over the
// cap by its budget, as the working set may hold only lanes it cannot take.
//
// Ordered groups: a claim takes one task from each idle partition of its
// consumer. Lanes it cannot take are parked when it needs room
// (ParkedLanes), and a partition that wants work (hungry: idle, and no
// active lane can serve it) takes its parked lanes back first.
//
// Thread-safety: a PagedClaim lives for one call of Collect, on the
// claiming thread, under the group's lock (GroupImpl::mu_). It keeps the
// claim's own state (its budget of lanes, its slack over the cap, the
// tasks found interrupted by a restart in the lanes it read in), and works
// on the group's working set as the group's friend.

#ifndef HQ_LIB_CONSUME_PAGED_CLAIM_H_
#define HQ_LIB_CONSUME_PAGED_CLAIM_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "lib/consume/group_claim_pass.h"
#include "lib/consume/group_impl.h"
#include "lib/consume/group_lane.h"
#include "lib/consume/lane_source.h"

namespace hq {

class PagedClaim {
 public:
  // Collects the tasks of the claim `p` of the paged `group` into p->out
  // (up to p->o.max), with what they change in p->batch and p->touched;
  // sets p->more if it stopped at its budget with lanes left to examine.
  static absl::Status Collect(GroupImpl* group, GroupClaimPass* p)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group->mu_);

 private:
  using Lane = GroupLane;
  // The state of one priority's rounds.
  struct Round {
    int prio;
    std::deque<Lane*>* dq;  // The group's active lanes of `prio`.
    // Lanes this claim hinted again, in turn order: when the source has
    // nothing more (as this claim sees it), their turn comes again.
    std::deque<Lane*> requeued_dq;
    std::vector<Lane*> requeued;
  };

  PagedClaim(GroupImpl* group, GroupClaimPass* p);

  // Whether the claim may take only some of the active lanes.
  static bool Filtered(const GroupClaimPass& p);
  // How many lanes to page in besides the active lanes `dq`, for
  // `remaining` more tasks: those the claim may take from dq fall short by
  // that many (ordered: some, if an idle partition of its consumer has no
  // lane of dq to serve it).
  size_t Shortfall(const std::deque<Lane*>& dq, size_t remaining)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // The claim's work on priority `prio`: its due tasks, then new messages
  // round-robin over its active lanes and, behind them, the lanes waiting
  // in the source, paged in as they are wanted.
  absl::Status CollectPriority(int prio)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // The due tasks of `prio`, if lanes read in since the last look had
  // tasks interrupted by a restart.
  absl::Status CollectRecovered(int prio)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // When the source has nothing more of r's priority, the lanes this claim
  // hinted again have their turn again: back into the active list, within
  // the cap and the slack.
  void ReactivateRequeued(Round* r) ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // One turn of each active lane of r's priority that the claim may take
  // from; true if one handed out a task.
  absl::StatusOr<bool> TakeRound(Round* r)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // `lane` had its turn and has messages left: to the back of the
  // round-robin, or, if lanes wait `behind` the active ones (in the source,
  // or hinted again by this claim), out of the active list with a new hint
  // (added to `requeued`).
  void Requeue(Lane* lane, bool behind, std::vector<Lane*>* requeued)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // Takes up to `n` lanes of `priority` into the active lists (parked
  // lanes of hungry partitions first, then the source's), within the cap,
  // the slack and the budget (lanes taken are spent from it). Returns how
  // many it took. Lanes of lower priorities make room (MakeRoom).
  absl::StatusOr<size_t> PageIn(int priority, size_t n)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // Makes the lane of `t` (from the source) active, read into memory if it
  // is not there.
  absl::Status Admit(LaneSource::Taken* t)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // Evicts active lanes of priorities below `priority`, lowest first, each
  // with a new hint, until `n` more fit under `max` (or none is left).
  void MakeRoom(int priority, size_t n, size_t max)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // Takes the active `lane` out of the round-robin with a new hint (to the
  // back, on disk), releasing its source position; adds it to
  // p_->made_room.
  void Evict(Lane* lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);

  // Ordered groups. The idle partitions of the consumer (within the
  // claim's filter) that no lane of the active list `dq` with nothing
  // pending can serve; `*idle`: how many are idle.
  std::vector<uint32_t> Hungry(const std::deque<Lane*>& dq, size_t* idle)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // Parks active lanes the claim cannot take, lowest priority first, until
  // `n` more fit under `max` (or none is left).
  void ParkUnusable(size_t n, size_t max)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  void Park(Lane* lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // Takes one parked lane of (`partition`, `priority`) that is not in the
  // working set into it; returns whether there was one.
  absl::StatusOr<bool> Unpark(uint32_t partition, int priority)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);

  GroupImpl* const group_;
  GroupClaimPass* const p_;
  // Lanes the claim may still take from the source or the park records.
  size_t budget_;
  // Active lanes allowed over the cap (a filtered claim).
  const size_t slack_;
  // Tasks a restart interrupted in lanes read in since CollectRecovered.
  size_t recovered_ = 0;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_PAGED_CLAIM_H_
