// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Regressions from the review of push subscriptions (hq/subscription.h):
// each case failed on the first version. Waits are liveness bounds (the
// real-time limits only matter when the behaviour is broken).

#include <algorithm>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "hq/hq.h"
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

// Records payloads; `fail` may refuse a message; `on` sees each call.
class Probe : public MessageListener {
 public:
  absl::Status OnMessage(const MessageView& m) override {
    if (on_) on_(m);
    MutexLock l(&mu_);
    ++calls_;
    if (fail_ && fail_(m)) {
      ++failures_;
      return absl::UnavailableError("refused");
    }
    got_.emplace_back(m.payload);
    return absl::OkStatus();
  }
  std::function<bool(const MessageView&)> fail_;
  std::function<void(const MessageView&)> on_;

  bool Has(const std::string& p) {
    MutexLock l(&mu_);
    return std::find(got_.begin(), got_.end(), p) != got_.end();
  }
  size_t failures() {
    MutexLock l(&mu_);
    return failures_;
  }
  size_t count() {
    MutexLock l(&mu_);
    return got_.size();
  }
  std::vector<std::string> got() {
    MutexLock l(&mu_);
    return got_;
  }

 private:
  Mutex mu_;
  std::vector<std::string> got_;
  size_t calls_ = 0;
  size_t failures_ = 0;
};

// Waits up to `limit` of real time for `pred`; returns whether it held.
bool Within(absl::Duration limit, const std::function<bool()>& pred) {
  const absl::Time give_up = absl::Now() + limit;
  while (!pred()) {
    if (absl::Now() > give_up) return false;
    absl::SleepFor(absl::Milliseconds(2));
  }
  return true;
}

// subscription_impl.cc Deliver: a retry timer is armed only when the new
// retry time is earlier than the pending one; when that timer fires and
// the first lane recovers, nothing wakes the second lane at its retry time.
TEST_CASE("review: a second failing lane is retried at its own retry time") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  Probe c;
  std::atomic<int> refuse_a{1}, refuse_b{1};
  c.fail_ = [&](const MessageView& m) {
    if (m.payload == "a0") return refuse_a.fetch_sub(1) > 0;
    if (m.payload == "b0") return refuse_b.fetch_sub(1) > 0;
    return false;
  };
  Subscription* s =
      ValueOrDie(q->Subscribe({.name = "s",
                               .checkpoint_interval = absl::Hours(1),
                               .retry_base = absl::Seconds(1),
                               .retry_cap = absl::Seconds(1)},
                              &c));
  // failed_attempts counts a failure once its retry timer is set: only
  // then may the clock move.
  auto failed = [&] { return ValueOrDie(s->Stats()).failed_attempts; };
  ValueOrDie(q->Put({.payload = "a0", .partition = 0u}));
  REQUIRE(Within(absl::Seconds(30), [&] { return failed() == 1; }));
  f.clock().Advance(absl::Milliseconds(500));
  ValueOrDie(q->Put({.payload = "b0", .partition = 1u}));
  REQUIRE(Within(absl::Seconds(30), [&] { return failed() == 2; }));
  f.clock().Advance(absl::Milliseconds(500));  // a0's retry time.
  REQUIRE(Within(absl::Seconds(30), [&] { return c.Has("a0"); }));
  f.clock().Advance(absl::Seconds(1));  // Past b0's retry time.
  // b0's lane should be retried now (not an hour later, at the checkpoint
  // timer).
  CHECK(Within(absl::Seconds(30), [&] { return c.Has("b0"); }));
}

