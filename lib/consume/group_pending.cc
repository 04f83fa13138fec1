// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// ConsumerGroup::ListPending: the group's tasks that are not done, one by
// one (Redis's XPENDING), from the tasks the group holds in memory and, for
// a paged group, the cursor windows of lanes a restart left on disk.

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/consume/group_impl.h"
#include "lib/consume/pending_list.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

absl::StatusOr<std::vector<PendingTask>> GroupImpl::ListPending(
    size_t max, const PendingTask* after) {
  if (max < 1 || max > 10000) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ListPending: max is %d; it must be in 1..10000", max));
  }
  const QueueOptions& qo = queue_->options();
  if (after != nullptr &&
      (after->partition >= qo.partitions || after->priority < 0 ||
       after->priority >= qo.priorities)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ListPending: after names partition %d, priority %d; the queue has "
        "partitions 0..%d and priorities 0..%d",
        after->partition, after->priority, qo.partitions - 1,
        qo.priorities - 1));
  }
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  HQ_RETURN_IF_ERROR(FlushDying());  // Dying tasks are dead letters.
  HQ_RETURN_IF_ERROR(ForgetDeadIfQueueGone());
  std::string start;  // The lane of `after`.
  if (after != nullptr) {
    queue_->codec().AppendLanePrefix(&start, queue_->id(), after->partition,
                                     after->priority, after->topic);
  }
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  HQ_ASSIGN_OR_RETURN(const auto lanes, PendingLanes(start, it.get()));
  const absl::Time now = db_->clock()->Now();
  const MessageId cutoff = queue_->TtlCutoff(now);
  PendingList list(max);
  for (const auto& [prefix, lane] : lanes) {
    if (list.full()) break;
    const MessageId from = after != nullptr && prefix == start
                               ? after->id.Next()
                               : MessageId::Min();
    if (lane != nullptr) {
      list.AddLane(*lane, from);
      continue;
    }
    uint32_t partition;
    int priority;
    std::string_view topic;
    LayoutCodec::ParseLanePrefix(prefix, true, &partition, &priority, &topic);
    // No cursor record: nothing was handed out (the window is empty).
    HQ_ASSIGN_OR_RETURN(
        const format::CursorValue c,
        records_.ReadCursor(prefix,
                            cursors_.Absent(prefix, partition, priority),
                            CheckedReadOptions()));
    HQ_RETURN_IF_ERROR(list.AddWindow(prefix, partition, priority, topic, c,
                                      std::max(from, cutoff), now, it.get()));
  }
  if (!queue_->codec().lane_has_topic()) {
    HQ_RETURN_IF_ERROR(
        list.ReadTopics(queue_->codec(), queue_->id(), it.get()));
  }
  return std::move(list).Take();
}

absl::StatusOr<std::map<std::string, const GroupImpl::Lane*>>
GroupImpl::PendingLanes(const std::string& start, leveldb::Iterator* it) {
  std::map<std::string, const Lane*> lanes;
  for (const auto& [prefix, lane] : lanes_) {
    if (!lane->tasks.empty() && prefix >= start) {
      lanes.emplace(prefix, lane.get());
    }
  }
  if (!paged()) return lanes;
  lanes_.TakePagedNotes();
  std::vector<std::string> waiting;
  bool all = true;
  HQ_RETURN_IF_ERROR(source()->Peek(kPeekLanes, it, &waiting, &all));
  HQ_RETURN_IF_ERROR(parked_.Peek(kPeekLanes, it, &waiting, &all));
  for (const std::string& prefix : waiting) {
    uint32_t partition;
    int priority;
    std::string_view topic;
    if (prefix < start || lanes_.Find(prefix) != nullptr ||
        !LayoutCodec::ParseLanePrefix(prefix, true, &partition, &priority,
                                      &topic) ||
        !records_.InScope(topic)) {
      continue;
    }
    lanes.emplace(prefix, nullptr);
  }
  return lanes;
}

}  // namespace hq
