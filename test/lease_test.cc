// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/notification.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/lease_manager.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::ValueOrDie;

TEST_CASE("a lease fires once, when the simulated clock reaches it") {
  SimulatedClock clock;
  LeaseManagerImpl leases(&clock);
  std::atomic<int> fired{0};
  const LeaseId id =
      ValueOrDie(leases.Create(absl::Seconds(10), [&] { ++fired; }));
  CHECK(id != 0);
  CHECK(leases.size() == 1);
  CHECK(ValueOrDie(leases.Deadline(id)) == clock.Now() + absl::Seconds(10));
  clock.Advance(absl::Seconds(9));
  CHECK(fired == 0);
  clock.Advance(absl::Seconds(1));  // Returns after due actions ran.
  CHECK(fired == 1);
  clock.Advance(absl::Hours(1));
  CHECK(fired == 1);
  CHECK(leases.size() == 0);
  // The holder learns it expired.
  CHECK(absl::IsFailedPrecondition(leases.Renew(id, absl::Seconds(1))));
  CHECK(absl::IsFailedPrecondition(leases.Cancel(id)));
}

TEST_CASE("renew moves the deadline; cancel means never") {
  SimulatedClock clock;
  LeaseManagerImpl leases(&clock);
  std::atomic<int> a_fired{0}, b_fired{0};
  const LeaseId a =
      ValueOrDie(leases.Create(absl::Seconds(5), [&] { ++a_fired; }));
  const LeaseId b =
      ValueOrDie(leases.Create(absl::Seconds(5), [&] { ++b_fired; }));
  clock.Advance(absl::Seconds(4));
  HQ_REQUIRE_OK(leases.Renew(a, absl::Seconds(5)));  // Now due at 9s.
  HQ_REQUIRE_OK(leases.Cancel(b));
  clock.Advance(absl::Seconds(4));  // 8s.
  CHECK(a_fired == 0);
  CHECK(b_fired == 0);
  clock.Advance(absl::Seconds(1));  // 9s.
  CHECK(a_fired == 1);
  clock.Advance(absl::Hours(1));
  CHECK(b_fired == 0);
  CHECK(absl::IsNotFound(leases.Cancel(b)));  // Cancelled, not expired.
  CHECK(absl::IsNotFound(leases.Renew(12345678, absl::Seconds(1))));
  CHECK(absl::IsNotFound(leases.Renew(0, absl::Seconds(1))));
  CHECK(absl::IsInvalidArgument(
      leases.Create(-absl::Seconds(1), [] {}).status()));
  CHECK(absl::IsInvalidArgument(
      leases.Create(absl::InfiniteDuration(), [] {}).status()));
  CHECK(absl::IsInvalidArgument(
      leases.Create(absl::Seconds(1), nullptr).status()));
}

// The heap against a model: after every step, exactly the leases whose
// deadlines passed have fired, each once, in deadline order.
TEST_CASE("random create, renew, cancel and advance match a model") {
  SimulatedClock clock;
  LeaseManagerImpl leases(&clock);
  std::mt19937_64 rng(test::Seed(1));
  struct Model {
    absl::Time deadline;
    bool live = true;
  };
  std::map<LeaseId, Model> model;
  std::vector<std::pair<absl::Time, LeaseId>> fired;  // (time fired, id)
  std::mutex fired_mu;
  std::vector<LeaseId> ids;
  for (int step = 0; step < 20000; ++step) {
    const int op = static_cast<int>(rng() % 10);
    // >= 1ms: a lease due now fires at once, without waiting for Advance.
    const absl::Duration d = absl::Milliseconds(1 + rng() % 5000);
    if (op < 4 || ids.empty()) {
      // The action learns its own id through `holder`, set before any
      // Advance can fire it.
      auto holder = std::make_shared<LeaseId>(0);
      const LeaseId id = ValueOrDie(leases.Create(d, [&, holder] {
        std::lock_guard<std::mutex> l(fired_mu);
        fired.emplace_back(clock.Now(), *holder);
      }));
      *holder = id;
      model[id] = {clock.Now() + d};
      ids.push_back(id);
    } else if (op < 6) {
      const LeaseId id = ids[rng() % ids.size()];
      const absl::Status s = leases.Renew(id, d);
      if (model[id].live) {
        HQ_REQUIRE_OK(s);
        model[id].deadline = clock.Now() + d;
      } else {
        CHECK(!s.ok());
      }
    } else if (op < 7) {
      const LeaseId id = ids[rng() % ids.size()];
      const absl::Status s = leases.Cancel(id);
      if (model[id].live) {
        HQ_REQUIRE_OK(s);
        model[id].live = false;
      } else {
        CHECK(!s.ok());
      }
    } else {
      clock.Advance(absl::Milliseconds(rng() % 700));
      const absl::Time now = clock.Now();
      std::lock_guard<std::mutex> l(fired_mu);
      for (auto& [id, m] : model) {
        if (m.live && m.deadline <= now) {
          m.live = false;
          m.deadline = absl::InfinitePast();  // Expect it in `fired`.
        }
      }
    }
  }
  clock.Advance(absl::Hours(1));
  size_t expected_fired = 0;  // Expired on the way, or in the last advance.
  for (auto& [id, m] : model) {
    if (m.live || m.deadline == absl::InfinitePast()) ++expected_fired;
  }
  std::map<LeaseId, int> times;
  for (const auto& [t, id] : fired) ++times[id];
  CHECK(fired.size() == expected_fired);
  for (const auto& [id, n] : times) {
    INFO("lease " << id);
    CHECK(n == 1);
    CHECK(model.count(id) == 1);
  }
  // Fired in time order: each at or after its own time of firing before.
  for (size_t i = 1; i < fired.size(); ++i)
    CHECK(fired[i - 1].first <= fired[i].first);
  CHECK(leases.size() == 0);
}

