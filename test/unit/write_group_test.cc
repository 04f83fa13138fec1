// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The write pipeline's batch building (lib/engine/write_group.h) alone: a
// line of fake writers (sizes, sync, exclusive, failing) grouped into
// LevelDB batches as DbImpl's leader groups them, and the ids and
// reservations of a partition over a clock that jumps and a crash. No Db.

#include "lib/engine/write_group.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "leveldb/write_batch.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"

namespace hq {
namespace {

struct FakeWriter {
  int id = 0;
  size_t bytes = 0;  // What it appends to the batch.
  bool sync = false;
  bool exclusive = false;
  bool fails = false;  // Its ids cannot be assigned: it appends nothing.
};

struct Batch {
  std::vector<FakeWriter> writers;  // In batch order.
  bool sync = false;
  bool exclusive = false;
  size_t bytes = 0;              // The batch's ApproximateSize.
  size_t bytes_before_last = 0;  // Before its last writer joined.
};

// Runs the line as DbImpl::RunWriterLocked does: the writer at the front
// leads; an exclusive one runs alone; otherwise the group decides who joins
// a leveldb::WriteBatch (in memory; never written).
std::vector<Batch> RunLine(std::deque<FakeWriter> line, size_t max_bytes) {
  std::vector<Batch> out;
  while (!line.empty()) {
    const FakeWriter leader = line.front();
    Batch b;
    if (leader.exclusive) {
      b.exclusive = true;
      b.writers.push_back(leader);
      line.pop_front();
      out.push_back(b);
      continue;
    }
    WriteGroup group(leader.sync, max_bytes);
    leveldb::WriteBatch batch;
    for (const FakeWriter& x : line) {
      if (!group.Join(x.exclusive, x.sync, batch.ApproximateSize())) break;
      b.bytes_before_last = batch.ApproximateSize();
      if (!x.fails)
        batch.Put("k" + std::to_string(x.id), std::string(x.bytes, 'v'));
      b.writers.push_back(x);
    }
    REQUIRE(group.joined() == b.writers.size());
    REQUIRE(!b.writers.empty());  // The leader always joins.
    line.erase(line.begin(), line.begin() + b.writers.size());
    b.sync = group.sync();
    b.bytes = batch.ApproximateSize();
    out.push_back(b);
  }
  return out;
}

std::deque<FakeWriter> RandomLine(std::mt19937& rng, int n, size_t max_bytes) {
  std::deque<FakeWriter> line;
  for (int i = 0; i < n; ++i) {
    FakeWriter w{.id = i};
    switch (rng() % 10) {
      case 0:
        w.bytes = max_bytes + rng() % max_bytes;  // Over the limit alone.
        break;
      case 1:
      case 2:
        w.bytes = rng() % max_bytes;
        break;
      default:
        w.bytes = rng() % (max_bytes / 20 + 1);
    }
    w.sync = rng() % 4 == 0;
    w.exclusive = rng() % 15 == 0;
    w.fails = rng() % 12 == 0;
    line.push_back(w);
  }
  return line;
}

TEST_CASE("write group: batches keep the line's order and their limits") {
  const uint32_t seed = GENERATE(range(1u, 21u));
  const size_t max_bytes = GENERATE(size_t{1000}, WriteGroup::kMaxBytes);
  std::mt19937 rng(seed);
  const std::deque<FakeWriter> line = RandomLine(rng, 400, max_bytes);
  const std::vector<Batch> batches = RunLine(line, max_bytes);
  INFO("seed " << seed << " max_bytes " << max_bytes);

  // Every writer once, in line order.
  std::vector<int> order;
  for (const Batch& b : batches) {
    for (const FakeWriter& w : b.writers) order.push_back(w.id);
  }
  std::vector<int> want(line.size());
  for (size_t i = 0; i < want.size(); ++i) want[i] = static_cast<int>(i);
  REQUIRE(order == want);

  for (size_t i = 0; i < batches.size(); ++i) {
    const Batch& b = batches[i];
    // An exclusive writer runs alone.
    if (b.exclusive) {
      CHECK(b.writers.size() == 1);
      continue;
    }
    for (const FakeWriter& w : b.writers) CHECK_FALSE(w.exclusive);
    // Written with its leader's sync; no sync write in a batch without.
    CHECK(b.sync == b.writers.front().sync);
    if (!b.sync) {
      for (const FakeWriter& w : b.writers) CHECK_FALSE(w.sync);
    }
    // Over the limit by at most its last writer.
    if (b.writers.size() > 1) CHECK(b.bytes_before_last <= max_bytes);
    // As many as may join: the writer behind the batch could not.
    if (i + 1 < batches.size()) {
      const FakeWriter& next = batches[i + 1].writers.front();
      CHECK((next.exclusive || (next.sync && !b.sync) || b.bytes > max_bytes));
    }
  }
}

TEST_CASE("write group: many small writes share one batch, sync or not") {
  const bool sync = GENERATE(false, true);
  std::deque<FakeWriter> line;
  for (int i = 0; i < 1000; ++i) {
    line.push_back({.id = i, .bytes = 100, .sync = sync});
  }
  const std::vector<Batch> batches = RunLine(line, WriteGroup::kMaxBytes);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].writers.size() == 1000);
  CHECK(batches[0].sync == sync);
}

