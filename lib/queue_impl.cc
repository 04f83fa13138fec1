// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/queue_impl.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/db_impl.h"
#include "lib/group_impl.h"
#include "lib/scanner_impl.h"
#include "lib/status_macros.h"
#include "lib/strings.h"
#include "xxhash.h"

namespace hq {

QueueImpl::QueueImpl(DbImpl* db, std::string name,
                     const format::QueueRecord& record)
    : db_(db),
      name_(std::move(name)),
      record_(record),
      codec_(LayoutCodec::For(record.options.layout)) {}

QueueImpl::~QueueImpl() = default;

QueueInfo QueueImpl::info() const {
  return QueueInfo{name_, record_.options, record_.created};
}

absl::Status QueueImpl::DroppedError() const {
  return absl::NotFoundError(absl::StrCat("queue '", name_, "' was dropped"));
}

absl::Status QueueImpl::Validate(const Message& m, int64_t index) const {
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        index < 0
            ? absl::StrCat("queue '", name_, "': ", what)
            : absl::StrCat("queue '", name_, "': message ", index, ": ", what));
  };
  const QueueOptions& o = record_.options;
  if (m.payload.size() > o.max_payload_bytes) {
    return error(
        absl::StrFormat("payload of %d bytes exceeds max_payload_bytes %d",
                        m.payload.size(), o.max_payload_bytes));
  }
  if (m.topic.size() > format::kMaxTopicBytes) {
    return error(absl::StrFormat("topic of %d bytes exceeds the limit of %d",
                                 m.topic.size(), format::kMaxTopicBytes));
  }
  if (m.dedup_key.size() > format::kMaxKeyBytes) {
    return error(
        absl::StrFormat("dedup key of %d bytes exceeds the limit of %d",
                        m.dedup_key.size(), format::kMaxKeyBytes));
  }
  if (m.key.size() > format::kMaxKeyBytes) {
    return error(absl::StrFormat("key of %d bytes exceeds the limit of %d",
                                 m.key.size(), format::kMaxKeyBytes));
  }
  if (m.partition.has_value() && *m.partition >= o.partitions) {
    return error(absl::StrFormat("partition %d is out of range 0..%d",
                                 *m.partition, o.partitions - 1));
  }
  if (m.delay < absl::ZeroDuration() || m.delay > absl::Hours(24 * 365 * 100)) {
    return error(absl::StrCat("delay ", absl::FormatDuration(m.delay),
                              " is negative or over 100 years"));
  }
  if (m.not_before != absl::InfinitePast() &&
      (m.not_before < absl::UnixEpoch() ||
       m.not_before > MessageId::Max().time())) {
    return error(absl::StrCat("not_before ", absl::FormatTime(m.not_before),
                              " is before 1970 or after year 10889"));
  }
  if (m.priority < 0 || m.priority >= o.priorities) {
    return error(absl::StrFormat("priority %d is out of range 0..%d",
                                 m.priority, o.priorities - 1));
  }
  return absl::OkStatus();
}

// DO NOT CHANGE: users rely on a key (or topic) always mapping to the same
// partition, across versions.
uint32_t QueueImpl::ChoosePartition(const Message& m) {
  const uint32_t n = record_.options.partitions;
  if (m.partition.has_value()) return *m.partition;
  if (n == 1) return 0;
  if (!m.key.empty()) return XXH3_64bits(m.key.data(), m.key.size()) % n;
  if (record_.options.layout == Layout::kTopic) {
    return XXH3_64bits(m.topic.data(), m.topic.size()) % n;
  }
  return round_robin_.fetch_add(1, std::memory_order_relaxed) % n;
}

MessageId QueueImpl::TtlCutoff(absl::Time now) const {
  const absl::Duration ttl = record_.options.ttl;
  if (ttl == absl::InfiniteDuration()) return MessageId::Min();
  return MessageId::AtTime(now - ttl);
}

bool QueueImpl::Sync(const PutOptions& o) const {
  return o.sync.value_or(db_->default_sync());
}