TEST_CASE("actions may use the manager; cancelling your own returns at once") {
  SimulatedClock clock;
  LeaseManagerImpl leases(&clock);
  std::atomic<int> chained{0};
  auto self = std::make_shared<LeaseId>(0);
  absl::Status own_cancel;
  *self = ValueOrDie(leases.Create(absl::Seconds(1), [&, self] {
    own_cancel = leases.Cancel(*self);
    // Chain a new lease from inside an action.
    (void)leases.Create(absl::Seconds(1), [&] { ++chained; });
  }));
  clock.Advance(absl::Seconds(1));
  CHECK(absl::IsFailedPrecondition(own_cancel));
  CHECK(chained == 0);
  clock.Advance(absl::Seconds(1));
  CHECK(chained == 1);
}

TEST_CASE("cancel waits for a running action to finish") {
  SimulatedClock clock;
  LeaseManagerImpl leases(&clock);
  absl::Notification started, release;
  std::atomic<bool> finished{false};
  const LeaseId id = ValueOrDie(leases.Create(absl::Seconds(1), [&] {
    started.Notify();
    release.WaitForNotification();
    finished = true;
  }));
  std::thread advancer([&] { clock.Advance(absl::Seconds(1)); });
  started.WaitForNotification();
  absl::Status cancel_status;
  bool finished_when_cancel_returned = false;
  std::thread canceller([&] {
    cancel_status = leases.Cancel(id);
    finished_when_cancel_returned = finished.load();
  });
  release.Notify();
  canceller.join();
  advancer.join();
  CHECK(absl::IsFailedPrecondition(cancel_status));
  CHECK(finished_when_cancel_returned);  // Never before the action ended.
}

// The renewal race: holders renew leases exactly when they fall due, while
// another thread moves the clock so that the lease thread fires them. Each
// lease either renews (and must not fire before its new deadline) or
// expires (and every later renew fails): never both, never twice.
TEST_CASE("renew racing expiry: exactly one wins, the action runs once") {
  SimulatedClock clock;
  LeaseManagerImpl leases(&clock);
  constexpr int kLeases = 4000;
  std::vector<std::atomic<int>> fired(kLeases);
  std::vector<LeaseId> ids(kLeases);
  for (int i = 0; i < kLeases; ++i) {
    ids[i] = ValueOrDie(
        leases.Create(absl::Seconds(1), [&fired, i] { fired[i]++; }));
  }
  std::vector<int> renewed(kLeases, 0);  // 1: Renew returned OK.
  std::atomic<int> wrong_errors{0};      // Catch2 is not thread-safe.
  std::atomic<bool> go{false};
  std::vector<std::thread> holders;
  for (int t = 0; t < 4; ++t) {
    holders.emplace_back([&, t] {
      while (!go) std::this_thread::yield();
      for (int i = t; i < kLeases; i += 4) {
        const absl::Status s = leases.Renew(ids[i], absl::Seconds(100));
        if (s.ok()) {
          renewed[i] = 1;
        } else if (!absl::IsFailedPrecondition(s)) {
          ++wrong_errors;
        }
      }
    });
  }
  go = true;
  clock.Advance(absl::Seconds(1));  // All due: races the holders.
  for (auto& h : holders) h.join();
  CHECK(wrong_errors == 0);
  clock.Advance(absl::Seconds(50));  // Before any renewed deadline.
  int renewed_n = 0, fired_n = 0;
  for (int i = 0; i < kLeases; ++i) {
    INFO("lease " << i);
    CHECK(renewed[i] + fired[i].load() == 1);
    renewed_n += renewed[i];
    fired_n += fired[i].load();
  }
  INFO("renewed " << renewed_n << ", expired " << fired_n);
  clock.Advance(absl::Seconds(100));  // Now the renewed ones expire too.
  for (int i = 0; i < kLeases; ++i) CHECK(fired[i].load() == 1);
}

