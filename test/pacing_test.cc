// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Per-topic pacing of consumer groups (hq::TopicPacing, GroupOptions::
// pacing, ConsumerGroup::SetTopicPacing): the in-flight limit and the
// interval per topic, other topics served meanwhile, topics' own pacing
// stored durably, and pacing with priorities, redelivery, dead letters,
// ordered groups, restarts, waiting claims and competing consumers. On the
// simulated clock.

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hq/hq.h"
#include "lib/consume/group_impl.h"
#include "lib/format/format.h"
#include "test/group_util.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::AwaitWaiters;
using test::BackgroundClaim;
using test::DbFixture;
using test::NoBackgroundSweeps;
using test::Payloads;
using test::Storage;
using test::ValueOrDie;

constexpr absl::Duration kLease = absl::Hours(1);

// Puts `n` messages "<topic><i>" of `topic`.
void PutTopic(Queue* q, const std::string& topic, int n, int priority = 0) {
  for (int i = 0; i < n; ++i) {
    ValueOrDie(q->Put({.topic = topic,
                       .payload = absl::StrCat(topic, i),
                       .partition = 0,
                       .priority = priority}));
  }
}

std::vector<Task> Claim(ConsumerGroup* g, uint32_t max = 100,
                        const std::string& consumer = "c") {
  return ValueOrDie(g->Claim({.max = max, .consumer = consumer}));
}

void Complete(ConsumerGroup* g, const std::vector<Task>& tasks) {
  HQ_REQUIRE_OK(g->Complete(tasks));
}

std::multiset<std::string> Topics(const std::vector<Task>& tasks) {
  std::multiset<std::string> out;
  for (const Task& t : tasks) out.insert(t.topic);
  return out;
}

GroupOptions Paced(TopicPacing pacing) {
  GroupOptions o;
  o.pacing = pacing;
  o.lease = kLease;
  o.backoff_base = absl::ZeroDuration();
  o.backoff_cap = absl::ZeroDuration();
  o.backoff_jitter = 0;
  return o;
}

TEST_CASE("pacing: at most max_in_flight tasks of a topic are in flight") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const uint32_t limit = GENERATE(1u, 2u);
  CAPTURE(layout, limit);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = layout}));
  for (const char* topic : {"a", "b", "c"}) PutTopic(q, topic, 4);
  ConsumerGroup* g = ValueOrDie(q->Group("g", Paced({.max_in_flight = limit})));

  std::vector<Task> first = Claim(g);
  CHECK(first.size() == 3 * limit);
  for (const char* topic : {"a", "b", "c"}) {
    CHECK(Topics(first).count(topic) == limit);
  }
  CHECK(Claim(g).empty());  // Every topic at its limit.
  CHECK(ValueOrDie(g->Stats()).paced_topics == 3);

  // Completing one of a's frees one place of a's only.
  Complete(g, {first[0]});
  std::vector<Task> next = Claim(g);
  REQUIRE(next.size() == 1);
  CHECK(next[0].topic == first[0].topic);
  // A released task comes back within the limit: it takes its own place.
  const Task& b = *std::find_if(first.begin(), first.end(),
                                [](const Task& t) { return t.topic == "b"; });
  HQ_REQUIRE_OK(g->Release(b, absl::ZeroDuration()));
  std::vector<Task> again = Claim(g);
  REQUIRE(again.size() == 1);
  CHECK(again[0].id == b.id);
  CHECK(again[0].attempt == 2);
  CHECK(Claim(g).empty());
}

TEST_CASE("pacing: a topic's hand-outs are at least the interval apart") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  CAPTURE(layout);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = layout}));
  for (const char* topic : {"a", "b"}) PutTopic(q, topic, 3);
  ConsumerGroup* g =
      ValueOrDie(q->Group("g", Paced({.interval = absl::Seconds(10)})));

  std::vector<Task> t = Claim(g);
  CHECK(Topics(t) == std::multiset<std::string>{"a", "b"});
  Complete(g, t);
  CHECK(Claim(g).empty());  // Done, but within the interval.
  // Other topics flow meanwhile.
  PutTopic(q, "c", 2);
  CHECK(Topics(Claim(g)) == std::multiset<std::string>{"c"});
  f.clock().Advance(absl::Seconds(10) - absl::Milliseconds(1));
  CHECK(Claim(g).empty());
  f.clock().Advance(absl::Milliseconds(1));
  std::vector<Task> second = Claim(g);
  for (const Task& x : second) CHECK(x.attempt == 1);
  std::vector<std::string> payloads = Payloads(second);
  std::sort(payloads.begin(), payloads.end());
  CHECK(payloads == std::vector<std::string>{"a1", "b1", "c1"});
}

