// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The fleet under faults, end to end: examples/fleet_crawler's agents run
// as processes against a 3-node ZooKeeper ensemble and a 3-node NATS
// JetStream cluster on 127.0.0.1, a fault strikes mid-crawl, and the
// crawler's own checks (examples/fleet_crawl_log.h) read every agent's log
// at the end: nothing lost, no site fetched by two agents at once, no
// pacing violation across agents, no agent serving a partition it lost.
// Each case prints its row of the fault table (doc/fleet.md).
//
// The faults: an agent killed (SIGKILL) and restarted within the grace
// period; an agent killed for good; an agent stopped (SIGSTOP) past its
// session and grace, then continued (a zombie); one ZooKeeper node and one
// nats-server killed and restarted; every ZooKeeper node down past the
// sessions; an agent joining mid-crawl.

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "examples/synthetic_web.h"
#include "lib/fleet/assignment.h"
#include "lib/fleet/clients.h"
#include "lib/fleet/handoff.h"
#include "lib/fleet/records.h"
#include "lib/fleet/zk.h"
#include "lib/util/strings.h"
#include "test/fleet/cluster.h"
#include "test/test_util.h"

namespace hq::fleet {
namespace {

using test::FleetCluster;

constexpr absl::Duration kDeadline = absl::Seconds(180);
constexpr absl::Duration kSession = absl::Seconds(4);
constexpr absl::Duration kLease = absl::Seconds(1);
constexpr absl::Duration kGrace = absl::Seconds(4);
constexpr int kWorkers = 4;
constexpr uint32_t kPartitions = 32;

FleetCluster& Cluster() {
  absl::Status why;
  FleetCluster* cluster = test::SharedCluster({}, &why);
  if (cluster == nullptr) FAIL("cannot start the cluster: " << why);
  return *cluster;
}

std::string CrawlerPath() {
  const char* path = std::getenv("HQ_FLEET_CRAWLER");
  if (path == nullptr)
    FAIL("HQ_FLEET_CRAWLER is not set (test/fleet/meson.build)");
  return path;
}

using Report = std::map<std::string, int64_t>;

// Runs `fleet_crawler MODE` with `flags` (and `extra`, shell words);
// returns its output (stderr too if `with_stderr`) and *status, its wait
// status.
std::string RunCrawler(const std::string& mode,
                       const std::vector<std::string>& flags, bool with_stderr,
                       int* status) {
  std::string cmd = CrawlerPath() + " " + mode;
  for (const std::string& f : flags) cmd += " '" + f + "'";
  if (with_stderr) cmd += " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  *status = pclose(p);
  return text;
}

// A crawl by agent processes of examples/fleet_crawler; every agent still
// running is killed and reaped with it.
class Crawl {
 public:
  struct Shape {
    int pages = 2000;
    int sites = 32;
    int workers = kWorkers;
    std::string site_interval = "20ms";
  };
  Crawl(std::string name, int pages) : Crawl(std::move(name), Shape{pages}) {}
  Crawl(std::string name, const Shape& shape)
      : name_(std::move(name)), shape_(shape) {}
  ~Crawl() {
    for (auto& [id, pid] : agents_) {
      if (pid > 0) {
        kill(pid, SIGKILL);
        waitpid(pid, nullptr, 0);
      }
    }
  }

  std::vector<std::string> Flags() const {
    return {"--dir=" + dir_.path(),
            "--zookeeper=" + Cluster().zookeeper_connect(),
            "--nats=" + Cluster().nats_urls(),
            "--fleet=" + name_,
            absl::StrCat("--pages=", shape_.pages),
            absl::StrCat("--sites=", shape_.sites),
            absl::StrCat("--partitions=", kPartitions),
            "--replicas=3",
            absl::StrCat("--workers=", shape_.workers),
            "--site_interval=" + shape_.site_interval,
            "--task_lease=2s",
            "--session_timeout=" + absl::FormatDuration(kSession),
            "--ownership_lease=" + absl::FormatDuration(kLease),
            "--grace=" + absl::FormatDuration(kGrace)};
  }

  void Start(const std::string& id) {
    std::vector<std::string> args = {CrawlerPath(), "agent", "--id=" + id};
    for (std::string& f : Flags()) args.push_back(std::move(f));
    const std::string out = dir_.Sub(id + ".out");
    const pid_t parent = getpid();
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(2);
      // dup2, not freopen: freopen would flush the parent's unwritten
      // stdout buffer a second time.
      const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(2);
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(2);
    }
    agents_[id] = pid;
  }

