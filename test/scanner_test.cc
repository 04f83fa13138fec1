// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Scanner tests: a model-based property test of filters and both orders
// (with a reopen in the middle), snapshot consistency, time ranges, empty
// results, byte-exact round trips, merging across many lanes, topic filters
// that must not match by prefix, and scanners of a dropped queue.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "leveldb/write_batch.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "lib/util/strings.h"
#include "test/test_util.h"

namespace hq::test {
namespace {

using Order = ScanOptions::Order;

std::string Hex(std::string_view s) { return Printable(s); }

// One message as the test wrote it and the engine acknowledged it.
struct Written {
  PutResult where;
  std::optional<uint32_t> asked_partition;  // Message::partition.
  int priority = 0;
  std::string topic, key, payload;
};

ScannedMessage AsScanned(const Written& w) {
  return ScannedMessage{w.where.id, w.where.partition, w.priority, w.topic,
                        w.key,      w.payload};
}

std::string Describe(const ScannedMessage& m) {
  return absl::StrCat("{id ", m.id.ToString(), " partition ", m.partition,
                      " priority ", m.priority, " topic '", Hex(m.topic),
                      "' key '", Hex(m.key), "' payload ", m.payload.size(),
                      " bytes '", Hex(m.payload.substr(0, 24)), "'}");
}

std::string Describe(const ScanOptions& o) {
  std::vector<std::string> topics;
  for (const std::string& t : o.topics) topics.push_back("'" + Hex(t) + "'");
  return absl::StrCat("ScanOptions{partitions [",
                      absl::StrJoin(o.partitions, ","), "] topics [",
                      absl::StrJoin(topics, ","), "] from ", o.from.ToString(),
                      " to ", o.to.ToString(), " order ",
                      o.order == Order::kMerged ? "merged" : "lane", "}");
}

// "" when equal, else where and how `got` differs from `want`.
std::string Diff(const std::vector<ScannedMessage>& got,
                 const std::vector<ScannedMessage>& want) {
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i) {
    if (!(got[i] == want[i])) {
      return absl::StrCat("message ", i, " of ", got.size(), " (want ",
                          want.size(), "): got ", Describe(got[i]), " want ",
                          Describe(want[i]));
    }
  }
  if (got.size() > want.size()) {
    return absl::StrCat("got ", got.size() - want.size(), " extra, first ",
                        Describe(got[want.size()]));
  }
  if (got.size() < want.size()) {
    return absl::StrCat("missing ", want.size() - got.size(), ", first ",
                        Describe(want[got.size()]));
  }
  return "";
}

// What a scanner with options `o` must return, computed from the model.
// kMerged: ascending (id, partition). kLane: partition ascending, priority
// descending, then (topic layout) topic in lane prefix order, which puts the
// big-endian u16 length first; within a lane ascending id.
std::vector<ScannedMessage> Expected(const std::vector<Written>& model,
                                     const ScanOptions& o, Layout layout) {
  const std::set<uint32_t> parts(o.partitions.begin(), o.partitions.end());
  const std::set<std::string> topics(o.topics.begin(), o.topics.end());
  std::vector<ScannedMessage> out;
  for (const Written& w : model) {
    if (!parts.empty() && !parts.contains(w.where.partition)) continue;
    if (!topics.empty() && !topics.contains(w.topic)) continue;
    if (w.where.id < o.from || w.where.id >= o.to) continue;
    out.push_back(AsScanned(w));
  }
  auto merged_key = [](const ScannedMessage& m) {
    return std::tuple(m.id, m.partition);
  };
  auto lane_key = [layout](const ScannedMessage& m) {
    const bool topic_lane = layout == Layout::kTopic;
    return std::tuple(m.partition, -m.priority,
                      topic_lane ? m.topic.size() : size_t{0},
                      topic_lane ? m.topic : std::string(), m.id);
  };
  std::sort(out.begin(), out.end(),
            [&](const ScannedMessage& a, const ScannedMessage& b) {
              return o.order == Order::kMerged ? merged_key(a) < merged_key(b)
                                               : lane_key(a) < lane_key(b);
            });
  return out;
}

// Checks every scan of `q` that `o` describes against the model.
void CheckScan(Queue* q, const std::vector<Written>& model,
               const ScanOptions& o) {
  INFO(Describe(o));
  const std::string diff =
      Diff(ScanAll(q, o), Expected(model, o, q->options().layout));
  CHECK(diff == "");
}

// Ids must be unique and increasing per partition in acknowledgement order.
void CheckModelIds(const std::vector<Written>& model, uint32_t partitions) {
  std::vector<std::optional<MessageId>> last(partitions);
  size_t bad = 0;
  for (const Written& w : model) {
    auto& l = last[w.where.partition];
    if (l.has_value() && !(*l < w.where.id)) ++bad;
    l = w.where.id;
  }
  CHECK(bad == 0);
}

// ------------------------------------------------------------ the model

const std::vector<std::string>& StoredTopics() {
  static const auto* const topics = new std::vector<std::string>{
      "", "a", "ab", "b", "orders", std::string("\0\xff", 2), "zzzzzzzzzz"};
  return *topics;
}

// Topics that never hold a message, some sharing a prefix with stored ones.
const std::vector<std::string>& AbsentTopics() {
  static const auto* const topics = new std::vector<std::string>{
      "abc", std::string("a\0", 2), "zz", "orders2", std::string("\xff", 1)};
  return *topics;
}

std::string RandomBytes(std::mt19937_64& rng, size_t n) {
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng() & 0xff);
  return s;
}