TEST_CASE("pacing: a topic's own pacing is stored and read back") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  DbFixture f(storage, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = Layout::kTopic}));
  for (const char* topic : {"slow", "fast"}) PutTopic(q, topic, 3);
  const GroupOptions o = Paced({.interval = absl::Seconds(1)});
  ConsumerGroup* g = ValueOrDie(q->Group("g", o));
  CHECK(ValueOrDie(g->GetTopicPacing("slow")) == std::nullopt);
  const TopicPacing slow{.max_in_flight = 1, .interval = absl::Seconds(60)};
  HQ_REQUIRE_OK(g->SetTopicPacing("slow", slow));
  CHECK(ValueOrDie(g->GetTopicPacing("slow")) == slow);

  Complete(g, Claim(g));  // slow0 and fast0.
  f.clock().Advance(absl::Seconds(1));
  CHECK(Payloads(Claim(g)) == std::vector<std::string>{"fast1"});
  f.clock().Advance(absl::Seconds(59));
  CHECK(Topics(Claim(g)) == std::multiset<std::string>{"fast", "slow"});

  // It outlives the process; cleared, the topic follows the default.
  f.Reopen();
  g = ValueOrDie(ValueOrDie(f.db()->OpenQueue("q"))->Group("g", o));
  CHECK(ValueOrDie(g->GetTopicPacing("slow")) == slow);
  CHECK(ValueOrDie(g->GetTopicPacing("fast")) == std::nullopt);
  HQ_REQUIRE_OK(g->ClearTopicPacing("slow"));
  HQ_REQUIRE_OK(g->ClearTopicPacing("never-set"));
  CHECK(ValueOrDie(g->GetTopicPacing("slow")) == std::nullopt);
  f.Reopen();
  g = ValueOrDie(ValueOrDie(f.db()->OpenQueue("q"))->Group("g", o));
  CHECK(ValueOrDie(g->GetTopicPacing("slow")) == std::nullopt);
  const VerifyReport report = ValueOrDie(f.db()->Verify());
  for (const VerifyProblem& p : report.problems) FAIL_CHECK(p.description);
  CHECK(report.ok());
}

TEST_CASE("issue38: ListTopicPacing pages the topics' own pacing") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  DbFixture f(storage, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  ConsumerGroup* other = ValueOrDie(q->Group("other"));
  HQ_REQUIRE_OK(other->SetTopicPacing("z", {.max_in_flight = 9}));
  CHECK(ValueOrDie(g->ListTopicPacing(10)).empty());
  // Topics with bytes a prefix shares: "a", "a\0", "ab".
  const std::vector<std::string> topics = {"", "a", std::string("a\0", 2), "ab",
                                           "b"};
  for (size_t i = 0; i < topics.size(); ++i) {
    HQ_REQUIRE_OK(
        g->SetTopicPacing(topics[i], {.max_in_flight = static_cast<uint32_t>(i),
                                      .interval = absl::Milliseconds(10 * i)}));
  }
  std::vector<std::string> listed;
  const std::string* after = nullptr;
  std::vector<std::pair<std::string, TopicPacing>> page;
  for (int n = 0;; ++n) {
    REQUIRE(n < 10);
    page = ValueOrDie(g->ListTopicPacing(2, after));
    if (page.empty()) break;
    CHECK(page.size() <= 2);
    for (const auto& [topic, p] : page) {
      listed.push_back(topic);
      const size_t i =
          std::find(topics.begin(), topics.end(), topic) - topics.begin();
      REQUIRE(i < topics.size());
      CHECK(p.max_in_flight == i);
      CHECK(p.interval == absl::Milliseconds(10 * i));
    }
    after = &page.back().first;
  }
  CHECK(listed == topics);  // Byte order, none twice, none missing.
  HQ_REQUIRE_OK(g->ClearTopicPacing("a"));
  CHECK(ValueOrDie(g->ListTopicPacing(10)).size() == topics.size() - 1);
  CHECK(absl::IsInvalidArgument(g->ListTopicPacing(0).status()));
  CHECK(absl::IsInvalidArgument(g->ListTopicPacing(10001).status()));
}

