// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq::fleet::ReadFleetStatus against a fleet of Agents in this process, on one ZooKeeper
// node and one nats-server started on 127.0.0.1: members, owners, epochs,
// the coordinator, hand-off lag, and the errors (unknown fleet, dead
// address, bad options, a damaged record).

#include <unistd.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "hq/fleet.h"
#include "lib/fleet/assignment.h"
#include "lib/fleet/clients.h"
#include "lib/fleet/handoff.h"
#include "lib/fleet/zk.h"
#include "test/fleet/cluster.h"
#include "test/test_util.h"

namespace hq::fleet {
namespace {

using test::FleetCluster;

// Waits for what the fleet's agents do in the background; generous, as the
// machine is loaded.
constexpr absl::Duration kDeadline = absl::Seconds(120);
constexpr uint32_t kPartitions = 16;

FleetCluster& Cluster() {
  absl::Status why;
  FleetCluster* cluster =
      test::SharedCluster({.zookeeper_nodes = 1, .nats_nodes = 1}, &why);
  if (cluster == nullptr) FAIL("cannot start the cluster: " << why);
  return *cluster;
}

struct Fleet {
  std::string name;
  test::TempDir dir;

  AgentOptions Options(const std::string& id) const {
    AgentOptions o;
    o.agent_id = id;
    o.fleet = name;
    o.db_path = dir.path() + "/" + id;
    o.zookeeper = Cluster().zookeeper_connect();
    o.nats = Cluster().nats_urls();
    o.partitions = kPartitions;
    o.replicas = 1;
    o.session_timeout = absl::Seconds(3);
    o.grace = absl::Seconds(2);
    o.ownership_lease = absl::Seconds(1);
    o.task_lease = absl::Seconds(2);
    return o;
  }
  std::unique_ptr<Agent> Open(const std::string& id) const {
    absl::StatusOr<std::unique_ptr<Agent>> a = Agent::Open(Options(id));
    HQ_REQUIRE_OK(a.status());
    return std::move(*a);
  }
  FleetStatusOptions StatusOptions(bool nats) const {
    return {.zookeeper = Cluster().zookeeper_connect(),
            .fleet = name,
            .nats = nats ? Cluster().nats_urls() : "",
            .timeout = absl::Seconds(30)};
  }
  FleetStatus Read(bool nats = true) const {
    absl::StatusOr<FleetStatus> s = ReadFleetStatus(StatusOptions(nats));
    HQ_REQUIRE_OK(s.status());
    return *std::move(s);
  }
  // Reads until `done` holds, for up to kDeadline; returns that status.
  template <typename Pred>
  FleetStatus WaitFor(const char* what, Pred done) const {
    const absl::Time end = absl::Now() + kDeadline;
    for (;;) {
      FleetStatus s = Read();
      if (done(s)) return s;
      if (absl::Now() > end) FAIL("fleet " << name << ": no " << what);
      absl::SleepFor(absl::Milliseconds(100));
    }
  }
};

std::string HostName() {
  char host[256] = {};
  REQUIRE(gethostname(host, sizeof(host) - 1) == 0);
  return host;
}

std::vector<Url> Urls(int sites, int per_site, const std::string& tag) {
  std::vector<Url> out;
  for (int s = 0; s < sites; ++s) {
    for (int i = 0; i < per_site; ++i) {
      out.push_back({.url = absl::StrCat("http://www.s", s, ".test/", tag, i)});
    }
  }
  return out;
}

uint32_t PartitionOfUrl(const std::string& url) {
  absl::StatusOr<std::string> site = SiteOf(url);
  HQ_REQUIRE_OK(site.status());
  return PartitionOf(*site, kPartitions);
}

// Both agents are members, every partition is owned, and with `lag` 0.
bool Settled(const FleetStatus& s, size_t members) {
  if (s.members.size() != members || s.unowned != 0 || s.lag != 0) {
    return false;
  }
  for (const FleetStatus::Member& m : s.members) {
    if (!m.live || m.partitions == 0) return false;
  }
  return !s.coordinator.empty();
}

// ------------------------------------------------------------ the cases

TEST_CASE("fleet status: two agents, their partitions, epochs, coordinator") {
  Fleet f{.name = "status_two"};
  auto a0 = f.Open("a0");
  auto a1 = f.Open("a1");
  FleetStatus s = f.WaitFor("two members sharing the partitions",
                            [](const FleetStatus& s) { return Settled(s, 2); });
  CHECK(s.fleet == f.name);
  CHECK(s.partitions == kPartitions);
  REQUIRE(s.by_partition.size() == kPartitions);
  REQUIRE(s.members.size() == 2);
  CHECK(s.members[0].agent_id == "a0");
  CHECK(s.members[1].agent_id == "a1");
  uint32_t sum = 0;
  for (const FleetStatus::Member& m : s.members) {
    INFO(m.agent_id);
    CHECK(m.live);
    CHECK(!m.left);
    CHECK(m.pid == getpid());
    CHECK(m.host == HostName());
    CHECK(m.partitions == kPartitions / 2);  // An even share.
    sum += m.partitions;
  }
  CHECK(sum == kPartitions);
  // a0 joined first: its election node is the lowest.
  CHECK(s.coordinator == "a0");
  CHECK(s.members[0].coordinator);
  CHECK(!s.members[1].coordinator);
  // Each partition: an owner and a positive epoch, as the owner sees it.
  std::map<std::string, uint32_t> owned;
  for (uint32_t p = 0; p < kPartitions; ++p) {
    INFO("partition " << p);
    CHECK((s.by_partition[p].owner == "a0" || s.by_partition[p].owner == "a1"));
    CHECK(s.by_partition[p].epoch >= 1);
    ++owned[s.by_partition[p].owner];
  }
  CHECK(owned["a0"] == s.members[0].partitions);
  CHECK(owned["a1"] == s.members[1].partitions);
  const absl::Time end = absl::Now() + kDeadline;
  for (Agent* a : {a0.get(), a1.get()}) {
    // The agent's own view catches up with the assignment read.
    for (;;) {
      absl::StatusOr<AgentStats> st = a->Stats();
      HQ_REQUIRE_OK(st.status());
      std::map<uint32_t, uint64_t> epochs;
      for (const auto& p : st->owned) epochs[p.partition] = p.epoch;
      std::map<uint32_t, uint64_t> want;
      const std::string id = a == a0.get() ? "a0" : "a1";
      for (uint32_t p = 0; p < kPartitions; ++p) {
        if (s.by_partition[p].owner == id) want[p] = s.by_partition[p].epoch;
      }
      if (epochs == want && st->coordinator == (id == s.coordinator)) break;
      REQUIRE(absl::Now() < end);
      absl::SleepFor(absl::Milliseconds(50));
    }
  }

  // Without NATS: no hand-off figures, the same owners.
  FleetStatus z = f.Read(/*nats=*/false);
  CHECK(!z.handoff);
  CHECK(z.lag == 0);
  CHECK(z.by_partition.size() == kPartitions);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    CHECK(z.by_partition[p].owner == s.by_partition[p].owner);
  }

