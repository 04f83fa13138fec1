// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/subscription_impl.h"

#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "lib/consume/consume_options.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

// Messages read from one lane before the next lane's turn, and keys looked
// at (a time-layout lane with a topic filter reads past other topics).
constexpr size_t kReadChunk = 128;
constexpr size_t kScanChunk = 8 * kReadChunk;
// Lanes taken from the source by one slice (a directory walk over drained
// lanes, or stale hints, must not hold the lock for long: the slice is run
// again).
constexpr size_t kPageInBudget = 256;
// The most buffer space an emptied lane buffer keeps for the lane's next
// turn (a turn reads up to kReadChunk messages).
constexpr size_t kKeptBufferBytes = 32 << 10;
// The most delivered singles whose space WriteCheckpoints keeps.
constexpr size_t kKeptSingles = 4096;

}  // namespace

SubscriptionImpl::SubscriptionImpl(DbImpl* db, QueueImpl* queue,
                                   std::string name,
                                   const format::SubRecord& record,
                                   const SubscribeOptions& options,
                                   MessageListener* listener)
    : LaneSetHooks(&mu_, &lanes_),
      db_(db),
      queue_(queue),
      pool_(db->delivery_pool()),
      name_(std::move(name)),
      record_(record),
      topic_set_(record.topics.begin(), record.topics.end()),
      options_(options),
      listeners_{listener},
      lanes_(absl::StrCat("subscription '", name_, "'"),
             queue->codec().lane_has_topic(), queue->options().partitions,
             queue->options().priorities,
             queue->codec().lane_has_topic()
                 ? std::make_unique<LaneSource>(db, queue, record.id)
                 : nullptr) {
  MutexLock l(&mu_);
  lanes_.SetMaxActive(options.max_active_lanes);
  singles_of_.assign(queue_->options().priorities, 0);
  if (!record_.partitions.empty()) {
    partition_set_.assign(queue_->options().partitions, false);
    for (uint32_t p : record_.partitions) partition_set_[p] = true;
  }
}

SubscriptionImpl::~SubscriptionImpl() = default;

bool SubscriptionImpl::InScope(uint32_t partition,
                               std::string_view topic) const {
  if (!partition_set_.empty() && !partition_set_[partition]) return false;
  return topic_set_.empty() || topic_set_.contains(Av(topic));
}

std::string SubscriptionImpl::CheckpointKey(
    std::string_view lane_prefix) const {
  std::string k = format::GroupRecordPrefix(format::kCheckpointTag,
                                            queue_->id(), record_.id);
  format::AppendLaneRest(&k, lane_prefix);
  return k;
}

absl::Status SubscriptionImpl::Fail(absl::Status s) {
  return RecordStickyError(&broken_, "subscription", name_, std::move(s));
}

absl::Status SubscriptionImpl::AddListener(MessageListener* listener,
                                           const SubscribeOptions& options) {
  MutexLock l(&mu_);
  if (std::find(listeners_.begin(), listeners_.end(), listener) !=
      listeners_.end()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the listener is already one of subscription '", name_, "'"));
  }
  listeners_.push_back(listener);
  options_ = options;
  lanes_.SetMaxActive(options.max_active_lanes);
  return absl::OkStatus();
}

// ------------------------------------------------------------------ lanes

absl::StatusOr<SubscriptionImpl::Lane*> SubscriptionImpl::GetLane(
    std::string_view prefix, const MessageId* checkpoint) {
  if (Lane* lane = lanes_.Find(prefix)) return lane;
  return ReadIn(std::string(prefix), checkpoint);
}

