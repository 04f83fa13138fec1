// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The fleet's ownership (lib/fleet/ownership.h) against a real 3-node
// ZooKeeper ensemble on 127.0.0.1: sharing, grace, restart, Leave,
// coordinator failover, refusals, and fencing of a paused agent.

#include "lib/fleet/ownership.h"

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "test/fleet/cluster.h"
#include "test/test_util.h"

namespace hq::fleet {
namespace {

using test::FleetCluster;

// Generous: the machine is loaded and JVMs are slow.
constexpr absl::Duration kDeadline = absl::Seconds(90);

FleetCluster& Cluster() {
  absl::Status why;
  FleetCluster* cluster =
      test::SharedCluster({.zookeeper_nodes = 3, .nats_nodes = 0}, &why);
  if (cluster == nullptr) FAIL("cannot start the cluster: " << why);
  return *cluster;
}

OwnershipOptions Options(std::string fleet, std::string id,
                         uint32_t partitions = 16) {
  return {.agent_id = std::move(id),
          .fleet = std::move(fleet),
          .zookeeper = Cluster().zookeeper_connect(),
          .partitions = partitions,
          .session_timeout = absl::Seconds(8),
          .grace = absl::Seconds(2),
          .ownership_lease = absl::Milliseconds(1500)};
}

std::unique_ptr<Ownership> Join(const OwnershipOptions& o) {
  absl::StatusOr<std::unique_ptr<Ownership>> own = Ownership::Start(o);
  HQ_REQUIRE_OK(own.status());
  return std::move(*own);
}

// Waits until `done()` holds; fails the test with `what` at the deadline.
template <typename F>
void WaitUntil(F done, std::string_view what,
               absl::Duration deadline = kDeadline) {
  const absl::Time end = absl::Now() + deadline;
  while (!done()) {
    if (absl::Now() > end) FAIL("not within " << deadline << ": " << what);
    absl::SleepFor(absl::Milliseconds(20));
  }
}

std::set<uint32_t> Owned(const Ownership& o) {
  std::set<uint32_t> out;
  for (const auto& [p, held] : o.view()->owned) out.insert(p);
  return out;
}

// Every agent serves exactly the partitions the assignment gives it, and
// the assignment gives every partition to one of them, evenly.
bool Settled(const std::vector<Ownership*>& agents,
             const std::vector<std::string>& ids) {
  Assignment a = agents[0]->assignment();
  std::map<std::string, size_t> counts;
  for (const std::string& owner : a.owners) ++counts[owner];
  size_t lo = SIZE_MAX, hi = 0;
  for (size_t i = 0; i < agents.size(); ++i) {
    lo = std::min(lo, counts[ids[i]]);
    hi = std::max(hi, counts[ids[i]]);
    Assignment mine = agents[i]->assignment();
    if (!(mine == a)) return false;
    for (uint32_t p = 0; p < a.partitions(); ++p) {
      const bool owns = a.owners[p] == ids[i];
      if (owns != agents[i]->Serving(p, a.epochs[p], nullptr)) return false;
    }
  }
  return counts[""] == 0 && hi - lo <= 1;
}

TEST_CASE("ownership: agents share the partitions, each serving its own") {
  auto a0 = Join(Options("share", "a0"));
  auto a1 = Join(Options("share", "a1"));
  auto a2 = Join(Options("share", "a2"));
  WaitUntil(
      [&] {
        return Settled({a0.get(), a1.get(), a2.get()}, {"a0", "a1", "a2"});
      },
      "three agents settle");
  int coordinators = a0->view()->coordinator + a1->view()->coordinator +
                     a2->view()->coordinator;
  CHECK(coordinators == 1);
  CHECK(a0->view()->coordinator);  // The first to join.
}

TEST_CASE(
    "ownership: a dead agent's partitions move after the grace period,"
    " at new epochs") {
  OwnershipOptions o0 = Options("grace", "g0"), o1 = Options("grace", "g1");
  o0.grace = o1.grace = absl::Seconds(3);
  auto g0 = Join(o0);
  auto g1 = Join(o1);
  WaitUntil(
      [&] {
        return Settled({g0.get(), g1.get()}, {"g0", "g1"});
      },
      "two agents settle");
  const Assignment before = g0->assignment();
  g1.reset();  // Its session closes: as if the process died.
  WaitUntil([&] { return Owned(*g0).size() == 16; }, "g0 owns every partition");
  const Assignment after = g0->assignment();
  for (uint32_t p = 0; p < 16; ++p) {
    INFO("partition " << p);
    CHECK(after.owners[p] == "g0");
    CHECK(after.epochs[p] ==
          before.epochs[p] + (before.owners[p] == "g1" ? 1 : 0));
  }
  WaitUntil([&] { return Settled({g0.get()}, {"g0"}); }, "g0 serves all");
}

TEST_CASE(
    "ownership: a restart within the grace period keeps the "
    "partitions and their epochs") {
  OwnershipOptions o0 = Options("restart", "r0"), o1 = Options("restart", "r1");
  o0.grace = o1.grace = absl::Seconds(60);
  auto r0 = Join(o0);
  auto r1 = Join(o1);
  WaitUntil(
      [&] {
        return Settled({r0.get(), r1.get()}, {"r0", "r1"});
      },
      "two agents settle");
  const Assignment before = r0->assignment();
  r1.reset();
  r1 = Join(o1);
  WaitUntil(
      [&] {
        return Settled({r0.get(), r1.get()}, {"r0", "r1"});
      },
      "the restarted agent serves again");
  CHECK(r1->assignment() == before);
}

TEST_CASE("ownership: Leave moves the partitions without the grace period") {
  OwnershipOptions o0 = Options("leave", "l0"), o1 = Options("leave", "l1");
  o0.grace = o1.grace = absl::Hours(1);
  auto l0 = Join(o0);
  auto l1 = Join(o1);
  WaitUntil(
      [&] {
        return Settled({l0.get(), l1.get()}, {"l0", "l1"});
      },
      "two agents settle");
  HQ_REQUIRE_OK(l1->Leave());
  for (uint32_t p = 0; p < 16; ++p) CHECK_FALSE(l1->Serving(p, 1, nullptr));
  CHECK(l1->view()->owned.empty());
  WaitUntil([&] { return Settled({l0.get()}, {"l0"}); }, "l0 takes all");
}

TEST_CASE("ownership: when the coordinator dies another takes its role") {
  auto c0 = Join(Options("coord", "c0"));
  auto c1 = Join(Options("coord", "c1"));
  WaitUntil(
      [&] {
        return Settled({c0.get(), c1.get()}, {"c0", "c1"});
      },
      "two agents settle");
  REQUIRE(c0->view()->coordinator);
  c0.reset();
  WaitUntil([&] { return c1->view()->coordinator; }, "c1 coordinates");
  auto c2 = Join(Options("coord", "c2"));
  WaitUntil(
      [&] {
        return Settled({c1.get(), c2.get()}, {"c1", "c2"});
      },
      "c1 gives c2 its share");
}

TEST_CASE("ownership: refusals") {
  auto f0 = Join(Options("refuse", "f0", 16));
  SECTION("another partition count") {
    auto other = Ownership::Start(Options("refuse", "f1", 32));
    REQUIRE_FALSE(other.ok());
    CHECK(other.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(other.status().message().find("partitions=16") !=
          std::string_view::npos);
  }
  SECTION("an id a live agent holds") {
    auto twin = Ownership::Start(Options("refuse", "f0", 16));
    REQUIRE_FALSE(twin.ok());
    CHECK(twin.status().code() == absl::StatusCode::kAlreadyExists);
    // The live one is untouched.
    WaitUntil([&] { return Settled({f0.get()}, {"f0"}); }, "f0 serves");
  }
  SECTION("no ZooKeeper") {
    OwnershipOptions o = Options("refuse", "f2", 16);
    o.zookeeper = "127.0.0.1:1";
    o.session_timeout = absl::Seconds(1);
    auto none = Ownership::Start(o);
    REQUIRE_FALSE(none.ok());
    CHECK(none.status().code() == absl::StatusCode::kUnavailable);
  }
}

// One streak of serving of a partition by a child, from its first check to
// the latest valid_until it was given.
struct Streak {
  int child;
  uint32_t partition;
  uint64_t epoch;
  int64_t from_ns, until_ns;
};

struct ChildLog {
  bool joined = false;
  std::set<uint32_t> serving;  // Streaks open at the end of the log.
  std::vector<Streak> streaks;
};

ChildLog ReadLog(const std::string& path, int child) {
  ChildLog log;
  std::ifstream in(path);
  std::map<uint32_t, std::pair<uint64_t, int64_t>> open;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    uint32_t p;
    uint64_t epoch;
    int64_t a, b;
    if (kind == "joined") {
      log.joined = true;
    } else if (kind == "on" && (words >> p >> epoch >> a)) {
      open[p] = {epoch, a};
    } else if (kind == "off" && (words >> p >> epoch >> a >> b)) {
      auto it = open.find(p);
      if (it == open.end()) continue;  // A torn last line.
      log.streaks.push_back({child, p, epoch, it->second.second, a});
      open.erase(it);
    }
  }
  for (const auto& [p, e] : open) log.serving.insert(p);
  return log;
}

TEST_CASE("ownership: a paused agent never serves a partition it lost") {
  const std::string child = test::PathFromEnv("HQ_OWNERSHIP_CHILD");
  test::TempDir dir;
  const std::string logs[2] = {dir.path() + "/z0.log", dir.path() + "/z1.log"};
  auto start = [&](int i) {
    // Session 2 s, grace 1 s, lease 1.2 s, 8 partitions.
    return std::make_unique<test::Child>(
        child, std::vector<std::string>{logs[i], Cluster().zookeeper_connect(),
                                        absl::StrCat("z", i), "8", "2000",
                                        "1000", "1200"});
  };
  auto z0 = start(0);
  WaitUntil([&] { return ReadLog(logs[0], 0).serving.size() == 8; },
            "z0 serves all 8 partitions");
  auto z1 = start(1);
  WaitUntil(
      [&] {
        return ReadLog(logs[0], 0).serving.size() == 4 &&
               ReadLog(logs[1], 1).serving.size() == 4;
      },
      "z0 and z1 serve 4 each");

  REQUIRE(kill(z0->pid(), SIGSTOP) == 0);  // The zombie.
  WaitUntil([&] { return ReadLog(logs[1], 1).serving.size() == 8; },
            "z1 serves all 8 while z0 is stopped");
  REQUIRE(kill(z0->pid(), SIGCONT) == 0);
  WaitUntil(
      [&] {
        return ReadLog(logs[0], 0).serving.size() == 4 &&
               ReadLog(logs[1], 1).serving.size() == 4;
      },
      "z0 rejoins and gets its share back");
  CHECK(z0->Stop(SIGTERM) == 0);
  CHECK(z1->Stop(SIGTERM) == 0);

  std::vector<Streak> all = ReadLog(logs[0], 0).streaks;
  for (const Streak& s : ReadLog(logs[1], 1).streaks) all.push_back(s);
  size_t checked = 0;
  for (const Streak& a : all) {
    for (const Streak& b : all) {
      if (a.child >= b.child || a.partition != b.partition) continue;
      ++checked;
      INFO("partition " << a.partition << ": z" << a.child << " epoch "
                        << a.epoch << " [" << a.from_ns << ", " << a.until_ns
                        << "] and z" << b.child << " epoch " << b.epoch << " ["
                        << b.from_ns << ", " << b.until_ns << "]");
      CHECK((a.until_ns <= b.from_ns || b.until_ns <= a.from_ns));
      CHECK(a.epoch != b.epoch);
    }
  }
  CHECK(checked >= 8);  // Every partition changed hands at least once.
}

}  // namespace
}  // namespace hq::fleet
