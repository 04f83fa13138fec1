// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The parts a consumer group keeps apart from its own state, alone:
// ordered groups' consumers and partition owners (OrderedConsumers), the
// leases its claims share (LeaseShares), where blocked claims wait
// (ClaimWakeup), its waiting tasks (Redeliveries), its resting lanes
// (RestingLanes), the claim records' bookkeeping (ClaimRecords, into a
// WriteBatch) and ListPending's answer from lanes in memory (PendingList).
// Leases come from a LeaseManagerImpl on a SimulatedClock. No Db.

#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "hq/clock.h"
#include "leveldb/write_batch.h"
#include "lib/consume/claim_records.h"
#include "lib/consume/claim_wakeup.h"
#include "lib/consume/group_lane.h"
#include "lib/consume/lease_shares.h"
#include "lib/consume/ordered_consumers.h"
#include "lib/consume/pending_list.h"
#include "lib/consume/redeliveries.h"
#include "lib/consume/resting_lanes.h"
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

GroupLane* NewLane(std::vector<std::unique_ptr<GroupLane>>* lanes,
                   uint32_t partition, int priority) {
  auto& lane = lanes->emplace_back(std::make_unique<GroupLane>());
  lane->partition = partition;
  lane->priority = priority;
  lane->prefix = "lane" + std::to_string(lanes->size());
  return lane.get();
}

TEST_CASE("Redeliveries: due first, ties in order of waiting, per priority",
          "[redeliveries]") {
  std::vector<std::unique_ptr<GroupLane>> lanes;
  GroupLane* a = NewLane(&lanes, 0, 0);
  GroupLane* b = NewLane(&lanes, 1, 1);
  Redeliveries w;
  w.SetPriorities(2);
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  GroupTask r1, r2, r3, r4;
  r1.released = true;
  w.Add(a, {1, 0}, &r1, t0 + absl::Seconds(5));
  w.Add(a, {2, 0}, &r2, t0 + absl::Seconds(1));
  w.Add(a, {3, 0}, &r3, t0 + absl::Seconds(1));  // Same due: after r2.
  w.Add(b, {4, 0}, &r4, t0 + absl::Seconds(3));
  CHECK(w.size() == 4);
  CHECK(r1.state == format::TaskState::kWaiting);
  CHECK_FALSE(r1.released);
  CHECK(r1.since == t0 + absl::Seconds(5));

  std::vector<MessageId> order;
  for (const GroupWaitKey& k : w.at(0)) order.push_back(k.id);
  CHECK(order == std::vector<MessageId>{{2, 0}, {3, 0}, {1, 0}});
  REQUIRE(w.at(1).size() == 1);
  CHECK(w.at(1).begin()->lane == b);

  CHECK(w.NextDueAfter(t0) == t0 + absl::Seconds(1));
  CHECK(w.NextDueAfter(t0 + absl::Seconds(1)) == t0 + absl::Seconds(3));
  CHECK(w.NextDueAfter(t0 + absl::Seconds(5)) == absl::InfiniteFuture());

  w.Remove(a, {2, 0}, r2);
  CHECK(w.size() == 3);
  auto next = w.Erase(0, w.at(0).begin());  // r3.
  REQUIRE(next != w.at(0).end());
  CHECK(next->id == MessageId{1, 0});
  CHECK(w.size() == 2);
}

TEST_CASE("RestingLanes: the longest resting go first, over the cap",
          "[resting]") {
  std::vector<std::unique_ptr<GroupLane>> lanes;
  RestingLanes resting;
  GroupLane* l[4];
  for (GroupLane*& lane : l) {
    lane = NewLane(&lanes, 0, 0);
    resting.Add(lane);
    CHECK(lane->resting);
  }
  resting.Remove(l[1]);  // Used again.
  CHECK_FALSE(l[1]->resting);
  resting.Remove(l[1]);  // Not resting: nothing.
  CHECK(resting.size() == 3);
  std::vector<GroupLane*> forgotten;
  resting.Trim(/*active=*/2, /*max=*/4,
               [&](GroupLane* lane) { forgotten.push_back(lane); });
  CHECK(forgotten == std::vector<GroupLane*>{l[0]});
  resting.Trim(2, 5, [&](GroupLane* lane) { forgotten.push_back(lane); });
  CHECK(forgotten.size() == 1);  // Within the cap.
  resting.Trim(0, 0, [&](GroupLane* lane) { forgotten.push_back(lane); });
  CHECK(forgotten == std::vector<GroupLane*>{l[0], l[2], l[3]});
  CHECK(resting.size() == 0);
}