absl::StatusOr<SubscriptionImpl::Lane*> SubscriptionImpl::ReadIn(
    std::string prefix, const MessageId* checkpoint) {
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Lane> lane,
                      lanes_.Make(std::move(prefix)));
  // Without a record: at its floor if the walk passed it, else at the start.
  bool floored;
  MessageId at =
      Absent(lane->prefix, lane->partition, lane->priority, &floored);
  lane->written_exists = floored;
  if (checkpoint != nullptr) {
    at = *checkpoint;
    lane->written_exists = lane->record = true;
  } else if (paged() &&
             !checkpoint_ceiling_.MayExist(CheckpointKey(lane->prefix))) {
    // No checkpoint record.
  } else {
    std::string value;
    leveldb::Status s = CheckedGet(db_->leveldb(), CheckedReadOptions(),
                                   CheckpointKey(lane->prefix), &value);
    if (s.ok()) {
      if (!format::DecodeCheckpoint(value, &at)) {
        return absl::DataLossError(absl::StrCat(
            "subscription '", name_, "': malformed checkpoint record"));
      }
      lane->written_exists = lane->record = true;
    } else if (!s.IsNotFound()) {
      return FromLevelDb(s, "reading a subscription checkpoint");
    }
  }
  lane->read = at;
  lane->written = at;
  return lanes_.Insert(std::move(lane));
}

MessageId SubscriptionImpl::Absent(std::string_view prefix, uint32_t partition,
                                   int priority, bool* floored) const {
  const MessageId start = record_.StartOf(partition);
  MessageId floor;
  *floored = paged() && source()->Floor(prefix, partition, priority, &floor);
  return *floored ? std::max(start, floor) : start;
}

bool SubscriptionImpl::FloorMayCover(const Lane& lane) const {
  if (!paged() || lane.record || !lane.at_end || lane.rehint || !Idle(lane)) {
    return false;
  }
  // Every message of the partition below its floor was stored before the
  // source record, so the turn that read the lane to its end saw each of
  // them from its checkpoint on, and all were delivered: there are none
  // from the checkpoint up to the floor.
  return FloorAtOrPast(lane.partition, lane.next());
}

bool SubscriptionImpl::FloorAtOrPast(uint32_t partition,
                                     MessageId checkpoint) const {
  MessageId floor;
  return source()->Floor(partition, &floor) &&
         !(std::max(record_.StartOf(partition), floor) < checkpoint);
}

void SubscriptionImpl::Activate(Lane* lane) {
  lane->at_end = false;
  if (lane->blocked) {  // Read again after its head is delivered.
    lane->reread = true;
    return;
  }
  lane->rehint = false;
  if (lanes_.Enter(lane)) active_.push_back(lane);
}

uint64_t SubscriptionImpl::TEST_LaneReads() {
  MutexLock l(&mu_);
  return test_lane_reads_;
}

size_t SubscriptionImpl::TEST_ValueChunks() {
  MutexLock l(&mu_);
  return chunks_.size();
}

void SubscriptionImpl::TEST_SetPassHook(std::function<void()> hook) {
  MutexLock l(&mu_);
  test_pass_hook_ = std::move(hook);
}

bool SubscriptionImpl::Idle(const Lane& lane) {
  return !lane.active && !lane.ready && !lane.blocked && lane.buf.empty();
}

void SubscriptionImpl::NoteLaneWritten(std::string_view lane_prefix)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  lanes_.Note(lane_prefix);  // Thread-safe: without mu_.
  pool_->Schedule(this);
}

bool SubscriptionImpl::SourcePending() const {
  return lanes_.SourcePending(queue_->options().priorities);
}

bool SubscriptionImpl::SourceWaiting() const {
  return active_.size() >= MaxActive() && SourcePending();
}

bool SubscriptionImpl::SourceHasMore() const {
  return active_.size() < MaxActive() && !Full() &&
         (SourcePending() || lanes_.PagedNotesPending());
}

