// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The live status file (lib/format/live_status.h, Options::status_interval):
// its encoding, checked on every read, and what an open Db publishes: its
// groups' tasks in flight with their leases, rates, pending tasks and
// subscription lag, on the Db's clock, removed at a clean close.

#include "lib/format/live_status.h"

#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "hq/hq.h"
#include "leveldb/env.h"
#include "test/group_util.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::DbFixture;
using test::Impl;
using test::PutN;
using test::Storage;
using test::ValueOrDie;

LiveStatus Sample() {
  LiveStatus s;
  s.pid = 1234;
  s.written = absl::FromUnixMillis(1767225600123);
  s.interval = absl::Seconds(5);
  LiveGroupStatus g{.queue = "q", .name = "g"};
  g.stats.backlog = 7;
  g.stats.backlog_exact = false;
  g.stats.in_flight = 2;
  g.stats.oldest_in_flight = absl::Milliseconds(1500);
  g.stats.paced_topics = 3;
  g.claimed_per_s = 12.5;
  g.completed_per_s = 0.25;
  g.claimed_total = 40;
  g.completed_total = 38;
  g.pending.push_back({.partition = 1,
                       .priority = 2,
                       .topic = "site",
                       .id = MessageId{1767225600000, 3},
                       .attempt = 1,
                       .state = PendingTask::State::kInFlight,
                       .since = absl::FromUnixMillis(1767225600100),
                       .lease_deadline = absl::FromUnixMillis(1767225630100),
                       .consumer = "c"});
  g.pending.push_back({.id = MessageId{1767225600001, 0},
                       .attempt = 2,
                       .state = PendingTask::State::kRedelivery,
                       .since = absl::FromUnixMillis(1767225600200)});
  g.pending_complete = false;
  g.consumers.push_back(
      {.name = "c",
       .partitions = {0, 3},
       .lease_deadline = absl::FromUnixMillis(1767225610000)});
  g.consumers.push_back({.name = "d"});
  s.groups.push_back(g);
  s.subscriptions.push_back({.queue = "q",
                             .name = "s",
                             .lag = 9,
                             .lag_exact = true,
                             .delivered = 100,
                             .failed_attempts = 1,
                             .buffered = 4,
                             .listeners = 2,
                             .resident_lanes = 6,
                             .active_lanes = 5});
  return s;
}

TEST_CASE("live status: a publication reads back as written") {
  const LiveStatus s = Sample();
  const LiveStatus r = ValueOrDie(DecodeLiveStatus(EncodeLiveStatus(s)));
  CHECK(r.pid == s.pid);
  CHECK(r.written == s.written);
  CHECK(r.interval == s.interval);
  REQUIRE(r.groups.size() == 1);
  const LiveGroupStatus& g = r.groups[0];
  CHECK(g.stats.backlog == 7);
  CHECK_FALSE(g.stats.backlog_exact);
  CHECK(g.stats.in_flight == 2);
  CHECK(g.stats.oldest_in_flight == absl::Milliseconds(1500));
  CHECK(g.stats.paced_topics == 3);
  CHECK(g.claimed_per_s == 12.5);
  CHECK(g.completed_per_s == 0.25);
  CHECK(g.claimed_total == 40);
  CHECK(g.completed_total == 38);
  CHECK_FALSE(g.pending_complete);
  REQUIRE(g.pending.size() == 2);
  CHECK(g.pending[0].topic == "site");
  CHECK(g.pending[0].id == MessageId{1767225600000, 3});
  CHECK(g.pending[0].lease_deadline == absl::FromUnixMillis(1767225630100));
  CHECK(g.pending[0].consumer == "c");
  CHECK(g.pending[0].priority == 2);
  CHECK(g.pending[1].state == PendingTask::State::kRedelivery);
  CHECK(g.pending[1].lease_deadline == absl::InfinitePast());
  REQUIRE(g.consumers.size() == 2);
  CHECK(g.consumers[0].name == "c");
  CHECK(g.consumers[0].partitions == std::vector<uint32_t>{0, 3});
  CHECK(g.consumers[0].lease_deadline == absl::FromUnixMillis(1767225610000));
  CHECK(g.consumers[1].partitions.empty());
  REQUIRE(r.subscriptions.size() == 1);
  CHECK(r.subscriptions[0].lag == 9);
  CHECK(r.subscriptions[0].listeners == 2);
  CHECK(r.subscriptions[0].resident_lanes == 6);
  CHECK(r.subscriptions[0].active_lanes == 5);
  CHECK(r.FindGroup("q", "g") != nullptr);
  CHECK(r.FindGroup("q", "x") == nullptr);
  CHECK(r.FindSubscription("q", "s") != nullptr);
}

