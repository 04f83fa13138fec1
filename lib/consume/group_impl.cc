// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/group_impl.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

constexpr absl::Duration kMaxLease = absl::Hours(24 * 30);
// Stats counts the backlog key by key up to this many keys.
constexpr uint64_t kStatsCountLimit = 100000;
constexpr size_t kMaxConsumerBytes = 256;

uint64_t ToMs(absl::Time t) {
  const int64_t ms = absl::ToUnixMillis(t);
  return ms < 0 ? 0 : static_cast<uint64_t>(ms);
}

std::string TaskName(const Task& t) {
  return absl::StrFormat("task %d/%s (attempt %d)", t.partition,
                         t.id.ToString(), t.attempt);
}

}  // namespace

GroupImpl::GroupImpl(DbImpl* db, QueueImpl* queue, std::string name,
                     const format::GroupRecord& record,
                     const GroupOptions& options)
    : db_(db),
      queue_(queue),
      name_(std::move(name)),
      record_(record),
      topic_set_(record.topics.begin(), record.topics.end()),
      options_(options),
      rng_(std::hash<std::string>()(name_) ^ record.id) {}

GroupImpl::~GroupImpl() = default;

std::string GroupImpl::dead_letter_queue() const {
  return absl::StrCat(queue_->name(), ".dead.", name_);
}

void GroupImpl::SetOptions(const GroupOptions& options) {
  MutexLock l(&mu_);
  options_ = options;
}

void GroupImpl::NoteLaneWritten(std::string_view lane_prefix) {
  {
    MutexLock l(&notes_mu_);
    notes_.emplace(lane_prefix);
  }
  if (waiters_.load() > 0) Wake();
}

void GroupImpl::WakeWaiters() { Wake(); }

bool GroupImpl::InScope(std::string_view topic) const {
  return topic_set_.empty() || topic_set_.contains(Av(topic));
}

std::string GroupImpl::TaskKey(const Lane& lane, MessageId id) const {
  std::string k =
      format::GroupRecordPrefix(format::kTaskTag, queue_->id(), record_.id);
  format::AppendLaneRest(&k, lane.prefix);
  LayoutCodec::AppendMessageId(&k, id);
  return k;
}

std::string GroupImpl::CursorKey(std::string_view lane_prefix) const {
  std::string k =
      format::GroupRecordPrefix(format::kCursorTag, queue_->id(), record_.id);
  format::AppendLaneRest(&k, lane_prefix);
  return k;
}

absl::Status GroupImpl::Usable() {
  if (queue_->dropped()) return queue_->DroppedError();
  return broken_;
}

absl::Status GroupImpl::Fail(absl::Status s) {
  return RecordStickyError(&broken_, "consumer group", name_, std::move(s));
}

// ------------------------------------------------------------------ load

absl::Status GroupImpl::Load() {
  MutexLock l(&mu_);
  const int priorities = queue_->options().priorities;
  active_.resize(priorities);
  waiting_.resize(priorities);
  if (record_.ordered) parts_.resize(queue_->options().partitions);
  HQ_RETURN_IF_ERROR(LoadRecords());
  HQ_RETURN_IF_ERROR(DiscoverLanes());
  // Tasks that were in flight are due now, in id order.
  std::sort(recovered_.begin(), recovered_.end(),
            [](const auto& a, const auto& b) {
              return a.second != b.second ? a.second < b.second
                                          : a.first->prefix < b.first->prefix;
            });
  const absl::Time now = db_->clock()->Now();
  for (auto [lane, id] : recovered_) {
    AddWaiting(lane, id, &lane->tasks.find(id)->second, now);
  }
  recovered_.clear();
  recovered_.shrink_to_fit();
  // Lanes whose window held only expired messages: their completion cursor
  // moves up to the scan cursor, and they are forgotten.
  std::vector<Lane*> touched;
  leveldb::WriteBatch batch;
  for (auto& [prefix, lane] : lanes_) Touch(lane.get(), &touched);
  for (Lane* lane : touched) Settle(lane, &batch);
  HQ_RETURN_IF_ERROR(Write(batch));
  Committed(&touched);
  // Dead letters: counted once; they are few unless nobody looks at them.
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  const std::string prefix =
      format::GroupRecordPrefix(format::kDeadTag, queue_->id(), record_.id);
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    ++dead_count_;
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading dead letters"));
  return ForgetDeadIfQueueGone();
}

absl::Status GroupImpl::ForgetDeadIfQueueGone() {
  if (dead_count_ == 0) return absl::OkStatus();
  absl::StatusOr<QueueImpl*> dead = DeadQueue(/*create=*/false);
  if (!absl::IsNotFound(dead.status())) return dead.status();
  // The dead-letter queue was dropped: so are its letters.
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  const std::string prefix =
      format::GroupRecordPrefix(format::kDeadTag, queue_->id(), record_.id);
  leveldb::WriteBatch batch;
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    batch.Delete(it->key());
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading dead letters"));
  HQ_RETURN_IF_ERROR(Write(batch));
  dead_count_ = 0;
  return absl::OkStatus();
}

absl::Status GroupImpl::LoadRecords() {
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  const std::string prefix =
      format::GroupRecordPrefix(format::kTaskTag, queue_->id(), record_.id);
  const std::string message_prefix = format::MessagePrefix(queue_->id());
  std::string lane_prefix;
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    std::string_view key = View(it->key());
    format::TaskValue v;
    if (key.size() < prefix.size() + LayoutCodec::kMessageIdSize ||
        !format::DecodeTask(View(it->value()), &v)) {
      return absl::DataLossError(
          absl::StrCat("consumer group '", name_, "': malformed task record"));
    }
    const MessageId id =
        LayoutCodec::DecodeMessageId(key.data() + key.size() - 8);
    lane_prefix = message_prefix;
    lane_prefix.append(
        key.substr(prefix.size(),
                   key.size() - prefix.size() - LayoutCodec::kMessageIdSize));
    HQ_ASSIGN_OR_RETURN(Lane * lane, GetLane(lane_prefix));
    Rec& rec = lane->tasks[id];
    rec.attempts = v.attempts;
    rec.persisted = true;
    switch (v.state) {
      case format::TaskState::kInFlight:
        // The process stopped while it was in flight.
        Interrupted(lane, id, &rec);
        break;
      case format::TaskState::kWaiting:
        AddWaiting(lane, id, &rec,
                   absl::FromUnixMillis(static_cast<int64_t>(v.ms)));
        // Release writes waiting records, and delayed delivery (attempt 0).
        rec.released = v.attempts > 0;
        break;
      case format::TaskState::kDone:
        rec.state = format::TaskState::kDone;
        break;
    }
  }
  return FromLevelDb(it->status(), "reading task records");
}

