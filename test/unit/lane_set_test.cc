// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// LaneSet (lib/consume/lane_set.h) on its own, with an in-memory source and
// no Db: paging takes the source's lanes in its order and within its
// bound; admission parses each lane, lets go of those out of scope, reads a
// lane in once and keeps one hold per lane; a walked lane's kept message is
// of its pass only; notes reach the consumer (unpaged) or the source
// (paged).

#include "lib/consume/lane_set.h"

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "hq/layout.h"
#include "lib/consume/group_test_hooks.h"
#include "lib/format/layout_codec.h"

namespace hq {
namespace {

// The lane prefix of a message of queue 7 in `layout`, as the write path
// makes it.
std::string LanePrefix(Layout layout, uint32_t partition, int priority,
                       std::string_view topic) {
  std::string prefix;
  LayoutCodec::For(layout).AppendLanePrefix(&prefix, 7, partition, priority,
                                            topic);
  return prefix;
}

std::string TopicLane(uint32_t partition, int priority,
                      std::string_view topic) {
  return LanePrefix(Layout::kTopic, partition, priority, topic);
}

// A LaneSource in memory: per priority, the lanes it hands out next, each
// with a hold of its own (a hint seq); a lane may come with its one message
// kept.
class FakeSource {
 public:
  struct Queued {
    std::string prefix;
    std::string kept;  // Non-empty: Taken::only, with this value.
  };
  explicit FakeSource(int priorities) : queued_(priorities) {}

  void Add(int priority, std::string prefix, std::string kept = "") {
    queued_[priority].push_back({std::move(prefix), std::move(kept)});
  }

  absl::Status Next(int priority, size_t max, leveldb::Iterator* /*it*/,
                    std::vector<LaneSource::Taken>* out, std::string* values) {
    ++next_calls;
    std::deque<Queued>& q = queued_[priority];
    for (size_t n = 0; n < max && !q.empty(); ++n) {
      LaneSource::Taken t;
      t.prefix = std::move(q.front().prefix);
      t.hold.priority = priority;
      t.hold.seq = next_seq_++;
      held[t.hold.seq] = t.prefix;
      if (!q.front().kept.empty() && values != nullptr) {
        t.only = true;
        t.kept.id = MessageId{t.hold.seq, 0};
        t.kept.at = values->size();
        t.kept.size = q.front().kept.size();
        values->append(q.front().kept);
      }
      q.pop_front();
      out->push_back(std::move(t));
    }
    return absl::OkStatus();
  }
  bool pending(int priority) const { return !queued_[priority].empty(); }
  void NoteWritten() { ++noted; }
  void Release(const LaneSource::Hold& hold) {
    REQUIRE(held.erase(hold.seq) == 1);  // Released once, and only if held.
  }

  // As LaneSource's: an entry per hold.
  size_t TEST_Entries() const { return held.size(); }

  std::map<uint64_t, std::string> held;  // Holds not released, by seq.
  int noted = 0;
  int next_calls = 0;

 private:
  std::vector<std::deque<Queued>> queued_;
  uint64_t next_seq_ = 1;
};

struct TestLane : LaneBase {
  int admitted = 0;
};

using TestSet = LaneSet<TestLane, FakeSource>;

// A consumer of a LaneSet: its scope, how it reads a lane in, and what it
// does with admitted lanes (counts them; keeps them in its active list).
struct Consumer {
  explicit Consumer(int priorities = 2)
      : set("consumer 'c'", /*has_topic=*/true, /*partitions=*/4, priorities,
            std::make_unique<FakeSource>(priorities)) {}

  FakeSource& source() { return *set.source(); }

  absl::StatusOr<TestLane*> ReadIn(std::string prefix) {
    ++reads;
    absl::StatusOr<std::unique_ptr<TestLane>> lane =
        set.Make(std::move(prefix));
    if (!lane.ok()) return lane.status();
    return set.Insert(*std::move(lane));
  }

  absl::Status Admit(LaneSource::Taken* t) {
    absl::StatusOr<TestLane*> lane = set.Admit(
        t,
        [&](uint32_t partition, std::string_view topic) {
          return partition != out_partition && topic != out_topic;
        },
        [&](std::string prefix) { return ReadIn(std::move(prefix)); });
    if (!lane.ok()) return lane.status();
    if (*lane != nullptr) {
      ++(*lane)->admitted;
      if (!(*lane)->active) {
        (*lane)->active = true;
        active.push_back(*lane);
      }
    }
    return absl::OkStatus();
  }

  absl::Status Page(int priority, size_t max, size_t* taken) {
    return set.Page(
        priority, max, nullptr, [&](LaneSource::Taken* t) { return Admit(t); },
        taken);
  }

