// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Helpers of the consumer group tests.

#ifndef HQ_TEST_GROUP_UTIL_H_
#define HQ_TEST_GROUP_UTIL_H_

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "hq/hq.h"
#include "lib/consume/group_impl.h"
#include "lib/consume/lane_source.h"
#include "test/test_util.h"

namespace hq::test {

// Puts one message to each topic "site<i>", i in [from, to), payload the
// topic, a thousand a batch.
inline void PutSites(Queue* q, int from, int to) {
  for (int i = from; i < to; i += 1000) {
    // Message holds views of the names.
    std::vector<std::string> names;
    for (int j = i; j < std::min(to, i + 1000); ++j) {
      names.push_back(absl::StrCat("site", j));
    }
    std::vector<Message> batch;
    for (const std::string& n : names) {
      batch.push_back({.topic = n, .payload = n});
    }
    HQ_REQUIRE_OK(q->PutBatch(batch, nullptr));
  }
}

// Puts `n` messages with payloads "<prefix><i>" into the given partition.
// Lanes for a walk (issue 17): kWalkSingle topics of one message,
// kWalkLarge of one message larger than a walk keeps, and kWalkMulti of
// kWalkEach messages. Returns each topic's payloads, in put order.
inline constexpr int kWalkSingle = 200, kWalkLarge = 10, kWalkMulti = 10,
                     kWalkEach = 3;
inline std::map<std::string, std::vector<std::string>> PutWalkLanes(Queue* q) {
  std::map<std::string, std::vector<std::string>> put;
  auto put_one = [&](const std::string& topic, std::string payload) {
    HQ_REQUIRE_OK(q->Put({.topic = topic, .payload = payload}).status());
    put[topic].push_back(std::move(payload));
  };
  for (int t = 0; t < kWalkSingle; ++t) {
    put_one(absl::StrCat("s", t), absl::StrCat("s", t, "/0"));
  }
  for (int t = 0; t < kWalkLarge; ++t) {
    put_one(absl::StrCat("l", t),
            absl::StrCat("l", t, "/0.",
                         std::string(LaneSource::kMaxOnlyValue, 'x')));
  }
  for (int k = 0; k < kWalkEach; ++k) {
    for (int t = 0; t < kWalkMulti; ++t) {
      put_one(absl::StrCat("m", t), absl::StrCat("m", t, "/", k));
    }
  }
  return put;
}

inline std::vector<PutResult> PutN(Queue* q, int n,
                                   const std::string& prefix = "m",
                                   std::optional<uint32_t> partition = 0,
                                   int priority = 0,
                                   const std::string& topic = "") {
  std::vector<PutResult> out;
  for (int i = 0; i < n; ++i) {
    const std::string payload = absl::StrCat(prefix, i);
    out.push_back(ValueOrDie(q->Put({.topic = topic,
                                     .payload = payload,
                                     .partition = partition,
                                     .priority = priority})));
  }
  return out;
}

// Claims everything `g` hands out now, `max` a call, completing each
// claim; returns the tasks.
inline std::vector<Task> Drain(ConsumerGroup* g, uint32_t max = 7) {
  std::vector<Task> all;
  for (;;) {
    std::vector<Task> tasks = ValueOrDie(g->Claim({.max = max}));
    if (tasks.empty()) return all;
    HQ_REQUIRE_OK(g->Complete(tasks));
    all.insert(all.end(), tasks.begin(), tasks.end());
  }
}

inline std::vector<std::string> Payloads(const std::vector<Task>& tasks) {
  std::vector<std::string> out;
  for (const Task& t : tasks) out.push_back(t.payload);
  return out;
}

// Runs Claim(options) on a thread; Wait() returns its result.
class BackgroundClaim {
 public:
  BackgroundClaim(ConsumerGroup* g, ClaimOptions o)
      : thread_([this, g, o] {
          result_ = g->Claim(o);
          done_.store(true);
        }) {}
  ~BackgroundClaim() {
    if (thread_.joinable()) thread_.join();
  }
  // A claim that never returns would hang the test: after 60 s (a liveness
  // bound, not a timing test) the process aborts, naming the cause.
  absl::StatusOr<std::vector<Task>> Wait() {
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    while (!done_.load() && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    if (!done_.load()) {
      std::fprintf(stderr, "a waiting claim was not woken within 60 s\n");
      std::abort();
    }
    thread_.join();
    return result_;
  }

 private:
  absl::StatusOr<std::vector<Task>> result_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Waits until `n` claims of `g` sleep (a liveness bound, not a timing test).
inline void AwaitWaiters(ConsumerGroup* g, int n) {
  auto* impl = static_cast<GroupImpl*>(g);
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (impl->TEST_Sleepers() < n && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  // All asleep once (each had looked for tasks, an ordered one joined its
  // consumer), and no other claim waits.
  REQUIRE(impl->TEST_Waiters() == n);
}

}  // namespace hq::test

#endif  // HQ_TEST_GROUP_UTIL_H_