TEST_CASE("with the real clock, a lease fires by itself") {
  LeaseManagerImpl leases(Clock::Default());
  absl::Notification fired;
  ValueOrDie(leases.Create(absl::Milliseconds(20), [&] { fired.Notify(); }));
  // A liveness check, not a timing one: generous bound.
  CHECK(fired.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST_CASE("200k leases: renew half, cancel a quarter, the rest fire once") {
  SimulatedClock clock;
  LeaseManagerImpl leases(&clock);
  constexpr int kN = 200000;
  std::atomic<int64_t> fired_sum{0};
  std::atomic<int> fired_n{0};
  std::vector<LeaseId> ids(kN);
  for (int i = 0; i < kN; ++i) {
    ids[i] =
        ValueOrDie(leases.Create(absl::Milliseconds(1000 + i % 1000), [&, i] {
          fired_sum += i;
          ++fired_n;
        }));
  }
  for (int i = 0; i < kN; i += 2)
    HQ_REQUIRE_OK(leases.Renew(ids[i], absl::Hours(1)));
  int64_t want_sum = 0;
  int want_n = 0;
  for (int i = 1; i < kN; i += 2) {
    if (i % 4 == 1) {
      HQ_REQUIRE_OK(leases.Cancel(ids[i]));
    } else {
      want_sum += i;
      ++want_n;
    }
  }
  CHECK(leases.size() == static_cast<size_t>(kN / 2 + want_n));
  clock.Advance(absl::Seconds(2));
  CHECK(fired_n == want_n);
  CHECK(fired_sum == want_sum);
  CHECK(leases.size() == static_cast<size_t>(kN / 2));
}

}  // namespace
}  // namespace hq