absl::Status SubscriptionImpl::Admit(LaneSource::Taken* t,
                                     leveldb::Iterator* it) {
  if (t->only && active_.empty() && !Full()) {
    bool done = false;
    HQ_RETURN_IF_ERROR(AdmitSingle(t, &done));
    if (done) return absl::OkStatus();
  } else if (t->hold.seq > 0) {
    // A hint may name a Single's lane (walks come before hints, so only
    // once a priority's walk is over): they become Lanes first.
    HQ_RETURN_IF_ERROR(Promote(t->hold.priority));
  }
  // Run under mu_, which the caller of Admit holds.
  HQ_ASSIGN_OR_RETURN(
      Lane * lane, lanes_.Admit(
                       t,
                       [&](uint32_t partition, std::string_view topic) {
                         return InScope(partition, topic);
                       },
                       [&](std::string prefix) ABSL_NO_THREAD_SAFETY_ANALYSIS {
                         return ReadIn(std::move(prefix));
                       }));
  if (lane == nullptr) return absl::OkStatus();
  if (active_.empty() && !lane->active && !lane->blocked &&
      lanes_.Walked(*lane) && !Full()) {
    // Its turn now, without a read: the walk saw all it holds. (Not while
    // lanes wait in the working set: the lanes' turns keep the source's
    // order, so that the position passes lanes as they are delivered.)
    return Turn(lane, it, /*behind=*/false);
  }
  Activate(lane);
  return absl::OkStatus();
}

absl::Status SubscriptionImpl::PageIn(leveldb::Iterator* it) {
  size_t budget = kPageInBudget;
  for (int p = queue_->options().priorities - 1; p >= 0; --p) {
    while (budget > 0 && active_.size() < MaxActive() && !Full() &&
           source()->pending(p)) {
      // No more lanes than the buffers have room for messages: each lane
      // the walk saw hold one message then has its turn at once (Admit).
      const size_t room = options_.buffer_messages - (buffered_ - blocked_);
      size_t taken;
      HQ_RETURN_IF_ERROR(lanes_.Page(
          p, std::min({budget, MaxActive() - active_.size(), room}), it,
          [&](LaneSource::Taken* t)
              ABSL_NO_THREAD_SAFETY_ANALYSIS { return Admit(t, it); },
          &taken));
      if (taken == 0) break;
      budget -= taken;
    }
  }
  return absl::OkStatus();
}

absl::Status SubscriptionImpl::TakeNotes() {
  // Paged: nothing (PageIn reads the source).
  const bool has_topic = queue_->codec().lane_has_topic();
  // Runs under mu_, which the caller of TakeNotes holds.
  auto activate = [&](const NotedLane& noted)
                      ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
    // A time-layout lane is in scope if its partition is (the reader skips
    // other topics).
    if (!partition_set_.empty() && !partition_set_[noted.partition]) {
      return absl::OkStatus();
    }
    if (has_topic && !InScope(noted.partition, noted.topic)) {
      return absl::OkStatus();
    }
    HQ_ASSIGN_OR_RETURN(Lane * lane, GetLane(noted.prefix));
    Activate(lane);
    return absl::OkStatus();
  };
  return lanes_.TakeNotes(activate);
}

absl::Status SubscriptionImpl::Load() {
  MutexLock l(&mu_);
  if (paged()) {
    HQ_RETURN_IF_ERROR(checkpoint_ceiling_.Load(
        db_->leveldb(), format::GroupRecordPrefix(format::kCheckpointTag,
                                                  queue_->id(), record_.id)));
    return source()->Load();
  }
  // The lanes joined with the checkpoints; each lane in scope is sought at
  // its checkpoint.
  const bool has_topic = queue_->codec().lane_has_topic();
  const MessageId cutoff = queue_->TtlCutoff(db_->clock()->Now());
  std::unique_ptr<leveldb::Iterator> msg(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  return queue_->WalkLanes(
      format::GroupRecordPrefix(format::kCheckpointTag, queue_->id(),
                                record_.id),
      [&](const QueueImpl::LaneEntry& e)
          ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
            if (!partition_set_.empty() && !partition_set_[e.partition]) {
              return absl::OkStatus();
            }
            if (has_topic && !InScope(e.partition, e.topic)) {
              return absl::OkStatus();
            }
            MessageId at = record_.StartOf(e.partition);
            if (e.record != nullptr &&
                !format::DecodeCheckpoint(*e.record, &at)) {
              return absl::DataLossError(absl::StrCat(
                  "subscription '", name_, "': malformed checkpoint record"));
            }
            HQ_ASSIGN_OR_RETURN(bool has_work,
                                QueueImpl::LaneHasMessageFrom(
                                    msg.get(), e.prefix, std::max(at, cutoff)));
            if (!has_work) return absl::OkStatus();
            HQ_ASSIGN_OR_RETURN(
                Lane * lane,
                GetLane(e.prefix, e.record != nullptr ? &at : nullptr));
            Activate(lane);
            return absl::OkStatus();
          });
}

