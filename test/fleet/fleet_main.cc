// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The Catch2 runner of the fleet tests that start servers
// (test/fleet/cluster.h). Where java, ZooKeeper's jars or nats-server are
// missing it prints one line "SKIP: <what is missing>" and exits 77, which
// meson reports as a skipped test; otherwise it runs the tests.

#define CATCH_CONFIG_RUNNER
#include <cstdio>
#include <string>

#include "catch2/catch.hpp"
#include "nats/nats.h"
#include "test/fleet/cluster.h"

int main(int argc, char** argv) {
  std::string why;
  if (!hq::test::FleetCluster::Available(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  const int rc = Catch::Session().run(argc, argv);
  // nats.c's library state (its threads, its memory) goes too, so that a
  // leak checker sees only what a test left.
  nats_CloseAndWait(10000);
  return rc;
}
