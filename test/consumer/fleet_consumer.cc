// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A program built against an installed libhq_fleet with
// `pkg-config --cflags --libs hq-fleet` (test/consumer/run.sh
// fleet-pkg-config): the fleet's site mapping, and an Agent refused for a
// bad option, which needs no server. Exits 0 when all is as documented.

#include <cstdio>

#include "hq/fleet.h"

int main() {
  absl::StatusOr<std::string> site =
      hq::fleet::SiteOf("https://news.example.co.uk/a");
  if (!site.ok() || *site != "example.co.uk") {
    std::fprintf(stderr, "SiteOf: %s\n",
                 site.ok() ? site->c_str() : site.status().ToString().c_str());
    return 1;
  }
  if (hq::fleet::PartitionOf("example.org", 1024) != 837) {
    std::fprintf(stderr, "PartitionOf is not the documented hash\n");
    return 1;
  }
  hq::fleet::AgentOptions o;
  o.agent_id = "not valid";  // A space: refused before any connection.
  absl::StatusOr<std::unique_ptr<hq::fleet::Agent>> agent =
      hq::fleet::Agent::Open(o);
  if (agent.ok() || !absl::IsInvalidArgument(agent.status())) {
    std::fprintf(stderr, "Agent::Open accepted a bad agent_id\n");
    return 1;
  }
  std::printf("fleet consumer: %s, partition %u\n", site->c_str(),
              hq::fleet::PartitionOf(*site, 1024));
  return 0;
}