TEST_CASE("write group: a write that did not ask for sync rides a synced one") {
  std::deque<FakeWriter> line = {{.id = 0, .sync = true}, {.id = 1}};
  const std::vector<Batch> batches = RunLine(line, WriteGroup::kMaxBytes);
  REQUIRE(batches.size() == 1);
  CHECK(batches[0].sync);
}

TEST_CASE("write group: a sync write waits for a batch written with sync") {
  std::deque<FakeWriter> line = {
      {.id = 0}, {.id = 1, .sync = true}, {.id = 2}, {.id = 3, .sync = true}};
  const std::vector<Batch> batches = RunLine(line, WriteGroup::kMaxBytes);
  // Writer 2 would fit with 0, but does not pass 1.
  REQUIRE(batches.size() == 2);
  CHECK(batches[0].writers.size() == 1);
  CHECK_FALSE(batches[0].sync);
  CHECK(batches[1].writers.size() == 3);
  CHECK(batches[1].sync);
}

TEST_CASE("write group: once a writer is refused, none behind it joins") {
  WriteGroup group(/*sync=*/false, /*max_bytes=*/100);
  CHECK(group.Join(false, false, 0));
  CHECK(group.Join(false, false, 100));  // At the limit: not over it.
  CHECK_FALSE(group.Join(false, false, 101));
  CHECK_FALSE(group.Join(false, false, 0));  // Would fit, but is behind.
  CHECK(group.joined() == 2);

  WriteGroup exclusive_first(false, 100);
  CHECK_FALSE(exclusive_first.Join(true, false, 0));  // It runs alone.
  CHECK(exclusive_first.joined() == 0);

  WriteGroup behind_exclusive(false, 100);
  CHECK(behind_exclusive.Join(false, false, 0));
  CHECK_FALSE(behind_exclusive.Join(true, false, 0));
  CHECK_FALSE(behind_exclusive.Join(false, false, 0));

  // A leader bigger than the limit still goes, and alone.
  std::deque<FakeWriter> line = {{.id = 0, .bytes = 5000}, {.id = 1}};
  const std::vector<Batch> batches = RunLine(line, 1000);
  REQUIRE(batches.size() == 2);
  CHECK(batches[0].writers.size() == 1);
}

TEST_CASE("partition ids grow across a clock that jumps, and a crash") {
  const uint32_t seed = GENERATE(range(1u, 11u));
  std::mt19937 rng(seed);
  constexpr uint64_t kWindow = 1000;
  PartitionIds ids;
  uint64_t clock_ms = 1767225600000;
  uint64_t stored_reservation = 0;          // What the Db holds.
  MessageId stored_max = MessageId::Min();  // The greatest id written.
  int reservations = 0;
  std::optional<MessageId> first, last;
  uint64_t passed_ms = 0;  // The clock passes the ids above this.
  for (int i = 0; i < 20000; ++i) {
    const uint32_t r = rng() % 1000;
    if (r < 10) {  // The clock steps back, up to a day.
      clock_ms -= rng() % (uint64_t{24} * 3600 * 1000);
    } else if (r < 12) {  // A crash: resume from what was stored.
      ids = PartitionIds::Resume(stored_reservation);
      if (stored_reservation > 0) {
        passed_ms = std::max(passed_ms, stored_reservation - 1);
      }
    } else {
      clock_ms += rng() % 3;
    }
    MessageId id;
    REQUIRE(ids.Take(clock_ms, &id));
    INFO("seed " << seed << " step " << i);
    // Above every id taken, and every id stored before a crash.
    if (last.has_value()) REQUIRE(*last < id);
    REQUIRE(stored_max < id);
    // At the clock's ms once the clock passed the ids.
    if (!last.has_value() || clock_ms > passed_ms) {
      CHECK(id == MessageId{clock_ms, 0});
    }
    if (!first.has_value()) first = id;
    last = id;
    passed_ms = std::max(passed_ms, id.ms);
    // Written in a batch with a reservation above it.
    if (ids.Reserve(id, kWindow)) {
      ++reservations;
      stored_reservation = ids.reserved_ms;
    }
    REQUIRE(id.ms < stored_reservation);
    stored_max = id;
  }
  // One reservation a window of ids' time, not one a message.
  CHECK(static_cast<uint64_t>(reservations) <=
        (last->ms - first->ms) / kWindow + 1);
  CHECK(reservations > 1);
}