// A random message to write; Message views point into the returned value.
Written RandomMessage(std::mt19937_64& rng, const QueueOptions& qo) {
  const auto& topics = StoredTopics();
  Written w;
  w.topic = topics[rng() % topics.size()];
  w.priority = static_cast<int>(rng() % qo.priorities);
  w.payload = RandomBytes(rng, rng() % 40);
  switch (rng() % 4) {
    case 0:  // Explicit partition.
      w.asked_partition = static_cast<uint32_t>(rng() % qo.partitions);
      break;
    case 1:  // By key.
      w.key = absl::StrCat("key-", rng() % 50);
      break;
    case 2:  // Both: the partition wins.
      w.asked_partition = static_cast<uint32_t>(rng() % qo.partitions);
      w.key = absl::StrCat("key-", rng() % 50);
      break;
    default:  // Round-robin (time layout) or by topic (topic layout).
      break;
  }
  return w;
}

Message ToMessage(const Written& w) {
  return Message{.topic = w.topic,
                 .payload = w.payload,
                 .key = w.key,
                 .partition = w.asked_partition,
                 .priority = w.priority};
}

// Writes `n` random messages to `q`, appending them to `model`. Between
// writes the clock moves 0..3 ms; a quarter of the writes are batches.
void PutRandom(std::mt19937_64& rng, SimulatedClock& clock, Queue* q, size_t n,
               std::vector<Written>* model) {
  const QueueOptions& qo = q->options();
  size_t written = 0;
  while (written < n) {
    clock.Advance(absl::Milliseconds(static_cast<int64_t>(rng() % 4)));
    const size_t batch = rng() % 4 == 0 ? 1 + rng() % 10 : 0;
    if (batch == 0) {
      Written w = RandomMessage(rng, qo);
      w.where = ValueOrDie(q->Put(ToMessage(w)));
      if (w.asked_partition.has_value()) {
        CHECK(w.where.partition == *w.asked_partition);
      }
      model->push_back(std::move(w));
      ++written;
      continue;
    }
    std::vector<Written> ws;
    for (size_t i = 0; i < batch; ++i) ws.push_back(RandomMessage(rng, qo));
    std::vector<Message> ms;
    for (const Written& w : ws) ms.push_back(ToMessage(w));
    std::vector<PutResult> results;
    HQ_REQUIRE_OK(q->PutBatch(ms, &results));
    REQUIRE(results.size() == batch);
    for (size_t i = 0; i < batch; ++i) {
      ws[i].where = results[i];
      model->push_back(std::move(ws[i]));
    }
    written += batch;
  }
}

// An id to use as a range bound: mostly a stored id, sometimes its
// neighbours or the extremes.
MessageId RandomBound(std::mt19937_64& rng, const std::vector<Written>& model) {
  switch (rng() % 8) {
    case 0:
      return MessageId::Min();
    case 1:
      return MessageId::Max();
    case 2:
      return model[rng() % model.size()].where.id.Next();
    default:
      return model[rng() % model.size()].where.id;
  }
}

