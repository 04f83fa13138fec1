// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The resting lanes of an unordered paged consumer group: idle lanes (no
// task, out of the working set) that had their turn with messages left and
// went behind the lanes waiting on disk (GroupLane::behind). The group
// keeps them in memory so that their return (a new hint brings them back)
// reads nothing, and forgets those that rested longest when resting and
// active lanes together pass the working set's cap.
//
// Not thread-safe: the group calls it under its lock (GroupImpl::mu_). A
// lane stays in memory while it rests.

#ifndef HQ_LIB_CONSUME_RESTING_LANES_H_
#define HQ_LIB_CONSUME_RESTING_LANES_H_

#include <cstddef>
#include <list>

#include "lib/consume/group_lane.h"

namespace hq {

class RestingLanes {
 public:
  // `lane` begins to rest, last in line. REQUIRES: it does not rest.
  void Add(GroupLane* lane) {
    lane->resting = true;
    lane->rest_pos = lanes_.insert(lanes_.end(), lane);
  }
  // `lane` stops resting (it is used again), if it rests.
  void Remove(GroupLane* lane) {
    if (!lane->resting) return;
    lanes_.erase(lane->rest_pos);
    lane->resting = false;
  }
  // Takes out the lanes that rested longest while `active` + size() is
  // over `max`, and calls forget(lane) for each (which forgets it).
  template <typename Forget>
  void Trim(size_t active, size_t max, Forget forget) {
    while (!lanes_.empty() && active + lanes_.size() > max) {
      GroupLane* lane = lanes_.front();
      lanes_.pop_front();
      forget(lane);
    }
  }
  size_t size() const { return lanes_.size(); }

 private:
  std::list<GroupLane*> lanes_;  // Longest resting first.
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_RESTING_LANES_H_
