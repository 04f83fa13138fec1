// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/group_backlog.h"

#include <memory>
#include <utility>

#include "lib/engine/checked_read.h"
#include "lib/util/status_macros.h"

namespace hq {

bool GroupBacklog::Add(std::string_view prefix) {
  return seen_.emplace(prefix).second;
}

void GroupBacklog::AddLane(const GroupLane& lane) {
  if (!Add(lane.prefix)) return;
  Lane b{.prefix = lane.prefix, .scan = lane.scan};
  for (const auto& [id, rec] : lane.tasks) b.skip.push_back(id);
  lanes_.push_back(std::move(b));
}

void GroupBacklog::AddOnDisk(const std::string& prefix, uint32_t partition,
                             MessageId absent) {
  if (!Add(prefix)) return;
  lanes_.push_back({.prefix = prefix,
                    .partition = partition,
                    .on_disk = true,
                    .absent = absent});
}

absl::Status GroupBacklog::Count(leveldb::DB* db,
                                 const leveldb::Snapshot* snapshot,
                                 MessageId cutoff,
                                 absl::FunctionRef<void()> hook,
                                 GroupStats* st) const {
  leveldb::ReadOptions ro = CheckedReadOptions();
  ro.snapshot = snapshot;
  ro.fill_cache = false;
  std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(db, ro));
  for (const Lane& lane : lanes_) {
    MessageId scan = lane.scan;
    if (lane.on_disk) {
      HQ_ASSIGN_OR_RETURN(const format::CursorValue c,
                          records_->ReadCursor(lane.prefix, lane.absent, ro));
      scan = c.scan;
      // Handed out before a restart, not completed: delivered again when
      // the lane is taken.
      HQ_RETURN_IF_ERROR(GroupRecords::ForEachInWindow(
          lane.prefix, c, cutoff, it.get(), [&](MessageId) {
            ++st->redelivery;
            return true;
          }));
    }
    hook();
    HQ_RETURN_IF_ERROR(records_->CountLane(lane, scan, cutoff, it.get(), st));
  }
  return absl::OkStatus();
}

}  // namespace hq