// subscription_impl.cc Fill/Full: the shared buffer fills with the
// messages of a lane that waits for a retry, and then no other lane is read.
TEST_CASE("review: a failing lane with a backlog does not stop other lanes") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  for (int i = 0; i < 5; ++i) {
    ValueOrDie(q->Put({.payload = absl::StrCat("a", i), .partition = 0u}));
  }
  Probe c;
  c.fail_ = [](const MessageView& m) { return m.payload[0] == 'a'; };
  ValueOrDie(q->Subscribe({.name = "s",
                           .buffer_messages = 2,
                           .retry_base = absl::Minutes(1),
                           .retry_cap = absl::Minutes(1)},
                          &c));
  REQUIRE(Within(absl::Seconds(30), [&] { return c.failures() >= 1; }));
  ValueOrDie(q->Put({.payload = "b0", .partition = 1u}));
  // "other lanes go on"
  CHECK(Within(absl::Seconds(30), [&] { return c.Has("b0"); }));
}

// subscription_impl.cc RunSlice: since_checkpoint_ is compared with
// checkpoint_messages only after a whole slice (up to 256 deliveries).
TEST_CASE("review: checkpoint_messages = 1 bounds redelivery after a crash") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  const std::vector<PutResult> ids = PutN(q, 120);
  Probe c;
  std::atomic<bool> seen{false};
  MessageId at_100;
  c.on_ = [&](const MessageView& m) {
    if (m.payload == "m100" && !seen.load()) {
      at_100 = test::StoredCheckpoint(f.db(), q).value_or(MessageId::Min());
      seen.store(true);
    }
  };
  ValueOrDie(q->Subscribe({.name = "s",
                           .checkpoint_messages = 1,
                           .checkpoint_interval = absl::Hours(1)},
                          &c));
  REQUIRE(Within(absl::Seconds(30), [&] { return c.count() == 120; }));
  REQUIRE(seen.load());
  // 100 messages were delivered before m100; with a checkpoint every
  // delivery, a crash here would redeliver from (near) m100, not from m0.
  INFO("stored checkpoint when m100 is delivered: " << at_100.ToString());
  CHECK(!(at_100 < ids[90].id));
}

// queue_impl.cc Subscribe, kTime: the start is MessageId{floor(ms), 0}, so
// a message of the same millisecond but before start_time is delivered.
TEST_CASE("review: kTime starts at the first message with time >= start_time") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  ValueOrDie(q->Put({.payload = "early"}));  // Id time: T (whole ms).
  f.clock().Advance(absl::Microseconds(500));
  const absl::Time start = f.clock().Now();  // T + 0.5 ms.
  f.clock().Advance(absl::Milliseconds(1));
  ValueOrDie(q->Put({.payload = "late"}));  // Id time: T + 1 ms.
  Probe c;
  ValueOrDie(q->Subscribe({.name = "t",
                           .start = SubscribeOptions::Start::kTime,
                           .start_time = start},
                          &c));
  REQUIRE(Within(absl::Seconds(30), [&] { return c.Has("late"); }));
  CHECK(c.got() == std::vector<std::string>{"late"});
}

// subscription_impl.cc ArmTimer/Stop: a firing timer erases itself from
// timers_ and unlocks mu_ before it calls pool_->Schedule(this); Stop then
// does not wait for it, and Unsubscribe deletes the subscription under it.
// Detected by the ASan and TSan builds of the suite (a stress, not
// deterministic).
TEST_CASE("review: unsubscribe while a retry timer fires (ASan)") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  ValueOrDie(q->Put({.payload = "x"}));
  Probe c;
  c.fail_ = [](const MessageView&) { return true; };
  std::atomic<bool> stop{false};
  std::thread ticker([&] {
    while (!stop.load()) f.clock().Advance(absl::Milliseconds(1));
  });
  for (int i = 0; i < 300; ++i) {
    const std::string name = absl::StrCat("u", i);
    ValueOrDie(q->Subscribe({.name = name,
                             .retry_base = absl::Milliseconds(1),
                             .retry_cap = absl::Milliseconds(1)},
                            &c));
    const size_t before = c.failures();
    Within(absl::Seconds(5), [&] { return c.failures() > before + 2; });
    REQUIRE(q->Unsubscribe(name).ok());
  }
  stop.store(true);
  ticker.join();
}

}  // namespace
}  // namespace hq
