// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Ordered consumer groups (GroupOptions::ordered, hq/group.h): partition
// ownership, in-order delivery one task per partition, rebalancing when
// consumers join, leave or stop calling, and restarts. On the simulated
// clock.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/sync.h"
#include "test/group_util.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::AwaitWaiters;
using test::BackgroundClaim;
using test::DbFixture;
using test::NoBackgroundSweeps;
using test::Payloads;
using test::PutN;
using test::Storage;
using test::ValueOrDie;

GroupOptions Ordered(GroupOptions o = {}) {
  o.ordered = true;
  o.backoff_jitter = 0;
  return o;
}

// Partitions owned by `consumer` (empty if it is not live).
std::vector<uint32_t> Owned(ConsumerGroup* g, const std::string& consumer) {
  for (const ConsumerInfo& c : ValueOrDie(g->Consumers())) {
    if (c.name == consumer) return c.partitions;
  }
  return {};
}

// Claims with `c` `rounds` times, completing each claim; returns the tasks
// in the order handed out.
std::vector<Task> ClaimRounds(ConsumerGroup* g, const ClaimOptions& c,
                              int rounds) {
  std::vector<Task> all;
  for (int i = 0; i < rounds; ++i) {
    const std::vector<Task> t = ValueOrDie(g->Claim(c));
    HQ_REQUIRE_OK(g->Complete(t));
    all.insert(all.end(), t.begin(), t.end());
  }
  return all;
}

// Puts one message to each of `topics` topics "p<P>t<i>" (payload
// "p<P>t<i>/0") of partition 0, then of partition 1.
void PutTopicsPerPartition(Queue* q, int topics) {
  for (uint32_t p : {0u, 1u}) {
    for (int i = 0; i < topics; ++i) {
      PutN(q, 1, absl::StrCat("p", p, "t", i, "/"), p, 0,
           absl::StrCat("p", p, "t", i));
    }
  }
}

TEST_CASE("an ordered group hands out one task per partition, in order") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(storage, NoBackgroundSweeps());
  Queue* q =
      ValueOrDie(f.db()->CreateQueue("q", {.partitions = 3, .layout = layout}));
  for (uint32_t p = 0; p < 3; ++p) PutN(q, 5, absl::StrCat("p", p, "-"), p);
  ConsumerGroup* g = ValueOrDie(q->Group("g", Ordered()));

  std::vector<Task> t = ValueOrDie(g->Claim({.max = 10, .consumer = "a"}));
  REQUIRE(t.size() == 3);  // One per partition.
  std::set<std::string> heads;
  for (const Task& x : t) {
    heads.insert(x.payload);
    CHECK(x.consumer == "a");
  }
  CHECK(heads == std::set<std::string>{"p0-0", "p1-0", "p2-0"});
  // Every partition has its task in flight: nothing more.
  CHECK(ValueOrDie(g->Claim({.max = 10, .consumer = "a"})).empty());

  // Completing one frees its partition only.
  auto it = std::find_if(t.begin(), t.end(),
                         [](const Task& x) { return x.partition == 1; });
  HQ_REQUIRE_OK(g->Complete(std::span(&*it, 1)));
  CHECK(Payloads(ValueOrDie(g->Claim({.max = 10, .consumer = "a"}))) ==
        std::vector<std::string>{"p1-1"});

  // Drained task by task, each partition comes in order.
  std::map<uint32_t, std::vector<std::string>> seen;
  // Complete p0-0 and p2-0; p1-1 stays held.
  {
    std::vector<Task> all;
    for (const Task& x : t) {
      if (x.partition != 1) all.push_back(x);
    }
    HQ_REQUIRE_OK(g->Complete(all));
  }
  for (int round = 0; round < 20; ++round) {
    std::vector<Task> got = ValueOrDie(g->Claim({.max = 10, .consumer = "a"}));
    for (const Task& x : got) seen[x.partition].push_back(x.payload);
    if (!got.empty()) HQ_REQUIRE_OK(g->Complete(got));
  }
  CHECK(seen[0] == std::vector<std::string>{"p0-1", "p0-2", "p0-3", "p0-4"});
  CHECK(seen[2] == std::vector<std::string>{"p2-1", "p2-2", "p2-3", "p2-4"});
  CHECK(seen[1].empty());  // Held back by p1-1, which "a" still holds.
  CHECK(ValueOrDie(g->Stats()).in_flight == 1);
}

TEST_CASE("an ordered lane waits for its head: release, expiry, delay") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  ConsumerGroup* g = ValueOrDie(q->Group(
      "g",
      Ordered({.lease = absl::Seconds(10), .backoff_base = absl::Seconds(3)})));
  PutN(q, 3, "a", 0);
  PutN(q, 3, "b", 1);
  const ClaimOptions c{.max = 10, .consumer = "c"};

  // Released with a retry time: partition 0 waits for it; partition 1 goes
  // on.
  std::vector<Task> t = ValueOrDie(g->Claim(c));
  REQUIRE(t.size() == 2);
  const Task a0 = t[0].partition == 0 ? t[0] : t[1];
  const Task b0 = t[0].partition == 0 ? t[1] : t[0];
  HQ_REQUIRE_OK(g->Release(a0, absl::Seconds(5)));
  HQ_REQUIRE_OK(g->Complete(std::span(&b0, 1)));
  CHECK(Payloads(ValueOrDie(g->Claim(c))) == std::vector<std::string>{"b1"});
  f.clock().Advance(absl::Seconds(5));
  t = ValueOrDie(g->Claim(c));
  REQUIRE(t.size() == 1);
  CHECK(t[0].payload == "a0");
  CHECK(t[0].attempt == 2);

  // Leases expire (a0's and b1's, both at t=15 on this clock): after its
  // backoff each comes back, still the head of its lane.
  f.clock().Advance(absl::Seconds(10));
  CHECK(ValueOrDie(g->Claim(c)).empty());
  f.clock().Advance(absl::Seconds(3));  // b1 after attempt 1: 3 s.
  CHECK(Payloads(ValueOrDie(g->Claim(c))) == std::vector<std::string>{"b1"});
  f.clock().Advance(absl::Seconds(3));  // a0 after attempt 2: 6 s.
  t = ValueOrDie(g->Claim(c));
  REQUIRE(t.size() == 1);
  CHECK(t[0].payload == "a0");
  CHECK(t[0].attempt == 3);

  // A delayed message holds back the messages behind it in its lane.
  Queue* d = ValueOrDie(f.db()->CreateQueue("d", {}));
  ConsumerGroup* dg = ValueOrDie(d->Group("g", Ordered()));
  ValueOrDie(d->Put({.payload = "late", .delay = absl::Minutes(1)}));
  ValueOrDie(d->Put({.payload = "next"}));
  CHECK(ValueOrDie(dg->Claim(c)).empty());
  CHECK(ValueOrDie(dg->Stats()).delayed == 1);
  f.clock().Advance(absl::Minutes(1));
  t = ValueOrDie(dg->Claim(c));
  CHECK(Payloads(t) == std::vector<std::string>{"late"});
  HQ_REQUIRE_OK(dg->Complete(t));
  CHECK(Payloads(ValueOrDie(dg->Claim(c))) == std::vector<std::string>{"next"});
}