ScanOptions RandomOptions(std::mt19937_64& rng, const QueueOptions& qo,
                          const std::vector<Written>& model) {
  ScanOptions o;
  if (rng() % 3 != 0) {
    const size_t n = 1 + rng() % qo.partitions;
    for (size_t i = 0; i < n; ++i) {
      o.partitions.push_back(static_cast<uint32_t>(rng() % qo.partitions));
    }
  }
  if (rng() % 2 == 0) {
    const size_t n = 1 + rng() % 4;
    for (size_t i = 0; i < n; ++i) {
      const auto& from = rng() % 4 == 0 ? AbsentTopics() : StoredTopics();
      o.topics.push_back(from[rng() % from.size()]);
    }
  }
  if (rng() % 3 != 0) {
    MessageId a = RandomBound(rng, model), b = RandomBound(rng, model);
    if (b < a) std::swap(a, b);
    o.from = a;
    o.to = b;
  }
  o.order = rng() % 2 == 0 ? Order::kMerged : Order::kLane;
  return o;
}

TEST_CASE("Scans match a model of random writes, before and after reopen",
          "[scanner][model]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  const uint64_t seed =
      Seed(static_cast<uint64_t>(layout) * 10 + static_cast<uint64_t>(storage));
  INFO("layout " << LayoutName(layout) << ", storage " << StorageName(storage)
                 << ", seed " << seed);
  std::mt19937_64 rng(seed);
  DbFixture f(storage);
  const QueueOptions qo{.partitions = 4, .priorities = 3, .layout = layout};
  Queue* q = ValueOrDie(f.db()->CreateQueue("model", qo));
  // A queue after it, so that seeks past its end land on another queue.
  Queue* next_queue = ValueOrDie(f.db()->CreateQueue("next", qo));
  std::vector<Written> model;

  auto check_many = [&](int scans) {
    CheckModelIds(model, qo.partitions);
    CheckScan(q, model, ScanOptions{});
    CheckScan(q, model, ScanOptions{.order = Order::kLane});
    for (int i = 0; i < scans; ++i) {
      CheckScan(q, model, RandomOptions(rng, qo, model));
    }
  };

  PutRandom(rng, f.clock(), q, 1500, &model);
  ValueOrDie(next_queue->Put({.topic = "x", .payload = "other queue"}));
  check_many(100);

  f.Reopen();  // Queue* handles died with the old Db.
  q = ValueOrDie(f.db()->OpenQueue("model"));
  check_many(30);

  PutRandom(rng, f.clock(), q, 1500, &model);
  // The clock stepping back must not reorder anything.
  f.clock().Advance(absl::Milliseconds(-50));
  PutRandom(rng, f.clock(), q, 200, &model);
  check_many(150);
}

// ------------------------------------------------------------ snapshots

TEST_CASE("A scanner sees the queue as it was when NewScanner returned",
          "[scanner]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  const Order order = GENERATE(Order::kMerged, Order::kLane);
  INFO("layout " << LayoutName(layout) << ", storage " << StorageName(storage));
  DbFixture f(storage);
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 2, .priorities = 2, .layout = layout}));
  std::vector<MessageId> old_ids;
  for (int i = 0; i < 10; ++i) {
    old_ids.push_back(ValueOrDie(q->Put({.topic = i % 2 ? "a" : "b",
                                         .payload = "old",
                                         .partition = 0u,
                                         .priority = i % 2}))
                          .id);
  }

  auto scanner = ValueOrDie(q->NewScanner({.order = order}));
  // Written after NewScanner, before the first Next: into the same lanes,
  // new lanes, a new partition, and a new topic.
  for (int i = 0; i < 10; ++i) {
    f.clock().Advance(absl::Milliseconds(1));
    ValueOrDie(q->Put({.topic = i % 3 == 0 ? "c" : "a",
                       .payload = "new",
                       .partition = static_cast<uint32_t>(i % 2),
                       .priority = i % 2}));
  }
  std::vector<MessageId> seen;
  while (scanner->Next()) {
    CHECK(scanner->message().payload == "old");
    seen.push_back(scanner->message().id);
    // Written while the scan is half-way: still invisible to it.
    ValueOrDie(q->Put({.topic = "a", .payload = "new", .partition = 0u}));
  }
  HQ_REQUIRE_OK(scanner->status());
  std::sort(seen.begin(), seen.end());
  CHECK(seen == old_ids);
  CHECK_FALSE(scanner->Next());  // Stays at the end.

  // A new scanner sees all of them.
  CHECK(ScanAll(q).size() == 10 + 10 + 10);
}

// ----------------------------------------------------------- time range

