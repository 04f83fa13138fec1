// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Push subscriptions (hq/subscription.h): order and completeness, start
// positions, durable checkpoints across a close, failing and slow
// listeners, filters, several listeners, many subscriptions, unsubscribe.
// Delivery runs on the Db's pool threads; the tests wait for it with a
// liveness bound (never a timing assertion).

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "hq/hq.h"
#include "lib/consume/subscription_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "lib/util/sync.h"
#include "test/group_util.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::DbFixture;
using test::NoBackgroundSweeps;
using test::PutN;
using test::Storage;
using test::ValueOrDie;

struct Got {
  uint32_t partition;
  int priority;
  MessageId id;
  std::string topic;
  std::string payload;
};

// Records every message; `fail` may refuse one (the listener then returns
// an error); `gate`, while closed, blocks every call.
class Collector : public MessageListener {
 public:
  absl::Status OnMessage(const MessageView& m) override {
    MutexLock l(&mu_);
    ++calls_;
    cv_.SignalAll();
    while (!open_) cv_.Wait(&mu_);
    if (fail_ && fail_(m)) {
      ++failures_;
      cv_.SignalAll();
      return absl::UnavailableError("listener refuses");
    }
    got_.push_back(Got{m.partition, m.priority, m.id, std::string(m.topic),
                       std::string(m.payload)});
    cv_.SignalAll();
    return absl::OkStatus();
  }

  void SetFail(std::function<bool(const MessageView&)> f) {
    MutexLock l(&mu_);
    fail_ = std::move(f);
  }
  void Close() {
    MutexLock l(&mu_);
    open_ = false;
  }
  void Open() {
    MutexLock l(&mu_);
    open_ = true;
    cv_.SignalAll();
  }
  // Waits until `pred` holds (a liveness bound of 60 s, then aborts).
  // `pred` runs under mu_: it must not call the accessors.
  void WaitUntil(const std::function<bool()>& pred) {
    MutexLock l(&mu_);
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    while (!pred()) {
      if (cv_.WaitWithTimeout(&mu_, absl::Seconds(1)) &&
          absl::Now() > give_up) {
        // What came, to tell a stall from a slow run.
        std::fprintf(stderr,
                     "subscription_test: no delivery within 60 s (%zu "
                     "calls, %zu delivered, %zu refused)\n",
                     calls_, got_.size(), failures_);
        std::abort();
      }
    }
  }
  void WaitFor(size_t n) {
    WaitUntil([&] { return got_.size() >= n; });
  }
  std::vector<Got> got() {
    MutexLock l(&mu_);
    return got_;
  }
  size_t calls() {
    MutexLock l(&mu_);
    return calls_;
  }
  size_t failures() {
    MutexLock l(&mu_);
    return failures_;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool open_ = true;
  std::function<bool(const MessageView&)> fail_;
  std::vector<Got> got_;
  size_t calls_ = 0;
  size_t failures_ = 0;
};

std::vector<std::string> Payloads(const std::vector<Got>& got) {
  std::vector<std::string> out;
  for (const Got& g : got) out.push_back(g.payload);
  return out;
}

// Waits until `pred` holds (a liveness bound of 60 s, then aborts, printing
// what `describe` says, if given).
void Eventually(const std::function<bool()>& pred,
                const std::function<std::string()>& describe = nullptr) {
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (!pred()) {
    if (absl::Now() > give_up) {
      std::fprintf(stderr, "subscription_test: condition not met in 60 s%s%s\n",
                   describe ? ": " : "", describe ? describe().c_str() : "");
      std::abort();
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
}

// Waits until `pred` holds while `progress` keeps growing: aborts only
// after 60 s without progress (a liveness bound for long deliveries, which
// a sanitizer on a loaded machine slows down many times over).
void WhileProgressing(const std::function<bool()>& pred,
                      const std::function<size_t()>& progress) {
  size_t seen = progress();
  absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (!pred()) {
    if (const size_t now = progress(); now != seen) {
      seen = now;
      give_up = absl::Now() + absl::Seconds(60);
    }
    if (absl::Now() > give_up) {
      std::fprintf(stderr, "subscription_test: no progress in 60 s (at %zu)\n",
                   seen);
      std::abort();
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
}

// Lane of a delivered message: partition, priority and (topic layout)
// topic.
std::string LaneOf(const Got& g, Layout layout) {
  return absl::StrCat(g.partition, "/", g.priority, "/",
                      layout == Layout::kTopic ? g.topic : "");
}

TEST_CASE("a subscription delivers every message in order per lane") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  Collector c;
  DbFixture f(storage, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 3, .priorities = 2, .layout = layout}));
  Subscription* s = ValueOrDie(q->Subscribe({.name = "s"}, &c));
  CHECK(s->name() == "s");
  constexpr int kProducers = 4, kEach = 400;
  std::vector<std::thread> producers;
  std::atomic<int> errors{0};
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kEach; ++i) {
        const std::string payload = absl::StrCat(p, "-", i);
        if (!q->Put({.topic = absl::StrCat("t", i % 5),
                     .payload = payload,
                     .priority = i % 2})
                 .ok()) {
          errors.fetch_add(1);
        }
      }
    });
  }
  for (std::thread& t : producers) t.join();
  REQUIRE(errors.load() == 0);
  c.WaitFor(kProducers * kEach);
  Eventually(
      [&] { return ValueOrDie(s->Stats()).delivered == kProducers * kEach; });
  const std::vector<Got> got = c.got();
  CHECK(got.size() == kProducers * kEach);
  std::set<std::string> payloads;
  std::map<std::string, MessageId> last;
  size_t out_of_order = 0;
  for (const Got& g : got) {
    CHECK(payloads.insert(g.payload).second);
    auto [it, fresh] = last.emplace(LaneOf(g, layout), g.id);
    if (!fresh) {
      if (!(it->second < g.id)) ++out_of_order;
      it->second = g.id;
    }
  }
  CHECK(payloads.size() == kProducers * kEach);
  CHECK(out_of_order == 0);
  const SubscriptionStats st = ValueOrDie(s->Stats());
  CHECK(st.delivered == kProducers * kEach);
  CHECK(st.failed_attempts == 0);
  CHECK(st.listeners == 1);
  CHECK(st.lag == 0);
}