absl::Status GroupImpl::DiscoverLanes() {
  // The lane directory joined with the group's cursor records; each lane in
  // scope is sought at its scan cursor.
  const bool has_topic = queue_->codec().lane_has_topic();
  const MessageId cutoff = queue_->TtlCutoff(db_->clock()->Now());
  std::unique_ptr<leveldb::Iterator> msg(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  return queue_->WalkLanes(
      format::GroupRecordPrefix(format::kCursorTag, queue_->id(), record_.id),
      [&](const QueueImpl::LaneEntry& e) -> absl::Status {
        if (has_topic && !InScope(e.topic)) return absl::OkStatus();
        format::CursorValue cursor;
        if (e.record != nullptr && !format::DecodeCursor(*e.record, &cursor)) {
          return absl::DataLossError(absl::StrCat(
              "consumer group '", name_, "': malformed cursor record"));
        }
        const format::CursorValue* have =
            e.record != nullptr ? &cursor : nullptr;
        Lane* known = FindLane(e.prefix);
        if (known == nullptr && have != nullptr && cursor.done < cursor.scan) {
          HQ_ASSIGN_OR_RETURN(known, GetLane(e.prefix, &cursor));
        }
        if (known != nullptr && known->done < known->scan) {
          HQ_RETURN_IF_ERROR(LoadWindow(known, cutoff, msg.get()));
        }
        const MessageId from =
            known != nullptr
                ? known->scan
                : (have != nullptr ? cursor.scan : MessageId::Min());
        HQ_ASSIGN_OR_RETURN(bool has_work,
                            QueueImpl::LaneHasMessageFrom(
                                msg.get(), e.prefix, std::max(from, cutoff)));
        if (!has_work) return absl::OkStatus();  // Nothing past the cursor.
        HQ_ASSIGN_OR_RETURN(Lane * lane, GetLane(e.prefix, have));
        Activate(lane);
        return absl::OkStatus();
      });
}

absl::Status GroupImpl::LoadWindow(Lane* lane, MessageId cutoff,
                                   leveldb::Iterator* it) {
  const bool has_topic = queue_->codec().lane_has_topic();
  const size_t n = lane->prefix.size();
  std::string seek = lane->prefix;
  LayoutCodec::AppendMessageId(&seek, std::max(lane->done, cutoff));
  MessageId id;
  for (it->Seek(seek); it->Valid(); it->Next()) {
    const std::string_view key = View(it->key());
    if (!LayoutCodec::LaneMessage(key, lane->prefix, &id) || !(id < lane->scan))
      break;
    if (lane->tasks.contains(id)) continue;
    if (!has_topic && !InScope(key.substr(n + LayoutCodec::kMessageIdSize))) {
      continue;
    }
    // Handed out once, in order, and neither completed nor recorded since:
    // it was in flight when the process stopped.
    Rec& rec = lane->tasks[id];
    rec.attempts = 1;
    Interrupted(lane, id, &rec);
  }
  return FromLevelDb(it->status(), "reading a group's window");
}

GroupImpl::Lane* GroupImpl::FindLane(std::string_view prefix) {
  auto it = lanes_.find(Av(prefix));
  return it == lanes_.end() ? nullptr : it->second.get();
}

absl::StatusOr<GroupImpl::Lane*> GroupImpl::GetLane(
    std::string_view prefix, const format::CursorValue* cursor) {
  if (Lane* lane = FindLane(prefix)) return lane;
  auto lane = std::make_unique<Lane>();
  lane->prefix.assign(prefix);
  std::string_view topic;
  if (!LayoutCodec::ParseLanePrefix(prefix, queue_->codec().lane_has_topic(),
                                    &lane->partition, &lane->priority,
                                    &topic) ||
      lane->partition >= queue_->options().partitions ||
      lane->priority >= queue_->options().priorities) {
    return absl::DataLossError(absl::StrCat(
        "consumer group '", name_, "': a record names a malformed lane"));
  }
  lane->topic.assign(topic);
  format::CursorValue c;
  if (cursor != nullptr) {
    c = *cursor;
    lane->saved_exists = true;
  } else {
    std::string value;
    leveldb::Status s = CheckedGet(db_->leveldb(), CheckedReadOptions(),
                                   CursorKey(prefix), &value);
    if (s.ok()) {
      if (!format::DecodeCursor(value, &c)) {
        return absl::DataLossError(absl::StrCat("consumer group '", name_,
                                                "': malformed cursor record"));
      }
      lane->saved_exists = true;
    } else if (!s.IsNotFound()) {
      return FromLevelDb(s, "reading a group cursor");
    }
  }
  lane->scan = c.scan;
  lane->done = c.done;
  lane->saved = c;
  Lane* raw = lane.get();
  lanes_.emplace(lane->prefix, std::move(lane));
  return raw;
}

void GroupImpl::Activate(Lane* lane) {
  if (lane->active) return;
  lane->active = true;
  if (record_.ordered) {
    Part& part = parts_[lane->partition];
    if (part.active.empty()) part.active.resize(active_.size());
    part.active[lane->priority].push_back(lane);
  } else {
    active_[lane->priority].push_back(lane);
  }
}

template <typename F>
void GroupImpl::ForEachActive(F f) {
  for (const std::deque<Lane*>& dq : active_) {
    for (Lane* lane : dq) f(lane);
  }
  for (const Part& part : parts_) {
    for (const std::deque<Lane*>& dq : part.active) {
      for (Lane* lane : dq) f(lane);
    }
  }
}

bool GroupImpl::Pending(const Lane& lane) {
  for (const auto& [id, rec] : lane.tasks) {
    if (rec.state != format::TaskState::kDone) return true;
  }
  return false;
}

void GroupImpl::EndInFlight(Lane* lane) {
  --in_flight_;
  if (record_.ordered) --parts_[lane->partition].in_flight;
}

absl::Status GroupImpl::TakeNotes() {
  absl::flat_hash_set<std::string> notes;
  {
    MutexLock l(&notes_mu_);
    notes.swap(notes_);
  }
  const bool has_topic = queue_->codec().lane_has_topic();
  for (const std::string& prefix : notes) {
    if (has_topic) {
      uint32_t partition;
      int priority;
      std::string_view topic;
      if (LayoutCodec::ParseLanePrefix(prefix, true, &partition, &priority,
                                       &topic) &&
          !InScope(topic)) {
        continue;
      }
    }
    HQ_ASSIGN_OR_RETURN(Lane * lane, GetLane(prefix));
    Activate(lane);
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------ bookkeeping

void GroupImpl::Touch(Lane* lane, std::vector<Lane*>* touched) {
  if (lane->dirty) return;
  lane->dirty = true;
  touched->push_back(lane);
}

void GroupImpl::PutTask(Lane* lane, MessageId id, Rec* rec,
                        leveldb::WriteBatch* batch) {
  format::TaskValue v;
  v.state = rec->state;
  v.attempts = rec->attempts;
  v.ms = rec->state == format::TaskState::kDone ? 0 : ToMs(rec->since);
  batch->Put(TaskKey(*lane, id), format::EncodeTask(v));
  rec->persisted = true;
}

void GroupImpl::PutDone(const std::vector<std::pair<Lane*, MessageId>>& done,
                        leveldb::WriteBatch* batch) {
  for (auto [lane, id] : done) {
    auto it = lane->tasks.find(id);
    if (it != lane->tasks.end()) PutTask(lane, id, &it->second, batch);
  }
}

void GroupImpl::AddWaiting(Lane* lane, MessageId id, Rec* rec, absl::Time due) {
  rec->state = format::TaskState::kWaiting;
  rec->released = false;
  rec->since = due;
  rec->wait_seq = next_wait_seq_++;
  rec->lease = 0;
  waiting_[lane->priority].insert(WaitKey{due, rec->wait_seq, lane, id});
  ++waiting_count_;
}

void GroupImpl::MarkDying(Lane* lane, MessageId id, Rec* rec,
                          DeadLetterReason reason) {
  rec->state = format::TaskState::kWaiting;
  rec->dying = true;
  rec->reason = reason;
  rec->lease = 0;
  dying_.emplace_back(lane, id);
}

void GroupImpl::Interrupted(Lane* lane, MessageId id, Rec* rec) {
  if (rec->attempts >= options_.max_attempts) {
    MarkDying(lane, id, rec, DeadLetterReason::kInterrupted);
  } else {
    recovered_.emplace_back(lane, id);  // Due at once (Load).
  }
}

void GroupImpl::RemoveWaiting(Lane* lane, MessageId id, Rec* rec) {
  waiting_[lane->priority].erase(WaitKey{rec->since, rec->wait_seq, lane, id});
  --waiting_count_;
}

void GroupImpl::HandOut(Lane* lane, MessageId id, Rec* rec, absl::Time now,
                        absl::Duration lease, bool covered, Task* t,
                        leveldb::WriteBatch* batch) {
  rec->state = format::TaskState::kInFlight;
  rec->attempts += 1;
  rec->since = now;
  rec->deadline = now + lease;
  rec->lease = 0;
  ++in_flight_;
  if (record_.ordered) ++parts_[lane->partition].in_flight;
  t->partition = lane->partition;
  t->priority = lane->priority;
  t->id = id;
  t->attempt = rec->attempts;
  t->lease_deadline = rec->deadline;
  if (rec->attempts > 1 || !covered) PutTask(lane, id, rec, batch);
}

void GroupImpl::Settle(Lane* lane, leveldb::WriteBatch* batch) {
  // Completed records below the scan cursor are passed by the completion
  // cursor; above it they must stay (they say "handed out").
  while (!lane->tasks.empty()) {
    auto first = lane->tasks.begin();
    if (first->second.state != format::TaskState::kDone ||
        !(first->first < lane->scan)) {
      break;
    }
    if (first->second.persisted) batch->Delete(TaskKey(*lane, first->first));
    lane->tasks.erase(first);
  }
  MessageId done = lane->scan;
  if (!lane->tasks.empty() && lane->tasks.begin()->first < done) {
    done = lane->tasks.begin()->first;
  }
  if (lane->done < done) lane->done = done;
  const format::CursorValue now{lane->scan, lane->done};
  const bool unchanged =
      lane->saved_exists
          ? (now.scan == lane->saved.scan && now.done == lane->saved.done)
          : (now.scan == MessageId::Min() && now.done == MessageId::Min());
  if (!unchanged)
    batch->Put(CursorKey(lane->prefix), format::EncodeCursor(now));
}

void GroupImpl::Committed(std::vector<Lane*>* touched) {
  for (Lane* lane : *touched) {
    lane->dirty = false;
    const format::CursorValue now{lane->scan, lane->done};
    if (lane->saved_exists || !(now.scan == MessageId::Min())) {
      lane->saved = now;
      lane->saved_exists = true;
    }
    if (!lane->active && lane->tasks.empty()) {
      lanes_.erase(lane->prefix);  // Idle: its cursor is on disk.
    }
  }
  touched->clear();
}

absl::Status GroupImpl::Write(const leveldb::WriteBatch& batch) {
  return Fail(db_->WriteRecords(queue_, batch, db_->default_sync()));
}

absl::Duration GroupImpl::Backoff(uint32_t attempts) {
  absl::Duration d = options_.backoff_base;
  for (uint32_t i = 1; i < attempts && d < options_.backoff_cap; ++i) d *= 2;
  d = std::min(d, options_.backoff_cap);
  if (options_.backoff_jitter > 0 && d > absl::ZeroDuration()) {
    std::uniform_real_distribution<double> f(1 - options_.backoff_jitter,
                                             1 + options_.backoff_jitter);
    d *= f(rng_);
  }
  return d;
}

// ------------------------------------------------------------------ claim

absl::Status GroupImpl::DecodeValue(std::string_view value, MessageId id,
                                    Task* t) const {
  std::string_view key, payload;
  uint64_t not_before_ms;
  if (!format::DecodeMessageValue(value, &key, &payload, &not_before_ms)) {
    return absl::DataLossError(absl::StrCat(
        "queue '", queue_->name(), "': malformed message ", id.ToString()));
  }
  t->key.assign(key);
  t->payload.assign(payload);
  t->not_before = format::NotBeforeTime(not_before_ms);
  return absl::OkStatus();
}

absl::StatusOr<bool> GroupImpl::ReadMessage(Lane* lane, MessageId id,
                                            leveldb::Iterator* it, Task* t) {
  std::string seek = lane->prefix;
  LayoutCodec::AppendMessageId(&seek, id);
  it->Seek(seek);
  if (!it->Valid()) {
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading a task"));
    return false;
  }
  const std::string_view key = View(it->key());
  if (!key.starts_with(seek)) return false;  // Gone (TTL sweep, drop).
  HQ_RETURN_IF_ERROR(DecodeValue(View(it->value()), id, t));
  t->topic.assign(queue_->codec().lane_has_topic()
                      ? std::string_view(lane->topic)
                      : key.substr(seek.size()));
  return true;
}

absl::StatusOr<bool> GroupImpl::ReadLane(
    Lane* lane, size_t want, const std::vector<std::string>& topics,
    MessageId cutoff, absl::Time now, absl::Duration lease,
    leveldb::Iterator* it, std::vector<Task>* out, leveldb::WriteBatch* batch) {
  if (lane->scan < cutoff) lane->scan = cutoff;  // Expired: never handed out.
  const bool has_topic = queue_->codec().lane_has_topic();
  const size_t n = lane->prefix.size();
  std::string seek = lane->prefix;
  LayoutCodec::AppendMessageId(&seek, lane->scan);
  bool contiguous = true;
  size_t handed = 0;
  MessageId id;
  for (it->Seek(seek); it->Valid(); it->Next()) {
    const std::string_view key = View(it->key());
    // Past the lane's last message (its fence): nothing left to read.
    if (!LayoutCodec::LaneMessage(key, lane->prefix, &id)) return contiguous;
    if (handed == want) return false;
    const std::string_view topic =
        has_topic ? std::string_view(lane->topic)
                  : key.substr(n + LayoutCodec::kMessageIdSize);
    if (lane->tasks.contains(id) || !InScope(topic)) {
      if (contiguous) lane->scan = id.Next();
      continue;
    }
    Task t;
    HQ_RETURN_IF_ERROR(DecodeValue(View(it->value()), id, &t));
    if (t.not_before > now) {
      // Delayed: it waits with the redeliveries until its time (a record,
      // attempt 0, so that a restart keeps the time).
      Rec& rec = lane->tasks[id];
      rec.attempts = 0;
      AddWaiting(lane, id, &rec, t.not_before);
      PutTask(lane, id, &rec, batch);
      if (contiguous) lane->scan = id.Next();
      if (record_.ordered) return false;  // It holds back the lane.
      continue;
    }
    if (!topics.empty() &&
        std::find(topics.begin(), topics.end(), topic) == topics.end()) {
      contiguous = false;  // Left for a claim without this filter.
      continue;
    }
    t.topic.assign(topic);
    Rec& rec = lane->tasks[id];
    HandOut(lane, id, &rec, now, lease, /*covered=*/contiguous, &t, batch);
    out->push_back(std::move(t));
    ++handed;
    if (contiguous) lane->scan = id.Next();
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading a lane"));
  return contiguous;
}

absl::StatusOr<std::vector<Task>> GroupImpl::Claim(const ClaimOptions& o) {
  const QueueOptions& qo = queue_->options();
  if (o.max < 1 || o.max > 10000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ClaimOptions::max is %d; it must be in 1..10000", o.max));
  }
  if (o.lease != absl::ZeroDuration() &&
      (o.lease < absl::Milliseconds(1) || o.lease > kMaxLease)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ClaimOptions::lease is ", absl::FormatDuration(o.lease),
                     "; it must be 0 or in 1ms..720h"));
  }
  HQ_RETURN_IF_ERROR(format::ValidatePartitionList(
      "ClaimOptions::partitions", o.partitions, qo.partitions));
  HQ_RETURN_IF_ERROR(
      format::ValidateTopicList("ClaimOptions::topics", o.topics));
  std::vector<bool> partitions;
  if (!o.partitions.empty()) {
    partitions.assign(qo.partitions, false);
    for (uint32_t p : o.partitions) partitions[p] = true;
  }
  if (o.wait < absl::ZeroDuration() || o.wait > kMaxLease) {
    return absl::InvalidArgumentError(absl::StrCat("ClaimOptions::wait is ",
                                                   absl::FormatDuration(o.wait),
                                                   "; it must be in 0..720h"));
  }
  if (record_.ordered) {
    if (o.consumer.empty() || o.consumer.size() > kMaxConsumerBytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "group '%s' is ordered: ClaimOptions::consumer must name the "
          "consumer (1..%d bytes; it has %d)",
          name_, kMaxConsumerBytes, o.consumer.size()));
    }
    if (!o.topics.empty() && !queue_->codec().lane_has_topic()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "group '", name_,
          "' is ordered and its queue has the time layout: a claim cannot "
          "filter by topic (it would hand out messages out of order)"));
    }
  }
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  // Ordered groups: while this call runs, its consumer stays live; and the
  // call notes how many times the consumer left before it began, so that
  // only a Leave during the call ends it.
  struct Claiming {
    GroupImpl* g;
    const std::string* name;
    uint64_t leaves_before = 0;
    Claiming(GroupImpl* g, const std::string* name) : g(g), name(name) {
      if (name == nullptr) return;
      MutexLock l(&g->mu_);
      ++g->claiming_[*name];
      if (auto it = g->leaves_.find(*name); it != g->leaves_.end()) {
        leaves_before = it->second;
      }
    }
    ~Claiming() {
      if (name == nullptr) return;
      MutexLock l(&g->mu_);
      auto it = g->claiming_.find(*name);
      if (--it->second == 0) {
        g->claiming_.erase(it);
        g->leaves_.erase(*name);  // No claim left that could see it.
      }
    }
  } claiming(this, record_.ordered ? &o.consumer : nullptr);
  if (o.wait == absl::ZeroDuration()) {
    absl::Time next_due;
    bool left;
    return ClaimOnce(o, partitions, claiming.leaves_before, &next_due, &left);
  }
  const absl::Time deadline = db_->clock()->Now() + o.wait;
  waiters_.fetch_add(1);
  struct Leave {
    std::atomic<int>* n;
    ~Leave() { n->fetch_sub(1); }
  } leave{&waiters_};
  for (;;) {
    uint64_t seen;
    {
      MutexLock l(&wait_mu_);
      seen = wake_seq_;
    }
    absl::Time next_due;
    bool left;
    HQ_ASSIGN_OR_RETURN(
        std::vector<Task> out,
        ClaimOnce(o, partitions, claiming.leaves_before, &next_due, &left));
    const absl::Time now = db_->clock()->Now();
    if (!out.empty() || now >= deadline || left) return out;
    if (db_->IsClosing()) return db_->ClosingError();
    if (queue_->dropped()) return queue_->DroppedError();
    // Sleep until a write notes a lane, a lease expires, a task is released,
    // the Db closes, or (timers on the Db's clock) the earliest redelivery
    // falls due or the wait ends. No polling.
    // At an absolute time: the clock may have moved since it was read (a
    // time already passed fires at once).
    const absl::Time wake_at = std::min(deadline, next_due);
    absl::StatusOr<LeaseId> timer =
        db_->lease_impl()->CreateAt(wake_at, [this] { Wake(); });
    if (!timer.ok()) return timer.status();
    {
      MutexLock l(&wait_mu_);
      while (wake_seq_ == seen) wait_cv_.Wait(&wait_mu_);
    }
    (void)db_->leases()->Cancel(*timer);
  }
}

