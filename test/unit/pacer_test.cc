// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The Pacer (lib/consume/pacer.h) alone: topic pacing as a group relies on
// it, driven by a SimulatedClock (the clock a Db is given in tests) that
// steps forwards and backwards, with an in-memory table of topics' own
// pacing for its lookup. No Db.

#include "lib/consume/pacer.h"

#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "catch2/catch.hpp"
#include "hq/clock.h"

namespace hq {
namespace {

// The topics' own pacing (ConsumerGroup::SetTopicPacing), in memory, with
// a count of lookups and an injectable failure.
struct FakeOverrides {
  std::map<std::string, TopicPacing, std::less<>> own;
  absl::Status fail = absl::OkStatus();
  int lookups = 0;

  Pacer::Lookup AsLookup() {
    return [this](std::string_view topic)
               -> absl::StatusOr<std::optional<TopicPacing>> {
      ++lookups;
      if (!fail.ok()) return fail;
      auto it = own.find(topic);
      if (it == own.end()) return std::optional<TopicPacing>();
      return std::optional<TopicPacing>(it->second);
    };
  }
};

bool May(Pacer& p, std::string_view topic, absl::Time now) {
  absl::StatusOr<bool> may = p.MayHandOut(topic, now);
  REQUIRE(may.ok());
  return *may;
}

TopicPacing Interval(absl::Duration d) { return {.interval = d}; }

TEST_CASE("pacer: no pacing hands out everything and keeps no state") {
  FakeOverrides o;
  Pacer p(o.AsLookup());
  SimulatedClock clock;
  CHECK_FALSE(p.on());
  for (int i = 0; i < 100; ++i) {
    REQUIRE(May(p, "t", clock.Now()));
    p.HandedOut("t", clock.Now());
  }
  for (int i = 0; i < 100; ++i) CHECK_FALSE(p.Ended("t", clock.Now()));
  p.Prune(clock.Now());
  CHECK(p.topics() == 0);
  CHECK(o.lookups == 0);  // No topic may have its own: never looked up.
}

TEST_CASE("pacer: a topic is never handed out sooner than its interval") {
  FakeOverrides o;
  Pacer p(o.AsLookup());
  const absl::Duration interval = absl::Seconds(10);
  p.SetDefault(Interval(interval));
  REQUIRE(p.on());
  SimulatedClock clock;
  const absl::Time t0 = clock.Now();
  REQUIRE(May(p, "a", t0));
  p.HandedOut("a", t0);
  CHECK(p.latest() == t0);
  const bool ended_now = GENERATE(false, true);
  if (ended_now) p.Ended("a", t0);  // Done at once, or still in flight.

  // Every moment before the interval ends, with Prune between (as each
  // claim does), refuses; the end of the interval admits.
  for (absl::Duration d : {absl::ZeroDuration(), absl::Milliseconds(1),
                           absl::Seconds(5), interval - absl::Nanoseconds(1)}) {
    clock.Set(t0 + d);
    p.Prune(clock.Now());
    CHECK_FALSE(May(p, "a", clock.Now()));
    CHECK(p.NextDue(clock.Now()) == t0 + interval);
  }
  // Another topic is not held back by it.
  CHECK(May(p, "b", clock.Now()));
  clock.Set(t0 + interval);
  p.Prune(clock.Now());
  CHECK(May(p, "a", clock.Now()));
  CHECK(p.NextDue(clock.Now()) == absl::InfiniteFuture());
}

TEST_CASE("pacer: a clock that steps back does not shorten an interval") {
  FakeOverrides o;
  Pacer p(o.AsLookup());
  const absl::Duration interval = absl::Minutes(1);
  p.SetDefault(Interval(interval));
  SimulatedClock clock;
  const absl::Time t0 = clock.Now();
  REQUIRE(May(p, "a", t0));
  p.HandedOut("a", t0);
  const absl::Duration back =
      GENERATE(absl::Milliseconds(1), absl::Hours(1), absl::Hours(24 * 365));
  clock.Advance(-back);
  p.Prune(clock.Now());
  CHECK_FALSE(May(p, "a", clock.Now()));
  // Its task ends while the clock is back: the interval still runs.
  p.Ended("a", clock.Now());
  p.Prune(clock.Now());
  CHECK_FALSE(May(p, "a", clock.Now()));
  CHECK(p.NextDue(clock.Now()) == t0 + interval);
  // Forwards again, one nanosecond short of the interval: still refused.
  clock.Set(t0 + interval - absl::Nanoseconds(1));
  p.Prune(clock.Now());
  CHECK_FALSE(May(p, "a", clock.Now()));
  clock.Set(t0 + interval);
  CHECK(May(p, "a", clock.Now()));
}

TEST_CASE("pacer: a clock that jumps forward past the interval admits") {
  FakeOverrides o;
  Pacer p(o.AsLookup());
  p.SetDefault(Interval(absl::Seconds(10)));
  SimulatedClock clock;
  const absl::Time t0 = clock.Now();
  REQUIRE(May(p, "a", t0));
  p.HandedOut("a", t0);
  p.Ended("a", t0);
  clock.Advance(absl::Hours(1000));
  p.Prune(clock.Now());
  CHECK(p.topics() == 0);  // Its interval is over: forgotten.
  CHECK(May(p, "a", clock.Now()));
}

TEST_CASE("pacer: at most max_in_flight tasks of a topic in flight") {
  FakeOverrides o;
  Pacer p(o.AsLookup());
  const uint32_t limit = GENERATE(1u, 3u);
  p.SetDefault({.max_in_flight = limit});
  SimulatedClock clock;
  for (uint32_t i = 0; i < limit; ++i) {
    REQUIRE(May(p, "a", clock.Now()));
    p.HandedOut("a", clock.Now());
  }
  CHECK_FALSE(May(p, "a", clock.Now()));
  CHECK(May(p, "b", clock.Now()));  // Per topic.
  // Its first task to end frees a place, and says the topic was full.
  CHECK(p.Ended("a", clock.Now()));
  CHECK(May(p, "a", clock.Now()));
  p.HandedOut("a", clock.Now());
  CHECK_FALSE(May(p, "a", clock.Now()));
  // Ending tasks of a topic below its limit is not "was full".
  CHECK(p.Ended("a", clock.Now()));
  if (limit > 1) CHECK_FALSE(p.Ended("a", clock.Now()));
  // More Ended calls than hand-outs change nothing.
  for (int i = 0; i < 5; ++i) p.Ended("a", clock.Now());
  p.Prune(clock.Now());
  CHECK(p.topics() == 0);
}

TEST_CASE("pacer: idle topics cost nothing") {
  FakeOverrides o;
  Pacer p(o.AsLookup());
  p.SetDefault({.max_in_flight = 2, .interval = absl::Seconds(1)});
  SimulatedClock clock;
  // Looked at but not handed out: gone at the next Prune.
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(May(p, "t" + std::to_string(i), clock.Now()));
  }
  p.Prune(clock.Now());
  CHECK(p.topics() == 0);
  // Handed out and ended: kept while the interval runs, then gone.
  for (int i = 0; i < 1000; ++i) {
    const std::string t = "t" + std::to_string(i);
    REQUIRE(May(p, t, clock.Now()));
    p.HandedOut(t, clock.Now());
    p.Ended(t, clock.Now());
  }
  p.Prune(clock.Now());
  CHECK(p.topics() == 1000);
  clock.Advance(absl::Seconds(1));
  p.Prune(clock.Now());
  CHECK(p.topics() == 0);
  // In flight past its interval: kept until its task ends.
  REQUIRE(May(p, "x", clock.Now()));
  p.HandedOut("x", clock.Now());
  clock.Advance(absl::Seconds(5));
  p.Prune(clock.Now());
  CHECK(p.topics() == 1);
  p.Ended("x", clock.Now());
  CHECK(p.topics() == 0);
}

TEST_CASE("pacer: a topic's own pacing wins over the default") {
  FakeOverrides o;
  o.own["slow"] = Interval(absl::Hours(1));
  o.own["free"] = TopicPacing{};
  Pacer p(o.AsLookup());
  p.SetDefault(Interval(absl::Seconds(1)));
  p.SetMayHaveOverrides(true);
  SimulatedClock clock;
  const absl::Time t0 = clock.Now();
  for (const char* t : {"slow", "free", "other"}) {
    REQUIRE(May(p, t, t0));
    p.HandedOut(t, t0);
    p.Ended(t, t0);
  }
  CHECK(May(p, "free", t0));  // Its own: no interval.
  clock.Advance(absl::Seconds(1));
  p.Prune(clock.Now());
  CHECK(May(p, "other", clock.Now()));       // The default's second.
  CHECK_FALSE(May(p, "slow", clock.Now()));  // Its own hour.
  clock.Set(t0 + absl::Hours(1));
  CHECK(May(p, "slow", clock.Now()));

  SECTION("a lookup that fails is the caller's error") {
    o.fail = absl::UnavailableError("the pace records cannot be read");
    absl::StatusOr<bool> may = p.MayHandOut("unknown", clock.Now());
    CHECK(may.status().code() == absl::StatusCode::kUnavailable);
  }
  SECTION("a changed override applies to a topic with state") {
    p.OverrideChanged("slow", Interval(absl::Seconds(1)));
    p.HandedOut("slow", clock.Now());
    clock.Advance(absl::Seconds(1));
    CHECK(May(p, "slow", clock.Now()));
  }
  SECTION("unchanged, the topic keeps its own interval") {
    p.HandedOut("slow", clock.Now());
    clock.Advance(absl::Seconds(1));
    CHECK_FALSE(May(p, "slow", clock.Now()));
  }
}

TEST_CASE("pacer: after a restart a topic waits out the interval") {
  FakeOverrides o;
  Pacer p(o.AsLookup());
  const absl::Duration interval = absl::Seconds(30);
  p.SetDefault(Interval(interval));
  SimulatedClock clock;
  const absl::Time last = clock.Now();  // Before the restart.
  p.SetResumeAfter(last);
  clock.Advance(absl::Seconds(10));
  CHECK_FALSE(May(p, "never-seen", clock.Now()));
  p.Prune(clock.Now());
  CHECK(p.NextDue(clock.Now()) == last + interval);
  clock.Set(last + interval);
  p.Prune(clock.Now());
  CHECK(May(p, "never-seen", clock.Now()));
}

// Random claims, completions and clock steps (forwards and backwards) over
// a few topics, checked against what a user relies on:
// - a topic is never handed out sooner than its interval after its last
//   hand-out, unless the clock had already shown that interval over (and
//   then stepped back);
// - never more than max_in_flight of a topic in flight;
// - a topic below its limit whose interval is over is handed out;
// - once everything ended and every interval is over, no state is left.
TEST_CASE("pacer: random claims over a clock that jumps") {
  const uint32_t seed = GENERATE(1u, 2u, 3u, 4u, 5u, 6u, 7u, 8u);
  std::mt19937 rng(seed);
  FakeOverrides o;
  o.own["t0"] = {.max_in_flight = 1, .interval = absl::Milliseconds(700)};
  Pacer p(o.AsLookup());
  const TopicPacing def{.max_in_flight = 2, .interval = absl::Seconds(1)};
  p.SetDefault(def);
  p.SetMayHaveOverrides(true);
  SimulatedClock clock;
  struct Model {
    uint32_t in_flight = 0;
    std::optional<absl::Time> last;          // Its latest hand-out.
    absl::Time high = absl::InfinitePast();  // The clock's most since.
  };
  std::map<std::string, Model> model;
  const std::vector<std::string> topics = {"t0", "t1", "t2", "t3"};
  auto pacing = [&](const std::string& t) {
    return t == "t0" ? o.own["t0"] : def;
  };
  absl::Time high = clock.Now();
  for (int step = 0; step < 20000; ++step) {
    const absl::Time now = clock.Now();
    high = std::max(high, now);
    for (auto& [t, m] : model) m.high = std::max(m.high, now);
    const std::string& t = topics[rng() % topics.size()];
    Model& m = model[t];
    const TopicPacing tp = pacing(t);
    switch (rng() % 6) {
      case 0:
      case 1: {  // A claim looks at the topic.
        p.Prune(now);
        const bool may = May(p, t, now);
        const bool due = !m.last.has_value() || now >= *m.last + tp.interval;
        const bool room = m.in_flight < tp.max_in_flight;
        if (may) {
          INFO("seed " << seed << " step " << step << " topic " << t);
          CHECK(room);
          CHECK((due || m.high >= *m.last + tp.interval));
          p.HandedOut(t, now);
          ++m.in_flight;
          m.last = now;
          m.high = now;
        } else {
          INFO("seed " << seed << " step " << step << " topic " << t);
          CHECK_FALSE((due && room));
        }
        break;
      }
      case 2:
        if (m.in_flight > 0) {
          const bool was_full = p.Ended(t, now);
          CHECK(was_full == (m.in_flight == tp.max_in_flight));
          --m.in_flight;
        }
        break;
      case 3:
        clock.Advance(absl::Milliseconds(rng() % 400));
        break;
      case 4:
        // Mostly small steps back, sometimes a big one either way.
        if (rng() % 10 == 0) {
          clock.Advance(absl::Seconds(static_cast<int>(rng() % 7200)) -
                        absl::Hours(1));
        } else {
          clock.Advance(-absl::Milliseconds(rng() % 300));
        }
        break;
      case 5:
        p.Prune(now);
        break;
    }
  }
  for (auto& [t, m] : model) {
    while (m.in_flight > 0) {
      p.Ended(t, clock.Now());
      --m.in_flight;
    }
  }
  clock.Set(std::max(high, clock.Now()) + absl::Seconds(1));
  p.Prune(clock.Now());
  CHECK(p.topics() == 0);
}

}  // namespace
}  // namespace hq
