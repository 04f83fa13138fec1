// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The answer of ConsumerGroup::ListPending (Redis's XPENDING), built lane
// by lane: up to `max` tasks that are not done, in the order their lanes
// are added and, within a lane, in id order. A lane the group holds in
// memory gives its tasks as they are (AddLane); a lane that a restart left
// on disk gives the messages in the window of its stored cursors, handed
// out once and never completed, so to be delivered again (AddWindow).
//
// Not thread-safe, and takes no lock: the group adds its lanes under its
// own lock (GroupImpl::mu_).

#ifndef HQ_LIB_CONSUME_PENDING_LIST_H_
#define HQ_LIB_CONSUME_PENDING_LIST_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hq/group.h"
#include "leveldb/iterator.h"
#include "lib/consume/group_lane.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"

namespace hq {

class PendingList {
 public:
  // `max`: the most tasks the list takes.
  explicit PendingList(size_t max) : max_(max) {}

  // Whether the list has `max` tasks.
  bool full() const { return out_.size() >= max_; }
  // Appends the tasks of `lane` from id `from` that are in flight, waiting
  // to be delivered again, or delayed (not done, nor dying).
  void AddLane(const GroupLane& lane, MessageId from);
  // Appends, as redeliveries of attempt 1 since `now`, the messages of the
  // lane `prefix` (of `partition`, `priority`, `topic`) in the window of
  // its stored cursors `c` from id `from`, reading with `it`.
  absl::Status AddWindow(std::string_view prefix, uint32_t partition,
                         int priority, std::string_view topic,
                         const format::CursorValue& c, MessageId from,
                         absl::Time now, leveldb::Iterator* it);
  // Time layout (whose lanes have no topic): sets the topic of each task
  // from its message's key, read with `it` in the queue `queue_id` of
  // `codec` ("" if the message is gone).
  absl::Status ReadTopics(const LayoutCodec& codec, uint32_t queue_id,
                          leveldb::Iterator* it);

  // The list.
  std::vector<PendingTask> Take() && { return std::move(out_); }

 private:
  const size_t max_;
  std::vector<PendingTask> out_;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_PENDING_LIST_H_
