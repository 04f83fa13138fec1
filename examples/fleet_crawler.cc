// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Fleet crawler: the crawler example (crawler.cc) as N agents of an hq
// fleet, over the same synthetic web (synthetic_web.h), checked end to end
// across agents. It needs a ZooKeeper ensemble and NATS servers with
// JetStream (doc/fleet.md says how to start them on one machine).
//
//   fleet_crawler run --zookeeper=127.0.0.1:2181 --nats=nats://127.0.0.1:4222
//                     --replicas=1 [--agents=3] [--dir=demo-data/fleet] ...
//   fleet_crawler agent --id=ID [same flags]   one agent (what run starts)
//   fleet_crawler check [same flags]           the checks, on the logs
//
// `run` starts --agents agent processes (this program, `agent`), each with
// its own Db (DIR/<id>.db) and crawl log (DIR/<id>.log), seeds page 0, and
// waits until every page reachable from it was completed or dead-lettered;
// then it stops the agents (SIGTERM) and prints the checks. Every agent
// runs --workers threads that claim a page, fetch it (a sleep, as long as
// the web says), Put the URLs it links to (routed to their sites' owners)
// and only then Complete it. A page that fails its first fetch is released
// and tried again; one that fails every fetch is rejected (dead-lettered)
// at its --max_attempts-th attempt. The fleet paces each site: one fetch
// at a time, and --site_interval between two hand-outs, across agents.
//
// The checks (fleet_crawl_log.h): nothing lost, no site fetched by two
// agents at once, no two hand-outs of a site closer than its interval, no
// agent serving a partition it lost (a stale epoch), no failing page
// completed; pages fetched more than once are counted (delivery is at
// least once). A crawl directory keeps its logs: `run` on a directory with
// logs goes on with the same crawl (the agents resume from their Dbs if
// the fleet still knows them); --fresh deletes the directory first, and
// then --fleet should be new too (the fleet's streams outlive the
// directory).
//
// Exit status: 0 when the crawl is finished and every check passed, 1 if a
// check failed or the crawl did not finish by --timeout, 2 for a bad flag,
// an agent that failed, or a storage error; `check` exits 3 for a crawl
// not yet finished (and clean).

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "fleet_crawl_log.h"
#include "fleet_crawler_agent.h"
#include "synthetic_web.h"

// Durations are string flags parsed with absl::ParseDuration ("200ms"), as
// in crawler.cc.
ABSL_FLAG(std::string, dir, "demo-data/fleet",
          "The crawl's directory: each agent's Db and log.");
ABSL_FLAG(std::string, zookeeper, "", "ZooKeeper's connect string.");
ABSL_FLAG(std::string, nats, "", "NATS server URLs, comma-separated.");
ABSL_FLAG(std::string, fleet, "crawl", "The fleet's name.");
ABSL_FLAG(std::string, id, "", "agent: this agent's id.");
ABSL_FLAG(bool, seed, false, "agent: Put page 0 once joined.");
ABSL_FLAG(int, agents, 3, "run: agent processes, 1..64.");
ABSL_FLAG(int, pages, 3000, "Pages in the web, 1..10000000.");
ABSL_FLAG(int, sites, 32, "Sites of the web, 1..1000.");
ABSL_FLAG(int, partitions, 64, "The fleet's virtual partitions.");
ABSL_FLAG(int, replicas, 3, "JetStream replicas (1 for one server).");
ABSL_FLAG(int, workers, 4, "Fetching threads per agent, 1..256.");
ABSL_FLAG(int, max_attempts, 3,
          "Attempts at which a page that fails every fetch is rejected.");
ABSL_FLAG(std::string, site_interval, "20ms",
          "Least time between two hand-outs of one site, across agents.");
ABSL_FLAG(std::string, task_lease, "2s", "A claimed page's lease.");
ABSL_FLAG(std::string, session_timeout, "4s", "ZooKeeper session timeout.");
ABSL_FLAG(std::string, ownership_lease, "1s", "The ownership lease.");
ABSL_FLAG(std::string, grace, "5s",
          "How long a dead agent's partitions wait for it.");
ABSL_FLAG(std::string, timeout, "10m", "run: give up after this long.");
ABSL_FLAG(bool, fresh, false, "run: delete --dir first.");

