// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The in-memory state of a consumer group's lanes and tasks
// (lib/consume/group_impl.h): a lane of the group's working set with its
// cursors and the tasks between them. Plain data: the group reads and
// changes it under its lock (GroupImpl::mu_).

#ifndef HQ_LIB_CONSUME_GROUP_LANE_H_
#define HQ_LIB_CONSUME_GROUP_LANE_H_

#include <cstdint>
#include <list>
#include <map>
#include <string>

#include "absl/time/time.h"
#include "hq/group.h"
#include "lib/consume/claim_records.h"
#include "lib/consume/lane_set.h"
#include "lib/consume/read_ahead.h"
#include "lib/format/format.h"

namespace hq {

struct GroupLane;

// A task of a lane: from its hand-out until the completion cursor passes it.
struct GroupTask {
  format::TaskState state = format::TaskState::kInFlight;
  uint32_t attempts = 0;
  absl::Time since;       // In flight: claimed at. Waiting: due.
  absl::Time deadline;    // In flight: the lease deadline.
  uint64_t share = 0;     // In flight: its lease share (shares_), and
  uint32_t share_at = 0;  // its entry there.
  uint64_t wait_seq = 0;  // Waiting: its place in Redeliveries.
  // A task record is on disk. A task handed out for the first time, in
  // order, has none: the scan cursor says it was handed out.
  bool persisted = false;
  // Waiting after Release (not after a lease expiry): no longer held.
  bool released = false;
  // Waiting to be written to the dead-letter queue.
  bool dying = false;
  DeadLetterReason reason = DeadLetterReason::kLeaseExpired;
  // Ordered groups, in flight: the consumer it was handed to.
  std::string consumer;
  // In flight, counted by the pacer (with its topic, time layout only).
  bool paced = false;
  std::string topic;
};
// LaneBase::active: in an active list (LaneSet::Enter);
// LaneBase::hold: paged groups, the source position it holds.
struct GroupLane : LaneBase {
  MessageId scan, done;
  // As stored: in its cursor record, or implied without one (Absent).
  format::CursorValue saved;
  bool saved_exists = false;  // `saved` is known (else: never handed out).
  bool record = false;        // A cursor record is stored.
  // Its last read reached its end: nothing lay past its scan cursor.
  bool at_end = false;
  std::map<MessageId, GroupTask> tasks;
  bool dirty = false;        // Touched by the call in progress.
  bool park_record = false;  // A park record of it is on disk (as known).
  bool parked_out = false;   // Parked: found again through that record.
  // Paged groups: it had its turn with messages left and went behind the
  // lanes waiting on disk (a new hint brings it back). An unordered
  // group keeps it in memory while idle (RestingLanes) so that its return
  // reads nothing.
  bool behind = false;
  bool resting = false;  // In RestingLanes, at rest_pos.
  std::list<GroupLane*>::iterator rest_pos;
  // Topic layout: its messages from the scan cursor on, as read ahead by
  // its last turn (LaneTurn).
  ReadAhead ahead;
  // Paged groups: the claim records holding its cursors as a claim left
  // them (ClaimRecords), until its cursor record is written.
  ClaimRecords::Seqs claims;
  bool opened = false;      // Handed out a first time in this call.
  bool cursor_put = false;  // Its cursor record is in this call's batch.
  // Its new cursors go without a record (FloorMayCover, then Write).
  bool floored = false;
  // It stopped holding the source position back in this call: Settle
  // writes its cursor record unless its floor covers it.
  bool let_go = false;
};

// Ordered groups: whether `lane` has a task not completed (in flight or
// waiting), which holds back the rest of the lane.
inline bool Pending(const GroupLane& lane) {
  for (const auto& [id, rec] : lane.tasks) {
    if (rec.state != format::TaskState::kDone) return true;
  }
  return false;
}

// Whether every task of `lane` has a task record.
inline bool TasksPersisted(const GroupLane& lane) {
  for (const auto& [id, rec] : lane.tasks) {
    if (!rec.persisted) return false;
  }
  return true;
}

}  // namespace hq

#endif  // HQ_LIB_CONSUME_GROUP_LANE_H_
