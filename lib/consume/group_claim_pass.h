// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The working state of one call of a consumer group (lib/consume/
// group_impl.h) while it claims: what the claim takes, hands out and
// writes. Plain data, on the caller's stack, used under the group's lock.

#ifndef HQ_LIB_CONSUME_GROUP_CLAIM_PASS_H_
#define HQ_LIB_CONSUME_GROUP_CLAIM_PASS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "hq/group.h"
#include "leveldb/iterator.h"
#include "leveldb/write_batch.h"
#include "lib/consume/group_lane.h"
#include "lib/consume/ordered_consumers.h"

namespace hq {

// One claim in progress: its inputs, and what it hands out and writes.
struct GroupClaimPass {
  const ClaimOptions& o;
  absl::Time now;
  MessageId cutoff;                             // The TTL cutoff at `now`.
  absl::Duration lease;                         // The tasks' lease.
  std::function<bool(const GroupLane*)> match;  // Lanes the claim may take.
  leveldb::Iterator* it;
  std::vector<Task> out;
  std::vector<GroupLane*> touched;
  std::vector<std::pair<GroupLane*, MessageId>> gone;  // Found past the TTL.
  leveldb::WriteBatch batch;
  // Paged groups: the claim stopped examining lanes at its budget while
  // the source had more.
  bool more = false;
  // Paged groups: lanes evicted for higher priorities (MakeRoom).
  std::vector<GroupLane*> made_room;
  // Ordered groups: the calling consumer.
  const OrderedConsumers::Consumer* consumer = nullptr;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_GROUP_CLAIM_PASS_H_
