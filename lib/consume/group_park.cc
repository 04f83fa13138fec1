// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): parked lanes of ordered paged
// groups (doc/massive_topics.md, "Ordered groups"; doc/format.md, "Parked
// lanes"). An ordered claim takes one task from each idle partition of its
// consumer. Lanes it cannot take (their partition busy or another
// consumer's, or a task of theirs pending) would fill the working set as
// the other lanes drain, and hide the lanes of its idle partitions waiting
// in the source; so when it needs room it parks them, with a record keyed
// by partition and priority, and a partition that wants work reads its own
// parked lanes first.

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/consume/group_impl.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

std::vector<uint32_t> GroupImpl::Hungry(const std::deque<Lane*>& dq,
                                        const ClaimPass& p, size_t* idle) {
  *idle = 0;
  std::vector<bool> served(consumers_.parts().size(), false);
  for (const Lane* lane : dq) {
    if (p.match(lane) && !Pending(*lane)) served[lane->partition] = true;
  }
  std::vector<uint32_t> out;
  for (const uint32_t pid : p.consumer->partitions) {
    if (consumers_.parts()[pid].in_flight > 0 ||
        !(p.o.partitions.empty() ||
          std::find(p.o.partitions.begin(), p.o.partitions.end(), pid) !=
              p.o.partitions.end())) {
      continue;
    }
    ++*idle;
    if (!served[pid]) out.push_back(pid);
  }
  return out;
}

void GroupImpl::ParkUnusable(size_t n, size_t max, ClaimPass* p) {
  for (std::deque<Lane*>& dq : active_) {
    if (lanes_.active() + n <= max) return;
    std::deque<Lane*> keep;
    for (Lane* lane : dq) {
      if (lanes_.active() + n > max && (!p->match(lane) || Pending(*lane))) {
        Park(lane, p);
      } else {
        keep.push_back(lane);
      }
    }
    dq.swap(keep);
  }
}

void GroupImpl::Park(Lane* lane, ClaimPass* p) {
  lanes_.Leave(lane);
  // The record, written with the claim, takes over from the source
  // position the lane held.
  LetGoHold(lane);
  lane->parked_out = true;
  parked_.Park(lane->prefix, lane->partition, lane->priority,
               /*put=*/!lane->park_record, &p->batch);
  lane->park_record = true;
  Touch(lane, &p->touched);  // Forgotten at the commit if no task.
}

absl::Status GroupImpl::Unpark(uint32_t partition, int priority, ClaimPass* p,
                               bool* found) {
  *found = false;
  if (parked_.empty(partition, priority)) return absl::OkStatus();
  // Runs under mu_, which the caller of Unpark holds.
  return parked_.Next(
      partition, priority, p->it,
      [&](std::string prefix)
          ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::StatusOr<bool> {
            Lane* lane = lanes_.Find(prefix);
            if (lane != nullptr && !lane->parked_out) {
              // In the working set (from the source since it was parked),
              // or drained by this claim: its record goes when it is
              // released.
              lane->park_record = true;
              return false;
            }
            if (lane == nullptr) {
              HQ_ASSIGN_OR_RETURN(lane,
                                  ReadInLane(std::move(prefix), p->now, p->it));
            }
            lane->park_record = true;
            lane->parked_out = false;
            Activate(lane);
            *found = true;
            return true;
          });
}

}  // namespace hq
