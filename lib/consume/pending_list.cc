// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/pending_list.h"

#include <string>

#include "lib/consume/group_records.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

void PendingList::AddLane(const GroupLane& lane, MessageId from) {
  for (auto t = lane.tasks.lower_bound(from); t != lane.tasks.end() && !full();
       ++t) {
    const GroupTask& rec = t->second;
    if (rec.state == format::TaskState::kDone || rec.dying) continue;
    PendingTask p{.partition = lane.partition,
                  .priority = lane.priority,
                  .topic = lane.topic,
                  .id = t->first,
                  .attempt = rec.attempts,
                  .since = rec.since};
    if (rec.state == format::TaskState::kInFlight) {
      p.state = PendingTask::State::kInFlight;
      p.lease_deadline = rec.deadline;
      p.consumer = rec.consumer;
    } else {
      p.state = rec.attempts == 0 ? PendingTask::State::kDelayed
                                  : PendingTask::State::kRedelivery;
    }
    out_.push_back(std::move(p));
  }
}

absl::Status PendingList::AddWindow(std::string_view prefix, uint32_t partition,
                                    int priority, std::string_view topic,
                                    const format::CursorValue& c,
                                    MessageId from, absl::Time now,
                                    leveldb::Iterator* it) {
  if (full()) return absl::OkStatus();
  return GroupRecords::ForEachInWindow(prefix, c, from, it, [&](MessageId id) {
    // A first hand-out (a task with a record would be in memory).
    out_.push_back({.partition = partition,
                    .priority = priority,
                    .topic = std::string(topic),
                    .id = id,
                    .attempt = 1,
                    .state = PendingTask::State::kRedelivery,
                    .since = now});
    return !full();
  });
}

absl::Status PendingList::ReadTopics(const LayoutCodec& codec,
                                     uint32_t queue_id, leveldb::Iterator* it) {
  std::string seek;
  for (PendingTask& t : out_) {
    seek.clear();
    codec.AppendLanePrefix(&seek, queue_id, t.partition, t.priority, "");
    LayoutCodec::AppendMessageId(&seek, t.id);
    it->Seek(seek);
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading a task's message"));
    if (!it->Valid()) continue;
    const std::string_view key = View(it->key());
    if (key.starts_with(seek)) t.topic = std::string(key.substr(seek.size()));
  }
  return absl::OkStatus();
}

}  // namespace hq
