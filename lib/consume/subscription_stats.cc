// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A subscription's Stats: its lag, lane by lane, and the lanes it lists.

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "lib/consume/consume_options.h"
#include "lib/consume/subscription_impl.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

// Stats counts the lag key by key up to this many keys.
constexpr uint64_t kLagCountLimit = 100000;
// Stats counts the lag of at most this many lanes waiting in the source.
constexpr size_t kPeekLanes = 1024;

}  // namespace

absl::Status SubscriptionImpl::CountLag(std::string_view lane_prefix,
                                        MessageId from, leveldb::Iterator* it,
                                        SubscriptionStats* st) const {
  CountHook();
  if (!st->lag_exact) return absl::OkStatus();
  const bool has_topic = queue_->codec().lane_has_topic();
  const size_t n = lane_prefix.size();
  std::string seek(lane_prefix);
  LayoutCodec::AppendMessageId(&seek, from);
  MessageId id;
  for (it->Seek(seek); it->Valid(); it->Next()) {
    const std::string_view key = View(it->key());
    if (!LayoutCodec::LaneMessage(key, lane_prefix, &id)) break;
    if (!has_topic && !topic_set_.empty() &&
        !topic_set_.contains(Av(key.substr(n + LayoutCodec::kMessageIdSize)))) {
      continue;
    }
    if (st->lag >= kLagCountLimit) {
      st->lag_exact = false;
      break;
    }
    ++st->lag;
  }
  return FromLevelDb(it->status(), "counting the lag");
}

absl::Status SubscriptionImpl::PlanWaiting(MessageId cutoff,
                                           leveldb::Iterator* it,
                                           StatsPlan* plan) {
  // Lanes waiting in the source, peeked (not taken: Stats changes nothing).
  std::vector<std::string> waiting;
  bool all;
  HQ_RETURN_IF_ERROR(source()->Peek(kPeekLanes, it, &waiting, &all));
  if (!all) plan->exact = false;
  absl::flat_hash_set<std::string> seen;
  // Singles in memory, by prefix: read to their ends (Stats counted their
  // waiting messages). Mapped only when a peeked lane may be one of them.
  absl::flat_hash_map<std::string_view, MessageId> singles;
  if (!waiting.empty()) {
    for (size_t i = 0; i < singles_.size(); ++i) {
      singles.emplace(singles_[i].prefix, singles_[i].id.Next());
    }
    for (const Single& single : passed_singles_) {
      singles.emplace(single.prefix, single.id.Next());
    }
  }
  for (std::string& prefix : waiting) {
    if (!seen.insert(prefix).second) continue;
    if (auto in = singles.find(prefix); in != singles.end()) {
      plan->count.push_back({std::move(prefix), std::max(in->second, cutoff)});
      continue;
    }
    if (const Lane* in = lanes_.Find(prefix)) {
      // In memory, read to its end before this hint came: Stats counted
      // only its buffer.
      const Lane& lane = *in;
      if (!lane.active && !lane.reread && !lane.rehint) {
        plan->count.push_back({std::move(prefix), std::max(lane.read, cutoff)});
      }
      continue;
    }
    LaneCheckpoint c;
    std::string_view topic;
    if (!LayoutCodec::ParseLanePrefix(prefix, true, &c.partition, &c.priority,
                                      &topic)) {
      return absl::DataLossError(absl::StrCat(
          "subscription '", name_, "': the lane index names a malformed lane"));
    }
    if (!InScope(c.partition, topic)) continue;
    c.topic.assign(topic);
    // Its checkpoint if it has no record (read after the lock).
    bool floored;
    c.next = Absent(prefix, c.partition, c.priority, &floored);
    plan->stored.push_back({std::move(prefix), std::move(c)});
  }
  return absl::OkStatus();
}

absl::Status SubscriptionImpl::CountStored(const StatsPlan& plan,
                                           MessageId cutoff,
                                           const leveldb::ReadOptions& ro,
                                           leveldb::Iterator* it,
                                           SubscriptionStats* st) const {
  for (const auto& [prefix, lane] : plan.stored) {
    LaneCheckpoint c = lane;
    std::string value;
    leveldb::Status s =
        CheckedGet(db_->leveldb(), ro, CheckpointKey(prefix), &value);
    if (s.ok()) {
      if (!format::DecodeCheckpoint(value, &c.next)) {
        return absl::DataLossError(absl::StrCat(
            "subscription '", name_, "': malformed checkpoint record"));
      }
    } else if (!s.IsNotFound()) {
      return FromLevelDb(s, "reading a subscription checkpoint");
    }
    HQ_RETURN_IF_ERROR(CountLag(prefix, std::max(c.next, cutoff), it, st));
  }
  return absl::OkStatus();
}

