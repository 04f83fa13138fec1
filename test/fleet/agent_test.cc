// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq::fleet::Agent in one process, against a real 3-node ZooKeeper
// ensemble and a 3-node NATS JetStream cluster on 127.0.0.1: routing by
// site, dedup, restart within the grace period, rebuild after an agent is
// gone, Leave. The multi-process faults are fleet_crash_test's.

#include <fstream>
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
#include "lib/fleet/handoff.h"
#include "test/fleet/cluster.h"
#include "test/test_util.h"

namespace hq::fleet {
namespace {

using test::FleetCluster;

constexpr absl::Duration kDeadline = absl::Seconds(120);

FleetCluster& Cluster() {
  absl::Status why;
  FleetCluster* cluster = test::SharedCluster({}, &why);
  if (cluster == nullptr) FAIL("cannot start the cluster: " << why);
  return *cluster;
}

struct Fleet {
  std::string name;
  test::TempDir dir;
  absl::Duration grace = absl::Seconds(2);

  AgentOptions Options(const std::string& id) const {
    AgentOptions o;
    o.agent_id = id;
    o.fleet = name;
    o.db_path = dir.path() + "/" + id;
    o.zookeeper = Cluster().zookeeper_connect();
    o.nats = Cluster().nats_urls();
    o.partitions = 16;
    o.session_timeout = absl::Seconds(4);
    o.grace = grace;
    o.ownership_lease = absl::Milliseconds(1500);
    o.task_lease = absl::Seconds(2);
    return o;
  }
  std::unique_ptr<Agent> Open(const std::string& id) const {
    absl::StatusOr<std::unique_ptr<Agent>> a = Agent::Open(Options(id));
    HQ_REQUIRE_OK(a.status());
    return std::move(*a);
  }
};

std::vector<Url> Urls(int sites, int per_site, const std::string& tag = "") {
  std::vector<Url> out;
  for (int s = 0; s < sites; ++s) {
    for (int i = 0; i < per_site; ++i) {
      out.push_back(
          {.url = absl::StrCat("http://www.site", s, ".test/", tag, i),
           .payload = absl::StrCat("p", i)});
    }
  }
  return out;
}

std::set<uint32_t> Serving(Agent& a) {
  std::set<uint32_t> out;
  absl::StatusOr<AgentStats> s = a.Stats();
  HQ_REQUIRE_OK(s.status());
  for (const auto& p : s->owned) {
    if (p.serving) out.insert(p.partition);
  }
  return out;
}

// Claims from every agent until `want` distinct URLs were handed out or the
// deadline; completes each task at once. Returns URL -> claims, and checks
// each task came from the agent serving its site's partition.
std::map<std::string, int> Drain(const std::vector<Agent*>& agents, size_t want,
                                 uint32_t partitions) {
  std::map<std::string, int> claimed;
  const absl::Time end = absl::Now() + kDeadline;
  while (claimed.size() < want) {
    if (absl::Now() > end) {
      FAIL("claimed " << claimed.size() << " of " << want << " within "
                      << kDeadline);
    }
    bool any = false;
    for (Agent* a : agents) {
      // Each task was checked as served during the call, so its fetch may
      // start until a time after the call began.
      const absl::Time called = absl::Now();
      absl::StatusOr<std::vector<FleetTask>> tasks =
          a->Claim({.max = 50, .wait = absl::Milliseconds(20)});
      HQ_REQUIRE_OK(tasks.status());
      for (const FleetTask& t : *tasks) {
        ++claimed[t.task.key];
        absl::StatusOr<std::string> site = SiteOf(t.task.key);
        HQ_REQUIRE_OK(site.status());
        CHECK(t.task.topic == *site);
        CHECK(t.partition == PartitionOf(*site, partitions));
        CHECK(t.valid_until > called);
      }
      HQ_REQUIRE_OK(a->Complete(*tasks));
      any = any || !tasks->empty();
    }
    if (!any) absl::SleepFor(absl::Milliseconds(20));
  }
  return claimed;
}

TEST_CASE("agent: every URL is handed out once, by its site's owner") {
  Fleet f{.name = "route"};
  auto a0 = f.Open("a0");
  auto a1 = f.Open("a1");
  auto a2 = f.Open("a2");
  std::vector<Url> urls = Urls(30, 10);
  HQ_REQUIRE_OK(a1->PutBatch(urls));
  HQ_REQUIRE_OK(a1->PutBatch(urls));  // Stored once.
  std::map<std::string, int> claimed =
      Drain({a0.get(), a1.get(), a2.get()}, urls.size(), 16);
  CHECK(claimed.size() == urls.size());
  for (const auto& [url, n] : claimed) {
    INFO(url);
    CHECK(n == 1);
  }
  // Nothing more to hand out, anywhere.
  for (Agent* a : {a0.get(), a1.get(), a2.get()}) {
    auto more = a->Claim({.max = 10, .wait = absl::Milliseconds(200)});
    HQ_REQUIRE_OK(more.status());
    CHECK(more->empty());
  }
  // Each partition is served by exactly one agent.
  std::set<uint32_t> all;
  size_t total = 0;
  for (Agent* a : {a0.get(), a1.get(), a2.get()}) {
    std::set<uint32_t> s = Serving(*a);
    total += s.size();
    all.insert(s.begin(), s.end());
  }
  CHECK(all.size() == total);
}

TEST_CASE("agent: a restart within the grace period resumes from its Db") {
  Fleet f{.name = "resume", .grace = absl::Seconds(60)};
  auto a0 = f.Open("a0");
  std::vector<Url> urls = Urls(8, 5);
  HQ_REQUIRE_OK(a0->PutBatch(urls));
  // Claim a few and keep them in flight across the restart.
  std::set<std::string> in_flight;
  const absl::Time end = absl::Now() + kDeadline;
  while (in_flight.size() < 5 && absl::Now() < end) {
    auto t = a0->Claim({.max = 5, .wait = absl::Milliseconds(50)});
    HQ_REQUIRE_OK(t.status());
    for (const FleetTask& x : *t) in_flight.insert(x.task.key);
  }
  REQUIRE(in_flight.size() >= 5);
  a0.reset();
  a0 = f.Open("a0");
  std::map<std::string, int> claimed = Drain({a0.get()}, urls.size(), 16);
  CHECK(claimed.size() == urls.size());
  for (const std::string& url : in_flight) CHECK(claimed.count(url) == 1);
}

TEST_CASE(
    "agent: a partition of an agent gone for good is rebuilt "
    "elsewhere, less what it completed") {
  Fleet f{.name = "rebuild", .grace = absl::Seconds(2)};
  auto a0 = f.Open("a0");
  auto a1 = f.Open("a1");
  std::vector<Url> urls = Urls(20, 5);
  HQ_REQUIRE_OK(a0->PutBatch(urls));
  // a1 completes some of its share, and the completions are published.
  std::set<std::string> done_by_a1;
  const absl::Time end = absl::Now() + kDeadline;
  while (done_by_a1.size() < 20 && absl::Now() < end) {
    auto t = a1->Claim({.max = 5, .wait = absl::Milliseconds(50)});
    HQ_REQUIRE_OK(t.status());
    HQ_REQUIRE_OK(a1->Complete(*t));
    for (const FleetTask& x : *t) done_by_a1.insert(x.task.key);
  }
  REQUIRE(done_by_a1.size() >= 20);
  while (true) {
    auto s = a1->Stats();
    HQ_REQUIRE_OK(s.status());
    if (s->completions_published >= done_by_a1.size()) break;
    REQUIRE(absl::Now() < end);
    absl::SleepFor(absl::Milliseconds(20));
  }
  a1.reset();  // Gone; its grace period is 2 s.
  std::map<std::string, int> claimed =
      Drain({a0.get()}, urls.size() - done_by_a1.size(), 16);
  for (const std::string& url : done_by_a1) {
    INFO(url);
    CHECK(claimed.count(url) == 0);
  }
  CHECK(claimed.size() + done_by_a1.size() == urls.size());
}

TEST_CASE("agent: Leave hands the partitions over at once") {
  Fleet f{.name = "leave", .grace = absl::Hours(1)};
  auto a0 = f.Open("a0");
  auto a1 = f.Open("a1");
  std::vector<Url> urls = Urls(20, 3);
  HQ_REQUIRE_OK(a1->PutBatch(urls));
  HQ_REQUIRE_OK(a1->Leave());
  CHECK(a1->Claim({.max = 1}).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  std::map<std::string, int> claimed = Drain({a0.get()}, urls.size(), 16);
  CHECK(claimed.size() == urls.size());
}

// Every line "fetched <url>" of an agent_child's log, in order.
std::vector<std::string> Fetched(const std::string& path) {
  std::vector<std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("fetched ", 0) == 0) out.push_back(line.substr(8));
  }
  return out;
}

TEST_CASE(
    "agent: killed with SIGKILL and restarted within the grace "
    "period, an agent loses nothing and fetches again only what was "
    "in flight") {
  const std::string child = test::PathFromEnv("HQ_AGENT_CHILD");
  Fleet f{.name = "kill9"};
  const std::string log = f.dir.path() + "/fetched.log";
  const std::vector<std::string> args = {log,
                                         Cluster().zookeeper_connect(),
                                         Cluster().nats_urls(),
                                         f.name,
                                         "k0",
                                         f.dir.path() + "/k0",
                                         "16"};
  auto agent = std::make_unique<test::Child>(child, args);

  // The URLs go in through the hand-off, as another agent's would.
  HandoffOptions h;
  for (absl::string_view u : absl::StrSplit(Cluster().nats_urls(), ',')) {
    h.urls.emplace_back(u);
  }
  h.fleet = f.name;
  h.partitions = 16;
  auto handoff = Handoff::Connect(h);
  HQ_REQUIRE_OK(handoff.status());
  std::vector<Url> urls = Urls(20, 10);
  std::vector<Outgoing> out;
  for (const Url& u : urls) {
    out.push_back({.partition = PartitionOf(*SiteOf(u.url), 16), .url = u.url});
  }
  HQ_REQUIRE_OK((*handoff)->Publish(out));

  auto wait_for = [&](size_t n, std::string_view what) {
    const absl::Time end = absl::Now() + kDeadline;
    for (;;) {
      const std::vector<std::string> fetched = Fetched(log);
      if (std::set<std::string>(fetched.begin(), fetched.end()).size() >= n) {
        return;
      }
      if (absl::Now() > end) FAIL("not within " << kDeadline << ": " << what);
      absl::SleepFor(absl::Milliseconds(20));
    }
  };
  wait_for(60, "60 URLs fetched before the kill");
  agent->Kill();
  CHECK(agent->Wait() != 0);
  const std::vector<std::string> before = Fetched(log);
  agent = std::make_unique<test::Child>(child, args);
  wait_for(urls.size(), "every URL fetched after the restart");
  CHECK(agent->Stop(SIGTERM) == 0);

  std::map<std::string, int> times;
  for (const std::string& url : Fetched(log)) ++times[url];
  CHECK(times.size() == urls.size());
  const std::set<std::string> early(before.begin(), before.end());
  int twice = 0;
  for (const auto& [url, n] : times) {
    INFO(url);
    CHECK(n <= 2);
    if (n == 2) {
      ++twice;
      CHECK(early.count(url) == 1);  // In flight at the kill.
    }
  }
  // At most one claim batch (4 tasks) was in flight at the kill.
  CHECK(twice <= 4);
}

TEST_CASE("agent: bad options and bad URLs") {
  Fleet f{.name = "bad"};
  AgentOptions o = f.Options("x");
  o.agent_id = "has space";
  CHECK(Agent::Open(o).status().code() == absl::StatusCode::kInvalidArgument);
  o = f.Options("x");
  o.ownership_lease = o.session_timeout;
  CHECK(Agent::Open(o).status().code() == absl::StatusCode::kInvalidArgument);
  o = f.Options("x");
  o.partitions = 0;
  CHECK(Agent::Open(o).status().code() == absl::StatusCode::kInvalidArgument);
  auto a = f.Open("x");
  CHECK(a->Put({.url = "no-host"}).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(a->Put({.url = "http://x.test/" + std::string(2000, 'a')}).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(a->Claim({.max = 1, .topics = {"t"}}).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace hq::fleet
