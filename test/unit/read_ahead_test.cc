// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The read-ahead (lib/consume/read_ahead.h) alone: lanes of a topic layout
// queue kept in an in-memory map behind a leveldb::Iterator, read one
// message a turn as a group's claims read them (from what was read ahead,
// else with a seek that then reads ahead), with neighbouring lanes, lane
// fences, values over the ceilings, a shared budget, messages written
// between turns and a TTL sweep. No Db.

#include "lib/consume/read_ahead.h"

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "catch2/catch.hpp"
#include "leveldb/iterator.h"
#include "lib/format/layout_codec.h"

namespace hq {
namespace {

using Store = std::map<std::string, std::string>;

// A leveldb::Iterator over a map, as a LevelDB snapshot would show it.
// Optionally fails (Corruption) once it has moved `fail_after` times.
class MapIterator final : public leveldb::Iterator {
 public:
  explicit MapIterator(const Store* store, int fail_after = -1)
      : store_(store), it_(store->end()), fail_after_(fail_after) {}
  bool Valid() const override { return status_.ok() && it_ != store_->end(); }
  void SeekToFirst() override { Move(store_->begin()); }
  void SeekToLast() override {
    Move(store_->empty() ? store_->end() : std::prev(store_->end()));
  }
  void Seek(const leveldb::Slice& target) override {
    Move(store_->lower_bound(target.ToString()));
  }
  void Next() override { Move(std::next(it_)); }
  void Prev() override {
    Move(it_ == store_->begin() ? store_->end() : std::prev(it_));
  }
  leveldb::Slice key() const override { return it_->first; }
  leveldb::Slice value() const override { return it_->second; }
  leveldb::Status status() const override { return status_; }

 private:
  void Move(Store::const_iterator to) {
    it_ = to;
    if (fail_after_ >= 0 && moves_++ >= fail_after_) {
      status_ = leveldb::Status::Corruption("a flipped byte");
    }
  }
  const Store* const store_;
  Store::const_iterator it_;
  const int fail_after_;
  int moves_ = 0;
  leveldb::Status status_;
};

const LayoutCodec& Topic() { return LayoutCodec::For(Layout::kTopic); }
constexpr uint32_t kQueue = 7;

std::string LanePrefix(std::string_view topic, uint32_t partition = 0,
                       int priority = 0) {
  std::string s;
  Topic().AppendLanePrefix(&s, kQueue, partition, priority, topic);
  return s;
}

std::string Value(uint64_t ms, size_t size) {
  std::string v = "m" + std::to_string(ms) + ":";
  v.resize(std::max(size, v.size()), static_cast<char>('a' + ms % 26));
  return v;
}

// Writes message `id` of `topic` with a value of `size` bytes.
void Put(Store* store, std::string_view topic, MessageId id, size_t size) {
  std::string key;
  Topic().AppendMessageKey(&key, kQueue, 0, 0, topic, id);
  (*store)[key] = Value(id.ms, size);
}

struct Read {
  MessageId id;
  std::string value;
  bool operator==(const Read&) const = default;
};

// One lane as a group reads it: a scan cursor, and what was read ahead.
struct LaneReader {
  std::string prefix;
  MessageId scan = MessageId::Min();
  ReadAhead ahead;
  int seeks = 0;
  // Fill with the iterator still on the message handed out (as the group
  // does), or moved past it.
  bool fill_past = false;