void SubscriptionImpl::Start() {
  {
    MutexLock l(&mu_);
    started_ = true;
  }
  pool_->Schedule(this);
}

// ------------------------------------------------------------ the reader

bool SubscriptionImpl::Full() const {
  // A lane waiting for a retry holds only its head message, not counted
  // here: it must not keep the other lanes from being read.
  return buffered_ - blocked_ >= options_.buffer_messages ||
         buffered_bytes_ - blocked_bytes_ >= options_.buffer_bytes;
}

absl::Status SubscriptionImpl::Fill() {
  if (Full()) return absl::OkStatus();
  cutoff_ = queue_->TtlCutoff(db_->clock()->Now());
  // The write path's notes first, then the iterator: it sees every write
  // they stand for (taken after, a note could be spent on a pass that
  // cannot see its hint, and the hint would wait for the next write).
  if (paged()) lanes_.TakePagedNotes();
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  if (test_pass_hook_) test_pass_hook_();
  lanes_.BeginPass();  // What an earlier Fill's walk kept is of its iterator.
  // However the pass ends, the singles it paged in get their values' chunk.
  absl::Cleanup seal = [this]()
                           ABSL_NO_THREAD_SAFETY_ANALYSIS { SealValues(); };
  if (paged()) HQ_RETURN_IF_ERROR(PageIn(it.get()));
  // Paged, with lanes waiting on disk: a lane that had its turn and still
  // has messages goes behind them.
  const bool behind = SourceWaiting();
  const size_t lanes = active_.size();
  for (size_t k = 0; k < lanes && !Full(); ++k) {
    Lane* lane = active_.front();
    active_.pop_front();
    if (lane->blocked) {  // Waiting for a retry: read again after it.
      lanes_.Leave(lane);
      lane->reread = true;
      Touch(lane);
      continue;
    }
    HQ_RETURN_IF_ERROR(Turn(lane, it.get(), behind));
  }
  // The kept values are of this Fill's iterator: a large buffer is not
  // held between slices.
  lanes_.EndPass();
  return absl::OkStatus();
}

absl::Status SubscriptionImpl::Turn(Lane* lane, leveldb::Iterator* it,
                                    bool behind) {
  if (lane->read < cutoff_) lane->read = cutoff_;  // Expired: skipped.
  bool drained = true;
  std::string_view value;
  if (const LaneSource::Kept* m = lanes_.TakeWalked(lane, &value)) {
    // This Fill's walk saw, with `it`, the lane hold one message: all a
    // read would find (and the buffer has room for one: !Full()).
    if (lane->read <= m->id) {
      HQ_RETURN_IF_ERROR(Buffer(lane, m->id, lane->topic, value));
      lane->read = m->id.Next();
    }
  } else {
    HQ_RETURN_IF_ERROR(ReadTurn(lane, it, &drained));
  }
  EndTurn(lane, drained, behind);
  return absl::OkStatus();
}

