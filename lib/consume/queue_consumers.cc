// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/queue_consumers.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hq/status.h"
#include "lib/consume/consume_options.h"
#include "lib/consume/group_impl.h"
#include "lib/consume/scanner_impl.h"
#include "lib/consume/subscription_impl.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

std::unique_ptr<QueueConsumers> NewQueueConsumers(DbImpl* db,
                                                  QueueImpl* queue) {
  return std::make_unique<QueueConsumersImpl>(db, queue);
}

QueueConsumersImpl::QueueConsumersImpl(DbImpl* db, QueueImpl* queue)
    : db_(db), queue_(queue) {}

QueueConsumersImpl::~QueueConsumersImpl() = default;

void QueueConsumersImpl::WakeWaiters() {
  MutexLock l(&groups_mu_);
  for (auto& [name, g] : groups_) g->WakeWaiters();
}

namespace {

// The error of a consumer delete that removed the consumer durably but
// failed while deleting its records (the next Open finishes the delete):
// `s`'s code and message, with ErrorDetail::kDropDurable.
absl::Status RecordsNotDeleted(std::string_view consumer,
                               std::string_view queue, const absl::Status& s) {
  return WithErrorDetail(
      absl::Status(s.code(),
                   absl::StrCat(Av(consumer), " of queue '", Av(queue),
                                "' is deleted, but deleting its records "
                                "failed (the next Open finishes it): ",
                                s.message())),
      ErrorDetail::kDropDurable);
}

template <typename T>
std::vector<T> SortedUnique(std::vector<T> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// The first id whose ms is not before `t` (rounded up).
MessageId FirstIdAt(absl::Time t) {
  int64_t ms = absl::ToUnixMillis(t);
  if (absl::FromUnixMillis(ms) < t) ++ms;
  return MessageId{ms < 0 ? 0 : std::min<uint64_t>(ms, MessageId::kMaxMs), 0};
}

}  // namespace

absl::StatusOr<ConsumerGroup*> QueueConsumersImpl::Group(
    std::string_view name, const GroupOptions& options) {
  HQ_RETURN_IF_ERROR(format::ValidateGroupName(name));
  HQ_RETURN_IF_ERROR(ValidateGroupOptions(options));
  const std::string dead_name =
      absl::StrCat(queue_->name(), ".dead.", Av(name));
  if (absl::Status s = format::ValidateQueueName(dead_name); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "group '", Av(name), "' of queue '", queue_->name(),
        "': its dead-letter queue name is invalid: ", s.message()));
  }
  if (queue_->dropped()) return queue_->DroppedError();
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  std::vector<std::string> topics = options.topics;
  std::sort(topics.begin(), topics.end());
  topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
  auto check_fixed = [&](const format::GroupRecord& stored) {
    if (stored.topics != topics) {
      return absl::InvalidArgumentError(
          absl::StrCat("group '", Av(name), "' of queue '", queue_->name(),
                       "' was created with ", stored.topics.size(),
                       " topic(s) in its filter; the filter is fixed"));
    }
    if (stored.ordered != options.ordered) {
      return absl::InvalidArgumentError(absl::StrCat(
          "group '", Av(name), "' of queue '", queue_->name(), "' was created ",
          stored.ordered ? "ordered" : "unordered",
          "; GroupOptions::ordered is fixed"));
    }
    return absl::OkStatus();
  };
  MutexLock l(&groups_mu_);
  if (deleting_groups_.contains(Av(name))) {
    return absl::NotFoundError(absl::StrCat("consumer group '", Av(name),
                                            "' of queue '", queue_->name(),
                                            "' is being deleted"));
  }
  if (auto it = groups_.find(Av(name)); it != groups_.end()) {
    HQ_RETURN_IF_ERROR(check_fixed(it->second->record()));
    it->second->SetOptions(options);
    return it->second.get();
  }
  format::GroupRecord record;
  std::string value;
  const std::string key = format::GroupKey(queue_->id(), name);
  leveldb::Status s =
      CheckedGet(db_->leveldb(), CheckedReadOptions(), key, &value);
  if (s.ok()) {
    HQ_RETURN_IF_ERROR(format::DecodeGroupRecord(value, &record));
    HQ_RETURN_IF_ERROR(check_fixed(record));
  } else if (s.IsNotFound()) {
    absl::StatusOr<Queue*> taken = db_->OpenQueue(dead_name);
    if (taken.ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("cannot create group '", Av(name), "' of queue '",
                       queue_->name(), "': its dead-letter queue name '",
                       dead_name, "' is taken by another queue"));
    }
    if (!absl::IsNotFound(taken.status())) return taken.status();
    record.topics = topics;
    record.ordered = options.ordered;
    HQ_RETURN_IF_ERROR(SetGroupStart(options, &record));
    HQ_RETURN_IF_ERROR(db_->CreateGroupRecord(queue_, key, &record));
  } else {
    return FromLevelDb(s, "reading a consumer group record");
  }
  auto g = std::make_unique<GroupImpl>(db_, queue_, std::string(name), record,
                                       options);
  // Listen before loading: a lane written during the load is noted.
  queue_->AddListener(g.get());
  if (absl::Status ls = g->Load(); !ls.ok()) {
    queue_->RemoveListener(g.get());
    return ls;
  }
  GroupImpl* raw = g.get();
  groups_.emplace(std::string(name), std::move(g));
  db_->PublishStatusSoon();
  return raw;
}