TEST_CASE("a dead-lettered head lets its lane go on") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  ConsumerGroup* g = ValueOrDie(q->Group("g", Ordered({.max_attempts = 1})));
  PutN(q, 2);
  const ClaimOptions c{.consumer = "c"};
  const std::vector<Task> t = ValueOrDie(g->Claim(c));
  REQUIRE(Payloads(t) == std::vector<std::string>{"m0"});
  HQ_REQUIRE_OK(g->Release(t[0], absl::ZeroDuration()));
  CHECK(Payloads(ValueOrDie(g->Claim(c))) == std::vector<std::string>{"m1"});
  const std::vector<DeadLetter> dead = ValueOrDie(g->ListDeadLetters(10));
  REQUIRE(dead.size() == 1);
  CHECK(dead[0].payload == "m0");
}

TEST_CASE("partitions are spread evenly and move as little as possible") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 7}));
  ConsumerGroup* g = ValueOrDie(q->Group("g", Ordered()));
  auto join = [&](const std::string& name) {
    HQ_REQUIRE_OK(g->Claim({.consumer = name}).status());
  };
  auto check_spread = [&](size_t consumers) {
    const std::vector<ConsumerInfo> cs = ValueOrDie(g->Consumers());
    REQUIRE(cs.size() == consumers);
    std::set<uint32_t> all;
    size_t lo = 7, hi = 0;
    for (const ConsumerInfo& c : cs) {
      lo = std::min(lo, c.partitions.size());
      hi = std::max(hi, c.partitions.size());
      for (uint32_t p : c.partitions) CHECK(all.insert(p).second);
    }
    CHECK(all.size() == 7);  // Every partition has one owner.
    CHECK(hi - lo <= 1);
  };
  join("a");
  CHECK(Owned(g, "a") == std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6});
  join("b");
  check_spread(2);
  const std::vector<uint32_t> a2 = Owned(g, "a");
  // "a" keeps 4 of its partitions; "b" gets the other 3.
  CHECK(a2.size() == 4);
  join("c");
  check_spread(3);
  // Only partitions that had to move did: every owner kept a subset.
  for (uint32_t p : Owned(g, "a")) {
    CHECK(std::find(a2.begin(), a2.end(), p) != a2.end());
  }
  const std::vector<uint32_t> c3 = Owned(g, "c");
  CHECK(c3.size() == 2);
  HQ_REQUIRE_OK(g->Leave("b"));
  check_spread(2);
  const std::vector<uint32_t> c4 = Owned(g, "c");
  for (uint32_t p : c3) {  // "c" kept what it had.
    CHECK(std::find(c4.begin(), c4.end(), p) != c4.end());
  }
  CHECK(ValueOrDie(g->Stats()).consumers == 2);
  CHECK(absl::IsNotFound(g->Leave("b")));
  HQ_REQUIRE_OK(g->Leave("a"));
  HQ_REQUIRE_OK(g->Leave("c"));
  CHECK(ValueOrDie(g->Consumers()).empty());
}

TEST_CASE("a consumer only gets tasks of the partitions it owns") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 4}));
  for (uint32_t p = 0; p < 4; ++p) PutN(q, 3, absl::StrCat("p", p, "-"), p);
  ConsumerGroup* g = ValueOrDie(q->Group("g", Ordered()));
  HQ_REQUIRE_OK(g->Claim({.consumer = "a"}).status());  // Takes p0 (all).
  std::vector<Task> b = ValueOrDie(g->Claim({.max = 10, .consumer = "b"}));
  const std::vector<uint32_t> owned_b = Owned(g, "b");
  REQUIRE(owned_b.size() == 2);
  REQUIRE(b.size() == 2);
  for (const Task& t : b) {
    CHECK(std::find(owned_b.begin(), owned_b.end(), t.partition) !=
          owned_b.end());
  }
  // A partition filter narrows a consumer's own partitions.
  HQ_REQUIRE_OK(g->Complete(b));
  b = ValueOrDie(
      g->Claim({.max = 10, .partitions = {owned_b[1]}, .consumer = "b"}));
  REQUIRE(b.size() == 1);
  CHECK(b[0].partition == owned_b[1]);
}

TEST_CASE(
    "a stopped consumer's partitions move, its task comes back in order") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  PutN(q, 4, "a", 0);
  PutN(q, 4, "b", 1);
  ConsumerGroup* g = ValueOrDie(
      q->Group("g", Ordered({.lease = absl::Seconds(30),
                             .backoff_base = absl::Seconds(1),
                             .ownership_lease = absl::Seconds(10)})));
  HQ_REQUIRE_OK(g->Claim({.partitions = {0}, .consumer = "x"}).status());
  // "y" joins and gets partition 1; "x" keeps partition 0.
  std::vector<Task> y = ValueOrDie(g->Claim({.max = 5, .consumer = "y"}));
  REQUIRE(Owned(g, "y") == std::vector<uint32_t>{1});
  REQUIRE(Payloads(y) == std::vector<std::string>{"b0"});
  // "y" stops calling while it holds b0; "x" goes on.
  f.clock().Advance(absl::Seconds(6));
  HQ_REQUIRE_OK(g->Claim({.consumer = "x"}).status());  // Renews "x".
  f.clock().Advance(absl::Seconds(6));                  // "y" is gone.
  REQUIRE(ValueOrDie(g->Consumers()).size() == 1);
  CHECK(Owned(g, "x") == std::vector<uint32_t>{0, 1});
  // b0 is still under its lease: partition 1 waits, nothing overtakes it.
  std::vector<Task> x = ValueOrDie(g->Claim({.max = 5, .consumer = "x"}));
  for (const Task& t : x) CHECK(t.partition == 0);
  // Its lease ends (30 s after the claim) and, after the backoff, it is
  // delivered to the new owner, then the rest of partition 1 in order.
  f.clock().Advance(absl::Seconds(19));
  HQ_REQUIRE_OK(g->Claim({.consumer = "x"}).status());  // Renews "x".
  std::vector<std::string> p1;
  for (int i = 0; i < 20; ++i) {
    f.clock().Advance(absl::Seconds(1));
    std::vector<Task> got = ValueOrDie(g->Claim({.max = 5, .consumer = "x"}));
    for (const Task& t : got) {
      if (t.partition == 1)
        p1.push_back(absl::StrCat(t.payload, "#", t.attempt));
    }
    HQ_REQUIRE_OK(g->Complete(got));
  }
  CHECK(p1 == std::vector<std::string>{"b0#2", "b1#1", "b2#1", "b3#1"});
  // The stopped consumer cannot complete what it held.
  CHECK(absl::IsFailedPrecondition(g->Complete(y)));
}

