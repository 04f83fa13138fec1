// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The fleet's assignment record and rebalance, without ZooKeeper.

#include "lib/fleet/assignment.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"

namespace hq::fleet {
namespace {

std::vector<std::string> Agents(int n, int first = 0) {
  std::vector<std::string> ids;
  for (int i = first; i < first + n; ++i) ids.push_back(absl::StrCat("a", i));
  return ids;
}

std::map<std::string, size_t> Counts(const Assignment& a) {
  std::map<std::string, size_t> c;
  for (const std::string& o : a.owners) ++c[o];
  return c;
}

// Max minus min partitions over the members.
size_t Spread(const Assignment& a, const std::vector<std::string>& members) {
  std::map<std::string, size_t> c = Counts(a);
  size_t lo = SIZE_MAX, hi = 0;
  for (const std::string& m : members) {
    lo = std::min(lo, c[m]);
    hi = std::max(hi, c[m]);
  }
  return hi - lo;
}

TEST_CASE("assignment: the record round trips and names its owners") {
  Assignment a = EmptyAssignment(5);
  a.owners = {"b", "", "a", "b", "c.1-x"};
  a.epochs = {3, 0, 1, 7, 18446744073709551615ull};
  std::string text = EncodeAssignment(a);
  CHECK(text.rfind("hq-fleet-assignment 1 5\nmembers 3 a b c.1-x\n", 0) == 0);
  absl::StatusOr<Assignment> back = DecodeAssignment(text);
  REQUIRE(back.ok());
  CHECK(*back == a);
}

TEST_CASE("assignment: a damaged record is DataLoss, never a partial one") {
  Assignment a = EmptyAssignment(3);
  a.owners = {"x", "y", ""};
  a.epochs = {1, 2, 3};
  const std::string good = EncodeAssignment(a);
  std::vector<std::string> bad = {
      "",
      good.substr(0, good.size() - 1),  // no last newline
      good.substr(0, good.size() - 4),  // a partition line short
      good + "0 1\n",                   // one line too many
      "hq-fleet-assignment 2 3\n" + good.substr(good.find('\n') + 1),
      "hq-fleet-assignment 1 0\nmembers 0\n",          // no partitions
      "hq-fleet-assignment 1 1\nmembers 1 x\n5 1\n",   // index out of range
      "hq-fleet-assignment 1 1\nmembers 2 x\n0 1\n",   // member count wrong
      "hq-fleet-assignment 1 1\nmembers 1 x\n0 -1\n",  // epoch not a number
      "hq-fleet-assignment 1 1\nmembers 1 x\n01\n",    // no separator
  };
  for (const std::string& b : bad) {
    INFO(b);
    absl::StatusOr<Assignment> r = DecodeAssignment(b);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kDataLoss);
  }
  // Every truncation fails.
  for (size_t n = 0; n + 1 < good.size(); ++n) {
    CHECK_FALSE(DecodeAssignment(good.substr(0, n)).ok());
  }
}

TEST_CASE("rebalance: from nothing, every member gets its share at epoch 1") {
  std::vector<std::string> m = Agents(3);
  size_t moved = 0;
  Assignment a = Rebalance(EmptyAssignment(1024), m, &moved);
  CHECK(moved == 1024);
  CHECK(Spread(a, m) <= 1);
  for (uint32_t p = 0; p < 1024; ++p) {
    CHECK(!a.owners[p].empty());
    CHECK(a.epochs[p] == 1);
  }
  // The same members in another order give the same assignment.
  std::vector<std::string> r(m.rbegin(), m.rend());
  CHECK(Rebalance(EmptyAssignment(1024), r, nullptr) == a);
  // Nothing to change: nothing moves, no epoch moves.
  CHECK(Rebalance(a, m, &moved) == a);
  CHECK(moved == 0);
  // No members: nothing changes.
  CHECK(Rebalance(a, {}, &moved) == a);
}

TEST_CASE("rebalance: a leaving member's partitions, and only they, move") {
  std::vector<std::string> m = Agents(4);
  Assignment a = Rebalance(EmptyAssignment(1000), m, nullptr);
  std::vector<std::string> left = {m[0], m[1], m[3]};
  size_t moved = 0;
  Assignment b = Rebalance(a, left, &moved);
  CHECK(moved == Counts(a)[m[2]]);
  CHECK(Spread(b, left) <= 1);
  for (uint32_t p = 0; p < 1000; ++p) {
    if (a.owners[p] == m[2]) {
      CHECK(b.owners[p] != m[2]);
      CHECK(b.epochs[p] == a.epochs[p] + 1);
    } else {
      CHECK(b.owners[p] == a.owners[p]);
      CHECK(b.epochs[p] == a.epochs[p]);
    }
  }
}

TEST_CASE("rebalance: a joining member takes its share, from the fullest") {
  std::vector<std::string> m = Agents(3);
  Assignment a = Rebalance(EmptyAssignment(1000), m, nullptr);
  std::vector<std::string> joined = Agents(4);
  size_t moved = 0;
  Assignment b = Rebalance(a, joined, &moved);
  CHECK(moved == Counts(b)["a3"]);
  CHECK(moved == 250);
  CHECK(Spread(b, joined) == 0);
}

// The figures of the "on paper" question: 100 agents and 10^4
// partitions, balance and the share moved by one join and one leave.
TEST_CASE("rebalance: 100 agents and 10^4 partitions") {
  const uint32_t kPartitions = 10000;
  std::vector<std::string> m = Agents(100);
  Assignment a = Rebalance(EmptyAssignment(kPartitions), m, nullptr);
  CHECK(Spread(a, m) == 0);  // 100 each: max/mean 1.00

  std::vector<std::string> joined = Agents(101);
  size_t join_moved = 0;
  Assignment b = Rebalance(a, joined, &join_moved);
  CHECK(Spread(b, joined) <= 1);
  // The newcomer's share is the least that can move: 10000/101 = 99.
  CHECK(join_moved == kPartitions / 101);

  std::vector<std::string> left = Agents(99, 1);  // a0 leaves
  size_t leave_moved = 0;
  Assignment c = Rebalance(a, left, &leave_moved);
  CHECK(Spread(c, left) <= 1);
  CHECK(leave_moved == 100);  // a0's partitions, no others

  size_t max_b = 0;
  for (auto& [id, n] : Counts(b)) max_b = std::max(max_b, n);
  std::printf(
      "100 agents, 10^4 partitions: max/mean 1.00; one joins: %zu moved "
      "(%.2f%%), max/mean %.3f; one leaves: %zu moved (%.2f%%)\n",
      join_moved, 100.0 * join_moved / kPartitions,
      max_b / (kPartitions / 101.0), leave_moved,
      100.0 * leave_moved / kPartitions);
}

}  // namespace
}  // namespace hq::fleet
