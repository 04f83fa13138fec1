// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// DbImpl (lib/engine/db_impl.h): deleting a consumer group's or a
// subscription's records in bounded batches behind a tombstone, and
// finishing at Open the deletes a crash interrupted (doc/format.md,
// "Consumer deletes").

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
absl::Status DbImpl::BeginConsumerDelete(QueueImpl* queue,
                                         std::string_view record_key,
                                         uint32_t consumer_id,
                                         const format::DeleteValue& value) {
  leveldb::WriteBatch b;
  b.Delete(leveldb::Slice(record_key.data(), record_key.size()));
  b.Put(format::DeleteKey(queue->id(), consumer_id),
        format::EncodeDelete(value));
  leveldb::WriteOptions wo;
  wo.sync = true;
  return WriteOther(
      wo, &b,
      absl::StrCat("deleting a consumer of queue '", queue->name(), "'"));
}

absl::Status DbImpl::ForgetHasSources(uint32_t queue_id) {
  Writer x;
  x.exclusive = [&]() -> absl::Status {
    write_mu_.AssertHeld();
    has_sources_.erase(queue_id);
    return absl::OkStatus();
  };
  return RunWriter(&x);
}

absl::Status DbImpl::FinishConsumerDelete(uint32_t queue_id,
                                          uint32_t consumer_id,
                                          const format::DeleteValue& value) {
  int batches = 0;
  auto write = [&](leveldb::WriteBatch* b) -> absl::Status {
    if (delete_batch_hook_) HQ_RETURN_IF_ERROR(delete_batch_hook_(batches));
    ++batches;
    return WriteOther(leveldb::WriteOptions(), b,
                      "deleting a consumer's records");
  };
  for (const char tag : format::kConsumerRecordTags) {
    HQ_RETURN_IF_ERROR(
        DeleteKeysUnder(format::GroupRecordPrefix(tag, queue_id, consumer_id),
                        "a deleted consumer's records", write));
  }
  // Its source position is gone: if it was the queue's last, writes stop
  // adding to the lane activity index.
  HQ_RETURN_IF_ERROR(ForgetHasSources(queue_id));
  if (value.dead_queue_id != 0) {
    bool same = false;
    {
      MutexLock l(&catalog_mu_);
      absl::StatusOr<QueueImpl*> dead = FindQueueLocked(value.dead_queue);
      if (dead.ok()) {
        same = (*dead)->id() == value.dead_queue_id;
      } else if (!absl::IsNotFound(dead.status())) {
        return dead.status();
      }
    }
    if (same) {
      absl::Status s = DropQueue(value.dead_queue);
      if (!s.ok() && !absl::IsNotFound(s)) return s;
    }
  }
  leveldb::WriteBatch b;
  b.Delete(format::DeleteKey(queue_id, consumer_id));
  leveldb::WriteOptions wo;
  wo.sync = true;
  return WriteOther(wo, &b, "finishing a consumer's delete");
}

absl::Status DbImpl::FinishPendingDeletes() {
  struct Pending {
    uint32_t queue_id, consumer_id;
    format::DeleteValue value;
  };
  std::vector<Pending> pending;
  {
    std::unique_ptr<leveldb::Iterator> it(
        NewCheckedIterator(db_.get(), CheckedReadOptions()));
    const std::string prefix = format::DeletePrefix();
    for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
         it->Next()) {
      std::string_view key = View(it->key());
      key.remove_prefix(1);
      Pending p;
      if (!coding::GetFixed32(&key, &p.queue_id) ||
          !coding::GetFixed32(&key, &p.consumer_id) || !key.empty() ||
          !format::DecodeDelete(View(it->value()), &p.value)) {
        return absl::DataLossError(
            "malformed consumer delete tombstone (`hq repair` moves it aside)");
      }
      pending.push_back(std::move(p));
    }
    HQ_RETURN_IF_ERROR(
        FromLevelDb(it->status(), "reading consumer delete tombstones"));
  }
  for (const Pending& p : pending) {
    HQ_RETURN_IF_ERROR(
        FinishConsumerDelete(p.queue_id, p.consumer_id, p.value));
  }
  return absl::OkStatus();
}

}  // namespace hq