  void Signal(const std::string& id, int sig) {
    REQUIRE(agents_[id] > 0);
    REQUIRE(kill(agents_[id], sig) == 0);
    if (sig == SIGKILL) {
      waitpid(agents_[id], nullptr, 0);
      agents_[id] = -1;
    }
  }

  // The fleet's assignment now (NotFound before the first agent made it).
  absl::StatusOr<Assignment> ReadAssignment() {
    if (zk_ == nullptr) {
      auto zk = ZkSession::Connect(Cluster().zookeeper_connect(),
                                   absl::Seconds(10), absl::Seconds(30), [] {});
      if (!zk.ok()) return zk.status();
      zk_ = std::move(*zk);
    }
    auto node = zk_->Get("/hq-fleet/" + name_ + "/assignment", false);
    if (!node.ok()) return node.status();
    return DecodeAssignment(node->data);
  }

  // Waits until `agents` agents share every partition.
  void WaitBalanced(size_t agents) {
    const absl::Time end = absl::Now() + kDeadline;
    for (;;) {
      absl::StatusOr<Assignment> a = ReadAssignment();
      if (a.ok()) {
        std::map<std::string, int> owned;
        for (const std::string& o : a->owners) ++owned[o];
        if (owned.size() == agents && !owned.count("")) return;
      } else if (!absl::IsNotFound(a.status())) {
        zk_.reset();  // Its servers may have been restarted.
      }
      REQUIRE(absl::Now() < end);
      absl::SleepFor(absl::Milliseconds(100));
    }
  }

  // The first hand-out logged by an agent other than `except`, of one of
  // `partitions`, after `after`; InfiniteFuture if none.
  absl::Time FirstHandout(const std::set<uint32_t>& partitions,
                          absl::Time after, const std::string& except) const {
    absl::Time first = absl::InfiniteFuture();
    for (const auto& [id, pid] : agents_) {
      if (id == except) continue;
      std::ifstream in(dir_.Sub(id + ".log"));
      std::string line;
      while (std::getline(in, line)) {
        std::istringstream f(line);
        std::string kind;
        int64_t page, attempt, epoch, handout;
        uint32_t partition;
        if (!(f >> kind >> page >> attempt >> partition >> epoch >> handout) ||
            kind != "F" || !partitions.count(partition)) {
          continue;
        }
        const absl::Time t = absl::FromUnixMicros(handout);
        if (t > after) first = std::min(first, t);
      }
    }
    return first;
  }

  // The fleet's streams, as a producer or reader outside the fleet sees
  // them.
  std::unique_ptr<Handoff> ConnectHandoff() const {
    HandoffOptions o;
    o.urls = SplitNatsUrls(Cluster().nats_urls());
    o.fleet = name_;
    o.partitions = kPartitions;
    auto h = Handoff::Connect(o);
    HQ_REQUIRE_OK(h.status());
    return std::move(*h);
  }

  // Puts page 0 as a producer outside the fleet does: straight to its
  // partition's stream.
  void Seed() {
    std::unique_ptr<Handoff> h = ConnectHandoff();
    const std::string url = "https://site00.example/page/0";
    auto site = SiteOf(url);
    HQ_REQUIRE_OK(site.status());
    const Outgoing seed{.partition = PartitionOf(*site, kPartitions),
                        .url = url,
                        .priority = 2};
    PublishResult result;
    HQ_REQUIRE_OK(h->Publish({&seed, 1}, &result));
    REQUIRE(result.acknowledged == 1);
  }

  // Runs `fleet_crawler check` on the logs.
  Report Check(int* exit_code) {
    int status;
    const std::string text = RunCrawler("check", Flags(), false, &status);
    REQUIRE(WIFEXITED(status));
    *exit_code = WEXITSTATUS(status);
    Report r;
    for (absl::string_view line : absl::StrSplit(Av(text), '\n')) {
      std::vector<std::string> f =
          absl::StrSplit(line, ' ', absl::SkipWhitespace());
      if (f.size() == 2) r[f[0]] = std::stoll(f[1]);
    }
    INFO(text);
    last_check_ = text;
    REQUIRE(*exit_code != 2);
    REQUIRE(r.count("lost"));
    return r;
  }

