// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// LaneNotes (lib/consume/lane_notes.h), on its own: what the write path
// notes is handed to the consumer once, parsed, and nothing noted is lost
// while writers note and a consumer takes at the same time.

#include "lib/consume/lane_notes.h"

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catch2/catch.hpp"
#include "hq/layout.h"
#include "lib/format/layout_codec.h"

namespace hq {
namespace {

// The lane prefix of a message of queue 7 in `layout`, as the write path
// makes it.
std::string Lane(Layout layout, uint32_t partition, int priority,
                 std::string_view topic) {
  std::string prefix;
  LayoutCodec::For(layout).AppendLanePrefix(&prefix, 7, partition, priority,
                                            topic);
  return prefix;
}

// A NotedLane that owns its strings.
struct Taken {
  std::string prefix;
  uint32_t partition;
  int priority;
  std::string topic;
};

std::vector<Taken> TakeAll(LaneNotes* notes) {
  std::vector<Taken> out;
  REQUIRE(notes
              ->Take([&](const NotedLane& n) {
                out.push_back({std::string(n.prefix), n.partition, n.priority,
                               std::string(n.topic)});
                return absl::OkStatus();
              })
              .ok());
  return out;
}

TEST_CASE("a lane noted twice is taken once, with what it names") {
  const bool topic_layout = GENERATE(false, true);
  const Layout layout = topic_layout ? Layout::kTopic : Layout::kTime;
  LaneNotes notes(topic_layout);
  const std::string a = Lane(layout, 3, 2, "example.com");
  notes.Note(a);
  notes.Note(a);
  const std::vector<Taken> taken = TakeAll(&notes);
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].prefix == a);
  CHECK(taken[0].partition == 3);
  CHECK(taken[0].priority == 2);
  CHECK(taken[0].topic == (topic_layout ? "example.com" : ""));
  // Taken means forgotten.
  CHECK(TakeAll(&notes).empty());
}

TEST_CASE("a prefix that is not a lane of the layout is skipped") {
  LaneNotes notes(/*has_topic=*/false);
  notes.Note("x");                              // Too short.
  notes.Note(Lane(Layout::kTopic, 1, 0, "t"));  // A topic lane.
  notes.Note(Lane(Layout::kTime, 1, 0, ""));
  const std::vector<Taken> taken = TakeAll(&notes);
  REQUIRE(taken.size() == 1);
  CHECK(taken[0].partition == 1);
}

TEST_CASE("Take stops at the consumer's first error and returns it") {
  LaneNotes notes(/*has_topic=*/true);
  for (int i = 0; i < 5; ++i)
    notes.Note(Lane(Layout::kTopic, 0, 0, "t" + std::to_string(i)));
  int calls = 0;
  const absl::Status s = notes.Take([&](const NotedLane&) {
    ++calls;
    return absl::DataLossError("damaged");
  });
  CHECK(s.code() == absl::StatusCode::kDataLoss);
  CHECK(calls == 1);
}

TEST_CASE("nothing noted is lost while writers note and a consumer takes") {
  LaneNotes notes(/*has_topic=*/true);
  constexpr int kWriters = 4, kLanes = 2000;
  std::atomic<int> done{0};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      for (int i = 0; i < kLanes; ++i) {
        notes.Note(Lane(Layout::kTopic, static_cast<uint32_t>(w), 0,
                        "t" + std::to_string(i)));
      }
      ++done;
    });
  }
  std::set<std::string> seen;
  auto take = [&] {
    REQUIRE(notes
                .Take([&](const NotedLane& n) {
                  seen.emplace(n.prefix);
                  return absl::OkStatus();
                })
                .ok());
  };
  while (done.load() < kWriters) take();
  for (std::thread& t : writers) t.join();
  take();
  CHECK(seen.size() == size_t{kWriters} * kLanes);
}

}  // namespace
}  // namespace hq
