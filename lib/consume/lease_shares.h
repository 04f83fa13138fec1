// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The leases of a consumer group's tasks in flight. The tasks a claim
// hands out share one lease, as they share its deadline: one timer a
// claim, not one a task. Extend gives a task a share of its own.

#ifndef HQ_LIB_CONSUME_LEASE_SHARES_H_
#define HQ_LIB_CONSUME_LEASE_SHARES_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hq/lease.h"
#include "hq/message.h"

namespace hq {

struct GroupLane;

// Not thread-safe: its group calls it under the group's lock only
// (GroupImpl::mu_).
class LeaseShares {
 public:
  struct Entry {
    GroupLane* lane;  // Resident while the entry is live (a task in flight).
    MessageId id;
    bool live;
  };
  struct Share {
    LeaseId lease = 0;
    std::vector<Entry> entries;
    size_t live = 0;  // Entries live.
  };

  // The key of a new share (never 0), for its lease's expiry action to
  // name before Start.
  uint64_t NewKey() { return next_++; }
  // Starts share `key` with `lease` over `entries`, all live.
  void Start(uint64_t key, LeaseId lease, std::vector<Entry> entries) {
    Share& share = shares_[key];
    share.lease = lease;
    share.live = entries.size();
    share.entries = std::move(entries);
  }
  // Share `key`; null if it is gone (or `key` is 0).
  const Share* Find(uint64_t key) const {
    auto it = shares_.find(key);
    return it == shares_.end() ? nullptr : &it->second;
  }
  // Entry `at` of share `key` leaves it. Returns the share's lease, to
  // cancel outside the group's lock, if that left it empty; else 0 (also
  // if the share or the entry is gone).
  LeaseId Leave(uint64_t key, uint32_t at) {
    auto it = key == 0 ? shares_.end() : shares_.find(key);
    if (it == shares_.end()) return 0;
    Share& share = it->second;
    Entry& e = share.entries[at];
    if (!e.live) return 0;
    e.live = false;
    if (--share.live > 0) return 0;
    const LeaseId lease = share.lease;
    shares_.erase(it);
    return lease;
  }
  // Takes share `key` out (its lease expired); nullopt if it is gone.
  std::optional<Share> Take(uint64_t key) {
    auto it = shares_.find(key);
    if (it == shares_.end()) return std::nullopt;
    Share share = std::move(it->second);
    shares_.erase(it);
    return share;
  }

 private:
  absl::flat_hash_map<uint64_t, Share> shares_;
  uint64_t next_ = 1;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_LEASE_SHARES_H_
