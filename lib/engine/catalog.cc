// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// DbImpl (lib/engine/db_impl.h): the catalog: CreateQueue, OpenQueue, DropQueue
// (and finishing drops a crash interrupted), ListQueues.

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
namespace {

constexpr size_t kDeleteBatch = 1000;

}  // namespace

absl::StatusOr<QueueImpl*> DbImpl::FindQueueLocked(std::string_view name) {
  HQ_RETURN_IF_ERROR(format::ValidateQueueName(name));
  if (auto it = queues_.find(std::string(name)); it != queues_.end()) {
    return it->second.get();
  }
  std::string value;
  leveldb::Status s = CheckedGet(db_.get(), CheckedReadOptions(),
                                 format::CatalogKey(name), &value);
  if (s.IsNotFound()) {
    return absl::NotFoundError(absl::StrCat("no queue named '", Av(name), "'"));
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading the queue catalog"));
  format::QueueRecord record;
  HQ_RETURN_IF_ERROR(format::DecodeQueueRecord(value, &record));
  auto q = std::make_unique<QueueImpl>(this, std::string(name), record);
  QueueImpl* raw = q.get();
  queues_.emplace(std::string(name), std::move(q));
  return raw;
}

absl::StatusOr<Queue*> DbImpl::CreateQueue(std::string_view name,
                                           const QueueOptions& options) {
  HQ_RETURN_IF_ERROR(format::ValidateQueueName(name));
  HQ_RETURN_IF_ERROR(format::ValidateQueueOptions(options));
  OpScope op(this);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&catalog_mu_);
  auto existing = FindQueueLocked(name);
  if (existing.ok()) {
    return absl::AlreadyExistsError(
        absl::StrCat("queue '", Av(name), "' already exists"));
  }
  if (!absl::IsNotFound(existing.status())) return existing.status();
  if (next_queue_id_ == UINT32_MAX) {
    return absl::ResourceExhaustedError("all 2^32-1 queue ids are used");
  }
  format::QueueRecord record;
  record.id = next_queue_id_;
  record.options = options;
  // Whole ms, and not before 1970 (the catalog stores unsigned ms).
  record.created = absl::FromUnixMillis(
      std::max<int64_t>(0, absl::ToUnixMillis(clock_->Now())));
  leveldb::WriteBatch b;
  b.Put(format::CatalogKey(name), format::EncodeQueueRecord(record));
  if (options.ttl != absl::InfiniteDuration()) {
    b.Put(format::TtlKey(record.id), leveldb::Slice(name.data(), name.size()));
  }
  std::string next;
  coding::PutFixed32(&next, record.id + 1);
  b.Put(format::MetaKey("next_queue_id"), next);
  HQ_RETURN_IF_ERROR(
      WriteOther(CatalogWriteOptions(), &b,
                 absl::StrCat("creating queue '", Av(name), "'")));
  ++next_queue_id_;
  auto q = std::make_unique<QueueImpl>(this, std::string(name), record);
  QueueImpl* raw = q.get();
  queues_.emplace(std::string(name), std::move(q));
  return raw;
}

absl::StatusOr<Queue*> DbImpl::OpenQueue(std::string_view name) {
  OpScope op(this);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&catalog_mu_);
  HQ_ASSIGN_OR_RETURN(QueueImpl * q, FindQueueLocked(name));
  return q;
}

absl::Status DbImpl::DropQueue(std::string_view name) {
  OpScope op(this);
  HQ_RETURN_IF_ERROR(op.status());
  uint32_t queue_id;
  QueueImpl* dropped_queue = nullptr;
  std::vector<std::string> dead_queues;
  {
    MutexLock l(&catalog_mu_);
    HQ_ASSIGN_OR_RETURN(QueueImpl * q, FindQueueLocked(name));
    queue_id = q->id();
    // The dead-letter queues of its consumer groups go with it.
    HQ_ASSIGN_OR_RETURN(std::vector<std::string> groups, q->ListGroups());
    for (const std::string& g : groups) {
      dead_queues.push_back(absl::StrCat(Av(name), ".dead.", g));
    }
    // Run inside the write pipeline so that no write of this queue is in
    // flight; writers queued behind see it dropped.
    Writer w;
    w.exclusive = [this, q, queue_id, name]() -> absl::Status {
      write_mu_.AssertHeld();
      if (!bg_error_.ok()) return BrokenError();
      leveldb::WriteBatch b;
      b.Delete(format::CatalogKey(name));
      b.Delete(format::TtlKey(queue_id));
      b.Put(format::DropKey(queue_id), "");
      leveldb::WriteOptions wo;
      wo.sync = true;
      const absl::Status s = FromLevelDb(
          db_->Write(wo, &b), absl::StrCat("dropping queue '", Av(name), "'"));
      if (!s.ok()) {
        RecordWriteError(s);
        return s;
      }
      q->MarkDropped();
      for (uint32_t p = 0; p < q->options().partitions; ++p) {
        ids_.erase(PartitionKey(queue_id, p));
      }
      last_ids_key_ = kNoPartition;
      return absl::OkStatus();
    };
    HQ_RETURN_IF_ERROR(RunWriter(&w));
    auto node = queues_.extract(queues_.find(std::string(name)));
    dropped_.push_back(std::move(node.mapped()));
    dropped_queue = dropped_.back().get();
  }
  dropped_queue->consumers()->WakeWaiters();  // Blocked claims return NotFound.
  absl::Status s = DeleteQueueData(queue_id);
  if (!s.ok()) {
    return WithErrorDetail(
        absl::Status(s.code(),
                     absl::StrCat("queue '", Av(name),
                                  "' is dropped, but deleting its data failed "
                                  "(the next Open finishes it): ",
                                  s.message())),
        ErrorDetail::kDropDurable);
  }
  for (const std::string& dead : dead_queues) {
    s = DropQueue(dead);
    if (!s.ok() && !absl::IsNotFound(s)) {
      return WithErrorDetail(
          absl::Status(s.code(), absl::StrCat("queue '", Av(name),
                                              "' is dropped, but dropping its "
                                              "dead-letter queue failed: ",
                                              s.message())),
          ErrorDetail::kDropDurable);
    }
  }
  return absl::OkStatus();
}

