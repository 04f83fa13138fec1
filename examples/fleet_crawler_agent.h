// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// One agent of the fleet crawler (fleet_crawler.cc, `agent` mode): joins
// the fleet, runs the fetching threads and writes the crawl log
// (fleet_crawl_log.h) until SIGTERM or SIGINT, then closes the agent (its
// partitions stay its own for the grace period).

#ifndef HQ_EXAMPLES_FLEET_CRAWLER_AGENT_H_
#define HQ_EXAMPLES_FLEET_CRAWLER_AGENT_H_

#include <string>

#include "absl/time/time.h"

namespace hq_example {

struct FleetCrawlFlags {
  std::string dir;
  std::string zookeeper;
  std::string nats;
  std::string fleet;
  std::string id;
  bool seed = false;
  int pages = 0;
  int sites = 0;
  int partitions = 0;
  int replicas = 0;
  int workers = 0;
  int max_attempts = 0;
  absl::Duration site_interval;
  absl::Duration task_lease;
  absl::Duration session_timeout;
  absl::Duration ownership_lease;
  absl::Duration grace;
};

// Runs the agent `flags.id` until SIGTERM or SIGINT. Returns the exit
// status: 0 once stopped, 1 if the agent failed (said on stderr), 2 for
// bad flags.
int RunAgent(const FleetCrawlFlags& flags);

}  // namespace hq_example

#endif  // HQ_EXAMPLES_FLEET_CRAWLER_AGENT_H_
