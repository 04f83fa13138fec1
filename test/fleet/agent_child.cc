// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A fleet agent as a process, for agent_test's kill -9 case: it joins,
// then claims up to 4 tasks at a time, "fetches" each (20 ms), appends
// "fetched <url>" to LOG with one write(2) (so a line written survives a
// SIGKILL of the process), and completes it. SIGTERM closes the agent and
// exits 0.
//
// Usage: agent_child LOG ZOOKEEPER NATS FLEET AGENT_ID DB_DIR PARTITIONS

#include <fcntl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/time/clock.h"
#include "hq/fleet.h"

namespace {
volatile std::sig_atomic_t g_stop = 0;
}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr,
                 "usage: %s LOG ZOOKEEPER NATS FLEET ID DB PARTITIONS\n",
                 argv[0]);
    return 2;
  }
  std::signal(SIGTERM, [](int) { g_stop = 1; });
  const int log = open(argv[1], O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (log < 0) return 2;
  hq::fleet::AgentOptions o;
  o.zookeeper = argv[2];
  o.nats = argv[3];
  o.fleet = argv[4];
  o.agent_id = argv[5];
  o.db_path = argv[6];
  o.partitions = static_cast<uint32_t>(std::atoi(argv[7]));
  o.session_timeout = absl::Seconds(8);
  o.grace = absl::Seconds(120);
  o.ownership_lease = absl::Milliseconds(1500);
  o.task_lease = absl::Seconds(2);
  auto agent = hq::fleet::Agent::Open(o);
  if (!agent.ok()) {
    std::fprintf(stderr, "%s\n", agent.status().ToString().c_str());
    return 1;
  }
  while (!g_stop) {
    auto tasks = (*agent)->Claim({.max = 4, .wait = absl::Milliseconds(50)});
    if (!tasks.ok()) {
      std::fprintf(stderr, "claim: %s\n", tasks.status().ToString().c_str());
      return 1;
    }
    for (const hq::fleet::FleetTask& t : *tasks) {
      absl::SleepFor(absl::Milliseconds(20));  // The fetch.
      const std::string line = "fetched " + t.task.key + "\n";
      if (write(log, line.data(), line.size()) !=
          static_cast<ssize_t>(line.size())) {
        return 2;
      }
    }
    if (absl::Status s = (*agent)->Complete(*tasks); !s.ok()) {
      std::fprintf(stderr, "complete: %s\n", s.ToString().c_str());
      return 1;
    }
  }
  close(log);
  return 0;
}