TEST_CASE("a subscription starts at the earliest, latest, an id or a time") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  const std::vector<PutResult> old = PutN(q, 3, "old", 0);
  f.clock().Advance(absl::Seconds(10));
  const absl::Time mid = f.clock().Now();
  PutN(q, 2, "mid", 1);
  Collector earliest, latest, at_id, at_time;
  ValueOrDie(q->Subscribe({.name = "e"}, &earliest));
  ValueOrDie(q->Subscribe(
      {.name = "l", .start = SubscribeOptions::Start::kLatest}, &latest));
  ValueOrDie(q->Subscribe({.name = "i",
                           .start = SubscribeOptions::Start::kId,
                           .start_id = old[1].id},
                          &at_id));
  ValueOrDie(q->Subscribe(
      {.name = "t", .start = SubscribeOptions::Start::kTime, .start_time = mid},
      &at_time));
  PutN(q, 1, "new", 0);
  earliest.WaitFor(6);
  latest.WaitFor(1);
  at_time.WaitFor(3);
  // kId applies to every partition: partition 1's ids are all later.
  at_id.WaitFor(5);
  auto sorted = [](std::vector<std::string> v) {
    std::sort(v.begin(), v.end());
    return v;
  };
  CHECK(
      sorted(Payloads(earliest.got())) ==
      std::vector<std::string>{"mid0", "mid1", "new0", "old0", "old1", "old2"});
  CHECK(Payloads(latest.got()) == std::vector<std::string>{"new0"});
  CHECK(sorted(Payloads(at_time.got())) ==
        std::vector<std::string>{"mid0", "mid1", "new0"});
  CHECK(sorted(Payloads(at_id.got())) ==
        std::vector<std::string>{"mid0", "mid1", "new0", "old1", "old2"});
}

// Issue 17: a subscription created over existing data walks the lanes; a
// lane the walk saw hold one message is delivered from what the walk read.
// Lanes of several messages, and values larger than a walk keeps, are read.
TEST_CASE(
    "issue17: a walk delivers a one-message lane's message without "
    "reading the lane again") {
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  const std::map<std::string, std::vector<std::string>> put =
      test::PutWalkLanes(q);
  constexpr size_t kMessages =
      test::kWalkSingle + test::kWalkLarge + test::kWalkMulti * test::kWalkEach;
  auto* sub = static_cast<SubscriptionImpl*>(
      ValueOrDie(q->Subscribe({.name = "s"}, &c)));
  c.WaitFor(kMessages);
  std::map<std::string, std::vector<std::string>> got;
  for (const Got& m : c.got()) got[m.topic].push_back(m.payload);
  CHECK(got == put);  // Each once, in order within its topic, intact.
  if (sub->TEST_MaxActive() >= put.size()) {
    // The one-message lanes cost no read: at most one per large value and
    // per message of the longer lanes.
    CHECK(sub->TEST_LaneReads() <=
          size_t{test::kWalkLarge + test::kWalkMulti * test::kWalkEach});
  }
}

// Issue 40: the one-message lanes of a walk cost no read also when the
// buffers hold far fewer messages than there are lanes: each is paged in
// only when the buffers have room for its message, which is buffered at
// once.
TEST_CASE(
    "issue40: one-message lanes cost no read with buffers smaller than the "
    "walk") {
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 3, .layout = Layout::kTopic}));
  constexpr int kTopics = 2000;
  test::PutSites(q, 0, kTopics);  // A message a topic, its payload the topic.
  auto* sub = static_cast<SubscriptionImpl*>(ValueOrDie(q->Subscribe(
      {.name = "s", .checkpoint_messages = 100, .buffer_messages = 16}, &c)));
  c.WaitFor(kTopics);
  std::multiset<std::string> got, want;
  for (int i = 0; i < kTopics; ++i) want.insert(absl::StrCat("site", i));
  for (const Got& m : c.got()) {
    CHECK(m.topic == m.payload);
    got.insert(m.payload);
  }
  CHECK(got == want);  // Each once.
  CHECK(sub->TEST_LaneReads() == 0);
}

// Issue 17: a kLatest subscription records a start per partition, not a
// checkpoint per lane, so creating one costs nothing per topic.
TEST_CASE("issue17: a kLatest subscription writes nothing per topic") {
  Collector c;
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 4, .layout = Layout::kTopic}));
  std::vector<std::string> topics;  // Message holds views of them.
  for (int i = 0; i < 10000; ++i) topics.push_back(absl::StrCat("t", i));
  std::vector<Message> batch;
  for (const std::string& t : topics) {
    batch.push_back({.topic = t, .payload = "old"});
  }
  HQ_REQUIRE_OK(q->PutBatch(batch, nullptr));
  const std::string checkpoints = format::QueuePrefix(
      format::kCheckpointTag, static_cast<QueueImpl*>(q)->id());
  {
    Collector c;
    ValueOrDie(q->Subscribe(
        {.name = "l", .start = SubscribeOptions::Start::kLatest}, &c));
    CHECK(test::CountKeys(f.db(), checkpoints) == 0);
    // An old topic and a new one: only the new messages come.
    HQ_REQUIRE_OK(q->Put({.topic = "t7", .payload = "new0"}).status());
    HQ_REQUIRE_OK(q->Put({.topic = "fresh", .payload = "new1"}).status());
    c.WaitFor(2);
    std::vector<std::string> got = Payloads(c.got());
    std::sort(got.begin(), got.end());
    CHECK(got == std::vector<std::string>{"new0", "new1"});
  }
  // It resumes after a reopen from where it was, still from the start it
  // recorded for lanes it never delivered from.
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  HQ_REQUIRE_OK(q->Put({.topic = "t8", .payload = "new2"}).status());
  Subscription* sub = ValueOrDie(q->Subscribe(
      {.name = "l", .start = SubscribeOptions::Start::kLatest}, &c));
  c.WaitFor(1);
  CHECK(Payloads(c.got()) == std::vector<std::string>{"new2"});
  // Once that delivery counts (when the listener has returned), nothing
  // else is waiting: no old message, nor new0 or new1 again.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  SubscriptionStats st = ValueOrDie(sub->Stats());
  while (st.delivered < 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
    st = ValueOrDie(sub->Stats());
  }
  CHECK(st.delivered == 1);
  CHECK(st.lag == 0);
  CHECK(st.lag_exact);
  CHECK(ValueOrDie(f.db()->Verify()).ok());
}

TEST_CASE("a subscription resumes from its checkpoints after a close") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  Collector c;
  DbFixture f(storage, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  PutN(q, 10, "a", 0);
  PutN(q, 10, "b", 1);
  {
    Collector c;
    // Checkpoints only at the close (the interval and count never come).
    ValueOrDie(q->Subscribe({.name = "s",
                             .checkpoint_messages = 1000000,
                             .checkpoint_interval = absl::Hours(1)},
                            &c));
    c.WaitFor(20);
    f.Close();  // Writes the checkpoints.
  }
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  CHECK(ValueOrDie(q->ListSubscriptions()) == std::vector<std::string>{"s"});
  PutN(q, 2, "c", 0);
  // Resuming ignores start.
  Subscription* s = ValueOrDie(q->Subscribe(
      {.name = "s", .start = SubscribeOptions::Start::kEarliest}, &c));
  c.WaitFor(2);
  CHECK(Payloads(c.got()) == std::vector<std::string>{"c0", "c1"});
  // The slice counts a delivery once the listener returned.
  Eventually([&] { return ValueOrDie(s->Stats()).delivered == 2; });
  HQ_REQUIRE_OK(s->Checkpoint());
  const SubscriptionStats st = ValueOrDie(s->Stats());
  CHECK(st.delivered == 2);
  // Both lanes, also the idle one (its checkpoint read from disk).
  REQUIRE(st.lanes.size() == 2);
  CHECK(st.lanes[0].partition == 0);
  CHECK(st.lanes[1].partition == 1);
  for (const LaneCheckpoint& lc : st.lanes) CHECK(lc.next == lc.written);
}

