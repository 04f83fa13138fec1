// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A subscription's singles: walked one-message lanes delivered without a
// Lane of their own (subscription_impl.h).

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/consume/subscription_impl.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"

namespace hq {

absl::Status SubscriptionImpl::AdmitSingle(LaneSource::Taken* t, bool* done) {
  uint32_t partition;
  int priority;
  std::string_view topic;
  // Anything unusual takes the Lane path: a malformed lane (DataLoss
  // there), one out of scope, in memory, or with a checkpoint record.
  if (!LayoutCodec::ParseLanePrefix(t->prefix, true, &partition, &priority,
                                    &topic) ||
      partition >= queue_->options().partitions ||
      priority >= queue_->options().priorities || !InScope(partition, topic) ||
      lanes_.Find(t->prefix) != nullptr ||
      (!checkpoint_ceiling_.none() &&
       checkpoint_ceiling_.MayExist(CheckpointKey(t->prefix)))) {
    return absl::OkStatus();
  }
  if (t->kept.id < cutoff_) return absl::OkStatus();  // Expired: a Lane.
  bool floored;
  const MessageId start = Absent(t->prefix, partition, priority, &floored);
  if (t->kept.id < start) {
    // Nothing past its checkpoint: as a drained lane whose checkpoint is
    // as written, it lets the position go at once.
    source()->Release(t->hold);
    *done = true;
    return absl::OkStatus();
  }
  const std::string_view value = lanes_.KeptValue(t->kept);
  std::string_view key, payload;
  uint64_t not_before_ms;
  if (!format::DecodeMessageValue(value, &key, &payload, &not_before_ms)) {
    return MalformedMessage(t->kept.id);
  }
  Single& single = singles_.emplace_back();
  single.id = t->kept.id;
  single.at = values_.size();
  single.size = value.size();
  single.payload_size = payload.size();
  values_.append(value);
  single.topic_at = static_cast<size_t>(topic.data() - t->prefix.data());
  single.prefix = std::move(t->prefix);
  single.partition = partition;
  single.priority = priority;
  single.hold = std::move(t->hold);
  single.floored = floored;
  single.start = start;
  ++singles_of_[priority];
  ++buffered_;
  buffered_bytes_ += payload.size();
  *done = true;
  return absl::OkStatus();
}

absl::Status SubscriptionImpl::MalformedMessage(MessageId id) const {
  return absl::DataLossError(absl::StrCat(
      "queue '", queue_->name(), "': malformed message ", id.ToString()));
}

std::string_view SubscriptionImpl::ValueOf(const Single& single) const {
  const std::string& data =
      single.chunk != nullptr ? single.chunk->data : values_;
  return std::string_view(data).substr(single.at, single.size);
}

void SubscriptionImpl::DropValue(Single* single) {
  if (single->chunk == nullptr) return;  // In values_, sealed without it.
  --single->chunk->live;
  single->chunk = nullptr;
  while (!chunks_.empty() && chunks_.front().live == 0) chunks_.pop_front();
}

void SubscriptionImpl::SealValues() {
  // The pass's singles are at the back of singles_, the only ones without
  // a chunk.
  size_t n = 0;
  while (n < singles_.size() &&
         singles_[singles_.size() - 1 - n].chunk == nullptr) {
    ++n;
  }
  if (n > 0) {
    ValueChunk& chunk = chunks_.emplace_back();
    chunk.data = std::move(values_);
    chunk.live = n;
    for (size_t k = singles_.size() - n; k < singles_.size(); ++k) {
      singles_[k].chunk = &chunk;
    }
  }
  values_.clear();
}

absl::StatusOr<SubscriptionImpl::Lane*> SubscriptionImpl::LaneOf(
    Single* single, bool delivered) {
  Buffered msg;
  if (!delivered) {
    HQ_RETURN_IF_ERROR(Decode(single->id, ValueOf(*single), &msg));
    DropValue(single);
  }
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Lane> lane,
                      lanes_.Make(std::move(single->prefix)));
  lane->hold = std::move(single->hold);
  lane->written = single->start;
  lane->written_exists = single->floored;
  lane->at_end = true;  // The walk saw all it holds.
  lane->read = single->id.Next();
  if (delivered) {
    lane->delivered = true;
  } else {
    lane->buf.push_back(std::move(msg));
  }
  return lanes_.Insert(std::move(lane));
}

absl::Status SubscriptionImpl::Promote(int priority) {
  if (singles_of_[priority] == 0) return absl::OkStatus();
  singles_of_[priority] = 0;
  VectorFifo<Single> others;
  while (!singles_.empty()) {
    Single single = std::move(singles_.front());
    singles_.pop_front();
    if (single.priority != priority) {
      others.push_back(std::move(single));
      continue;
    }
    HQ_ASSIGN_OR_RETURN(Lane * lane, LaneOf(&single, false));
    lane->ready = true;
    ready_.push_back(lane);
  }
  singles_ = std::move(others);
  std::vector<Single> passed;
  for (Single& single : passed_singles_) {
    if (single.priority != priority) {
      passed.push_back(std::move(single));
      continue;
    }
    HQ_ASSIGN_OR_RETURN(Lane * lane, LaneOf(&single, true));
    Touch(lane);
  }
  passed_singles_.swap(passed);
  return absl::OkStatus();
}

size_t SubscriptionImpl::DeliverSingles(
    size_t budget, const std::vector<MessageListener*>& listeners,
    bool* checkpoint_due) {
  // Only this (running) slice changes singles_, so its front stays put
  // while the listeners run without the lock.
  size_t delivered = 0;
  const Single* single;
  {
    MutexLock l(&mu_);
    if (singles_.empty() || budget == 0) return 0;
    single = &singles_.front();
  }
  for (;;) {
    // Its chunk's data does not change while the chunk lives.
    MessageView view;
    view.id = single->id;
    view.partition = single->partition;
    view.priority = single->priority;
    view.topic = single->topic();
    uint64_t not_before_ms;
    if (single->chunk == nullptr ||
        !format::DecodeMessageValue(std::string_view(single->chunk->data)
                                        .substr(single->at, single->size),
                                    &view.key, &view.payload, &not_before_ms)) {
      // Checked as it was paged in, sealed as its pass ended: not reached.
      MutexLock l(&mu_);
      (void)Fail(absl::InternalError(
          absl::StrCat("subscription '", name_, "': a single's value of ",
                       single->id.ToString(), " is not in its chunk")));
      break;
    }
    view.not_before = format::NotBeforeTime(not_before_ms);
    size_t i = 0;
    for (; i < listeners.size(); ++i) {
      if (!listeners[i]->OnMessage(view).ok()) break;
    }
    MutexLock l(&mu_);
    Single taken = std::move(singles_.front());
    singles_.pop_front();
    if (i < listeners.size()) {
      // Refused: a Lane from now on, waiting for its retry.
      --singles_of_[taken.priority];
      absl::StatusOr<Lane*> lane = LaneOf(&taken, false);
      if (!lane.ok()) {
        (void)Fail(lane.status());
        break;
      }
      (*lane)->ready = true;
      ready_.push_back(*lane);
      Touch(*lane);
      Refused(*lane, i);
      break;
    }
    buffered_ -= 1;
    buffered_bytes_ -= taken.payload_size;
    DropValue(&taken);
    passed_singles_.push_back(std::move(taken));
    ++delivered;
    if (Delivered()) {
      *checkpoint_due = true;
      break;
    }
    // The next one, under the same lock.
    if (delivered == budget || singles_.empty()) break;
    single = &singles_.front();
  }
  return delivered;
}

}  // namespace hq