TEST_CASE("AtTime bounds select exactly the messages written in [t1, t2)",
          "[scanner]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO("layout " << LayoutName(layout) << ", storage " << StorageName(storage));
  DbFixture f(storage);
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 3, .priorities = 2, .layout = layout}));
  const absl::Time t0 = f.clock().Now();
  // Millisecond k (k = 0..19) holds k % 4 messages, so some hold none.
  struct At {
    int ms;
    std::string payload;
  };
  std::vector<At> written;
  for (int k = 0; k < 20; ++k) {
    f.clock().Set(t0 + absl::Milliseconds(k));
    for (int j = 0; j < k % 4; ++j) {
      const std::string payload = absl::StrCat(k, "/", j);
      ValueOrDie(q->Put({.topic = j % 2 ? "odd" : "even",
                         .payload = payload,
                         .priority = j % 2}));
      written.push_back({k, payload});
    }
  }
  auto in_range = [&](int from_ms, int to_ms) {
    std::vector<std::string> out;
    for (const At& a : written) {
      if (a.ms >= from_ms && a.ms < to_ms) out.push_back(a.payload);
    }
    std::sort(out.begin(), out.end());
    return out;
  };
  for (int a = 0; a <= 20; a += 3) {
    for (int b = a; b <= 21; b += 2) {
      INFO("[t0+" << a << "ms, t0+" << b << "ms)");
      for (Order order : {Order::kMerged, Order::kLane}) {
        ScanOptions o{.from = MessageId::AtTime(t0 + absl::Milliseconds(a)),
                      .to = MessageId::AtTime(t0 + absl::Milliseconds(b)),
                      .order = order};
        std::vector<std::string> got;
        for (const ScannedMessage& m : ScanAll(q, o)) {
          CHECK(m.id.time() >= t0 + absl::Milliseconds(a));
          CHECK(m.id.time() < t0 + absl::Milliseconds(b));
          got.push_back(m.payload);
        }
        std::sort(got.begin(), got.end());
        CHECK(got == in_range(a, b));
      }
    }
  }
  // A bound within a millisecond rounds up to the next one.
  ScanOptions o{.from = MessageId::AtTime(t0 + absl::Microseconds(4500)),
                .to = MessageId::AtTime(t0 + absl::Microseconds(6500))};
  std::vector<std::string> got;
  for (const ScannedMessage& m : ScanAll(q, o)) got.push_back(m.payload);
  std::sort(got.begin(), got.end());
  CHECK(got == in_range(5, 7));
}

// ------------------------------------------------------------ emptiness

TEST_CASE("Scans that match nothing return no message and OK", "[scanner]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  const Order order = GENERATE(Order::kMerged, Order::kLane);
  INFO("layout " << LayoutName(layout) << ", storage " << StorageName(storage));
  DbFixture f(storage);
  const QueueOptions qo{.partitions = 4, .priorities = 3, .layout = layout};
  Queue* empty = ValueOrDie(f.db()->CreateQueue("empty", qo));
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", qo));
  // A later queue with messages, so a scan past q's end lands on its keys.
  Queue* later = ValueOrDie(f.db()->CreateQueue("later", qo));

  auto expect_none = [&](Queue* queue, ScanOptions o) {
    o.order = order;
    INFO(queue->name() << " " << Describe(o));
    auto scanner = ValueOrDie(queue->NewScanner(o));
    CHECK_FALSE(scanner->Next());
    HQ_REQUIRE_OK(scanner->status());
    CHECK_FALSE(scanner->Next());
  };

  expect_none(empty, {});
  expect_none(empty, {.partitions = {3}, .topics = {"a"}});

  // Partitions 1 and 3 get messages (priorities 0 and 2); 0 and 2 none.
  std::vector<MessageId> ids;
  for (int i = 0; i < 6; ++i) {
    f.clock().Advance(absl::Milliseconds(1));
    ids.push_back(ValueOrDie(q->Put({.topic = i % 2 ? "a" : "b",
                                     .payload = "p",
                                     .partition = i % 2 ? 1u : 3u,
                                     .priority = i % 2 ? 0 : 2}))
                      .id);
    ValueOrDie(later->Put({.topic = "a", .payload = "l", .partition = 0u}));
    ValueOrDie(later->Put({.topic = "a", .payload = "l", .partition = 2u}));
  }
  expect_none(empty, {});
  expect_none(q, {.partitions = {0}});
  expect_none(q, {.partitions = {2}});
  expect_none(q, {.partitions = {0, 2}, .topics = {"a"}});
  expect_none(q, {.topics = {"c"}});
  expect_none(q, {.topics = {"", "aa", "ba"}});
  expect_none(q, {.partitions = {1}, .topics = {"b"}});
  for (const MessageId& id : ids) {
    expect_none(q, {.from = id, .to = id});
  }
  expect_none(q, {.from = MessageId::Min(), .to = MessageId::Min()});
  expect_none(q, {.from = MessageId::Max(), .to = MessageId::Max()});
  expect_none(q, {.from = ids.back().Next()});
  expect_none(q, {.to = ids.front()});
  // Sanity: the same scanners without the empty filter do see messages.
  CHECK(ScanAll(q, {.order = order}).size() == 6);
  CHECK(
      ScanAll(q, {.partitions = {1}, .topics = {"a"}, .order = order}).size() ==
      3);
  CHECK(ScanAll(q, {.from = ids[2], .to = ids[3], .order = order}).size() == 1);
}

