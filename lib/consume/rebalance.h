// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The partition assignment of ordered consumer groups (GroupOptions::
// ordered): a pure function, tested on its own (test/rebalance_test.cc).

#ifndef HQ_LIB_CONSUME_REBALANCE_H_
#define HQ_LIB_CONSUME_REBALANCE_H_

#include <span>
#include <string>
#include <vector>

#include "hq/export.h"

namespace hq {

// Assigns partitions to consumers. `owner[p]` is the index in `consumers`
// (their names, distinct) of partition p's owner now, or -1. Returns each
// partition's new owner: every consumer gets P/n partitions, and P%n of
// them one more, those that own the most now (ties: the smaller name), so
// that the fewest partitions move. A partition keeps its owner unless that
// owner is over its quota; the partitions freed go, in partition order, to
// the consumers under their quota, in that same order. With no consumers,
// every partition gets -1. Exported for libhq_fleet (lib/fleet/assignment.h).
HQ_EXPORT std::vector<int> AssignPartitions(std::span<const int> owner,
                                  std::span<const std::string> consumers);

}  // namespace hq

#endif  // HQ_LIB_CONSUME_REBALANCE_H_