absl::StatusOr<PutResult> QueueImpl::Put(const Message& message,
                                         const PutOptions& options) {
  if (dropped()) return DroppedError();
  if (absl::Status s = Validate(message, -1); !s.ok()) return s;
  const uint32_t partition = ChoosePartition(message);
  PutResult result;
  absl::Status s = db_->WriteMessages(this, std::span(&message, 1), &partition,
                                      &result, Sync(options));
  if (!s.ok()) return s;
  return result;
}

absl::Status QueueImpl::PutBatch(std::span<const Message> messages,
                                 std::vector<PutResult>* results,
                                 const PutOptions& options) {
  if (dropped()) return DroppedError();
  for (size_t i = 0; i < messages.size(); ++i) {
    if (absl::Status s = Validate(messages[i], static_cast<int64_t>(i));
        !s.ok()) {
      return s;
    }
  }
  if (messages.empty()) {
    if (results != nullptr) results->clear();
    return absl::OkStatus();
  }
  std::vector<uint32_t> partitions(messages.size());
  for (size_t i = 0; i < messages.size(); ++i) {
    partitions[i] = ChoosePartition(messages[i]);
  }
  std::vector<PutResult> local;
  std::vector<PutResult>* out = results != nullptr ? results : &local;
  out->assign(messages.size(), PutResult{});
  return db_->WriteMessages(this, messages, partitions.data(), out->data(),
                            Sync(options));
}

void QueueImpl::NoteWritten(std::span<const Message> messages,
                            const PutResult* results) {
  if (!has_listeners()) return;
  // A lane is noted once per call (batches usually go to few lanes).
  std::vector<std::string> lanes;
  std::string prefix;
  for (size_t i = 0; i < messages.size(); ++i) {
    prefix.clear();
    codec_.AppendLanePrefix(&prefix, record_.id, results[i].partition,
                            messages[i].priority, messages[i].topic);
    if (std::find(lanes.begin(), lanes.end(), prefix) == lanes.end()) {
      if (lanes.size() < 64) {
        lanes.push_back(prefix);
      } else {
        MutexLock l(&listeners_mu_);
        for (GroupImpl* g : listeners_) g->NoteLaneWritten(prefix);
      }
    }
  }
  MutexLock l(&listeners_mu_);
  for (GroupImpl* g : listeners_) {
    for (const std::string& lane : lanes) g->NoteLaneWritten(lane);
  }
}

void QueueImpl::WakeWaiters() {
  MutexLock l(&groups_mu_);
  for (auto& [name, g] : groups_) g->WakeWaiters();
}