// ---------------------------------------------------------- round trips

TEST_CASE("Payloads, keys and topics round-trip byte for byte", "[scanner]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO("layout " << LayoutName(layout) << ", storage " << StorageName(storage));
  DbFixture f(storage);
  constexpr uint32_t kMaxPayload = 5000;
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q",
      {.partitions = 3, .layout = layout, .max_payload_bytes = kMaxPayload}));

  std::string all_bytes;
  for (int i = 0; i < 256; ++i) all_bytes.push_back(static_cast<char>(i));
  std::string max_payload;
  while (max_payload.size() < kMaxPayload) max_payload += all_bytes;
  max_payload.resize(kMaxPayload);
  max_payload.back() = '\xff';

  const std::vector<std::pair<std::string, std::string>> topic_and_key = {
      {"", ""},
      {std::string("\0", 1), std::string("\0", 1)},
      {std::string("\xff\xff", 2), std::string("\xff", 1)},
      {std::string("a\0b", 3), std::string("k\0\xffk", 4)},
      {all_bytes, all_bytes},
      {std::string(1024, '\xff'), std::string(1024, '\0')},
      {std::string(1024, '\0'), std::string(1024, '\xff')},
  };
  const std::vector<std::string> payloads = {
      "",        std::string("\0", 1), std::string("\xff\0\xff", 3),
      all_bytes, max_payload,
  };
  std::vector<ScannedMessage> want;
  uint32_t partition = 0;
  for (const auto& [topic, key] : topic_and_key) {
    for (const std::string& payload : payloads) {
      f.clock().Advance(absl::Milliseconds(1));
      partition = (partition + 1) % 3;
      const PutResult r = ValueOrDie(q->Put({.topic = topic,
                                             .payload = payload,
                                             .key = key,
                                             .partition = partition}));
      want.push_back({r.id, r.partition, 0, topic, key, payload});
    }
  }
  // One byte over the limit is refused and writes nothing.
  CHECK(q->Put({.payload = max_payload + "x"}).status().code() ==
        absl::StatusCode::kInvalidArgument);

  // want is in (id, partition) order already: ids grow with the clock.
  const std::string diff = Diff(ScanAll(q), want);
  CHECK(diff == "");
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const std::string diff_after_reopen = Diff(ScanAll(q), want);
  CHECK(diff_after_reopen == "");

  // Each binary topic selects exactly its own messages.
  for (const auto& tk : topic_and_key) {
    const std::string& topic = tk.first;
    INFO("topic '" << Hex(topic.substr(0, 16)) << "' (" << topic.size()
                   << " bytes)");
    std::vector<ScannedMessage> want_topic;
    for (const ScannedMessage& m : want) {
      if (m.topic == topic) want_topic.push_back(m);
    }
    REQUIRE(want_topic.size() == payloads.size());
    for (Order order : {Order::kMerged, Order::kLane}) {
      auto got = ScanAll(q, {.topics = {topic}, .order = order});
      if (order == Order::kLane) {
        std::stable_sort(got.begin(), got.end(),
                         [](const ScannedMessage& a, const ScannedMessage& b) {
                           return a.id < b.id;
                         });
      }
      const std::string topic_diff = Diff(got, want_topic);
      CHECK(topic_diff == "");
    }
  }
}

// ----------------------------------------------------------- many lanes