TEST_CASE("live status: damage is refused, never half read") {
  const std::string data = EncodeLiveStatus(Sample());
  // Every truncation.
  for (size_t n = 0; n < data.size(); ++n) {
    INFO("first " << n << " bytes");
    CHECK(absl::IsDataLoss(DecodeLiveStatus(data.substr(0, n)).status()));
  }
  // Every single flipped bit.
  for (size_t i = 0; i < data.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string bad = data;
      bad[i] = static_cast<char>(bad[i] ^ (1 << bit));
      INFO("byte " << i << " bit " << bit);
      CHECK(absl::IsDataLoss(DecodeLiveStatus(bad).status()));
    }
  }
  CHECK(absl::IsDataLoss(DecodeLiveStatus(data + "x").status()));
}

// Returns once the status timer has published `n` times (a liveness bound,
// not a timing test).
void AwaitTimedStatus(DbFixture& f, int64_t n) {
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (Impl(f.db())->TEST_TimedStatusCount() < n) {
    REQUIRE(absl::Now() < give_up);
    absl::SleepFor(absl::Milliseconds(1));
  }
}

// Reads the Db's status file once the janitor has written one at or after
// `since` (a liveness bound, not a timing test).
LiveStatus AwaitStatus(DbFixture& f, absl::Time since) {
  leveldb::Env* env =
      f.options().env ? f.options().env : leveldb::Env::Default();
  const std::string file = f.path() + "/" + kLiveStatusFile;
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  for (;;) {
    std::string data;
    if (leveldb::ReadFileToString(env, file, &data).ok()) {
      absl::StatusOr<LiveStatus> s = DecodeLiveStatus(data);
      REQUIRE(s.ok());  // Renamed into place whole: never half written.
      if (s->written >= since) return *s;
    }
    REQUIRE(absl::Now() < give_up);
    absl::SleepFor(absl::Milliseconds(1));
  }
}

// A subscription listener that takes every message and does nothing.
struct QuietListener : MessageListener {
  absl::Status OnMessage(const MessageView&) override {
    return absl::OkStatus();
  }
};

TEST_CASE("live status: an open Db publishes what it sees, then removes it") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  QuietListener listener;  // Outlives the Db.
  Options o = test::NoBackgroundSweeps();
  o.status_interval = absl::Seconds(1);
  DbFixture f(storage, o);
  leveldb::Env* env =
      f.options().env ? f.options().env : leveldb::Env::Default();
  const std::string file = f.path() + "/" + kLiveStatusFile;
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  PutN(q, 5);
  ConsumerGroup* g = ValueOrDie(q->Group("g", {.lease = absl::Minutes(10)}));
  std::vector<Task> held = ValueOrDie(g->Claim({.max = 2}));
  REQUIRE(held.size() == 2);
  ValueOrDie(q->Subscribe({.name = "s"}, &listener));

  // The timer's publications, each after every early one asked for before
  // the clock moved.
  f.clock().Advance(absl::Seconds(1));
  AwaitTimedStatus(f, 1);
  LiveStatus s = AwaitStatus(f, f.clock().Now());
  CHECK(s.pid == getpid());
  CHECK(s.interval == absl::Seconds(1));
  const LiveGroupStatus* live = s.FindGroup("q", "g");
  REQUIRE(live != nullptr);
  CHECK(live->stats.in_flight == 2);
  CHECK(live->stats.backlog == 3);
  CHECK(live->claimed_total == 2);
  CHECK(live->claimed_per_s == 2);  // Over the second since the load.
  REQUIRE(live->pending.size() == 2);
  CHECK(live->pending_complete);
  for (size_t i = 0; i < 2; ++i) {
    CHECK(live->pending[i].state == PendingTask::State::kInFlight);
    CHECK(live->pending[i].id == held[i].id);
    CHECK(live->pending[i].lease_deadline == held[i].lease_deadline);
  }
  REQUIRE(s.FindSubscription("q", "s") != nullptr);
  CHECK(s.FindSubscription("q", "s")->listeners == 1);

  // Two completed over the next interval: 2 per second.
  HQ_REQUIRE_OK(g->Complete(held));
  f.clock().Advance(absl::Seconds(1));
  AwaitTimedStatus(f, 2);
  s = AwaitStatus(f, f.clock().Now());
  live = s.FindGroup("q", "g");
  REQUIRE(live != nullptr);
  CHECK(live->stats.in_flight == 0);
  CHECK(live->completed_total == 2);
  CHECK(live->completed_per_s == 2);
  CHECK(live->claimed_per_s == 0);

  f.Close();
  CHECK_FALSE(env->FileExists(file));
}