namespace {

using hq_example::CheckCrawl;
using hq_example::CrawlReport;
using hq_example::Web;

absl::Duration DurationFlag(const char* name, const std::string& text,
                            bool* ok) {
  absl::Duration d;
  if (!absl::ParseDuration(text, &d) || d < absl::ZeroDuration()) {
    std::fprintf(stderr, "fleet_crawler: bad --%s '%s'\n", name, text.c_str());
    *ok = false;
  }
  return d;
}

bool ReadFlags(hq_example::FleetCrawlFlags* f) {
  bool ok = true;
  f->dir = absl::GetFlag(FLAGS_dir);
  f->zookeeper = absl::GetFlag(FLAGS_zookeeper);
  f->nats = absl::GetFlag(FLAGS_nats);
  f->fleet = absl::GetFlag(FLAGS_fleet);
  f->id = absl::GetFlag(FLAGS_id);
  f->seed = absl::GetFlag(FLAGS_seed);
  f->pages = absl::GetFlag(FLAGS_pages);
  f->sites = absl::GetFlag(FLAGS_sites);
  f->partitions = absl::GetFlag(FLAGS_partitions);
  f->replicas = absl::GetFlag(FLAGS_replicas);
  f->workers = absl::GetFlag(FLAGS_workers);
  f->max_attempts = absl::GetFlag(FLAGS_max_attempts);
  f->site_interval =
      DurationFlag("site_interval", absl::GetFlag(FLAGS_site_interval), &ok);
  f->task_lease =
      DurationFlag("task_lease", absl::GetFlag(FLAGS_task_lease), &ok);
  f->session_timeout = DurationFlag("session_timeout",
                                    absl::GetFlag(FLAGS_session_timeout), &ok);
  f->ownership_lease = DurationFlag("ownership_lease",
                                    absl::GetFlag(FLAGS_ownership_lease), &ok);
  f->grace = DurationFlag("grace", absl::GetFlag(FLAGS_grace), &ok);
  auto bad = [&ok](bool cond, const char* what) {
    if (cond) {
      std::fprintf(stderr, "fleet_crawler: %s\n", what);
      ok = false;
    }
  };
  bad(f->pages < 1 || f->pages > 10000000, "--pages must be 1..10000000");
  bad(f->sites < 1 || f->sites > 1000, "--sites must be 1..1000");
  bad(f->workers < 1 || f->workers > 256, "--workers must be 1..256");
  bad(f->max_attempts < 1 || f->max_attempts > 100,
      "--max_attempts must be 1..100");
  bad(f->dir.empty(), "--dir is empty");
  return ok;
}

// ------------------------------------------------------------------ run

// An agent process of `run`; SIGKILLed if this process dies.
pid_t StartAgent(const char* self, const std::vector<std::string>& args) {
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid != 0) return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(2);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(self));
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execv("/proc/self/exe", argv.data());
  _exit(2);
}

// The flags an agent of `run` gets: every flag of this run.
std::vector<std::string> AgentArgs(const hq_example::FleetCrawlFlags& f,
                                   int i) {
  return {"agent",
          "--id=agent-" + std::to_string(i),
          "--dir=" + f.dir,
          "--zookeeper=" + f.zookeeper,
          "--nats=" + f.nats,
          "--fleet=" + f.fleet,
          i == 0 ? "--seed" : "--noseed",
          absl::StrCat("--pages=", f.pages),
          absl::StrCat("--sites=", f.sites),
          absl::StrCat("--partitions=", f.partitions),
          absl::StrCat("--replicas=", f.replicas),
          absl::StrCat("--workers=", f.workers),
          absl::StrCat("--max_attempts=", f.max_attempts),
          "--site_interval=" + absl::FormatDuration(f.site_interval),
          "--task_lease=" + absl::FormatDuration(f.task_lease),
          "--session_timeout=" + absl::FormatDuration(f.session_timeout),
          "--ownership_lease=" + absl::FormatDuration(f.ownership_lease),
          "--grace=" + absl::FormatDuration(f.grace)};
}