TEST_CASE("partition ids end before MessageId::Max()") {
  PartitionIds ids = PartitionIds::Resume(MessageId::kMaxMs + 1);
  MessageId id;
  CHECK_FALSE(ids.Take(0, &id));  // Every id is used.
  CHECK_FALSE(ids.Take(MessageId::kMaxMs, &id));

  PartitionIds near;
  near.last = MessageId{MessageId::kMaxMs, 0xfffd};
  near.has_last = true;
  REQUIRE(near.Take(5, &id));
  CHECK(id == MessageId{MessageId::kMaxMs, 0xfffe});
  CHECK_FALSE(near.Take(5, &id));
  // The reservation never passes the last ms.
  CHECK(near.Reserve(MessageId{MessageId::kMaxMs, 0}, 1000));
  CHECK(near.reserved_ms == MessageId::kMaxMs + 1);
  CHECK_FALSE(near.Reserve(MessageId{MessageId::kMaxMs, 0xfffe}, 1000));

  // No reservation stored: ids start at the clock.
  PartitionIds fresh = PartitionIds::Resume(0);
  REQUIRE(fresh.Take(42, &id));
  CHECK(id == MessageId{42, 0});
}

std::string Lane(uint32_t queue, int priority, std::string_view topic) {
  std::string s;
  LayoutCodec::For(Layout::kTopic)
      .AppendLanePrefix(&s, queue, 0, priority, topic);
  return s;
}

TEST_CASE("batch hints name each lane once, under its queue and priority") {
  const uint32_t seed = GENERATE(range(1u, 11u));
  std::mt19937 rng(seed);
  BatchHints hints;
  for (int batch = 0; batch < 3; ++batch) {
    hints.Clear();  // A new batch hints every lane again.
    // Lanes of 2 queues x 2 priorities, hinted at random, often in runs.
    std::vector<uint64_t> key_order;
    std::map<uint64_t, std::vector<std::string>> want;  // lane_rests
    std::set<std::string> named;
    std::string lane;
    uint64_t key = 0;
    for (int i = 0; i < 500; ++i) {
      if (lane.empty() || rng() % 3 != 0) {
        const uint32_t q = 1 + rng() % 2;
        const int prio = static_cast<int>(rng() % 2);
        lane = Lane(q, prio, "t" + std::to_string(rng() % 40));
        key = (uint64_t{q} << 8) | static_cast<uint64_t>(prio);
        if (named.insert(lane).second) {
          if (!want.contains(key)) key_order.push_back(key);
          want[key].push_back(lane.substr(format::kMessagePrefixSize));
        }
        hints.Add(key, lane);
      } else {
        hints.Add(key, lane);  // The same lane again.
      }
    }
    INFO("seed " << seed << " batch " << batch);
    REQUIRE(hints.hints().size() == key_order.size());
    for (size_t i = 0; i < key_order.size(); ++i) {
      const BatchHints::Hint& h = hints.hints()[i];
      CHECK(h.key == key_order[i]);
      const int prio = static_cast<int>(h.key & 0xff);
      std::vector<std::string_view> lanes;
      REQUIRE(format::DecodeHintLanes(
          format::ListHintKey(static_cast<uint32_t>(h.key >> 8), prio, 1),
          h.lanes, prio, &lanes));
      CHECK(std::vector<std::string>(lanes.begin(), lanes.end()) ==
            want[h.key]);
    }
  }
  hints.Clear();
  CHECK(hints.hints().empty());
}

}  // namespace
}  // namespace hq