TEST_CASE("a partition that changes owner waits for the old owner's task") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  PutN(q, 3, "a", 0);
  PutN(q, 3, "b", 1);
  ConsumerGroup* g = ValueOrDie(q->Group("g", Ordered()));
  const std::vector<Task> x =
      ValueOrDie(g->Claim({.partitions = {1}, .consumer = "x"}));
  REQUIRE(Payloads(x) == std::vector<std::string>{"b0"});
  // "y" joins: "x" keeps partition 0, partition 1 moves to "y" while b0 is
  // in flight.
  CHECK(ValueOrDie(g->Claim({.max = 5, .consumer = "y"})).empty());
  REQUIRE(Owned(g, "y") == std::vector<uint32_t>{1});
  HQ_REQUIRE_OK(g->Complete(x));  // The old owner finishes it...
  const std::vector<Task> y = ValueOrDie(g->Claim({.max = 5, .consumer = "y"}));
  CHECK(Payloads(y) == std::vector<std::string>{"b1"});  // ...then "y" goes on.
  CHECK(y[0].consumer == "y");
}

TEST_CASE("a waiting ordered claim stays live and wakes when work frees up") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  PutN(q, 2);
  ConsumerGroup* g = ValueOrDie(
      q->Group("g", Ordered({.lease = absl::Hours(1),
                             .ownership_lease = absl::Seconds(10)})));
  const std::vector<Task> held = ValueOrDie(g->Claim({.consumer = "a"}));
  REQUIRE(Payloads(held) == std::vector<std::string>{"m0"});
  {
    BackgroundClaim claim(g, {.wait = absl::Hours(2), .consumer = "a"});
    AwaitWaiters(g, 1);
    // Blocked in a claim for longer than the ownership lease: still live.
    f.clock().Advance(absl::Seconds(25));
    CHECK(Owned(g, "a") == std::vector<uint32_t>{0});
    HQ_REQUIRE_OK(g->Complete(held));  // Wakes the claim: m1 is next.
    CHECK(Payloads(ValueOrDie(claim.Wait())) == std::vector<std::string>{"m1"});
  }
  // A consumer without partitions waits until one leaves.
  PutN(q, 1, "n");
  {
    BackgroundClaim claim(g, {.wait = absl::Hours(2), .consumer = "b"});
    AwaitWaiters(g, 1);
    CHECK(Owned(g, "b").empty());
    HQ_REQUIRE_OK(g->Leave("a"));
    // m1 is still held by "a" (in flight until completed or expired), so
    // "b" gets n0 only after it.
    CHECK(Owned(g, "b") == std::vector<uint32_t>{0});
    f.clock().Advance(absl::Hours(1));    // m1's lease ends...
    f.clock().Advance(absl::Seconds(1));  // ...and its backoff.
    const std::vector<Task> got = ValueOrDie(claim.Wait());
    REQUIRE(got.size() == 1);
    CHECK(got[0].payload == "m1");
    CHECK(got[0].attempt == 2);
  }
}

TEST_CASE("leave ends the consumer's waiting claims") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  ConsumerGroup* g = ValueOrDie(q->Group("g", Ordered()));
  BackgroundClaim claim(g, {.wait = absl::Hours(1), .consumer = "b"});
  AwaitWaiters(g, 1);
  REQUIRE(Owned(g, "b") == std::vector<uint32_t>{0, 1});
  HQ_REQUIRE_OK(g->Leave("b"));
  CHECK(ValueOrDie(claim.Wait()).empty());
  CHECK(ValueOrDie(g->Consumers()).empty());  // It did not join again.
  // Its messages go to the consumers still there.
  PutN(q, 1);
  CHECK(Payloads(ValueOrDie(g->Claim({.consumer = "c"}))) ==
        std::vector<std::string>{"m0"});
  HQ_REQUIRE_OK(g->Claim({.consumer = "b"}).status());  // Joins again.
  CHECK(ValueOrDie(g->Consumers()).size() == 2);
}

TEST_CASE("ordered delivery survives a restart") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(storage, NoBackgroundSweeps());
  Queue* q =
      ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2, .layout = layout}));
  PutN(q, 5, "a", 0);
  PutN(q, 5, "b", 1);
  ValueOrDie(
      q->Put({.payload = "late", .partition = 1, .delay = absl::Minutes(10)}));
  PutN(q, 1, "c", 1);
  ConsumerGroup* g = ValueOrDie(q->Group("g", Ordered()));
  const ClaimOptions c{.max = 10, .consumer = "a"};
  std::map<uint32_t, std::vector<std::string>> seen;
  std::vector<Task> t;
  for (const Task& x : ClaimRounds(g, c, 3)) {
    seen[x.partition].push_back(x.payload);
  }
  t = ValueOrDie(g->Claim(c));  // a3 and b3 in flight.
  REQUIRE(t.size() == 2);

  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  CHECK(absl::IsInvalidArgument(q->Group("g", {}).status()));  // Fixed.
  g = ValueOrDie(q->Group("g", Ordered()));
  CHECK(ValueOrDie(g->Consumers()).empty());  // Ownership is in memory.
  for (const Task& x : ClaimRounds(g, c, 6)) {
    seen[x.partition].push_back(x.payload);
  }
  CHECK(seen[0] == std::vector<std::string>{"a0", "a1", "a2", "a3", "a4"});
  // The delayed message holds "c0" back, across the restart too.
  CHECK(seen[1] == std::vector<std::string>{"b0", "b1", "b2", "b3", "b4"});
  f.clock().Advance(absl::Minutes(10));
  for (const Task& x : ClaimRounds(g, c, 3)) {
    seen[x.partition].push_back(x.payload);
  }
  CHECK(seen[1] ==
        std::vector<std::string>{"b0", "b1", "b2", "b3", "b4", "late", "c0"});
}