void GroupImpl::Wake() {
  MutexLock l(&wait_mu_);
  ++wake_seq_;
  wait_cv_.SignalAll();
}

absl::Status GroupImpl::CollectDue(int priority, ClaimPass* p) {
  const bool has_topic = queue_->codec().lane_has_topic();
  std::set<WaitKey>& ws = waiting_[priority];
  for (auto w = ws.begin();
       w != ws.end() && w->due <= p->now && p->out.size() < p->o.max;) {
    Lane* lane = w->lane;
    const MessageId id = w->id;
    if (!p->match(lane)) {
      ++w;
      continue;
    }
    Rec* rec = &lane->tasks.find(id)->second;
    Task t;
    absl::StatusOr<bool> found =
        id < p->cutoff ? false : ReadMessage(lane, id, p->it, &t);
    if (!found.ok()) return found.status();
    if (!has_topic && !p->o.topics.empty() && *found &&
        std::find(p->o.topics.begin(), p->o.topics.end(), t.topic) ==
            p->o.topics.end()) {
      ++w;
      continue;
    }
    w = ws.erase(w);
    --waiting_count_;
    Touch(lane, &p->touched);
    if (!*found) {
      // Past the TTL: nothing left to deliver.
      rec->state = format::TaskState::kDone;
      p->gone.emplace_back(lane, id);
      continue;
    }
    HandOut(lane, id, rec, p->now, p->lease, /*covered=*/false, &t, &p->batch);
    p->out.push_back(std::move(t));
  }
  return absl::OkStatus();
}