namespace hq {
namespace {

using test::DbFixture;
using test::Impl;
using test::NoBackgroundSweeps;
using test::Storage;

TEST_CASE("an idle scanner's lease expires and frees its snapshot at once") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  for (int i = 0; i < 10; ++i) HQ_REQUIRE_OK(q->Put({.payload = "m"}).status());
  auto scanner = ValueOrDie(q->NewScanner({}));
  REQUIRE(scanner->Next());  // The last call, at t = 0.
  CHECK(Impl(f.db())->TEST_ScannerResources() == 1);
  // Idle expiry comes between one and two leases after the last call.
  f.clock().Advance(absl::Seconds(60));
  CHECK(Impl(f.db())->TEST_ScannerResources() == 1);
  f.clock().Advance(absl::Seconds(60));
  CHECK(Impl(f.db())->TEST_ScannerResources() == 0);  // Released already.
  CHECK_FALSE(scanner->Next());
  CHECK(absl::IsFailedPrecondition(scanner->status()));
  CHECK(absl::StrContains(scanner->status().message(), "lease expired"));
  CHECK_FALSE(scanner->Next());  // Stays failed.
  scanner.reset();
  CHECK(f.db()->leases()->size() == 0);
}

TEST_CASE("a scanner read from expires when the clock jumps past two leases") {
  // Issue 19: the lease was re-armed from the time it fired, so a single
  // large Advance left the scanner alive.
  for (absl::Duration jump :
       {absl::Seconds(2), absl::Seconds(5), absl::Hours(24 * 365)}) {
    DYNAMIC_SECTION("jump " << absl::FormatDuration(jump)) {
      Options o = NoBackgroundSweeps();
      o.scanner_lease = absl::Seconds(1);
      DbFixture f(Storage::kMemory, o);
      Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
      for (int i = 0; i < 3; ++i) {
        HQ_REQUIRE_OK(q->Put({.payload = "m"}).status());
      }
      auto scanner = ValueOrDie(q->NewScanner({}));
      f.clock().Advance(absl::Milliseconds(500));
      REQUIRE(scanner->Next());  // The last call, half a lease in.
      f.clock().Advance(jump);
      CHECK(Impl(f.db())->TEST_ScannerResources() == 0);
      CHECK_FALSE(scanner->Next());
      CHECK(absl::IsFailedPrecondition(scanner->status()));
      scanner.reset();
      CHECK(f.db()->leases()->size() == 0);
    }
  }
}

TEST_CASE("a scanner lives at least one lease after its last call") {
  Options o;
  o.scanner_lease = absl::Seconds(10);
  DbFixture f(Storage::kMemory, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  for (int i = 0; i < 3; ++i) HQ_REQUIRE_OK(q->Put({.payload = "m"}).status());
  auto scanner = ValueOrDie(q->NewScanner({}));
  // Calls just before each deadline, and one jump of almost a lease after
  // the last: the scanner is still there.
  for (int i = 0; i < 3; ++i) {
    f.clock().Advance(absl::Milliseconds(9999));
    REQUIRE(scanner->Next());
  }
  f.clock().Advance(absl::Milliseconds(9999));
  CHECK(Impl(f.db())->TEST_ScannerResources() == 1);
  CHECK_FALSE(scanner->Next());  // Read all three; the end is no error.
  CHECK(scanner->status().ok());
}

TEST_CASE("a scanner never called expires after one lease") {
  Options o;
  o.scanner_lease = absl::Seconds(5);
  DbFixture f(Storage::kMemory, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  auto scanner = ValueOrDie(q->NewScanner({}));
  f.clock().Advance(absl::Seconds(5));
  CHECK(Impl(f.db())->TEST_ScannerResources() == 0);
  CHECK_FALSE(scanner->Next());
  CHECK(absl::IsFailedPrecondition(scanner->status()));
}

TEST_CASE("a scanner in use never expires") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  for (int i = 0; i < 20; ++i) HQ_REQUIRE_OK(q->Put({.payload = "m"}).status());
  auto scanner = ValueOrDie(q->NewScanner({}));
  int read = 0;
  for (int i = 0; i < 20; ++i) {
    f.clock().Advance(absl::Seconds(59));
    REQUIRE(scanner->Next());
    ++read;
  }
  CHECK_FALSE(scanner->Next());
  HQ_REQUIRE_OK(scanner->status());
  CHECK(read == 20);
  scanner.reset();
  CHECK(Impl(f.db())->TEST_ScannerResources() == 0);
  CHECK(f.db()->leases()->size() == 0);
}

// Review of issue 3: Cancel destroyed the action (and what it captured)
// under the manager's lock; a captured Scanner's destructor cancels its own
// lease, so that deadlocked.
TEST_CASE("issue3: cancelling a lease whose action holds a scanner") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  std::shared_ptr<Scanner> scanner = ValueOrDie(q->NewScanner({}));
  const LeaseId id = ValueOrDie(f.db()->leases()->Create(
      absl::Hours(1), [s = scanner] { (void)s->Next(); }));
  scanner.reset();  // The lease's action owns it now.
  HQ_REQUIRE_OK(f.db()->leases()->Cancel(id));  // Destroys the scanner.
  CHECK(Impl(f.db())->TEST_ScannerResources() == 0);
  // And one left pending when the Db closes is destroyed safely too.
  std::shared_ptr<Scanner> held = ValueOrDie(q->NewScanner({}));
  ValueOrDie(f.db()->leases()->Create(absl::Hours(1), [s = held] {}));
  held.reset();
}

TEST_CASE("max_open_scanners caps scanners holding snapshots") {
  Options o;
  o.max_open_scanners = 2;
  DbFixture f(Storage::kMemory, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  auto a = ValueOrDie(q->NewScanner({}));
  auto b = ValueOrDie(q->NewScanner({}));
  const auto third = q->NewScanner({});
  CHECK(absl::IsResourceExhausted(third.status()));
  CHECK(absl::StrContains(third.status().message(), "max_open_scanners"));
  b.reset();  // Destroying one frees its place...
  auto c = ValueOrDie(q->NewScanner({}));
  CHECK(absl::IsResourceExhausted(q->NewScanner({}).status()));
  f.clock().Advance(absl::Seconds(60));  // ...and so does expiry.
  CHECK(Impl(f.db())->TEST_ScannerResources() == 0);
  auto d = ValueOrDie(q->NewScanner({}));
  auto e = ValueOrDie(q->NewScanner({}));
}

}  // namespace
}  // namespace hq