TEST_CASE("pacing: priorities hold within a topic") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  CAPTURE(layout);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q =
      ValueOrDie(f.db()->CreateQueue("q", {.priorities = 3, .layout = layout}));
  ValueOrDie(q->Put({.topic = "a", .payload = "low", .priority = 0}));
  ValueOrDie(q->Put({.topic = "a", .payload = "high", .priority = 2}));
  ValueOrDie(q->Put({.topic = "a", .payload = "mid", .priority = 1}));
  ConsumerGroup* g = ValueOrDie(q->Group("g", Paced({.max_in_flight = 1})));
  std::vector<std::string> order;
  for (int i = 0; i < 3; ++i) {
    std::vector<Task> t = Claim(g);
    REQUIRE(t.size() == 1);
    order.push_back(t[0].payload);
    Complete(g, t);
  }
  CHECK(order == std::vector<std::string>{"high", "mid", "low"});
}

TEST_CASE("pacing: redeliveries wait for their topic; dead letters free it") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  CAPTURE(layout);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = layout}));
  PutTopic(q, "a", 2);
  GroupOptions o = Paced({.max_in_flight = 1, .interval = absl::Seconds(5)});
  o.lease = absl::Seconds(1);
  o.max_attempts = 2;
  ConsumerGroup* g = ValueOrDie(q->Group("g", o));
  CHECK(Payloads(Claim(g)) == std::vector<std::string>{"a0"});
  f.clock().Advance(absl::Seconds(1));  // a0's lease expires: due again.
  CHECK(Claim(g).empty());              // But a is paced until 5 s.
  CHECK(ValueOrDie(g->Stats()).redelivery == 1);
  f.clock().Advance(absl::Seconds(4));
  std::vector<Task> again = Claim(g);
  REQUIRE(again.size() == 1);
  CHECK(again[0].payload == "a0");
  CHECK(again[0].attempt == 2);
  // Its last attempt expires: dead-lettered, and a's place is free.
  f.clock().Advance(absl::Seconds(1));
  CHECK(Claim(g).empty());  // Within the interval still.
  f.clock().Advance(absl::Seconds(4));
  CHECK(Payloads(Claim(g)) == std::vector<std::string>{"a1"});
  CHECK(ValueOrDie(g->Stats()).dead_letters == 1);
}

TEST_CASE("pacing: a topic not due holds back an ordered lane") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  CAPTURE(layout);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = layout}));
  for (const char* p : {"a0", "b0", "a1", "b1"}) {
    ValueOrDie(q->Put({.topic = std::string(1, p[0]), .payload = p}));
  }
  GroupOptions o = Paced({.interval = absl::Seconds(10)});
  o.ordered = true;
  ConsumerGroup* g = ValueOrDie(q->Group("g", o));
  std::vector<std::string> got;
  auto take = [&] {
    std::vector<Task> t = Claim(g, 1);
    for (const Task& x : t) got.push_back(x.payload);
    Complete(g, t);
    return t.size();
  };
  while (take() > 0) {
  }
  // Time layout: one lane, where a1 is not due and b1 comes after it.
  // Topic layout: each topic's lane waits for its own interval.
  CHECK(got == std::vector<std::string>{"a0", "b0"});
  f.clock().Advance(absl::Seconds(10));
  while (take() > 0) {
  }
  CHECK(got == std::vector<std::string>{"a0", "b0", "a1", "b1"});
}

TEST_CASE("pacing: intervals hold across a restart") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = Layout::kTopic}));
  for (const char* topic : {"a", "b"}) PutTopic(q, topic, 2);
  const GroupOptions o = Paced({.interval = absl::Seconds(30)});
  ConsumerGroup* g = ValueOrDie(q->Group("g", o));
  std::vector<Task> t = ValueOrDie(g->Claim({.max = 1}));
  REQUIRE(t.size() == 1);
  const std::string first = t[0].topic;
  Complete(g, t);
  f.clock().Advance(absl::Seconds(10));
  f.Reopen();
  g = ValueOrDie(ValueOrDie(f.db()->OpenQueue("q"))->Group("g", o));
  // Which topic had the last hand-out is not stored: every topic waits
  // out the interval from the group's latest hand-out.
  CHECK(Claim(g).empty());
  f.clock().Advance(absl::Seconds(20) - absl::Milliseconds(1));
  CHECK(Claim(g).empty());
  f.clock().Advance(absl::Milliseconds(1));
  std::vector<Task> after = Claim(g);
  CHECK(Topics(after) == std::multiset<std::string>{"a", "b"});
  // Without pacing, nothing waits.
  f.Reopen();
  g = ValueOrDie(ValueOrDie(f.db()->OpenQueue("q"))->Group("g", Paced({})));
  // a's and b's interrupted by the reopen, and the one left.
  CHECK(Claim(g).size() == 3);
}