absl::Status DbImpl::DeleteKeysUnder(
    const std::string& prefix, std::string_view what,
    const std::function<absl::Status(leveldb::WriteBatch*)>& write) {
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  leveldb::WriteBatch b;
  size_t n = 0;
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    b.Delete(it->key());
    if (++n % kDeleteBatch == 0) {
      HQ_RETURN_IF_ERROR(write(&b));
      b.Clear();
    }
  }
  HQ_RETURN_IF_ERROR(
      FromLevelDb(it->status(), absl::StrCat("scanning ", Av(what))));
  if (n % kDeleteBatch != 0) HQ_RETURN_IF_ERROR(write(&b));
  // Compacting here would hold the caller for as long as LevelDB takes to
  // compact every level-0 table (all overlap the range) while other
  // queues keep writing. Large ranges go to the janitor; small ones are
  // left to LevelDB's own compactions, as the TTL sweep does.
  if (n >= static_cast<size_t>(options_.ttl_sweep_batch)) ReclaimLater(prefix);
  return absl::OkStatus();
}

absl::Status DbImpl::DeleteQueueData(uint32_t queue_id) {
  // Not during a sweep: it could write watermarks of this queue after they
  // were deleted here. A sweep that starts later finds the queue gone.
  MutexLock sweep(&sweep_mu_);
  for (const std::string& prefix :
       {format::MessagePrefix(queue_id), format::ReservePrefix(queue_id),
        format::LaneDirPrefix(queue_id), format::GroupPrefix(queue_id),
        format::QueuePrefix(format::kDedupTag, queue_id),
        format::QueuePrefix(format::kCursorTag, queue_id),
        format::QueuePrefix(format::kTaskTag, queue_id),
        format::QueuePrefix(format::kDeadTag, queue_id),
        format::QueuePrefix(format::kSubTag, queue_id),
        format::QueuePrefix(format::kCheckpointTag, queue_id),
        format::QueuePrefix(format::kHintTag, queue_id),
        format::QueuePrefix(format::kSourceTag, queue_id),
        format::QueuePrefix(format::kPaceTag, queue_id),
        format::QueuePrefix(format::kParkTag, queue_id),
        format::QueuePrefix(format::kClaimTag, queue_id),
        format::QueuePrefix(format::kDeleteTag, queue_id)}) {
    HQ_RETURN_IF_ERROR(DeleteKeysUnder(
        prefix, "a dropped queue", [this](leveldb::WriteBatch* b) {
          return WriteOther(leveldb::WriteOptions(), b,
                            "deleting a dropped queue");
        }));
  }
  leveldb::WriteOptions wo;
  wo.sync = true;
  leveldb::WriteBatch b;
  b.Delete(format::DropKey(queue_id));
  return WriteOther(wo, &b, "finishing a queue drop");
}

absl::Status DbImpl::FinishPendingDrops() {
  std::vector<uint32_t> pending;
  {
    std::unique_ptr<leveldb::Iterator> it(
        NewCheckedIterator(db_.get(), CheckedReadOptions()));
    const std::string prefix = format::DropPrefix();
    for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
         it->Next()) {
      std::string_view key = View(it->key());
      key.remove_prefix(1);
      uint32_t id;
      if (!coding::GetFixed32(&key, &id) || !key.empty()) {
        return absl::DataLossError("malformed drop marker");
      }
      pending.push_back(id);
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading drop markers"));
  }
  for (uint32_t id : pending) HQ_RETURN_IF_ERROR(DeleteQueueData(id));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> DbImpl::ListQueues() {
  OpScope op(this);
  HQ_RETURN_IF_ERROR(op.status());
  std::vector<std::string> names;
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  const std::string prefix = format::CatalogPrefix();
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    names.emplace_back(View(it->key()).substr(prefix.size()));
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "listing queues"));
  return names;
}

}  // namespace hq