// A subscription listener that refuses every message, counting its calls.
struct RefusingListener : MessageListener {
  std::atomic<int> calls{0};
  absl::Status OnMessage(const MessageView&) override {
    ++calls;
    return absl::UnavailableError("refused");
  }
};

// Issue 40: the live view shows a subscription's lanes in memory, as its
// Stats counts them: a lane whose listener failed stays in memory, out of
// the working set, until its retry.
TEST_CASE("issue40: the live status shows a subscription's lanes in memory") {
  RefusingListener listener;  // Outlives the Db.
  Options o = test::NoBackgroundSweeps();
  o.status_interval = absl::Seconds(1);
  DbFixture f(Storage::kMemory, o);
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("t", {.partitions = 2, .layout = Layout::kTopic}));
  for (const char* topic : {"a", "b", "c"}) {
    HQ_REQUIRE_OK(q->Put({.topic = topic, .payload = "x"}).status());
  }
  Subscription* sub = ValueOrDie(q->Subscribe(
      {.name = "f", .retry_base = absl::Hours(1), .retry_cap = absl::Hours(1)},
      &listener));
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (listener.calls.load() < 3) {
    REQUIRE(absl::Now() < give_up);
    absl::SleepFor(absl::Milliseconds(1));
  }
  const SubscriptionStats st = ValueOrDie(sub->Stats());
  CHECK(st.resident_lanes == 3);
  CHECK(st.active_lanes == 0);
  f.clock().Advance(absl::Seconds(1));
  AwaitTimedStatus(f, 1);
  const LiveStatus s = AwaitStatus(f, f.clock().Now());
  const LiveSubscriptionStatus* live = s.FindSubscription("t", "f");
  REQUIRE(live != nullptr);
  CHECK(live->resident_lanes == 3);
  CHECK(live->active_lanes == 0);
  CHECK(live->failed_attempts == 3);
}

// Issue 38: the first publication came only after status_interval, and
// its rates were zero however many tasks had been claimed.
TEST_CASE(
    "issue38: a status is published at once, its first rates since the load") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  QuietListener listener;  // Outlives the Db.
  Options o = test::NoBackgroundSweeps();
  o.status_interval = absl::Hours(1);  // The timer never fires here.
  DbFixture f(storage, o);
  leveldb::Env* env =
      f.options().env ? f.options().env : leveldb::Env::Default();
  const std::string file = f.path() + "/" + kLiveStatusFile;
  // Waits (with a deadline) for a publication that `ok` accepts.
  auto await = [&](auto ok) {
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    for (;;) {
      std::string data;
      if (leveldb::ReadFileToString(env, file, &data).ok()) {
        absl::StatusOr<LiveStatus> s = DecodeLiveStatus(data);
        REQUIRE(s.ok());
        if (ok(*s)) return *s;
      }
      REQUIRE(absl::Now() < give_up);
      absl::SleepFor(absl::Milliseconds(1));
    }
  };
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  PutN(q, 5);
  ConsumerGroup* g = ValueOrDie(q->Group("g", {.lease = absl::Minutes(10)}));
  // The load alone is published.
  LiveStatus s = await(
      [](const LiveStatus& s) { return s.FindGroup("q", "g") != nullptr; });
  CHECK(s.FindGroup("q", "g")->claimed_total == 0);
  CHECK(s.FindGroup("q", "g")->claimed_per_s == 0);

  // Two claimed two seconds after the load: one per second.
  f.clock().Advance(absl::Seconds(2));
  std::vector<Task> held = ValueOrDie(g->Claim({.max = 2}));
  REQUIRE(held.size() == 2);
  s = await([](const LiveStatus& s) {
    const LiveGroupStatus* live = s.FindGroup("q", "g");
    return live != nullptr && live->claimed_total == 2;
  });
  const LiveGroupStatus* live = s.FindGroup("q", "g");
  CHECK(live->stats.in_flight == 2);
  CHECK(live->pending.size() == 2);
  CHECK(live->claimed_per_s == 1);
  CHECK(live->completed_per_s == 0);

  // A subscription's start is published as well.
  ValueOrDie(q->Subscribe({.name = "s"}, &listener));
  s = await([](const LiveStatus& s) {
    return s.FindSubscription("q", "s") != nullptr;
  });
  CHECK(s.FindSubscription("q", "s")->listeners == 1);
  CHECK(Impl(f.db())->TEST_TimedStatusCount() == 0);
}

}  // namespace
}  // namespace hq