absl::Status GroupImpl::CollectUnordered(ClaimPass* p) {
  const bool has_topic = queue_->codec().lane_has_topic();
  const int priorities = queue_->options().priorities;
  for (int prio = priorities - 1; prio >= 0 && p->out.size() < p->o.max;
       --prio) {
    // Tasks due for redelivery go first.
    HQ_RETURN_IF_ERROR(CollectDue(prio, p));
    // Then new messages, round-robin over the lanes that have any.
    std::deque<Lane*>& dq = active_[prio];
    while (p->out.size() < p->o.max && !dq.empty()) {
      const size_t n = dq.size();
      bool progress = false;
      for (size_t k = 0; k < n && p->out.size() < p->o.max; ++k) {
        Lane* lane = dq.front();
        dq.pop_front();
        if (!p->match(lane)) {
          dq.push_back(lane);
          continue;
        }
        const size_t remaining = p->o.max - p->out.size();
        const size_t want = (remaining + (n - k) - 1) / (n - k);
        const size_t before = p->out.size();
        Touch(lane, &p->touched);
        HQ_ASSIGN_OR_RETURN(
            bool drained,
            ReadLane(lane, want,
                     has_topic ? std::vector<std::string>() : p->o.topics,
                     p->cutoff, p->now, p->lease, p->it, &p->out, &p->batch));
        if (p->out.size() > before) progress = true;
        if (drained) {
          lane->active = false;
        } else {
          dq.push_back(lane);
        }
      }
      if (!progress) break;
    }
  }
  return absl::OkStatus();
}

