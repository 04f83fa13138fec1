// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// DbImpl (lib/engine/db_impl.h): the TTL sweep (CompactExpired, SweepQueue) and
// the janitor thread that runs it every Options::ttl_sweep_interval.

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
#include "absl/time/clock.h"
#include "hq/status.h"
#include "leveldb/env.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/lane_walk.h"
#include "lib/engine/log_recovery.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

absl::StatusOr<SweepStats> DbImpl::CompactExpired() {
  OpScope op(this);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&sweep_mu_);
  const absl::Time now = clock_->Now();
  SweepStats stats;
  // The TTL index lists only queues with a TTL: no catalog walk.
  std::vector<std::pair<uint32_t, std::string>> queues;
  {
    std::unique_ptr<leveldb::Iterator> it(
        NewCheckedIterator(db_.get(), CheckedReadOptions()));
    const std::string prefix = format::TtlPrefix();
    for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
         it->Next()) {
      std::string_view key = View(it->key()).substr(prefix.size());
      uint32_t id;
      if (!coding::GetFixed32(&key, &id) || !key.empty()) {
        return absl::DataLossError("malformed TTL index key");
      }
      queues.emplace_back(id, std::string(View(it->value())));
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading the TTL index"));
  }
  for (const auto& [id, name] : queues) {
    if (IsClosing()) break;
    HQ_RETURN_IF_ERROR(SweepQueue(id, name, now, &stats));
  }
  if (!IsClosing()) HQ_RETURN_IF_ERROR(TrimHints(&stats));
  ++sweeps_;
  return stats;
}