absl::StatusOr<ConsumerGroup*> QueueImpl::Group(std::string_view name,
                                                const GroupOptions& options) {
  HQ_RETURN_IF_ERROR(format::ValidateGroupName(name));
  HQ_RETURN_IF_ERROR(format::ValidateGroupOptions(options));
  const std::string dead_name = absl::StrCat(name_, ".dead.", Av(name));
  if (absl::Status s = format::ValidateQueueName(dead_name); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "group '", Av(name), "' of queue '", name_,
        "': its dead-letter queue name is invalid: ", s.message()));
  }
  if (dropped()) return DroppedError();
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  std::vector<std::string> topics = options.topics;
  std::sort(topics.begin(), topics.end());
  topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
  auto check_fixed = [&](const format::GroupRecord& stored) {
    if (stored.topics != topics) {
      return absl::InvalidArgumentError(
          absl::StrCat("group '", Av(name), "' of queue '", name_,
                       "' was created with ", stored.topics.size(),
                       " topic(s) in its filter; the filter is fixed"));
    }
    if (stored.ordered != options.ordered) {
      return absl::InvalidArgumentError(absl::StrCat(
          "group '", Av(name), "' of queue '", name_, "' was created ",
          stored.ordered ? "ordered" : "unordered",
          "; GroupOptions::ordered is fixed"));
    }
    return absl::OkStatus();
  };
  MutexLock l(&groups_mu_);
  if (auto it = groups_.find(Av(name)); it != groups_.end()) {
    HQ_RETURN_IF_ERROR(check_fixed(it->second->record()));
    it->second->SetOptions(options);
    return it->second.get();
  }
  format::GroupRecord record;
  std::string value;
  const std::string key = format::GroupKey(record_.id, name);
  leveldb::Status s = db_->leveldb()->Get(leveldb::ReadOptions(), key, &value);
  if (s.ok()) {
    HQ_RETURN_IF_ERROR(format::DecodeGroupRecord(value, &record));
    HQ_RETURN_IF_ERROR(check_fixed(record));
  } else if (s.IsNotFound()) {
    absl::StatusOr<Queue*> taken = db_->OpenQueue(dead_name);
    if (taken.ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("cannot create group '", Av(name), "' of queue '", name_,
                       "': its dead-letter queue name '", dead_name,
                       "' is taken by another queue"));
    }
    if (!absl::IsNotFound(taken.status())) return taken.status();
    record.topics = topics;
    record.ordered = options.ordered;
    HQ_RETURN_IF_ERROR(db_->CreateGroupRecord(this, key, &record));
  } else {
    return FromLevelDb(s, "reading a consumer group record");
  }
  auto g = std::make_unique<GroupImpl>(db_, this, std::string(name), record,
                                       options);
  // Listen before loading: a lane written during the load is noted.
  {
    MutexLock ll(&listeners_mu_);
    listeners_.push_back(g.get());
    has_listeners_.store(true, std::memory_order_release);
  }
  if (absl::Status ls = g->Load(); !ls.ok()) {
    MutexLock ll(&listeners_mu_);
    listeners_.erase(std::find(listeners_.begin(), listeners_.end(), g.get()));
    has_listeners_.store(!listeners_.empty(), std::memory_order_release);
    return ls;
  }
  GroupImpl* raw = g.get();
  groups_.emplace(std::string(name), std::move(g));
  return raw;
}

absl::StatusOr<std::vector<std::string>> QueueImpl::ListGroups() {
  if (dropped()) return DroppedError();
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  std::vector<std::string> names;
  const std::string prefix = format::GroupPrefix(record_.id);
  std::unique_ptr<leveldb::Iterator> it(
      db_->leveldb()->NewIterator(leveldb::ReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    names.emplace_back(it->key().data() + prefix.size(),
                       it->key().size() - prefix.size());
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "listing consumer groups"));
  return names;
}

absl::StatusOr<std::unique_ptr<Scanner>> QueueImpl::NewScanner(
    const ScanOptions& options) {
  if (dropped()) return DroppedError();
  const QueueOptions& o = record_.options;
  absl::Status s = format::ValidatePartitionList(
      "ScanOptions::partitions", options.partitions, o.partitions);
  if (s.ok())
    s = format::ValidateTopicList("ScanOptions::topics", options.topics);
  if (!s.ok()) {
    return absl::Status(s.code(),
                        absl::StrCat("queue '", name_, "': ", s.message()));
  }
  for (const MessageId& id : {options.from, options.to}) {
    if (id.ms > MessageId::kMaxMs) {
      return absl::InvalidArgumentError(
          absl::StrCat("queue '", name_, "': ScanOptions id ", id.ToString(),
                       " has ms above MessageId::kMaxMs"));
    }
  }
  if (options.to < options.from) {
    return absl::InvalidArgumentError(absl::StrCat(
        "queue '", name_, "': ScanOptions::from ", options.from.ToString(),
        " is after ScanOptions::to ", options.to.ToString()));
  }
  if (options.order != ScanOptions::Order::kMerged &&
      options.order != ScanOptions::Order::kLane) {
    return absl::InvalidArgumentError("ScanOptions::order is not known");
  }
  DbImpl::OpScope op(db_);
  if (!op.status().ok()) return op.status();
  // Expired messages are invisible at once: start at the TTL cutoff.
  ScanOptions effective = options;
  const MessageId cutoff = TtlCutoff(db_->clock()->Now());
  if (effective.from < cutoff) effective.from = std::min(cutoff, effective.to);
  return NewScannerImpl(db_, this, effective);
}

}  // namespace hq
