// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The stored pacing of one consumer group (doc/format.md): each topic's own
// pacing record (ConsumerGroup::SetTopicPacing) and the group's pace clock,
// its latest paced hand-out, stored with each claim so that intervals hold
// across a restart.

#ifndef HQ_LIB_CONSUME_PACE_RECORDS_H_
#define HQ_LIB_CONSUME_PACE_RECORDS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hq/group.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "lib/consume/pacer.h"

namespace hq {

// Thread-safe: constant after construction. `db` must outlive it.
class PaceRecords {
 public:
  // The records of group `group_id` (named `group` in errors) of queue
  // `queue_id`.
  PaceRecords(leveldb::DB* db, uint32_t queue_id, uint32_t group_id,
              std::string group);

  // OK, or InvalidArgument for a topic longer than format::kMaxTopicBytes.
  absl::Status CheckTopic(std::string_view topic) const;
  // `topic`'s own pacing (nullopt: none). DataLoss for a malformed record.
  absl::StatusOr<std::optional<TopicPacing>> Read(std::string_view topic) const;
  // At load: tells `pacer` whether the group has pacing records, and its
  // latest paced hand-out before the restart.
  absl::Status Load(Pacer* pacer) const;
  // Appends `latest` as the pace clock to `batch` if it moved from
  // `before`.
  void PutClock(absl::Time latest, absl::Time before,
                leveldb::WriteBatch* batch) const;
  // Appends `topic`'s own pacing (to the millisecond), or its deletion.
  void Put(std::string_view topic, const TopicPacing& pacing,
           leveldb::WriteBatch* batch) const;
  void Delete(std::string_view topic, leveldb::WriteBatch* batch) const;
  // Up to `max` topics with their own pacing, in topic order, after
  // `after` (null: from the first).
  absl::StatusOr<std::vector<std::pair<std::string, TopicPacing>>> List(
      size_t max, const std::string* after) const;

 private:
  leveldb::DB* const db_;
  const uint32_t queue_id_;
  const uint32_t group_id_;
  const std::string group_;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_PACE_RECORDS_H_
