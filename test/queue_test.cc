// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include <atomic>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "lib/engine/db_impl.h"
#include "test/test_util.h"
#include "xxhash.h"

namespace hq {
namespace {

using test::Child;
using test::CountingEnv;
using test::DbFixture;
using test::ScanAll;
using test::Storage;
using test::TempDir;
using test::ValueOrDie;

MessageId PutId(Queue* q, uint32_t partition) {
  return ValueOrDie(q->Put({.payload = "x", .partition = partition})).id;
}

TEST_CASE("ids: ms from the clock, seq within a ms, strictly increasing") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(Storage::kMemory);
  Queue* q =
      ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2, .layout = layout}));
  const uint64_t t0 = absl::ToUnixMillis(f.clock().Now());
  CHECK(PutId(q, 0) == MessageId{t0, 0});
  CHECK(PutId(q, 0) == MessageId{t0, 1});
  CHECK(PutId(q, 1) == MessageId{t0, 0});  // Partitions are independent.
  f.clock().Advance(absl::Milliseconds(5));
  CHECK(PutId(q, 0) == MessageId{t0 + 5, 0});
  CHECK(PutId(q, 0) == MessageId{t0 + 5, 1});
  // Sub-millisecond steps stay in the same ms.
  f.clock().Advance(absl::Microseconds(300));
  CHECK(PutId(q, 0) == MessageId{t0 + 5, 2});
}

TEST_CASE("ids never go back when the clock steps backwards") {
  DbFixture f(Storage::kMemory);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  MessageId last = PutId(q, 0);
  f.clock().Advance(-absl::Hours(1));
  for (int i = 0; i < 100; ++i) {
    const MessageId id = PutId(q, 0);
    REQUIRE(last < id);
    CHECK(id.ms == last.ms);  // Runs on in the old ms, never repeating.
    last = id;
  }
  // When the clock catches up, ids follow it again.
  f.clock().Advance(absl::Hours(1) + absl::Milliseconds(3));
  const MessageId caught_up = PutId(q, 0);
  CHECK(caught_up.ms ==
        static_cast<uint64_t>(absl::ToUnixMillis(f.clock().Now())));
  CHECK(last < caught_up);
}

TEST_CASE("more than 65536 messages in one ms run the ms ahead") {
  DbFixture f(Storage::kMemory);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  const uint64_t t0 = absl::ToUnixMillis(f.clock().Now());
  std::vector<Message> batch(1000, Message{.payload = "p"});
  std::vector<PutResult> results;
  MessageId last;
  bool first = true;
  for (int round = 0; round < 70; ++round) {
    HQ_REQUIRE_OK(q->PutBatch(batch, &results));
    for (const PutResult& r : results) {
      if (!first) REQUIRE(last < r.id);
      first = false;
      last = r.id;
    }
  }
  CHECK(last == MessageId{t0 + 1, 70000 - 65536 - 1});
  CHECK(ScanAll(q).size() == 70000);
}

TEST_CASE("ids keep increasing across reopen, also with the clock set back") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(test::StorageName(storage));
  DbFixture f(storage);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 3}));
  std::map<uint32_t, MessageId> last;
  for (uint32_t p = 0; p < 3; ++p) last[p] = PutId(q, p);
  for (int round = 0; round < 3; ++round) {
    f.Reopen();
    f.clock().Advance(-absl::Minutes(10));  // Clock steps back meanwhile.
    q = ValueOrDie(f.db()->OpenQueue("q"));
    for (uint32_t p = 0; p < 3; ++p) {
      const MessageId id = PutId(q, p);
      CHECK(last[p] < id);
      // A clean close records exactly where ids stopped: no leap ahead.
      CHECK(id.ms <= last[p].ms + 1);
      last[p] = id;
    }
  }
}

TEST_CASE("ids never repeat after kill -9, whatever the clock says") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  std::map<uint32_t, MessageId> acked;  // Highest acknowledged id.
  std::vector<std::pair<uint32_t, MessageId>> all_acked;
  {
    Child writer({"put", path, "crashq", "3"});
    for (int i = 0; i < 300; ++i) {
      const std::string line = writer.ReadLine();
      std::vector<std::string> parts = absl::StrSplit(line, ' ');
      REQUIRE(parts.size() == 2);
      uint32_t p;
      REQUIRE(absl::SimpleAtoi(parts[0], &p));
      const auto id = MessageId::Parse(parts[1]);
      REQUIRE(id.has_value());
      acked[p] = std::max(acked[p], *id);
      all_acked.emplace_back(p, *id);
    }
    writer.Kill();
    writer.Wait();
  }
  // Reopen with a clock from years before the writer's.
  SimulatedClock past(absl::FromUnixSeconds(1500000000));
  Options o;
  o.clock = &past;
  auto db = ValueOrDie(Db::Open(path, o));
  Queue* q = ValueOrDie(db->OpenQueue("crashq"));
  // Every acknowledged sync Put survived.
  const auto stored = ScanAll(q);
  std::set<std::pair<uint32_t, MessageId>> stored_set;
  std::map<uint32_t, MessageId> stored_max;
  for (const auto& m : stored) {
    stored_set.emplace(m.partition, m.id);
    stored_max[m.partition] = std::max(stored_max[m.partition], m.id);
  }
  for (const auto& a : all_acked) CHECK(stored_set.count(a) == 1);
  // New ids are above everything stored, in every partition.
  for (uint32_t p = 0; p < 3; ++p) {
    const MessageId id = PutId(q, p);
    CHECK(stored_max[p] < id);
    CHECK(acked[p] < id);
  }
}

