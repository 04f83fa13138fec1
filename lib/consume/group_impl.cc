// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/group_impl.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/consume/consume_options.h"
#include "lib/consume/group_backlog.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
uint64_t GroupImpl::TEST_CursorReads() {
  MutexLock l(&mu_);
  return cursors_.reads();
}

uint64_t GroupImpl::TEST_LaneSeeks() {
  MutexLock l(&mu_);
  return test_lane_seeks_;
}

size_t GroupImpl::TEST_ReadAheadBytes() {
  MutexLock l(&mu_);
  return ahead_budget_.used;
}

uint64_t GroupImpl::ToMs(absl::Time t) {
  const int64_t ms = absl::ToUnixMillis(t);
  return ms < 0 ? 0 : static_cast<uint64_t>(ms);
}

GroupImpl::GroupImpl(DbImpl* db, QueueImpl* queue, std::string name,
                     const format::GroupRecord& record,
                     const GroupOptions& options)
    : LaneSetHooks(&mu_, &lanes_),
      db_(db),
      queue_(queue),
      name_(std::move(name)),
      record_(record),
      records_(db->leveldb(), queue->id(), record, name_,
               queue->codec().lane_has_topic()),
      pace_records_(db->leveldb(), queue->id(), record.id, name_),
      dead_queue_(db, queue, record.id, name_),
      loaded_at_(db->clock()->Now()),
      options_(options),
      lanes_(absl::StrCat("consumer group '", name_, "'"),
             queue->codec().lane_has_topic(), queue->options().partitions,
             queue->options().priorities,
             queue->codec().lane_has_topic()
                 ? std::make_unique<LaneSource>(db, queue, record.id)
                 : nullptr),
      rng_(std::hash<std::string>()(name_) ^ record.id),
      pacer_(
          [this](std::string_view topic) { return pace_records_.Read(topic); }),
      parked_(db->leveldb(), &queue->codec(), queue->id(), record.id, name_),
      cursors_(&records_, lanes_.source()),
      claims_(db->leveldb(), queue->id(), record.id, name_),
      consumers_(
          db->leases(),
          [this](const std::string& consumer, uint64_t gen) {
            OnConsumerExpired(consumer, gen);
          },
          // Waiting claims of consumers that gained partitions.
          [this] {
            if (wakeup_.has_waiters()) wakeup_.Wake();
          }) {
  MutexLock l(&mu_);
  lanes_.SetMaxActive(options.max_active_lanes);
  pacer_.SetDefault(options.pacing);
}

GroupImpl::~GroupImpl() = default;

std::string GroupImpl::dead_letter_queue() const { return dead_queue_.name(); }

void GroupImpl::SetOptions(const GroupOptions& options) {
  MutexLock l(&mu_);
  options_ = options;
  lanes_.SetMaxActive(options.max_active_lanes);
  pacer_.SetDefault(options.pacing);
}

void GroupImpl::NoteLaneWritten(std::string_view lane_prefix)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  lanes_.Note(lane_prefix);  // Thread-safe: without mu_.
  if (wakeup_.has_waiters()) wakeup_.Wake();
}

void GroupImpl::WakeWaiters() { wakeup_.Wake(); }

absl::Status GroupImpl::Gone() const {
  if (queue_->dropped()) return queue_->DroppedError();
  if (deleted_.load()) {
    return absl::NotFoundError(absl::StrCat("consumer group '", name_,
                                            "' of queue '", queue_->name(),
                                            "' was deleted"));
  }
  return absl::OkStatus();
}

absl::Status GroupImpl::Usable() {
  HQ_RETURN_IF_ERROR(Gone());
  return broken_;
}