absl::Status GroupImpl::CollectOrdered(Consumer* consumer,
                                       const std::vector<bool>& partitions,
                                       ClaimPass* p) {
  // `match` accepts only lanes of the consumer's partitions with no task in
  // flight. A waiting task is its lane's head (a lane has at most one task
  // not completed), so due redeliveries go first as in CollectUnordered;
  // then each idle partition gives the head of one lane without a pending
  // task. Partitions take turns across calls.
  const std::vector<uint32_t>& owned = consumer->partitions;
  const int priorities = queue_->options().priorities;
  for (int prio = priorities - 1; prio >= 0 && p->out.size() < p->o.max;
       --prio) {
    HQ_RETURN_IF_ERROR(CollectDue(prio, p));
    for (size_t k = 0; k < owned.size() && p->out.size() < p->o.max; ++k) {
      const uint32_t pid = owned[(consumer->next + k) % owned.size()];
      Part& part = parts_[pid];
      if (part.in_flight > 0 || part.active.empty() ||
          (!partitions.empty() && !partitions[pid])) {
        continue;
      }
      std::deque<Lane*>& dq = part.active[prio];
      for (size_t j = 0, n = dq.size(); j < n && part.in_flight == 0; ++j) {
        Lane* lane = dq.front();
        dq.pop_front();
        if (Pending(*lane) || !p->match(lane)) {
          dq.push_back(lane);
          continue;
        }
        Touch(lane, &p->touched);
        HQ_ASSIGN_OR_RETURN(bool drained,
                            ReadLane(lane, 1, {}, p->cutoff, p->now, p->lease,
                                     p->it, &p->out, &p->batch));
        if (drained) {
          lane->active = false;
        } else {
          dq.push_back(lane);
        }
      }
    }
  }
  if (!owned.empty()) consumer->next = (consumer->next + 1) % owned.size();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Task>> GroupImpl::ClaimOnce(
    const ClaimOptions& o, const std::vector<bool>& partitions,
    uint64_t leaves_before, absl::Time* next_due, bool* left) {
  MutexLock l(&mu_);
  *left = false;
  *next_due = absl::InfiniteFuture();
  if (auto it = leaves_.find(o.consumer);
      record_.ordered && it != leaves_.end() && it->second > leaves_before) {
    *left = true;
    return std::vector<Task>();
  }
  HQ_RETURN_IF_ERROR(Usable());
  HQ_RETURN_IF_ERROR(Fail(TakeNotes()));
  HQ_RETURN_IF_ERROR(FlushDying());
  const absl::Time now = db_->clock()->Now();
  const absl::Duration lease =
      o.lease == absl::ZeroDuration() ? options_.lease : o.lease;

  const bool has_topic = queue_->codec().lane_has_topic();
  Consumer* consumer = nullptr;
  if (record_.ordered) {
    HQ_ASSIGN_OR_RETURN(consumer, Join(o.consumer));
  }
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  ClaimPass p{.o = o,
              .now = now,
              .cutoff = queue_->TtlCutoff(now),
              .lease = lease,
              .it = it.get()};
  p.match = [&](const Lane* lane) {
    if (!partitions.empty() && !partitions[lane->partition]) return false;
    if (consumer != nullptr) {
      const Part& part = parts_[lane->partition];
      if (part.owner != consumer || part.in_flight > 0) return false;
    }
    return !has_topic || o.topics.empty() ||
           std::find(o.topics.begin(), o.topics.end(), lane->topic) !=
               o.topics.end();
  };

  absl::Status s = consumer == nullptr
                       ? CollectUnordered(&p)
                       : CollectOrdered(consumer, partitions, &p);
  if (!s.ok()) return Fail(s);
  for (Lane* lane : p.touched) Settle(lane, &p.batch);
  PutDone(p.gone, &p.batch);
  HQ_RETURN_IF_ERROR(Write(p.batch));
  // Leases start once the claim is on disk.
  for (Task& t : p.out) {
    std::string prefix;
    queue_->codec().AppendLanePrefix(&prefix, queue_->id(), t.partition,
                                     t.priority, t.topic);
    Lane* lane = FindLane(prefix);
    Rec& rec = lane->tasks.find(t.id)->second;
    absl::StatusOr<LeaseId> id = db_->leases()->Create(
        lease, [this, prefix, mid = t.id, attempts = rec.attempts] {
          OnLeaseExpired(prefix, mid, attempts);
        });
    if (!id.ok()) return Fail(id.status());
    rec.lease = *id;
    if (consumer != nullptr) t.consumer = consumer->name;
  }
  Committed(&p.touched);
  // The earliest redelivery still in the future (for a waiting claim),
  // including delayed messages this claim just read past.
  for (const std::set<WaitKey>& ws : waiting_) {
    auto w = ws.upper_bound(WaitKey{now, UINT64_MAX, nullptr, {}});
    if (w != ws.end()) *next_due = std::min(*next_due, w->due);
  }
  return std::move(p.out);
}

void GroupImpl::OnLeaseExpired(const std::string& prefix, MessageId id,
                               uint32_t attempts) {
  MutexLock l(&mu_);
  Lane* lane = FindLane(prefix);
  if (lane == nullptr) return;
  auto it = lane->tasks.find(id);
  if (it == lane->tasks.end()) return;
  Rec& rec = it->second;
  if (rec.state != format::TaskState::kInFlight || rec.attempts != attempts) {
    return;  // Completed, released or handed out again meanwhile.
  }
  if (waiters_.load() > 0) Wake();  // Due now, or a new earliest due time.
  EndInFlight(lane);
  rec.lease = 0;
  if (rec.attempts >= options_.max_attempts) {
    MarkDying(lane, id, &rec, DeadLetterReason::kLeaseExpired);
    return;
  }
  AddWaiting(lane, id, &rec, db_->clock()->Now() + Backoff(rec.attempts));
}

// ------------------------------------------------ ordered groups: consumers

absl::Status GroupImpl::ArmConsumer(Consumer* c) {
  c->gen = ++next_consumer_gen_;
  absl::StatusOr<LeaseId> id = db_->leases()->Create(
      options_.ownership_lease,
      [this, name = c->name, gen = c->gen] { OnConsumerExpired(name, gen); });
  if (!id.ok()) return id.status();
  c->lease = *id;
  return absl::OkStatus();
}

absl::StatusOr<GroupImpl::Consumer*> GroupImpl::Join(const std::string& name) {
  auto it = consumers_.find(name);
  if (it != consumers_.end()) {
    Consumer* c = it->second.get();
    if (!db_->leases()->Renew(c->lease, options_.ownership_lease).ok()) {
      // Its expiry is running (waiting for our lock): a new lease, and the
      // old one's action finds a stale generation.
      HQ_RETURN_IF_ERROR(ArmConsumer(c));
    }
    return c;
  }
  auto c = std::make_unique<Consumer>();
  c->name = name;
  HQ_RETURN_IF_ERROR(ArmConsumer(c.get()));
  Consumer* raw = c.get();
  consumers_.emplace(name, std::move(c));
  Rebalance();
  return raw;
}

void GroupImpl::KeepAlive(const std::string& name) {
  auto it = consumers_.find(name);
  if (it == consumers_.end()) return;  // Gone: Claim joins it again.
  Consumer* c = it->second.get();
  if (!db_->leases()->Renew(c->lease, options_.ownership_lease).ok()) {
    (void)ArmConsumer(c);  // Fails only when the Db is closing.
  }
}

void GroupImpl::OnConsumerExpired(const std::string& name, uint64_t gen) {
  {
    MutexLock l(&mu_);
    auto it = consumers_.find(name);
    if (it == consumers_.end() || it->second->gen != gen) return;
    if (claiming_.contains(name)) {
      // Blocked in a claim: live. A new lease (fails only when closing).
      (void)ArmConsumer(it->second.get());
      return;
    }
    DropConsumer(name);  // Its lease just expired: nothing to cancel.
  }
}

LeaseId GroupImpl::DropConsumer(const std::string& name) {
  auto it = consumers_.find(name);
  const LeaseId lease = it->second->lease;
  for (uint32_t p : it->second->partitions) parts_[p].owner = nullptr;
  consumers_.erase(it);
  Rebalance();
  return lease;
}

void GroupImpl::Rebalance() {
  const size_t partitions = parts_.size();
  std::vector<Consumer*> cs;
  cs.reserve(consumers_.size());
  for (auto& [name, c] : consumers_) cs.push_back(c.get());
  // Quotas: P/n each, one more for the first P%n, which go to those that
  // own the most now (so that the fewest partitions move).
  std::sort(cs.begin(), cs.end(), [](const Consumer* a, const Consumer* b) {
    return a->partitions.size() != b->partitions.size()
               ? a->partitions.size() > b->partitions.size()
               : a->name < b->name;
  });
  const size_t n = cs.size();
  absl::flat_hash_map<const Consumer*, size_t> index;
  std::vector<size_t> quota(n), kept(n, 0);
  for (size_t i = 0; i < n; ++i) {
    index[cs[i]] = i;
    quota[i] = partitions / n + (i < partitions % n ? 1 : 0);
  }
  std::vector<uint32_t> free;
  for (uint32_t p = 0; p < partitions; ++p) {
    Consumer* owner = parts_[p].owner;
    if (owner != nullptr) {
      const size_t i = index.at(owner);
      if (kept[i] < quota[i]) {
        ++kept[i];
        continue;
      }
    }
    parts_[p].owner = nullptr;
    free.push_back(p);
  }
  size_t i = 0;
  for (uint32_t p : free) {
    while (i < n && kept[i] >= quota[i]) ++i;
    if (i == n) break;  // No consumers.
    parts_[p].owner = cs[i];
    ++kept[i];
  }
  for (Consumer* c : cs) c->partitions.clear();
  for (uint32_t p = 0; p < partitions; ++p) {
    if (parts_[p].owner != nullptr) parts_[p].owner->partitions.push_back(p);
  }
  for (Consumer* c : cs) {
    c->next = c->partitions.empty() ? 0 : c->next % c->partitions.size();
  }
  // Waiting claims of consumers that gained partitions.
  if (waiters_.load() > 0) Wake();
}

absl::StatusOr<std::vector<ConsumerInfo>> GroupImpl::Consumers() {
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  std::vector<ConsumerInfo> out;
  for (const auto& [name, c] : consumers_) {
    ConsumerInfo info;
    info.name = name;
    info.partitions = c->partitions;
    absl::StatusOr<absl::Time> deadline = db_->leases()->Deadline(c->lease);
    // An expiry waiting for our lock: the consumer is about to leave.
    info.lease_deadline = deadline.ok() ? *deadline : db_->clock()->Now();
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(),
            [](const ConsumerInfo& a, const ConsumerInfo& b) {
              return a.name < b.name;
            });
  return out;
}

absl::Status GroupImpl::Leave(std::string_view consumer) {
  if (!record_.ordered) {
    return absl::FailedPreconditionError(absl::StrCat(
        "group '", name_, "' is not ordered: it has no consumers to leave"));
  }
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  LeaseId lease;
  {
    MutexLock l(&mu_);
    HQ_RETURN_IF_ERROR(Usable());
    if (!consumers_.contains(Av(consumer))) {
      return absl::NotFoundError(absl::StrCat("'", Av(consumer),
                                              "' is not a live consumer of "
                                              "group '",
                                              name_, "'"));
    }
    lease = DropConsumer(std::string(consumer));
    // Claims of it in progress return; later ones join it again.
    if (claiming_.contains(Av(consumer))) ++leaves_[std::string(consumer)];
  }
  // Outside the lock (an expiry running now waits for it, then finds the
  // consumer gone).
  (void)db_->leases()->Cancel(lease);
  return absl::OkStatus();
}

// ------------------------------------------------- complete, release, extend

absl::Status GroupImpl::FindHeld(const Task& t, bool allow_expired, Lane** lane,
                                 Rec** rec) {
  const QueueOptions& qo = queue_->options();
  if (t.partition >= qo.partitions || t.priority < 0 ||
      t.priority >= qo.priorities || t.topic.size() > format::kMaxTopicBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(TaskName(t), " is not a task of queue '", queue_->name(),
                     "' (partition, priority or topic out of range)"));
  }
  std::string prefix;
  queue_->codec().AppendLanePrefix(&prefix, queue_->id(), t.partition,
                                   t.priority, t.topic);
  auto not_held = [&](std::string_view why) {
    return absl::FailedPreconditionError(absl::StrCat(
        TaskName(t), " is not held in group '", name_, "': ", Av(why)));
  };
  *lane = FindLane(prefix);
  if (*lane == nullptr || t.attempt == 0) {
    return not_held("it was completed, or never handed out");
  }
  auto it = (*lane)->tasks.find(t.id);
  if (it == (*lane)->tasks.end()) {
    return not_held("it was completed, or never handed out");
  }
  *rec = &it->second;
  if ((*rec)->attempts != t.attempt) {
    return not_held(absl::StrFormat(
        "its lease expired and it was handed out again (attempt %d)",
        (*rec)->attempts));
  }
  switch ((*rec)->state) {
    case format::TaskState::kDone:
      return not_held("it was completed");
    case format::TaskState::kWaiting:
      if ((*rec)->dying) return not_held("it was dead-lettered");
      if ((*rec)->released) return not_held("it was released");
      if (!allow_expired) return not_held("its lease expired");
      break;
    case format::TaskState::kInFlight:
      break;
  }
  return absl::OkStatus();
}