TEST_CASE("ordered groups check their arguments") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  Queue* tq = ValueOrDie(f.db()->CreateQueue("t", {.layout = Layout::kTopic}));
  PutN(q, 1);
  ConsumerGroup* g = ValueOrDie(q->Group("g", Ordered()));
  CHECK(absl::IsInvalidArgument(g->Claim({}).status()));  // No consumer.
  CHECK(absl::IsInvalidArgument(
      g->Claim({.consumer = std::string(257, 'c')}).status()));
  // A topic filter would reorder a time-layout lane; a topic-layout claim
  // selects lanes.
  CHECK(absl::IsInvalidArgument(
      g->Claim({.topics = {"x"}, .consumer = "c"}).status()));
  ConsumerGroup* tg = ValueOrDie(tq->Group("g", Ordered()));
  HQ_REQUIRE_OK(tg->Claim({.topics = {"x"}, .consumer = "c"}).status());
  // Fixed at creation, both ways.
  CHECK(absl::IsInvalidArgument(q->Group("g", {}).status()));
  ValueOrDie(q->Group("u"));
  CHECK(absl::IsInvalidArgument(q->Group("u", Ordered()).status()));
  CHECK(absl::IsFailedPrecondition(ValueOrDie(q->Group("u"))->Leave("c")));
  CHECK(absl::IsNotFound(g->Leave("nobody")));
  CHECK(absl::IsInvalidArgument(
      q->Group("g", Ordered({.ownership_lease = absl::ZeroDuration()}))
          .status()));
  CHECK(absl::IsInvalidArgument(
      q->Group("g", Ordered({.ownership_lease = absl::Hours(24 * 31)}))
          .status()));
  // Nothing was claimed by the refused calls.
  CHECK(ValueOrDie(g->Stats()).in_flight == 0);
  CHECK(ValueOrDie(g->Stats()).backlog == 1);
}

// Consumers on threads, one of which stops mid-run while holding a task;
// the main thread drives the simulated clock. Every partition's messages
// must be completed exactly once each, in id order.
TEST_CASE("competing ordered consumers, one stopping: order and no loss") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  constexpr uint32_t kPartitions = 5;
  constexpr int kPerPartition = 60;
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = kPartitions}));
  ConsumerGroup* g = ValueOrDie(
      q->Group("g", Ordered({.lease = absl::Seconds(20),
                             .max_attempts = 1000,
                             .backoff_base = absl::Seconds(1),
                             .backoff_cap = absl::Seconds(1),
                             .ownership_lease = absl::Seconds(10)})));
  std::atomic<bool> stop{false};
  std::atomic<int> errors{0};
  Mutex mu;  // hq::Mutex: visible to TSan (lib/util/sync.h).
  std::map<uint32_t, std::vector<int>> completed;  // Guarded by mu.
  std::atomic<int> finished{0};
  std::atomic<int> redelivered{0};
  auto consumer = [&](const std::string& name) {
    while (!stop.load()) {
      absl::StatusOr<std::vector<Task>> t =
          g->Claim({.max = 3, .wait = absl::Seconds(2), .consumer = name});
      if (!t.ok()) {
        errors.fetch_add(1);
        break;
      }
      if (t->empty()) continue;
      MutexLock l(&mu);
      absl::Status s = g->Complete(*t);
      if (s.ok()) {
        for (const Task& x : *t) {
          int i = 0;
          if (!absl::SimpleAtoi(x.payload, &i)) errors.fetch_add(1);
          completed[x.partition].push_back(i);
          if (x.attempt > 1) redelivered.fetch_add(1);
        }
      } else if (!absl::IsFailedPrecondition(s)) {
        errors.fetch_add(1);
      }
    }
    finished.fetch_add(1);
  };
  // The first message of each partition, and a consumer that claims three
  // of them and stops (it owns every partition until it expires).
  for (uint32_t p = 0; p < kPartitions; ++p) {
    ValueOrDie(q->Put({.payload = "0", .partition = p}));
  }
  REQUIRE(ValueOrDie(g->Claim({.max = 3, .consumer = "quitter"})).size() == 3);
  std::thread producer([&] {
    for (int i = 1; i < kPerPartition; ++i) {
      for (uint32_t p = 0; p < kPartitions; ++p) {
        if (!q->Put({.payload = absl::StrCat(i), .partition = p}).ok()) {
          errors.fetch_add(1);
        }
      }
    }
  });
  std::vector<std::thread> threads;
  threads.emplace_back(consumer, "c0");
  threads.emplace_back(consumer, "c1");
  const absl::Time give_up = absl::Now() + absl::Seconds(120);
  size_t done = 0;
  while (done < kPartitions * kPerPartition && absl::Now() < give_up &&
         errors.load() == 0) {
    absl::SleepFor(absl::Milliseconds(2));
    f.clock().Advance(absl::Milliseconds(500));
    MutexLock l(&mu);
    done = 0;
    for (const auto& [p, v] : completed) done += v.size();
  }
  stop.store(true);
  producer.join();
  while (finished.load() < 2) {  // Ends the waiting claims.
    f.clock().Advance(absl::Seconds(1));
    absl::SleepFor(absl::Milliseconds(1));
  }
  for (std::thread& t : threads) t.join();
  CHECK(errors.load() == 0);
  // The quitter is gone, and what it held was delivered again.
  CHECK(Owned(g, "quitter").empty());
  CHECK(ValueOrDie(g->Consumers()).size() <= 2);
  CHECK(redelivered.load() > 0);
  MutexLock l(&mu);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    std::vector<int> want(kPerPartition);
    for (int i = 0; i < kPerPartition; ++i) want[i] = i;
    CHECK(completed[p] == want);
  }
}

// ---- Regressions from the review of ordered groups.

TEST_CASE("review: a claim right after Leave joins the consumer again") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  ConsumerGroup* g = ValueOrDie(q->Group("g", {.ordered = true}));
  int not_joined = 0;
  for (int i = 0; i < 50; ++i) {
    test::BackgroundClaim w(g, {.wait = absl::Hours(1), .consumer = "a"});
    test::AwaitWaiters(g, 1);
    HQ_REQUIRE_OK(g->Leave("a"));
    // A later claim: the header says it joins "a" again.
    HQ_REQUIRE_OK(g->Claim({.consumer = "a"}).status());
    bool joined = false;
    for (const ConsumerInfo& c : ValueOrDie(g->Consumers())) {
      joined |= c.name == "a";
    }
    if (!joined) ++not_joined;
    REQUIRE(ValueOrDie(w.Wait()).empty());
    if (joined) HQ_REQUIRE_OK(g->Leave("a"));
  }
  INFO("claims after Leave that did not join: " << not_joined << " of 50");
  CHECK(not_joined == 0);
}

