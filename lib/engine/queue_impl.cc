// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/queue_impl.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/lane_walk.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"
#include "xxhash.h"

namespace hq {

QueueImpl::QueueImpl(DbImpl* db, std::string name,
                     const format::QueueRecord& record)
    : db_(db),
      name_(std::move(name)),
      record_(record),
      codec_(LayoutCodec::For(record.options.layout)),
      consumers_(db->extensions()->NewConsumers(db, this)) {}

QueueImpl::~QueueImpl() = default;

absl::StatusOr<std::unique_ptr<Scanner>> QueueImpl::NewScanner(
    const ScanOptions& options) {
  return consumers_->NewScanner(options);
}

absl::StatusOr<ConsumerGroup*> QueueImpl::Group(std::string_view name,
                                                const GroupOptions& options) {
  return consumers_->Group(name, options);
}

absl::Status QueueImpl::DeleteGroup(std::string_view name,
                                    const DeleteGroupOptions& options) {
  return consumers_->DeleteGroup(name, options);
}

absl::StatusOr<Subscription*> QueueImpl::Subscribe(
    const SubscribeOptions& options, MessageListener* listener) {
  return consumers_->Subscribe(options, listener);
}

absl::Status QueueImpl::Unsubscribe(std::string_view name) {
  return consumers_->Unsubscribe(name);
}

absl::Status QueueImpl::DeleteSubscription(std::string_view name) {
  return consumers_->Unsubscribe(name);
}

absl::StatusOr<uint64_t> QueueImpl::ApproximateBytes() {
  return db_->extensions()->ApproximateBytes(this);
}

absl::StatusOr<QueueStats> QueueImpl::Stats() {
  return db_->extensions()->Stats(this);
}

absl::StatusOr<GroupInfo> QueueImpl::InspectGroup(std::string_view name) {
  return db_->extensions()->InspectGroup(this, name);
}

absl::StatusOr<SubscriptionStats> QueueImpl::InspectSubscription(
    std::string_view name) {
  return db_->extensions()->InspectSubscription(this, name);
}

absl::StatusOr<std::string> QueueImpl::ReadNamedRecord(const std::string& key,
                                                       std::string_view kind,
                                                       std::string_view name) {
  std::string value;
  const leveldb::Status s =
      CheckedGet(db_->leveldb(), CheckedReadOptions(), key, &value);
  if (s.IsNotFound()) {
    return absl::NotFoundError(absl::StrCat("queue '", name_, "' has no ",
                                            Av(kind), " '", Av(name), "'"));
  }
  HQ_RETURN_IF_ERROR(
      FromLevelDb(s, absl::StrCat("reading a ", Av(kind), " record")));
  return value;
}

QueueInfo QueueImpl::info() const {
  return QueueInfo{name_, record_.options, record_.created};
}

absl::Status QueueImpl::DroppedError() const {
  return absl::NotFoundError(absl::StrCat("queue '", name_, "' was dropped"));
}

absl::Status QueueImpl::ValidateFields(const Message& m, int64_t index) const {
  const QueueOptions& o = record_.options;
  auto error = [&](const std::string& what) {
    return absl::InvalidArgumentError(
        index < 0
            ? absl::StrCat("queue '", name_, "': ", what)
            : absl::StrCat("queue '", name_, "': message ", index, ": ", what));
  };
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

MessageId QueueImpl::swept_cutoff() const {
  const uint64_t v = swept_cutoff_.load();
  return MessageId{v >> 16, static_cast<uint16_t>(v & 0xffff)};
}

void QueueImpl::NoteSwept(MessageId cutoff) {
  const uint64_t v = cutoff.ms << 16 | cutoff.seq;
  uint64_t seen = swept_cutoff_.load();
  while (seen < v && !swept_cutoff_.compare_exchange_weak(seen, v)) {
  }
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
        for (LaneListener* g : listeners_) g->NoteLaneWritten(prefix);
      }
    }
  }
  MutexLock l(&listeners_mu_);
  for (LaneListener* g : listeners_) {
    for (const std::string& lane : lanes) g->NoteLaneWritten(lane);
  }
}

absl::StatusOr<std::vector<std::string>> QueueImpl::ListNames(
    char tag, std::string_view what) {
  if (dropped()) return DroppedError();
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  std::vector<std::string> names;
  const std::string prefix = format::QueuePrefix(tag, record_.id);
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    names.emplace_back(it->key().data() + prefix.size(),
                       it->key().size() - prefix.size());
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), what));
  return names;
}

absl::StatusOr<std::vector<std::string>> QueueImpl::ListGroups() {
  return ListNames(format::kGroupTag, "listing consumer groups");
}

absl::StatusOr<std::vector<std::string>> QueueImpl::ListSubscriptions() {
  return ListNames(format::kSubTag, "listing subscriptions");
}

