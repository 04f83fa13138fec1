// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The partition assignment of ordered groups, apart from the group.

#include "lib/consume/rebalance.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "catch2/catch.hpp"

namespace hq {
namespace {

std::vector<int> Counts(const std::vector<int>& assigned, size_t n) {
  std::vector<int> c(n, 0);
  for (int o : assigned) {
    if (o >= 0) ++c[o];
  }
  return c;
}

int Moved(const std::vector<int>& before, const std::vector<int>& after) {
  int moved = 0;
  for (size_t p = 0; p < before.size(); ++p) {
    if (before[p] >= 0 && before[p] != after[p]) ++moved;
  }
  return moved;
}

TEST_CASE("no consumers: no partition has an owner") {
  const std::vector<int> owner = {0, 1, -1};
  CHECK(AssignPartitions(owner, {}) == std::vector<int>{-1, -1, -1});
}

TEST_CASE("a first consumer gets every partition, a second half of them") {
  const std::vector<std::string> one = {"a"};
  std::vector<int> owner(8, -1);
  owner = AssignPartitions(owner, one);
  CHECK(owner == std::vector<int>(8, 0));

  const std::vector<std::string> two = {"a", "b"};
  const std::vector<int> after = AssignPartitions(owner, two);
  CHECK(Counts(after, 2) == std::vector<int>{4, 4});
  // Only what b takes moves, and a keeps its lowest partitions.
  CHECK(Moved(owner, after) == 4);
  CHECK(after == std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1});
}

TEST_CASE("the extra partitions stay with those that own the most") {
  // 7 partitions, 3 consumers: quotas 3, 2, 2. c owns 3 now, so c keeps 3.
  const std::vector<std::string> names = {"a", "b", "c"};
  const std::vector<int> owner = {2, 2, 2, 0, 0, -1, -1};
  const std::vector<int> after = AssignPartitions(owner, names);
  CHECK(Counts(after, 3) == std::vector<int>{2, 2, 3});
  CHECK(Moved(owner, after) == 0);
  // Ties go to the smaller name: with nothing owned, a gets the extra one.
  const std::vector<int> fresh =
      AssignPartitions(std::vector<int>(7, -1), names);
  CHECK(Counts(fresh, 3) == std::vector<int>{3, 2, 2});
}

TEST_CASE("a balanced assignment does not move") {
  const std::vector<std::string> names = {"x", "y", "z"};
  const std::vector<int> owner = {0, 1, 2, 0, 1, 2, 0, 1, 2};
  CHECK(AssignPartitions(owner, names) == owner);
}

TEST_CASE("random memberships: balanced, and only the surplus moves") {
  std::mt19937 rng(20261125);
  for (int round = 0; round < 2000; ++round) {
    const size_t partitions = 1 + rng() % 40;
    const size_t n = 1 + rng() % 9;
    std::vector<std::string> names;
    for (size_t i = 0; i < n; ++i) names.push_back("c" + std::to_string(i));
    std::vector<int> owner(partitions);
    for (int& o : owner) o = static_cast<int>(rng() % (n + 1)) - 1;
    const std::vector<int> after = AssignPartitions(owner, names);
    INFO("round " << round << ": " << partitions << " partitions, " << n
                  << " consumers");
    REQUIRE(after.size() == partitions);
    const std::vector<int> counts = Counts(after, n);
    const auto [lo, hi] = std::minmax_element(counts.begin(), counts.end());
    CHECK(*hi - *lo <= 1);  // Balanced.
    CHECK(std::count(after.begin(), after.end(), -1) == 0);
    // A partition moves only away from an owner over its new count, and
    // then every partition it kept is one it owned.
    const std::vector<int> before = Counts(owner, n);
    int surplus = 0;
    for (size_t i = 0; i < n; ++i) {
      surplus += std::max(0, before[i] - counts[i]);
    }
    CHECK(Moved(owner, after) == surplus);
  }
}

}  // namespace
}  // namespace hq
