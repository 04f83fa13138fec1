// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The record codecs of lib/format/format.h that test/format_test.cc does
// not take through round trips: cursors, checkpoints, tasks, dedup records,
// consumer deletes, topic pacing, the lane activity index (hint keys, the
// index head, hint lanes) and claim records. Each round-trips, rejects every
// value cut short or with a byte more, and keys sort as the readers seek
// them. No Db.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "catch2/catch.hpp"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"

namespace hq::format {
namespace {

const std::vector<MessageId>& Ids() {
  static const std::vector<MessageId> ids = {MessageId::Min(),
                                             {1, 0},
                                             {1767225600000, 7},
                                             {MessageId::kMaxMs, 0xfffe},
                                             MessageId::Max()};
  return ids;
}

// Every strict prefix of `value`, and `value` with a byte more, fails
// `decode`.
template <typename Decode>
void CheckCutAndLong(const std::string& value, Decode decode) {
  for (size_t n = 0; n < value.size(); ++n) {
    INFO("cut to " << n << " of " << value.size());
    CHECK_FALSE(decode(std::string_view(value).substr(0, n)));
  }
  CHECK_FALSE(decode(value + '\0'));
}

TEST_CASE("records: cursors round-trip; done never above scan") {
  for (const MessageId& scan : Ids()) {
    for (const MessageId& done : Ids()) {
      const CursorValue c{.scan = scan, .done = done};
      const std::string v = EncodeCursor(c);
      std::string appended = "prefix";
      AppendCursor(&appended, c);
      CHECK(appended == "prefix" + v);
      CursorValue out;
      if (!(done <= scan)) {
        CHECK_FALSE(DecodeCursor(v, &out));
        continue;
      }
      REQUIRE(DecodeCursor(v, &out));
      CHECK(out.scan == scan);
      CHECK(out.done == done);
      CheckCutAndLong(v, [](std::string_view in) {
        CursorValue c;
        return DecodeCursor(in, &c);
      });
    }
  }
  std::string v = EncodeCursor({});
  v[0] = 2;  // An unknown version.
  CursorValue out;
  CHECK_FALSE(DecodeCursor(v, &out));
}

TEST_CASE("records: checkpoints round-trip") {
  for (const MessageId& id : Ids()) {
    const std::string v = EncodeCheckpoint(id);
    MessageId out;
    REQUIRE(DecodeCheckpoint(v, &out));
    CHECK(out == id);
    CheckCutAndLong(v, [](std::string_view in) {
      MessageId id;
      return DecodeCheckpoint(in, &id);
    });
  }
}

TEST_CASE("records: tasks round-trip in every state, within their limits") {
  for (TaskState state :
       {TaskState::kInFlight, TaskState::kWaiting, TaskState::kDone}) {
    for (uint32_t attempts : {0u, 1u, 127u, 128u, UINT32_MAX}) {
      for (uint64_t ms : {uint64_t{0}, uint64_t{1767225600000},
                          static_cast<uint64_t>(INT64_MAX)}) {
        const TaskValue t{.state = state, .attempts = attempts, .ms = ms};
        const std::string v = EncodeTask(t);
        TaskValue out;
        REQUIRE(DecodeTask(v, &out));
        CHECK(out.state == state);
        CHECK(out.attempts == attempts);
        CHECK(out.ms == ms);
        CheckCutAndLong(v, [](std::string_view in) {
          TaskValue t;
          return DecodeTask(in, &t);
        });
      }
    }
  }
  TaskValue out;
  // A time past what absl::Time holds in ms, and unknown states.
  CHECK_FALSE(DecodeTask(EncodeTask({.ms = uint64_t{INT64_MAX} + 1}), &out));
  for (uint8_t state : {0, 4, 255}) {
    std::string v = EncodeTask({});
    v[1] = static_cast<char>(state);
    CHECK_FALSE(DecodeTask(v, &out));
  }
}

TEST_CASE("records: dedup records round-trip") {
  for (uint32_t partition : {0u, 1u, 65535u}) {
    for (const MessageId& id : Ids()) {
      const std::string v = EncodeDedup(partition, id);
      uint32_t p = 1234;
      MessageId out;
      REQUIRE(DecodeDedup(v, &p, &out));
      CHECK(p == partition);
      CHECK(out == id);
      CheckCutAndLong(v, [](std::string_view in) {
        uint32_t p;
        MessageId id;
        return DecodeDedup(in, &p, &id);
      });
    }
  }
  // A queue's dedup keys share its prefix, and only its.
  CHECK(DedupKey(1, "k").starts_with(QueuePrefix(kDedupTag, 1)));
  CHECK_FALSE(DedupKey(2, "k").starts_with(QueuePrefix(kDedupTag, 1)));
}

TEST_CASE("records: consumer deletes round-trip; a name goes with an id") {
  for (const DeleteValue& d :
       {DeleteValue{}, DeleteValue{.dead_queue_id = 9, .dead_queue = "dlq"}}) {
    const std::string v = EncodeDelete(d);
    DeleteValue out;
    REQUIRE(DecodeDelete(v, &out));
    CHECK(out.dead_queue_id == d.dead_queue_id);
    CHECK(out.dead_queue == d.dead_queue);
    // Cut short: the header fails; a name cut short is a different name.
    for (size_t n = 0; n < 5; ++n) {
      CHECK_FALSE(DecodeDelete(std::string_view(v).substr(0, n), &out));
    }
  }
  DeleteValue out;
  CHECK_FALSE(DecodeDelete(EncodeDelete({.dead_queue_id = 9}), &out));
  CHECK_FALSE(DecodeDelete(EncodeDelete({.dead_queue = "dlq"}), &out));
  std::string v = EncodeDelete({});
  v[0] = 2;
  CHECK_FALSE(DecodeDelete(v, &out));
  CHECK(DeleteKey(3, 4).starts_with(DeletePrefix()));
}

TEST_CASE("records: topic pacing round-trips within TopicPacing's limits") {
  for (uint32_t n : {0u, 1u, kMaxPaceInFlight}) {
    for (uint64_t ms : {uint64_t{0}, uint64_t{1}, kMaxPaceIntervalMs}) {
      const std::string v = EncodePace({.max_in_flight = n, .interval_ms = ms});
      PaceValue out;
      REQUIRE(DecodePace(v, &out));
      CHECK(out.max_in_flight == n);
      CHECK(out.interval_ms == ms);
      CheckCutAndLong(v, [](std::string_view in) {
        PaceValue p;
        return DecodePace(in, &p);
      });
    }
  }
  PaceValue out;
  CHECK_FALSE(
      DecodePace(EncodePace({.max_in_flight = kMaxPaceInFlight + 1}), &out));
  CHECK_FALSE(
      DecodePace(EncodePace({.interval_ms = kMaxPaceIntervalMs + 1}), &out));
  // The group's clock record sorts before every topic's pacing.
  CHECK(PaceClockKey(1, 2) < PacePrefix(1, 2));
  CHECK(PaceKey(1, 2, "").starts_with(PacePrefix(1, 2)));
  CHECK_FALSE(PaceClockKey(1, 2).starts_with(PacePrefix(1, 2)));
}

std::string TopicLane(uint32_t queue, int priority, std::string_view topic) {
  std::string s;
  LayoutCodec::For(Layout::kTopic)
      .AppendLanePrefix(&s, queue, 0, priority, topic);
  return s;
}

TEST_CASE("records: hint keys sort by seq and decode to it") {
  const uint32_t q = 5;
  const int priority = GENERATE(0, 1, 255);
  const std::vector<uint64_t> seqs = {
      1, 2, 255, 256, uint64_t{1} << 40, UINT64_MAX - 1, UINT64_MAX};
  std::string prev = IndexHeadKey(q, priority);
  uint64_t seq = 1;
  REQUIRE(DecodeHintSeq(prev, &seq));
  CHECK(seq == 0);  // The index head decodes to seq 0.
  for (uint64_t s : seqs) {
    const std::string single = HintKey(q, priority, s);
    const std::string list = ListHintKey(q, priority, s);
    // A seek to HintKey(s) reads from seq s on, either kind.
    CHECK(prev < single);
    CHECK(single < list);
    CHECK(single.starts_with(HintPrefix(q, priority)));
    CHECK(list.starts_with(HintPrefix(q, priority)));
    REQUIRE(DecodeHintSeq(single, &seq));
    CHECK(seq == s);
    REQUIRE(DecodeHintSeq(list, &seq));
    CHECK(seq == s);
    CHECK_FALSE(DecodeHintSeq(single.substr(0, single.size() - 1), &seq));
    CHECK_FALSE(DecodeHintSeq(list + '\1', &seq));
    CHECK_FALSE(DecodeHintSeq(single + '\2', &seq));  // Not a list suffix.
    prev = list;
  }
  // Higher priorities sort first, and one queue's hints stay together.
  if (priority > 0)
    CHECK(HintPrefix(q, priority) < HintPrefix(q, priority - 1));
  CHECK(HintKey(q, 0, UINT64_MAX) < HintPrefix(q + 1, 255));
  uint64_t trimmed = 0;
  for (uint64_t below : {uint64_t{0}, uint64_t{17}, UINT64_MAX}) {
    REQUIRE(DecodeIndexHead(EncodeIndexHead(below), &trimmed));
    CHECK(trimmed == below);
  }
  CHECK_FALSE(DecodeIndexHead(EncodeIndexHead(1) + "x", &trimmed));
  CHECK_FALSE(DecodeIndexHead("1234567", &trimmed));
}

TEST_CASE("records: a list hint names its lanes, in order") {
  const uint32_t q = 5;
  const int priority = 3;
  const std::vector<std::string> topics = {"a", "", "topic/with/slashes",
                                           std::string(1024, 'x')};
  std::string value;
  for (const std::string& t : topics) {
    AppendHintLane(&value, TopicLane(q, priority, t));
  }
  std::vector<std::string_view> lanes;
  REQUIRE(
      DecodeHintLanes(ListHintKey(q, priority, 9), value, priority, &lanes));
  REQUIRE(lanes.size() == topics.size());
  for (size_t i = 0; i < topics.size(); ++i) {
    // lane_rest: the lane prefix without its tag and queue id.
    CHECK(lanes[i] == std::string_view(TopicLane(q, priority, topics[i]))
                          .substr(kMessagePrefixSize));
  }
  // A lane of another priority, an empty list, a list cut short.
  std::string other = value;
  AppendHintLane(&other, TopicLane(q, priority + 1, "b"));
  CHECK_FALSE(
      DecodeHintLanes(ListHintKey(q, priority, 9), other, priority, &lanes));
  CHECK_FALSE(
      DecodeHintLanes(ListHintKey(q, priority, 9), "", priority, &lanes));
  CHECK_FALSE(DecodeHintLanes(ListHintKey(q, priority, 9),
                              value.substr(0, value.size() - 1), priority,
                              &lanes));
  // A single-lane hint (formats 2 to 5): the value is one lane_rest.
  const std::string rest =
      TopicLane(q, priority, "a").substr(kMessagePrefixSize);
  REQUIRE(DecodeHintLanes(HintKey(q, priority, 9), rest, priority, &lanes));
  CHECK(lanes == std::vector<std::string_view>{rest});
  CHECK_FALSE(
      DecodeHintLanes(HintKey(q, priority, 9), rest, priority + 1, &lanes));
}

TEST_CASE("records: claim records round-trip their lanes' cursors") {
  const uint32_t q = 5, g = 6;
  std::string prev = ClaimPrefix(q, g);
  for (uint64_t seq : {uint64_t{1}, uint64_t{2}, uint64_t{256}, UINT64_MAX}) {
    const std::string key = ClaimKey(q, g, seq);
    CHECK(prev < key);
    CHECK(key.starts_with(ClaimPrefix(q, g)));
    uint64_t out = 0;
    REQUIRE(DecodeClaimSeq(key, &out));
    CHECK(out == seq);
    CHECK_FALSE(DecodeClaimSeq(key + "x", &out));
    CHECK_FALSE(DecodeClaimSeq(key.substr(0, key.size() - 1), &out));
    prev = key;
  }
  uint64_t out = 0;
  CHECK_FALSE(DecodeClaimSeq(ClaimKey(q, g, 0), &out));  // Seq 0: none.

  std::string value;
  std::vector<std::pair<std::string, CursorValue>> want;
  for (int i = 0; i < 5; ++i) {
    const std::string lane = TopicLane(q, i % 2, "t" + std::to_string(i));
    const CursorValue c{.scan = {100 + uint64_t(i), 3},
                        .done = {100 + uint64_t(i), 1}};
    AppendClaimEntry(&value, lane, c);
    want.emplace_back(lane.substr(kMessagePrefixSize), c);
  }
  std::vector<ClaimEntry> entries;
  REQUIRE(DecodeClaimEntries(value, &entries));
  REQUIRE(entries.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CHECK(entries[i].lane_rest == want[i].first);
    CHECK(entries[i].cursor.scan == want[i].second.scan);
    CHECK(entries[i].cursor.done == want[i].second.done);
  }
  // Cut short: refused, or (cut between two entries) the entries before.
  for (size_t n = 0; n < value.size(); ++n) {
    INFO("cut to " << n);
    if (!DecodeClaimEntries(std::string_view(value).substr(0, n), &entries)) {
      continue;
    }
    CHECK(entries.size() < want.size());
    for (size_t i = 0; i < entries.size(); ++i) {
      CHECK(entries[i].lane_rest == want[i].first);
    }
  }
  CHECK_FALSE(DecodeClaimEntries(value + '\0', &entries));
  // A cursor whose done passed its scan.
  std::string bad;
  AppendClaimEntry(&bad, TopicLane(q, 0, "t"),
                   {.scan = {1, 0}, .done = {2, 0}});
  CHECK_FALSE(DecodeClaimEntries(bad, &entries));
  // A lane_rest too short to hold a partition and a priority.
  const std::string id = EncodeCheckpoint({1, 0}).substr(1);
  std::string short_lane(1, '\1');
  coding::PutLengthPrefixed(&short_lane, "ab");
  short_lane += id + id;
  CHECK_FALSE(DecodeClaimEntries(short_lane, &entries));
}

}  // namespace
}  // namespace hq::format