void QueueImpl::AddListener(LaneListener* l) {
  MutexLock ll(&listeners_mu_);
  listeners_.push_back(l);
  has_listeners_.store(true, std::memory_order_release);
}

void QueueImpl::RemoveListener(LaneListener* l) {
  MutexLock ll(&listeners_mu_);
  listeners_.erase(std::find(listeners_.begin(), listeners_.end(), l));
  has_listeners_.store(!listeners_.empty(), std::memory_order_release);
}

absl::Status QueueImpl::WalkLanes(
    std::string_view record_prefix,
    const std::function<absl::Status(const LaneEntry&)>& fn) {
  const bool has_topic = codec_.lane_has_topic();
  leveldb::ReadOptions ro = CheckedReadOptions();
  ro.fill_cache = false;
  std::unique_ptr<leveldb::Iterator> dir(
      NewCheckedIterator(db_->leveldb(), ro));
  std::unique_ptr<leveldb::Iterator> rec;
  if (!record_prefix.empty()) {
    rec.reset(NewCheckedIterator(db_->leveldb(), ro));
    rec->Seek(leveldb::Slice(record_prefix.data(), record_prefix.size()));
  }
  const std::string message_prefix = format::MessagePrefix(record_.id);
  LaneWalk walk(dir.get(), codec_, message_prefix);
  std::string_view record;
  for (walk.Seek(message_prefix); walk.Valid(); walk.Next()) {
    const std::string_view rest = walk.rest(message_prefix.size());
    LaneEntry e;
    e.prefix = walk.prefix();
    if (!LayoutCodec::ParseLanePrefix(e.prefix, has_topic, &e.partition,
                                      &e.priority, &e.topic) ||
        e.partition >= record_.options.partitions ||
        e.priority >= record_.options.priorities) {
      return absl::DataLossError(
          absl::StrCat("queue '", name_, "': malformed lane prefix"));
    }
    // The records are sorted like the lanes: advance to this lane's.
    while (rec != nullptr && rec->Valid() &&
           View(rec->key()).starts_with(record_prefix)) {
      const std::string_view rec_rest =
          View(rec->key()).substr(record_prefix.size());
      if (rec_rest < rest) {
        rec->Next();
        continue;
      }
      if (rec_rest == rest) {
        record = View(rec->value());
        e.record = &record;
      }
      break;
    }
    if (rec != nullptr) {
      HQ_RETURN_IF_ERROR(FromLevelDb(rec->status(), "reading lane records"));
    }
    HQ_RETURN_IF_ERROR(fn(e));
  }
  return walk.status();
}

absl::StatusOr<bool> QueueImpl::LaneHasMessageFrom(leveldb::Iterator* it,
                                                   std::string_view prefix,
                                                   MessageId from) {
  std::string seek(prefix);
  LayoutCodec::AppendMessageId(&seek, from);
  it->Seek(seek);
  if (!it->Valid()) {
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading a lane"));
    return false;
  }
  MessageId id;
  return LayoutCodec::LaneMessage(View(it->key()), prefix, &id);
}

absl::StatusOr<bool> QueueImpl::LastLaneMessage(leveldb::Iterator* it,
                                                std::string_view prefix,
                                                MessageId* last) {
  std::string fence;
  LayoutCodec::AppendLaneFence(&fence, prefix);
  it->Seek(fence);
  if (it->Valid()) {
    it->Prev();
  } else {
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading a lane"));
    it->SeekToLast();
  }
  const bool found =
      it->Valid() && LayoutCodec::LaneMessage(View(it->key()), prefix, last);
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading a lane"));
  return found;
}

absl::StatusOr<std::vector<std::pair<std::string, MessageId>>>
QueueImpl::LaneEnds(const format::SubRecord& scope) {
  std::vector<std::pair<std::string, MessageId>> out;
  std::unique_ptr<leveldb::Iterator> msg(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  const bool has_topic = codec_.lane_has_topic();
  HQ_RETURN_IF_ERROR(WalkLanes("", [&](const LaneEntry& e) -> absl::Status {
    if (!scope.partitions.empty() &&
        !std::binary_search(scope.partitions.begin(), scope.partitions.end(),
                            e.partition)) {
      return absl::OkStatus();
    }
    if (has_topic && !scope.topics.empty() &&
        !std::binary_search(scope.topics.begin(), scope.topics.end(),
                            std::string(e.topic))) {
      return absl::OkStatus();
    }
    MessageId last;
    HQ_ASSIGN_OR_RETURN(const bool found,
                        LastLaneMessage(msg.get(), e.prefix, &last));
    if (found) out.emplace_back(std::string(e.prefix), last.Next());
    return absl::OkStatus();
  }));
  return out;
}

}  // namespace hq