TEST_CASE("Merging many thin lanes and a few long ones keeps exact order",
          "[scanner]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO("layout " << LayoutName(layout) << ", storage " << StorageName(storage));
  std::mt19937_64 rng(Seed(100 + static_cast<uint64_t>(layout)));
  DbFixture f(storage);
  const QueueOptions qo{.partitions = 64, .priorities = 4, .layout = layout};
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", qo));
  // The topic layout also spreads over 8 topics: up to 2048 lanes, so each
  // lane's share of the merge buffer (and its chunk) is small.
  const int topics = layout == Layout::kTopic ? 8 : 1;
  // Three hot lanes, each > 300 messages, interleaved with all the others.
  struct LaneId {
    uint32_t partition;
    int priority;
    int topic;
  };
  const LaneId hot[] = {{0, 3, 0}, {17, 0, 1 % topics}, {63, 2, 7 % topics}};
  std::vector<Written> model;
  for (int i = 0; i < 6000; ++i) {
    if (rng() % 3 == 0) f.clock().Advance(absl::Milliseconds(1));
    LaneId lane;
    if (rng() % 2 == 0) {
      lane = hot[rng() % 3];
    } else {
      lane = {static_cast<uint32_t>(rng() % qo.partitions),
              static_cast<int>(rng() % qo.priorities),
              static_cast<int>(rng() % topics)};
    }
    Written w;
    w.topic = absl::StrCat("t", lane.topic);
    w.priority = lane.priority;
    w.payload = absl::StrCat(i);
    w.where = ValueOrDie(q->Put({.topic = w.topic,
                                 .payload = w.payload,
                                 .partition = lane.partition,
                                 .priority = lane.priority}));
    model.push_back(std::move(w));
  }
  for (const LaneId& h : hot) {
    const auto n = std::count_if(model.begin(), model.end(), [&](auto& w) {
      return w.where.partition == h.partition && w.priority == h.priority &&
             w.topic == absl::StrCat("t", h.topic);
    });
    REQUIRE(n > 300);
  }

  CheckScan(q, model, {});
  CheckScan(q, model, {.order = Order::kLane});
  CheckScan(q, model, {.partitions = {0, 17, 63}});
  CheckScan(q, model, {.partitions = {0, 1, 2, 17, 40, 63}, .topics = {"t1"}});
  CheckScan(q, model, {.topics = {"t0", "t1", "t7"}});
  CheckScan(q, model, {.topics = {"t0", "t1", "t7"}, .order = Order::kLane});
  CheckScan(q, model,
            {.from = model[1000].where.id, .to = model[5000].where.id});
  // A scan that reads only part of a hot lane, in every position.
  for (int i = 0; i < 5; ++i) {
    CheckScan(q, model, RandomOptions(rng, qo, model));
  }
}

// ------------------------------------------------------- topic prefixes

TEST_CASE("A topic filter matches whole topics, never a prefix", "[scanner]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  const Order order = GENERATE(Order::kMerged, Order::kLane);
  INFO("layout " << LayoutName(layout) << ", storage " << StorageName(storage));
  DbFixture f(storage);
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 2, .priorities = 2, .layout = layout}));
  const std::vector<std::string> topics = {"", "a", "ab", "b", "abc", "ba"};
  for (int i = 0; i < 60; ++i) {
    if (i % 4 == 0) f.clock().Advance(absl::Milliseconds(1));
    const std::string& t = topics[i % topics.size()];
    ValueOrDie(q->Put({.topic = t,
                       .payload = t,
                       .partition = static_cast<uint32_t>(i % 2),
                       .priority = (i / 2) % 2}));
  }
  const std::vector<std::vector<std::string>> filters = {
      {"a"},       {"ab"},      {"b"},  {""},      {"a", "b"},
      {"ab", "b"}, {"abc", ""}, {"aa"}, {"a", "a"}};
  for (const auto& filter : filters) {
    INFO("filter {" << absl::StrJoin(filter, ",") << "}");
    const std::set<std::string> want(filter.begin(), filter.end());
    std::map<std::string, int> count;
    for (const ScannedMessage& m :
         ScanAll(q, {.topics = filter, .order = order})) {
      CHECK(want.contains(m.topic));
      CHECK(m.payload == m.topic);
      ++count[m.topic];
    }
    for (const std::string& t : want) {
      const bool stored =
          std::find(topics.begin(), topics.end(), t) != topics.end();
      CHECK(count[t] == (stored ? 10 : 0));
    }
  }
}