TEST_CASE("checkpoints are written every N messages or T, not on each") {
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  ValueOrDie(q->Subscribe({.name = "s",
                           .checkpoint_messages = 10,
                           .checkpoint_interval = absl::Seconds(5)},
                          &c));
  const std::vector<PutResult> ids = PutN(q, 5);
  c.WaitFor(5);
  // Fewer than 10 and the clock has not moved: nothing written yet.
  CHECK(test::StoredCheckpoint(f.db(), q).value() == MessageId::Min());
  // The interval (on the Db's clock) writes them.
  Eventually([&] {
    f.clock().Advance(absl::Seconds(1));
    return test::StoredCheckpoint(f.db(), q).value() == ids[4].id.Next();
  });
  // Ten more deliveries write a checkpoint without the clock moving.
  const std::vector<PutResult> more = PutN(q, 12, "n");
  c.WaitFor(17);
  Eventually([&] {
    return !(test::StoredCheckpoint(f.db(), q).value() < more[9].id.Next());
  });
  CHECK(!(more[11].id.Next() < test::StoredCheckpoint(f.db(), q).value()));
}

TEST_CASE("a failing listener is retried and holds back only its lane") {
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  std::atomic<int> refusals{3};
  c.SetFail([&](const MessageView& m) {
    return m.payload == "a1" && refusals.fetch_sub(1) > 0;
  });
  Subscription* s = ValueOrDie(
      q->Subscribe({.name = "s", .retry_base = absl::Seconds(1)}, &c));
  const std::vector<PutResult> a = PutN(q, 3, "a", 0);
  PutN(q, 3, "b", 1);
  // Partition 1 goes on; partition 0 stops at a1.
  Eventually([&] {
    std::vector<std::string> p = Payloads(c.got());
    // failed_attempts counts a failure once its retry timer is set.
    return std::count(p.begin(), p.end(), "b2") == 1 &&
           ValueOrDie(s->Stats()).failed_attempts >= 1;
  });
  std::vector<std::string> p = Payloads(c.got());
  CHECK(std::find(p.begin(), p.end(), "a2") == p.end());
  CHECK(std::find(p.begin(), p.end(), "a0") != p.end());
  // The checkpoint does not move past the refused message.
  HQ_REQUIRE_OK(s->Checkpoint());
  SubscriptionStats st = ValueOrDie(s->Stats());
  bool saw_lane0 = false;
  for (const LaneCheckpoint& lc : st.lanes) {
    if (lc.partition != 0) continue;
    saw_lane0 = true;
    CHECK(lc.next == a[1].id);
    CHECK(lc.written == a[1].id);
  }
  CHECK(saw_lane0);
  // Retries after 1 s, 2 s, 4 s of the Db's clock; then a1 and a2 follow.
  // (Each failure is waited for in the stats, where it shows once its
  // retry timer is set, before the clock moves on.)
  for (uint64_t failures = 2; failures <= 3; ++failures) {
    f.clock().Advance(absl::Seconds(4));
    Eventually(
        [&] { return ValueOrDie(s->Stats()).failed_attempts == failures; });
  }
  f.clock().Advance(absl::Seconds(4));  // The third retry goes through.
  c.WaitFor(6);
  Eventually([&] { return ValueOrDie(s->Stats()).delivered == 6; });
  p = Payloads(c.got());
  std::vector<std::string> lane0;
  for (const std::string& x : p) {
    if (x[0] == 'a') lane0.push_back(x);
  }
  CHECK(lane0 == std::vector<std::string>{"a0", "a1", "a2"});
  st = ValueOrDie(s->Stats());
  CHECK(st.failed_attempts == 3);
  CHECK(st.delivered == 6);
}

TEST_CASE("a slow listener pauses reading: memory stays bounded") {
  Collector c;
  Collector d;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 4}));
  for (int i = 0; i < 5000; ++i) {
    ValueOrDie(q->Put({.payload = std::string(100, 'x')}));
  }
  c.Close();  // The listener blocks.
  Subscription* s = ValueOrDie(q->Subscribe(
      {.name = "s", .buffer_messages = 64, .buffer_bytes = 1 << 20}, &c));
  Eventually([&] { return c.calls() >= 1; });
  SubscriptionStats st = ValueOrDie(s->Stats());
  CHECK(st.buffered <= 64);
  CHECK(st.lag >= 5000 - 64);
  c.Open();
  c.WaitFor(5000);
  Eventually([&] { return ValueOrDie(s->Stats()).delivered == 5000; });
  st = ValueOrDie(s->Stats());
  CHECK(st.buffered == 0);
  CHECK(st.delivered == 5000);
  // A byte limit below one message still reads one at a time.
  Subscription* t = ValueOrDie(q->Subscribe(
      {.name = "t", .buffer_messages = 1000, .buffer_bytes = 1}, &d));
  d.WaitFor(5000);
  Eventually([&] { return ValueOrDie(t->Stats()).delivered == 5000; });
}

TEST_CASE("partition and topic filters select what a subscription gets") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  Collector c;
  Collector all;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q =
      ValueOrDie(f.db()->CreateQueue("q", {.partitions = 3, .layout = layout}));
  ValueOrDie(
      q->Subscribe({.name = "s", .partitions = {0, 2}, .topics = {"red"}}, &c));
  for (uint32_t p = 0; p < 3; ++p) {
    for (const char* topic : {"red", "blue"}) {
      ValueOrDie(q->Put(
          {.topic = topic, .payload = absl::StrCat(topic, p), .partition = p}));
    }
  }
  ValueOrDie(q->Subscribe({.name = "all"}, &all));
  all.WaitFor(6);
  c.WaitFor(2);
  std::vector<std::string> p = Payloads(c.got());
  std::sort(p.begin(), p.end());
  CHECK(p == std::vector<std::string>{"red0", "red2"});
  // Fixed at creation.
  CHECK(absl::IsInvalidArgument(
      q->Subscribe({.name = "s", .partitions = {0}}, &all).status()));
}

