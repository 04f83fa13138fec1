// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The backlog a consumer group's Stats counts (GroupStats::backlog and the
// redeliveries a restart left on disk), in two steps so that the group's
// lock is not held while it reads:
// - Under the group's lock, the lanes to count are copied in: a lane in
//   memory with its scan cursor and the ids of its tasks (which are not
//   backlog), and a lane waiting on disk (peeked in the source or a park
//   record) with where its cursors are if it has no cursor record. Each
//   lane is taken once, the first time it is added.
// - Without the lock, on a snapshot taken under it: each lane's messages
//   from its scan cursor are counted, up to GroupRecords::kStatsCountLimit
//   in all; for a lane on disk, its cursors are read, and the messages in
//   their window (handed out before a restart, not completed) count as
//   redeliveries.
//
// Not thread-safe: one Stats call owns it. `records` must outlive it.

#ifndef HQ_LIB_CONSUME_GROUP_BACKLOG_H_
#define HQ_LIB_CONSUME_GROUP_BACKLOG_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "hq/group.h"
#include "leveldb/db.h"
#include "lib/consume/group_lane.h"
#include "lib/consume/group_records.h"

namespace hq {

class GroupBacklog {
 public:
  explicit GroupBacklog(const GroupRecords* records) : records_(records) {}
  GroupBacklog(const GroupBacklog&) = delete;
  GroupBacklog& operator=(const GroupBacklog&) = delete;

  // Adds `lane` (in memory), unless a lane of its prefix was added.
  void AddLane(const GroupLane& lane);
  // Adds the lane `prefix` of `partition`, not in memory, whose cursors
  // are at `absent` if it has no cursor record; unless it was added.
  void AddOnDisk(const std::string& prefix, uint32_t partition,
                 MessageId absent);

  // Counts the lanes added into `st` (backlog, backlog_exact, redelivery),
  // reading `db` at `snapshot` with TTL cutoff `cutoff`; calls hook()
  // before each lane. DataLoss for a malformed cursor record.
  absl::Status Count(leveldb::DB* db, const leveldb::Snapshot* snapshot,
                     MessageId cutoff, absl::FunctionRef<void()> hook,
                     GroupStats* st) const;

 private:
  using Lane = GroupRecords::BacklogLane;
  // Whether the lane `prefix` is new (and notes it).
  bool Add(std::string_view prefix);

  const GroupRecords* const records_;
  std::vector<Lane> lanes_;
  absl::flat_hash_set<std::string> seen_;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_GROUP_BACKLOG_H_
