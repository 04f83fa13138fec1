// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Queue inspection (Stats, ApproximateBytes, InspectGroup,
// InspectSubscription) and Db::CompactAll.

#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "hq/hq.h"
#include "test/sample_db.h"
#include "test/test_util.h"

namespace hq::test {
namespace {

TEST_CASE("Queue::Stats reports each partition's ids, count and size") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  PopulateSample(f.db());
  f.Reopen();  // Flushes the memtable: sizes come from table files.
  Queue* q = ValueOrDie(f.db()->OpenQueue("q"));
  const std::vector<ScannedMessage> all = ScanAll(q);
  const QueueStats st = ValueOrDie(q->Stats());
  REQUIRE(st.partitions.size() == 2);
  uint64_t total = 0;
  for (const PartitionStats& ps : st.partitions) {
    std::vector<MessageId> ids;
    for (const ScannedMessage& m : all) {
      if (m.partition == ps.partition) ids.push_back(m.id);
    }
    std::sort(ids.begin(), ids.end());
    REQUIRE(!ids.empty());
    CHECK(ps.messages == ids.size());
    CHECK(ps.messages_exact);
    CHECK(ps.first == ids.front());
    CHECK(ps.last == ids.back());
    CHECK(ps.lanes == 1);
    total += ps.approximate_bytes;
  }
  CHECK(st.partitions[0].messages == 8);  // 5 + 3 late ones.
  CHECK(st.approximate_bytes == total);
  CHECK(ValueOrDie(q->ApproximateBytes()) >= total);

  // Expired messages are not counted.
  Queue* t = ValueOrDie(f.db()->OpenQueue("t"));
  uint64_t live = 0;
  for (const PartitionStats& ps : ValueOrDie(t->Stats()).partitions) {
    live += ps.messages;
  }
  CHECK(live == 6);
  f.clock().Advance(absl::Hours(2));
  for (const PartitionStats& ps : ValueOrDie(t->Stats()).partitions) {
    CHECK(ps.messages == 0);
  }
}

TEST_CASE("ApproximateBytes grows with the data and CompactAll reclaims it") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.ttl = absl::Hours(1)}));
  // Random bytes: LevelDB's compression cannot shrink them.
  std::string payload(1000, '\0');
  uint64_t x = Seed(1);
  for (int i = 0; i < 5; ++i) {
    std::vector<std::string> payloads;
    std::vector<Message> batch;
    for (int j = 0; j < 1000; ++j) {
      for (char& c : payload) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        c = static_cast<char>(x >> 56);
      }
      payloads.push_back(payload);
    }
    for (const std::string& p : payloads) batch.push_back({.payload = p});
    HQ_REQUIRE_OK(q->PutBatch(batch, nullptr));
  }
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const uint64_t before = ValueOrDie(q->ApproximateBytes());
  CHECK(before > 5 * 1000 * 1000);
  f.clock().Advance(absl::Hours(2));
  const SweepStats swept = ValueOrDie(f.db()->CompactAll());
  CHECK(swept.deleted == 5000);
  CHECK(ValueOrDie(q->ApproximateBytes()) < before / 10);
}

TEST_CASE("InspectGroup and InspectSubscription read what is stored") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  PopulateSample(f.db());
  f.Reopen();
  Queue* q = ValueOrDie(f.db()->OpenQueue("q"));
  const GroupInfo g = ValueOrDie(q->InspectGroup("g"));
  CHECK(g.name == "g");
  CHECK(g.topics.empty());
  CHECK_FALSE(g.ordered);
  CHECK(g.dead_letter_queue == "q.dead.g");
  REQUIRE(g.cursors.size() == 2);  // Both partitions' priority-0 lanes.
  for (const GroupInfo::LaneCursor& c : g.cursors) {
    CHECK(c.priority == 0);
    CHECK(c.completion <= c.scan);
    CHECK(MessageId::Min() < c.scan);
  }
  CHECK(g.cursors[0].partition == 0);
  CHECK(g.cursors[1].partition == 1);
  CHECK(absl::IsNotFound(q->InspectGroup("nope").status()));
  CHECK(absl::IsInvalidArgument(q->InspectGroup("").status()));

  const SubscriptionStats s = ValueOrDie(q->InspectSubscription("s"));
  CHECK(s.lag == 3);  // The late messages; the listener refused them.
  CHECK(s.lag_exact);
  REQUIRE(s.lanes.size() == 2);
  for (const LaneCheckpoint& c : s.lanes) CHECK(c.next == c.written);
  CHECK(absl::IsNotFound(q->InspectSubscription("nope").status()));
}

}  // namespace
}  // namespace hq::test
