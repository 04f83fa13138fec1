// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Message::dedup_key: a Put whose key names a live message writes nothing.

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hq/hq.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::DbFixture;
using test::NoBackgroundSweeps;
using test::ScanAll;
using test::Storage;
using test::ValueOrDie;

size_t DedupRecords(Db* db, Queue* q) {
  return test::CountKeys(
      db,
      format::QueuePrefix(format::kDedupTag, static_cast<QueueImpl*>(q)->id()));
}

TEST_CASE("a second Put with a live dedup key writes nothing") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(storage, NoBackgroundSweeps());
  Queue* q =
      ValueOrDie(f.db()->CreateQueue("q", {.partitions = 4, .layout = layout}));
  const PutResult first = ValueOrDie(
      q->Put({.topic = "site", .payload = "v1", .dedup_key = "http://a/"}));
  CHECK(!first.duplicate);
  const PutResult again = ValueOrDie(q->Put({.topic = "other",
                                             .payload = "v2",
                                             .partition = 3u,
                                             .dedup_key = "http://a/"}));
  CHECK(again.duplicate);
  CHECK(again.id == first.id);
  CHECK(again.partition == first.partition);
  CHECK(!ValueOrDie(q->Put({.payload = "v3", .dedup_key = "http://b/"}))
             .duplicate);
  // No key: never deduplicated.
  CHECK(!ValueOrDie(q->Put({.payload = "v4"})).duplicate);
  CHECK(!ValueOrDie(q->Put({.payload = "v4"})).duplicate);
  CHECK(ScanAll(q).size() == 4);

  // Across a reopen; and per queue.
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const PutResult after = ValueOrDie(q->Put({.dedup_key = "http://a/"}));
  CHECK(after.duplicate);
  CHECK(after.id == first.id);
  Queue* other = ValueOrDie(f.db()->CreateQueue("other", {}));
  CHECK(!ValueOrDie(other->Put({.dedup_key = "http://a/"})).duplicate);
}

TEST_CASE("PutBatch deduplicates within the batch and against the queue") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  HQ_REQUIRE_OK(q->Put({.payload = "old", .dedup_key = "a"}).status());
  std::vector<Message> batch = {
      {.payload = "1", .dedup_key = "a"},  // The stored one.
      {.payload = "2", .dedup_key = "b"},
      {.payload = "3", .dedup_key = "b"},  // Its twin in this batch.
      {.payload = "4"},
  };
  std::vector<PutResult> r;
  HQ_REQUIRE_OK(q->PutBatch(batch, &r));
  REQUIRE(r.size() == 4);
  CHECK(r[0].duplicate);
  CHECK(!r[1].duplicate);
  CHECK(r[2].duplicate);
  CHECK(r[2].id == r[1].id);
  CHECK(r[2].partition == r[1].partition);
  CHECK(!r[3].duplicate);
  std::vector<std::string> payloads;
  for (const auto& m : ScanAll(q)) payloads.push_back(m.payload);
  std::sort(payloads.begin(), payloads.end());
  CHECK(payloads == std::vector<std::string>{"2", "4", "old"});

  // A failing batch leaves no trace of its keys.
  std::vector<Message> bad = {{.payload = "5", .dedup_key = "c"},
                              {.payload = "6", .priority = 9}};
  CHECK(absl::IsInvalidArgument(q->PutBatch(bad, nullptr)));
  CHECK(!ValueOrDie(q->Put({.payload = "7", .dedup_key = "c"})).duplicate);
}

TEST_CASE("concurrent producers of the same keys write each key once") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 8}));
  constexpr int kThreads = 4, kKeys = 2000;
  std::vector<std::vector<PutResult>> got(kThreads);
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kKeys; ++i) {
        // Each thread walks the keys in its own order, some in batches.
        const int k = (i * (t + 1) * 7919) % kKeys;
        const std::string key = absl::StrCat("url", k);
        absl::StatusOr<PutResult> r =
            q->Put({.payload = absl::StrCat(t), .dedup_key = key});
        if (!r.ok()) {
          ++errors;
          continue;
        }
        got[t].push_back(*r);
        got[t].back().partition += static_cast<uint32_t>(k) << 8;  // Tag.
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(errors.load() == 0);
  CHECK(ScanAll(q).size() == kKeys);
  // Every producer got the same (partition, id) for a key; one wrote it.
  std::map<int, std::pair<uint32_t, MessageId>> by_key;
  std::map<int, int> writers;
  for (const auto& results : got) {
    for (const PutResult& r : results) {
      const int k = static_cast<int>(r.partition >> 8);
      const auto where = std::make_pair(r.partition & 0xff, r.id);
      if (!by_key.contains(k)) by_key[k] = where;
      CHECK(by_key[k] == where);
      if (!r.duplicate) ++writers[k];
    }
  }
  CHECK(by_key.size() == kKeys);
  for (const auto& [k, n] : writers) CHECK(n == 1);
  CHECK(writers.size() == kKeys);
}

TEST_CASE("a dedup key is forgotten with its expired message") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.ttl = absl::Minutes(1)}));
  const PutResult a = ValueOrDie(q->Put({.payload = "a", .dedup_key = "k"}));
  HQ_REQUIRE_OK(q->Put({.payload = "b", .dedup_key = "other"}).status());
  f.clock().Advance(absl::Seconds(59));
  CHECK(ValueOrDie(q->Put({.dedup_key = "k"})).duplicate);
  f.clock().Advance(absl::Seconds(2));  // Past the TTL: no longer live.
  const PutResult again =
      ValueOrDie(q->Put({.payload = "c", .dedup_key = "k"}));
  CHECK(!again.duplicate);
  CHECK(a.id < again.id);
  CHECK(DedupRecords(f.db(), q) == 2);
  // The sweep deletes the record of "other" (expired) but not the one "k"
  // was rewritten to.
  CHECK(ValueOrDie(f.db()->CompactExpired()).deleted == 2);
  CHECK(DedupRecords(f.db(), q) == 1);
  CHECK(ValueOrDie(q->Put({.dedup_key = "k"})).duplicate);
  CHECK(!ValueOrDie(q->Put({.dedup_key = "other"})).duplicate);
  HQ_REQUIRE_OK(f.db()->DropQueue("q"));
  CHECK(DedupRecords(f.db(), q) == 0);
}

TEST_CASE("dedup keys are checked") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  const std::string long_key(1025, 'k');
  CHECK(absl::IsInvalidArgument(q->Put({.dedup_key = long_key}).status()));
  CHECK(ScanAll(q).empty());
  CHECK(DedupRecords(f.db(), q) == 0);
}

}  // namespace
}  // namespace hq