TEST_CASE("several listeners are called in turn") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  Collector a, b;
  Subscription* s = ValueOrDie(q->Subscribe({.name = "s"}, &a));
  CHECK(ValueOrDie(q->Subscribe({.name = "s"}, &b)) == s);
  CHECK(absl::IsInvalidArgument(q->Subscribe({.name = "s"}, &a).status()));
  // b refuses m1 once: a is not called again for it.
  std::atomic<int> refusals{1};
  b.SetFail([&](const MessageView& m) {
    return m.payload == "m1" && refusals.fetch_sub(1) > 0;
  });
  PutN(q, 3);
  // Counted once the retry timer is set: only then may the clock move.
  Eventually([&] { return ValueOrDie(s->Stats()).failed_attempts == 1; });
  f.clock().Advance(absl::Seconds(1));
  a.WaitFor(3);
  b.WaitFor(3);
  CHECK(Payloads(a.got()) == std::vector<std::string>{"m0", "m1", "m2"});
  CHECK(Payloads(b.got()) == std::vector<std::string>{"m0", "m1", "m2"});
  CHECK(ValueOrDie(s->Stats()).listeners == 2);
}

TEST_CASE("a thousand subscriptions on one queue") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 4}));
  constexpr int kSubs = 1000, kMessages = 20;
  std::vector<std::unique_ptr<Collector>> cs;
  for (int i = 0; i < kSubs; ++i) {
    cs.push_back(std::make_unique<Collector>());
    ValueOrDie(q->Subscribe({.name = absl::StrCat("s", i)}, cs.back().get()));
  }
  for (int i = 0; i < kMessages; ++i) {
    ValueOrDie(q->Put({.payload = absl::StrCat(i)}));
  }
  for (auto& c : cs) c->WaitFor(kMessages);
  size_t total = 0;
  for (auto& c : cs) total += c->got().size();
  CHECK(total == kSubs * kMessages);
  CHECK(ValueOrDie(q->ListSubscriptions()).size() == kSubs);
}

// Unsubscribes itself from inside its listener.
class SelfUnsubscriber : public MessageListener {
 public:
  explicit SelfUnsubscriber(Queue* q) : q_(q) {}
  absl::Status OnMessage(const MessageView&) override {
    MutexLock l(&mu_);
    status_ = q_->Unsubscribe("self");
    done_ = true;
    return absl::OkStatus();
  }
  absl::Status Wait() {
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    for (;;) {
      {
        MutexLock l(&mu_);
        if (done_) return status_;
      }
      if (absl::Now() > give_up) std::abort();
      absl::SleepFor(absl::Milliseconds(1));
    }
  }

 private:
  Queue* q_;
  Mutex mu_;
  bool done_ = false;
  absl::Status status_;
};

TEST_CASE("unsubscribe stops delivery and deletes the state") {
  Collector c;
  Collector again;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  PutN(q, 3);
  ValueOrDie(q->Subscribe({.name = "s"}, &c));
  c.WaitFor(3);
  HQ_REQUIRE_OK(q->Unsubscribe("s"));
  CHECK(ValueOrDie(q->ListSubscriptions()).empty());
  CHECK(absl::IsNotFound(q->Unsubscribe("s")));
  PutN(q, 1, "late");
  // Subscribing again starts anew, from the earliest.
  ValueOrDie(q->Subscribe({.name = "s"}, &again));
  again.WaitFor(4);
  CHECK(c.got().size() == 3);  // The old listener got nothing more.
  // From its own listener: refused, not a deadlock.
  SelfUnsubscriber self(q);
  ValueOrDie(q->Subscribe({.name = "self"}, &self));
  CHECK(absl::IsFailedPrecondition(self.Wait()));
  HQ_REQUIRE_OK(q->Unsubscribe("self"));
  // Not live in this process: its records go too.
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  HQ_REQUIRE_OK(q->Unsubscribe("s"));
  CHECK(ValueOrDie(q->ListSubscriptions()).empty());
}

TEST_CASE("subscribe checks its arguments") {
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  CHECK(absl::IsInvalidArgument(q->Subscribe({}, &c).status()));  // No name.
  CHECK(absl::IsInvalidArgument(q->Subscribe({.name = "s"}, nullptr).status()));
  CHECK(absl::IsInvalidArgument(
      q->Subscribe({.name = "s", .partitions = {2}}, &c).status()));
  CHECK(absl::IsInvalidArgument(
      q->Subscribe({.name = "s", .topics = {std::string(1025, 't')}}, &c)
          .status()));
  CHECK(absl::IsInvalidArgument(
      q->Subscribe({.name = "s", .checkpoint_messages = 0}, &c).status()));
  CHECK(absl::IsInvalidArgument(
      q->Subscribe({.name = "s", .checkpoint_interval = absl::ZeroDuration()},
                   &c)
          .status()));
  CHECK(absl::IsInvalidArgument(
      q->Subscribe({.name = "s", .buffer_messages = 0}, &c).status()));
  CHECK(absl::IsInvalidArgument(
      q->Subscribe({.name = "s", .buffer_bytes = 0}, &c).status()));
  CHECK(absl::IsInvalidArgument(q->Subscribe({.name = "s",
                                              .retry_base = absl::Seconds(2),
                                              .retry_cap = absl::Seconds(1)},
                                             &c)
                                    .status()));
  CHECK(absl::IsInvalidArgument(
      q->Subscribe({.name = "s",
                    .start = SubscribeOptions::Start::kTime,
                    .start_time = absl::InfiniteFuture()},
                   &c)
          .status()));
  // Nothing was created by the refused calls.
  CHECK(ValueOrDie(q->ListSubscriptions()).empty());
  HQ_REQUIRE_OK(f.db()->DropQueue("q"));
  CHECK(absl::IsNotFound(q->Subscribe({.name = "s"}, &c).status()));
}

// The stored checkpoints of the queue's subscriptions, by partition (a
// queue with one priority in the time layout: one lane per partition).
std::map<uint32_t, MessageId> StoredByPartition(Db* db, uint32_t queue_id) {
  const std::string prefix =
      format::QueuePrefix(format::kCheckpointTag, queue_id);
  std::unique_ptr<leveldb::Iterator> it(
      test::Impl(db)->leveldb()->NewIterator(leveldb::ReadOptions()));
  std::map<uint32_t, MessageId> out;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    // prefix, fixed32 sub_id, then lane_rest: fixed16 partition ...
    const unsigned char* k =
        reinterpret_cast<const unsigned char*>(it->key().data());
    const uint32_t partition =
        (k[prefix.size() + 4] << 8) | k[prefix.size() + 5];
    MessageId id;
    REQUIRE(format::DecodeCheckpoint(
        std::string_view(it->value().data(), it->value().size()), &id));
    out[partition] = id;
  }
  return out;
}