absl::Status DbImpl::SweepQueue(uint32_t queue_id, std::string_view name,
                                absl::Time now, SweepStats* stats) {
  std::string value;
  leveldb::Status s = CheckedGet(db_.get(), CheckedReadOptions(),
                                 format::CatalogKey(name), &value);
  if (s.IsNotFound()) return absl::OkStatus();  // Dropped meanwhile.
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading the queue catalog"));
  format::QueueRecord record;
  HQ_RETURN_IF_ERROR(format::DecodeQueueRecord(value, &record));
  if (record.id != queue_id || record.options.ttl == absl::InfiniteDuration()) {
    return absl::OkStatus();
  }
  ++stats->queues;
  const LaneSweep sweep{queue_id, &LayoutCodec::For(record.options.layout),
                        MessageId::AtTime(now - record.options.ttl),
                        static_cast<size_t>(options_.ttl_sweep_batch)};
  {
    // Before any deletion: readers that keep messages read ahead drop
    // those below it (QueueImpl::swept_cutoff).
    MutexLock l(&catalog_mu_);
    if (auto q = queues_.find(Av(name));
        q != queues_.end() && q->second->id() == queue_id) {
      q->second->NoteSwept(sweep.cutoff);
    }
  }
  std::unique_ptr<leveldb::Iterator> dir(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  const std::string message_prefix = format::MessagePrefix(queue_id);
  auto walk =
      std::make_unique<LaneWalk>(dir.get(), *sweep.codec, message_prefix);
  for (walk->Seek(message_prefix); walk->Valid();) {
    // Watermarks are durable: the next sweep resumes where this one stops.
    if (IsClosing()) break;
    ++stats->lanes;
    const std::string lane(walk->prefix());
    MessageId last_deleted;
    HQ_ASSIGN_OR_RETURN(const MessageId swept, ReadSweepWatermark(lane));
    HQ_ASSIGN_OR_RETURN(
        const uint64_t deleted,
        SweepLane(sweep, lane, swept, it.get(), stats, &last_deleted));
    stats->deleted += static_cast<int64_t>(deleted);
    // Compact this lane's deleted span now, while the memtable holds mostly
    // its tombstones (a span across lanes would rewrite the live messages
    // between them). Small spans are left to LevelDB's own compactions:
    // readers and the next sweep seek past them anyway.
    if (deleted < sweep.batch_limit) {
      walk->Next();
      continue;
    }
    std::string start = lane, end = lane;
    LayoutCodec::AppendMessageId(&start, swept);
    LayoutCodec::AppendMessageId(&end, last_deleted.Next());
    // Iterators pin table files: release them around the compaction, or
    // its obsolete files stay on disk until a later one.
    walk.reset();
    it.reset();
    dir.reset();
    const leveldb::Slice b(start), e(end);
    db_->CompactRange(&b, &e);
    HQ_RETURN_IF_ERROR(DamageError());
    dir.reset(NewCheckedIterator(db_.get(), CheckedReadOptions()));
    it.reset(NewCheckedIterator(db_.get(), CheckedReadOptions()));
    walk = std::make_unique<LaneWalk>(dir.get(), *sweep.codec, message_prefix);
    walk->Seek(lane + '\0');  // The next lane.
  }
  return walk->status();
}

absl::StatusOr<MessageId> DbImpl::ReadSweepWatermark(const std::string& lane) {
  std::string value;
  // The watermark is stored at the lane head (format.h).
  leveldb::Status s = CheckedGet(db_.get(), CheckedReadOptions(), lane, &value);
  if (s.IsNotFound()) return MessageId::Min();
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a TTL sweep watermark"));
  if (value.size() != LayoutCodec::kMessageIdSize) {
    return absl::DataLossError("malformed TTL sweep watermark");
  }
  return LayoutCodec::DecodeMessageId(value.data());
}

absl::StatusOr<uint64_t> DbImpl::SweepLane(
    const LaneSweep& sweep, const std::string& lane, MessageId swept,
    leveldb::Iterator* it, SweepStats* stats, MessageId* last_deleted) {
  if (sweep.cutoff <= swept) return 0;
  leveldb::WriteBatch b;
  std::vector<SweptDedup> dedups;  // Of the messages deleted in `b`.
  uint64_t deleted = 0;
  std::string start = lane;
  LayoutCodec::AppendMessageId(&start, swept);
  // Seek to where the last sweep stopped: the deleted keys before it are
  // never read again.
  for (it->Seek(start); it->Valid(); it->Next()) {
    const std::string_view key = View(it->key());
    if (!key.starts_with(lane)) break;
    DecodedKey k;
    if (!sweep.codec->DecodeMessageKey(key, sweep.queue_id, &k)) {
      return absl::DataLossError(
          absl::StrCat("undecodable message key '", Printable(key), "'"));
    }
    ++stats->examined;
    if (k.id >= sweep.cutoff) break;  // Live (or a format 4 lane fence).
    std::string_view mkey, payload, dedup;
    if (!format::DecodeMessageValue(View(it->value()), &mkey, &payload, nullptr,
                                    &dedup)) {
      return absl::DataLossError(
          absl::StrCat("undecodable message value at '", Printable(key), "'"));
    }
    if (!dedup.empty()) {
      dedups.push_back(
          {format::DedupKey(sweep.queue_id, dedup), k.partition, k.id});
    }
    b.Delete(it->key());
    *last_deleted = k.id;
    ++deleted;
    if (deleted % sweep.batch_limit == 0) {
      HQ_RETURN_IF_ERROR(FlushSweep(lane, *last_deleted, &b, &dedups));
    }
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "sweeping expired messages"));
  if (deleted % sweep.batch_limit != 0) {
    HQ_RETURN_IF_ERROR(FlushSweep(lane, *last_deleted, &b, &dedups));
  }
  return deleted;
}

