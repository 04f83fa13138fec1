// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The keys and stored records of one consumer group (doc/format.md): its
// cursor and task records, and what reading them needs of the
// group's fixed options (its start, its topic filter).

#ifndef HQ_LIB_CONSUME_GROUP_RECORDS_H_
#define HQ_LIB_CONSUME_GROUP_RECORDS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hq/group.h"
#include "hq/message.h"
#include "leveldb/db.h"
#include "lib/format/format.h"

namespace hq {

// Thread-safe: constant after construction. `db` must outlive it.
class GroupRecords {
 public:
  // Stats counts the backlog key by key up to this many keys.
  static constexpr uint64_t kStatsCountLimit = 100000;

  // The records of group `record` (named `group` in errors) of queue
  // `queue_id`, whose lanes have a topic if `lane_has_topic`.
  GroupRecords(leveldb::DB* db, uint32_t queue_id,
               const format::GroupRecord& record, std::string group,
               bool lane_has_topic);

  // Whether messages of `topic` are in the group's scope (its filter).
  bool InScope(std::string_view topic) const;
  // The first id the group hands out in `partition` (GroupOptions::start):
  // the scan and completion cursors of a lane it has no cursor record for.
  MessageId StartOf(uint32_t partition) const;

  std::string TaskKey(std::string_view lane_prefix, MessageId id) const;
  // The key of the cursor record of the lane `lane_prefix`, appended to
  // `k` (CursorKey returns it).
  void AppendCursorKey(std::string* k, std::string_view lane_prefix) const;
  std::string CursorKey(std::string_view lane_prefix) const;

  // The cursors of the lane `prefix` as stored, read with `ro`; a lane
  // without a cursor record has both at `absent` (GroupImpl::Absent's
  // answer), and *stored (if not null) says which. DataLoss for a
  // malformed record.
  absl::StatusOr<format::CursorValue> ReadCursor(std::string_view prefix,
                                                 MessageId absent,
                                                 const leveldb::ReadOptions& ro,
                                                 bool* stored = nullptr) const;
  // Calls fn(id) for each message of the lane `prefix` in the window of
  // its cursors `c` (handed out, not completed), from max(c.done, from),
  // in id order, while fn returns true.
  static absl::Status ForEachInWindow(std::string_view prefix,
                                      const format::CursorValue& c,
                                      MessageId from, leveldb::Iterator* it,
                                      absl::FunctionRef<bool(MessageId)> fn);

  // A lane whose backlog Stats counts, copied from the group under its
  // lock and counted without it.
  struct BacklogLane {
    std::string prefix;
    MessageId scan;               // Counted from here (in memory).
    std::vector<MessageId> skip;  // Ids with task records, ascending.
    uint32_t partition = 0;
    // Not in memory: the cursors are read from the lane's cursor record,
    // and the window between them counts as redelivery.
    bool on_disk = false;
    MessageId absent;  // on_disk: the cursors without a record (Absent).
  };
  // Adds the messages of `lane` from `scan` (and `cutoff`) to st->backlog,
  // up to kStatsCountLimit (then clears st->backlog_exact).
  absl::Status CountLane(const BacklogLane& lane, MessageId scan,
                         MessageId cutoff, leveldb::Iterator* it,
                         GroupStats* st) const;

 private:
  leveldb::DB* const db_;
  const uint32_t queue_id_;
  const uint32_t group_id_;
  const std::string group_;
  const bool lane_has_topic_;
  // The key prefix of the group's cursor records.
  const std::string cursor_prefix_;
  const std::vector<MessageId> start_ids_;
  const absl::flat_hash_set<std::string> topic_set_;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_GROUP_RECORDS_H_