TEST_CASE("kill -9: delivery resumes at the last written checkpoint") {
  test::TempDir dir;
  const std::string path = dir.Sub("db");
  constexpr uint32_t kPartitions = 3;
  constexpr int kEach = 150;
  std::map<uint32_t, std::vector<MessageId>> all;  // Per partition, in order.
  uint32_t qid;
  {
    auto db = ValueOrDie(Db::Open(path, {}));
    Queue* q = ValueOrDie(db->CreateQueue("q", {.partitions = kPartitions}));
    qid = static_cast<QueueImpl*>(q)->id();
    for (int i = 0; i < kEach; ++i) {
      for (uint32_t p = 0; p < kPartitions; ++p) {
        all[p].push_back(
            ValueOrDie(q->Put({.payload = "x", .partition = p})).id);
      }
    }
  }
  std::mt19937 rng(test::Seed(6));
  std::map<uint32_t, std::set<MessageId>> delivered;  // By any child.
  for (int round = 0; round < 5; ++round) {
    std::map<uint32_t, MessageId> before;
    {
      auto db = ValueOrDie(Db::Open(path, {}));
      before = StoredByPartition(db.get(), qid);
    }
    // The checkpoint never passes a message no child delivered.
    for (const auto& [p, cp] : before) {
      for (const MessageId& id : all[p]) {
        if (id < cp) CHECK(delivered[p].contains(id));
      }
    }
    test::Child child({"subscribe", path, "q", "s"});
    const int stop_after = 5 + static_cast<int>(rng() % 60);
    std::map<uint32_t, std::vector<MessageId>> got;
    // Kill it after some lines, then read what it printed before it died.
    int lines = 0;
    for (std::string line = child.ReadLine(); !line.empty();
         line = child.ReadLine()) {
      if (++lines == stop_after) child.Kill();
      INFO(line);
      REQUIRE(line.rfind("ERROR", 0) != 0);
      if (line == "IDLE") break;
      uint32_t p;
      char id[64];
      REQUIRE(std::sscanf(line.c_str(), "M %u %63s", &p, id) == 2);
      const std::optional<MessageId> mid = MessageId::Parse(id);
      REQUIRE(mid.has_value());
      got[p].push_back(*mid);
      delivered[p].insert(*mid);
    }
    child.Kill();  // Also when it went idle before `stop_after` lines.
    child.Wait();
    // In each partition this child started exactly at the first message at
    // or past the written checkpoint (redelivery only from there), and
    // went on in order without gaps.
    for (const auto& [p, ids] : got) {
      const MessageId cp = before.contains(p) ? before[p] : MessageId::Min();
      auto first = std::lower_bound(all[p].begin(), all[p].end(), cp);
      REQUIRE(first != all[p].end());
      for (size_t i = 0; i < ids.size(); ++i) {
        REQUIRE(first + i != all[p].end());
        CHECK(ids[i] == *(first + i));
      }
    }
  }
  // A last subscriber in this process gets everything left: nothing lost.
  Collector c;
  auto db = ValueOrDie(Db::Open(path, {}));
  Queue* q = ValueOrDie(db->OpenQueue("q"));
  Subscription* s = ValueOrDie(q->Subscribe({.name = "s"}, &c));
  Eventually([&] { return ValueOrDie(s->Stats()).lag == 0; });
  for (const Got& g : c.got()) delivered[g.partition].insert(g.id);
  for (uint32_t p = 0; p < kPartitions; ++p) {
    CHECK(delivered[p].size() == all[p].size());
  }
}

// ------------------------------------------------------ paged subscriptions
// Subscriptions of topic layout queues keep at most max_active_lanes lanes
// to read in memory (doc/massive_topics.md).

SubscriptionImpl* Paged(Subscription* s) {
  return static_cast<SubscriptionImpl*>(s);
}

// What a test that gives up prints of `s`.
std::string StatsString(Subscription* s) {
  absl::StatusOr<SubscriptionStats> st = s->Stats();
  if (!st.ok()) return st.status().ToString();
  return absl::StrCat("delivered ", st->delivered, ", buffered ", st->buffered,
                      ", lag ", st->lag, ", resident lanes ",
                      st->resident_lanes, " (in the map ",
                      Paged(s)->TEST_ResidentLanes(), "), active lanes ",
                      st->active_lanes, ", lanes listed ", st->lanes.size());
}

// Counts deliveries by payload and, at each, the subscription's resident
// lanes (the listener runs outside the subscription's lock).
class ResidentSampler : public MessageListener {
 public:
  absl::Status OnMessage(const MessageView& m) override {
    const size_t resident =
        sub_ == nullptr ? 0 : Paged(sub_)->TEST_ResidentLanes();
    const size_t entries =
        sub_ == nullptr ? 0 : Paged(sub_)->TEST_SourceEntries();
    MutexLock l(&mu_);
    max_resident_ = std::max(max_resident_, resident);
    max_source_entries_ = std::max(max_source_entries_, entries);
    ++got_[std::string(m.payload)];
    return absl::OkStatus();
  }
  void Watch(Subscription* s) { sub_.store(s); }
  // Distinct payloads delivered (cheap to poll, unlike got()).
  size_t distinct() {
    MutexLock l(&mu_);
    return got_.size();
  }
  std::map<std::string, int> got() {
    MutexLock l(&mu_);
    return got_;
  }
  size_t max_resident() {
    MutexLock l(&mu_);
    return max_resident_;
  }
  size_t max_source_entries() {
    MutexLock l(&mu_);
    return max_source_entries_;
  }

 private:
  std::atomic<Subscription*> sub_{nullptr};
  Mutex mu_;
  std::map<std::string, int> got_;
  size_t max_resident_ = 0;
  size_t max_source_entries_ = 0;
};