absl::Status QueueConsumersImpl::SetGroupStart(const GroupOptions& options,
                                               format::GroupRecord* record) {
  record->start = static_cast<uint8_t>(options.start);
  switch (options.start) {
    case GroupOptions::Start::kEarliest:
      record->start_ids.clear();
      break;
    case GroupOptions::Start::kLatest: {
      HQ_ASSIGN_OR_RETURN(record->start_ids, db_->NextIds(queue_));
      break;
    }
    case GroupOptions::Start::kId:
      record->start_ids = {options.start_id};
      break;
    case GroupOptions::Start::kTime:
      record->start_ids = {FirstIdAt(options.start_time)};
      break;
  }
  return absl::OkStatus();
}

absl::StatusOr<Subscription*> QueueConsumersImpl::Subscribe(
    const SubscribeOptions& options, MessageListener* listener) {
  auto invalid = [&](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("subscription '", options.name, "' of queue '",
                     queue_->name(), "': ", Av(why)));
  };
  HQ_RETURN_IF_ERROR(ValidateSubscribeOptions(options));
  HQ_RETURN_IF_ERROR(ValidatePartitionList("SubscribeOptions::partitions",
                                           options.partitions,
                                           queue_->options().partitions));
  if (listener == nullptr) return invalid("the listener is null");
  if (queue_->dropped()) return queue_->DroppedError();
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  format::SubRecord want;
  want.partitions = SortedUnique(options.partitions);
  want.topics = SortedUnique(options.topics);
  auto check_fixed = [&](const format::SubRecord& stored) {
    if (stored.partitions != want.partitions || stored.topics != want.topics) {
      return invalid(
          "it was created with other partitions or topics; they are fixed");
    }
    return absl::OkStatus();
  };
  MutexLock l(&subs_mu_);
  if (unsubscribing_.contains(options.name)) {
    return absl::FailedPreconditionError(
        absl::StrCat("subscription '", options.name, "' of queue '",
                     queue_->name(), "' is being unsubscribed"));
  }
  if (auto it = subs_.find(options.name); it != subs_.end()) {
    HQ_RETURN_IF_ERROR(check_fixed(it->second->record()));
    HQ_RETURN_IF_ERROR(it->second->AddListener(listener, options));
    return it->second.get();
  }
  format::SubRecord record;
  std::string value;
  const std::string key = format::SubKey(queue_->id(), options.name);
  leveldb::Status s =
      CheckedGet(db_->leveldb(), CheckedReadOptions(), key, &value);
  if (s.ok()) {
    HQ_RETURN_IF_ERROR(format::DecodeSubRecord(value, &record));
    if (!record.start_ids.empty() &&
        record.start_ids.size() != queue_->options().partitions) {
      return absl::DataLossError(absl::StrCat(
          "subscription '", options.name, "' of queue '", queue_->name(),
          "': its record has ", record.start_ids.size(), " start ids for ",
          queue_->options().partitions, " partitions"));
    }
    HQ_RETURN_IF_ERROR(check_fixed(record));
  } else if (s.IsNotFound()) {
    HQ_ASSIGN_OR_RETURN(record, CreateSubRecord(options, want, key));
  } else {
    return FromLevelDb(s, "reading a subscription record");
  }
  auto sub = std::make_unique<SubscriptionImpl>(db_, queue_, options.name,
                                                record, options, listener);
  queue_->AddListener(sub.get());  // Before the load: no write goes unnoticed.
  if (absl::Status ls = sub->Load(); !ls.ok()) {
    queue_->RemoveListener(sub.get());
    (void)sub->Stop(/*checkpoint=*/false);
    return ls;
  }
  SubscriptionImpl* raw = sub.get();
  subs_.emplace(options.name, std::move(sub));
  raw->Start();
  db_->PublishStatusSoon();
  return raw;
}

