// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The cursors of a consumer group's lanes as stored (doc/format.md,
// "Cursor records"): how the group reads a lane's cursors into memory and
// writes them back.
//
// - A lane without a cursor record has both cursors at its Absent place:
//   the group's start in its partition (GroupRecords::StartOf) or, for a
//   paged group whose source has walked past the lane, the source's floor
//   (LaneSource::Floor), whichever is later.
// - A paged group keeps the greatest key of its cursor records
//   (RecordCeiling): a lane above it has no record, and is read without a
//   Get (every lane of a first walk). Every cursor record the group writes
//   goes through Put, which raises it.
// - A drained lane with no record and no task, with nothing between its
//   scan cursor and its floor, may go without a record (Floor): its new
//   cursors are where Absent would put them. The group's write then writes
//   its record only if the source position written with it does not pass
//   the lane (PutFloored).
//
// Not thread-safe: the group calls it under its lock (GroupImpl::mu_).
// `records` and `source` (null: the group is not paged) must outlive it.

#ifndef HQ_LIB_CONSUME_GROUP_CURSORS_H_
#define HQ_LIB_CONSUME_GROUP_CURSORS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "hq/message.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "lib/consume/group_lane.h"
#include "lib/consume/group_records.h"
#include "lib/consume/lane_source.h"
#include "lib/consume/record_ceiling.h"
#include "lib/format/format.h"

namespace hq {

class GroupCursors {
 public:
  GroupCursors(const GroupRecords* records, LaneSource* source)
      : records_(records), source_(source) {}
  GroupCursors(const GroupCursors&) = delete;
  GroupCursors& operator=(const GroupCursors&) = delete;

  // At load (paged groups): reads the greatest key of `db` under
  // `cursor_prefix`, the prefix of the group's cursor records.
  absl::Status Load(leveldb::DB* db, std::string_view cursor_prefix) {
    return ceiling_.Load(db, cursor_prefix);
  }

  // Where the cursors of the lane `prefix` (of `partition`, `priority`)
  // are if it has no cursor record; *floored (if not null) says whether at
  // the source's floor.
  MessageId Absent(std::string_view prefix, uint32_t partition, int priority,
                   bool* floored = nullptr) const;
  // Sets the cursors of `lane`, not yet in memory (its prefix, partition
  // and priority set): `cursor` if not null (as stored, read by the
  // caller), else its cursor record if it may exist, else Absent. Sets
  // what the lane knows of its record (saved, saved_exists, record).
  // DataLoss for a malformed record.
  absl::Status Read(GroupLane* lane, const format::CursorValue* cursor);
  // Appends `lane`'s cursor record (scan, done) to `batch`; marks it put
  // (GroupLane::cursor_put), no longer floored.
  void Put(GroupLane* lane, leveldb::WriteBatch* batch);
  // For a lane whose cursors changed: true if they may go without a record
  // (see above): the lane is marked floored and left to PutFloored.
  bool Floor(GroupLane* lane);
  // The lanes Floor left get their cursor records in `batch`: all of them
  // (a batch written without the source position), or with `unless_passed`
  // those that the source position as last appended does not pass.
  void PutFloored(leveldb::WriteBatch* batch, bool unless_passed);

  // Cursor records read since load (a test hook's count).
  uint64_t reads() const { return reads_; }

 private:
  bool paged() const { return source_ != nullptr; }
  // The cursor key of `lane_prefix` in key_ (valid until the next call),
  // which saves an allocation per cursor write.
  const std::string& Key(std::string_view lane_prefix);

  const GroupRecords* const records_;
  LaneSource* const source_;
  RecordCeiling ceiling_;            // Paged: the greatest cursor key.
  std::vector<GroupLane*> floored_;  // Floor's lanes, for PutFloored.
  std::string key_;
  std::string value_;
  uint64_t reads_ = 0;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_GROUP_CURSORS_H_