void SubscriptionImpl::EndTurn(Lane* lane, bool drained, bool behind) {
  lane->at_end = drained;
  if (drained || behind) {
    if (lane->active) lanes_.Leave(lane);
    lane->rehint = !drained;
    if (lane->rehint && lane->buf.empty()) rotated_idle_ = true;
  } else {
    active_.push_back(lane);
  }
  if (!lane->buf.empty() && !lane->ready) {
    lane->ready = true;
    ready_.push_back(lane);
  }
  if (paged() && drained && Idle(*lane) && !Dirty(*lane) && !lane->touched) {
    // Nothing new (a stale hint, or a lane the walk found drained): its
    // checkpoint is as written, so it lets the position go at once.
    lanes_.LetGo(lane);
    lanes_.Erase(lane);
  } else if (!lane->active) {
    Touch(lane);
  }
}

absl::Status SubscriptionImpl::ReadTurn(Lane* lane, leveldb::Iterator* it,
                                        bool* drained) {
  const bool has_topic = queue_->codec().lane_has_topic();
  const size_t n = lane->prefix.size();
  std::string seek = lane->prefix;
  LayoutCodec::AppendMessageId(&seek, lane->read);
  size_t taken = 0, scanned = 0;
  MessageId id;
  *drained = true;
  ++test_lane_reads_;
  for (it->Seek(seek); it->Valid(); it->Next()) {
    const std::string_view key = View(it->key());
    if (!LayoutCodec::LaneMessage(key, lane->prefix, &id)) break;
    // A bounded turn, also past messages of other topics.
    if (taken == kReadChunk || scanned == kScanChunk || Full()) {
      *drained = false;
      break;
    }
    ++scanned;
    const std::string_view topic =
        has_topic ? std::string_view(lane->topic)
                  : key.substr(n + LayoutCodec::kMessageIdSize);
    lane->read = id.Next();
    if (!has_topic && !topic_set_.empty() && !topic_set_.contains(Av(topic))) {
      continue;
    }
    HQ_RETURN_IF_ERROR(Buffer(lane, id, topic, View(it->value())));
    ++taken;
  }
  return FromLevelDb(it->status(), "reading a lane");
}

absl::Status SubscriptionImpl::Decode(MessageId id, std::string_view value,
                                      Buffered* b) const {
  std::string_view mkey, payload;
  uint64_t not_before_ms;
  if (!format::DecodeMessageValue(value, &mkey, &payload, &not_before_ms)) {
    return MalformedMessage(id);
  }
  b->id = id;
  b->key.assign(mkey);
  b->payload.assign(payload);
  b->not_before = format::NotBeforeTime(not_before_ms);
  return absl::OkStatus();
}

absl::Status SubscriptionImpl::Buffer(Lane* lane, MessageId id,
                                      std::string_view topic,
                                      std::string_view value) {
  Buffered& b = lane->buf.emplace_back();
  if (absl::Status s = Decode(id, value, &b); !s.ok()) {
    lane->buf.pop_back();
    return s;
  }
  if (!queue_->codec().lane_has_topic()) b.topic.assign(topic);
  ++buffered_;
  buffered_bytes_ += b.payload.size();
  return absl::OkStatus();
}

// ------------------------------------------------------------ the sender