TEST_CASE(
    "issue17: a subscription over 100000 topics keeps its resident lanes "
    "under the cap") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 4, .layout = Layout::kTopic}));
  constexpr int kTopics = 100000;
  constexpr size_t kCap = 64, kBuffer = 100, kCheckpoint = 100;
  const SubscribeOptions o{.name = "s",
                           .checkpoint_messages = kCheckpoint,
                           .buffer_messages = kBuffer,
                           .max_active_lanes = kCap};
  // Half the topics get messages before the subscription exists (the
  // directory walk), half after (the lane index).
  test::PutSites(q, 0, kTopics / 2);
  ResidentSampler c;
  Subscription* s = ValueOrDie(q->Subscribe(o, &c));
  c.Watch(s);
  test::PutSites(q, kTopics / 2, kTopics);
  WhileProgressing(
      [&] {
        return c.distinct() == static_cast<size_t>(kTopics) &&
               ValueOrDie(s->Stats()).lag == 0;
      },
      [&] { return c.distinct(); });
  for (const auto& [payload, n] : c.got()) {
    INFO(payload);
    CHECK(n == 1);
  }
  CHECK(Paged(s)->TEST_ValueChunks() == 0);
  // Active lanes, lanes with buffered messages, lanes whose checkpoints
  // are not yet written: each bounded by its option.
  CHECK(c.max_resident() <= kCap + kBuffer + kCheckpoint);
  CHECK(Paged(s)->TEST_ActiveLanes() <= kCap);
  // issue40: nor does the source keep an entry per lane drained (its walked
  // lanes are trimmed to twice those held, plus 64).
  CHECK(c.max_source_entries() <= 3 * (kCap + kBuffer + kCheckpoint) + 64);
  // Written, the lanes leave memory.
  Eventually(
      [&] {
        CHECK(s->Checkpoint().ok());
        return Paged(s)->TEST_ResidentLanes() == 0;
      },
      [&] { return StatsString(s); });
  // Restarted, a subscription whose topics are drained loads nothing and
  // delivers nothing.
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  ResidentSampler again;
  s = ValueOrDie(q->Subscribe(o, &again));
  CHECK(Paged(s)->TEST_ResidentLanes() == 0);
  test::PutSites(q, 0, 1);
  Eventually([&] { return again.got().size() == 1; });
  CHECK(again.got().begin()->first == "site0");
}

TEST_CASE("a paged subscription resumes where it was, whatever its cap") {
  const size_t cap = GENERATE(1, 2, 1000);
  INFO("max_active_lanes " << cap);
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 3, .priorities = 2, .layout = Layout::kTopic}));
  constexpr int kTopics = 20, kEach = 5;
  auto put = [&](const std::string& prefix, int each) {
    for (int m = 0; m < each; ++m) {
      for (int t = 0; t < kTopics; ++t) {
        HQ_REQUIRE_OK(q->Put({.topic = absl::StrCat("t", t),
                              .payload = absl::StrCat(prefix, t, "/", m),
                              .priority = t % 2})
                          .status());
      }
    }
  };
  put("a", kEach);
  const SubscribeOptions o{.name = "s",
                           .checkpoint_messages = 7,
                           .checkpoint_interval = absl::Hours(1),
                           .buffer_messages = 3,
                           .max_active_lanes = cap};
  {
    Collector c;
    Subscription* s = ValueOrDie(q->Subscribe(o, &c));
    c.WaitFor(kTopics * kEach);
    Eventually([&] { return ValueOrDie(s->Stats()).lag == 0; });
    // In order within each topic.
    std::map<std::string, MessageId> last;
    for (const Got& g : c.got()) {
      auto [it, fresh] = last.emplace(g.topic, g.id);
      if (!fresh) CHECK(it->second < g.id);
      it->second = g.id;
    }
    CHECK(last.size() == static_cast<size_t>(kTopics));
    f.Close();  // Writes the checkpoints and the source position.
  }
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  put("b", 1);
  Subscription* s = ValueOrDie(q->Subscribe(o, &c));
  c.WaitFor(kTopics);
  Eventually([&] { return ValueOrDie(s->Stats()).lag == 0; });
  std::set<std::string> got;
  for (const Got& g : c.got()) {
    CHECK(g.payload[0] == 'b');
    got.insert(g.payload);
  }
  CHECK(got.size() == static_cast<size_t>(kTopics));
  HQ_REQUIRE_OK(s->Checkpoint());
  const SubscriptionStats st = ValueOrDie(s->Stats());
  // Only the lanes in memory: drained and checkpointed, none stay.
  CHECK(st.lanes.empty());
  CHECK(st.resident_lanes == 0);
  CHECK(st.active_lanes == 0);
  CHECK(st.lag == 0);
}

TEST_CASE("a paged subscription's walk, resumed, skips what it delivered") {
  // A lane whose message the listener refuses holds the walk's durable
  // position before the lanes delivered past it; after a restart the walk
  // reads their checkpoints again (in key order) and delivers only that
  // lane.
  const size_t cap = GENERATE(1, 2, 1000);
  INFO("max_active_lanes " << cap);
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = Layout::kTopic}));
  constexpr int kTopics = 30;
  for (int t = 0; t < kTopics; ++t) {
    HQ_REQUIRE_OK(
        q->Put({.topic = absl::StrCat("t", t), .payload = absl::StrCat("p", t)})
            .status());
  }
  const SubscribeOptions o{.name = "s", .max_active_lanes = cap};
  {
    Collector c;
    c.SetFail([](const MessageView& m) { return m.payload == "p0"; });
    Subscription* s = ValueOrDie(q->Subscribe(o, &c));
    c.WaitFor(kTopics - 1);
    HQ_REQUIRE_OK(s->Checkpoint());
    f.Close();
  }
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  Subscription* s = ValueOrDie(q->Subscribe(o, &c));
  c.WaitFor(1);
  Eventually([&] { return ValueOrDie(s->Stats()).lag == 0; });
  CHECK(Payloads(c.got()) == std::vector<std::string>{"p0"});
}

TEST_CASE("the live status's stats skip the lanes and count the same") {
  // Stats(false), which the live status file publishes, reads no
  // checkpoint of a lane not in memory; its counts are Stats()'s.
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = Layout::kTopic}));
  constexpr int kTopics = 40;
  for (int t = 0; t < kTopics; ++t) {
    HQ_REQUIRE_OK(
        q->Put({.topic = absl::StrCat("t", t), .payload = absl::StrCat("p", t)})
            .status());
  }
  // One lane refuses its message: it stays with a lag of one.
  c.SetFail([](const MessageView& m) { return m.payload == "p7"; });
  Subscription* s = ValueOrDie(q->Subscribe({.name = "s"}, &c));
  c.WaitFor(kTopics - 1);
  // Counted once each listener call returned.
  Eventually([&] {
    const SubscriptionStats st = ValueOrDie(s->Stats());
    return st.delivered == kTopics - 1 && st.failed_attempts >= 1;
  });
  HQ_REQUIRE_OK(s->Checkpoint());
  const SubscriptionStats all = ValueOrDie(s->Stats());
  const SubscriptionStats counts =
      ValueOrDie(static_cast<SubscriptionImpl*>(s)->Stats(false));
  // In memory: only the lane waiting for its retry.
  REQUIRE(all.lanes.size() == 1);
  CHECK(all.lanes[0].topic == "t7");
  CHECK(all.resident_lanes == 1);
  CHECK(counts.resident_lanes == 1);
  CHECK(counts.active_lanes == all.active_lanes);
  CHECK(counts.lanes.empty());
  CHECK(counts.lag == all.lag);
  CHECK(all.lag == 1);
  CHECK(counts.lag_exact == all.lag_exact);
  CHECK(counts.delivered == all.delivered);
  CHECK(counts.delivered == static_cast<uint64_t>(kTopics - 1));
  CHECK(counts.failed_attempts == all.failed_attempts);
  CHECK(counts.buffered == all.buffered);
  CHECK(counts.listeners == all.listeners);
}