// Two threads of one consumer loop on waiting claims (a worker pool); the
// consumer is told to Leave. Its claims should return, and the pool's next
// claims should join it again and wait, not spin.
TEST_CASE("review: a consumer with two claiming threads after Leave") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  ConsumerGroup* g = ValueOrDie(q->Group("g", {.ordered = true}));
  std::atomic<bool> stop{false};
  std::atomic<int> empty_returns{0};
  auto worker = [&] {
    while (!stop.load()) {
      auto r = g->Claim({.wait = absl::Hours(1), .consumer = "a"});
      if (r.ok() && r->empty()) empty_returns.fetch_add(1);
    }
  };
  constexpr int kThreads = 2;
  std::vector<std::thread> ts;
  for (int i = 0; i < kThreads; ++i) ts.emplace_back(worker);
  auto* impl = static_cast<GroupImpl*>(g);
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (impl->TEST_Sleepers() < kThreads && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  // No REQUIRE before the threads are joined (a blocked claim would keep
  // the Db from closing).
  const absl::Status left = g->Leave("a");
  absl::SleepFor(absl::Milliseconds(500));
  const int spins = empty_returns.load();
  bool joined = false;
  for (const ConsumerInfo& c : ValueOrDie(g->Consumers())) {
    joined |= c.name == "a";
  }
  stop.store(true);
  test::PutN(q, 4, "m", std::nullopt);  // Ends the waits.
  while (impl->TEST_Waiters() > 0) {
    test::PutN(q, 2, "m", std::nullopt);
    absl::SleepFor(absl::Milliseconds(1));
  }
  for (std::thread& t : ts) t.join();
  HQ_REQUIRE_OK(left);
  INFO(kThreads << " threads: empty returns in 500 ms after Leave: " << spins);
  CHECK(joined);
  CHECK(spins <= 2);
}

// A clock that runs with real time and moves 1 ms more at every read: time
// passes between two reads, as it does on a loaded machine. It keeps up
// with real time because the Db's timers sleep in real time: a clock that
// moved only when read would make a 40 ms wait last most of a second.
class SteppingClock final : public Clock {
 public:
  absl::Time Now() const override {
    const absl::Duration real =
        absl::FromChrono(std::chrono::steady_clock::now() - start_);
    return absl::FromUnixSeconds(1767225600) + real +
           absl::Milliseconds(n_.fetch_add(1));
  }

 private:
  const std::chrono::steady_clock::time_point start_ =
      std::chrono::steady_clock::now();
  mutable std::atomic<int64_t> n_{0};
};

TEST_CASE("review: a waiting claim whose next redelivery falls due meanwhile") {
  const bool ordered = GENERATE(false, true);
  SteppingClock clock;
  test::TempDir dir;
  Options opts = NoBackgroundSweeps();
  opts.clock = &clock;
  std::unique_ptr<Db> db = ValueOrDie(Db::Open(dir.Sub("db"), opts));
  Queue* q = ValueOrDie(db->CreateQueue("q", {.partitions = 2}));
  ValueOrDie(q->Put({.payload = "m", .partition = 0}));
  int failures = 0;
  std::string what;
  for (int r = 1; r <= 30; ++r) {
    ConsumerGroup* g = ValueOrDie(q->Group(
        absl::StrCat("g", r), {.ordered = ordered, .lease = absl::Hours(1)}));
    std::vector<Task> t = ValueOrDie(g->Claim({.consumer = "a"}));
    REQUIRE(t.size() == 1);
    HQ_REQUIRE_OK(g->Release(t[0], absl::Milliseconds(r)));
    absl::StatusOr<std::vector<Task>> w = g->Claim(
        {.partitions = {1}, .wait = absl::Milliseconds(40), .consumer = "a"});
    if (!w.ok()) {
      ++failures;
      what = w.status().ToString();
    }
  }
  INFO("ordered " << ordered << ": " << failures << " of 30 waiting claims "
                  << "failed, e.g. " << what);
  CHECK(failures == 0);
}

// ------------------------------------------------- topic layout: paging
// Ordered groups of topic layout queues are paged as unordered ones are
// (doc/massive_topics.md): at most max_active_lanes lanes with new
// messages in memory, plus a claim's page-in budget, plus the lanes of the
// tasks in flight.

GroupImpl* Impl(ConsumerGroup* g) { return static_cast<GroupImpl*>(g); }

// Claims as consumer "a" until nothing is claimable, completing each
// claim; checks on every claim that it took at most one task a partition.
// Returns the tasks in delivery order.
std::vector<Task> DrainOrdered(ConsumerGroup* g, uint32_t max,
                               size_t* max_resident, size_t* max_active) {
  std::vector<Task> all;
  for (;;) {
    std::vector<Task> t = ValueOrDie(g->Claim({.max = max, .consumer = "a"}));
    *max_resident = std::max(*max_resident, Impl(g)->TEST_ResidentLanes());
    *max_active = std::max(*max_active, Impl(g)->TEST_ActiveLanes());
    if (t.empty()) return all;
    std::set<uint32_t> parts;
    for (const Task& x : t) CHECK(parts.insert(x.partition).second);
    HQ_REQUIRE_OK(g->Complete(t));
    all.insert(all.end(), t.begin(), t.end());
  }
}

// The payloads of `tasks` per topic, in order.
std::map<std::string, std::vector<std::string>> ByTopic(
    const std::vector<Task>& tasks) {
  std::map<std::string, std::vector<std::string>> out;
  for (const Task& t : tasks) out[t.topic].push_back(t.payload);
  return out;
}