  TestSet set;
  int reads = 0;
  uint32_t out_partition = 99;
  std::string out_topic = "-";
  std::vector<TestLane*> active;
};

TEST_CASE("paging takes the source's lanes in order, at most max a call") {
  Consumer c;
  for (int i = 0; i < 5; ++i) {
    c.source().Add(1, TopicLane(0, 1, "t" + std::to_string(i)));
  }
  c.set.BeginPass();
  size_t taken = 0;
  REQUIRE(c.Page(1, 3, &taken).ok());
  CHECK(taken == 3);
  REQUIRE(c.active.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CHECK(c.active[i]->topic == "t" + std::to_string(i));
    CHECK(c.active[i]->priority == 1);
    CHECK(c.active[i]->hold.held());
  }
  CHECK(c.set.size() == 3);
  CHECK(c.set.SourcePending(2));
  REQUIRE(c.Page(1, 3, &taken).ok());
  CHECK(taken == 2);
  CHECK(c.active.size() == 5);
  CHECK_FALSE(c.set.SourcePending(2));
  // Every lane holds the position back until the consumer lets it go.
  CHECK(c.source().held.size() == 5);
  for (TestLane* lane : c.active) CHECK(c.set.LetGo(lane));
  CHECK(c.source().held.empty());
  // An empty source: nothing taken, nothing admitted.
  REQUIRE(c.Page(0, 3, &taken).ok());
  CHECK(taken == 0);
  CHECK(c.reads == 5);
}

TEST_CASE("admission lets go of lanes out of scope without reading them") {
  Consumer c;
  c.out_partition = 2;
  c.out_topic = "skip";
  c.source().Add(0, TopicLane(2, 0, "a"));     // Partition out of scope.
  c.source().Add(0, TopicLane(1, 0, "skip"));  // Topic out of scope.
  c.source().Add(0, TopicLane(1, 0, "a"));
  c.set.BeginPass();
  size_t taken = 0;
  REQUIRE(c.Page(0, 10, &taken).ok());
  CHECK(taken == 3);    // Taken from the source, all of them...
  CHECK(c.reads == 1);  // ...but only the lane in scope read in...
  REQUIRE(c.active.size() == 1);
  CHECK(c.active[0]->topic == "a");
  CHECK(c.set.size() == 1);
  CHECK(c.set.Find(TopicLane(2, 0, "a")) == nullptr);
  // ...and the others' holds let go at once.
  REQUIRE(c.source().held.size() == 1);
  CHECK(c.source().held.begin()->second == TopicLane(1, 0, "a"));
}

TEST_CASE("a lane admitted twice is read in once and holds one position") {
  Consumer c;
  const std::string a = TopicLane(0, 0, "a");
  c.source().Add(0, a);
  c.source().Add(0, TopicLane(0, 0, "b"));
  c.source().Add(0, a);  // A second hint of it, before it let the first go.
  c.set.BeginPass();
  REQUIRE(c.Page(0, 10, nullptr).ok());
  CHECK(c.reads == 2);
  CHECK(c.set.size() == 2);
  TestLane* lane = c.set.Find(a);
  REQUIRE(lane != nullptr);
  CHECK(lane->admitted == 2);
  CHECK(lane->hold.seq == 1);  // The first hold stays; the third went.
  CHECK(c.source().held.size() == 2);
  CHECK_FALSE(c.source().held.contains(3));
  CHECK(c.set.LetGo(lane));
  CHECK_FALSE(c.set.LetGo(lane));  // Nothing held any more.
  CHECK_FALSE(lane->hold.held());
  // Let go, it takes the next hint's hold.
  c.source().Add(0, a);
  REQUIRE(c.Page(0, 10, nullptr).ok());
  CHECK(c.reads == 2);
  CHECK(lane->hold.seq == 4);
}

TEST_CASE("a malformed lane from the source is DataLoss, not read in") {
  Consumer c;
  c.source().Add(0, "not a lane");
  c.source().Add(0, TopicLane(0, 0, "a"));
  c.set.BeginPass();
  const absl::Status s = c.Page(0, 10, nullptr);
  CHECK(s.code() == absl::StatusCode::kDataLoss);
  CHECK(std::string(s.message()).find("consumer 'c'") != std::string::npos);
  CHECK(c.reads == 0);  // Stopped at the first error.
  CHECK(c.set.size() == 0);
}

TEST_CASE("a walked lane's kept message is read in its pass only, once") {
  Consumer c;
  const std::string a = TopicLane(0, 0, "a");
  const std::string b = TopicLane(0, 0, "b");
  c.source().Add(0, a, "value of a");
  c.source().Add(0, b);
  c.set.BeginPass();
  REQUIRE(c.Page(0, 10, nullptr).ok());
  TestLane* la = c.set.Find(a);
  TestLane* lb = c.set.Find(b);
  REQUIRE(la != nullptr);
  REQUIRE(lb != nullptr);
  CHECK(c.set.Walked(*la));
  CHECK_FALSE(c.set.Walked(*lb));
  std::string_view value;
  CHECK(c.set.TakeWalked(lb, &value) == nullptr);
  const LaneSource::Kept* m = c.set.TakeWalked(la, &value);
  REQUIRE(m != nullptr);
  CHECK(value == "value of a");
  CHECK(m->id == MessageId{1, 0});
  // Taken: a later turn of the pass reads the lane.
  CHECK(c.set.TakeWalked(la, &value) == nullptr);
  // Kept again in one pass, then a new pass: what the old one kept is of
  // its iterator, gone.
  c.source().Add(0, a, "again");
  c.set.LetGo(la);
  REQUIRE(c.Page(0, 10, nullptr).ok());
  CHECK(c.set.Walked(*la));
  c.set.EndPass();
  c.set.BeginPass();
  CHECK_FALSE(c.set.Walked(*la));
  CHECK(c.set.TakeWalked(la, &value) == nullptr);
}

TEST_CASE("a lane never walked is not walked before the first pass") {
  Consumer c;
  REQUIRE(c.ReadIn(TopicLane(0, 0, "a")).ok());
  TestLane* lane = c.set.Find(TopicLane(0, 0, "a"));
  REQUIRE(lane != nullptr);
  CHECK_FALSE(c.set.Walked(*lane));
}

TEST_CASE("paged: the write path's notes tell the source, once") {
  Consumer c;
  // A new consumer reads the index once before any note.
  c.set.TakePagedNotes();
  CHECK(c.source().noted == 1);
  c.set.TakePagedNotes();
  CHECK(c.source().noted == 1);
  c.set.Note(TopicLane(0, 0, "a"));
  c.set.Note(TopicLane(0, 0, "b"));
  c.set.TakePagedNotes();
  CHECK(c.source().noted == 2);
  // The lanes themselves come from the source, not from the notes.
  int noted = 0;
  REQUIRE(c.set
              .TakeNotes([&](const NotedLane&) {
                ++noted;
                return absl::OkStatus();
              })
              .ok());
  CHECK(noted == 0);
}

TEST_CASE("unpaged: noted lanes reach the consumer once") {
  LaneSet<TestLane, FakeSource> set("consumer 'c'", /*has_topic=*/false,
                                    /*partitions=*/4, /*priorities=*/4,
                                    nullptr);
  CHECK_FALSE(set.paged());
  CHECK_FALSE(set.SourcePending(4));
  const std::string a = LanePrefix(Layout::kTime, 1, 2, "");
  set.Note(a);
  set.Note(a);
  std::vector<std::string> noted;
  auto take = [&](const NotedLane& n) {
    noted.emplace_back(n.prefix);
    CHECK(n.partition == 1);
    CHECK(n.priority == 2);
    return absl::OkStatus();
  };
  REQUIRE(set.TakeNotes(take).ok());
  CHECK(noted == std::vector<std::string>{a});
  REQUIRE(set.TakeNotes(take).ok());
  CHECK(noted.size() == 1);
}

TEST_CASE("lanes in memory: one per prefix, erased by the consumer") {
  Consumer c;
  REQUIRE(c.ReadIn(TopicLane(0, 0, "a")).ok());
  REQUIRE(c.ReadIn(TopicLane(0, 0, "b")).ok());
  REQUIRE(c.ReadIn(TopicLane(1, 0, "c")).ok());
  const absl::StatusOr<TestLane*> again = c.ReadIn(TopicLane(0, 0, "a"));
  CHECK(again.status().code() == absl::StatusCode::kInternal);
  CHECK(c.set.size() == 3);
  c.set.EraseIf([](const TestLane& lane) { return lane.partition == 0; });
  CHECK(c.set.size() == 1);
  TestLane* lane = c.set.Find(TopicLane(1, 0, "c"));
  REQUIRE(lane != nullptr);
  c.set.Erase(lane);
  CHECK(c.set.size() == 0);
  CHECK(c.set.begin() == c.set.end());
}

TEST_CASE("a lane is made from its prefix, which must be one of the queue's") {
  Consumer c(/*priorities=*/2);
  absl::StatusOr<std::unique_ptr<TestLane>> lane =
      c.set.Make(TopicLane(3, 1, "example.com"));
  REQUIRE(lane.ok());
  CHECK((*lane)->partition == 3);
  CHECK((*lane)->priority == 1);
  CHECK((*lane)->topic == "example.com");
  CHECK((*lane)->prefix == TopicLane(3, 1, "example.com"));
  CHECK_FALSE((*lane)->active);
  CHECK(c.set.size() == 0);  // Not in the set until Inserted.
  for (const std::string& bad :
       {TopicLane(4, 0, "a"), TopicLane(0, 2, "a"),
        LanePrefix(Layout::kTime, 0, 0, ""), std::string("x")}) {
    CHECK(c.set.Make(bad).status().code() == absl::StatusCode::kDataLoss);
  }
}

TEST_CASE("the working set counts the lanes in it") {
  Consumer c;
  REQUIRE(c.ReadIn(TopicLane(0, 0, "a")).ok());
  REQUIRE(c.ReadIn(TopicLane(0, 0, "b")).ok());
  TestLane* a = c.set.Find(TopicLane(0, 0, "a"));
  TestLane* b = c.set.Find(TopicLane(0, 0, "b"));
  CHECK(c.set.active() == 0);
  CHECK(c.set.Enter(a));
  CHECK_FALSE(c.set.Enter(a));  // In it already: counted once.
  CHECK(c.set.Enter(b));
  CHECK(a->active);
  CHECK(c.set.active() == 2);
  c.set.Leave(a);
  CHECK_FALSE(a->active);
  CHECK(c.set.active() == 1);
  // A lane forgotten leaves the working set with it.
  c.set.Erase(b);
  CHECK(c.set.active() == 0);
  CHECK(c.set.Enter(a));
  c.set.EraseIf([](const TestLane&) { return true; });
  CHECK(c.set.active() == 0);
  CHECK(c.set.size() == 0);
}

// A consumer with the hooks over its lock and its set.
class HookedConsumer : public LaneSetHooks {
 public:
  HookedConsumer() : LaneSetHooks(&mu, &c.set) {}
  void Count() { CountHook(); }
  Mutex mu;
  Consumer c;
};

TEST_CASE("the test hooks read the set's counts under the consumer's lock") {
  HookedConsumer h;
  h.c.set.SetMaxActive(7);
  REQUIRE(h.c.ReadIn(TopicLane(0, 0, "a")).ok());
  REQUIRE(h.c.ReadIn(TopicLane(0, 0, "b")).ok());
  h.c.set.Enter(h.c.set.Find(TopicLane(0, 0, "a")));
  CHECK(h.TEST_ResidentLanes() == 2);
  CHECK(h.TEST_ActiveLanes() == 1);
  CHECK(h.TEST_MaxActive() == 7);
  CHECK(h.TEST_LockIsFree());
  h.mu.Lock();
  CHECK_FALSE(h.TEST_LockIsFree());
  h.mu.Unlock();
  int counted = 0;
  h.Count();  // No hook: nothing.
  h.TEST_SetCountHook([&] { ++counted; });
  h.Count();
  CHECK(counted == 1);
}

TEST_CASE("the working-set cap is the consumer's, unless a test's") {
  Consumer c;
  c.set.SetMaxActive(5);
  CHECK(c.set.max_active() == 5);
  TEST_SetMaxActiveLanes(2);
  CHECK(c.set.max_active() == 2);
  TEST_SetMaxActiveLanes(0);
  CHECK(c.set.max_active() == 5);
}

TEST_CASE("issue40: lanes drained through the set leave no state behind") {
  // A consumer that drains each lane it pages in (lets go of its hold and
  // forgets it) keeps state in proportion to its working set, not to the
  // lanes drained: 10000 lanes through a cap of 8.
  constexpr int kLanes = 10000;
  constexpr size_t kCap = 8;
  Consumer c(/*priorities=*/1);
  c.set.SetMaxActive(kCap);
  const size_t cap = c.set.max_active();
  for (int i = 0; i < kLanes; ++i) {
    c.source().Add(0, TopicLane(i % 4, 0, "t" + std::to_string(i)));
  }
  size_t max_resident = 0, max_entries = 0;
  int drained = 0;
  while (c.set.SourcePending(1)) {
    c.set.BeginPass();
    size_t taken = 0;
    REQUIRE(c.Page(0, cap, &taken).ok());
    REQUIRE(taken > 0);
    max_resident = std::max(max_resident, c.set.size());
    max_entries = std::max(max_entries, c.set.SourceEntries());
    for (TestLane* lane : c.active) {
      CHECK(c.set.LetGo(lane));
      c.set.Erase(lane);
      ++drained;
    }
    c.active.clear();
    c.set.EndPass();
  }
  CHECK(drained == kLanes);
  CHECK(max_resident <= cap);
  CHECK(max_entries <= cap);
  CHECK(c.set.size() == 0);
  CHECK(c.set.SourceEntries() == 0);
}

}  // namespace
}  // namespace hq