absl::Status GroupImpl::BeginDelete(bool force,
                                    absl::FunctionRef<absl::Status()> write) {
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Gone());
  if (in_flight_ > 0 && !force) {
    return absl::FailedPreconditionError(absl::StrCat(
        "consumer group '", name_, "' of queue '", queue_->name(), "' has ",
        in_flight_,
        " task(s) in flight: complete or release them first, or delete with "
        "DeleteGroupOptions::force"));
  }
  HQ_RETURN_IF_ERROR(write());
  deleted_.store(true);
  return absl::OkStatus();
}

absl::Status GroupImpl::Fail(absl::Status s) {
  return RecordStickyError(&broken_, "consumer group", name_, std::move(s));
}

// ------------------------------------------------------------------ load

absl::Status GroupImpl::Load() {
  MutexLock l(&mu_);
  const int priorities = queue_->options().priorities;
  active_.resize(priorities);
  waiting_.SetPriorities(priorities);
  if (record_.ordered) consumers_.SetPartitions(queue_->options().partitions);
  if (record_.ordered && paged()) {
    HQ_RETURN_IF_ERROR(parked_.Load(queue_->options().partitions, priorities));
  }
  HQ_RETURN_IF_ERROR(pace_records_.Load(&pacer_));
  if (paged()) {
    HQ_RETURN_IF_ERROR(cursors_.Load(
        db_->leveldb(), format::GroupRecordPrefix(format::kCursorTag,
                                                  queue_->id(), record_.id)));
  }
  // First the source: where a lane without a cursor record is (Absent)
  // depends on its position.
  if (paged()) HQ_RETURN_IF_ERROR(source()->Load());
  HQ_RETURN_IF_ERROR(LoadRecords());
  leveldb::WriteBatch batch;
  if (paged()) {
    // Only the lanes of task and claim records: the others are found in
    // the source as claims need them.
    // Runs under mu_, which Load holds.
    HQ_RETURN_IF_ERROR(claims_.Load(
        [&](std::string_view lane_prefix, const format::CursorValue& cursor)
            ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
              HQ_ASSIGN_OR_RETURN(Lane * lane, GetLane(lane_prefix));
              // Both cursors only move up: the greater of each is the
              // later.
              lane->scan = std::max(lane->scan, cursor.scan);
              lane->done = std::max(lane->done, cursor.done);
              return absl::OkStatus();
            },
        &batch));
    const MessageId cutoff = queue_->TtlCutoff(db_->clock()->Now());
    std::unique_ptr<leveldb::Iterator> it(
        NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
    for (auto& [prefix, lane] : lanes_) {
      if (lane->done < lane->scan) {
        HQ_RETURN_IF_ERROR(LoadWindow(lane.get(), cutoff, it.get()));
      }
      // Ordered: a lane with a park record may have work that only the
      // record leads to: parked, until its partition takes it.
      HQ_ASSIGN_OR_RETURN(lane->park_record, parked_.Read(lane->prefix));
      lane->parked_out = lane->park_record;
    }
  } else {
    HQ_RETURN_IF_ERROR(DiscoverLanes());
  }
  Recover(db_->clock()->Now());
  recovered_.shrink_to_fit();
  // Lanes whose window held only expired messages: their completion cursor
  // moves up to the scan cursor, and they are forgotten.
  std::vector<Lane*> touched;
  for (auto& [prefix, lane] : lanes_) Touch(lane.get(), &touched);
  for (Lane* lane : touched) Settle(lane, &batch);
  HQ_RETURN_IF_ERROR(Write(batch));
  Committed(&touched);
  // Dead letters: counted once; they are few unless nobody looks at them.
  HQ_RETURN_IF_ERROR(dead_queue_.ForEachRecord(
      [this](std::string_view) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        ++dead_count_;  // Under mu_, which Load holds.
      }));
  return ForgetDeadIfQueueGone();
}

void GroupImpl::Recover(absl::Time now) {
  std::sort(recovered_.begin(), recovered_.end(),
            [](const auto& a, const auto& b) {
              return a.second != b.second ? a.second < b.second
                                          : a.first->prefix < b.first->prefix;
            });
  for (auto [lane, id] : recovered_) {
    waiting_.Add(lane, id, &lane->tasks.find(id)->second, now);
  }
  recovered_.clear();
}