TEST_CASE("pacing: a time layout claim reads past at most 1000 held back") {
  const int ahead = GENERATE(500, 1200);
  CAPTURE(ahead);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = Layout::kTime}));
  PutTopic(q, "a", ahead + 1);
  PutTopic(q, "b", 1);
  ConsumerGroup* g = ValueOrDie(q->Group("g", Paced({.max_in_flight = 1})));
  // a0 goes; then a's messages are read past (a is at its limit), up to
  // 1000 of them: b0 is found behind 500, not behind 1200.
  std::vector<Task> t = Claim(g, 10);
  if (ahead < 1000) {
    CHECK(Payloads(t) == std::vector<std::string>{"a0", "b0"});
  } else {
    CHECK(Payloads(t) == std::vector<std::string>{"a0"});
  }
}

TEST_CASE("pacing: a waiting claim wakes when a paced topic comes due") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = Layout::kTopic}));
  PutTopic(q, "a", 3);
  ConsumerGroup* g = ValueOrDie(q->Group(
      "g", Paced({.max_in_flight = 1, .interval = absl::Seconds(10)})));
  std::vector<Task> a0 = Claim(g);
  REQUIRE(a0.size() == 1);
  {
    // In flight and within the interval: the interval's end wakes it, but
    // the limit holds it until a0 completes.
    BackgroundClaim waiting(g, {.wait = absl::Hours(1)});
    AwaitWaiters(g, 1);
    f.clock().Advance(absl::Seconds(10));
    AwaitWaiters(g, 1);
    Complete(g, a0);
    std::vector<Task> a1 = ValueOrDie(waiting.Wait());
    CHECK(Payloads(a1) == std::vector<std::string>{"a1"});
    Complete(g, a1);
  }
  BackgroundClaim waiting(g, {.wait = absl::Hours(1)});
  AwaitWaiters(g, 1);
  f.clock().Advance(absl::Seconds(10));
  CHECK(Payloads(ValueOrDie(waiting.Wait())) == std::vector<std::string>{"a2"});
}

TEST_CASE("pacing: a paged group does not keep paced lanes in memory") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = Layout::kTopic}));
  for (int i = 0; i < 20; ++i) PutTopic(q, absl::StrCat("t", i), 3);
  GroupOptions o = Paced({.interval = absl::Seconds(10)});
  o.max_active_lanes = 2;
  ConsumerGroup* g = ValueOrDie(q->Group("g", o));
  auto* impl = static_cast<GroupImpl*>(g);
  // Every topic once, however small the working set.
  std::vector<Task> t = Claim(g);
  CHECK(t.size() == 20);
  CHECK(Topics(t).size() == 20);
  Complete(g, t);
  CHECK(Claim(g).empty());
  // The working set: 2, or the capped runs' cap (test/catch_main.cc).
  const char* cap_env = std::getenv("HQ_TEST_MAX_ACTIVE_LANES");
  const size_t cap = cap_env != nullptr ? std::strtoul(cap_env, nullptr, 10)
                                        : o.max_active_lanes;
  CHECK(impl->TEST_ActiveLanes() <= cap);
  CHECK(impl->TEST_ResidentLanes() <= cap);
  f.clock().Advance(absl::Seconds(10));
  CHECK(Claim(g).size() == 20);
}

TEST_CASE(
    "pacing: state is kept only for topics in flight or within interval") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  CAPTURE(layout);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.ttl = absl::Seconds(10), .layout = layout}));
  ConsumerGroup* g = ValueOrDie(q->Group("g", Paced({.max_in_flight = 1})));
  // Topics looked at but not handed out leave nothing: expired ones...
  for (int i = 0; i < 50; ++i) PutTopic(q, absl::StrCat("old", i), 1);
  f.clock().Advance(absl::Seconds(20));
  CHECK(Claim(g).empty());
  CHECK(ValueOrDie(g->Stats()).paced_topics == 0);
  // ... and delayed ones.
  for (int i = 0; i < 5; ++i) {
    ValueOrDie(q->Put({.topic = absl::StrCat("later", i),
                       .payload = "x",
                       .delay = absl::Seconds(5)}));
  }
  CHECK(Claim(g).empty());
  CHECK(ValueOrDie(g->Stats()).paced_topics == 0);
  // Handed out: kept while in flight, forgotten when done, also if the
  // clock stepped back meanwhile.
  f.clock().Advance(absl::Seconds(5));
  std::vector<Task> t = Claim(g);
  CHECK(t.size() == 5);
  CHECK(ValueOrDie(g->Stats()).paced_topics == 5);
  f.clock().Advance(-absl::Seconds(1));
  Complete(g, t);
  CHECK(ValueOrDie(g->Stats()).paced_topics == 0);
}

