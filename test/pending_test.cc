// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// ConsumerGroup::ListPending (issue 19, part 3): the pending tasks one by
// one, checked against Stats() and against the tasks actually held, in
// both layouts, paged through `after`, across a lease expiry and a
// restart, and for ordered groups.

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hq/hq.h"
#include "test/group_util.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::DbFixture;
using test::NoBackgroundSweeps;
using test::Storage;
using test::ValueOrDie;
using State = PendingTask::State;

std::vector<PendingTask> ListAll(ConsumerGroup* g) {
  return ValueOrDie(g->ListPending(10000));
}

// How many of `tasks` are in `state`.
uint64_t Count(const std::vector<PendingTask>& tasks, State state) {
  return static_cast<uint64_t>(
      std::count_if(tasks.begin(), tasks.end(),
                    [&](const PendingTask& t) { return t.state == state; }));
}

// The listing agrees with Stats() on every state.
void CheckAgainstStats(ConsumerGroup* g) {
  const std::vector<PendingTask> all = ListAll(g);
  const GroupStats st = ValueOrDie(g->Stats());
  CHECK(Count(all, State::kInFlight) == st.in_flight);
  CHECK(Count(all, State::kRedelivery) == st.redelivery);
  CHECK(Count(all, State::kDelayed) == st.delayed);
}

// Puts 24 messages on 6 topics over 3 partitions, 2 priorities; returns
// each one's topic by payload.
std::map<std::string, std::string> PutWork(Queue* q) {
  std::map<std::string, std::string> topic_of;
  for (int i = 0; i < 24; ++i) {
    const std::string topic = absl::StrCat("site", i % 6);
    const std::string payload = absl::StrCat("m", i);
    HQ_REQUIRE_OK(q->Put({.topic = topic,
                          .payload = payload,
                          .partition = static_cast<uint32_t>(i % 3),
                          .priority = i % 2})
                      .status());
    topic_of[payload] = topic;
  }
  return topic_of;
}

TEST_CASE("the pending listing is what Stats counts and what is held") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 3, .priorities = 2, .layout = layout}));
  PutWork(q);
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  std::vector<Task> held = ValueOrDie(g->Claim({.max = 8}));
  REQUIRE(held.size() == 8);
  // Two go back: one due now, one in an hour.
  HQ_REQUIRE_OK(g->Release(held[0], absl::ZeroDuration()));
  HQ_REQUIRE_OK(g->Release(held[1], absl::Hours(1)));
  // A delayed message, read past by the next claim.
  HQ_REQUIRE_OK(q->Put({.topic = "later",
                        .payload = "d",
                        .partition = 0u,
                        .delay = absl::Hours(2)})
                    .status());

  const std::vector<PendingTask> all = ListAll(g);
  CHECK(Count(all, State::kInFlight) == 6);
  CHECK(Count(all, State::kRedelivery) == 2);
  CheckAgainstStats(g);
  // Each task held is listed as in flight, with its lease and topic.
  for (size_t i = 2; i < held.size(); ++i) {
    const Task& t = held[i];
    auto it = std::find_if(all.begin(), all.end(), [&](const PendingTask& p) {
      return p.partition == t.partition && p.id == t.id;
    });
    REQUIRE(it != all.end());
    CHECK(it->state == State::kInFlight);
    CHECK(it->priority == t.priority);
    CHECK(it->topic == t.topic);
    CHECK(it->attempt == t.attempt);
    CHECK(it->lease_deadline == t.lease_deadline);
    CHECK(it->consumer.empty());
  }
  for (int i = 0; i < 2; ++i) {
    auto it = std::find_if(all.begin(), all.end(), [&](const PendingTask& p) {
      return p.partition == held[i].partition && p.id == held[i].id;
    });
    REQUIRE(it != all.end());
    CHECK(it->state == State::kRedelivery);
    CHECK(it->topic == held[i].topic);
    CHECK(it->lease_deadline == absl::InfinitePast());
  }
  // In key order: partition, priority from the highest, topic, id.
  for (size_t i = 1; i < all.size(); ++i) {
    const PendingTask& a = all[i - 1];
    const PendingTask& b = all[i];
    const bool ordered =
        layout == Layout::kTopic
            ? std::make_tuple(a.partition, -a.priority, a.topic, a.id) <
                  std::make_tuple(b.partition, -b.priority, b.topic, b.id)
            : std::make_tuple(a.partition, -a.priority, a.id) <
                  std::make_tuple(b.partition, -b.priority, b.id);
    CHECK(ordered);
  }

  // Claim the rest: the delayed message is read past, and listed.
  while (!ValueOrDie(g->Claim({.max = 100})).empty()) {
  }
  const std::vector<PendingTask> later = ListAll(g);
  CHECK(Count(later, State::kDelayed) == 1);
  for (const PendingTask& p : later) {
    if (p.state != State::kDelayed) continue;
    CHECK(p.topic == "later");
    CHECK(p.attempt == 0);
    CHECK(p.since > f.clock().Now() + absl::Minutes(119));
  }
  CheckAgainstStats(g);
}

