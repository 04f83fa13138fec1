// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The live consumers of an ordered consumer group (GroupOptions::ordered):
// each holds an ownership lease and owns a share of the queue's partitions
// (lib/consume/rebalance.h), and a partition has at most one task in
// flight. A consumer joins at its first claim and leaves by Leave or when
// its lease expires outside a claim.

#ifndef HQ_LIB_CONSUME_ORDERED_CONSUMERS_H_
#define HQ_LIB_CONSUME_ORDERED_CONSUMERS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "hq/group.h"
#include "hq/lease.h"

namespace hq {

struct GroupLane;

// Not thread-safe: its group calls it under the group's lock only
// (GroupImpl::mu_). The expiry action of an ownership lease runs on the
// lease thread: `on_expired` must take that lock and then call Expired.
class OrderedConsumers {
 public:
  // A live consumer.
  struct Consumer {
    std::string name;
    LeaseId lease = 0;  // Its ownership lease.
    uint64_t gen = 0;   // Tells its lease's expiry from an older one's.
    std::vector<uint32_t> partitions;  // Owned, ascending.
    size_t next = 0;                   // Round-robin start in partitions.
  };
  // A partition.
  struct Part {
    Consumer* owner = nullptr;
    uint32_t in_flight = 0;  // 0 or 1.
    // Unpaged groups, per priority (sized at first use): its lanes that may
    // have new messages, in round-robin order (instead of the group's
    // active lists).
    std::vector<std::deque<GroupLane*>> active;
  };
  // `on_expired(name, gen)`: the expiry action of consumer `name`'s lease
  // of generation `gen`. `on_rebalanced`: called after the partitions were
  // assigned again (the group wakes its waiting claims).
  OrderedConsumers(
      LeaseManager* leases,
      std::function<void(const std::string& name, uint64_t gen)> on_expired,
      std::function<void()> on_rebalanced);

  // Sizes the partitions (at the group's load).
  void SetPartitions(uint32_t n) { parts_.resize(n); }
  std::vector<Part>& parts() { return parts_; }
  const std::vector<Part>& parts() const { return parts_; }
  size_t size() const { return consumers_.size(); }
  bool contains(absl::string_view name) const {
    return consumers_.contains(name);
  }

  // Joins `name` with an ownership lease of `lease`, or renews its lease.
  absl::StatusOr<Consumer*> Join(const std::string& name, absl::Duration lease);
  // Renews the ownership lease of `name` if it is live.
  void KeepAlive(const std::string& name, absl::Duration lease);
  // The lease of generation `gen` of `name` expired: the consumer leaves,
  // unless it is in a claim (then it gets a new lease of `lease`) or the
  // lease is not its current one.
  void Expired(const std::string& name, uint64_t gen, absl::Duration lease);
  // `name` (live) leaves: its partitions go to the others, and the claims
  // of it in progress return (LeftSince). Returns its lease, to cancel
  // outside the group's lock.
  LeaseId Leave(const std::string& name);

  // A claim of `name` begins: the consumer stays live until EndClaim.
  // Returns the count of its leaves so far, for LeftSince.
  uint64_t BeginClaim(const std::string& name);
  void EndClaim(const std::string& name);
  // Whether `name` left since its claim's BeginClaim returned `before`.
  bool LeftSince(const std::string& name, uint64_t before) const;

  // The live consumers, by name; the deadline of a lease whose expiry is
  // running is `now`.
  std::vector<ConsumerInfo> Infos(absl::Time now) const;

 private:
  // (Re)creates the ownership lease of `c`.
  absl::Status Arm(Consumer* c, absl::Duration lease);
  // Removes `name` from the live consumers and rebalances. Returns its
  // lease.
  LeaseId Drop(const std::string& name);
  // Spreads the partitions evenly over the live consumers, keeping as many
  // owners as the spread allows.
  void Rebalance();

  LeaseManager* const leases_;
  const std::function<void(const std::string&, uint64_t)> on_expired_;
  const std::function<void()> on_rebalanced_;
  absl::flat_hash_map<std::string, std::unique_ptr<Consumer>> consumers_;
  // Claim calls in progress per consumer: a consumer in a (waiting) claim
  // is live even if its lease runs out.
  absl::flat_hash_map<std::string, int> claiming_;
  // Per consumer with claims in progress: Leave calls since the first of
  // them began. A claim that began before a Leave returns at once.
  absl::flat_hash_map<std::string, uint64_t> leaves_;
  std::vector<Part> parts_;  // Per partition.
  uint64_t next_gen_ = 0;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_ORDERED_CONSUMERS_H_