absl::Status GroupImpl::ForgetDeadIfQueueGone() {
  if (dead_count_ == 0) return absl::OkStatus();
  absl::StatusOr<QueueImpl*> dead = dead_queue_.Open(/*create=*/false);
  if (!absl::IsNotFound(dead.status())) return dead.status();
  // The dead-letter queue was dropped: so are its letters.
  leveldb::WriteBatch batch;
  HQ_RETURN_IF_ERROR(dead_queue_.ForEachRecord([&](std::string_view key) {
    batch.Delete(leveldb::Slice(key.data(), key.size()));
  }));
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
        waiting_.Add(lane, id, &rec,
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
  // The queue's lanes joined with the group's cursor records; each lane in
  // scope is sought at its scan cursor.
  const bool has_topic = queue_->codec().lane_has_topic();
  const MessageId cutoff = queue_->TtlCutoff(db_->clock()->Now());
  std::unique_ptr<leveldb::Iterator> msg(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  // The walk calls back under mu_, which the caller of DiscoverLanes holds.
  return queue_->WalkLanes(
      format::GroupRecordPrefix(format::kCursorTag, queue_->id(), record_.id),
      [&](const QueueImpl::LaneEntry& e) ABSL_NO_THREAD_SAFETY_ANALYSIS
      -> absl::Status {
        if (has_topic && !records_.InScope(e.topic)) return absl::OkStatus();
        format::CursorValue cursor;
        if (e.record != nullptr && !format::DecodeCursor(*e.record, &cursor)) {
          return absl::DataLossError(absl::StrCat(
              "consumer group '", name_, "': malformed cursor record"));
        }
        const format::CursorValue* have =
            e.record != nullptr ? &cursor : nullptr;
        Lane* known = lanes_.Find(e.prefix);
        if (known == nullptr && have != nullptr && cursor.done < cursor.scan) {
          HQ_ASSIGN_OR_RETURN(known, GetLane(e.prefix, &cursor));
        }
        if (known != nullptr && known->done < known->scan) {
          HQ_RETURN_IF_ERROR(LoadWindow(known, cutoff, msg.get()));
        }
        const MessageId from =
            known != nullptr
                ? known->scan
                : (have != nullptr ? cursor.scan
                                   : records_.StartOf(e.partition));
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
    if (!has_topic &&
        !records_.InScope(key.substr(n + LayoutCodec::kMessageIdSize))) {
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

absl::StatusOr<GroupImpl::Lane*> GroupImpl::GetLane(
    std::string_view prefix, const format::CursorValue* cursor) {
  if (Lane* lane = lanes_.Find(prefix)) return lane;
  return NewLane(std::string(prefix), cursor);
}

absl::StatusOr<GroupImpl::Lane*> GroupImpl::NewLane(
    std::string prefix, const format::CursorValue* cursor) {
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Lane> lane,
                      lanes_.Make(std::move(prefix)));
  HQ_RETURN_IF_ERROR(cursors_.Read(lane.get(), cursor));
  return lanes_.Insert(std::move(lane));
}

void GroupImpl::Activate(Lane* lane) {
  if (!lanes_.Enter(lane)) return;
  lane->behind = false;
  resting_.Remove(lane);
  if (record_.ordered && !paged()) {
    Part& part = consumers_.parts()[lane->partition];
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
  for (const Part& part : consumers_.parts()) {
    for (const std::deque<Lane*>& dq : part.active) {
      for (Lane* lane : dq) f(lane);
    }
  }
}

void GroupImpl::EndInFlight(Lane* lane, Rec* rec) {
  --in_flight_;
  if (record_.ordered) --consumers_.parts()[lane->partition].in_flight;
  if (!rec->paced) return;
  rec->paced = false;
  const bool freed =
      pacer_.Ended(queue_->codec().lane_has_topic() ? lane->topic : rec->topic,
                   db_->clock()->Now());
  rec->topic.clear();
  // A claim waiting for the topic's in-flight limit may take it now.
  if (freed && wakeup_.has_waiters()) wakeup_.Wake();
}

absl::Status GroupImpl::TakeNotes() {
  const bool has_topic = queue_->codec().lane_has_topic();
  // Runs under mu_, which the caller of TakeNotes holds.
  auto activate = [&](const NotedLane& noted)
                      ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::Status {
    // A time-layout lane holds every topic.
    if (has_topic && !records_.InScope(noted.topic)) return absl::OkStatus();
    HQ_ASSIGN_OR_RETURN(Lane * lane, GetLane(noted.prefix));
    Activate(lane);
    return absl::OkStatus();
  };
  return lanes_.TakeNotes(activate);
}

// ------------------------------------------------------------ bookkeeping

void GroupImpl::Touch(Lane* lane, std::vector<Lane*>* touched) {
  if (lane->dirty) return;
  resting_.Remove(lane);
  lane->dirty = true;
  touched->push_back(lane);
}

void GroupImpl::PutTask(Lane* lane, MessageId id, Rec* rec,
                        leveldb::WriteBatch* batch) {
  format::TaskValue v;
  v.state = rec->state;
  v.attempts = rec->attempts;
  v.ms = rec->state == format::TaskState::kDone ? 0 : ToMs(rec->since);
  batch->Put(records_.TaskKey(lane->prefix, id), format::EncodeTask(v));
  rec->persisted = true;
}

void GroupImpl::PutDone(const std::vector<std::pair<Lane*, MessageId>>& done,
                        leveldb::WriteBatch* batch) {
  for (auto [lane, id] : done) {
    auto it = lane->tasks.find(id);
    if (it != lane->tasks.end()) PutTask(lane, id, &it->second, batch);
  }
}

void GroupImpl::MarkDying(Lane* lane, MessageId id, Rec* rec,
                          DeadLetterReason reason) {
  rec->state = format::TaskState::kWaiting;
  rec->dying = true;
  rec->reason = reason;
  dying_.emplace_back(lane, id);
}

void GroupImpl::Interrupted(Lane* lane, MessageId id, Rec* rec) {
  if (rec->attempts >= options_.max_attempts) {
    MarkDying(lane, id, rec, DeadLetterReason::kInterrupted);
  } else {
    recovered_.emplace_back(lane, id);  // Due at once (Load).
  }
}

void GroupImpl::HandOut(Lane* lane, MessageId id, Rec* rec, absl::Time now,
                        absl::Duration lease, bool covered, Task* t,
                        leveldb::WriteBatch* batch) {
  rec->state = format::TaskState::kInFlight;
  rec->attempts += 1;
  rec->since = now;
  rec->deadline = now + lease;
  rec->share = 0;
  ++in_flight_;
  if (record_.ordered) ++consumers_.parts()[lane->partition].in_flight;
  if (pacer_.on()) {
    // LaneTurn and CollectDue asked PacedOut first.
    pacer_.HandedOut(t->topic, now);
    rec->paced = true;
    if (!queue_->codec().lane_has_topic()) rec->topic = t->topic;
  }
  t->partition = lane->partition;
  t->priority = lane->priority;
  t->id = id;
  t->attempt = rec->attempts;
  t->lease_deadline = rec->deadline;
  if (rec->attempts > 1 || !covered) {
    PutTask(lane, id, rec, batch);
  } else if (paged()) {
    lane->opened = true;  // Its cursors go into the claim record.
  }
  handed_.push_back({.lane = lane, .id = id, .rec = rec});
}

void GroupImpl::Settle(Lane* lane, leveldb::WriteBatch* batch, ClaimLog* log) {
  // Completed records below the scan cursor are passed by the completion
  // cursor; above it they must stay (they say "handed out").
  while (!lane->tasks.empty()) {
    auto first = lane->tasks.begin();
    if (first->second.state != format::TaskState::kDone ||
        !(first->first < lane->scan)) {
      break;
    }
    if (first->second.persisted)
      batch->Delete(records_.TaskKey(lane->prefix, first->first));
    lane->tasks.erase(first);
  }
  MessageId done = lane->scan;
  if (!lane->tasks.empty() && lane->tasks.begin()->first < done) {
    done = lane->tasks.begin()->first;
  }
  if (lane->done < done) lane->done = done;
  if (paged()) MaybeRelease(lane, batch);
  const format::CursorValue now{lane->scan, lane->done};
  const bool unchanged =
      lane->saved_exists
          ? (now.scan == lane->saved.scan && now.done == lane->saved.done)
          : (now.scan == MessageId::Min() && now.done == MessageId::Min());
  // A lane without a cursor record that stops holding the source position
  // back gets one, unless its floor covers it (Absent would put it there):
  // one let go with work left (hinted again, parked) is not at its floor.
  const bool let_go = lane->let_go && !lane->record;
  lane->let_go = false;
  if (!unchanged || let_go) {
    // Either supersedes the lane's earlier claim entries.
    claims_.Retire(&lane->claims, batch);
    // A floored lane's record is left to Write (GroupCursors::Floor).
    if (!cursors_.Floor(lane)) {
      if (log != nullptr && lane->opened && !let_go) {
        lane->claims.push_back(log->Add(lane->prefix, now));
      } else {
        cursors_.Put(lane, batch);
      }
    }
  }
  lane->opened = false;
}

void GroupImpl::LetGoHold(Lane* lane) {
  if (lanes_.LetGo(lane)) lane->let_go = true;
}

void GroupImpl::Forget(Lane* lane) {
  // An idle lane has no live claim entry: an entry exists only while the
  // cursors differ from the stored ones, and the Settle that emptied the
  // lane's tasks moved its completion cursor, so wrote its cursor record
  // and retired the entry. Defensively, an entry left here only drops its
  // count; its record stays on disk until the next load folds it in.
  claims_.Retire(&lane->claims, /*batch=*/nullptr);
  lanes_.Erase(lane);
}

void GroupImpl::Committed(std::vector<Lane*>* touched) {
  for (Lane* lane : *touched) {
    lane->dirty = false;
    if (lane->cursor_put || lane->floored) {
      lane->saved = {lane->scan, lane->done};
      lane->saved_exists = true;
      lane->record = lane->record || lane->cursor_put;
      lane->cursor_put = lane->floored = false;
    }
    if (!lane->active && lane->tasks.empty() && !lane->hold.held()) {
      if (lane->behind && !record_.ordered) {
        resting_.Add(lane);  // Its hint brings it back.
      } else {
        Forget(lane);  // Idle: its cursor is on disk.
      }
    }
  }
  touched->clear();
  // Runs under mu_, which the caller of Committed holds.
  resting_.Trim(lanes_.active(), MaxActive(),
                [this](Lane* lane)
                    ABSL_NO_THREAD_SAFETY_ANALYSIS { Forget(lane); });
}

absl::Status GroupImpl::Write(const leveldb::WriteBatch& batch) {
  if (!paged()) {
    return Fail(db_->WriteRecords(queue_, batch, db_->default_sync()));
  }
  // The source position goes with the cursors and hints that let it move.
  leveldb::WriteBatch position;
  source()->AppendRecord(&position);
  // A lane it passes needs no record of cursors at its floor.
  cursors_.PutFloored(&position, /*unless_passed=*/true);
  std::vector<std::string> rehint;
  rehint.swap(rehint_);
  if (rehint.empty()) {
    leveldb::WriteBatch all = batch;
    all.Append(position);
    return Fail(db_->WriteRecords(queue_, all, db_->default_sync()));
  }
  HQ_RETURN_IF_ERROR(Fail(db_->WriteWithHints(
      queue_, db_->default_sync(),
      [&](DbImpl::HintWriter* hints, leveldb::WriteBatch* b) {
        b->Append(batch);
        b->Append(position);
        for (const std::string& lane : rehint) hints->Append(lane);
      })));
  source()->NoteWritten();  // The new hints are to be read.
  return absl::OkStatus();
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

// ------------------------------------------------------------------ stats

absl::StatusOr<GroupStats> GroupImpl::Stats() {
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  GroupStats st;
  GroupBacklog backlog(&records_);
  const leveldb::Snapshot* snapshot = nullptr;
  absl::Time now;
  bool all_lanes = true;  // False: lanes may wait beyond those peeked.
  {
    MutexLock l(&mu_);
    HQ_RETURN_IF_ERROR(Usable());
    // Paged groups: lanes waiting in the source, counted without taking
    // them.
    std::vector<std::string> waiting;
    if (paged()) {
      lanes_.TakePagedNotes();
      std::unique_ptr<leveldb::Iterator> it(
          NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
      HQ_RETURN_IF_ERROR(
          source()->Peek(kPeekLanes, it.get(), &waiting, &all_lanes));
      HQ_RETURN_IF_ERROR(
          parked_.Peek(kPeekLanes, it.get(), &waiting, &all_lanes));
    } else {
      HQ_RETURN_IF_ERROR(Fail(TakeNotes()));
    }
    HQ_RETURN_IF_ERROR(ForgetDeadIfQueueGone());
    now = db_->clock()->Now();
    CountTasks(now, &st);
    // The active lanes, then those waiting in the group's scope.
    ForEachActive([&](Lane* lane) ABSL_NO_THREAD_SAFETY_ANALYSIS {
      backlog.AddLane(*lane);
    });
    for (const std::string& prefix : waiting) {
      uint32_t partition;
      int priority;
      std::string_view topic;
      if (!LayoutCodec::ParseLanePrefix(prefix, true, &partition, &priority,
                                        &topic) ||
          !records_.InScope(topic)) {
        continue;
      }
      if (const Lane* lane = lanes_.Find(prefix)) {
        backlog.AddLane(*lane);
      } else {
        backlog.AddOnDisk(prefix, partition,
                          cursors_.Absent(prefix, partition, priority));
      }
    }
    // The snapshot holds what the cursors copied above point into.
    snapshot = db_->leveldb()->GetSnapshot();
  }
  absl::Cleanup release = [&] { db_->leveldb()->ReleaseSnapshot(snapshot); };
  HQ_RETURN_IF_ERROR(backlog.Count(
      db_->leveldb(), snapshot, queue_->TtlCutoff(now), [this] { CountHook(); },
      &st));
  if (!all_lanes) st.backlog_exact = false;
  return st;
}

void GroupImpl::CountTasks(absl::Time now, GroupStats* st) {
  st->in_flight = in_flight_;
  st->paced_topics = pacer_.topics();
  st->redelivery = waiting_.size();
  st->dead_letters = dead_count_ + dying_.size();
  st->lanes = lanes_.size();
  st->consumers = consumers_.size();
  absl::Time oldest = absl::InfiniteFuture();
  for (const auto& [prefix, lane] : lanes_) {
    st->window_records += lane->tasks.size();
    if (lane->done < lane->scan) {
      st->max_cursor_lag =
          std::max(st->max_cursor_lag, lane->scan.time() - lane->done.time());
    }
    for (const auto& [id, rec] : lane->tasks) {
      if (rec.state == format::TaskState::kInFlight) {
        oldest = std::min(oldest, rec.since);
      } else if (rec.state == format::TaskState::kWaiting &&
                 rec.attempts == 0 && !rec.dying) {
        ++st->delayed;
      }
    }
  }
  if (oldest != absl::InfiniteFuture()) st->oldest_in_flight = now - oldest;
  st->redelivery -= st->delayed;
}

}  // namespace hq
