// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// LaneWalk (lib/engine/lane_walk.h): one step per lane over the message
// keys, whatever a lane holds (messages, a head, a fence), in both layouts;
// Seek at, after and within a lane; no step over deleted rows after a
// head; DataLoss on a key that holds no lane prefix.

#include "lib/engine/lane_walk.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/helpers/memenv.h"
#include "leveldb/write_batch.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"

namespace hq {
namespace {

constexpr uint32_t kQueue = 7;

// A LevelDB in memory, and the keys of one queue's lanes.
class Store {
 public:
  Store() : env_(leveldb::NewMemEnv(leveldb::Env::Default())) {
    leveldb::Options o;
    o.env = env_.get();
    o.create_if_missing = true;
    leveldb::DB* db = nullptr;
    REQUIRE(leveldb::DB::Open(o, "/lane-walk", &db).ok());
    db_.reset(db);
  }
  leveldb::DB* db() { return db_.get(); }

  void Put(const std::string& key) {
    REQUIRE(db_->Put(leveldb::WriteOptions(), key, "v").ok());
  }
  void Delete(const std::string& key) {
    REQUIRE(db_->Delete(leveldb::WriteOptions(), key).ok());
  }

  // The lanes a walk from `target` over `range` visits, as lane prefixes.
  std::vector<std::string> Walk(const LayoutCodec& codec,
                                const std::string& range,
                                const std::string& target) {
    std::unique_ptr<leveldb::Iterator> it(
        db_->NewIterator(leveldb::ReadOptions()));
    LaneWalk walk(it.get(), codec, range);
    std::vector<std::string> out;
    for (walk.Seek(target); walk.Valid(); walk.Next()) {
      out.emplace_back(walk.prefix());
    }
    REQUIRE(walk.status().ok());
    return out;
  }

 private:
  std::unique_ptr<leveldb::Env> env_;
  std::unique_ptr<leveldb::DB> db_;
};

std::string Lane(const LayoutCodec& codec, uint32_t partition, int priority,
                 const std::string& topic) {
  std::string s;
  codec.AppendLanePrefix(&s, kQueue, partition, priority, topic);
  return s;
}

std::string Key(const std::string& lane, uint64_t ms) {
  std::string s = lane;
  LayoutCodec::AppendMessageId(&s, MessageId{ms, 0});
  return s;
}

TEST_CASE("a walk visits each lane once, whatever it holds") {
  const LayoutCodec& codec = LayoutCodec::For(Layout::kTopic);
  Store s;
  // In lane order (a topic's length comes first): topics whose prefixes
  // share bytes, and one ending in 0xff bytes (its prefix successor is
  // shorter than the prefix).
  const std::vector<std::string> lanes = {
      Lane(codec, 0, 1, "a"),  Lane(codec, 0, 1, "ab"),
      Lane(codec, 0, 1, "ba"), Lane(codec, 0, 1, "b\xff\xff"),
      Lane(codec, 0, 0, "a"),  Lane(codec, 1, 0, "long-topic"),
      Lane(codec, 3, 0, "x")};
  // One message; many messages (past the walk's Next() tries); a head and
  // messages; only a head; a fence; 50 messages; one.
  s.Put(Key(lanes[0], 1));
  for (uint64_t ms = 1; ms <= 20; ++ms) s.Put(Key(lanes[1], ms));
  s.Put(lanes[2]);
  s.Put(Key(lanes[2], 5));
  s.Put(lanes[3]);
  std::string fence;
  LayoutCodec::AppendLaneFence(&fence, lanes[4]);
  s.Put(fence);
  for (uint64_t ms = 1; ms <= 50; ++ms) s.Put(Key(lanes[5], ms));
  s.Put(Key(lanes[6], 9));
  // Another queue's keys on both sides stay out.
  std::string other;
  codec.AppendLanePrefix(&other, kQueue - 1, 0, 0, "z");
  s.Put(Key(other, 1));
  other.clear();
  codec.AppendLanePrefix(&other, kQueue + 1, 0, 0, "z");
  s.Put(Key(other, 1));

  const std::string all = format::MessagePrefix(kQueue);
  CHECK(s.Walk(codec, all, all) == lanes);

  SECTION("Seek at, after and within a lane") {
    CHECK(s.Walk(codec, all, lanes[2]) ==
          std::vector<std::string>(lanes.begin() + 2, lanes.end()));
    CHECK(s.Walk(codec, all, lanes[2] + '\0') ==
          std::vector<std::string>(lanes.begin() + 3, lanes.end()));
    CHECK(s.Walk(codec, all, Key(lanes[1], 7)) ==
          std::vector<std::string>(lanes.begin() + 2, lanes.end()));
    CHECK(s.Walk(codec, all, Key(lanes[6], 1) + "\xff").empty());
  }
  SECTION("a range: a partition, a partition and priority") {
    std::string p1 = all;
    p1.append("\x00\x01", 2);
    CHECK(s.Walk(codec, p1, p1) == std::vector<std::string>{lanes[5]});
    std::string p0_prio0 = all;
    p0_prio0.append("\x00\x00\xff", 3);
    CHECK(s.Walk(codec, p0_prio0, p0_prio0) ==
          std::vector<std::string>{lanes[4]});
    std::string p2 = all;
    p2.append("\x00\x02", 2);
    CHECK(s.Walk(codec, p2, p2).empty());
  }
}

TEST_CASE("a walk of the time layout steps over partitions and priorities") {
  const LayoutCodec& codec = LayoutCodec::For(Layout::kTime);
  Store s;
  const std::vector<std::string> lanes = {
      Lane(codec, 0, 1, ""), Lane(codec, 0, 0, ""), Lane(codec, 2, 0, "")};
  for (const std::string& lane : lanes) {
    for (uint64_t ms = 1; ms <= 10; ++ms) {
      std::string k = Key(lane, ms);
      k.append("topic");  // The time layout's topic follows the id.
      s.Put(k);
    }
  }
  const std::string all = format::MessagePrefix(kQueue);
  CHECK(s.Walk(codec, all, all) == lanes);
  CHECK(s.Walk(codec, all, lanes[0] + '\0') ==
        std::vector<std::string>(lanes.begin() + 1, lanes.end()));
}

// An iterator that counts the calls it forwards.
class CountingIterator : public leveldb::Iterator {
 public:
  explicit CountingIterator(leveldb::Iterator* base) : base_(base) {}
  bool Valid() const override { return base_->Valid(); }
  void SeekToFirst() override { base_->SeekToFirst(); }
  void SeekToLast() override { base_->SeekToLast(); }
  void Seek(const leveldb::Slice& target) override {
    ++seeks;
    base_->Seek(target);
  }
  void Next() override {
    ++nexts;
    base_->Next();
  }
  void Prev() override { base_->Prev(); }
  leveldb::Slice key() const override { return base_->key(); }
  leveldb::Slice value() const override { return base_->value(); }
  leveldb::Status status() const override { return base_->status(); }