  // Waits until a `fraction` of the reachable pages is done.
  void WaitProgress(double fraction) {
    const absl::Time end = absl::Now() + kDeadline;
    for (;;) {
      int rc;
      Report r = Check(&rc);
      if (r["completed"] + r["dead_lettered"] >= fraction * r["reachable"]) {
        return;
      }
      REQUIRE(absl::Now() < end);
      absl::SleepFor(absl::Milliseconds(200));
    }
  }

  // Waits until the crawl is finished, stops every agent (SIGTERM) and
  // returns the final checks.
  Report Finish() {
    const absl::Time end = absl::Now() + kDeadline;
    int rc;
    // Until every page is done (also when a check already failed: the
    // crawl goes on, and `lost` counts only what never got done).
    while (Check(&rc)["lost"] != 0 && absl::Now() < end) {
      absl::SleepFor(absl::Milliseconds(200));
    }
    for (auto& [id, pid] : agents_) {
      if (pid > 0) kill(pid, SIGCONT), kill(pid, SIGTERM);
    }
    for (auto& [id, pid] : agents_) {
      if (pid <= 0) continue;
      int status;
      waitpid(pid, &status, 0);
      pid = -1;
      INFO(id << " said: " << Output(id));
      CHECK((WIFEXITED(status) && WEXITSTATUS(status) == 0));
    }
    return Check(&rc);
  }

  // Writes agent `id`'s crawl log, as the crawler would have.
  void WriteLog(const std::string& id, const std::string& text) const {
    std::ofstream out(dir_.Sub(id + ".log"), std::ios::binary);
    out << text;
    REQUIRE(out.good());
  }

