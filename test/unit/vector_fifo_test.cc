// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// VectorFifo (lib/util/vector_fifo.h) alone: a subscription's per-lane
// buffer relies on it keeping first-in first-out order through any mix of
// pushes and pops from both ends, on an empty one owning no memory, and on
// popped elements letting go of what they own. Checked against std::deque
// under a random workload.

#include "lib/util/vector_fifo.h"

#include <deque>
#include <memory>
#include <random>
#include <string>

#include "catch2/catch.hpp"

namespace hq {
namespace {

TEST_CASE("an empty VectorFifo owns no memory, also once emptied") {
  VectorFifo<std::string> f;
  CHECK(f.empty());
  CHECK(f.size() == 0);
  CHECK(f.capacity_bytes() == 0);
  f.push_back("a");
  f.push_back("b");
  CHECK(f.front() == "a");
  CHECK(f.back() == "b");
  f.pop_front();
  f.pop_front();
  CHECK(f.empty());
  f.shrink_to_fit();
  CHECK(f.capacity_bytes() == 0);
}

TEST_CASE("VectorFifo keeps deque order under random pushes and pops") {
  std::mt19937 rng(GENERATE(1u, 2u, 3u));
  VectorFifo<std::string> f;
  std::deque<std::string> want;
  size_t max_size = 0;
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 5 || want.empty()) {
      std::string s = std::to_string(step) + std::string(rng() % 40, 'x');
      f.push_back(s);
      want.push_back(s);
    } else if (op < 9) {
      REQUIRE(f.front() == want.front());
      f.pop_front();
      want.pop_front();
    } else {
      REQUIRE(f.back() == want.back());
      f.pop_back();
      want.pop_back();
    }
    REQUIRE(f.size() == want.size());
    REQUIRE(f.empty() == want.empty());
    max_size = std::max(max_size, want.size());
    if (!want.empty()) {
      const size_t i = rng() % want.size();
      REQUIRE(f[i] == want[i]);
      REQUIRE(f.front() == want.front());
      REQUIRE(f.back() == want.back());
    }
  }
  // Popped slots are reclaimed: the vector never holds more than twice
  // the most elements it had at once (plus the vector's own growth).
  CHECK(f.capacity_bytes() <= 4 * (max_size + 1) * sizeof(std::string));
}

TEST_CASE("a popped element lets go of what it owns at once") {
  VectorFifo<std::shared_ptr<int>> f;
  auto a = std::make_shared<int>(1);
  auto b = std::make_shared<int>(2);
  f.push_back(a);
  f.push_back(b);
  f.push_back(std::make_shared<int>(3));
  CHECK(a.use_count() == 2);
  f.pop_front();
  CHECK(a.use_count() == 1);
  f.pop_back();
  CHECK(*f.front() == 2);
  f.pop_front();
  CHECK(b.use_count() == 1);
  CHECK(f.empty());
}

}  // namespace
}  // namespace hq
