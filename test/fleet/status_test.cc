// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq::fleet::ReadFleetStatus and `hq fleet status` ($HQ_TOOL, run as a
// process) against a fleet of Agents in this process, on one ZooKeeper
// node and one nats-server started on 127.0.0.1: members, owners, epochs,
// the coordinator, hand-off lag, and the errors (unknown fleet, dead
// address, bad options, a damaged record).

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
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
  absl::Duration grace = absl::Seconds(2);
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
    o.grace = grace;
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

// The JSON document `hq fleet status --json` prints for `s`, written out
// here independently of the tool.
std::string ExpectedJson(const FleetStatus& s) {
  auto str = [](const std::string& x) {
    return x.empty() ? std::string("null") : absl::StrCat("\"", x, "\"");
  };
  std::string j =
      absl::StrCat("{\"fleet\":\"", s.fleet, "\",\"partitions\":", s.partitions,
                   ",\"coordinator\":", str(s.coordinator),
                   ",\"unowned\":", s.unowned, ",\"members\":[");
  for (size_t i = 0; i < s.members.size(); ++i) {
    const FleetStatus::Member& m = s.members[i];
    absl::StrAppend(&j, i ? "," : "", "{\"agent_id\":\"", m.agent_id,
                    "\",\"live\":", m.live ? "true" : "false",
                    ",\"left\":", m.left ? "true" : "false",
                    ",\"coordinator\":", m.coordinator ? "true" : "false",
                    ",\"pid\":", m.pid, ",\"host\":\"", m.host,
                    "\",\"partitions\":", m.partitions, "}");
  }
  absl::StrAppend(&j, "],\"by_partition\":[");
  for (size_t p = 0; p < s.by_partition.size(); ++p) {
    const FleetStatus::Partition& x = s.by_partition[p];
    absl::StrAppend(&j, p ? "," : "", "{\"partition\":", p,
                    ",\"owner\":", str(x.owner), ",\"epoch\":", x.epoch,
                    ",\"lag\":", s.handoff ? absl::StrCat(x.lag) : "null", "}");
  }
  absl::StrAppend(&j, "],\"handoff\":");
  if (s.handoff) {
    absl::StrAppend(&j, "{\"lag\":", s.lag,
                    ",\"stream_messages\":", s.stream_messages,
                    ",\"stream_bytes\":", s.stream_bytes, "}");
  } else {
    absl::StrAppend(&j, "null");
  }
  return j + "}\n";
}

// ------------------------------------------------------- the tool, run