absl::Status GroupImpl::Complete(std::span<const Task> tasks) {
  if (tasks.empty()) return absl::OkStatus();
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  std::vector<LeaseId> cancel;
  {
    MutexLock l(&mu_);
    HQ_RETURN_IF_ERROR(Usable());
    std::vector<std::pair<Lane*, Rec*>> held(tasks.size());
    absl::flat_hash_set<const Rec*> seen;
    for (size_t i = 0; i < tasks.size(); ++i) {
      HQ_RETURN_IF_ERROR(FindHeld(tasks[i], /*allow_expired=*/true,
                                  &held[i].first, &held[i].second));
      if (!seen.insert(held[i].second).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(TaskName(tasks[i]), " appears twice"));
      }
    }
    std::vector<Lane*> touched;
    std::vector<std::pair<Lane*, MessageId>> done;
    leveldb::WriteBatch batch;
    for (size_t i = 0; i < tasks.size(); ++i) {
      auto [lane, rec] = held[i];
      if (rec->state == format::TaskState::kWaiting) {
        RemoveWaiting(lane, tasks[i].id, rec);
      } else {
        EndInFlight(lane);
        if (rec->lease != 0) cancel.push_back(rec->lease);
      }
      rec->lease = 0;
      rec->state = format::TaskState::kDone;
      done.emplace_back(lane, tasks[i].id);
      Touch(lane, &touched);
      if (record_.ordered) KeepAlive(tasks[i].consumer);
    }
    // In order, the completion cursor passes them: only the cursor record
    // is written. Completed out of order, each gets a record.
    for (Lane* lane : touched) Settle(lane, &batch);
    PutDone(done, &batch);
    HQ_RETURN_IF_ERROR(Write(batch));
    Committed(&touched);
  }
  // Outside the lock: Cancel waits for an expiry action that is running,
  // and that action takes the lock (it then finds the task completed).
  for (LeaseId id : cancel) (void)db_->leases()->Cancel(id);
  // Ordered groups: the lanes after these tasks are free to go on.
  if (record_.ordered && waiters_.load() > 0) Wake();
  return absl::OkStatus();
}

absl::Status GroupImpl::Release(const Task& task, absl::Duration retry_after) {
  if (retry_after < absl::ZeroDuration() ||
      retry_after == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Release: retry_after is ", absl::FormatDuration(retry_after),
        "; it must be finite and not negative"));
  }
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  LeaseId cancel = 0;
  absl::Status s;
  {
    MutexLock l(&mu_);
    HQ_RETURN_IF_ERROR(Usable());
    Lane* lane;
    Rec* rec;
    HQ_RETURN_IF_ERROR(FindHeld(task, /*allow_expired=*/false, &lane, &rec));
    EndInFlight(lane);
    if (record_.ordered) KeepAlive(task.consumer);
    cancel = rec->lease;
    rec->lease = 0;
    if (rec->attempts >= options_.max_attempts) {
      MarkDying(lane, task.id, rec, DeadLetterReason::kReleased);
      s = FlushDying();
    } else {
      AddWaiting(lane, task.id, rec, db_->clock()->Now() + retry_after);
      rec->released = true;
      leveldb::WriteBatch batch;
      PutTask(lane, task.id, rec, &batch);
      s = Write(batch);
    }
  }
  if (cancel != 0) (void)db_->leases()->Cancel(cancel);
  if (s.ok() && waiters_.load() > 0) Wake();
  return s;
}