  // One turn: the lane's next message, if any.
  std::optional<Read> Turn(const Store& store, ReadAhead::Budget* budget) {
    ahead.DropBelow(scan);
    if (!ahead.empty()) {
      Read r{ahead.front_id(), std::string(ahead.front_value())};
      scan = r.id.Next();
      ahead.DropBelow(scan);
      return r;
    }
    MapIterator it(&store);
    std::string seek = prefix;
    LayoutCodec::AppendMessageId(&seek, scan);
    it.Seek(seek);
    ++seeks;
    MessageId id;
    if (!it.Valid() ||
        !LayoutCodec::LaneMessage(
            std::string_view(it.key().data(), it.key().size()), prefix, &id)) {
      return std::nullopt;
    }
    Read r{id, it.value().ToString()};
    scan = id.Next();
    if (fill_past) it.Next();
    if (it.Valid()) REQUIRE(ahead.Fill(prefix, &it, budget).ok());
    return r;
  }
};

// Every message of `topic` in `store`, in order.
std::vector<Read> LaneOf(const Store& store, std::string_view topic) {
  const std::string prefix = LanePrefix(topic);
  std::vector<Read> out;
  for (auto it = store.lower_bound(prefix); it != store.end(); ++it) {
    MessageId id;
    if (!LayoutCodec::LaneMessage(it->first, prefix, &id)) break;
    out.push_back({id, it->second});
  }
  return out;
}

TEST_CASE("read-ahead: every message once, in order, across refills") {
  const uint32_t seed = GENERATE(1u, 2u, 3u);
  const size_t limit =
      GENERATE(size_t{0}, size_t{200}, size_t{5000}, size_t{1} << 20);
  const bool fill_past = GENERATE(false, true);
  std::mt19937 rng(seed);
  // Topics whose lanes sort next to each other ("a" is a prefix of
  // "ab"), and lanes of other partitions around them.
  const std::vector<std::string> topics = {"a", "ab", "b", "ba"};
  Store store;
  for (const std::string& t : topics) {
    uint64_t ms = 1000;
    const int n = 20 + static_cast<int>(rng() % 60);
    for (int i = 0; i < n; ++i) {
      ms += rng() % 3;  // Several messages in one ms too.
      const size_t size = rng() % 8 == 0 ? 3000 + rng() % 3000 : rng() % 300;
      Put(&store, t, MessageId{ms, static_cast<uint16_t>(i)}, size);
    }
    if (rng() % 2 == 0) {  // A fence (written before format 5).
      std::string fence;
      LayoutCodec::AppendLaneFence(&fence, LanePrefix(t));
      store[fence] = "";
    }
  }
  for (uint32_t partition : {1u, 2u}) {
    std::string key;
    Topic().AppendMessageKey(&key, kQueue, partition, 0, "a", {5, 0});
    store[key] = "another partition";
  }
  ReadAhead::Budget budget{.limit = limit};
  std::vector<LaneReader> lanes(topics.size());
  std::vector<std::vector<Read>> got(topics.size());
  for (size_t i = 0; i < topics.size(); ++i) {
    lanes[i].prefix = LanePrefix(topics[i]);
    lanes[i].fill_past = fill_past;
  }
  // Round-robin, one message a turn, skipping lanes at random as a claim's
  // passes do; until every lane is drained.
  std::vector<bool> drained(topics.size(), false);
  while (std::count(drained.begin(), drained.end(), false) > 0) {
    for (size_t i = 0; i < topics.size(); ++i) {
      if (drained[i] || rng() % 4 == 0) continue;
      std::optional<Read> r = lanes[i].Turn(store, &budget);
      REQUIRE(budget.used <= budget.limit);
      if (r.has_value()) {
        got[i].push_back(std::move(*r));
      } else {
        drained[i] = true;
      }
    }
  }
  for (size_t i = 0; i < topics.size(); ++i) {
    INFO("topic " << topics[i] << " budget " << limit);
    CHECK(got[i] == LaneOf(store, topics[i]));
    // A drained lane holds nothing, and costs the budget nothing.
    CHECK(lanes[i].ahead.empty());
  }
  CHECK(budget.used == 0);
}

TEST_CASE("read-ahead: it saves seeks when values are small") {
  Store store;
  const size_t n = 160;
  for (size_t i = 0; i < n; ++i)
    Put(&store, "t", MessageId{100, uint16_t(i)}, 50);
  ReadAhead::Budget budget{.limit = size_t{1} << 20};
  LaneReader lane{.prefix = LanePrefix("t")};
  std::vector<Read> got;
  while (std::optional<Read> r = lane.Turn(store, &budget)) got.push_back(*r);
  CHECK(got == LaneOf(store, "t"));
  // At most kMaxMessages a fill (one of them the message handed out).
  CHECK(static_cast<size_t>(lane.seeks) <=
        n / (ReadAhead::kMaxMessages - 1) + 2);
}

TEST_CASE("read-ahead: a fill stops at its ceilings and at the lane's end") {
  Store store;
  for (int i = 0; i < 40; ++i) Put(&store, "t", MessageId{100, uint16_t(i)}, 1);
  Put(&store, "u", MessageId{1, 0}, 1);  // The next lane.
  const std::string prefix = LanePrefix("t");
  auto held = [&](ReadAhead& ahead) {
    std::vector<MessageId> ids;
    while (!ahead.empty()) {
      ids.push_back(ahead.front_id());
      ahead.DropBelow(ahead.front_id().Next());
    }
    return ids;
  };
  auto fill_from = [&](ReadAhead& ahead, uint16_t from,
                       ReadAhead::Budget* budget) {
    MapIterator it(&store);
    std::string seek = prefix;
    LayoutCodec::AppendMessageId(&seek, MessageId{100, from});
    it.Seek(seek);
    REQUIRE(ahead.Fill(prefix, &it, budget).ok());
  };
  ReadAhead::Budget budget{.limit = size_t{1} << 20};

  SECTION("at most kMaxMessages") {
    ReadAhead ahead;
    fill_from(ahead, 0, &budget);
    const std::vector<MessageId> ids = held(ahead);
    REQUIRE(ids.size() == ReadAhead::kMaxMessages);
    for (size_t i = 0; i < ids.size(); ++i) {
      CHECK(ids[i] == MessageId{100, static_cast<uint16_t>(i)});
    }
  }
  SECTION("never past the lane's last message") {
    ReadAhead ahead;
    fill_from(ahead, 35, &budget);
    const std::vector<MessageId> ids = held(ahead);
    CHECK(ids.size() == 5);
    CHECK(ids.back() == MessageId{100, 39});
  }
  SECTION("values of at most kMaxBytes") {
    for (int i = 0; i < 10; ++i) {
      Put(&store, "t", MessageId{100, uint16_t(i)}, 1000);
    }
    ReadAhead ahead;
    fill_from(ahead, 0, &budget);
    CHECK(held(ahead).size() == ReadAhead::kMaxBytes / 1000);
    // A value over the ceiling is never kept: the reader seeks for it.
    Put(&store, "t", MessageId{100, 0}, ReadAhead::kMaxBytes + 1);
    fill_from(ahead, 0, &budget);
    CHECK(ahead.empty());
  }
  SECTION("within the shared budget, given back on Clear") {
    ReadAhead::Budget small{.limit = 100};
    ReadAhead a, b;
    fill_from(a, 0, &small);
    CHECK(small.used <= small.limit);
    CHECK_FALSE(a.empty());
    const size_t used_by_a = small.used;
    fill_from(b, 0, &small);  // What a left.
    CHECK(small.used <= small.limit);
    const size_t used_by_b = small.used - used_by_a;
    a.Clear();
    CHECK(small.used == used_by_b);
    b.Clear();
    CHECK(small.used == 0);
    ReadAhead::Budget none{.limit = 0};
    fill_from(a, 0, &none);
    CHECK(a.empty());
    CHECK(none.used == 0);
  }
  SECTION("a refill gives back what the last fill held") {
    ReadAhead ahead;
    fill_from(ahead, 0, &budget);
    const size_t once = budget.used;
    CHECK(once > 0);
    fill_from(ahead, 0, &budget);
    CHECK(budget.used == once);
    {
      ReadAhead gone;
      fill_from(gone, 0, &budget);
      CHECK(budget.used == 2 * once);
    }
    CHECK(budget.used == once);  // Given back when destroyed.
  }
}

TEST_CASE("read-ahead: messages written after a fill are read after it") {
  Store store;
  for (int i = 0; i < 10; ++i) Put(&store, "t", MessageId{100, uint16_t(i)}, 8);
  ReadAhead::Budget budget{.limit = size_t{1} << 20};
  LaneReader lane{.prefix = LanePrefix("t")};
  std::vector<Read> got;
  for (int turn = 0; turn < 5; ++turn)
    got.push_back(*lane.Turn(store, &budget));
  // Written while the lane holds what it read ahead: ids only grow.
  for (int i = 0; i < 30; ++i) Put(&store, "t", MessageId{200, uint16_t(i)}, 8);
  while (std::optional<Read> r = lane.Turn(store, &budget)) got.push_back(*r);
  CHECK(got == LaneOf(store, "t"));
  CHECK(budget.used == 0);
}

TEST_CASE("read-ahead: a TTL sweep's cutoff drops what lies below it") {
  Store store;
  for (int i = 0; i < 12; ++i) Put(&store, "t", MessageId{100, uint16_t(i)}, 8);
  ReadAhead::Budget budget{.limit = size_t{1} << 20};
  LaneReader lane{.prefix = LanePrefix("t")};
  std::vector<Read> got;
  got.push_back(*lane.Turn(store, &budget));  // Reads the rest ahead.
  // The sweep deletes up to its cutoff; the reader's cursor moves there.
  const MessageId cutoff{100, 6};
  for (auto it = store.begin(); it != store.end();) {
    MessageId id;
    it = LayoutCodec::LaneMessage(it->first, lane.prefix, &id) && id < cutoff
             ? store.erase(it)
             : std::next(it);
  }
  lane.scan = std::max(lane.scan, cutoff);
  while (std::optional<Read> r = lane.Turn(store, &budget)) got.push_back(*r);
  std::vector<Read> want = {got.front()};
  for (const Read& r : LaneOf(store, "t")) want.push_back(r);
  CHECK(got == want);
  CHECK(got[1].id == cutoff);
}

TEST_CASE("read-ahead: an iterator's error is the fill's error") {
  Store store;
  for (int i = 0; i < 10; ++i) Put(&store, "t", MessageId{100, uint16_t(i)}, 8);
  const std::string prefix = LanePrefix("t");
  MapIterator it(&store, /*fail_after=*/4);
  it.Seek(prefix);
  ReadAhead::Budget budget{.limit = size_t{1} << 20};
  ReadAhead ahead;
  const absl::Status s = ahead.Fill(prefix, &it, &budget);
  CHECK_FALSE(s.ok());
  CHECK(s.code() == absl::StatusCode::kDataLoss);
  // What it kept before the error is sound; it is given back on Clear.
  ahead.Clear();
  CHECK(budget.used == 0);
}

}  // namespace
}  // namespace hq