TEST_CASE("sync per write, and the Db-wide default") {
  std::unique_ptr<leveldb::Env> mem(
      leveldb::NewMemEnv(leveldb::Env::Default()));
  CountingEnv env(mem.get());
  const bool db_default = GENERATE(false, true);
  Options o;
  o.env = &env;
  o.sync_writes = db_default;
  auto db = ValueOrDie(Db::Open("/sync", o));
  Queue* q = ValueOrDie(db->CreateQueue("q", {}));
  auto syncs_for = [&](const PutOptions& po) {
    const int before = env.syncs.load();
    HQ_REQUIRE_OK(q->Put({.payload = "x"}, po).status());
    return env.syncs.load() - before;
  };
  CHECK(syncs_for({}) == (db_default ? 1 : 0));
  CHECK(syncs_for({.sync = true}) == 1);
  CHECK(syncs_for({.sync = false}) == 0);
}

TEST_CASE("partition choice: explicit, key hash, topic hash, round-robin") {
  DbFixture f(Storage::kMemory);
  Queue* t = ValueOrDie(f.db()->CreateQueue("t", {.partitions = 7}));
  Queue* k = ValueOrDie(
      f.db()->CreateQueue("k", {.partitions = 7, .layout = Layout::kTopic}));
  for (Queue* q : {t, k}) {
    CHECK(ValueOrDie(q->Put({.partition = 5})).partition == 5);
    // Explicit partition wins over the key.
    CHECK(ValueOrDie(q->Put({.key = "abc", .partition = 1})).partition == 1);
    for (const std::string key : {"https://a.example/", "b", "ccc"}) {
      const uint32_t want = XXH3_64bits(key.data(), key.size()) % 7;
      CHECK(ValueOrDie(q->Put({.topic = "t", .key = key})).partition == want);
    }
  }
  // Topic layout, no key: the topic's hash.
  for (const std::string topic : {"site-a", "site-b", ""}) {
    const uint32_t want = XXH3_64bits(topic.data(), topic.size()) % 7;
    CHECK(ValueOrDie(k->Put({.topic = topic})).partition == want);
  }
  // Time layout, no key: round-robin, evenly.
  std::map<uint32_t, int> counts;
  for (int i = 0; i < 700; ++i) counts[ValueOrDie(t->Put({})).partition]++;
  REQUIRE(counts.size() == 7);
  for (const auto& [p, n] : counts) CHECK(n == 100);
}

TEST_CASE("what Put stores is what a scanner reads") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(Storage::kMemory);
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 3, .priorities = 4, .layout = layout}));
  const std::string payload("bin\0\xff", 5);
  const PutResult r = ValueOrDie(q->Put(
      {.topic = "news", .payload = payload, .key = "k1", .priority = 3}));
  const auto all = ScanAll(q);
  REQUIRE(all.size() == 1);
  CHECK(all[0].id == r.id);
  CHECK(all[0].partition == r.partition);
  CHECK(all[0].priority == 3);
  CHECK(all[0].topic == "news");
  CHECK(all[0].key == "k1");
  CHECK(all[0].payload == payload);
}

TEST_CASE("PutBatch is atomic and ordered") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(Storage::kMemory);
  Queue* q =
      ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2, .layout = layout}));
  std::vector<Message> batch;
  for (int i = 0; i < 10; ++i) {
    batch.push_back({.topic = "t", .partition = static_cast<uint32_t>(i % 2)});
  }
  std::vector<PutResult> results;
  HQ_REQUIRE_OK(q->PutBatch(batch, &results));
  REQUIRE(results.size() == 10);
  for (int i = 2; i < 10; ++i) {
    CHECK(results[i].partition == results[i - 2].partition);
    CHECK(results[i - 2].id < results[i].id);
  }
  // One bad message fails the whole batch, naming it; nothing is written.
  batch[7].priority = 1;  // Only priority 0 exists.
  const absl::Status s = q->PutBatch(batch, &results);
  CHECK(absl::IsInvalidArgument(s));
  CHECK(absl::StrContains(s.message(), "message 7"));
  CHECK(ScanAll(q).size() == 10);
  HQ_REQUIRE_OK(q->PutBatch({}, &results));
  CHECK(results.empty());
  HQ_REQUIRE_OK(q->PutBatch(std::span(batch.data(), 3), nullptr));
  CHECK(ScanAll(q).size() == 13);
}

class FixedClock : public Clock {
 public:
  explicit FixedClock(absl::Time t) : t_(t) {}
  absl::Time Now() const override { return t_; }

 private:
  absl::Time t_;
};

// Review of issue 2: Max() is the exclusive end of every scan range, so it
// must never be assigned (it would be stored but unreadable).
TEST_CASE("issue2: the last ms of the id space ends before Max()") {
  FixedClock clock(absl::FromUnixMillis(MessageId::kMaxMs));  // Year 10889.
  Options o;
  o.clock = &clock;
  DbFixture f(Storage::kMemory, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  std::vector<Message> batch(65535, Message{.payload = "x"});
  std::vector<PutResult> results;
  HQ_REQUIRE_OK(q->PutBatch(batch, &results));
  CHECK(results.front().id == MessageId{MessageId::kMaxMs, 0});
  CHECK(results.back().id == MessageId{MessageId::kMaxMs, 65534});
  CHECK(
      absl::IsResourceExhausted(q->Put({.payload = "one too many"}).status()));
  CHECK(ScanAll(q).size() == 65535);
}

}  // namespace
}  // namespace hq