absl::Status SubscriptionImpl::AddStoredLanes(
    const absl::flat_hash_set<std::string>& in_memory,
    const leveldb::ReadOptions& ro, SubscriptionStats* st) const {
  const bool has_topic = queue_->codec().lane_has_topic();
  // Lanes not in memory are idle: their checkpoints are as written.
  std::unique_ptr<leveldb::Iterator> cp(NewCheckedIterator(db_->leveldb(), ro));
  const std::string cp_prefix = format::GroupRecordPrefix(
      format::kCheckpointTag, queue_->id(), record_.id);
  std::string prefix;
  for (cp->Seek(cp_prefix);
       cp->Valid() && View(cp->key()).starts_with(cp_prefix); cp->Next()) {
    prefix = format::MessagePrefix(queue_->id());
    prefix.append(View(cp->key()).substr(cp_prefix.size()));
    if (in_memory.contains(prefix)) continue;
    LaneCheckpoint c;
    std::string_view topic;
    if (!LayoutCodec::ParseLanePrefix(prefix, has_topic, &c.partition,
                                      &c.priority, &topic) ||
        !format::DecodeCheckpoint(View(cp->value()), &c.next)) {
      return absl::DataLossError(absl::StrCat(
          "subscription '", name_, "': malformed checkpoint record"));
    }
    c.topic.assign(topic);
    c.written = c.next;
    st->lanes.push_back(std::move(c));
  }
  return FromLevelDb(cp->status(), "reading checkpoints");
}

absl::StatusOr<SubscriptionStats> SubscriptionImpl::Stats(bool with_lanes) {
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  SubscriptionStats st;
  StatsPlan plan;
  absl::flat_hash_set<std::string> in_memory;
  MessageId cutoff;
  const leveldb::Snapshot* snapshot = nullptr;
  {
    MutexLock l(&mu_);
    if (queue_->dropped()) return queue_->DroppedError();
    HQ_RETURN_IF_ERROR(broken_);
    HQ_RETURN_IF_ERROR(Fail(TakeNotes()));
    st.delivered = delivered_;
    st.failed_attempts = failed_;
    st.buffered = buffered_;
    st.buffered_bytes = buffered_bytes_;
    st.listeners = static_cast<uint32_t>(listeners_.size());
    st.resident_lanes =
        lanes_.size() + singles_.size() + passed_singles_.size();
    st.active_lanes = lanes_.active();
    cutoff = queue_->TtlCutoff(db_->clock()->Now());
    st.lag += singles_.size();
    if (with_lanes) {
      auto add = [&](const Single& single, MessageId next) {
        LaneCheckpoint c;
        c.partition = single.partition;
        c.priority = single.priority;
        c.topic = single.topic();
        c.next = next;
        c.written = single.start;
        st.lanes.push_back(std::move(c));
      };
      for (size_t i = 0; i < singles_.size(); ++i) {
        add(singles_[i], singles_[i].id);
      }
      for (const Single& single : passed_singles_) {
        add(single, single.id.Next());
      }
    }
    for (const auto& [prefix, lane] : lanes_) {
      if (with_lanes) {
        if (!paged()) in_memory.emplace(prefix);
        LaneCheckpoint c;
        c.partition = lane->partition;
        c.priority = lane->priority;
        c.topic = lane->topic;
        c.next = lane->next();
        c.written = lane->written_exists ? lane->written
                                         : record_.StartOf(lane->partition);
        st.lanes.push_back(std::move(c));
      }
      st.lag += lane->buf.size();
      // Read to its end unless it is to be read again.
      if (lane->active || lane->reread || lane->rehint) {
        plan.count.push_back(
            {std::string(prefix), std::max(lane->read, cutoff)});
      }
    }
    if (paged()) {
      std::unique_ptr<leveldb::Iterator> it(
          NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
      HQ_RETURN_IF_ERROR(PlanWaiting(cutoff, it.get(), &plan));
    }
    // The snapshot holds the checkpoints and messages of this moment.
    snapshot = db_->leveldb()->GetSnapshot();
  }
  // Without the lock: deliveries go on while Stats reads.
  absl::Cleanup release = [&] { db_->leveldb()->ReleaseSnapshot(snapshot); };
  leveldb::ReadOptions ro = CheckedReadOptions();
  ro.snapshot = snapshot;
  // A time layout queue's idle lanes (partitions x priorities at most);
  // a topic layout queue's lanes on disk are not listed.
  if (with_lanes && !paged()) {
    HQ_RETURN_IF_ERROR(AddStoredLanes(in_memory, ro, &st));
  }
  std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(db_->leveldb(), ro));
  for (const auto& [prefix, from] : plan.count) {
    HQ_RETURN_IF_ERROR(CountLag(prefix, from, it.get(), &st));
  }
  HQ_RETURN_IF_ERROR(CountStored(plan, cutoff, ro, it.get(), &st));
  if (!plan.exact) st.lag_exact = false;
  // Lane order: partition, priority from the highest, topic.
  std::sort(st.lanes.begin(), st.lanes.end(),
            [](const LaneCheckpoint& a, const LaneCheckpoint& b) {
              if (a.partition != b.partition) return a.partition < b.partition;
              if (a.priority != b.priority) return a.priority > b.priority;
              return a.topic < b.topic;
            });
  return st;
}

}  // namespace hq