struct ToolRun {
  int code = -1;
  std::string out, err;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `hq` ($HQ_TOOL) with `args` and waits (test_util's deadline: it is
// killed and the test fails if it hangs) for its exit.
ToolRun RunTool(const std::vector<std::string>& args) {
  const std::string tool = test::PathFromEnv("HQ_TOOL");
  test::TempDir io;
  const std::string out_path = io.Sub("out"), err_path = io.Sub("err");
  std::vector<char*> argv{const_cast<char*>(tool.c_str())};
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(out, 1);
    dup2(err, 2);
    execv(argv[0], argv.data());
    _exit(127);
  }
  const int status = test::WaitForExit(pid, "hq fleet status");
  ToolRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = Slurp(out_path);
  r.err = Slurp(err_path);
  return r;
}

std::vector<std::string> Words(const std::string& line) {
  return absl::StrSplit(line, ' ', absl::SkipEmpty());
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
    "fleet status: an agent gone within its grace period still owns its "
    "partitions") {
  Fleet f{.name = "status_gone", .grace = absl::Minutes(10)};
  auto a0 = f.Open("a0");
  auto a1 = f.Open("a1");
  f.WaitFor("two members sharing the partitions",
            [](const FleetStatus& s) { return Settled(s, 2); });
  a1.reset();  // Closed without Leave: its session ends, its grace starts.
  FleetStatus s = f.WaitFor("a1 not live", [](const FleetStatus& s) {
    return s.members.size() == 2 && !s.members[1].live;
  });
  const FleetStatus::Member& gone = s.members[1];
  CHECK(gone.agent_id == "a1");
  CHECK(!gone.left);
  CHECK(!gone.coordinator);
  CHECK(gone.pid == 0);
  CHECK(gone.host.empty());
  CHECK(gone.partitions == kPartitions / 2);
  CHECK(s.members[0].live);
  CHECK(s.unowned == 0);
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
    // NATS that does not answer: Unavailable.
    CHECK(absl::IsUnavailable(ReadFleetStatus({.zookeeper = zk,
                                               .fleet = "status_bad",
                                               .nats = "nats://127.0.0.1:1",
                                               .timeout = absl::Seconds(1)})
                                  .status()));
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

TEST_CASE("hq fleet status: the tool prints what ReadFleetStatus reads") {
  Fleet f{.name = "status_tool"};
  auto a0 = f.Open("a0");
  auto a1 = f.Open("a1");
  HQ_REQUIRE_OK(a1->PutBatch(Urls(10, 2, "t")));
  f.WaitFor("two members, lag 0",
            [](const FleetStatus& s) { return Settled(s, 2); });
  const std::string zk_flag = "--zookeeper=" + Cluster().zookeeper_connect();
  const std::string nats_flag = "--nats=" + Cluster().nats_urls();
  const std::string fleet_flag = "--fleet=" + f.name;

  // Reads before and after the tool's: when they agree, the tool saw the
  // same state (the fleet is idle; a late rebalance makes it try again).
  auto stable_run = [&](const std::vector<std::string>& args, bool nats,
                        FleetStatus* seen) {
    const absl::Time end = absl::Now() + kDeadline;
    for (;;) {
      const FleetStatus before = f.Read(nats);
      ToolRun r = RunTool(args);
      const FleetStatus after = f.Read(nats);
      if (ExpectedJson(before) == ExpectedJson(after)) {
        *seen = before;
        return r;
      }
      REQUIRE(absl::Now() < end);
    }
  };

  FleetStatus s;
  {  // --json: the whole status.
    ToolRun r = stable_run(
        {"fleet", "status", zk_flag, fleet_flag, nats_flag, "--json"}, true,
        &s);
    INFO(r.err);
    CHECK(r.code == 0);
    CHECK(r.out == ExpectedJson(s));
    r = stable_run({"fleet", "status", zk_flag, fleet_flag, "--json"}, false,
                   &s);
    CHECK(r.code == 0);
    CHECK(r.out == ExpectedJson(s));
    CHECK(r.out.find("\"handoff\":null") != std::string::npos);
  }
  {  // Text, with --partitions.
    ToolRun r = stable_run(
        {"fleet", "status", zk_flag, fleet_flag, nats_flag, "--partitions=all"},
        true, &s);
    INFO(r.out << r.err);
    REQUIRE(r.code == 0);
    std::vector<std::string> lines = absl::StrSplit(r.out, '\n');
    std::map<std::string, std::string> fields;
    std::map<std::string, std::vector<std::string>> members;
    std::map<uint32_t, std::vector<std::string>> partitions;
    enum { kHead, kMemberRows, kPartitionRows } part = kHead;
    for (const std::string& line : lines) {
      if (line.empty()) continue;
      const std::vector<std::string> w = Words(line);
      if (w[0] == "AGENT") {
        part = kMemberRows;
      } else if (w[0] == "PARTITION") {
        part = kPartitionRows;
      } else if (part == kHead) {
        const size_t colon = line.find(": ");
        REQUIRE(colon != std::string::npos);
        fields[line.substr(0, colon)] = line.substr(colon + 2);
      } else if (part == kMemberRows) {
        members[w[0]] = w;
      } else {
        partitions[static_cast<uint32_t>(std::stoul(w[0]))] = w;
      }
    }
    CHECK(fields["fleet"] == f.name);
    CHECK(fields["partitions"] == std::to_string(kPartitions));
    CHECK(fields["unowned"] == std::to_string(s.unowned));
    CHECK(fields["coordinator"] == s.coordinator);
    CHECK(fields["lag"] == std::to_string(s.lag));
    CHECK(fields["stream"].starts_with(
        absl::StrCat(s.stream_messages, " messages, ")));
    REQUIRE(members.size() == s.members.size());
    for (const FleetStatus::Member& m : s.members) {
      INFO(m.agent_id);
      const std::vector<std::string>& w = members[m.agent_id];
      // AGENT STATE PARTITIONS [*] PID HOST
      REQUIRE(w.size() == (m.coordinator ? 6u : 5u));
      CHECK(w[1] == "live");
      CHECK(w[2] == std::to_string(m.partitions));
      if (m.coordinator) CHECK(w[3] == "*");
      CHECK(w[w.size() - 2] == std::to_string(m.pid));
      CHECK(w.back() == m.host);
    }
    REQUIRE(partitions.size() == kPartitions);
    for (uint32_t p = 0; p < kPartitions; ++p) {
      INFO("partition " << p);
      const std::vector<std::string>& w = partitions[p];
      REQUIRE(w.size() == 4);
      CHECK(w[1] == s.by_partition[p].owner);
      CHECK(w[2] == std::to_string(s.by_partition[p].epoch));
      CHECK(w[3] == std::to_string(s.by_partition[p].lag));
    }
  }
  {  // Errors and exit codes.
    ToolRun r =
        RunTool({"fleet", "status", zk_flag, "--fleet=status_none", "--json"});
    CHECK(r.code == 1);
    CHECK(r.out.find("\"code\":\"NOT_FOUND\"") != std::string::npos);
    CHECK(r.err.find("no fleet \"status_none\"") != std::string::npos);
    r = RunTool({"fleet", "status", "--zookeeper=127.0.0.1:1", "--timeout=1s",
                 "--json"});
    CHECK(r.code == 1);
    CHECK(r.out.find("\"code\":\"UNAVAILABLE\"") != std::string::npos);
    r = RunTool({"fleet", "status"});  // No --zookeeper.
    CHECK(r.code == 2);
    r = RunTool({"fleet", "stats", zk_flag});
    CHECK(r.code == 2);
    r = RunTool({"fleet", "status", zk_flag, fleet_flag, "--partitions=99"});
    CHECK(r.code == 2);
    CHECK(r.err.find("partitions 0..15") != std::string::npos);
    r = RunTool({"fleet", "status", zk_flag, "--limit=3"});
    CHECK(r.code == 2);
  }
}

}  // namespace
}  // namespace hq::fleet
