// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The Catch2 runner of every test program. HQ_TEST_MAX_ACTIVE_LANES=N runs
// the program with every consumer group's working set capped at N lanes
// (hq::TEST_SetMaxActiveLanes), so that paging and eviction happen
// on every call; test/meson.build runs the group suites so as well.

#define CATCH_CONFIG_RUNNER
#include <cstdlib>

#include "catch2/catch.hpp"
#include "lib/consume/group_test_hooks.h"

int main(int argc, char** argv) {
  if (const char* n = std::getenv("HQ_TEST_MAX_ACTIVE_LANES")) {
    hq::TEST_SetMaxActiveLanes(std::strtoull(n, nullptr, 10));
  }
  return Catch::Session().run(argc, argv);
}