  int seeks = 0;
  int nexts = 0;

 private:
  std::unique_ptr<leveldb::Iterator> base_;
};

TEST_CASE("from a lane's head the walk seeks past the rows deleted after it") {
  const LayoutCodec& codec = LayoutCodec::For(Layout::kTopic);
  Store s;
  const std::string a = Lane(codec, 0, 0, "a");
  const std::string b = Lane(codec, 0, 0, "b");
  // A TTL sweep's work: a head, then deleted rows (an iterator's Next()
  // from the head would step over each of them inside LevelDB).
  s.Put(a);
  for (uint64_t ms = 1; ms <= 2000; ++ms) s.Put(Key(a, ms));
  for (uint64_t ms = 1; ms <= 2000; ++ms) s.Delete(Key(a, ms));
  s.Put(Key(b, 1));
  const std::string all = format::MessagePrefix(kQueue);
  CHECK(s.Walk(codec, all, all) == std::vector<std::string>{a, b});

  CountingIterator it(s.db()->NewIterator(leveldb::ReadOptions()));
  LaneWalk walk(&it, codec, all);
  walk.Seek(all);
  REQUIRE(walk.Valid());
  CHECK(walk.prefix() == a);
  const int nexts = it.nexts;
  walk.Next();
  REQUIRE(walk.Valid());
  CHECK(walk.prefix() == b);
  CHECK(it.nexts == nexts);  // It sought b; it did not step.
  CHECK(it.seeks == 2);
}

TEST_CASE("a key that holds no lane prefix is DataLoss") {
  const LayoutCodec& codec = LayoutCodec::For(Layout::kTopic);
  Store s;
  std::string bad = format::MessagePrefix(kQueue);
  bad.append(
      "\x00\x00\xff\x00\x09"
      "ab",
      7);  // A topic length of 9 with 2 bytes of topic.
  s.Put(bad);
  std::unique_ptr<leveldb::Iterator> it(
      s.db()->NewIterator(leveldb::ReadOptions()));
  const std::string all = format::MessagePrefix(kQueue);
  LaneWalk walk(it.get(), codec, all);
  walk.Seek(all);
  CHECK_FALSE(walk.Valid());
  CHECK(walk.status().code() == absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace hq