// After a restart: each of `interrupted` (in flight at the restart) came
// again in `after` as its second attempt, and `done` (completed before)
// with `after` hands out the three messages of each of `topics` topics
// ("<topic>/0".."/2") once each, in order.
void CheckRestartDrain(const std::vector<Task>& interrupted,
                       const std::vector<Task>& after, std::vector<Task> done,
                       size_t topics) {
  for (const Task& x : interrupted) {
    auto again = std::find_if(after.begin(), after.end(),
                              [&](const Task& y) { return y.id == x.id; });
    REQUIRE(again != after.end());
    CHECK(again->attempt == 2);
  }
  done.insert(done.end(), after.begin(), after.end());
  const auto seen = ByTopic(done);
  REQUIRE(seen.size() == topics);
  for (const auto& [topic, payloads] : seen) {
    INFO(topic);
    CHECK(payloads == std::vector<std::string>{absl::StrCat(topic, "/0"),
                                               absl::StrCat(topic, "/1"),
                                               absl::StrCat(topic, "/2")});
  }
}

TEST_CASE("issue17: an ordered group of 4000 topics pages its lanes") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 4, .layout = Layout::kTopic}));
  constexpr int kTopics = 4000;
  constexpr size_t kCap = 8;
  constexpr uint32_t kClaim = 10;
  // A claim may page in max(256, 4 x max) lanes over the cap.
  constexpr size_t kBudget = 256;
  // Half the topics get their messages before the group exists (the lane
  // walk), half after (the lane index); two messages each.
  auto put = [&](int from, int to) {
    for (int round = 0; round < 2; ++round) {
      for (int i = from; i < to; ++i) {
        const std::string topic = absl::StrCat("site", i);
        ValueOrDie(q->Put(
            {.topic = topic, .payload = absl::StrCat(topic, "/", round)}));
      }
    }
  };
  put(0, kTopics / 2);
  GroupOptions o = Ordered();
  o.max_active_lanes = kCap;
  ConsumerGroup* g = ValueOrDie(q->Group("g", o));
  put(kTopics / 2, kTopics);

  size_t max_resident = 0, max_active = 0;
  const auto seen =
      ByTopic(DrainOrdered(g, kClaim, &max_resident, &max_active));
  REQUIRE(seen.size() == static_cast<size_t>(kTopics));
  for (const auto& [topic, payloads] : seen) {
    INFO(topic);
    CHECK(payloads == std::vector<std::string>{absl::StrCat(topic, "/0"),
                                               absl::StrCat(topic, "/1")});
  }
  CHECK(max_active <= kCap + kBudget);
  CHECK(max_resident <= kCap + kBudget + 4);  // + one in flight a partition.
  CHECK(Impl(g)->TEST_ResidentLanes() == 0);

  // A restarted group whose topics are all drained loads nothing.
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  g = ValueOrDie(q->Group("g", o));
  CHECK(Impl(g)->TEST_ResidentLanes() == 0);
  CHECK(ValueOrDie(g->Claim({.max = kClaim, .consumer = "a"})).empty());
  CHECK(Impl(g)->TEST_ResidentLanes() == 0);
}

TEST_CASE("a paged ordered partition: priorities first, then round-robin") {
  const size_t cap = GENERATE(1, 2, 1000);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 1, .priorities = 2, .layout = Layout::kTopic}));
  const bool before = GENERATE(true, false);  // Walked, or from the index.
  GroupOptions o = Ordered();
  o.max_active_lanes = cap;
  ConsumerGroup* g = nullptr;
  if (!before) g = ValueOrDie(q->Group("g", o));
  constexpr int kLow = 6;
  for (int m = 0; m < 2; ++m) {
    for (int t = 0; t < kLow; ++t) {
      PutN(q, 1, absl::StrCat("t", t, "/", m), 0, 0, absl::StrCat("t", t));
    }
  }
  PutN(q, 2, "h/", 0, 1, "h");
  if (before) g = ValueOrDie(q->Group("g", o));
  INFO("cap " << cap << ", group created before the puts " << !before);

  std::vector<std::string> order;
  for (;;) {
    std::vector<Task> t = ValueOrDie(g->Claim({.max = 5, .consumer = "a"}));
    if (t.empty()) break;
    REQUIRE(t.size() == 1);  // One partition: one task in flight.
    order.push_back(t[0].payload);
    HQ_REQUIRE_OK(g->Complete(t));
  }
  REQUIRE(order.size() == 2 + 2 * kLow);
  // The high priority first.
  CHECK(order[0] == "h/0");
  CHECK(order[1] == "h/1");
  // Then every low topic has its turn before any has a second.
  std::set<std::string> first_turns;
  for (int i = 2; i < 2 + kLow; ++i) {
    CHECK(order[static_cast<size_t>(i)].ends_with("/00"));
    first_turns.insert(order[static_cast<size_t>(i)]);
  }
  CHECK(first_turns.size() == static_cast<size_t>(kLow));
  for (int i = 2 + kLow; i < 2 + 2 * kLow; ++i) {
    CHECK(order[static_cast<size_t>(i)].ends_with("/10"));
  }
}

TEST_CASE("a paged ordered lane in flight at a restart is delivered again") {
  const size_t cap = GENERATE(1, 3);
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  GroupOptions o = Ordered();
  o.max_active_lanes = cap;
  ConsumerGroup* g = ValueOrDie(q->Group("g", o));
  for (int t = 0; t < 6; ++t) {
    for (uint32_t p = 0; p < 2; ++p) {
      PutN(q, 3, absl::StrCat("p", p, "t", t, "/"), p, 0,
           absl::StrCat("p", p, "t", t));
    }
  }
  const ClaimOptions c{.max = 10, .consumer = "a"};
  const std::vector<Task> done = ClaimRounds(g, c, 5);
  const std::vector<Task> interrupted = ValueOrDie(g->Claim(c));
  REQUIRE(interrupted.size() == 2);
  INFO("cap " << cap);

  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  g = ValueOrDie(q->Group("g", o));
  size_t max_resident = 0, max_active = 0;
  const std::vector<Task> after =
      DrainOrdered(g, 10, &max_resident, &max_active);
  // Each task in flight at the restart comes again, as its second attempt;
  // nothing completed comes again.
  CheckRestartDrain(interrupted, after, done, 12);
}