TEST_CASE("a paged subscription's stats count the lanes waiting on disk") {
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  c.Close();  // Every delivery waits: lanes stay on disk.
  Subscription* s = ValueOrDie(q->Subscribe(
      {.name = "s", .buffer_messages = 1, .max_active_lanes = 1}, &c));
  // The first message reaches the listener (which holds it) while it is
  // the only one: its lane was read to its end, and stays in memory.
  PutN(q, 1, "t0-", 0, 0, "t0");
  Eventually([&] { return c.calls() >= 1; });
  PutN(q, 2, "t0-more-", 0, 0, "t0");
  for (int t = 1; t < 10; ++t) {
    PutN(q, 3, absl::StrCat("t", t, "-"), t % 2, 0, absl::StrCat("t", t));
  }
  // 30 messages: one in the listener's hands (buffered), the rest on disk,
  // behind the lane in memory or in lanes waiting in the source.
  const SubscriptionStats st = ValueOrDie(s->Stats());
  CHECK(st.lag == 30);
  CHECK(st.lag_exact);
  // The lanes in memory, not those waiting on disk.
  CHECK(st.lanes.size() == st.resident_lanes);
  CHECK(st.active_lanes <= 1);
  CHECK(st.lanes.size() < 10);
  c.Open();
  c.WaitFor(30);
  Eventually([&] { return ValueOrDie(s->Stats()).lag == 0; });
  // Unsubscribe deletes its source position with the rest.
  HQ_REQUIRE_OK(q->Unsubscribe("s"));
  CHECK(ValueOrDie(f.db()->Verify()).ok());
}

TEST_CASE(
    "a paged subscription finds a lane written while it makes its "
    "iterator") {
  // The write lands after a pass made its iterator, and its note before
  // the pass looks at the notes: the pass cannot see the hint, so the
  // note must be left for the next pass (the write is the last one).
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 1, .layout = Layout::kTopic}));
  // The first delivery arms the checkpoint timer, which starts a pass.
  Subscription* s = ValueOrDie(q->Subscribe(
      {.name = "s", .checkpoint_interval = absl::Milliseconds(10)}, &c));
  std::atomic<bool> put{false};
  static_cast<SubscriptionImpl*>(s)->TEST_SetPassHook([&] {
    // In a pass after the first delivery (its checkpoint timer's).
    if (c.got().size() == 1 && !put.exchange(true)) {
      PutN(q, 1, "late-", 0, 0, "b");
    }
  });
  PutN(q, 1, "first-", 0, 0, "a");
  c.WaitFor(1);
  // The timer may be armed after the delivery returns: time moves on until
  // a pass has put.
  Eventually([&] {
    f.clock().Advance(absl::Milliseconds(20));
    return put.load();
  });
  c.WaitFor(2);
  static_cast<SubscriptionImpl*>(s)->TEST_SetPassHook(nullptr);
  CHECK(put.load());
  CHECK(Payloads(c.got()) == std::vector<std::string>{"first-0", "late-0"});
}

TEST_CASE(
    "issue40: walked one-message lanes delivered without a lane of their "
    "own: a refusal, and new messages in their lanes") {
  Collector c, again;  // Before the Db, which they outlive.
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  constexpr int kTopics = 20;
  for (int t = 0; t < kTopics; ++t) {
    PutN(q, 1, absl::StrCat("t", t, "-"), t % 2, 0, absl::StrCat("t", t));
  }
  // t3's message is refused once: it waits for a retry, then comes.
  std::atomic<bool> refused{false};
  c.SetFail([&](const MessageView& m) {
    return m.payload == "t3-0" && !refused.exchange(true);
  });
  // The first delivery blocks while t5..t9 get a second message: their
  // hints name lanes whose first message waits to be delivered.
  c.Close();
  Subscription* s = ValueOrDie(q->Subscribe({.name = "s"}, &c));
  Eventually([&] { return c.calls() >= 1; });
  for (int t = 5; t < 10; ++t) {
    PutN(q, 1, absl::StrCat("t", t, "-new-"), t % 2, 0, absl::StrCat("t", t));
  }
  c.Open();
  Eventually(
      [&] {
        f.clock().Advance(absl::Milliseconds(100));  // The retry's timer.
        return c.got().size() >= static_cast<size_t>(kTopics + 5);
      },
      [&] { return StatsString(s); });
  std::map<std::string, std::vector<std::string>> by_topic;
  for (const Got& g : c.got()) by_topic[g.topic].push_back(g.payload);
  REQUIRE(by_topic.size() == static_cast<size_t>(kTopics));
  for (int t = 0; t < kTopics; ++t) {
    const std::string topic = absl::StrCat("t", t);
    std::vector<std::string> want{absl::StrCat(topic, "-0")};
    if (t >= 5 && t < 10) want.push_back(absl::StrCat(topic, "-new-0"));
    CHECK(by_topic[topic] == want);
  }
  CHECK(c.failures() == 1);
  Eventually([&] { return ValueOrDie(s->Stats()).lag == 0; });
  // Delivered, the singles' values are let go.
  CHECK(Paged(s)->TEST_ValueChunks() == 0);
  // Checkpointed and reopened: nothing comes again.
  f.Close();
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  Subscription* s2 = ValueOrDie(q->Subscribe({.name = "s"}, &again));
  Eventually([&] { return ValueOrDie(s2->Stats()).lag == 0; });
  PutN(q, 1, "last-", 0, 0, "t0");
  again.WaitFor(1);
  CHECK(Payloads(again.got()) == std::vector<std::string>{"last-0"});
}

