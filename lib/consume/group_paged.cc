// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): paged groups, whose lanes with new
// messages come from a LaneSource into a bounded working set (their claims:
// paged_claim.h): a lane read into memory, and let go of once its progress
// is written.

#include <string>
#include <utility>

#include "lib/consume/group_impl.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/util/status_macros.h"

namespace hq {

absl::StatusOr<GroupImpl::Lane*> GroupImpl::ReadInLane(std::string prefix,
                                                       absl::Time now,
                                                       leveldb::Iterator* it,
                                                       size_t* recovered) {
  HQ_ASSIGN_OR_RETURN(Lane * lane, NewLane(std::move(prefix), nullptr));
  if (lane->done < lane->scan) {
    // Handed out before a restart and not completed: only a lane not in
    // memory since then can have such a window.
    HQ_RETURN_IF_ERROR(LoadWindow(lane, queue_->TtlCutoff(now), it));
    *recovered += recovered_.size();
    Recover(now);
  }
  return lane;
}

void GroupImpl::MaybeRelease(Lane* lane, leveldb::WriteBatch* batch) {
  // A first hand-out has no record: after a restart only the cursor window,
  // found through the held position or park record, says it was in flight.
  if (lane->active || !TasksPersisted(*lane)) return;
  LetGoHold(lane);
  if (lane->park_record && !lane->parked_out) {
    parked_.Delete(lane->prefix, batch);
    lane->park_record = false;
  }
}

}  // namespace hq
