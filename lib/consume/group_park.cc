// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): parked lanes of ordered paged
// groups (doc/massive_topics.md, "Ordered groups"; doc/format.md, "Parked
// lanes"). An ordered claim takes one task from each idle partition of its
// consumer. Lanes it cannot take (their partition busy or another
// consumer's, or a task of theirs pending) would fill the working set as
// the other lanes drain, and hide the lanes of its idle partitions waiting
// in the source; so when it needs room it parks them, with a record keyed
// by partition and priority, and a partition that wants work reads its own
// parked lanes first.

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/consume/group_impl.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

std::vector<uint32_t> GroupImpl::Hungry(const std::deque<Lane*>& dq,
                                        const ClaimPass& p, size_t* idle) {
  *idle = 0;
  std::vector<bool> served(consumers_.parts().size(), false);
  for (const Lane* lane : dq) {
    if (p.match(lane) && !Pending(*lane)) served[lane->partition] = true;
  }
  std::vector<uint32_t> out;
  for (const uint32_t pid : p.consumer->partitions) {
    if (consumers_.parts()[pid].in_flight > 0 ||
        !(p.o.partitions.empty() ||
          std::find(p.o.partitions.begin(), p.o.partitions.end(), pid) !=
              p.o.partitions.end())) {
      continue;
    }
    ++*idle;
    if (!served[pid]) out.push_back(pid);
  }
  return out;
}

void GroupImpl::ParkUnusable(size_t n, size_t max, ClaimPass* p) {
  for (std::deque<Lane*>& dq : active_) {
    if (lanes_.active() + n <= max) return;
    std::deque<Lane*> keep;
    for (Lane* lane : dq) {
      if (lanes_.active() + n > max && (!p->match(lane) || Pending(*lane))) {
        Park(lane, p);
      } else {
        keep.push_back(lane);
      }
    }
    dq.swap(keep);
  }
}

void GroupImpl::Park(Lane* lane, ClaimPass* p) {
  lanes_.Leave(lane);
  // The record, written with the claim, takes over from the source
  // position the lane held.
  LetGoHold(lane);
  lane->parked_out = true;
  if (!lane->park_record) {
    p->batch.Put(records_.ParkKey(lane->prefix), "");
    lane->park_record = true;
  }
  park_empty_[lane->partition][lane->priority] = false;
  parks_maybe_ = true;
  Touch(lane, &p->touched);  // Forgotten at the commit if no task.
}

absl::Status GroupImpl::LoadParked() {
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  const std::string range = format::ParkPrefix(queue_->id(), record_.id);
  it->Seek(range);
  parks_maybe_ = it->Valid() && View(it->key()).starts_with(range);
  return FromLevelDb(it->status(), "reading parked lanes");
}

absl::Status GroupImpl::ReadParkRecord(Lane* lane) {
  if (!parks_maybe_) return absl::OkStatus();
  std::string value;
  const leveldb::Status s = CheckedGet(db_->leveldb(), CheckedReadOptions(),
                                       records_.ParkKey(lane->prefix), &value);
  if (s.IsNotFound()) return absl::OkStatus();
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a parked lane record"));
  if (!value.empty()) {
    return absl::DataLossError(absl::StrCat("consumer group '", name_,
                                            "': malformed parked lane record"));
  }
  lane->park_record = true;
  return absl::OkStatus();
}

absl::Status GroupImpl::Unpark(uint32_t partition, int priority, ClaimPass* p,
                               bool* found) {
  *found = false;
  if (park_empty_[partition][priority]) return absl::OkStatus();
  // The park records of (partition, priority): a lane prefix with an empty
  // topic, less its topic length, after the queue.
  std::string head;
  queue_->codec().AppendLanePrefix(&head, queue_->id(), partition, priority,
                                   "");
  std::string range = format::ParkPrefix(queue_->id(), record_.id);
  format::AppendLaneRest(&range,
                         std::string_view(head).substr(0, head.size() - 2));
  const std::string message_prefix = format::MessagePrefix(queue_->id());
  leveldb::Iterator* it = p->it;
  for (it->Seek(range); it->Valid() && View(it->key()).starts_with(range);
       it->Next()) {
    if (!it->value().empty()) {
      return absl::DataLossError(absl::StrCat(
          "consumer group '", name_, "': malformed parked lane record"));
    }
    std::string prefix = message_prefix;
    prefix.append(View(it->key()).substr(format::kGroupRecordPrefixSize));
    uint32_t lane_partition;
    int lane_priority;
    std::string_view topic;
    if (!LayoutCodec::ParseLanePrefix(prefix, true, &lane_partition,
                                      &lane_priority, &topic) ||
        lane_partition != partition || lane_priority != priority) {
      return absl::DataLossError(absl::StrCat(
          "consumer group '", name_, "': malformed parked lane record"));
    }
    Lane* lane = lanes_.Find(prefix);
    if (lane != nullptr && !lane->parked_out) {
      // In the working set (from the source since it was parked), or
      // drained by this claim: its record goes when it is released.
      lane->park_record = true;
      continue;
    }
    if (lane == nullptr) {
      HQ_ASSIGN_OR_RETURN(lane, ReadInLane(std::string(prefix), p->now, it));
    }
    lane->park_record = true;
    lane->parked_out = false;
    Activate(lane);
    *found = true;
    return absl::OkStatus();
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading parked lanes"));
  park_empty_[partition][priority] = true;
  return absl::OkStatus();
}

absl::Status GroupImpl::PeekParked(size_t max, leveldb::Iterator* it,
                                   std::vector<std::string>* out,
                                   bool* all) const {
  const std::string range = format::ParkPrefix(queue_->id(), record_.id);
  const std::string message_prefix = format::MessagePrefix(queue_->id());
  size_t n = 0;
  for (it->Seek(range); it->Valid() && View(it->key()).starts_with(range);
       it->Next()) {
    if (n++ == max) {
      *all = false;
      break;
    }
    std::string prefix = message_prefix;
    prefix.append(View(it->key()).substr(format::kGroupRecordPrefixSize));
    out->push_back(std::move(prefix));
  }
  return FromLevelDb(it->status(), "reading parked lanes");
}

}  // namespace hq
