// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A consumer group's dead-letter queue (hq/group.h: `<queue>.dead.<group>`)
// as the group writes to it: found or created on demand, and each letter
// written with its dead record (doc/format.md) in the batch of the group's
// own records.

#ifndef HQ_LIB_CONSUME_DEAD_LETTER_QUEUE_H_
#define HQ_LIB_CONSUME_DEAD_LETTER_QUEUE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hq/group.h"
#include "leveldb/write_batch.h"
#include "lib/format/format.h"

namespace hq {

class DbImpl;
class QueueImpl;

// Thread-safe: constant after construction. `db` and `queue` outlive it.
class DeadLetterQueue {
 public:
  // The dead-letter queue of group `group_id` named `group` of `queue`.
  DeadLetterQueue(DbImpl* db, QueueImpl* queue, uint32_t group_id,
                  const std::string& group);

  const std::string& name() const { return name_; }
  // The queue, opened; created (with the group's queue's partitions,
  // priorities, layout and payload limit) if it is missing and `create`.
  absl::StatusOr<QueueImpl*> Open(bool create) const;
  // Writes `letters` (with their `infos`) to the queue, which it creates if
  // needed (again if it is dropped meanwhile), and `extra` in the same
  // batch. Fails with NotFound, writing nothing, once the group's queue is
  // dropped.
  absl::Status Write(const std::vector<Task>& letters,
                     const std::vector<format::DeadValue>& infos,
                     const leveldb::WriteBatch& extra) const;
  // Calls fn(key) with the key of each of the group's dead records (one a
  // letter written), in key order.
  absl::Status ForEachRecord(
      absl::FunctionRef<void(std::string_view key)> fn) const;

 private:
  DbImpl* const db_;
  QueueImpl* const queue_;
  const uint32_t group_id_;
  const std::string name_;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_DEAD_LETTER_QUEUE_H_