absl::Status GroupImpl::Extend(Task* task, absl::Duration lease) {
  if (lease < absl::Milliseconds(1) || lease > kMaxLease) {
    return absl::InvalidArgumentError(
        absl::StrCat("Extend: lease is ", absl::FormatDuration(lease),
                     "; it must be in 1ms..720h"));
  }
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  Lane* lane;
  Rec* rec;
  HQ_RETURN_IF_ERROR(FindHeld(*task, /*allow_expired=*/false, &lane, &rec));
  if (record_.ordered) KeepAlive(task->consumer);
  absl::Status s = db_->leases()->Renew(rec->lease, lease);
  if (!s.ok()) {
    // The expiry won the race; its action is waiting for our lock.
    return absl::FailedPreconditionError(
        absl::StrCat(TaskName(*task), " is not held in group '", name_,
                     "': its lease expired"));
  }
  rec->deadline = db_->clock()->Now() + lease;
  task->lease_deadline = rec->deadline;
  return absl::OkStatus();
}

// ------------------------------------------------------------ dead letters

absl::StatusOr<QueueImpl*> GroupImpl::DeadQueue(bool create) {
  const std::string name = dead_letter_queue();
  absl::StatusOr<Queue*> q = db_->OpenQueue(name);
  if (absl::IsNotFound(q.status()) && create) {
    const QueueOptions& qo = queue_->options();
    q = db_->CreateQueue(name, {.partitions = qo.partitions,
                                .priorities = qo.priorities,
                                .layout = qo.layout,
                                .max_payload_bytes = qo.max_payload_bytes});
    if (absl::IsAlreadyExists(q.status())) q = db_->OpenQueue(name);
  }
  if (!q.ok()) return q.status();
  return static_cast<QueueImpl*>(*q);
}

