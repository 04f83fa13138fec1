// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The park records of an ordered consumer group of a topic layout queue
// (doc/format.md, "Parked lanes"; doc/massive_topics.md, "Ordered groups"),
// and what the group knows of them without reading them.
//
// An ordered claim takes one task from each idle partition of its consumer.
// A lane it cannot take (its partition busy or another consumer's, or a
// task of it pending) is *parked* when the claim needs room: it leaves the
// working set, and a record keyed by its partition and priority finds it
// again when that partition wants work, without the lane activity index.
// The group decides when a lane is parked, taken back and released; this
// class owns the records' keys and reads, and two facts kept in memory so
// that most claims read nothing: whether the group may have park records
// at all, and per (partition, priority) whether none is left outside the
// working set.
//
// Not thread-safe: its group calls it under the group's lock
// (GroupImpl::mu_). The DB and the codec must outlive it.

#ifndef HQ_LIB_CONSUME_PARKED_LANES_H_
#define HQ_LIB_CONSUME_PARKED_LANES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "leveldb/db.h"
#include "leveldb/iterator.h"
#include "leveldb/write_batch.h"
#include "lib/format/layout_codec.h"

namespace hq {

class ParkedLanes {
 public:
  // The park records of group `group_id` (named `group` in errors) of the
  // queue `queue_id` with lane codec `codec`.
  ParkedLanes(leveldb::DB* db, const LayoutCodec* codec, uint32_t queue_id,
              uint32_t group_id, std::string group);
  ParkedLanes(const ParkedLanes&) = delete;
  ParkedLanes& operator=(const ParkedLanes&) = delete;

  // At load, for a queue of `partitions` x `priorities`: finds whether the
  // group has park records. Until Load, the group has none (a group that
  // never parks need not call it).
  absl::Status Load(uint32_t partitions, int priorities);

  // Whether the lane `lane_prefix` has a park record on disk (read only if
  // the group may have any). DataLoss for a malformed record.
  absl::StatusOr<bool> Read(std::string_view lane_prefix) const;
  // A lane of (`partition`, `priority`) is parked: appends its record to
  // `batch` if `put` (it has none yet), and from now on its partition and
  // priority may have parked lanes.
  void Park(std::string_view lane_prefix, uint32_t partition, int priority,
            bool put, leveldb::WriteBatch* batch);
  // Appends the deletion of the record of the lane `lane_prefix`.
  void Delete(std::string_view lane_prefix, leveldb::WriteBatch* batch) const;

  // Whether (`partition`, `priority`) has no park record outside the
  // working set, as of the last Next that found none there (and no Park
  // since).
  bool empty(uint32_t partition, int priority) const {
    return !empty_.empty() && empty_[partition][priority];
  }
  // Calls take(prefix) for each lane parked in (`partition`, `priority`),
  // in key order (reading with `it`), until it returns true (it took the
  // lane); if none did, the pair is empty() from now on. DataLoss for a
  // malformed record; take's error stops the walk and is returned.
  absl::Status Next(
      uint32_t partition, int priority, leveldb::Iterator* it,
      absl::FunctionRef<absl::StatusOr<bool>(std::string prefix)> take);
  // Appends the lanes of up to `max` park records (any partition and
  // priority, in key order) to `out`; clears `*all` if there are more.
  absl::Status Peek(size_t max, leveldb::Iterator* it,
                    std::vector<std::string>* out, bool* all) const;

 private:
  std::string Key(std::string_view lane_prefix) const;
  absl::Status Malformed() const;

  leveldb::DB* const db_;
  const LayoutCodec* const codec_;
  const uint32_t queue_id_;
  const std::string group_;
  const std::string range_;           // format::ParkPrefix.
  const std::string message_prefix_;  // format::MessagePrefix.
  // Park records may exist (found at load, or written since).
  bool maybe_ = false;
  // Per partition and priority (after Load): no park record outside the
  // working set (set by Next, cleared by Park).
  std::vector<std::vector<bool>> empty_;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_PARKED_LANES_H_
