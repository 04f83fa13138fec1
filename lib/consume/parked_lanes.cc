// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/parked_lanes.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/engine/checked_read.h"
#include "lib/format/format.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

ParkedLanes::ParkedLanes(leveldb::DB* db, const LayoutCodec* codec,
                         uint32_t queue_id, uint32_t group_id,
                         std::string group)
    : db_(db),
      codec_(codec),
      queue_id_(queue_id),
      group_(std::move(group)),
      range_(format::ParkPrefix(queue_id, group_id)),
      message_prefix_(format::MessagePrefix(queue_id)) {}

std::string ParkedLanes::Key(std::string_view lane_prefix) const {
  std::string k = range_;
  format::AppendLaneRest(&k, lane_prefix);
  return k;
}

absl::Status ParkedLanes::Malformed() const {
  return absl::DataLossError(absl::StrCat("consumer group '", group_,
                                          "': malformed parked lane record"));
}

absl::Status ParkedLanes::Load(uint32_t partitions, int priorities) {
  empty_.assign(partitions, std::vector<bool>(priorities, false));
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_, CheckedReadOptions()));
  it->Seek(range_);
  maybe_ = it->Valid() && View(it->key()).starts_with(range_);
  return FromLevelDb(it->status(), "reading parked lanes");
}

absl::StatusOr<bool> ParkedLanes::Read(std::string_view lane_prefix) const {
  if (!maybe_) return false;
  std::string value;
  const leveldb::Status s =
      CheckedGet(db_, CheckedReadOptions(), Key(lane_prefix), &value);
  if (s.IsNotFound()) return false;
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a parked lane record"));
  if (!value.empty()) return Malformed();
  return true;
}

void ParkedLanes::Park(std::string_view lane_prefix, uint32_t partition,
                       int priority, bool put, leveldb::WriteBatch* batch) {
  if (put) batch->Put(Key(lane_prefix), "");
  empty_[partition][priority] = false;
  maybe_ = true;
}

void ParkedLanes::Delete(std::string_view lane_prefix,
                         leveldb::WriteBatch* batch) const {
  batch->Delete(Key(lane_prefix));
}

absl::Status ParkedLanes::Next(
    uint32_t partition, int priority, leveldb::Iterator* it,
    absl::FunctionRef<absl::StatusOr<bool>(std::string prefix)> take) {
  // The park records of (partition, priority): a lane prefix with an empty
  // topic, less its topic length, after the group's park prefix.
  std::string head;
  codec_->AppendLanePrefix(&head, queue_id_, partition, priority, "");
  std::string range = range_;
  format::AppendLaneRest(&range,
                         std::string_view(head).substr(0, head.size() - 2));
  for (it->Seek(range); it->Valid() && View(it->key()).starts_with(range);
       it->Next()) {
    if (!it->value().empty()) return Malformed();
    std::string prefix = message_prefix_;
    prefix.append(View(it->key()).substr(format::kGroupRecordPrefixSize));
    uint32_t lane_partition;
    int lane_priority;
    std::string_view topic;
    if (!LayoutCodec::ParseLanePrefix(prefix, true, &lane_partition,
                                      &lane_priority, &topic) ||
        lane_partition != partition || lane_priority != priority) {
      return Malformed();
    }
    HQ_ASSIGN_OR_RETURN(const bool took, take(std::move(prefix)));
    if (took) return absl::OkStatus();
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading parked lanes"));
  empty_[partition][priority] = true;
  return absl::OkStatus();
}

absl::Status ParkedLanes::Peek(size_t max, leveldb::Iterator* it,
                               std::vector<std::string>* out, bool* all) const {
  size_t n = 0;
  for (it->Seek(range_); it->Valid() && View(it->key()).starts_with(range_);
       it->Next()) {
    if (n++ == max) {
      *all = false;
      break;
    }
    std::string prefix = message_prefix_;
    prefix.append(View(it->key()).substr(format::kGroupRecordPrefixSize));
    out->push_back(std::move(prefix));
  }
  return FromLevelDb(it->status(), "reading parked lanes");
}

}  // namespace hq