// The operations of a WriteBatch, as "put KEY" and "delete KEY".
std::vector<std::string> Ops(const leveldb::WriteBatch& batch) {
  struct Handler : leveldb::WriteBatch::Handler {
    std::vector<std::string> ops;
    void Put(const leveldb::Slice& key, const leveldb::Slice&) override {
      ops.push_back("put " + key.ToString());
    }
    void Delete(const leveldb::Slice& key) override {
      ops.push_back("delete " + key.ToString());
    }
  } h;
  REQUIRE(batch.Iterate(&h).ok());
  return h.ops;
}

TEST_CASE(
    "ClaimRecords: a record goes when its last live entry is "
    "superseded",
    "[claims]") {
  ClaimRecords claims(/*db=*/nullptr, /*queue_id=*/1, /*group_id=*/2, "g");
  const std::string lane_a = format::MessagePrefix(1) + std::string(6, 'a');
  const std::string lane_b = format::MessagePrefix(1) + std::string(6, 'b');
  ClaimRecords::Log empty = claims.Begin();
  leveldb::WriteBatch batch;
  claims.Put(empty, &batch);  // No entry: no record.
  CHECK(Ops(batch).empty());

  ClaimRecords::Log log = claims.Begin();
  ClaimRecords::Seqs a, b;
  a.push_back(log.Add(lane_a, {{5, 0}, {4, 0}}));
  b.push_back(log.Add(lane_b, {{7, 0}, {7, 0}}));
  CHECK(a[0] == b[0]);
  claims.Put(log, &batch);
  const std::string key = format::ClaimKey(1, 2, a[0]);
  CHECK(Ops(batch) == std::vector<std::string>{"put " + key});
  // The next claim's record is numbered after it.
  CHECK(claims.Begin().Add(lane_a, {}) == a[0] + 1);

  leveldb::WriteBatch retire;
  claims.Retire(&a, &retire);
  CHECK(a.empty());
  CHECK(Ops(retire).empty());  // b's entry is live.
  claims.Retire(&b, &retire);
  CHECK(Ops(retire) == std::vector<std::string>{"delete " + key});
  claims.Retire(&b, &retire);  // Nothing left to retire.
  CHECK(Ops(retire).size() == 1);
}

TEST_CASE("PendingList: a lane's tasks not done, from an id, up to max",
          "[pending]") {
  std::vector<std::unique_ptr<GroupLane>> lanes;
  GroupLane* lane = NewLane(&lanes, 3, 1);
  lane->topic = "t";
  const absl::Time t0 = absl::FromUnixSeconds(1000);
  GroupTask& in_flight = lane->tasks[{1, 0}];
  in_flight.attempts = 2;
  in_flight.since = t0;
  in_flight.deadline = t0 + absl::Seconds(30);
  in_flight.consumer = "c";
  lane->tasks[{2, 0}].state = format::TaskState::kDone;
  GroupTask& delayed = lane->tasks[{3, 0}];
  delayed.state = format::TaskState::kWaiting;
  delayed.attempts = 0;
  GroupTask& dying = lane->tasks[{4, 0}];
  dying.state = format::TaskState::kWaiting;
  dying.attempts = 5;
  dying.dying = true;
  GroupTask& again = lane->tasks[{5, 0}];
  again.state = format::TaskState::kWaiting;
  again.attempts = 1;

  PendingList all(10);
  all.AddLane(*lane, MessageId::Min());
  CHECK_FALSE(all.full());
  const std::vector<PendingTask> got = std::move(all).Take();
  REQUIRE(got.size() == 3);
  CHECK(got[0].id == MessageId{1, 0});
  CHECK(got[0].state == PendingTask::State::kInFlight);
  CHECK(got[0].partition == 3);
  CHECK(got[0].priority == 1);
  CHECK(got[0].topic == "t");
  CHECK(got[0].attempt == 2);
  CHECK(got[0].consumer == "c");
  CHECK(got[0].lease_deadline == t0 + absl::Seconds(30));
  CHECK(got[1].id == MessageId{3, 0});
  CHECK(got[1].state == PendingTask::State::kDelayed);
  CHECK(got[2].id == MessageId{5, 0});
  CHECK(got[2].state == PendingTask::State::kRedelivery);

  PendingList from(1);
  from.AddLane(*lane, MessageId{2, 0});
  CHECK(from.full());
  const std::vector<PendingTask> one = std::move(from).Take();
  REQUIRE(one.size() == 1);
  CHECK(one[0].id == MessageId{3, 0});
}

}  // namespace
}  // namespace hq