size_t SubscriptionImpl::Deliver(Lane* lane, size_t budget,
                                 const std::vector<MessageListener*>& listeners,
                                 bool* checkpoint_due) {
  // Only this (running) slice changes lane->buf, so its front stays put
  // while the listeners run without the lock.
  size_t delivered = 0;
  while (delivered < budget) {
    const Buffered* b;
    size_t first;
    {
      MutexLock l(&mu_);
      if (lane->buf.empty()) break;
      b = &lane->buf.front();
      first = lane->resume;
    }
    MessageView view;
    view.id = b->id;
    view.partition = lane->partition;
    view.priority = lane->priority;
    view.topic = queue_->codec().lane_has_topic() ? lane->topic : b->topic;
    view.key = b->key;
    view.payload = b->payload;
    view.not_before = b->not_before;
    size_t i = first;
    for (; i < listeners.size(); ++i) {
      if (!listeners[i]->OnMessage(view).ok()) break;
    }
    MutexLock l(&mu_);
    Touch(lane);
    if (i < listeners.size()) {
      Refused(lane, i);
      break;
    }
    if (lane->blocked) {
      lane->blocked = false;
      blocked_ -= 1;
      blocked_bytes_ -= b->payload.size();
      if (lane->reread) {
        lane->reread = false;
        Activate(lane);
      }
    }
    buffered_ -= 1;
    buffered_bytes_ -= b->payload.size();
    lane->buf.pop_front();
    // An emptied buffer keeps its space for the lane's next turn, unless
    // the lane left the working set (it may stay in memory until its
    // checkpoint is written) or the space is large.
    if (lane->buf.empty() &&
        (!lane->active || lane->buf.heap_bytes() > kKeptBufferBytes)) {
      lane->buf.shrink_to_fit();
    }
    lane->resume = 0;
    lane->failures = 0;
    lane->delivered = true;
    ++delivered;
    if (Delivered()) {
      *checkpoint_due = true;
      break;
    }
  }
  return delivered;
}

bool SubscriptionImpl::Delivered() {
  ++delivered_;
  ++since_checkpoint_;
  // Every checkpoint_messages deliveries the slice stops delivering and
  // writes the checkpoints (RunSlice, once the lanes it delivered are
  // idle): that bounds what a crash delivers again.
  return since_checkpoint_ >= options_.checkpoint_messages;
}

void SubscriptionImpl::Refused(Lane* lane, size_t refused) {
  // This lane waits; the message and those after it stay.
  ++failed_;
  lane->resume = refused;
  lane->failures += 1;
  absl::Duration d = options_.retry_base;
  for (uint32_t n = 1; n < lane->failures && d < options_.retry_cap; ++n) {
    d *= 2;
  }
  d = std::min(d, options_.retry_cap);
  lane->retry_at = db_->clock()->Now() + d;
  ArmTimer(d, /*checkpoint=*/false);
  if (lane->blocked) return;
  // Keep only the head: the rest is read again after the retry, so that a
  // lane that waits does not fill the buffer.
  if (lane->buf.size() > 1) {
    lane->read = lane->buf[1].id;
    while (lane->buf.size() > 1) {
      buffered_ -= 1;
      buffered_bytes_ -= lane->buf.back().payload.size();
      lane->buf.pop_back();
    }
    lane->reread = true;
  }
  if (lane->active) lane->reread = true;  // Fill takes it out.
  lane->blocked = true;
  blocked_ += 1;
  blocked_bytes_ += lane->buf.front().payload.size();
}

void SubscriptionImpl::ArmTimer(absl::Duration after, bool checkpoint) {
  auto id = std::make_shared<LeaseId>(0);
  absl::StatusOr<LeaseId> created =
      db_->leases()->Create(after, [this, id, checkpoint] {
        {
          MutexLock l(&mu_);
          if (checkpoint) {
            checkpoint_timer_ = false;
            checkpoint_due_ = true;
          }
        }
        pool_->Schedule(this);
        // Last: until the id leaves timers_, Stop cancels it, which waits
        // for this action to return.
        MutexLock l(&mu_);
        timers_.erase(*id);
      });
  if (!created.ok()) return;  // The Db is closing.
  *id = *created;
  timers_.insert(*created);
  if (checkpoint) checkpoint_timer_ = true;
}