TEST_CASE("the pending listing pages through `after`") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 3, .priorities = 2, .layout = layout}));
  PutWork(q);
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  REQUIRE(ValueOrDie(g->Claim({.max = 20})).size() == 20);
  const std::vector<PendingTask> all = ListAll(g);
  REQUIRE(all.size() == 20);
  std::vector<PendingTask> paged;
  const PendingTask* after = nullptr;
  for (;;) {
    std::vector<PendingTask> page = ValueOrDie(g->ListPending(3, after));
    CHECK(page.size() <= 3);
    if (page.empty()) break;
    paged.insert(paged.end(), page.begin(), page.end());
    after = &paged.back();
  }
  REQUIRE(paged.size() == all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(paged[i].partition == all[i].partition);
    CHECK(paged[i].id == all[i].id);
    CHECK(paged[i].topic == all[i].topic);
  }
}

TEST_CASE("expired leases and a restart turn in-flight tasks to redelivery") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 3, .priorities = 2, .layout = layout}));
  PutWork(q);
  ConsumerGroup* g = ValueOrDie(q->Group("g", {.lease = absl::Seconds(10)}));
  const std::vector<Task> first = ValueOrDie(g->Claim({.max = 4}));
  REQUIRE(first.size() == 4);
  f.clock().Advance(absl::Seconds(11));
  std::vector<PendingTask> all = ListAll(g);
  CHECK(Count(all, State::kInFlight) == 0);
  CHECK(Count(all, State::kRedelivery) == 4);
  for (const PendingTask& p : all) CHECK(p.attempt == 1);
  CheckAgainstStats(g);

  // The expired ones wait out their backoff; 6 new go out.
  const std::vector<Task> second = ValueOrDie(g->Claim({.max = 6}));
  REQUIRE(second.size() == 6);
  CHECK(Count(ListAll(g), State::kInFlight) == 6);
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  g = ValueOrDie(q->Group("g"));
  all = ListAll(g);
  CHECK(Count(all, State::kInFlight) == 0);
  CHECK(Count(all, State::kRedelivery) == 10);
  CheckAgainstStats(g);
  std::set<std::pair<uint32_t, MessageId>> want, got;
  for (const Task& t : first) want.emplace(t.partition, t.id);
  for (const Task& t : second) want.emplace(t.partition, t.id);
  for (const PendingTask& p : all) got.emplace(p.partition, p.id);
  CHECK(got == want);
}

TEST_CASE("an ordered group's pending tasks name their consumer") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  HQ_REQUIRE_OK(q->Put({.payload = "a", .partition = 0u}).status());
  HQ_REQUIRE_OK(q->Put({.payload = "b", .partition = 1u}).status());
  ConsumerGroup* g = ValueOrDie(q->Group("g", {.ordered = true}));
  std::vector<Task> held = ValueOrDie(g->Claim({.max = 1, .consumer = "w1"}));
  REQUIRE(held.size() == 1);
  const std::vector<PendingTask> all = ListAll(g);
  REQUIRE(all.size() == 1);
  CHECK(all[0].consumer == "w1");
  CHECK(all[0].partition == held[0].partition);
}

TEST_CASE("ListPending refuses bad arguments") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  CHECK(g->ListPending(0).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(g->ListPending(10001).status().code() ==
        absl::StatusCode::kInvalidArgument);
  PendingTask after{.partition = 2};
  CHECK(g->ListPending(10, &after).status().code() ==
        absl::StatusCode::kInvalidArgument);
  after = {.priority = 1};
  CHECK(g->ListPending(10, &after).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(ValueOrDie(g->ListPending(10)).empty());
}

}  // namespace
}  // namespace hq