  // URLs put are stored by their owners: the lag returns to 0, and the
  // stream holds them.
  std::vector<Url> urls = Urls(20, 5, "x");
  HQ_REQUIRE_OK(a0->PutBatch(urls));
  s = f.WaitFor("lag 0 after the put", [&](const FleetStatus& s) {
    return s.lag == 0 && s.stream_messages >= urls.size();
  });
  CHECK(s.handoff);
  CHECK(s.stream_bytes > 0);
  for (const FleetStatus::Partition& p : s.by_partition) CHECK(p.lag == 0);
}

TEST_CASE(
    "fleet status: a partition's lag counts what was published to it while "
    "its owner is gone") {
  Fleet f{.name = "status_lag"};
  auto a0 = f.Open("a0");
  FleetStatus s = f.WaitFor("one member owning every partition",
                            [](const FleetStatus& s) { return Settled(s, 1); });
  CHECK(s.members[0].partitions == kPartitions);
  // Stored: the agent's ingest acks them, so they are no lag.
  std::vector<Url> first = Urls(10, 3, "first");
  HQ_REQUIRE_OK(a0->PutBatch(first));
  s = f.WaitFor("the first URLs stored", [&](const FleetStatus& s) {
    return s.lag == 0 && s.stream_messages >= first.size();
  });
  HQ_REQUIRE_OK(a0->Leave());
  a0.reset();
  // The only agent left: nothing stores what is published now.
  absl::StatusOr<std::unique_ptr<Handoff>> h =
      Handoff::Connect({.urls = SplitNatsUrls(Cluster().nats_urls()),
                        .fleet = f.name,
                        .partitions = kPartitions,
                        .replicas = 1});
  HQ_REQUIRE_OK(h.status());
  std::vector<Url> later = Urls(10, 4, "later");
  std::vector<Outgoing> out;
  std::vector<uint64_t> want(kPartitions, 0);
  for (const Url& u : later) {
    const uint32_t p = PartitionOfUrl(u.url);
    out.push_back({.partition = p, .url = u.url});
    ++want[p];
  }
  HQ_REQUIRE_OK((*h)->Publish(out));
  s = f.Read();
  REQUIRE(s.members.size() == 1);
  CHECK(s.members[0].left);
  CHECK(!s.members[0].live);
  CHECK(s.members[0].pid == 0);
  CHECK(s.coordinator.empty());
  CHECK(s.lag == later.size());
  for (uint32_t p = 0; p < kPartitions; ++p) {
    INFO("partition " << p);
    CHECK(s.by_partition[p].lag == want[p]);
  }

  // A partition whose current epoch has no consumer (its new owner has not
  // opened one yet): every message of its subject is lag. A consumer of a
  // later epoch, opened here, deletes the owner's.
  const uint32_t p = PartitionOfUrl(later[0].url);
  uint64_t all = 0;
  for (const Url& u : first) all += PartitionOfUrl(u.url) == p;
  all += want[p];
  absl::StatusOr<std::unique_ptr<PartitionFeed>> feed =
      (*h)->OpenPartition(p, s.by_partition[p].epoch + 1);
  HQ_REQUIRE_OK(feed.status());
  s = f.Read();
  CHECK(s.by_partition[p].lag == all);
  CHECK(s.lag == later.size() - want[p] + all);
}

TEST_CASE("fleet status: errors") {
  const std::string zk = Cluster().zookeeper_connect();
  SECTION("a fleet that does not exist: NotFound, and nothing written") {
    absl::StatusOr<FleetStatus> s =
        ReadFleetStatus({.zookeeper = zk,
                         .fleet = "status_nosuch",
                         .nats = Cluster().nats_urls()});
    CHECK(absl::IsNotFound(s.status()));
    absl::StatusOr<std::unique_ptr<ZkSession>> session = ZkSession::Connect(
        zk, absl::Seconds(10), absl::Seconds(30), ZkSession::EventFn());
    HQ_REQUIRE_OK(session.status());
    absl::StatusOr<bool> exists =
        (*session)->Exists("/hq-fleet/status_nosuch", nullptr);
    HQ_REQUIRE_OK(exists.status());
    CHECK(!*exists);
  }
  SECTION("no server at the address: Unavailable") {
    const absl::Time start = absl::Now();
    absl::StatusOr<FleetStatus> s = ReadFleetStatus(
        {.zookeeper = "127.0.0.1:1", .timeout = absl::Seconds(1)});
    CHECK(absl::IsUnavailable(s.status()));
    INFO("took " << absl::Now() - start);
  }
  SECTION("bad options: InvalidArgument") {
    CHECK(absl::IsInvalidArgument(ReadFleetStatus({}).status()));
    CHECK(absl::IsInvalidArgument(
        ReadFleetStatus({.zookeeper = zk, .fleet = "a/b"}).status()));
    CHECK(absl::IsInvalidArgument(
        ReadFleetStatus({.zookeeper = zk, .fleet = ""}).status()));
    CHECK(absl::IsInvalidArgument(
        ReadFleetStatus({.zookeeper = zk, .nats = " , "}).status()));
    CHECK(absl::IsInvalidArgument(
        ReadFleetStatus({.zookeeper = zk, .timeout = absl::ZeroDuration()})
            .status()));
  }
  SECTION("records that do not parse: DataLoss; no stream: NotFound") {
    absl::StatusOr<std::unique_ptr<ZkSession>> session = ZkSession::Connect(
        zk, absl::Seconds(10), absl::Seconds(30), ZkSession::EventFn());
    HQ_REQUIRE_OK(session.status());
    ZkSession& z = **session;
    HQ_REQUIRE_OK(z.EnsurePath("/hq-fleet/status_bad"));
    HQ_REQUIRE_OK(
        z.Create("/hq-fleet/status_bad/config", "partitions=4\n", 0).status());
    // No assignment yet: every partition unowned.
    absl::StatusOr<FleetStatus> s =
        ReadFleetStatus({.zookeeper = zk, .fleet = "status_bad"});
    HQ_REQUIRE_OK(s.status());
    CHECK(s->partitions == 4);
    CHECK(s->unowned == 4);
    CHECK(s->members.empty());
    // With NATS: the fleet's stream does not exist, and is not made.
    for (int i = 0; i < 2; ++i) {
      CHECK(absl::IsNotFound(ReadFleetStatus({.zookeeper = zk,
                                              .fleet = "status_bad",
                                              .nats = Cluster().nats_urls()})
                                 .status()));
    }
    HQ_REQUIRE_OK(
        z.Create("/hq-fleet/status_bad/assignment", "garbage", 0).status());
    CHECK(absl::IsDataLoss(
        ReadFleetStatus({.zookeeper = zk, .fleet = "status_bad"}).status()));
    // A well-formed assignment of another partition count.
    const Assignment three = EmptyAssignment(3);
    HQ_REQUIRE_OK(z.CheckAndSet("/hq-fleet/status_bad",
                                "/hq-fleet/status_bad/assignment",
                                EncodeAssignment(three), 0));
    CHECK(absl::IsDataLoss(
        ReadFleetStatus({.zookeeper = zk, .fleet = "status_bad"}).status()));
    HQ_REQUIRE_OK(z.Create("/hq-fleet/status_bad2", "", 0).status());
    HQ_REQUIRE_OK(
        z.Create("/hq-fleet/status_bad2/config", "partitions=x\n", 0).status());
    CHECK(absl::IsDataLoss(
        ReadFleetStatus({.zookeeper = zk, .fleet = "status_bad2"}).status()));
  }
}

}  // namespace
}  // namespace hq::fleet
