// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// One turn of a consumer group's lane in a claim (lib/consume/
// group_impl.h): the lane's new messages are read from its scan cursor and
// each is handed out, passed, or stops the turn.
//
// - Handed out: in flight under the claim's lease, up to `want` a turn.
// - Passed, the scan cursor moving over it while the messages read are
//   contiguous: a message with a task already, or outside the group's
//   topic filter; a delayed message (not_before in the future), which waits
//   with the redeliveries as a task record of attempt 0 (and holds back an
//   ordered lane).
// - Passed, the scan cursor staying (the messages stop being contiguous):
//   a message outside the claim's own topic filter (a time layout lane),
//   or of a topic held back by its pacing (a time layout lane of an
//   unordered group, a bounded number of them a turn).
// - Stopping the turn: the turn's `want` reached; a topic held back by its
//   pacing in a topic layout lane (one topic) or an ordered lane.
// A topic layout lane that stops with messages left keeps the next ones
// read ahead (GroupLane::ahead), which its next turn offers before it
// seeks; a lane the claim's paging pass found holding one message is
// offered that message without a seek (LaneSet::TakeWalked).
//
// Thread-safety: a LaneTurn lives for one call of Take, under the group's
// lock (GroupImpl::mu_), and works on the group as its friend.

#ifndef HQ_LIB_CONSUME_LANE_TURN_H_
#define HQ_LIB_CONSUME_LANE_TURN_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hq/group.h"
#include "leveldb/iterator.h"
#include "lib/consume/group_claim_pass.h"
#include "lib/consume/group_impl.h"
#include "lib/consume/group_lane.h"
#include "lib/engine/queue_impl.h"

namespace hq {

class LaneTurn {
 public:
  // A turn reads past at most this many messages of topics held back by
  // their pacing in one lane of a `time` layout queue (hq/group.h); so does
  // a claim's look at the due redeliveries of a priority.
  static constexpr size_t kMaxPacedSkips = 1000;

  // The turn of `lane` in the claim `p` of `group`: hands out at most
  // `want` tasks into p->out, writing into p->batch, reading with p->it at
  // p->now; `topics` (time layout only; empty: all) filters the messages it
  // hands out. Returns whether the lane has nothing left to examine, and
  // notes it in GroupLane::at_end.
  static absl::StatusOr<bool> Take(GroupImpl* group, GroupLane* lane,
                                   size_t want,
                                   const std::vector<std::string>& topics,
                                   GroupClaimPass* p)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group->mu_);

  // Reads the message `id` of `lane` of `queue` into `t` (key, payload,
  // not-before, topic), reading with `it`. False if it is gone; DataLoss
  // if its value is malformed.
  static absl::StatusOr<bool> ReadMessage(const QueueImpl& queue,
                                          const GroupLane& lane, MessageId id,
                                          leveldb::Iterator* it, Task* t);

 private:
  LaneTurn(GroupImpl* group, GroupLane* lane, size_t want,
           const std::vector<std::string>& topics, GroupClaimPass* p);

  absl::StatusOr<bool> Run() ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // The next message of the lane, `id` of `topic` with value `value`:
  // handed out, or passed (true). False if the turn stops before it, or
  // (an ordered lane's delayed message) after it.
  absl::StatusOr<bool> Offer(MessageId id, std::string_view topic,
                             std::string_view value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // Run's end for a lane whose message the pass's walk kept: offers it if
  // the scan cursor has not passed it.
  absl::StatusOr<bool> OfferWalked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(group_->mu_);
  // Sets the key, payload and not-before of `t` from a message value of
  // `queue`.
  static absl::Status DecodeValue(const QueueImpl& queue,
                                  std::string_view value, MessageId id,
                                  Task* t);

  GroupImpl* const group_;
  GroupLane* const lane_;
  const size_t want_;
  const std::vector<std::string>& topics_;
  GroupClaimPass* const p_;
  const bool has_topic_;    // The queue's lanes are topics.
  bool contiguous_ = true;  // The scan cursor follows the messages read.
  size_t handed_ = 0;
  size_t paced_skips_ = 0;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_LANE_TURN_H_