TEST_CASE("pacing: competing consumers never exceed the limit or the gap") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  CAPTURE(layout);
  constexpr int kTopics = 8, kPerTopic = 12, kThreads = 4;
  constexpr uint32_t kLimit = 2;
  const absl::Duration interval = absl::Milliseconds(50);
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q =
      ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2, .layout = layout}));
  for (int i = 0; i < kTopics; ++i) {
    for (int j = 0; j < kPerTopic; ++j) {
      ValueOrDie(q->Put(
          {.topic = absl::StrCat("t", i), .payload = absl::StrCat(i, "-", j)}));
    }
  }
  ConsumerGroup* g = ValueOrDie(
      q->Group("g", Paced({.max_in_flight = kLimit, .interval = interval})));
  std::mutex mu;
  std::map<std::string, int> in_flight;  // As the consumers hold them.
  std::map<std::string, std::vector<absl::Time>> claimed_at;
  int most = 0, done = 0;
  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < kThreads; ++w) {
    workers.emplace_back([&] {
      while (!stop.load()) {
        absl::StatusOr<std::vector<Task>> t = g->Claim({.max = 3});
        if (!t.ok()) return;
        {
          std::lock_guard<std::mutex> l(mu);
          for (const Task& x : *t) {
            most = std::max(most, ++in_flight[x.topic]);
            claimed_at[x.topic].push_back(x.lease_deadline - kLease);
          }
        }
        std::this_thread::yield();
        {
          // Counted out before Complete: the count is never above the
          // group's own.
          std::lock_guard<std::mutex> l(mu);
          for (const Task& x : *t) --in_flight[x.topic];
          done += static_cast<int>(t->size());
        }
        if (!g->Complete(*t).ok()) return;
      }
    });
  }
  // The clock moves in steps while the consumers work.
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  for (;;) {
    {
      std::lock_guard<std::mutex> l(mu);
      if (done == kTopics * kPerTopic) break;
    }
    if (absl::Now() > give_up) break;
    f.clock().Advance(absl::Milliseconds(7));
    absl::SleepFor(absl::Microseconds(200));
  }
  stop.store(true);
  for (std::thread& t : workers) t.join();
  CHECK(done == kTopics * kPerTopic);
  CHECK(most <= static_cast<int>(kLimit));
  for (auto& [topic, times] : claimed_at) {
    std::sort(times.begin(), times.end());
    for (size_t i = 1; i < times.size(); ++i) {
      INFO(topic << " hand-out " << i);
      CHECK(times[i] - times[i - 1] >= interval);
    }
  }
}

TEST_CASE("pacing: bad input is refused and changes nothing") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  ConsumerGroup* g = ValueOrDie(q->Group("g", {}));
  const std::string long_topic(format::kMaxTopicBytes + 1, 'x');
  CHECK(absl::IsInvalidArgument(g->SetTopicPacing(long_topic, {})));
  CHECK(absl::IsInvalidArgument(g->GetTopicPacing(long_topic).status()));
  CHECK(absl::IsInvalidArgument(g->ClearTopicPacing(long_topic)));
  for (const TopicPacing& bad :
       {TopicPacing{.max_in_flight = 1000001},
        TopicPacing{.interval = -absl::Milliseconds(1)},
        TopicPacing{.interval = absl::Hours(721)},
        TopicPacing{.interval = absl::InfiniteDuration()}}) {
    CHECK(absl::IsInvalidArgument(g->SetTopicPacing("t", bad)));
    GroupOptions o;
    o.pacing = bad;
    CHECK(absl::IsInvalidArgument(q->Group("other", o).status()));
  }
  CHECK(ValueOrDie(g->GetTopicPacing("t")) == std::nullopt);
  // The limits themselves are accepted.
  const TopicPacing most{.max_in_flight = 1000000,
                         .interval = absl::Hours(720)};
  HQ_REQUIRE_OK(g->SetTopicPacing("t", most));
  CHECK(ValueOrDie(g->GetTopicPacing("t")) == most);
}

TEST_CASE("pacing: records go with their queue") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  const uint32_t id = static_cast<QueueImpl*>(q)->id();
  PutTopic(q, "a", 1);
  ConsumerGroup* g =
      ValueOrDie(q->Group("g", Paced({.interval = absl::Seconds(1)})));
  HQ_REQUIRE_OK(g->SetTopicPacing("a", {.max_in_flight = 3}));
  CHECK(Claim(g).size() == 1);
  const std::string prefix = format::QueuePrefix(format::kPaceTag, id);
  CHECK(test::CountKeys(f.db(), prefix) == 2);  // The clock and a's.
  HQ_REQUIRE_OK(f.db()->DropQueue("q"));
  CHECK(test::CountKeys(f.db(), prefix) == 0);
}

}  // namespace
}  // namespace hq