int Run(const char* self, const hq_example::FleetCrawlFlags& f,
        absl::Duration timeout) {
  if (absl::GetFlag(FLAGS_fresh)) std::filesystem::remove_all(f.dir);
  std::error_code ec;
  std::filesystem::create_directories(f.dir, ec);
  if (ec) {
    std::fprintf(stderr, "fleet_crawler: %s: %s\n", f.dir.c_str(),
                 ec.message().c_str());
    return 2;
  }
  const int n = absl::GetFlag(FLAGS_agents);
  if (n < 1 || n > 64) {
    std::fprintf(stderr, "fleet_crawler: --agents must be 1..64\n");
    return 2;
  }
  const Web web(f.pages, f.sites);
  std::vector<pid_t> agents;
  for (int i = 0; i < n; ++i)
    agents.push_back(StartAgent(self, AgentArgs(f, i)));
  const absl::Time start = absl::Now();
  int rc = 1;
  absl::StatusOr<CrawlReport> r;
  for (;;) {
    absl::SleepFor(absl::Milliseconds(250));
    for (pid_t& pid : agents) {
      int status;
      if (pid > 0 && waitpid(pid, &status, WNOHANG) == pid) {
        std::fprintf(stderr, "fleet_crawler: an agent exited (status %d)\n",
                     status);
        pid = -1;
        rc = 2;
      }
    }
    r = CheckCrawl(f.dir, web, static_cast<uint32_t>(f.partitions),
                   f.site_interval, f.task_lease);
    if (!r.ok() || rc == 2) break;
    const double secs = absl::ToDoubleSeconds(absl::Now() - start);
    std::printf("%6.1fs %7" PRId64 " of %" PRId64 " pages done, %.0f/s\n", secs,
                r->completed + r->dead_lettered, r->reachable,
                static_cast<double>(r->fetches) / std::max(secs, 1e-3));
    std::fflush(stdout);
    if (r->finished()) {
      rc = 0;
      break;
    }
    if (absl::Now() - start > timeout) {
      std::fprintf(stderr, "fleet_crawler: not finished after %s\n",
                   absl::FormatDuration(timeout).c_str());
      break;
    }
  }
  for (pid_t pid : agents) {
    if (pid > 0) kill(pid, SIGTERM);
  }
  for (pid_t pid : agents) {
    if (pid > 0) waitpid(pid, nullptr, 0);
  }
  if (!r.ok()) {
    std::fprintf(stderr, "fleet_crawler: %s\n", r.status().ToString().c_str());
    return 2;
  }
  r = CheckCrawl(f.dir, web, static_cast<uint32_t>(f.partitions),
                 f.site_interval, f.task_lease);  // Final.
  if (!r.ok()) return 2;
  std::printf("%s", hq_example::FormatReport(*r).c_str());
  if (rc == 0 && !r->clean()) rc = 1;
  std::printf("fleet_crawler: %s\n", rc == 0   ? "crawl finished, checks passed"
                                     : rc == 1 ? "CHECK FAILED"
                                               : "error");
  return rc;
}

int Check(const hq_example::FleetCrawlFlags& f) {
  const Web web(f.pages, f.sites);
  absl::StatusOr<CrawlReport> r =
      CheckCrawl(f.dir, web, static_cast<uint32_t>(f.partitions),
                 f.site_interval, f.task_lease);
  if (!r.ok()) {
    std::fprintf(stderr, "fleet_crawler: %s\n", r.status().ToString().c_str());
    return 2;
  }
  std::printf("%s", hq_example::FormatReport(*r).c_str());
  if (!r->clean()) return 1;
  return r->finished() ? 0 : 3;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "fleet_crawler run|agent|check --zookeeper=HOSTS --nats=URLS [flags]");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: %s run|agent|check [flags]\n", argv[0]);
    return 2;
  }
  hq_example::FleetCrawlFlags f;
  if (!ReadFlags(&f)) return 2;
  const std::string mode = args[1];
  if (mode == "check") return Check(f);
  if (f.zookeeper.empty() || f.nats.empty()) {
    std::fprintf(stderr, "fleet_crawler: --zookeeper and --nats are needed\n");
    return 2;
  }
  if (mode == "agent") return hq_example::RunAgent(f);
  if (mode == "run") {
    bool ok = true;
    const absl::Duration timeout =
        DurationFlag("timeout", absl::GetFlag(FLAGS_timeout), &ok);
    return ok ? Run(argv[0], f, timeout) : 2;
  }
  std::fprintf(stderr, "fleet_crawler: unknown mode '%s'\n", mode.c_str());
  return 2;
}
