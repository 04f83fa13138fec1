// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// DbImpl (lib/engine/db_impl.h): the write pipeline: every write of messages
// and records goes through one leader that assigns ids, checks dedup keys and
// commits a group of writers in one LevelDB batch.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hq/status.h"
#include "leveldb/env.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/log_recovery.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

absl::Status DbImpl::WriteMessages(QueueImpl* queue,
                                   std::span<const Message> messages,
                                   const uint32_t* partitions,
                                   PutResult* results, bool sync,
                                   AppendFn append, QueueImpl* also_live) {
  Writer w;
  w.queue = queue;
  w.messages = messages;
  w.partitions = partitions;
  w.results = results;
  w.sync = sync;
  w.append = std::move(append);
  w.also_live = also_live;
  return RunWriter(&w);
}

absl::Status DbImpl::WriteRecords(QueueImpl* queue,
                                  const leveldb::WriteBatch& b, bool sync) {
  static const size_t kEmptySize = leveldb::WriteBatch().ApproximateSize();
  if (b.ApproximateSize() <= kEmptySize) return absl::OkStatus();
  return WriteMessages(queue, {}, nullptr, nullptr, sync,
                       [&b](leveldb::WriteBatch* out) { out->Append(b); });
}

// The HintWriter of a WriteWithHints call, valid while its `fill` runs.
class DbImpl::LeaderHints final : public DbImpl::HintWriter {
 public:
  LeaderHints(DbImpl* db, uint32_t queue_id, uint32_t partitions)
      : db_(db), queue_id_(queue_id), partitions_(partitions) {}
  void Append(std::string_view lane_prefix) override {
    db_->write_mu_.AssertHeld();
    uint32_t partition;
    int priority;
    std::string_view topic;
    if (!LayoutCodec::ParseLanePrefix(lane_prefix, true, &partition, &priority,
                                      &topic)) {
      return;
    }
    db_->AppendHint(queue_id_, priority, lane_prefix);
  }
  uint64_t Next(int priority) override {
    db_->write_mu_.AssertHeld();
    return db_->hint_seq_[(uint64_t{queue_id_} << 8) | priority];
  }
  bool UnhintedInBatch() override {
    db_->write_mu_.AssertHeld();
    return db_->unhinted_in_batch_.contains(queue_id_);
  }
  bool NextIds(std::vector<MessageId>* ids) override {
    db_->write_mu_.AssertHeld();
    ids->assign(partitions_, MessageId::Min());
    for (uint32_t p = 0; p < partitions_; ++p) {
      absl::StatusOr<PartitionIds*> st = db_->LoadPartition(queue_id_, p);
      if (!st.ok()) return false;
      if ((*st)->has_last) (*ids)[p] = (*st)->last.Next();
    }
    return true;
  }

 private:
  DbImpl* const db_;
  const uint32_t queue_id_;
  const uint32_t partitions_;
};

absl::Status DbImpl::WriteWithHints(
    QueueImpl* queue, bool sync,
    const std::function<void(HintWriter* hints, leveldb::WriteBatch* b)>&
        fill) {
  Writer w;
  w.queue = queue;
  w.sync = sync;
  w.load_hints = true;
  w.append =
      [this, queue, &fill](leveldb::WriteBatch* b)
          ABSL_NO_THREAD_SAFETY_ANALYSIS {  // Runs in the leader.
            // Only consumers write with hints: from this batch on, the
            // queue's messages get them.
            has_sources_[queue->id()] = true;
            LeaderHints hints(this, queue->id(), queue->options().partitions);
            fill(&hints, b);
          };
  return RunWriter(&w);
}