bool SubscriptionImpl::RunSlice() {
  DbImpl::OpScope op(db_);
  if (!op.status().ok()) return false;
  std::vector<Lane*> todo;
  std::vector<MessageListener*> listeners;
  bool singles;
  {
    MutexLock l(&mu_);
    if (!started_ || stopped_ || !broken_.ok() || queue_->dropped()) {
      return false;
    }
    if (!Fail(TakeNotes()).ok() || !Fail(Fill()).ok()) return false;
    if (checkpoint_due_ && !Fail(WriteCheckpoints()).ok()) return false;
    // Lanes whose turn it is, skipping those waiting for a retry.
    const absl::Time now = db_->clock()->Now();
    for (size_t k = 0, n = ready_.size(); k < n; ++k) {
      Lane* lane = ready_.front();
      ready_.pop_front();
      if (lane->retry_at > now) {
        ready_.push_back(lane);
      } else {
        todo.push_back(lane);
      }
    }
    listeners = listeners_;
    singles = !singles_.empty();
  }
  size_t budget = kMessagesPerSlice;
  size_t next = 0;
  bool checkpoint_due = false;
  if (singles) {
    // The singles first, leaving half the slice to lanes that wait.
    budget -= DeliverSingles(todo.empty() ? budget : budget / 2, listeners,
                             &checkpoint_due);
  }
  for (; next < todo.size() && budget > 0 && !checkpoint_due; ++next) {
    budget -= Deliver(todo[next], budget, listeners, &checkpoint_due);
  }
  MutexLock l(&mu_);
  if (!broken_.ok()) return false;
  bool more = !singles_.empty();
  const absl::Time now = db_->clock()->Now();
  for (size_t k = 0; k < todo.size(); ++k) {
    Lane* lane = todo[k];
    if (lane->buf.empty()) {
      lane->ready = false;
      if (lane->rehint) rotated_idle_ = true;
      Touch(lane);
    } else {
      ready_.push_back(lane);
      if (lane->retry_at <= now) more = true;  // Its turn was cut short.
    }
  }
  if (since_checkpoint_ >= options_.checkpoint_messages || rotated_idle_) {
    // Lanes that left the active ones with messages to read go behind the
    // lanes waiting on disk now: with their new hints.
    if (rotated_idle_) more = true;
    if (!Fail(WriteCheckpoints()).ok()) return false;
  } else if ((since_checkpoint_ > 0 || (paged() && source()->Moved())) &&
             !checkpoint_timer_) {
    ArmTimer(options_.checkpoint_interval, /*checkpoint=*/true);
  }
  if (!active_.empty() && !Full()) more = true;
  if (SourceHasMore()) more = true;
  return more;
}

// ------------------------------------------------------------ checkpoints

bool SubscriptionImpl::Dirty(const Lane& lane) const {
  return lane.written_exists
             ? !(lane.written == lane.next())
             : !(lane.next() == record_.StartOf(lane.partition));
}

void SubscriptionImpl::Touch(Lane* lane) {
  if (lane->touched) return;
  lane->touched = true;
  touched_.push_back(lane);
}

