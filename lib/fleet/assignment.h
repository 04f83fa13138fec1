// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Which agent owns which virtual partition, at which epoch: the record the
// coordinator keeps in ZooKeeper at /hq-fleet/<fleet>/assignment, and the
// pure function that computes the next one. Tested on its own
// (test/fleet/assignment_test.cc).

#ifndef HQ_LIB_FLEET_ASSIGNMENT_H_
#define HQ_LIB_FLEET_ASSIGNMENT_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace hq::fleet {

struct Assignment {
  // owners[p]: the agent id owning partition p, empty for none.
  std::vector<std::string> owners;
  // epochs[p]: grows by one at every change of partition p's owner (also to
  // none), so a holder of (p, epoch) can tell it still owns p.
  std::vector<uint64_t> epochs;

  uint32_t partitions() const { return static_cast<uint32_t>(owners.size()); }
  bool operator==(const Assignment&) const = default;
};

// No partition owned, every epoch 0.
Assignment EmptyAssignment(uint32_t partitions);

// The record, as text (readable in zkCli):
//   hq-fleet-assignment 1 <partitions>
//   members <k> <id 0> ... <id k-1>
//   <owner index or -> <epoch>        one line per partition, in order
// Agent ids contain no white space (AgentOptions::agent_id). 65536
// partitions take under 1 MiB, ZooKeeper's default limit.
std::string EncodeAssignment(const Assignment& a);

// DataLoss for anything but a record EncodeAssignment wrote (a wrong
// header, a count that does not match, an index out of range, trailing
// bytes): the caller does not act on a record it cannot read whole.
absl::StatusOr<Assignment> DecodeAssignment(std::string_view data);

// The next assignment: every member (distinct agent ids: the live agents
// and those still in their grace period) gets partitions/k of them, and
// partitions%k members one more; a partition keeps its owner unless the
// owner is not a member or is over its share, so that the fewest move
// (lib/consume/rebalance.h). A partition whose owner changes gets its epoch
// plus one. `*moved` (if not null) is the number that changed owner. With
// no members nothing changes.
Assignment Rebalance(const Assignment& current,
                     std::span<const std::string> members, size_t* moved);

}  // namespace hq::fleet

#endif  // HQ_LIB_FLEET_ASSIGNMENT_H_
