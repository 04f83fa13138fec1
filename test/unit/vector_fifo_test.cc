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

TEST_CASE("a VectorFifo of one element or none owns no heap memory") {
  VectorFifo<std::string> f;
  CHECK(f.empty());
  CHECK(f.size() == 0);
  CHECK(f.heap_bytes() == 0);
  f.push_back("a");
  CHECK(f.heap_bytes() == 0);
  f.push_back("b");
  CHECK(f.front() == "a");
  CHECK(f.back() == "b");
  f.push_back("c");
  CHECK(f.heap_bytes() > 0);
  f.pop_front();
  f.pop_front();
  f.pop_front();
  CHECK(f.empty());
  const size_t kept = f.heap_bytes();  // Kept for the next elements...
  f.push_back("d");
  f.push_back("e");
  CHECK(f.heap_bytes() == kept);
  f.pop_back();
  f.pop_back();
  f.shrink_to_fit();  // ...until let go.
  CHECK(f.heap_bytes() == 0);
  f.push_back("f");
  CHECK(f.heap_bytes() == 0);
  CHECK(f.front() == "f");
}

TEST_CASE("VectorFifo keeps deque order under random pushes and pops") {
  std::mt19937 rng(GENERATE(1u, 2u, 3u));
  VectorFifo<std::string, 4> f;
  std::deque<std::string> want;
  size_t max_size = 0;
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    if (op < 5 || want.empty()) {
      std::string s = std::to_string(step) + std::string(rng() % 40, 'x');
      if (op % 2 == 0) {
        f.push_back(s);
      } else {
        f.emplace_back() = s;
      }
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
    // Popped slots are reclaimed: the vector stays under four times the
    // most elements it held at once.
    REQUIRE(f.heap_bytes() <= 4 * (max_size + 1) * sizeof(std::string));
    if (!want.empty()) {
      const size_t i = rng() % want.size();
      REQUIRE(f[i] == want[i]);
      REQUIRE(f.front() == want.front());
      REQUIRE(f.back() == want.back());
    }
  }
}

TEST_CASE("a VectorFifo that never empties stays bounded") {
  // A steady stream: 100 elements live, pushed and popped a million times.
  VectorFifo<int> f;
  for (int i = 0; i < 100; ++i) f.push_back(i);
  for (int i = 100; i < 1000100; ++i) {
    REQUIRE(f.front() == i - 100);
    f.pop_front();
    f.push_back(i);
  }
  CHECK(f.size() == 100);
  CHECK(f.heap_bytes() <= 4 * 100 * sizeof(int));
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
