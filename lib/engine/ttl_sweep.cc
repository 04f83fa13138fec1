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
  const LayoutCodec& codec = LayoutCodec::For(record.options.layout);
  const MessageId cutoff = MessageId::AtTime(now - record.options.ttl);
  const size_t batch_limit = static_cast<size_t>(options_.ttl_sweep_batch);
  std::unique_ptr<leveldb::Iterator> dir(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  const std::string dir_prefix = format::LaneDirPrefix(queue_id);
  for (dir->Seek(dir_prefix);
       dir->Valid() && View(dir->key()).starts_with(dir_prefix); dir->Next()) {
    // Watermarks are durable: the next sweep resumes where this one stops.
    if (IsClosing()) break;
    ++stats->lanes;
    std::string lane(1, format::kMessageTag);
    lane.append(View(dir->key()).substr(1));
    const std::string& swept_key = lane;  // The lane head (format.h).
    MessageId swept = MessageId::Min();
    s = CheckedGet(db_.get(), CheckedReadOptions(), swept_key, &value);
    if (s.ok()) {
      if (value.size() != LayoutCodec::kMessageIdSize) {
        return absl::DataLossError("malformed TTL sweep watermark");
      }
      swept = LayoutCodec::DecodeMessageId(value.data());
    } else if (!s.IsNotFound()) {
      return FromLevelDb(s, "reading a TTL sweep watermark");
    }
    if (cutoff <= swept) continue;

    std::string start = lane;
    LayoutCodec::AppendMessageId(&start, swept);
    leveldb::WriteBatch b;
    size_t in_batch = 0, lane_deleted = 0;
    MessageId last_deleted;
    // Dedup records of the deleted messages: (record key, partition, id).
    std::vector<std::tuple<std::string, uint32_t, MessageId>> dedups;
    // The watermark moves to just past the last id deleted, never to the
    // cutoff: a message committed late (or below a stepped-back cutoff) and
    // not seen by this sweep stays above it and is deleted next time.
    auto flush = [&]() -> absl::Status {
      std::string v;
      LayoutCodec::AppendMessageId(&v, last_deleted.Next());
      b.Put(swept_key, v);
      HQ_RETURN_IF_ERROR(
          WriteOther(leveldb::WriteOptions(), &b, "sweeping expired messages"));
      b.Clear();
      in_batch = 0;
      if (!dedups.empty()) {
        // Deleted only if they still name the deleted message: a Put may
        // have reused the key since. Inside the write pipeline, so no Put
        // checks or writes a dedup record meanwhile.
        Writer x;
        x.exclusive = [&]() -> absl::Status {
          write_mu_.AssertHeld();
          if (!bg_error_.ok()) return BrokenError();
          leveldb::WriteBatch del;
          std::string value;
          for (const auto& [key, partition, id] : dedups) {
            uint32_t p;
            MessageId stored;
            if (CheckedGet(db_.get(), CheckedReadOptions(), key, &value).ok() &&
                format::DecodeDedup(value, &p, &stored) && p == partition &&
                stored == id) {
              del.Delete(key);
            }
          }
          const absl::Status s =
              FromLevelDb(db_->Write(leveldb::WriteOptions(), &del),
                          "deleting expired dedup records");
          if (!s.ok()) RecordWriteError(s);
          return s;
        };
        HQ_RETURN_IF_ERROR(RunWriter(&x));
        dedups.clear();
      }
      return absl::OkStatus();
    };
    // Seek to where the last sweep stopped: the deleted keys before it are
    // never read again.
    for (it->Seek(start); it->Valid(); it->Next()) {
      const std::string_view key = View(it->key());
      if (!key.starts_with(lane)) break;
      DecodedKey k;
      if (!codec.DecodeMessageKey(key, queue_id, &k)) {
        return absl::DataLossError(
            absl::StrCat("undecodable message key '", Printable(key), "'"));
      }
      ++stats->examined;
      if (k.id >= cutoff) break;  // Live (or the lane's fence).
      std::string_view mkey, payload, dedup;
      if (!format::DecodeMessageValue(View(it->value()), &mkey, &payload,
                                      nullptr, &dedup)) {
        return absl::DataLossError(absl::StrCat(
            "undecodable message value at '", Printable(key), "'"));
      }
      if (!dedup.empty()) {
        dedups.emplace_back(format::DedupKey(queue_id, dedup), k.partition,
                            k.id);
      }
      b.Delete(it->key());
      last_deleted = k.id;
      ++lane_deleted;
      if (++in_batch >= batch_limit) HQ_RETURN_IF_ERROR(flush());
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "sweeping expired messages"));
    if (in_batch > 0) HQ_RETURN_IF_ERROR(flush());
    stats->deleted += static_cast<int64_t>(lane_deleted);
    // Compact this lane's deleted span now, while the memtable holds mostly
    // its tombstones (a span across lanes would rewrite the live messages
    // between them). Small spans are left to LevelDB's own compactions:
    // readers and the next sweep seek past them anyway.
    if (lane_deleted >= batch_limit) {
      std::string end = lane;
      LayoutCodec::AppendMessageId(&end, last_deleted.Next());
      // Iterators pin table files: release them around the compaction, or
      // its obsolete files stay on disk until a later one.
      const std::string resume(View(dir->key()));
      it.reset();
      dir.reset();
      const leveldb::Slice b(start), e(end);
      db_->CompactRange(&b, &e);
      dir.reset(NewCheckedIterator(db_.get(), CheckedReadOptions()));
      it.reset(NewCheckedIterator(db_.get(), CheckedReadOptions()));
      dir->Seek(resume);  // The loop's Next() moves past this lane.
      if (!dir->Valid()) break;
    }
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(dir->status(), "reading the lane directory"));
  return absl::OkStatus();
}

void DbImpl::ArmSweepTimer() {
  // The timer re-arms itself when it fires, so intervals do not drift with
  // the sweeps' duration; sweeps due while one runs coalesce into one.
  (void)leases_->Create(options_.ttl_sweep_interval, [this] {
    {
      MutexLock l(&janitor_mu_);
      sweep_due_ = true;
      janitor_cv_.Signal();
    }
    ArmSweepTimer();
  });
}

void DbImpl::JanitorLoop() {
  while (true) {
    {
      MutexLock l(&janitor_mu_);
      while (!sweep_due_ && !janitor_stop_) janitor_cv_.Wait(&janitor_mu_);
      if (janitor_stop_) return;
      sweep_due_ = false;
    }
    (void)CompactExpired();  // Failures are retried at the next interval.
  }
}

int64_t DbImpl::TEST_SweepCount() {
  MutexLock l(&sweep_mu_);
  return sweeps_;
}

}  // namespace hq