absl::Status GroupImpl::FlushDying() {
  if (dying_.empty()) return absl::OkStatus();
  const absl::Time now = db_->clock()->Now();
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  std::vector<Task> letters;
  std::vector<format::DeadValue> infos;
  std::vector<Lane*> touched;
  std::vector<std::pair<Lane*, MessageId>> done;
  leveldb::WriteBatch extra;
  letters.reserve(dying_.size());
  const MessageId cutoff = queue_->TtlCutoff(now);
  for (auto [lane, id] : dying_) {
    Rec& rec = lane->tasks.find(id)->second;
    Task t;
    // A message past the TTL is gone: it is not dead-lettered.
    absl::StatusOr<bool> found =
        id < cutoff ? false : ReadMessage(lane, id, it.get(), &t);
    if (!found.ok()) return Fail(found.status());
    if (*found) {
      format::DeadValue d;
      d.original_partition = lane->partition;
      d.original_id = id;
      d.priority = lane->priority;
      d.reason = static_cast<uint8_t>(rec.reason);
      d.attempts = rec.attempts;
      d.dead_ms = ToMs(now);
      d.topic = t.topic;
      t.partition = lane->partition;
      t.priority = lane->priority;
      letters.push_back(std::move(t));
      infos.push_back(std::move(d));
    }
    rec.dying = false;
    rec.state = format::TaskState::kDone;
    done.emplace_back(lane, id);
    Touch(lane, &touched);
  }
  dying_.clear();
  for (Lane* lane : touched) Settle(lane, &extra);
  PutDone(done, &extra);
  if (letters.empty()) {
    HQ_RETURN_IF_ERROR(Write(extra));
    Committed(&touched);
    return absl::OkStatus();
  }
  const std::string dead_prefix =
      format::GroupRecordPrefix(format::kDeadTag, queue_->id(), record_.id);
  std::vector<Message> messages(letters.size());
  std::vector<uint32_t> partitions(letters.size());
  std::vector<PutResult> results(letters.size());
  absl::Status s;
  // Twice: the dead-letter queue may be dropped between the lookup and the
  // write; the second attempt creates it again.
  for (int attempt = 0; attempt < 2; ++attempt) {
    absl::StatusOr<QueueImpl*> dead = DeadQueue(/*create=*/true);
    if (!dead.ok()) {
      s = dead.status();
      continue;
    }
    const QueueOptions& dqo = (*dead)->options();
    for (size_t i = 0; i < letters.size(); ++i) {
      const Task& t = letters[i];
      messages[i] =
          Message{.topic = t.topic,
                  .payload = t.payload,
                  .key = t.key,
                  .priority = std::min(t.priority, dqo.priorities - 1)};
      partitions[i] = t.partition % dqo.partitions;
    }
    s = db_->WriteMessages(
        *dead, messages, partitions.data(), results.data(), db_->default_sync(),
        [&](leveldb::WriteBatch* b) {
          std::string k;
          for (size_t i = 0; i < results.size(); ++i) {
            k = dead_prefix;
            coding::PutFixed16(&k, static_cast<uint16_t>(results[i].partition));
            LayoutCodec::AppendMessageId(&k, results[i].id);
            b->Put(k, format::EncodeDead(infos[i]));
          }
          b->Append(extra);
        },
        /*also_live=*/queue_);
    if (s.ok() || queue_->dropped()) break;
  }
  if (!s.ok()) {
    // The tasks are marked done in memory but not on disk: stop here.
    if (!queue_->dropped() && broken_.ok()) {
      broken_ = absl::FailedPreconditionError(absl::StrCat(
          "consumer group '", name_,
          "' could not write dead letters (reopen the Db): ", s.ToString()));
    }
    return s;
  }
  dead_count_ += letters.size();
  Committed(&touched);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DeadLetter>> GroupImpl::ListDeadLetters(
    size_t max, const DeadLetter* after) {
  if (max < 1 || max > 10000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ListDeadLetters: max is %d; it must be in 1..10000", max));
  }
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  HQ_RETURN_IF_ERROR(FlushDying());
  HQ_RETURN_IF_ERROR(ForgetDeadIfQueueGone());
  std::vector<DeadLetter> out;
  absl::StatusOr<QueueImpl*> dead = DeadQueue(/*create=*/false);
  if (absl::IsNotFound(dead.status())) return out;
  if (!dead.ok()) return dead.status();
  if (after != nullptr && after->partition >= (*dead)->options().partitions) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ListDeadLetters: after.partition %d is out of range 0..%d",
        after->partition, (*dead)->options().partitions - 1));
  }
  leveldb::WriteBatch gone;  // Dead records whose message was removed.
  uint64_t gone_count = 0;
  const std::string prefix =
      format::GroupRecordPrefix(format::kDeadTag, queue_->id(), record_.id);
  std::string seek = prefix;
  if (after != nullptr) {
    coding::PutFixed16(&seek, static_cast<uint16_t>(after->partition));
    LayoutCodec::AppendMessageId(&seek, after->id);
    seek.push_back('\0');  // Just past `after`.
  }
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  std::string message_key, value;
  for (it->Seek(seek);
       it->Valid() && out.size() < max && View(it->key()).starts_with(prefix);
       it->Next()) {
    std::string_view key = View(it->key()).substr(prefix.size());
    format::DeadValue d;
    uint16_t partition;
    if (key.size() != 2 + LayoutCodec::kMessageIdSize ||
        !coding::GetFixed16(&key, &partition) ||
        !format::DecodeDead(View(it->value()), &d)) {
      return absl::DataLossError(absl::StrCat(
          "consumer group '", name_, "': malformed dead-letter record"));
    }
    DeadLetter letter;
    letter.partition = partition;
    letter.id = LayoutCodec::DecodeMessageId(key.data());
    letter.original_partition = d.original_partition;
    letter.original_id = d.original_id;
    letter.priority = d.priority;
    letter.topic = d.topic;
    letter.attempts = d.attempts;
    letter.reason = static_cast<DeadLetterReason>(d.reason);
    letter.dead_at = absl::FromUnixMillis(static_cast<int64_t>(d.dead_ms));
    message_key.clear();
    (*dead)->codec().AppendMessageKey(
        &message_key, (*dead)->id(), partition,
        std::min(d.priority, (*dead)->options().priorities - 1), d.topic,
        letter.id);
    leveldb::Status s =
        CheckedGet(db_->leveldb(), CheckedReadOptions(), message_key, &value);
    if (s.IsNotFound()) {
      // Removed from the dead-letter queue (TTL set by hand, a tool).
      gone.Delete(it->key());
      ++gone_count;
      continue;
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a dead letter"));
    std::string_view k, payload;
    if (!format::DecodeMessageValue(value, &k, &payload)) {
      return absl::DataLossError("malformed dead letter");
    }
    letter.key.assign(k);
    letter.payload.assign(payload);
    out.push_back(std::move(letter));
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading dead letters"));
  HQ_RETURN_IF_ERROR(Write(gone));
  dead_count_ -= std::min(dead_count_, gone_count);
  return out;
}

absl::Status GroupImpl::Requeue(std::span<const DeadLetter> letters,
                                std::vector<PutResult>* results) {
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  if (letters.empty()) {
    if (results != nullptr) results->clear();
    return absl::OkStatus();
  }
  std::vector<PutResult> local(letters.size());
  {
    MutexLock l(&mu_);
    HQ_RETURN_IF_ERROR(Usable());
    absl::StatusOr<QueueImpl*> dead = DeadQueue(/*create=*/false);
    if (!dead.ok()) return dead.status();
    const std::string prefix =
        format::GroupRecordPrefix(format::kDeadTag, queue_->id(), record_.id);
    std::vector<std::string> keys, payloads, message_keys, topics;
    std::vector<Message> messages(letters.size());
    std::vector<uint32_t> partitions(letters.size());
    absl::flat_hash_set<std::string> seen;
    std::string value;
    for (const DeadLetter& letter : letters) {
      auto not_found = [&] {
        return absl::NotFoundError(absl::StrFormat(
            "dead letter %d/%s is not in the dead-letter queue of group '%s'",
            letter.partition, letter.id.ToString(), name_));
      };
      if (letter.partition >= (*dead)->options().partitions) {
        return not_found();
      }
      std::string k = prefix;
      coding::PutFixed16(&k, static_cast<uint16_t>(letter.partition));
      LayoutCodec::AppendMessageId(&k, letter.id);
      if (!seen.insert(k).second) {
        return absl::InvalidArgumentError(
            absl::StrFormat("dead letter %d/%s appears twice", letter.partition,
                            letter.id.ToString()));
      }
      leveldb::Status s =
          CheckedGet(db_->leveldb(), CheckedReadOptions(), k, &value);
      if (s.IsNotFound()) return not_found();
      HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a dead letter"));
      format::DeadValue d;
      if (!format::DecodeDead(value, &d)) {
        return absl::DataLossError("malformed dead-letter record");
      }
      std::string mk;
      (*dead)->codec().AppendMessageKey(
          &mk, (*dead)->id(), letter.partition,
          std::min(d.priority, (*dead)->options().priorities - 1), d.topic,
          letter.id);
      s = CheckedGet(db_->leveldb(), CheckedReadOptions(), mk, &value);
      if (s.IsNotFound()) return not_found();
      HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a dead letter"));
      std::string_view key, payload;
      if (!format::DecodeMessageValue(value, &key, &payload)) {
        return absl::DataLossError("malformed dead letter");
      }
      keys.emplace_back(key);
      payloads.emplace_back(payload);
      topics.push_back(d.topic);
      message_keys.push_back(std::move(mk));
      message_keys.push_back(std::move(k));
      partitions[topics.size() - 1] =
          std::min(d.original_partition, queue_->options().partitions - 1);
      messages[topics.size() - 1].priority =
          std::min(d.priority, queue_->options().priorities - 1);
    }
    for (size_t i = 0; i < messages.size(); ++i) {
      messages[i].topic = topics[i];
      messages[i].key = keys[i];
      messages[i].payload = payloads[i];
    }
    HQ_RETURN_IF_ERROR(
        db_->WriteMessages(queue_, messages, partitions.data(), local.data(),
                           db_->default_sync(), [&](leveldb::WriteBatch* b) {
                             for (const std::string& k : message_keys)
                               b->Delete(k);
                           }));
    dead_count_ -= std::min<uint64_t>(dead_count_, letters.size());
  }
  if (results != nullptr) *results = std::move(local);
  return absl::OkStatus();
}

// ------------------------------------------------------------------ stats

absl::StatusOr<GroupStats> GroupImpl::Stats() {
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  HQ_RETURN_IF_ERROR(Fail(TakeNotes()));
  HQ_RETURN_IF_ERROR(ForgetDeadIfQueueGone());
  const absl::Time now = db_->clock()->Now();
  const MessageId cutoff = queue_->TtlCutoff(now);
  const bool has_topic = queue_->codec().lane_has_topic();
  GroupStats st;
  st.in_flight = in_flight_;
  st.redelivery = waiting_count_;
  st.dead_letters = dead_count_ + dying_.size();
  st.lanes = lanes_.size();
  st.consumers = consumers_.size();
  absl::Time oldest = absl::InfiniteFuture();
  for (const auto& [prefix, lane] : lanes_) {
    st.window_records += lane->tasks.size();
    if (lane->done < lane->scan) {
      st.max_cursor_lag =
          std::max(st.max_cursor_lag, lane->scan.time() - lane->done.time());
    }
    for (const auto& [id, rec] : lane->tasks) {
      if (rec.state == format::TaskState::kInFlight) {
        oldest = std::min(oldest, rec.since);
      } else if (rec.state == format::TaskState::kWaiting &&
                 rec.attempts == 0 && !rec.dying) {
        ++st.delayed;
      }
    }
  }
  if (oldest != absl::InfiniteFuture()) st.oldest_in_flight = now - oldest;
  st.redelivery -= st.delayed;

  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  std::string seek;
  std::vector<Lane*> active;
  ForEachActive([&](Lane* lane) { active.push_back(lane); });
  {
    for (Lane* lane : active) {
      if (!st.backlog_exact) break;
      const size_t n = lane->prefix.size();
      seek = lane->prefix;
      LayoutCodec::AppendMessageId(&seek, std::max(lane->scan, cutoff));
      MessageId id;
      for (it->Seek(seek); it->Valid(); it->Next()) {
        const std::string_view key = View(it->key());
        if (!LayoutCodec::LaneMessage(key, lane->prefix, &id)) break;
        if (lane->tasks.contains(id)) continue;
        if (!has_topic && !InScope(key.substr(n + 8))) continue;
        if (st.backlog == kStatsCountLimit) {
          st.backlog_exact = false;  // A lower bound.
          break;
        }
        ++st.backlog;
      }
      HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "counting the backlog"));
    }
  }
  return st;
}

}  // namespace hq
