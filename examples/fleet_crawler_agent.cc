// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "fleet_crawler_agent.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "hq/fleet.h"
#include "synthetic_web.h"

namespace hq_example {
namespace {

// The crawl log (fleet_crawl_log.h): a line per event, one write(2) each.
class CrawlLog {
 public:
  explicit CrawlLog(int fd) : fd_(fd) {}
  bool Write(const std::string& line) const {
    return write(fd_, line.data(), line.size()) ==
           static_cast<ssize_t>(line.size());
  }

 private:
  int fd_;
};

int64_t Micros(absl::Time t) { return absl::ToUnixMicros(t); }

class Fetcher {
 public:
  Fetcher(const FleetCrawlFlags& f, hq::fleet::Agent* agent,
          const CrawlLog& log)
      : f_(f), web_(f.pages, f.sites), agent_(agent), log_(log) {}

  // Claims and fetches pages until `stop`.
  void Work(const std::atomic<bool>& stop) {
    while (!stop.load()) {
      auto tasks = agent_->Claim({.max = 1, .wait = absl::Milliseconds(100)});
      if (!tasks.ok()) {
        Complain("claim", tasks.status());
        absl::SleepFor(absl::Milliseconds(100));
        continue;
      }
      for (const hq::fleet::FleetTask& t : *tasks) Fetch(t);
    }
  }

 private:
  void Complain(const char* what, const absl::Status& s) {
    std::fprintf(stderr, "fleet_crawler %s: %s: %s\n", f_.id.c_str(), what,
                 s.ToString().c_str());
  }

  void Log(const std::string& line) {
    if (!log_.Write(line)) {
      std::fprintf(stderr, "fleet_crawler %s: writing the log: errno %d\n",
                   f_.id.c_str(), errno);
      _exit(1);
    }
  }

  void Fetch(const hq::fleet::FleetTask& t) {
    const int page = web_.Page(t.task.key);
    if (page < 0) {
      Complain(t.task.key.c_str(), absl::InvalidArgumentError("not a page"));
      agent_->Reject(t).IgnoreError();
      return;
    }
    const absl::Time handout = t.task.lease_deadline - f_.task_lease;
    const absl::Time start = absl::Now();
    if (start >= t.valid_until) {
      agent_->Release(t, absl::ZeroDuration()).IgnoreError();
      Log(absl::StrCat("V ", page, "\n"));
      return;
    }
    absl::SleepFor(web_.FetchTime(page));
    const Fault fault = web_.FaultOf(page);
    const bool failed = fault == Fault::kFailsAlways ||
                        (fault == Fault::kFailsOnce && t.task.attempt == 1);
    Log(absl::StrCat("F ", page, " ", t.task.attempt, " ", t.partition, " ",
                     t.epoch, " ", Micros(handout), " ", Micros(start), " ",
                     Micros(absl::Now()), failed ? " fail\n" : " ok\n"));
    if (failed) {
      if (fault == Fault::kFailsAlways &&
          t.task.attempt >= static_cast<uint32_t>(f_.max_attempts)) {
        Log(absl::StrCat("r ", page, "\n"));
        if (absl::Status s = agent_->Reject(t); !s.ok()) {
          Complain("reject", s);
          return;
        }
        Log(absl::StrCat("R ", page, "\n"));
      } else {
        agent_->Release(t, absl::Milliseconds(10)).IgnoreError();
      }
      return;
    }
    std::vector<hq::fleet::Url> links;
    for (int l : web_.Links(page)) {
      links.push_back({.url = web_.Url(l), .priority = web_.Priority(l)});
    }
    // The links are stored (acknowledged by JetStream) before the page is
    // completed: a crash between the two fetches the page again, and loses
    // none of its links.
    if (absl::Status s = agent_->PutBatch(links); !s.ok()) {
      Complain("put", s);
      Log(absl::StrCat("P ", page, "\n"));
      agent_->Release(t, absl::Milliseconds(100)).IgnoreError();
      return;
    }
    Log(absl::StrCat("c ", page, "\n"));
    if (absl::Status s = agent_->Complete({&t, 1}); !s.ok()) {
      // Its lease ran out (the page is handed out again) or worse.
      Complain("complete", s);
      Log(absl::StrCat("X ", page, "\n"));
      return;
    }
    Log(absl::StrCat("C ", page, "\n"));
  }

  const FleetCrawlFlags& f_;
  const Web web_;
  hq::fleet::Agent* agent_;
  const CrawlLog& log_;
};

hq::fleet::AgentOptions Options(const FleetCrawlFlags& f) {
  hq::fleet::AgentOptions o;
  o.agent_id = f.id;
  o.fleet = f.fleet;
  o.db_path = f.dir + "/" + f.id + ".db";
  o.zookeeper = f.zookeeper;
  o.nats = f.nats;
  o.partitions = static_cast<uint32_t>(f.partitions);
  o.replicas = f.replicas;
  o.session_timeout = f.session_timeout;
  o.ownership_lease = f.ownership_lease;
  o.grace = f.grace;
  o.task_lease = f.task_lease;
  o.pacing = {.max_in_flight = 1, .interval = f.site_interval};
  return o;
}

// Puts page 0, trying for up to a minute.
absl::Status Seed(hq::fleet::Agent* agent, const Web& web) {
  const absl::Time end = absl::Now() + absl::Minutes(1);
  for (;;) {
    absl::Status s = agent->Put({.url = web.Url(0), .priority = 2});
    if (s.ok() || absl::Now() > end) return s;
    absl::SleepFor(absl::Milliseconds(200));
  }
}

// Waits for SIGTERM or SIGINT (blocked in every thread).
void WaitForStop() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  int sig;
  while (sigwait(&set, &sig) != 0) {
  }
}

}  // namespace

int RunAgent(const FleetCrawlFlags& f) {
  if (f.id.empty()) {
    std::fprintf(stderr, "fleet_crawler: agent needs --id\n");
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  const std::string log_path = f.dir + "/" + f.id + ".log";
  const int fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "fleet_crawler: %s: errno %d\n", log_path.c_str(),
                 errno);
    return 1;
  }
  const CrawlLog log(fd);
  auto agent = hq::fleet::Agent::Open(Options(f));
  if (!agent.ok()) {
    std::fprintf(stderr, "fleet_crawler %s: %s\n", f.id.c_str(),
                 agent.status().ToString().c_str());
    return absl::IsInvalidArgument(agent.status()) ? 2 : 1;
  }
  if (f.seed) {
    if (absl::Status s = Seed(agent->get(), Web(f.pages, f.sites)); !s.ok()) {
      std::fprintf(stderr, "fleet_crawler %s: seed: %s\n", f.id.c_str(),
                   s.ToString().c_str());
      return 1;
    }
  }
  Fetcher fetcher(f, agent->get(), log);
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int i = 0; i < f.workers; ++i) {
    workers.emplace_back([&] { fetcher.Work(stop); });
  }
  WaitForStop();
  stop.store(true);
  for (std::thread& w : workers) w.join();
  agent->reset();
  close(fd);
  return 0;
}

}  // namespace hq_example
