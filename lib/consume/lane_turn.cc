// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/lane_turn.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

LaneTurn::LaneTurn(GroupImpl* group, GroupLane* lane, size_t want,
                   const std::vector<std::string>& topics, GroupClaimPass* p)
    : group_(group),
      lane_(lane),
      want_(want),
      topics_(topics),
      p_(p),
      has_topic_(group->queue_->codec().lane_has_topic()) {}

absl::StatusOr<bool> LaneTurn::Take(GroupImpl* group, GroupLane* lane,
                                    size_t want,
                                    const std::vector<std::string>& topics,
                                    GroupClaimPass* p) {
  LaneTurn turn(group, lane, want, topics, p);
  turn.group_->mu_.AssertHeld();  // As `group`'s: for the analysis.
  absl::StatusOr<bool> drained = turn.Run();
  lane->at_end = drained.ok() && *drained;
  return drained;
}

absl::Status LaneTurn::DecodeValue(const QueueImpl& queue,
                                   std::string_view value, MessageId id,
                                   Task* t) {
  std::string_view key, payload;
  uint64_t not_before_ms;
  if (!format::DecodeMessageValue(value, &key, &payload, &not_before_ms)) {
    return absl::DataLossError(absl::StrCat(
        "queue '", queue.name(), "': malformed message ", id.ToString()));
  }
  t->key.assign(key);
  t->payload.assign(payload);
  t->not_before = format::NotBeforeTime(not_before_ms);
  return absl::OkStatus();
}

absl::StatusOr<bool> LaneTurn::ReadMessage(const QueueImpl& queue,
                                           const GroupLane& lane, MessageId id,
                                           leveldb::Iterator* it, Task* t) {
  std::string seek = lane.prefix;
  LayoutCodec::AppendMessageId(&seek, id);
  it->Seek(seek);
  if (!it->Valid()) {
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading a task"));
    return false;
  }
  const std::string_view key = View(it->key());
  if (!key.starts_with(seek)) return false;  // Gone (TTL sweep, drop).
  HQ_RETURN_IF_ERROR(DecodeValue(queue, View(it->value()), id, t));
  t->topic.assign(queue.codec().lane_has_topic() ? std::string_view(lane.topic)
                                                 : key.substr(seek.size()));
  return true;
}

absl::StatusOr<bool> LaneTurn::Offer(MessageId id, std::string_view topic,
                                     std::string_view value) {
  GroupLane* lane = lane_;
  if (handed_ == want_) return false;
  if (lane->tasks.contains(id) || !group_->records_.InScope(topic)) {
    if (contiguous_) lane->scan = id.Next();
    return true;
  }
  Task t;
  HQ_RETURN_IF_ERROR(DecodeValue(*group_->queue_, value, id, &t));
  if (t.not_before > p_->now) {
    // Delayed: it waits with the redeliveries until its time (a record,
    // attempt 0, so that a restart keeps the time).
    GroupTask& rec = lane->tasks[id];
    rec.attempts = 0;
    group_->waiting_.Add(lane, id, &rec, t.not_before);
    group_->PutTask(lane, id, &rec, &p_->batch);
    if (contiguous_) lane->scan = id.Next();
    return !group_->record_.ordered;  // It holds back an ordered lane.
  }
  if (!topics_.empty() &&
      std::find(topics_.begin(), topics_.end(), topic) == topics_.end()) {
    contiguous_ = false;  // Left for a claim without this filter.
    return true;
  }
  if (group_->pacer_.on()) {
    HQ_ASSIGN_OR_RETURN(const bool paced_out, group_->PacedOut(topic, p_->now));
    // An ordered lane waits for it; others take the messages after it.
    if (paced_out && (has_topic_ || group_->record_.ordered)) return false;
    if (paced_out) {
      // Bounded: a lane of topics that are all held back is not read to
      // its end by every claim.
      if (++paced_skips_ == kMaxPacedSkips) return false;
      contiguous_ = false;
      return true;
    }
  }
  t.topic.assign(topic);
  GroupTask& rec = lane->tasks[id];
  group_->HandOut(lane, id, &rec, p_->now, p_->lease,
                  /*covered=*/contiguous_, &t, &p_->batch);
  p_->out.push_back(std::move(t));
  ++handed_;
  if (contiguous_) lane->scan = id.Next();
  return true;
}

absl::StatusOr<bool> LaneTurn::Run() {
  GroupLane* lane = lane_;
  if (lane->scan < p_->cutoff) lane->scan = p_->cutoff;  // Expired: never out.
  // A topic layout lane is one topic: held back whole.
  if (has_topic_ && group_->pacer_.on()) {
    HQ_ASSIGN_OR_RETURN(const bool paced_out,
                        group_->PacedOut(lane->topic, p_->now));
    if (paced_out) return false;
  }
  if (has_topic_) {
    // What an earlier turn read ahead: the lane's messages from its scan
    // cursor on (a topic layout lane's scan cursor passes every message
    // it examines).
    ReadAhead& ahead = lane->ahead;
    ahead.DropBelow(lane->scan);
    // A sweep may have deleted some since (a clock that stepped back):
    // read them again.
    if (!ahead.empty() && ahead.front_id() < group_->queue_->swept_cutoff()) {
      ahead.Clear();
    }
    while (!ahead.empty()) {
      HQ_ASSIGN_OR_RETURN(const bool go_on, Offer(ahead.front_id(), lane->topic,
                                                  ahead.front_value()));
      ahead.DropBelow(lane->scan);
      if (!go_on) return false;
    }
    if (group_->lanes_.Walked(*lane)) return OfferWalked();
  }
  std::string seek = lane->prefix;
  LayoutCodec::AppendMessageId(&seek, lane->scan);
  const size_t n = lane->prefix.size();
  leveldb::Iterator* it = p_->it;
  MessageId id;
  ++group_->test_lane_seeks_;
  for (it->Seek(seek); it->Valid(); it->Next()) {
    const std::string_view key = View(it->key());
    // Past the lane's last message: nothing left to read.
    if (!LayoutCodec::LaneMessage(key, lane->prefix, &id)) return contiguous_;
    const std::string_view topic =
        has_topic_ ? std::string_view(lane->topic)
                   : key.substr(n + LayoutCodec::kMessageIdSize);
    HQ_ASSIGN_OR_RETURN(const bool go_on, Offer(id, topic, View(it->value())));
    if (go_on) continue;
    if (has_topic_ && handed_ == want_ && !group_->record_.ordered) {
      // The lane's next turn starts here (an ordered group's lane leaves
      // memory when its task completes: what it read ahead would be lost).
      HQ_RETURN_IF_ERROR(
          lane->ahead.Fill(lane->prefix, it, &group_->ahead_budget_));
    }
    return false;
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading a lane"));
  return contiguous_;
}

absl::StatusOr<bool> LaneTurn::OfferWalked() {
  // The pass's walk saw, with the pass's iterator, the lane hold one
  // message: all a read with it would find from the scan cursor on.
  std::string_view value;
  // Taken: a later turn of this pass reads.
  const LaneSource::Kept* m = group_->lanes_.TakeWalked(lane_, &value);
  if (m->id < lane_->scan) return contiguous_;
  HQ_ASSIGN_OR_RETURN(const bool go_on, Offer(m->id, lane_->topic, value));
  return go_on && contiguous_;
}

}  // namespace hq