absl::StatusOr<uint64_t*> DbImpl::LoadHintSeq(uint32_t queue_id, int priority) {
  const uint64_t k =
      (uint64_t{queue_id} << 8) | static_cast<uint64_t>(priority);
  if (auto it = hint_seq_.find(k); it != hint_seq_.end()) return &it->second;
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  HQ_ASSIGN_OR_RETURN(
      const uint64_t next,
      NextHintSeq(format::HintPrefix(queue_id, priority), it.get()));
  return &hint_seq_.emplace(k, next).first->second;
}

absl::StatusOr<bool> DbImpl::LoadHasSources(uint32_t queue_id) {
  if (auto it = has_sources_.find(queue_id); it != has_sources_.end()) {
    return it->second;
  }
  const std::string prefix = format::QueuePrefix(format::kSourceTag, queue_id);
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  it->Seek(prefix);
  const bool has = it->Valid() && View(it->key()).starts_with(prefix);
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading source positions"));
  has_sources_.emplace(queue_id, has);
  return has;
}

absl::StatusOr<uint64_t> DbImpl::NextHintSeq(const std::string& prefix,
                                             leveldb::Iterator* it) {
  // The newest hint is never trimmed (doc/format.md, "Lane activity index").
  it->Seek(coding::PrefixSuccessor(prefix));
  if (it->Valid()) {
    it->Prev();
  } else {
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading the lane index"));
    it->SeekToLast();
  }
  uint64_t next = 1;
  if (it->Valid() && View(it->key()).starts_with(prefix)) {
    uint64_t last, trimmed = 0;
    if (!format::DecodeHintSeq(View(it->key()), &last) || last == UINT64_MAX ||
        (last == 0 && (!format::DecodeIndexHead(View(it->value()), &trimmed) ||
                       trimmed == UINT64_MAX))) {
      return absl::DataLossError("malformed lane index record");
    }
    // Only the index head (its newest hint moved aside by a repair): seq
    // goes on past where the trim stopped.
    next = last == 0 ? trimmed + 1 : last + 1;
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading the lane index"));
  return next;
}

void DbImpl::AppendHint(uint32_t queue_id, int priority,
                        std::string_view lane) {
  hints_.Add((uint64_t{queue_id} << 8) | priority, lane);
}

void DbImpl::FlushHints() {
  for (const BatchHints::Hint& h : hints_.hints()) {
    uint64_t& next = hint_seq_[h.key];
    batch_.Put(format::ListHintKey(static_cast<uint32_t>(h.key >> 8),
                                   static_cast<int>(h.key & 0xff), next),
               h.lanes);
    ++next;
  }
  hints_.Clear();
}

absl::Status DbImpl::CreateGroupRecord(QueueImpl* queue, std::string_view key,
                                       format::GroupRecord* record) {
  absl::StatusOr<uint32_t> id =
      CreateWithId(queue, [&](uint32_t id, leveldb::WriteBatch* b) {
        record->id = id;
        b->Put(leveldb::Slice(key.data(), key.size()),
               format::EncodeGroupRecord(*record));
      });
  return id.status();
}

absl::StatusOr<std::vector<MessageId>> DbImpl::NextIds(QueueImpl* q) {
  std::vector<MessageId> next(q->options().partitions, MessageId::Min());
  Writer x;
  x.exclusive = [&]() -> absl::Status {
    write_mu_.AssertHeld();
    if (!bg_error_.ok()) return BrokenError();
    for (uint32_t p = 0; p < next.size(); ++p) {
      HQ_ASSIGN_OR_RETURN(PartitionIds * st, LoadPartition(q->id(), p));
      if (st->has_last) next[p] = st->last.Next();
    }
    return absl::OkStatus();
  };
  HQ_RETURN_IF_ERROR(RunWriter(&x));
  return next;
}

absl::StatusOr<uint32_t> DbImpl::CreateWithId(
    QueueImpl* queue,
    const std::function<void(uint32_t id, leveldb::WriteBatch*)>& fill) {
  MutexLock l(&group_id_mu_);
  if (next_group_id_ == 0) {
    std::string value;
    leveldb::Status s = CheckedGet(db_.get(), CheckedReadOptions(),
                                   format::MetaKey("next_group_id"), &value);
    if (s.IsNotFound()) {
      next_group_id_ = 1;
    } else {
      HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading next_group_id"));
      std::string_view in = value;
      if (!coding::GetFixed32(&in, &next_group_id_) || !in.empty() ||
          next_group_id_ == 0) {
        return absl::DataLossError("malformed next_group_id record");
      }
    }
  }
  if (next_group_id_ == UINT32_MAX) {
    return absl::ResourceExhaustedError("all 2^32-1 group ids are used");
  }
  const uint32_t id = next_group_id_;
  std::string v;
  coding::PutFixed32(&v, next_group_id_ + 1);
  leveldb::WriteBatch b;
  b.Put(format::MetaKey("next_group_id"), v);
  fill(id, &b);
  HQ_RETURN_IF_ERROR(WriteRecords(queue, b, options_.sync_writes));
  ++next_group_id_;
  return id;
}

DeliveryPool* DbImpl::delivery_pool() {
  MutexLock l(&pool_mu_);
  if (pool_ == nullptr) {
    pool_ = std::make_unique<DeliveryPool>(options_.delivery_threads);
  }
  return pool_.get();
}

absl::StatusOr<DbImpl::PartitionIds*> DbImpl::LoadPartition(
    uint32_t queue_id, uint32_t partition) {
  const uint64_t k = PartitionKey(queue_id, partition);
  if (k == last_ids_key_) return last_ids_;  // One partition's stream.
  if (auto it = ids_.find(k); it != ids_.end()) {
    last_ids_key_ = k;
    last_ids_ = &it->second;
    return last_ids_;
  }
  std::string value;
  leveldb::Status s =
      CheckedGet(db_.get(), CheckedReadOptions(),
                 format::ReserveKey(queue_id, partition), &value);
  PartitionIds ids;
  if (s.ok()) {
    std::string_view in = value;
    uint64_t reserved;
    if (!coding::GetFixed64(&in, &reserved) || !in.empty() ||
        reserved > MessageId::kMaxMs + 1) {
      return absl::DataLossError(absl::StrFormat(
          "malformed id reservation of partition %d", partition));
    }
    ids = PartitionIds::Resume(reserved);
  } else if (!s.IsNotFound()) {
    return FromLevelDb(s, "reading an id reservation");
  }
  last_ids_key_ = k;
  last_ids_ = &ids_.emplace(k, ids).first->second;
  return last_ids_;
}

absl::Status DbImpl::AddToBatch(Writer* w) {
  QueueImpl* q = w->queue;
  if (q->dropped()) return q->DroppedError();
  if (w->also_live != nullptr && w->also_live->dropped()) {
    return w->also_live->DroppedError();
  }
  const absl::Time now = clock_->Now();
  // Every failure happens in AssignIds and the hint loads, before anything
  // is appended to batch_ or any reservation is raised.
  std::vector<std::string> dedup_added;  // Undone if this writer fails.
  absl::Status s = AssignIds(w, now, &dedup_added);
  if (s.ok() && w->load_hints && q->codec().lane_has_topic()) {
    for (int prio = 0; s.ok() && prio < q->options().priorities; ++prio) {
      s = LoadHintSeq(q->id(), prio).status();
    }
  }
  bool hint = false;
  if (s.ok() && !w->messages.empty() && q->codec().lane_has_topic()) {
    absl::StatusOr<bool> has = LoadHasSources(q->id());
    s = has.status();
    hint = has.ok() && *has;
  }
  if (!s.ok()) {
    for (const std::string& k : dedup_added) dedup_in_batch_.erase(k);
    return s;
  }
  const bool has_topic = q->codec().lane_has_topic();
  PartitionIds* st = nullptr;  // Of partition st_partition.
  uint32_t st_partition = 0;
  for (size_t i = 0; i < w->messages.size(); ++i) {
    const PutResult& r = w->results[i];
    if (r.duplicate) continue;
    if (st == nullptr || r.partition != st_partition) {
      st = &ids_.find(PartitionKey(q->id(), r.partition))->second;  // Loaded.
      st_partition = r.partition;
    }
    AppendMessage(q, has_topic, hint, w->messages[i], r, now, st);
  }
  if (w->append) w->append(&batch_);
  return absl::OkStatus();
}

absl::Status DbImpl::AssignIds(Writer* w, absl::Time now,
                               std::vector<std::string>* dedup_added) {
  QueueImpl* q = w->queue;
  const int64_t clock_ms = absl::ToUnixMillis(now);
  const uint64_t now_ms =
      clock_ms < 0
          ? 0
          : std::min(static_cast<uint64_t>(clock_ms), MessageId::kMaxMs);
  const MessageId cutoff = q->TtlCutoff(now);
  const bool has_topic = q->codec().lane_has_topic();
  PartitionIds* st = nullptr;  // Of partition st_partition.
  uint32_t st_partition = 0;
  std::string dedup;
  for (size_t i = 0; i < w->messages.size(); ++i) {
    const Message& m = w->messages[i];
    const uint32_t partition = w->partitions[i];
    dedup.clear();
    if (!m.dedup_key.empty()) {
      dedup = format::DedupKey(q->id(), m.dedup_key);
      HQ_ASSIGN_OR_RETURN(const bool duplicate,
                          FindDuplicate(dedup, cutoff, &w->results[i]));
      if (duplicate) continue;
    }
    if (has_topic) {
      HQ_RETURN_IF_ERROR(LoadHintSeq(q->id(), m.priority).status());
    }
    if (st == nullptr || partition != st_partition) {
      HQ_ASSIGN_OR_RETURN(st, LoadPartition(q->id(), partition));
      st_partition = partition;
    }
    PutResult& r = w->results[i];
    r = PutResult{partition, MessageId{}};
    if (!st->Take(now_ms, &r.id)) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("partition %d of queue '%s' has used every MessageId",
                          partition, q->name()));
    }
    if (!dedup.empty()) {
      // Check and insert are atomic: only the leader runs them.
      dedup_in_batch_.emplace(dedup, r);
      dedup_added->push_back(dedup);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> DbImpl::FindDuplicate(const std::string& dedup,
                                           const MessageId& cutoff,
                                           PutResult* result) {
  if (auto it = dedup_in_batch_.find(dedup); it != dedup_in_batch_.end()) {
    *result = it->second;  // Written earlier in this batch.
    result->duplicate = true;
    return true;
  }
  std::string value;
  leveldb::Status s =
      CheckedGet(db_.get(), CheckedReadOptions(), dedup, &value);
  if (s.IsNotFound()) return false;
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a dedup record"));
  PutResult existing;
  if (!format::DecodeDedup(value, &existing.partition, &existing.id)) {
    return absl::DataLossError("malformed dedup record");
  }
  if (existing.id < cutoff) return false;  // Expired with its message.
  existing.duplicate = true;
  *result = existing;
  return true;
}

namespace {

// The stored not-before time of `m` in ms (0: none): only a time in the
// future is stored.
uint64_t NotBeforeMs(const Message& m, absl::Time now) {
  if (m.not_before == absl::InfinitePast() && m.delay == absl::ZeroDuration()) {
    return 0;
  }
  const absl::Time at = std::max(m.not_before, now + m.delay);
  const int64_t ms = absl::ToInt64Milliseconds(
      absl::Ceil(at - absl::UnixEpoch(), absl::Milliseconds(1)));
  return at > now && ms > 0 ? static_cast<uint64_t>(ms) : 0;
}

}  // namespace

void DbImpl::AppendMessage(QueueImpl* q, bool has_topic, bool hint,
                           const Message& m, const PutResult& r, absl::Time now,
                           PartitionIds* st) {
  const uint32_t qid = q->id();
  if (st->Reserve(r.id, kReserveWindowMs)) {
    value_buf_.clear();
    coding::PutFixed64(&value_buf_, st->reserved_ms);
    batch_.Put(format::ReserveKey(qid, r.partition), value_buf_);
  }
  key_buf_.clear();
  const size_t lane_size = q->codec().AppendMessageKey(
      &key_buf_, qid, r.partition, m.priority, m.topic, r.id);
  const std::string_view lane(key_buf_.data(), lane_size);
  if (has_topic && hint) {
    AppendHint(qid, m.priority, lane);
  } else if (has_topic) {
    unhinted_in_batch_.insert(qid);
  }
  value_buf_.clear();
  format::AppendMessageValue(&value_buf_, m.key, m.payload, NotBeforeMs(m, now),
                             m.dedup_key);
  batch_.Put(key_buf_, value_buf_);
  if (!m.dedup_key.empty()) {
    batch_.Put(format::DedupKey(qid, m.dedup_key),
               format::EncodeDedup(r.partition, r.id));
  }
}

absl::Status DbImpl::RunWriter(Writer* w) {
  MutexLock l(&write_mu_);
  if (closing_) {
    return ClosingError();
  }
  ++active_ops_;
  const absl::Status s = RunWriterLocked(w);
  if (s.ok() && !w->messages.empty() && w->queue->has_listeners()) {
    // Tell the queue's consumer groups which lanes have new messages, while
    // this call still counts as in flight (the Db outlives it).
    write_mu_.Unlock();
    w->queue->NoteWritten(w->messages, w->results);
    write_mu_.Lock();
  }
  if (--active_ops_ == 0 && closing_) ops_done_.SignalAll();
  return s;
}

absl::Status DbImpl::RunWriterLocked(Writer* w) {
  writers_.push_back(w);
  while (!w->done && w != writers_.front()) w->cv.Wait(&write_mu_);
  if (w->done) return w->status;

  // This writer leads: no other write is in flight until it pops itself.
  Writer* last = w;
  if (!bg_error_.ok()) {
    w->status = BrokenError();
  } else if (w->exclusive) {
    w->status = w->exclusive();
  } else {
    batch_.Clear();
    dedup_in_batch_.clear();
    hints_.Clear();
    unhinted_in_batch_.clear();
    // w is writers_.front(): the group's leader.
    WriteGroup group(w->sync);
    bool any = false;
    for (Writer* x : writers_) {
      if (!group.Join(x->exclusive != nullptr, x->sync,
                      batch_.ApproximateSize())) {
        break;
      }
      x->status = AddToBatch(x);
      x->in_batch = x->status.ok();
      any = any || x->in_batch;
      last = x;
    }
    if (any) {
      FlushHints();
      leveldb::WriteOptions wo;
      wo.sync = group.sync();
      leveldb::Status s;
      {
        // Writers may queue up meanwhile; only the leader touches batch_.
        write_mu_.Unlock();
        s = db_->Write(wo, &batch_);
        write_mu_.Lock();
      }
      pipeline_writes_.fetch_add(1, std::memory_order_relaxed);
      if (!s.ok()) {
        // The reservations in this batch may not be on disk, and LevelDB's
        // log may have lost its place: refuse writes until reopened.
        const absl::Status err = FromLevelDb(s, "writing messages");
        RecordWriteError(err);
        for (Writer* x : writers_) {
          if (x->in_batch) x->status = err;
          if (x == last) break;
        }
      }
    }
  }

  while (true) {
    Writer* x = writers_.front();
    writers_.pop_front();
    x->done = true;
    if (x != w) x->cv.Signal();
    if (x == last) break;
  }
  if (!writers_.empty()) writers_.front()->cv.Signal();
  return w->status;
}

}  // namespace hq