TEST_CASE("an ordered group without a source position walks its lanes") {
  // As an ordered group of a topic layout queue written before they were
  // paged: cursors and task records, no source position.
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  ConsumerGroup* g = ValueOrDie(q->Group("g", Ordered()));
  for (int t = 0; t < 10; ++t) {
    const std::string topic = absl::StrCat("t", t);
    PutN(q, 3, topic + "/", std::nullopt, 0, topic);
  }
  const ClaimOptions c{.max = 10, .consumer = "a"};
  const std::vector<Task> done = ClaimRounds(g, c, 4);
  const std::vector<Task> interrupted = ValueOrDie(g->Claim(c));
  REQUIRE(interrupted.size() == 2);
  const std::string sources =
      format::QueuePrefix(format::kSourceTag, static_cast<QueueImpl*>(q)->id());
  REQUIRE(test::CountKeys(f.db(), sources) == 1);
  {
    std::unique_ptr<leveldb::Iterator> it(
        test::Impl(f.db())->leveldb()->NewIterator({}));
    it->Seek(sources);
    REQUIRE(it->Valid());
    HQ_REQUIRE_OK(FromLevelDb(
        test::Impl(f.db())->leveldb()->Delete({}, it->key()), "test"));
  }

  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  GroupOptions o = Ordered();
  o.max_active_lanes = 2;
  g = ValueOrDie(q->Group("g", o));
  CHECK(test::CountKeys(f.db(), sources) == 1);  // Written at load.
  size_t max_resident = 0, max_active = 0;
  const std::vector<Task> after =
      DrainOrdered(g, 10, &max_resident, &max_active);
  CheckRestartDrain(interrupted, after, done, 10);
}

TEST_CASE("a paged ordered partition is not starved by a busy one's lanes") {
  // Partition 0's lanes come first in the source (its walk goes partition
  // by partition; the index in write order) and outnumber the working set
  // and a claim's budget over it; its one task stays in flight. Partition
  // 1 goes on: the lanes of the busy partition are parked.
  const bool walked = GENERATE(true, false);
  const bool restart = GENERATE(true, false);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  GroupOptions o = Ordered();
  o.max_active_lanes = 4;
  o.lease = absl::Hours(1);
  ConsumerGroup* g = nullptr;
  if (!walked) g = ValueOrDie(q->Group("g", o));
  constexpr int kTopics = 600;  // A partition; over 4 + 256.
  PutTopicsPerPartition(q, kTopics);
  if (walked) g = ValueOrDie(q->Group("g", o));
  INFO("walked " << walked << ", restart " << restart);
  const uint32_t qid = static_cast<QueueImpl*>(q)->id();
  const std::string parks = format::QueuePrefix(format::kParkTag, qid);
  const std::string hints = format::QueuePrefix(format::kHintTag, qid);
  std::vector<Task> held;
  std::set<std::string> p1;
  for (int i = 0; i < 4 * kTopics; ++i) {
    std::vector<Task> t = ValueOrDie(g->Claim({.max = 2, .consumer = "a"}));
    if (t.empty()) break;
    for (const Task& x : t) {
      if (x.partition == 0) {
        held.push_back(x);
      } else {
        CHECK(p1.insert(x.payload).second);
        HQ_REQUIRE_OK(g->Complete(std::span(&x, 1)));
      }
    }
    CHECK(Impl(g)->TEST_ActiveLanes() <= 4 + 256);
    CHECK(Impl(g)->TEST_ResidentLanes() <= 4 + 256 + 2);
  }
  REQUIRE(held.size() == 1);
  CHECK(p1.size() == static_cast<size_t>(kTopics));
  // Partition 0's other lanes are parked, once each; claims with nothing
  // to take write nothing and read no lane again.
  const size_t parked = test::CountKeys(f.db(), parks);
  CHECK(parked > 0);
  CHECK(parked <= static_cast<size_t>(kTopics));
  {
    const VerifyReport report = ValueOrDie(f.db()->Verify());
    for (const VerifyProblem& x : report.problems) FAIL_CHECK(x.description);
  }
  const size_t hinted = test::CountKeys(f.db(), hints);
  for (int i = 0; i < 5; ++i) {
    CHECK(ValueOrDie(g->Claim({.max = 2, .consumer = "a"})).empty());
  }
  CHECK(test::CountKeys(f.db(), parks) == parked);
  CHECK(test::CountKeys(f.db(), hints) == hinted);

  // Then partition 0 drains too, its parked lanes found again (after a
  // restart: its task in flight comes again, as its second attempt).
  if (restart) {
    f.Reopen();
    q = ValueOrDie(f.db()->OpenQueue("q"));
    g = ValueOrDie(q->Group("g", o));
  } else {
    HQ_REQUIRE_OK(g->Complete(held));
  }
  size_t max_resident = 0, max_active = 0;
  const std::vector<Task> rest = DrainOrdered(g, 2, &max_resident, &max_active);
  std::set<std::string> p0{held[0].payload};
  for (const Task& x : rest) {
    CHECK(x.partition == 0);
    if (x.id == held[0].id) {
      CHECK(restart);
      CHECK(x.attempt == 2);
      continue;
    }
    CHECK(p0.insert(x.payload).second);
  }
  CHECK(p0.size() == static_cast<size_t>(kTopics));
  CHECK(max_active <= 4 + 256);
  // Nothing is left parked.
  CHECK(test::CountKeys(f.db(), parks) == 0);
}

TEST_CASE("a consumer is not starved by another's idle partition's lanes") {
  // Consumer "b" owns partitions 1 and 2 and holds a task of 1 (a long
  // job); partition 2 is idle with many lanes, written before partition
  // 0's one lane. Consumer "a" owns partition 0 and gets its task: the
  // lanes it cannot take are parked.
  const size_t cap = GENERATE(size_t{131072}, size_t{4});
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 3, .layout = Layout::kTopic}));
  GroupOptions o = Ordered();
  o.max_active_lanes = cap;
  o.lease = absl::Hours(1);
  o.ownership_lease = absl::Hours(1);
  ConsumerGroup* g = ValueOrDie(q->Group("g", o));
  CHECK(ValueOrDie(g->Claim({.max = 1, .consumer = "b"})).empty());
  CHECK(ValueOrDie(g->Claim({.max = 1, .consumer = "a"})).empty());
  const std::vector<uint32_t> pa = Owned(g, "a");
  const std::vector<uint32_t> pb = Owned(g, "b");
  REQUIRE(pa.size() == 1);
  REQUIRE(pb.size() == 2);
  PutN(q, 1, "job", pb[0], 0, "job");
  const std::vector<Task> job =
      ValueOrDie(g->Claim({.max = 1, .consumer = "b"}));
  REQUIRE(job.size() == 1);
  for (int t = 0; t < 600; ++t) {
    PutN(q, 1, absl::StrCat("b", t, "/"), pb[1], 0, absl::StrCat("b", t));
  }
  PutN(q, 1, "a/", pa[0], 0, "a");
  INFO("cap " << cap);
  const std::vector<Task> got =
      ValueOrDie(g->Claim({.max = 2, .consumer = "a"}));
  INFO("active lanes " << Impl(g)->TEST_ActiveLanes());
  REQUIRE(got.size() == 1);
  CHECK(got[0].payload == "a/0");
  // And "b" gets every task of its idle partition, in order, the parked
  // lanes found again.
  HQ_REQUIRE_OK(g->Complete(got));
  std::set<std::string> b;
  for (int i = 0; i < 2000; ++i) {
    std::vector<Task> t = ValueOrDie(g->Claim({.max = 2, .consumer = "b"}));
    if (t.empty()) break;
    REQUIRE(t.size() == 1);  // Partition 1 is busy.
    CHECK(t[0].partition == pb[1]);
    CHECK(b.insert(t[0].payload).second);
    HQ_REQUIRE_OK(g->Complete(t));
  }
  CHECK(b.size() == 600);
}