absl::StatusOr<format::SubRecord> QueueConsumersImpl::CreateSubRecord(
    const SubscribeOptions& options, format::SubRecord record,
    const std::string& key) {
  std::vector<std::pair<std::string, MessageId>> ends;
  switch (options.start) {
    case SubscribeOptions::Start::kEarliest:
      record.start = MessageId::Min();
      break;
    case SubscribeOptions::Start::kId:
      record.start = options.start_id;
      break;
    case SubscribeOptions::Start::kTime:
      record.start = FirstIdAt(options.start_time);
      break;
    case SubscribeOptions::Start::kLatest:
      record.start = MessageId::Min();
      if (queue_->codec().lane_has_topic()) {
        // Each partition's next id: nothing per lane, whatever the topics.
        HQ_ASSIGN_OR_RETURN(record.start_ids, db_->NextIds(queue_));
      } else {
        // A checkpoint at the end of each of the (partitions x priorities)
        // lanes; `start` for lanes that appear later.
        HQ_ASSIGN_OR_RETURN(ends, queue_->LaneEnds(record));
      }
      break;
  }
  HQ_RETURN_IF_ERROR(
      db_->CreateWithId(queue_,
                        [&](uint32_t id, leveldb::WriteBatch* b) {
                          record.id = id;
                          b->Put(key, format::EncodeSubRecord(record));
                          for (const auto& [lane_prefix, end] : ends) {
                            std::string k = format::GroupRecordPrefix(
                                format::kCheckpointTag, queue_->id(), id);
                            format::AppendLaneRest(&k, lane_prefix);
                            b->Put(k, format::EncodeCheckpoint(end));
                          }
                        })
          .status());
  return record;
}

absl::Status QueueConsumersImpl::Unsubscribe(std::string_view name) {
  HQ_RETURN_IF_ERROR(format::ValidateGroupName(name));
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  std::unique_ptr<SubscriptionImpl> sub;
  {
    MutexLock l(&subs_mu_);
    if (unsubscribing_.contains(Av(name))) {
      return absl::FailedPreconditionError(absl::StrCat(
          "subscription '", Av(name), "' of queue '", queue_->name(),
          "' is being unsubscribed by another call"));
    }
    if (auto it = subs_.find(Av(name)); it != subs_.end()) {
      if (DeliveryPool::InJob(it->second.get())) {
        return absl::FailedPreconditionError(
            absl::StrCat("Unsubscribe('", Av(name),
                         "') called from a listener of that subscription"));
      }
      sub = std::move(it->second);
      subs_.erase(it);
    }
    unsubscribing_.emplace(name);
  }
  absl::Status s;
  if (sub != nullptr) {
    queue_->RemoveListener(sub.get());
    (void)sub->Stop(/*checkpoint=*/false);
    MutexLock l(&status_mu_);  // Not while CollectLiveStatus reads it.
    sub.reset();
  }
  // Delete its records: the subscription record, its lane source position
  // and its checkpoints.
  const std::string key = format::SubKey(queue_->id(), name);
  std::string value;
  format::SubRecord record;
  leveldb::Status ls =
      CheckedGet(db_->leveldb(), CheckedReadOptions(), key, &value);
  if (ls.IsNotFound()) {
    s = absl::NotFoundError(absl::StrCat(
        "queue '", queue_->name(), "' has no subscription '", Av(name), "'"));
  } else if (!ls.ok()) {
    s = FromLevelDb(ls, "reading a subscription record");
  } else {
    s = format::DecodeSubRecord(value, &record);
  }
  if (s.ok()) {
    // A tombstone in place of its record, then its checkpoints and lane
    // source position in batches (doc/format.md, "Consumer deletes"); if
    // it was the queue's last consumer, writes stop adding hints.
    s = db_->BeginConsumerDelete(queue_, key, record.id, {});
    if (s.ok()) {
      s = db_->FinishConsumerDelete(queue_->id(), record.id, {});
      if (!s.ok()) {
        s = RecordsNotDeleted(absl::StrCat("subscription '", Av(name), "'"),
                              queue_->name(), s);
      }
    }
  }
  MutexLock l(&subs_mu_);
  unsubscribing_.erase(Av(name));
  return s;
}

