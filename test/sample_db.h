// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A small Db with a record of every kind, for verify_test, inspect_test and
// cli_test: two queues (time and topic layout, one with a TTL), messages
// with topics, keys, priorities and dedup keys, a consumer group with tasks
// in flight, completed and dead-lettered, and a subscription with
// checkpoints.

#ifndef HQ_TEST_SAMPLE_DB_H_
#define HQ_TEST_SAMPLE_DB_H_

#include <memory>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "lib/engine/db_impl.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "test/test_util.h"

namespace hq::test {

// Refuses every message: its subscription's checkpoints stay where they
// were written.
class RefusingListener : public MessageListener {
 public:
  absl::Status OnMessage(const MessageView&) override {
    return absl::UnavailableError("refused");
  }
};

// Fills `db`:
//   queue "q":  time layout, 2 partitions, 2 priorities, no TTL.
//               10 messages (5 per partition, priority 0, topics "a"/"b",
//               keys "k<i>", payloads "m<i>", dedup keys "d<i>").
//               Group "g" (max_attempts 1): claimed 4, completed 2,
//               released 1 (dead-lettered to "q.dead.g"), 1 in flight.
//               Subscription "s" (Start::kLatest, after the first 10;
//               its listener refuses everything), then 3 more messages
//               "late<i>" to partition 0: its lag is 3.
//   queue "t":  topic layout, 3 partitions, TTL 1 h; 6 messages on topics
//               "x", "y", "z".
inline void PopulateSample(Db* db) {
  Queue* q =
      ValueOrDie(db->CreateQueue("q", {.partitions = 2, .priorities = 2}));
  for (int i = 0; i < 10; ++i) {
    const std::string topic = i % 2 == 0 ? "a" : "b";
    const std::string key = "k" + std::to_string(i);
    const std::string payload = "m" + std::to_string(i);
    const std::string dedup = "d" + std::to_string(i);
    ValueOrDie(q->Put({.topic = topic,
                       .payload = payload,
                       .key = key,
                       .partition = static_cast<uint32_t>(i % 2),
                       .dedup_key = dedup}));
  }
  ConsumerGroup* g = ValueOrDie(q->Group("g", {.max_attempts = 1}));
  std::vector<Task> tasks = ValueOrDie(g->Claim({.max = 4}));
  REQUIRE(tasks.size() == 4);
  HQ_REQUIRE_OK(g->Complete(std::span<const Task>(tasks.data(), 2)));
  HQ_REQUIRE_OK(g->Release(tasks[2], absl::ZeroDuration()));
  static RefusingListener listener;
  ValueOrDie(q->Subscribe(
      {.name = "s", .start = SubscribeOptions::Start::kLatest}, &listener));
  for (int i = 0; i < 3; ++i) {
    const std::string payload = "late" + std::to_string(i);
    ValueOrDie(q->Put({.payload = payload, .partition = 0}));
  }
  Queue* t = ValueOrDie(db->CreateQueue(
      "t", {.partitions = 3, .ttl = absl::Hours(1), .layout = Layout::kTopic}));
  for (int i = 0; i < 6; ++i) {
    const std::string topic(1, static_cast<char>('x' + i % 3));
    ValueOrDie(t->Put({.topic = topic, .payload = "p" + std::to_string(i)}));
  }
}

// ---- For tests that damage the sample's records through raw LevelDB
// (verify_test, repair_test).

inline std::string Fixed64(uint64_t v) {
  std::string s;
  coding::PutFixed64(&s, v);
  return s;
}

// Ids of the sample Db's records, read before the damage.
struct Ids {
  uint32_t q = 0, t = 0, g = 0, s = 0;
  format::QueueRecord q_record;
  std::string q_lane;       // Lane prefix of q, partition 0, priority 0.
  std::string q_first;      // Key of q's first message in that lane.
  std::string q_lane_rest;  // That lane's lane_rest.
  uint64_t now_ms = 0;
};

inline Ids ReadIds(Db* db, absl::Time now) {
  Ids ids;
  leveldb::DB* raw = Impl(db)->leveldb();
  std::string v;
  REQUIRE(raw->Get({}, format::CatalogKey("q"), &v).ok());
  HQ_REQUIRE_OK(format::DecodeQueueRecord(v, &ids.q_record));
  ids.q = ids.q_record.id;
  format::QueueRecord t;
  REQUIRE(raw->Get({}, format::CatalogKey("t"), &v).ok());
  HQ_REQUIRE_OK(format::DecodeQueueRecord(v, &t));
  ids.t = t.id;
  format::GroupRecord g;
  REQUIRE(raw->Get({}, format::GroupKey(ids.q, "g"), &v).ok());
  HQ_REQUIRE_OK(format::DecodeGroupRecord(v, &g));
  ids.g = g.id;
  format::SubRecord s;
  REQUIRE(raw->Get({}, format::SubKey(ids.q, "s"), &v).ok());
  HQ_REQUIRE_OK(format::DecodeSubRecord(v, &s));
  ids.s = s.id;
  LayoutCodec::AppendHead(&ids.q_lane, ids.q, 0, 0);
  ids.q_lane_rest = ids.q_lane.substr(5);
  std::unique_ptr<leveldb::Iterator> it(raw->NewIterator({}));
  std::string seek = ids.q_lane;
  LayoutCodec::AppendMessageId(&seek, MessageId::Min());
  it->Seek(seek);
  REQUIRE(it->Valid());
  ids.q_first = it->key().ToString();
  ids.now_ms = static_cast<uint64_t>(absl::ToUnixMillis(now));
  return ids;
}

inline std::string CursorKey(const Ids& ids, uint32_t group,
                             const std::string& rest) {
  return format::GroupRecordPrefix(format::kCursorTag, ids.q, group) + rest;
}

}  // namespace hq::test

#endif  // HQ_TEST_SAMPLE_DB_H_
