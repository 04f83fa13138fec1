// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/group_cursors.h"

#include <algorithm>

#include "lib/engine/checked_read.h"
#include "lib/util/status_macros.h"

namespace hq {

MessageId GroupCursors::Absent(std::string_view prefix, uint32_t partition,
                               int priority, bool* floored) const {
  const MessageId start = records_->StartOf(partition);
  MessageId floor;
  const bool passed =
      paged() && source_->Floor(prefix, partition, priority, &floor);
  if (floored != nullptr) *floored = passed;
  return passed ? std::max(start, floor) : start;
}

absl::Status GroupCursors::Read(GroupLane* lane,
                                const format::CursorValue* cursor) {
  format::CursorValue c;
  if (cursor != nullptr) {
    c = *cursor;
    lane->saved_exists = lane->record = true;
  } else {
    bool floored;
    const MessageId absent =
        Absent(lane->prefix, lane->partition, lane->priority, &floored);
    if (paged() && !ceiling_.MayExist(Key(lane->prefix))) {
      c.scan = c.done = absent;
    } else {
      ++reads_;
      HQ_ASSIGN_OR_RETURN(
          c, records_->ReadCursor(lane->prefix, absent, CheckedReadOptions(),
                                  &lane->record));
    }
    lane->saved_exists = lane->record || floored;
  }
  lane->scan = c.scan;
  lane->done = c.done;
  lane->saved = c;
  return absl::OkStatus();
}

void GroupCursors::Put(GroupLane* lane, leveldb::WriteBatch* batch) {
  const std::string& key = Key(lane->prefix);
  value_.clear();
  format::AppendCursor(&value_, {lane->scan, lane->done});
  batch->Put(key, value_);
  ceiling_.Raise(key);
  lane->cursor_put = true;
  lane->floored = false;
}

bool GroupCursors::Floor(GroupLane* lane) {
  if (!paged() || lane->record || lane->active || !lane->at_end ||
      !lane->tasks.empty()) {
    return false;
  }
  // Every message of the partition below its floor was stored before the
  // source record, so the read that reached the lane's end saw each of
  // them from the scan cursor on: there are none up to the floor.
  MessageId floor;
  if (!source_->Floor(lane->partition, &floor) ||
      std::max(records_->StartOf(lane->partition), floor) < lane->scan) {
    return false;
  }
  if (!lane->floored) floored_.push_back(lane);
  lane->floored = true;
  return true;
}

void GroupCursors::PutFloored(leveldb::WriteBatch* batch, bool unless_passed) {
  for (GroupLane* lane : floored_) {
    if (lane->floored &&
        !(unless_passed && source_->Passed(lane->prefix, lane->priority))) {
      Put(lane, batch);
    }
  }
  floored_.clear();
}

const std::string& GroupCursors::Key(std::string_view lane_prefix) {
  key_.clear();
  records_->AppendCursorKey(&key_, lane_prefix);
  return key_;
}

}  // namespace hq