void QueueConsumersImpl::StopSubscriptions() {
  std::vector<SubscriptionImpl*> subs;
  {
    MutexLock l(&subs_mu_);
    for (auto& [name, sub] : subs_) subs.push_back(sub.get());
  }
  // Stopped and checkpointed, but kept (Subscription pointers stay valid
  // until the Db is destroyed).
  for (SubscriptionImpl* sub : subs) (void)sub->Stop(/*checkpoint=*/true);
}

absl::StatusOr<std::unique_ptr<Scanner>> QueueConsumersImpl::NewScanner(
    const ScanOptions& options) {
  if (queue_->dropped()) return queue_->DroppedError();
  const QueueOptions& o = queue_->options();
  absl::Status s = ValidatePartitionList("ScanOptions::partitions",
                                         options.partitions, o.partitions);
  if (s.ok()) s = ValidateTopicList("ScanOptions::topics", options.topics);
  if (!s.ok()) {
    return absl::Status(
        s.code(), absl::StrCat("queue '", queue_->name(), "': ", s.message()));
  }
  for (const MessageId& id : {options.from, options.to}) {
    if (id.ms > MessageId::kMaxMs) {
      return absl::InvalidArgumentError(
          absl::StrCat("queue '", queue_->name(), "': ScanOptions id ",
                       id.ToString(), " has ms above MessageId::kMaxMs"));
    }
  }
  if (options.to < options.from) {
    return absl::InvalidArgumentError(
        absl::StrCat("queue '", queue_->name(), "': ScanOptions::from ",
                     options.from.ToString(), " is after ScanOptions::to ",
                     options.to.ToString()));
  }
  if (options.order != ScanOptions::Order::kMerged &&
      options.order != ScanOptions::Order::kLane) {
    return absl::InvalidArgumentError("ScanOptions::order is not known");
  }
  DbImpl::OpScope op(db_);
  if (!op.status().ok()) return op.status();
  // Expired messages are invisible at once: start at the TTL cutoff.
  ScanOptions effective = options;
  const MessageId cutoff = queue_->TtlCutoff(db_->clock()->Now());
  if (effective.from < cutoff) effective.from = std::min(cutoff, effective.to);
  return NewScannerImpl(db_, queue_, effective);
}