// A topic filter's lanes are visited in storage order, shorter topics
// first. Visiting "ab" before "b" (plain byte order) both breaks kLane order
// and, when the "ab" lane is empty and the seek lands in a later partition,
// skips the "b" lane of the partition altogether.
TEST_CASE("A topic filter finds every lane, whatever the topics' byte order",
          "[scanner]") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  const Order order = GENERATE(Order::kMerged, Order::kLane);
  INFO("storage " << StorageName(storage));
  DbFixture f(storage);
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  std::vector<Written> model;
  auto put = [&](std::string topic, uint32_t partition) {
    f.clock().Advance(absl::Milliseconds(1));
    Written w;
    w.topic = std::move(topic);
    w.payload = "p";
    w.where = ValueOrDie(
        q->Put({.topic = w.topic, .payload = "p", .partition = partition}));
    model.push_back(std::move(w));
  };
  put("b", 0);  // Partition 0: only "b", no "ab".
  put("x", 1);  // Partition 1: neither.
  put("b", 0);
  CheckScan(q, model, {.topics = {"ab", "b"}, .order = order});
  CheckScan(q, model, {.topics = {"b", "ab"}, .order = order});
  put("ab", 0);  // Now both lanes of partition 0 hold messages.
  put("b", 1);
  CheckScan(q, model, {.topics = {"ab", "b"}, .order = order});
  CheckScan(q, model, {.topics = {"ab", "b", "x", ""}, .order = order});
}

// ------------------------------------------------------------- dropping