  std::string Output(const std::string& id) const {
    std::ifstream in(dir_.Sub(id + ".out"));
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  // The pages agent `id` logged as completed.
  std::vector<int> CompletedBy(const std::string& id) const {
    std::ifstream in(dir_.Sub(id + ".log"));
    std::vector<int> pages;
    std::string kind;
    int page;
    std::string rest;
    while (in >> kind >> page) {
      if (kind == "C") pages.push_back(page);
      std::getline(in, rest);
    }
    return pages;
  }

  // Of `pages`, those not published as completed in their partition's
  // stream (yet).
  std::vector<int> Unpublished(const std::vector<int>& pages) {
    std::unique_ptr<Handoff> h = ConnectHandoff();
    const hq_example::Web web(shape_.pages, shape_.sites);
    std::map<uint32_t, absl::flat_hash_set<uint64_t>> published;
    std::vector<int> out;
    for (int page : pages) {
      const std::string url = web.Url(page);
      auto site = SiteOf(url);
      HQ_REQUIRE_OK(site.status());
      const uint32_t p = PartitionOf(*site, kPartitions);
      if (!published.count(p)) {
        auto read = h->ReadCompletions(p);
        HQ_REQUIRE_OK(read.status());
        published[p] = std::move(*read);
      }
      if (!published[p].contains(UrlHash(url))) out.push_back(page);
    }
    return out;
  }

  const std::string& name() const { return name_; }
  // The output of the last `fleet_crawler check`.
  const std::string& last_check() const { return last_check_; }

 private:
  std::string name_;
  Shape shape_;
  std::string last_check_;
  test::TempDir dir_;
  std::unique_ptr<ZkSession> zk_;
  std::map<std::string, pid_t> agents_;
};

// The row of the fault table, and the checks every fault must pass.
void Verify(const std::string& fault, Report& r, const std::string& text) {
  std::printf(
      "fault table | %-34s | %5lld pages | lost %lld | fetched twice %lld "
      "(%lld extra) | two at once %lld | pacing violations %lld | stale "
      "epochs %lld\n",
      fault.c_str(), static_cast<long long>(r["reachable"]),
      static_cast<long long>(r["lost"]),
      static_cast<long long>(r["fetched_twice"]),
      static_cast<long long>(r["extra_fetches"]),
      static_cast<long long>(r["two_at_once"]),
      static_cast<long long>(r["pacing_violations"]),
      static_cast<long long>(r["stale_epochs"]));
  // The crawler's description of each violation, if any.
  for (absl::string_view line : absl::StrSplit(Av(text), '\n')) {
    if (absl::StartsWith(line, "violation ")) {
      std::printf("%.*s\n", static_cast<int>(line.size()), line.data());
    }
  }
  std::fflush(stdout);
  INFO(text);
  CHECK(r["reachable"] > 0);
  CHECK(r["lost"] == 0);
  CHECK(r["two_at_once"] == 0);
  CHECK(r["same_agent_overlap"] == 0);
  CHECK(r["pacing_violations"] == 0);
  CHECK(r["stale_epochs"] == 0);
  CHECK(r["misrouted"] == 0);
  CHECK(r["completed_failing"] == 0);
}

// Starts agents a0..a{n-1}, waits until they share the partitions, seeds.
void StartFleet(Crawl& crawl, int n) {
  for (int i = 0; i < n; ++i) crawl.Start(absl::StrCat("a", i));
  crawl.WaitBalanced(n);
  crawl.Seed();
}

TEST_CASE("a clean crawl by three agents") {
  Crawl crawl("clean", 2000);
  StartFleet(crawl, 3);
  Report r = crawl.Finish();
  Verify("none", r, crawl.last_check());
}

TEST_CASE("fleet_crawler run: the example as its README shows it") {
  Crawl crawl("run", 500);
  int status;
  const std::string text =
      RunCrawler("run --agents=2 --timeout=3m", crawl.Flags(), true, &status);
  INFO(text);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(text.find("crawl finished, checks passed") != std::string::npos);
  CHECK(text.find("lost                 0") != std::string::npos);
}

TEST_CASE("the crawl check: a page whose agent died in its Complete") {
  // Logs written by hand: every page but page 0 completed, and page 0's
  // lines as each case has them. A Complete that landed while its agent
  // died is not logged: c without C or X counts as completed, apart.
  struct Case {
    std::string page0;
    int64_t lost;
    int64_t unlogged;
  };
  for (const Case& c : {Case{"", 1, 0}, Case{"c 0\n", 0, 1},
                        Case{"c 0\nX 0\n", 1, 0}, Case{"c 0\nC 0\n", 0, 0}}) {
    Crawl crawl("check", 50);
    std::string log = c.page0;
    for (int page = 1; page < 50; ++page)
      absl::StrAppend(&log, "C ", page, "\n");
    crawl.WriteLog("a0", log);
    int rc;
    Report r = crawl.Check(&rc);
    INFO("page 0's lines: " << c.page0);
    CHECK(r["lost"] == c.lost);
    CHECK(r["completed_unlogged"] == c.unlogged);
  }
}

TEST_CASE("an agent killed and restarted within the grace period") {
  Crawl crawl("restart", 2000);
  StartFleet(crawl, 3);
  crawl.WaitProgress(0.25);
  crawl.Signal("a1", SIGKILL);
  absl::SleepFor(absl::Seconds(1));
  crawl.Start("a1");  // Its Db, its id: its partitions at the same epochs.
  Report r = crawl.Finish();
  Verify("agent killed, restarted in grace", r, crawl.last_check());
  // Only its fetches in flight at the kill come again, and pages whose
  // Complete came after their lease (a loaded machine) ran out.
  CHECK(r["extra_fetches"] <= kWorkers + r["complete_refused"]);
}

TEST_CASE("an agent killed for good") {
  Crawl crawl("killed", 2000);
  StartFleet(crawl, 3);
  crawl.WaitProgress(0.25);
  crawl.Signal("a1", SIGKILL);
  // The bound on pages fetched again: what a1 completed and had not
  // published as completed when it died, and its fetches in flight.
  const std::vector<int> unpublished =
      crawl.Unpublished(crawl.CompletedBy("a1"));
  Report r = crawl.Finish();
  Verify("agent killed for good", r, crawl.last_check());
  std::printf(
      "killed for good: %zu completed and not published, %lld extra "
      "fetches (bound %zu)\n",
      unpublished.size(), static_cast<long long>(r["extra_fetches"]),
      unpublished.size() + kWorkers);
  CHECK(r["extra_fetches"] <= static_cast<int64_t>(unpublished.size()) +
                                  kWorkers + r["complete_refused"]);
  CHECK(r["fetches_by:a0"] > 0);
  CHECK(r["fetches_by:a2"] > 0);
}

TEST_CASE("an agent stopped past its session and grace, then continued") {
  Crawl crawl("zombie", 2000);
  StartFleet(crawl, 3);
  crawl.WaitProgress(0.25);
  crawl.Signal("a1", SIGSTOP);
  // Its session ends, its grace runs out, its partitions move.
  crawl.WaitBalanced(2);
  crawl.WaitProgress(0.5);
  crawl.Signal("a1", SIGCONT);  // The zombie wakes up believing it owns.
  Report r = crawl.Finish();
  Verify("agent stopped (SIGSTOP) and resumed", r, crawl.last_check());
}

TEST_CASE("a ZooKeeper node and a nats-server killed mid-crawl") {
  Crawl crawl("servers", 2000);
  StartFleet(crawl, 3);
  crawl.WaitProgress(0.25);
  absl::StatusOr<int> leader = Cluster().ZooKeeperLeader();
  HQ_REQUIRE_OK(leader.status());
  HQ_REQUIRE_OK(Cluster().KillZooKeeper(*leader));
  HQ_REQUIRE_OK(Cluster().KillNats(0));
  crawl.WaitProgress(0.6);
  HQ_REQUIRE_OK(Cluster().StartZooKeeper(*leader));
  HQ_REQUIRE_OK(Cluster().StartNats(0));
  Report r = crawl.Finish();
  Verify("ZooKeeper leader + nats-server killed", r, crawl.last_check());
}

TEST_CASE("every ZooKeeper node down past the sessions") {
  Crawl crawl("no-zookeeper", 2000);
  StartFleet(crawl, 3);
  crawl.WaitProgress(0.25);
  for (int i = 0; i < 3; ++i) HQ_REQUIRE_OK(Cluster().KillZooKeeper(i));
  const absl::Time down = absl::Now();
  absl::SleepFor(kSession + absl::Seconds(2));
  // No hand-out after the leases ran out (the log lines of fetches handed
  // out before are written by now).
  int rc;
  Report during = crawl.Check(&rc);
  for (auto& [key, micros] : during) {
    if (key.rfind("last_handout_us:", 0) != 0) continue;
    INFO(key);
    CHECK(absl::FromUnixMicros(micros) <= down + kLease);
  }
  HQ_REQUIRE_OK(Cluster().StartStoppedZooKeeper());
  Report r = crawl.Finish();
  Verify("all of ZooKeeper down for 6 s", r, crawl.last_check());
}

TEST_CASE("an agent joining mid-crawl") {
  Crawl crawl("join", 2000);
  StartFleet(crawl, 2);
  crawl.WaitProgress(0.25);
  crawl.Start("a2");
  crawl.WaitBalanced(3);
  Report r = crawl.Finish();
  Verify("agent joining mid-crawl", r, crawl.last_check());
  CHECK(r["fetches_by:a2"] > 0);
}

// ---------------------------------------------------------------- benchmarks
// Run by `meson test --benchmark` (hidden from the default run).

// Crawl rate with 1, 2 and 4 agents (each with 8 workers) on one machine,
// and the failover time: from an agent's SIGKILL to the first hand-out of
// one of its partitions by another agent.
TEST_CASE("crawl rates and failover", "[.bench]") {
  Crawl::Shape shape{
      .pages = 20000, .sites = 256, .workers = 8, .site_interval = "0ms"};
  for (int agents : {1, 2, 4}) {
    Crawl crawl(absl::StrCat("rate", agents), shape);
    for (int i = 0; i < agents; ++i) crawl.Start(absl::StrCat("a", i));
    crawl.WaitBalanced(agents);
    const absl::Time start = absl::Now();
    crawl.Seed();
    Report r = crawl.Finish();
    const double secs = absl::ToDoubleSeconds(absl::Now() - start);
    Verify(absl::StrCat("none, ", agents, " agent(s), rate run"), r,
           crawl.last_check());
    std::printf(
        "fleet crawl rate | %d agent(s) | %lld pages in %.1f s | "
        "%.0f pages/s\n",
        agents, static_cast<long long>(r["reachable"]), secs,
        static_cast<double>(r["reachable"]) / secs);
    std::fflush(stdout);
  }
  Crawl crawl("failover", shape);
  StartFleet(crawl, 3);
  crawl.WaitProgress(0.3);
  absl::StatusOr<Assignment> a = crawl.ReadAssignment();
  HQ_REQUIRE_OK(a.status());
  std::set<uint32_t> lost;
  for (uint32_t p = 0; p < a->partitions(); ++p) {
    if (a->owners[p] == "a1") lost.insert(p);
  }
  const absl::Time killed = absl::Now();
  crawl.Signal("a1", SIGKILL);
  crawl.WaitBalanced(2);
  const absl::Time moved = absl::Now();
  Report r = crawl.Finish();
  Verify("agent killed for good, failover run", r, crawl.last_check());
  const absl::Time first = crawl.FirstHandout(lost, killed, "a1");
  REQUIRE(first != absl::InfiniteFuture());
  std::printf(
      "fleet failover | session %s + grace %s, then lease %s + "
      "takeover %s | reassigned after %.1f s | first hand-out of a "
      "moved partition after %.1f s\n",
      absl::FormatDuration(kSession).c_str(),
      absl::FormatDuration(kGrace).c_str(),
      absl::FormatDuration(kLease).c_str(), "2s",
      absl::ToDoubleSeconds(moved - killed),
      absl::ToDoubleSeconds(first - killed));
}

// Faults at random, every few seconds, over a long crawl
// (HQ_FLEET_CHAOS_PAGES pages, default 150000: about 5 minutes here): kill -9
// and restart, kill for good and a new agent, SIGSTOP for up to 10 s, a
// ZooKeeper node or a nats-server killed for 3 s. The crawl's checks hold at
// the end.
TEST_CASE("chaos", "[.chaos]") {
  const char* pages_env = std::getenv("HQ_FLEET_CHAOS_PAGES");
  Crawl::Shape shape{.pages = pages_env ? std::atoi(pages_env) : 150000,
                     .sites = 128};
  Crawl crawl("chaos", shape);
  std::vector<std::string> live = {"a0", "a1", "a2", "a3"};
  for (const std::string& id : live) crawl.Start(id);
  crawl.WaitBalanced(live.size());
  crawl.Seed();
  std::mt19937_64 rng(test::Seed(39));
  std::map<std::string, int> faults;
  int next_agent = 4;
  // A random node of one service killed, and started again 3 s later.
  auto down_3s = [&rng](absl::Status (FleetCluster::*kill)(int),
                        absl::Status (FleetCluster::*start)(int)) {
    const int node = static_cast<int>(rng() % 3);
    HQ_REQUIRE_OK((Cluster().*kill)(node));
    absl::SleepFor(absl::Seconds(3));
    HQ_REQUIRE_OK((Cluster().*start)(node));
  };
  const absl::Time end = absl::Now() + absl::Hours(1);
  for (;;) {
    int rc;
    if (crawl.Check(&rc)["lost"] == 0) break;
    REQUIRE(absl::Now() < end);
    const std::string victim = live[rng() % live.size()];
    switch (rng() % 5) {
      case 0:
        crawl.Signal(victim, SIGKILL);
        absl::SleepFor(absl::Seconds(1));
        crawl.Start(victim);
        ++faults["agent kill -9 and restart"];
        break;
      case 1:
        if (live.size() <= 2) break;
        crawl.Signal(victim, SIGKILL);
        live.erase(std::find(live.begin(), live.end(), victim));
        live.push_back(absl::StrCat("a", next_agent++));
        crawl.Start(live.back());
        ++faults["agent killed for good, new agent"];
        break;
      case 2:
        crawl.Signal(victim, SIGSTOP);
        absl::SleepFor(absl::Milliseconds(500 + rng() % 9500));
        crawl.Signal(victim, SIGCONT);
        ++faults["agent SIGSTOP 0.5-10 s"];
        break;
      case 3:
        down_3s(&FleetCluster::KillZooKeeper, &FleetCluster::StartZooKeeper);
        ++faults["ZooKeeper node killed 3 s"];
        break;
      case 4:
        down_3s(&FleetCluster::KillNats, &FleetCluster::StartNats);
        ++faults["nats-server killed 3 s"];
        break;
    }
    absl::SleepFor(absl::Seconds(3));
  }
  Report r = crawl.Finish();
  std::printf("%s", crawl.last_check().c_str());  // Every count.
  for (const auto& [fault, count] : faults) {
    std::printf("chaos: %-36s %d\n", fault.c_str(), count);
  }
  Verify("chaos (faults above)", r, crawl.last_check());
}

}  // namespace
}  // namespace hq::fleet