absl::Status QueueConsumersImpl::DeleteGroup(
    std::string_view name, const DeleteGroupOptions& options) {
  HQ_RETURN_IF_ERROR(format::ValidateGroupName(name));
  if (queue_->dropped()) return queue_->DroppedError();
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  const std::string dead_name =
      absl::StrCat(queue_->name(), ".dead.", Av(name));
  const std::string key = format::GroupKey(queue_->id(), name);
  format::GroupRecord record;
  format::DeleteValue tombstone;
  {
    // Held until the tombstone is written: no Group(name) loads or creates
    // the group meanwhile.
    MutexLock l(&groups_mu_);
    if (deleting_groups_.contains(Av(name))) {
      return absl::NotFoundError(absl::StrCat("consumer group '", Av(name),
                                              "' of queue '", queue_->name(),
                                              "' is being deleted"));
    }
    HQ_ASSIGN_OR_RETURN(const std::string value,
                        queue_->ReadNamedRecord(key, "consumer group", name));
    HQ_RETURN_IF_ERROR(format::DecodeGroupRecord(value, &record));
    if (!options.keep_dead_letters) {
      absl::StatusOr<Queue*> dead = db_->OpenQueue(dead_name);
      if (dead.ok()) {
        tombstone.dead_queue_id = static_cast<QueueImpl*>(*dead)->id();
        tombstone.dead_queue = dead_name;
      } else if (!absl::IsNotFound(dead.status())) {
        return dead.status();
      }
    }
    auto write = [&] {
      return db_->BeginConsumerDelete(queue_, key, record.id, tombstone);
    };
    auto it = groups_.find(Av(name));
    if (it != groups_.end()) {
      // Under the group's lock: no call of it runs while the tombstone is
      // written, and none hands out a task after.
      HQ_RETURN_IF_ERROR(it->second->BeginDelete(options.force, write));
      std::unique_ptr<GroupImpl> g = std::move(it->second);
      groups_.erase(it);
      queue_->RemoveListener(g.get());
      g->WakeWaiters();  // Waiting claims return NotFound.
      deleted_groups_.push_back(std::move(g));
    } else {
      HQ_RETURN_IF_ERROR(write());
    }
    deleting_groups_.emplace(name);
  }
  db_->PublishStatusSoon();
  absl::Status s =
      db_->FinishConsumerDelete(queue_->id(), record.id, tombstone);
  if (!s.ok()) {
    // The name stays unusable in this process: the next Open finishes the
    // delete.
    return RecordsNotDeleted(absl::StrCat("consumer group '", Av(name), "'"),
                             queue_->name(), s);
  }
  MutexLock l(&groups_mu_);
  deleting_groups_.erase(Av(name));
  return absl::OkStatus();
}

void QueueConsumersImpl::CollectLiveStatus(LiveStatus* out,
                                           std::vector<absl::Time>* loaded_at) {
  std::vector<GroupImpl*> groups;
  {
    MutexLock l(&groups_mu_);
    for (auto& [name, g] : groups_) groups.push_back(g.get());
  }
  for (GroupImpl* g : groups) {
    absl::StatusOr<GroupStats> st = g->Stats();
    if (!st.ok()) continue;  // Dropped meanwhile, or the Db is closing.
    LiveGroupStatus s{.queue = queue_->name(), .name = g->name(), .stats = *st};
    absl::StatusOr<std::vector<PendingTask>> pending =
        g->ListPending(kLiveStatusPending, nullptr);
    if (pending.ok()) {
      s.pending_complete = pending->size() < kLiveStatusPending;
      s.pending = *std::move(pending);
    } else {
      s.pending_complete = false;
    }
    if (absl::StatusOr<std::vector<ConsumerInfo>> c = g->Consumers(); c.ok()) {
      s.consumers = *std::move(c);
      if (s.consumers.size() > kLiveStatusConsumers) {
        s.consumers.resize(kLiveStatusConsumers);
      }
    }
    s.claimed_total = g->claimed_total();
    s.completed_total = g->completed_total();
    out->groups.push_back(std::move(s));
    if (loaded_at != nullptr) loaded_at->push_back(g->loaded_at());
  }
  MutexLock status(&status_mu_);
  std::vector<SubscriptionImpl*> subs;
  {
    MutexLock l(&subs_mu_);
    for (auto& [name, sub] : subs_) subs.push_back(sub.get());
  }
  for (SubscriptionImpl* sub : subs) {
    // Without the lanes: reading every checkpoint (one per topic of a topic
    // layout queue) under the subscription's lock would stall it.
    absl::StatusOr<SubscriptionStats> st = sub->Stats(/*with_lanes=*/false);
    if (!st.ok()) continue;
    out->subscriptions.push_back({.queue = queue_->name(),
                                  .name = sub->name(),
                                  .lag = st->lag,
                                  .lag_exact = st->lag_exact,
                                  .delivered = st->delivered,
                                  .failed_attempts = st->failed_attempts,
                                  .buffered = st->buffered,
                                  .listeners = st->listeners,
                                  .resident_lanes = st->resident_lanes,
                                  .active_lanes = st->active_lanes});
  }
}

}  // namespace hq