// A message key that holds no lane prefix stops a scan that walks the
// lanes with DataLoss: it is neither skipped nor walked over again.
TEST_CASE("A malformed message key fails a lane walk with DataLoss",
          "[scanner]") {
  DbFixture f(Storage::kMemory, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  for (const char* t : {"a", "b", "c"}) {
    HQ_REQUIRE_OK(
        q->Put({.topic = t, .payload = "x", .partition = 0u}).status());
  }
  // Partition 0, priority 0, a topic length of 9 with 2 bytes of topic:
  // it sorts after the lanes above.
  std::string bad = format::MessagePrefix(static_cast<QueueImpl*>(q)->id());
  bad.append("\x00\x00\xff\x00\x09zz", 7);
  REQUIRE(Impl(f.db())->leveldb()->Put({}, bad, "").ok());
  for (const auto order :
       {ScanOptions::Order::kLane, ScanOptions::Order::kMerged}) {
    INFO("order " << static_cast<int>(order));
    auto scanner = ValueOrDie(q->NewScanner({.order = order}));
    int n = 0;
    while (scanner->Next() && n < 1000) ++n;
    CHECK(n <= 3);
    CHECK(scanner->status().code() == absl::StatusCode::kDataLoss);
  }
}

TEST_CASE("A dropped queue's scanners fail; its successor scans empty",
          "[scanner]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO("layout " << LayoutName(layout) << ", storage " << StorageName(storage));
  DbFixture f(storage);
  const QueueOptions qo{.partitions = 3, .priorities = 2, .layout = layout};
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", qo));
  Queue* other = ValueOrDie(f.db()->CreateQueue("other", qo));
  for (int i = 0; i < 100; ++i) {
    ValueOrDie(q->Put({.topic = i % 2 ? "x" : "", .payload = "old"}));
    ValueOrDie(other->Put({.topic = "x", .payload = "kept"}));
  }
  // A scanner opened before the drop keeps reading its snapshot.
  auto before = ValueOrDie(q->NewScanner({}));

  HQ_REQUIRE_OK(f.db()->DropQueue("q"));
  auto s = q->NewScanner({});
  CHECK(s.status().code() == absl::StatusCode::kNotFound);
  s = q->NewScanner({.partitions = {0}, .order = Order::kLane});
  CHECK(s.status().code() == absl::StatusCode::kNotFound);
  CHECK(f.db()->OpenQueue("q").status().code() == absl::StatusCode::kNotFound);

  size_t old_seen = 0;
  while (before->Next()) ++old_seen;
  HQ_REQUIRE_OK(before->status());
  CHECK(old_seen == 100);
  before.reset();

  Queue* again = ValueOrDie(f.db()->CreateQueue("q", qo));
  CHECK(ScanAll(again).empty());
  CHECK(ScanAll(again, {.order = Order::kLane}).empty());
  CHECK(ScanAll(again, {.topics = {"x", ""}}).empty());
  CHECK(ScanAll(other).size() == 100);
  // The old handle stays dropped, even with a new queue of its name.
  CHECK(q->NewScanner({}).status().code() == absl::StatusCode::kNotFound);

  ValueOrDie(again->Put({.topic = "x", .payload = "new"}));
  f.Reopen();
  again = ValueOrDie(f.db()->OpenQueue("q"));
  const auto after = ScanAll(again);
  REQUIRE(after.size() == 1);
  CHECK(after[0].payload == "new");
  CHECK(ScanAll(ValueOrDie(f.db()->OpenQueue("other"))).size() == 100);
}

// Review of issue 2: with the topic layout and no topic filter, lanes were
// found by seeking to each lane's start, which walks every deleted row at
// its head (what TTL leaves behind). Lanes now come from the lane
// directory and every seek lands on `from`.
TEST_CASE(
    "issue2: a scan from `from` does not walk deleted rows at a lane head",
    "[scanner]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  INFO("layout " << LayoutName(layout));
  std::unique_ptr<leveldb::Env> mem(
      leveldb::NewMemEnv(leveldb::Env::Default()));
  CountingEnv env(mem.get());
  Options o;
  o.env = &env;
  o.write_buffer_bytes = 64 << 10;  // Rows reach table files quickly.
  o.cache_bytes = 1;                // Every block read is a file read.
  DbFixture f(Storage::kMemory, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 2, .priorities = 2, .layout = layout}));
  const std::string payload(100, 'p');
  for (int i = 0; i < 50; ++i) {
    std::vector<Message> batch;
    for (int j = 0; j < 1000; ++j) {
      batch.push_back({.topic = j % 2 ? "t" : "u",
                       .payload = payload,
                       .partition = 0u,
                       .priority = j % 3 == 0 ? 1 : 0});
    }
    HQ_REQUIRE_OK(q->PutBatch(batch, nullptr));
    f.clock().Advance(absl::Milliseconds(1));
  }
  // Delete every message as a TTL sweep does, with each lane's head (its
  // watermark) in the same batch, and push the tombstones into table files
  // with more writes elsewhere. No lane has a fence (format.md).
  leveldb::DB* ldb = static_cast<DbImpl*>(f.db())->leveldb();
  auto* impl = static_cast<QueueImpl*>(q);
  const std::string prefix = format::MessagePrefix(impl->id());
  {
    std::unique_ptr<leveldb::Iterator> it(ldb->NewIterator({}));
    leveldb::WriteBatch b;
    int deleted = 0;
    std::map<std::string, MessageId> heads;  // Lane prefix -> watermark.
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
         it->Next()) {
      DecodedKey k;
      const std::string_view key(it->key().data(), it->key().size());
      REQUIRE(impl->codec().DecodeMessageKey(key, impl->id(), &k));
      REQUIRE(k.id != MessageId::Max());  // No fence.
      b.Delete(it->key());
      heads[std::string(key.substr(0, k.lane_prefix_size))] = k.id.Next();
      ++deleted;
    }
    REQUIRE(deleted == 50000);
    REQUIRE(heads.size() == (layout == Layout::kTopic ? 4 : 2));
    for (const auto& [lane, watermark] : heads) {
      std::string v;
      LayoutCodec::AppendMessageId(&v, watermark);
      b.Put(lane, v);
    }
    REQUIRE(ldb->Write({}, &b).ok());
  }
  Queue* other = ValueOrDie(f.db()->CreateQueue("other", {}));
  for (int i = 0; i < 20; ++i) {
    std::vector<Message> batch(100, Message{.payload = payload});
    HQ_REQUIRE_OK(other->PutBatch(batch, nullptr));
  }
  f.clock().Advance(absl::Seconds(10));
  HQ_REQUIRE_OK(
      q->Put({.topic = "t", .payload = "new", .partition = 0u}).status());
  HQ_REQUIRE_OK(
      q->Put({.topic = "u", .payload = "new", .partition = 1u}).status());

  ScanOptions from_now;
  from_now.from = MessageId::AtTime(f.clock().Now());
  auto reads_of = [&](const ScanOptions& so, size_t want) {
    const int64_t before = env.own_reads.load();
    CHECK(ScanAll(q, so).size() == want);
    return env.own_reads.load() - before;
  };
  ScanOptions filtered = from_now;
  filtered.topics = {"t", "u"};
  const int64_t with_filter = reads_of(filtered, 2);
  const int64_t no_filter = reads_of(from_now, 2);
  INFO("table reads: no filter " << no_filter << ", topic filter "
                                 << with_filter);
  // Walking the deleted heads would read the blocks of 50000 rows (several
  // thousand reads); seeking to `from` reads a handful per lane.
  CHECK(no_filter < 200);
  CHECK(with_filter < 200);
}

}  // namespace
}  // namespace hq::test