TEST_CASE("a subscription's stats read what is on disk without its lock") {
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  Subscription* s = ValueOrDie(q->Subscribe(
      {.name = "s", .buffer_messages = 1, .max_active_lanes = 2}, &c));
  // Ten lanes delivered and checkpointed: their checkpoints are on disk.
  for (int t = 0; t < 10; ++t) {
    PutN(q, 1, absl::StrCat("t", t, "-"), t % 2, 0, absl::StrCat("t", t));
  }
  c.WaitFor(10);
  Eventually([&] { return ValueOrDie(s->Stats()).delivered == 10; });
  HQ_REQUIRE_OK(s->Checkpoint());
  // Then every delivery waits: twenty lanes with three messages each, in
  // memory or waiting in the source.
  c.Close();
  for (int t = 0; t < 20; ++t) {
    PutN(q, 3, absl::StrCat("t", t, "-more-"), t % 2, 0, absl::StrCat("t", t));
  }
  Eventually([&] { return c.calls() >= 11; });
  auto* impl = static_cast<SubscriptionImpl*>(s);
  int calls = 0, lock_free = 0;
  impl->TEST_SetCountHook([&] {
    ++calls;
    if (impl->TEST_LockIsFree()) ++lock_free;
  });
  const SubscriptionStats st = ValueOrDie(s->Stats());
  impl->TEST_SetCountHook(nullptr);
  CHECK(calls > 0);
  CHECK(lock_free == calls);
  CHECK(st.lag == 60);
  CHECK(st.lag_exact);
  CHECK(st.lanes.size() == st.resident_lanes);
  CHECK(st.active_lanes <= 2);
  CHECK(st.lanes.size() < 20);
  CHECK(st.delivered == 10);
  c.Open();
  c.WaitFor(70);
  Eventually([&] { return ValueOrDie(s->Stats()).lag == 0; });
}

TEST_CASE("issue40: a paged subscription's stats list its lanes in memory") {
  // More lanes with a checkpoint than the working set's cap: Stats lists
  // the lanes in memory (bounded by the cap and the buffer), never every
  // lane with a checkpoint; InspectSubscription reads them all.
  constexpr size_t kCap = 3;
  constexpr int kTopics = 50;
  Collector c;
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = Layout::kTopic}));
  auto put = [&](const std::string& prefix) {
    for (int t = 0; t < kTopics; ++t) {
      HQ_REQUIRE_OK(q->Put({.topic = absl::StrCat("t", t),
                            .payload = absl::StrCat(prefix, t)})
                        .status());
    }
  };
  put("a");
  Subscription* s = ValueOrDie(q->Subscribe(
      {.name = "s", .buffer_messages = 2, .max_active_lanes = kCap}, &c));
  c.WaitFor(kTopics);
  Eventually([&] { return ValueOrDie(s->Stats()).delivered == kTopics; });
  HQ_REQUIRE_OK(s->Checkpoint());
  SubscriptionStats st = ValueOrDie(s->Stats());
  CHECK(st.lanes.size() == st.resident_lanes);
  CHECK(st.lanes.size() <= kCap);
  CHECK(st.lag == 0);
  // Every delivery waits now: the working set fills, the rest wait on disk.
  c.Close();
  put("b");
  Eventually([&] { return c.calls() > kTopics; });
  st = ValueOrDie(s->Stats());
  CHECK(st.lanes.size() == st.resident_lanes);
  CHECK(st.active_lanes <= kCap);
  // The cap, and the lanes whose messages are buffered.
  CHECK(st.lanes.size() <= kCap + 2);
  CHECK(st.lag == kTopics);
  for (const LaneCheckpoint& lc : st.lanes) {
    CHECK(!lc.topic.empty());
    CHECK(!(lc.next < lc.written));
  }
  // What is stored: a checkpoint for every lane delivered.
  const SubscriptionStats stored = ValueOrDie(q->InspectSubscription("s"));
  CHECK(stored.lanes.size() == static_cast<size_t>(kTopics));
  CHECK(stored.resident_lanes == 0);
  CHECK(stored.active_lanes == 0);
  c.Open();
  c.WaitFor(2 * kTopics);
  Eventually([&] { return ValueOrDie(s->Stats()).lag == 0; });
}

TEST_CASE(
    "issue40: lanes a subscription's walk passed at their floor need no "
    "checkpoint record: after a restart none of their messages comes again, "
    "and their new ones come once") {
  const size_t cap = GENERATE(2, 1000);
  INFO("max_active_lanes " << cap);
  Collector c;
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 3, .priorities = 2, .layout = Layout::kTopic}));
  // 300 lanes of one message and 20 of three, before the subscription.
  const std::multiset<std::string> put = test::PutWalkedLanes(q);
  const SubscribeOptions o{.name = "s",
                           .checkpoint_messages = 25,
                           .buffer_messages = 16,
                           .max_active_lanes = cap};
  std::string checkpoints;
  {
    Collector c;
    Subscription* s = ValueOrDie(q->Subscribe(o, &c));
    checkpoints = format::GroupRecordPrefix(
        format::kCheckpointTag, static_cast<QueueImpl*>(q)->id(),
        static_cast<SubscriptionImpl*>(s)->record().id);
    c.WaitFor(put.size());
    Eventually([&] { return ValueOrDie(s->Stats()).lag == 0; });
    HQ_REQUIRE_OK(s->Checkpoint());
    std::multiset<std::string> got;
    for (const Got& g : c.got()) got.insert(g.payload);
    CHECK(got == put);
    // Lanes checkpointed behind a lane still held, or hinted again, get a
    // record; the others none (a record per lane would be 320).
    CHECK(test::CountKeys(f.db(), checkpoints) < 160);
    // As stored: every lane has its checkpoint, a record or its floor, at
    // its end.
    const SubscriptionStats stored = ValueOrDie(q->InspectSubscription("s"));
    CHECK(stored.lanes.size() == 320);
    CHECK(stored.lag == 0);
    f.Close();
  }
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  // New messages in old lanes (hinted: read from their floors) and in a
  // new one.
  std::multiset<std::string> later;
  for (int i = 0; i < 60; ++i) {
    const std::string topic =
        i < 40 ? absl::StrCat("s", i * 7) : absl::StrCat("m", i - 40);
    const std::string payload = absl::StrCat(topic, "/new");
    HQ_REQUIRE_OK(q->Put({.topic = topic,
                          .payload = payload,
                          .priority = i < 40 ? (i * 7) % 2 : 0})
                      .status());
    later.insert(payload);
  }
  HQ_REQUIRE_OK(q->Put({.topic = "fresh", .payload = "fresh/0"}).status());
  later.insert("fresh/0");
  // Its stats count only what is new, also in lanes waiting on disk.
  c.Close();
  Subscription* s = ValueOrDie(q->Subscribe(o, &c));
  Eventually([&] { return c.calls() >= 1; });
  const SubscriptionStats waiting = ValueOrDie(s->Stats());
  CHECK(waiting.lag == later.size());
  CHECK(waiting.lag_exact);
  CHECK(ValueOrDie(q->InspectSubscription("s")).lag == later.size());
  c.Open();
  c.WaitFor(later.size());
  Eventually([&] { return ValueOrDie(s->Stats()).lag == 0; });
  std::multiset<std::string> got;
  for (const Got& g : c.got()) got.insert(g.payload);
  CHECK(got == later);
  HQ_REQUIRE_OK(s->Checkpoint());
  const VerifyReport report = ValueOrDie(f.db()->Verify());
  for (const VerifyProblem& p : report.problems) FAIL_CHECK(p.description);
}

}  // namespace
}  // namespace hq
