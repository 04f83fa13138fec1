// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The parts a consumer group keeps apart from its own state, alone:
// ordered groups' consumers and partition owners (OrderedConsumers), the
// leases its claims share (LeaseShares), and where blocked claims wait
// (ClaimWakeup). Leases come from a LeaseManagerImpl on a SimulatedClock.
// No Db.

#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "hq/clock.h"
#include "lib/consume/claim_wakeup.h"
#include "lib/consume/lease_shares.h"
#include "lib/consume/ordered_consumers.h"
#include "lib/engine/lease_manager.h"

namespace hq {
namespace {

constexpr absl::Duration kLease = absl::Seconds(10);
// Generous: the machine is loaded; nothing here depends on speed.
constexpr absl::Duration kDeadline = absl::Seconds(60);

// An OrderedConsumers over a LeaseManagerImpl on a SimulatedClock, with its
// expiries and rebalances recorded.
struct Fixture {
  SimulatedClock clock;
  LeaseManagerImpl leases{&clock};
  absl::Mutex mu;
  std::vector<std::pair<std::string, uint64_t>> expired ABSL_GUARDED_BY(mu);
  int rebalanced = 0;
  OrderedConsumers consumers{&leases,
                             [this](const std::string& name, uint64_t gen) {
                               absl::MutexLock l(&mu);
                               expired.emplace_back(name, gen);
                             },
                             [this] { ++rebalanced; }};

  // Waits (bounded) until `n` expiries were recorded; returns them.
  std::vector<std::pair<std::string, uint64_t>> AwaitExpired(size_t n) {
    absl::MutexLock l(&mu);
    auto enough = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return expired.size() >= n;
    };
    mu.AwaitWithTimeout(absl::Condition(&enough), kDeadline);
    return expired;
  }
};

std::vector<uint32_t> Owned(OrderedConsumers& c, const std::string& name) {
  std::vector<uint32_t> out;
  for (uint32_t p = 0; p < c.parts().size(); ++p) {
    if (c.parts()[p].owner != nullptr && c.parts()[p].owner->name == name) {
      out.push_back(p);
    }
  }
  return out;
}

TEST_CASE(
    "OrderedConsumers: joins spread the partitions, a leave returns "
    "them",
    "[ordered]") {
  Fixture f;
  f.consumers.SetPartitions(4);
  absl::StatusOr<OrderedConsumers::Consumer*> a = f.consumers.Join("a", kLease);
  REQUIRE(a.ok());
  CHECK((*a)->partitions == std::vector<uint32_t>{0, 1, 2, 3});
  CHECK(f.rebalanced == 1);
  absl::StatusOr<OrderedConsumers::Consumer*> b = f.consumers.Join("b", kLease);
  REQUIRE(b.ok());
  CHECK(f.consumers.size() == 2);
  CHECK((*a)->partitions.size() == 2);
  CHECK((*b)->partitions.size() == 2);
  CHECK(Owned(f.consumers, "a") == (*a)->partitions);
  // Joining again renews: no new consumer, no rebalance.
  REQUIRE(f.consumers.Join("a", kLease).ok());
  CHECK(f.consumers.size() == 2);
  CHECK(f.rebalanced == 2);

  // A claim of b in progress sees b leave; one begun after does not.
  const uint64_t before = f.consumers.BeginClaim("b");
  CHECK_FALSE(f.consumers.LeftSince("b", before));
  const LeaseId lease = f.consumers.Leave("b");
  CHECK(lease != 0);
  CHECK(f.consumers.LeftSince("b", before));
  CHECK_FALSE(f.consumers.contains("b"));
  CHECK(Owned(f.consumers, "a") == std::vector<uint32_t>{0, 1, 2, 3});
  f.consumers.EndClaim("b");
  CHECK_FALSE(f.consumers.LeftSince("b", f.consumers.BeginClaim("b")));
  f.consumers.EndClaim("b");

  const std::vector<ConsumerInfo> infos = f.consumers.Infos(f.clock.Now());
  REQUIRE(infos.size() == 1);
  CHECK(infos[0].name == "a");
  CHECK(infos[0].lease_deadline == f.clock.Now() + kLease);
}

TEST_CASE(
    "OrderedConsumers: an expired lease drops its consumer unless it "
    "is in a claim",
    "[ordered]") {
  Fixture f;
  f.consumers.SetPartitions(2);
  REQUIRE(f.consumers.Join("idle", kLease).ok());
  REQUIRE(f.consumers.Join("busy", kLease).ok());
  (void)f.consumers.BeginClaim("busy");
  f.clock.Advance(kLease + absl::Seconds(1));
  const auto expired = f.AwaitExpired(2);
  REQUIRE(expired.size() == 2);
  for (const auto& [name, gen] : expired) {
    f.consumers.Expired(name, gen, kLease);
  }
  CHECK_FALSE(f.consumers.contains("idle"));
  CHECK(f.consumers.contains("busy"));  // With a new lease.
  CHECK(Owned(f.consumers, "busy") == std::vector<uint32_t>{0, 1});
  // An expiry of an older generation changes nothing.
  for (const auto& [name, gen] : expired) {
    if (name == "busy") f.consumers.Expired(name, gen, kLease);
  }
  CHECK(f.consumers.contains("busy"));
  f.consumers.EndClaim("busy");
}

TEST_CASE(
    "LeaseShares: a share's lease is returned when its last task "
    "leaves",
    "[leases]") {
  LeaseShares shares;
  const uint64_t k = shares.NewKey();
  CHECK(k != 0);
  shares.Start(k, /*lease=*/7,
               {{.lane = nullptr, .id = {1, 0}, .live = true},
                {.lane = nullptr, .id = {2, 0}, .live = true}});
  REQUIRE(shares.Find(k) != nullptr);
  CHECK(shares.Find(k)->live == 2);
  CHECK(shares.Leave(k, 0) == 0);
  CHECK(shares.Leave(k, 0) == 0);  // Left already.
  CHECK(shares.Leave(k, 1) == 7);
  CHECK(shares.Find(k) == nullptr);
  CHECK(shares.Leave(0, 0) == 0);

  const uint64_t k2 = shares.NewKey();
  CHECK(k2 != k);
  shares.Start(k2, 8, {{.lane = nullptr, .id = {3, 0}, .live = true}});
  std::optional<LeaseShares::Share> taken = shares.Take(k2);
  REQUIRE(taken.has_value());
  CHECK(taken->lease == 8);
  CHECK(taken->entries.size() == 1);
  CHECK_FALSE(shares.Take(k2).has_value());
}

TEST_CASE(
    "ClaimWakeup: a wake after the claim read the sequence is not "
    "lost",
    "[wakeup]") {
  ClaimWakeup w;
  CHECK_FALSE(w.has_waiters());
  w.Enter();
  CHECK(w.has_waiters());
  const uint64_t seen = w.seq();
  w.Wake();  // Before the sleep: the sleep returns at once.
  w.WaitPast(seen);
  const uint64_t seen2 = w.seq();
  CHECK(seen2 != seen);
  std::thread waker([&] { w.Wake(); });
  w.WaitPast(seen2);  // Returns once the other thread woke it.
  waker.join();
  w.Exit();
  CHECK(w.waiters() == 0);
}

}  // namespace
}  // namespace hq