absl::Status SubscriptionImpl::WriteCheckpoints(bool all) {
  checkpoint_due_ = false;
  rotated_idle_ = false;
  // The lanes to look at: all, or those touched since the last write.
  std::vector<Lane*> visit;
  if (all) {
    visit.reserve(lanes_.size());
    for (auto& [prefix, lane] : lanes_) visit.push_back(lane.get());
    touched_.clear();
  } else {
    visit.swap(touched_);
  }
  for (Lane* lane : visit) lane->touched = false;
  leveldb::WriteBatch batch;
  std::vector<Lane*> wrote;
  // Lanes whose checkpoint their floor may imply: written only if the
  // position this batch writes does not pass them.
  std::vector<Lane*> floored;
  // Paged: idle lanes let the position go in this batch, with a new hint
  // if they left the active lanes with messages to read.
  std::vector<std::string> rehint;
  auto put_record = [&](std::string_view prefix, MessageId checkpoint) {
    const std::string key = CheckpointKey(prefix);
    batch.Put(key, format::EncodeCheckpoint(checkpoint));
    checkpoint_ceiling_.Raise(key);
  };
  auto put = [&](Lane* lane) {
    put_record(lane->prefix, lane->next());
    wrote.push_back(lane);
  };
  for (Lane* lane : visit) {
    // A lane that delivered nothing since its checkpoint was written keeps
    // it until it does, or is idle: its new one would only skip ids that
    // are not messages of the lane.
    if (Dirty(*lane) && (lane->delivered || Idle(*lane))) {
      if (FloorMayCover(*lane)) {
        floored.push_back(lane);
      } else {
        put(lane);
      }
    }
    if (paged() && Idle(*lane) && lanes_.LetGo(lane) && lane->rehint) {
      rehint.emplace_back(lane->prefix);
    }
  }
  // Delivered singles let the position go in this batch (the vector keeps
  // its space for the next ones while singles wait, unless it is large).
  std::vector<Single> singles;
  singles.swap(passed_singles_);
  absl::Cleanup keep = [&] {
    singles.clear();
    // While singles wait, the next ones come soon.
    if (singles.capacity() <= kKeptSingles && !singles_.empty()) {
      passed_singles_.swap(singles);
    }
  };
  for (const Single& single : singles) {
    source()->Release(single.hold);
    --singles_of_[single.priority];
  }
  const bool moved = paged() && source()->AppendRecord(&batch);
  // A single's checkpoint, as a Lane's (FloorMayCover): implied by its
  // floor if the position passes it, else written.
  bool single_records = false;
  for (const Single& single : singles) {
    const MessageId next = single.id.Next();
    if (FloorAtOrPast(single.partition, next) &&
        source()->Passed(single.prefix, single.priority)) {
      continue;
    }
    put_record(single.prefix, next);
    single_records = true;
  }
  // A lane the position (as written by this batch) passes has its
  // checkpoint at its floor; the others get their record.
  std::vector<Lane*> implied;
  for (Lane* lane : floored) {
    if (source()->Passed(lane->prefix, lane->priority)) {
      implied.push_back(lane);
    } else {
      put(lane);
    }
  }
  if (!rehint.empty()) {
    HQ_RETURN_IF_ERROR(db_->WriteWithHints(
        queue_, db_->default_sync(),
        [&](DbImpl::HintWriter* hints, leveldb::WriteBatch* b) {
          b->Append(batch);
          for (const std::string& lane : rehint) hints->Append(lane);
        }));
    source()->NoteWritten();  // The new hints are to be read.
  } else if (!wrote.empty() || moved || single_records) {
    HQ_RETURN_IF_ERROR(db_->WriteRecords(queue_, batch, db_->default_sync()));
  }
  for (Lane* lane : wrote) {
    lane->written = lane->next();
    lane->written_exists = lane->record = true;
    lane->delivered = false;
  }
  for (Lane* lane : implied) {
    lane->written = lane->next();
    lane->written_exists = true;
    lane->delivered = false;
  }
  since_checkpoint_ = 0;
  // Idle lanes, their checkpoints on disk: forgotten. The others are
  // touched again when they deliver or leave the working set.
  for (Lane* lane : visit) {
    if (Idle(*lane) && !Dirty(*lane) && !lane->hold.held()) {
      lanes_.Erase(lane);
    }
  }
  return absl::OkStatus();
}

absl::Status SubscriptionImpl::Checkpoint() {
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  if (queue_->dropped()) return queue_->DroppedError();
  HQ_RETURN_IF_ERROR(broken_);
  return Fail(WriteCheckpoints(/*all=*/true));
}

absl::Status SubscriptionImpl::Stop(bool checkpoint) {
  pool_->Stop(this);
  std::vector<LeaseId> timers;
  {
    MutexLock l(&mu_);
    stopped_ = true;
    timers.assign(timers_.begin(), timers_.end());
    timers_.clear();
  }
  // Outside the lock: Cancel waits for a running timer action, which takes
  // it.
  for (LeaseId id : timers) (void)db_->leases()->Cancel(id);
  if (!checkpoint) return absl::OkStatus();
  MutexLock l(&mu_);
  if (!broken_.ok() || queue_->dropped()) return broken_;
  return WriteCheckpoints(/*all=*/true);
}

}  // namespace hq
