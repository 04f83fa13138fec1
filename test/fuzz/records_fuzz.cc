// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Fuzz target: the decoders of every value format in lib/format/format.h
// (queue, group and subscription records, cursors, checkpoints, lane index
// heads, task and dead values, dedup index entries, message values). The first
// byte picks the decoder, the rest is the value.
//
// For each: no crash or out-of-bounds read on any input; what decodes
// re-encodes to a value that decodes to the same thing; and the re-encoding
// is byte-identical unless it is shorter (the only freedom the format
// leaves is a varint written with more bytes than needed, or an optional
// part written out at its default). Lists the format says are sorted and
// unique must be. A second mode builds a value from the input, encodes it
// and checks that it decodes back to itself.

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/format/format.h"
#include "test/fuzz/fuzz_util.h"

namespace hq::fuzz {
namespace {

using namespace hq::format;  // NOLINT: every name here is a format one.

// `again` re-encodes what `in` decoded to.
void CheckCanonical(std::string_view in, const std::string& again) {
  FUZZ_CHECK(again.size() <= in.size(), "re-encoding is longer");
  if (again.size() == in.size()) {
    FUZZ_CHECK(again == in, "same size but different bytes");
  }
}

template <typename T>
bool SortedUnique(const std::vector<T>& v) {
  return std::adjacent_find(v.begin(), v.end(), [](const T& a, const T& b) {
           return !(a < b);
         }) == v.end();
}

bool SameQueue(const QueueRecord& a, const QueueRecord& b) {
  return a.id == b.id && a.options.partitions == b.options.partitions &&
         a.options.priorities == b.options.priorities &&
         a.options.layout == b.options.layout &&
         a.options.ttl == b.options.ttl &&
         a.options.max_payload_bytes == b.options.max_payload_bytes &&
         a.created == b.created;
}
bool SameGroup(const GroupRecord& a, const GroupRecord& b) {
  return a.id == b.id && a.topics == b.topics && a.ordered == b.ordered &&
         a.start == b.start && a.start_ids == b.start_ids;
}
bool SameSub(const SubRecord& a, const SubRecord& b) {
  return a.id == b.id && a.partitions == b.partitions && a.topics == b.topics &&
         a.start == b.start && a.start_ids == b.start_ids;
}
bool SameDead(const DeadValue& a, const DeadValue& b) {
  return a.original_partition == b.original_partition &&
         a.original_id == b.original_id && a.priority == b.priority &&
         a.reason == b.reason && a.attempts == b.attempts &&
         a.dead_ms == b.dead_ms && a.topic == b.topic;
}

MessageId AnyId(Input& in) {
  const uint64_t v = in.U64();
  return MessageId{v >> 16, static_cast<uint16_t>(v)};
}

// ---- Decode arbitrary bytes.

void DecodeQueue(std::string_view v) {
  QueueRecord r;
  if (!DecodeQueueRecord(v, &r).ok()) return;
  FUZZ_CHECK(ValidateQueueOptions(r.options).ok());
  const std::string again = EncodeQueueRecord(r);
  QueueRecord r2;
  FUZZ_CHECK(DecodeQueueRecord(again, &r2).ok());
  FUZZ_CHECK(SameQueue(r, r2));
  CheckCanonical(v, again);
}

void DecodeGroup(std::string_view v) {
  GroupRecord r;
  if (!DecodeGroupRecord(v, &r).ok()) return;
  FUZZ_CHECK(r.topics.size() <= 1024);
  FUZZ_CHECK(SortedUnique(r.topics), "group topics not sorted and unique");
  for (const std::string& t : r.topics) FUZZ_CHECK(t.size() <= kMaxTopicBytes);
  const std::string again = EncodeGroupRecord(r);
  GroupRecord r2;
  FUZZ_CHECK(DecodeGroupRecord(again, &r2).ok());
  FUZZ_CHECK(SameGroup(r, r2));
  CheckCanonical(v, again);
}

void DecodeSub(std::string_view v) {
  SubRecord r;
  if (!DecodeSubRecord(v, &r).ok()) return;
  FUZZ_CHECK(SortedUnique(r.partitions),
             "subscription partitions not sorted and unique");
  FUZZ_CHECK(SortedUnique(r.topics),
             "subscription topics not sorted and unique");
  for (const std::string& t : r.topics) FUZZ_CHECK(t.size() <= kMaxTopicBytes);
  FUZZ_CHECK(r.start.ms <= MessageId::kMaxMs);
  FUZZ_CHECK(r.start_ids.size() <= kMaxPartitions);
  for (const MessageId& id : r.start_ids) {
    FUZZ_CHECK(id.ms <= MessageId::kMaxMs);
  }
  const std::string again = EncodeSubRecord(r);
  SubRecord r2;
  FUZZ_CHECK(DecodeSubRecord(again, &r2).ok());
  FUZZ_CHECK(SameSub(r, r2));
  CheckCanonical(v, again);
}

void DecodeCursorValue(std::string_view v) {
  CursorValue c;
  if (!DecodeCursor(v, &c)) return;
  FUZZ_CHECK(c.done <= c.scan);
  const std::string again = EncodeCursor(c);
  FUZZ_CHECK(again == v, "cursor values are fixed-size: canonical");
}

// A claim record's value: entries of lane_rest and cursors.
void DecodeClaimValue(std::string_view v) {
  std::vector<ClaimEntry> entries;
  if (!DecodeClaimEntries(v, &entries)) return;
  std::string again;
  for (const ClaimEntry& e : entries) {
    FUZZ_CHECK(e.cursor.done <= e.cursor.scan);
    // AppendClaimEntry takes a lane prefix: tag and queue id first.
    AppendClaimEntry(&again, std::string(5, '\0') + std::string(e.lane_rest),
                     e.cursor);
  }
  std::vector<ClaimEntry> entries2;
  FUZZ_CHECK(DecodeClaimEntries(again, &entries2));
  FUZZ_CHECK(entries2.size() == entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    FUZZ_CHECK(entries2[i].lane_rest == entries[i].lane_rest &&
               entries2[i].cursor.scan == entries[i].cursor.scan &&
               entries2[i].cursor.done == entries[i].cursor.done);
  }
}

// The lane index head's value (fixed64 trimmed_below).
void DecodeIndexHeadValue(std::string_view v) {
  uint64_t trimmed;
  if (!DecodeIndexHead(v, &trimmed)) return;
  FUZZ_CHECK(EncodeIndexHead(trimmed) == v, "index heads are canonical");
}

void DecodeCheckpointValue(std::string_view v) {
  MessageId next;
  if (!DecodeCheckpoint(v, &next)) return;
  FUZZ_CHECK(EncodeCheckpoint(next) == v);
}

void DecodeTaskValue(std::string_view v) {
  TaskValue t;
  if (!DecodeTask(v, &t)) return;
  const uint8_t state = static_cast<uint8_t>(t.state);
  FUZZ_CHECK(state >= 1 && state <= 3);
  FUZZ_CHECK(t.ms <= static_cast<uint64_t>(INT64_MAX));
  const std::string again = EncodeTask(t);
  TaskValue t2;
  FUZZ_CHECK(DecodeTask(again, &t2));
  FUZZ_CHECK(t2.state == t.state && t2.attempts == t.attempts && t2.ms == t.ms);
  CheckCanonical(v, again);
}

void DecodeDeadValue(std::string_view v) {
  DeadValue d;
  if (!DecodeDead(v, &d)) return;
  FUZZ_CHECK(d.original_partition <= 0xffff);
  FUZZ_CHECK(d.priority >= 0 && d.priority < kMaxPriorities);
  FUZZ_CHECK(
      d.reason >= static_cast<uint8_t>(DeadLetterReason::kLeaseExpired) &&
          d.reason <= static_cast<uint8_t>(DeadLetterReason::kRejected),
      "dead letter reason %d", d.reason);
  FUZZ_CHECK(d.topic.size() <= kMaxTopicBytes);
  FUZZ_CHECK(d.dead_ms <= static_cast<uint64_t>(INT64_MAX));
  const std::string again = EncodeDead(d);
  DeadValue d2;
  FUZZ_CHECK(DecodeDead(again, &d2));
  FUZZ_CHECK(SameDead(d, d2));
  CheckCanonical(v, again);
}

void DecodeDedupValue(std::string_view v) {
  uint32_t partition;
  MessageId id;
  if (!DecodeDedup(v, &partition, &id)) return;
  FUZZ_CHECK(partition <= 0xffff);
  FUZZ_CHECK(EncodeDedup(partition, id) == v);
}

void DecodeMessage(std::string_view v) {
  std::string_view key, payload, dedup;
  uint64_t not_before = 12345;
  if (!DecodeMessageValue(v, &key, &payload, &not_before, &dedup)) return;
  // Views into the input.
  const auto inside = [&](std::string_view s) {
    return s.empty() ||
           (s.data() >= v.data() && s.data() + s.size() <= v.data() + v.size());
  };
  FUZZ_CHECK(inside(key) && inside(payload) && inside(dedup));
  FUZZ_CHECK(not_before <= static_cast<uint64_t>(INT64_MAX));
  std::string again;
  AppendMessageValue(&again, key, payload, not_before, dedup);
  std::string_view k2, p2, d2;
  uint64_t nb2;
  FUZZ_CHECK(DecodeMessageValue(again, &k2, &p2, &nb2, &d2));
  FUZZ_CHECK(k2 == key && p2 == payload && nb2 == not_before && d2 == dedup);
  CheckCanonical(v, again);
  // The short form (no not-before or dedup out-parameters) agrees.
  std::string_view k3, p3;
  FUZZ_CHECK(DecodeMessageValue(v, &k3, &p3));
  FUZZ_CHECK(k3 == key && p3 == payload);
}

// ---- Encode values built from the input, decode them back.

void RoundTrip(Input& in) {
  switch (in.U8() % 6) {
    case 0: {
      QueueRecord r;
      r.id = in.U32();
      r.options.partitions = 1 + in.U16() % kMaxPartitions;
      r.options.priorities = 1 + in.U8();
      r.options.layout = in.Bool() ? Layout::kTopic : Layout::kTime;
      const uint64_t ttl = in.U64() >> (in.U8() % 64);
      r.options.ttl = ttl == 0 || ttl > static_cast<uint64_t>(INT64_MAX)
                          ? absl::InfiniteDuration()
                          : absl::Milliseconds(static_cast<int64_t>(ttl));
      r.options.max_payload_bytes = 1 + in.U32() % kMaxPayloadLimit;
      r.created = absl::FromUnixMillis(
          static_cast<int64_t>(in.U64() >> (1 + in.U8() % 63)));
      QueueRecord r2;
      FUZZ_CHECK(DecodeQueueRecord(EncodeQueueRecord(r), &r2).ok());
      FUZZ_CHECK(SameQueue(r, r2));
      break;
    }
    case 1: {
      GroupRecord r;
      r.id = in.U32();
      r.ordered = in.Bool();
      for (int n = in.U8() % 5; n > 0; --n) r.topics.push_back(in.Bytes(20));
      std::sort(r.topics.begin(), r.topics.end());
      r.topics.erase(std::unique(r.topics.begin(), r.topics.end()),
                     r.topics.end());
      GroupRecord r2;
      FUZZ_CHECK(DecodeGroupRecord(EncodeGroupRecord(r), &r2).ok());
      FUZZ_CHECK(SameGroup(r, r2));
      break;
    }
    case 2: {
      SubRecord r;
      r.id = in.U32();
      for (int n = in.U8() % 5; n > 0; --n) r.partitions.push_back(in.U16());
      for (int n = in.U8() % 5; n > 0; --n) r.topics.push_back(in.Bytes(20));
      std::sort(r.partitions.begin(), r.partitions.end());
      r.partitions.erase(std::unique(r.partitions.begin(), r.partitions.end()),
                         r.partitions.end());
      std::sort(r.topics.begin(), r.topics.end());
      r.topics.erase(std::unique(r.topics.begin(), r.topics.end()),
                     r.topics.end());
      r.start = AnyId(in);
      for (int n = in.U8() % 4; n > 0; --n) r.start_ids.push_back(AnyId(in));
      SubRecord r2;
      FUZZ_CHECK(DecodeSubRecord(EncodeSubRecord(r), &r2).ok());
      FUZZ_CHECK(SameSub(r, r2));
      break;
    }
    case 3: {
      CursorValue c{AnyId(in), AnyId(in)};
      if (c.scan < c.done) std::swap(c.scan, c.done);
      CursorValue c2;
      FUZZ_CHECK(DecodeCursor(EncodeCursor(c), &c2));
      FUZZ_CHECK(c2.scan == c.scan && c2.done == c.done);
      MessageId next = AnyId(in), next2;
      FUZZ_CHECK(DecodeCheckpoint(EncodeCheckpoint(next), &next2) &&
                 next2 == next);
      uint32_t partition = in.U16(), p2;
      FUZZ_CHECK(DecodeDedup(EncodeDedup(partition, next), &p2, &next2) &&
                 p2 == partition && next2 == next);
      break;
    }
    case 4: {
      TaskValue t{static_cast<TaskState>(1 + in.U8() % 3), in.U32(),
                  in.U64() >> 1};
      TaskValue t2;
      FUZZ_CHECK(DecodeTask(EncodeTask(t), &t2));
      FUZZ_CHECK(t2.state == t.state && t2.attempts == t.attempts &&
                 t2.ms == t.ms);
      DeadValue d;
      d.original_partition = in.U16();
      d.original_id = AnyId(in);
      d.priority = in.U8();
      d.reason = static_cast<uint8_t>(1 + in.U8() % 3);
      d.attempts = in.U32();
      d.dead_ms = in.U64() >> 1;
      d.topic = in.Bytes(40);
      DeadValue d2;
      FUZZ_CHECK(DecodeDead(EncodeDead(d), &d2));
      FUZZ_CHECK(SameDead(d, d2));
      break;
    }
    case 5: {
      const std::string key = in.Bytes(30);
      const std::string dedup = in.Bytes(30);
      const uint64_t not_before = in.U64() >> 1;
      const std::string payload(in.Rest());
      std::string v;
      AppendMessageValue(&v, key, payload, not_before, dedup);
      std::string_view k2, p2, d2;
      uint64_t nb2;
      FUZZ_CHECK(DecodeMessageValue(v, &k2, &p2, &nb2, &d2));
      FUZZ_CHECK(k2 == key && p2 == payload && nb2 == not_before &&
                 d2 == dedup);
      break;
    }
  }
}

}  // namespace
}  // namespace hq::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hq::fuzz;  // NOLINT
  Input in(data, size);
  const uint8_t which = in.U8();
  if (which >= 0x80) {
    RoundTrip(in);
    return 0;
  }
  const std::string_view v = in.Rest();
  switch (which % 9) {
    case 0:
      DecodeQueue(v);
      break;
    case 1:
      DecodeGroup(v);
      break;
    case 2:
      DecodeSub(v);
      break;
    case 3:
      DecodeCursorValue(v);
      DecodeClaimValue(v);
      break;
    case 4:
      DecodeCheckpointValue(v);
      DecodeIndexHeadValue(v);
      break;
    case 5:
      DecodeTaskValue(v);
      break;
    case 6:
      DecodeDeadValue(v);
      break;
    case 7:
      DecodeDedupValue(v);
      break;
    case 8:
      DecodeMessage(v);
      break;
  }
  return 0;
}