// Whether a park record of queue `q` names a lane of topic `topic`.
bool HasParkRecord(Db* db, Queue* q, const std::string& topic) {
  const std::string parks =
      format::QueuePrefix(format::kParkTag, static_cast<QueueImpl*>(q)->id());
  std::unique_ptr<leveldb::Iterator> it(
      test::Impl(db)->leveldb()->NewIterator(leveldb::ReadOptions()));
  for (it->Seek(parks); it->Valid() && it->key().starts_with(parks);
       it->Next()) {
    if (it->key().ToString().find(topic) != std::string::npos) return true;
  }
  return false;
}

TEST_CASE("a parked lane whose head waits is found again after a restart") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  GroupOptions o = Ordered();
  o.max_active_lanes = 4;
  o.lease = absl::Hours(1);
  o.ownership_lease = absl::Hours(100);
  ConsumerGroup* g = ValueOrDie(q->Group("g", o));
  const ClaimOptions one{.max = 1, .consumer = "a"};
  PutN(q, 2, "x/", 0, 0, "x");
  PutN(q, 2, "a/", 0, 0, "a");
  // The first lane's head is released for an hour (a waiting record): the
  // lane is held back.
  std::vector<Task> t = ValueOrDie(g->Claim(one));
  REQUIRE(t.size() == 1);
  const std::string w = t[0].topic;
  const std::string b = w == "x" ? "a" : "x";
  REQUIRE(t[0].payload == w + "/0");
  HQ_REQUIRE_OK(g->Release(t[0], absl::Hours(1)));
  // The other's head keeps partition 0 busy, as a second attempt (a task
  // record).
  t = ValueOrDie(g->Claim(one));
  REQUIRE(t.size() == 1);
  REQUIRE(t[0].payload == b + "/0");
  HQ_REQUIRE_OK(g->Release(t[0], absl::ZeroDuration()));
  std::vector<Task> held = ValueOrDie(g->Claim(one));
  REQUIRE(held.size() == 1);
  REQUIRE(held[0].payload == b + "/0");
  constexpr int kTopics = 600;
  PutTopicsPerPartition(q, kTopics);
  std::set<std::string> seen{b + "/0"};
  for (int i = 0; i < 4 * kTopics; ++i) {
    t = ValueOrDie(g->Claim({.max = 2, .consumer = "a"}));
    if (t.empty()) break;
    for (const Task& x : t) {
      REQUIRE(x.partition == 1);
      seen.insert(x.payload);
      HQ_REQUIRE_OK(g->Complete(std::span(&x, 1)));
    }
  }
  INFO("waiting lane " << w);
  REQUIRE(HasParkRecord(f.db(), q, w));
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  g = ValueOrDie(q->Group("g", o));
  size_t max_resident = 0, max_active = 0;
  for (const Task& x : DrainOrdered(g, 2, &max_resident, &max_active)) {
    seen.insert(x.payload);
  }
  INFO("park record of the waiting lane after the first drain: "
       << HasParkRecord(f.db(), q, w));
  // x/0 falls due: then x/1.
  f.clock().Advance(absl::Hours(2));
  for (const Task& x : DrainOrdered(g, 2, &max_resident, &max_active)) {
    seen.insert(x.payload);
  }
  INFO("park record of the waiting lane at the end: " << HasParkRecord(f.db(),
                                                                       q, w));
  CHECK(seen.contains(w + "/0"));
  CHECK(seen.contains(w + "/1"));
  CHECK(seen.contains(b + "/1"));
  CHECK(seen.size() == 2 * kTopics + 4);
  // Not even after another restart.
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  g = ValueOrDie(q->Group("g", o));
  const std::vector<Task> late = DrainOrdered(g, 2, &max_resident, &max_active);
  CHECK(Payloads(late) == std::vector<std::string>{});
}

TEST_CASE(
    "parked lanes take turns with a long active lane of their partition") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  GroupOptions o = Ordered();
  o.max_active_lanes = 4;
  o.lease = absl::Hours(1);
  o.ownership_lease = absl::Hours(100);
  ConsumerGroup* g = ValueOrDie(q->Group("g", o));
  constexpr int kTopics = 600;
  PutTopicsPerPartition(q, kTopics);
  constexpr int kLong = 300;
  std::vector<Task> held;
  for (int i = 0; i < 4 * kTopics; ++i) {
    std::vector<Task> t = ValueOrDie(g->Claim({.max = 2, .consumer = "a"}));
    if (t.empty()) break;
    for (const Task& x : t) {
      if (x.partition == 0) {
        held.push_back(x);
      } else {
        HQ_REQUIRE_OK(g->Complete(std::span(&x, 1)));
      }
    }
  }
  REQUIRE(held.size() == 1);
  const size_t parked = test::CountKeys(
      f.db(),
      format::QueuePrefix(format::kParkTag, static_cast<QueueImpl*>(q)->id()));
  HQ_REQUIRE_OK(g->Complete(held));
  // A new lane of partition 0 with a backlog.
  PutN(q, kLong, "long/", 0, 0, "long");
  size_t max_resident = 0, max_active = 0;
  const std::vector<Task> rest = DrainOrdered(g, 2, &max_resident, &max_active);
  // Where the long lane's last task came, and how many other lanes had a
  // turn before it.
  size_t others_before_long_done = 0, seen_long = 0;
  for (const Task& x : rest) {
    if (x.topic == "long") {
      if (++seen_long == kLong) break;
    } else {
      ++others_before_long_done;
    }
  }
  INFO("parked " << parked);
  CHECK(rest.size() == kTopics - 1 + kLong);
  // Round-robin: the 599 other lanes (one task each) all have their turn
  // within the long lane's 300.
  CHECK(others_before_long_done >= 299);
}

}  // namespace
}  // namespace hq