absl::Status DbImpl::FlushSweep(const std::string& lane, MessageId last_deleted,
                                leveldb::WriteBatch* b,
                                std::vector<SweptDedup>* dedups) {
  // The watermark moves to just past the last id deleted, never to the
  // cutoff: a message committed late (or below a stepped-back cutoff) and
  // not seen by this sweep stays above it and is deleted next time.
  std::string v;
  LayoutCodec::AppendMessageId(&v, last_deleted.Next());
  b->Put(lane, v);
  HQ_RETURN_IF_ERROR(
      WriteOther(leveldb::WriteOptions(), b, "sweeping expired messages"));
  b->Clear();
  if (dedups->empty()) return absl::OkStatus();
  // Deleted only if they still name the deleted message: a Put may have
  // reused the key since. Inside the write pipeline, so no Put checks or
  // writes a dedup record meanwhile.
  Writer x;
  x.exclusive = [&]() -> absl::Status {
    write_mu_.AssertHeld();
    if (!bg_error_.ok()) return BrokenError();
    leveldb::WriteBatch del;
    std::string value;
    for (const SweptDedup& d : *dedups) {
      const leveldb::Status got =
          CheckedGet(db_.get(), CheckedReadOptions(), d.key, &value);
      if (got.IsNotFound()) continue;
      HQ_RETURN_IF_ERROR(FromLevelDb(got, "reading an expired dedup record"));
      uint32_t p;
      MessageId stored;
      if (!format::DecodeDedup(value, &p, &stored)) {
        return absl::DataLossError(
            absl::StrCat("malformed dedup record '", Printable(d.key), "'"));
      }
      if (p == d.partition && stored == d.id) del.Delete(d.key);
    }
    const absl::Status s =
        FromLevelDb(db_->Write(leveldb::WriteOptions(), &del),
                    "deleting expired dedup records");
    if (!s.ok()) RecordWriteError(s);
    return s;
  };
  HQ_RETURN_IF_ERROR(RunWriter(&x));
  dedups->clear();
  return absl::OkStatus();
}

void DbImpl::ArmJanitorTimer(absl::Duration interval, bool DbImpl::*due) {
  // The timer re-arms itself when it fires, so intervals do not drift with
  // the work's duration; work due while it runs coalesces into one run.
  (void)leases_->Create(interval, [this, interval, due] {
    {
      MutexLock l(&janitor_mu_);
      this->*due = true;
      janitor_cv_.Signal();
    }
    ArmJanitorTimer(interval, due);
  });
}

void DbImpl::JanitorLoop() {
  while (true) {
    bool sweep, status, soon;
    {
      MutexLock l(&janitor_mu_);
      // An early publication waits until kEarlyStatusGap after the last
      // one, so that a process loading many groups publishes a few times,
      // not once per group.
      while (!sweep_due_ && !status_due_ && reclaim_.empty() &&
             !janitor_stop_ &&
             !(status_soon_ && absl::Now() >= next_early_status_)) {
        if (status_soon_) {
          janitor_cv_.WaitWithTimeout(&janitor_mu_,
                                      next_early_status_ - absl::Now());
        } else {
          janitor_cv_.Wait(&janitor_mu_);
        }
      }
      if (janitor_stop_) return;
      sweep = std::exchange(sweep_due_, false);
      status = std::exchange(status_due_, false);
      soon = status_soon_ && (status || absl::Now() >= next_early_status_);
      if (soon) status_soon_ = false;
    }
    // Failures are retried at the next interval.
    if (status || soon) (void)PublishStatus(/*timed=*/status);
    if (status || soon) {
      MutexLock l(&janitor_mu_);
      if (status) ++timed_statuses_;
      next_early_status_ = absl::Now() + kEarlyStatusGap;
    }
    if (sweep) (void)CompactExpired();
    ReclaimQueued();
  }
}

void DbImpl::ReclaimLater(std::string prefix) {
  if (!JanitorRuns()) return;
  MutexLock l(&janitor_mu_);
  reclaim_.push_back(std::move(prefix));
  janitor_cv_.Signal();
}

void DbImpl::ReclaimQueued() {
  while (true) {
    std::string begin;
    {
      MutexLock l(&janitor_mu_);
      if (reclaim_.empty() || janitor_stop_) return;
      begin = std::move(reclaim_.front());
      reclaim_.pop_front();
    }
    const std::string end = coding::PrefixSuccessor(begin);
    const leveldb::Slice b(begin), e(end);
    db_->CompactRange(&b, &e);
    if (!DamageError().ok()) return;  // Every later call reports it.
    MutexLock l(&janitor_mu_);
    ++reclaimed_;
  }
}

int64_t DbImpl::TEST_ReclaimedRanges() {
  MutexLock l(&janitor_mu_);
  return reclaimed_;
}

int64_t DbImpl::TEST_SweepCount() {
  MutexLock l(&sweep_mu_);
  return sweeps_;
}

}  // namespace hq
