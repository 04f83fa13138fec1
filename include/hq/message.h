// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Message identifiers and the messages written to and read from a queue.

#ifndef HQ_MESSAGE_H_
#define HQ_MESSAGE_H_

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/time/time.h"
#include "hq/export.h"

namespace hq {

// A MessageId is assigned by the engine when a message is written: the
// writer's clock in milliseconds since the Unix epoch and a sequence number
// within that millisecond.
//
// Guarantees: within one partition of one queue, ids are unique and strictly
// increasing in commit order, also across Close/Open and crashes. When the
// clock steps backwards, or more than 65536 messages are written to one
// partition in one millisecond, the id's millisecond runs ahead of the clock
// rather than repeat or go back, so `time()` is the write time only
// approximately: never earlier than the write's clock reading truncated to
// the millisecond.
// Ids of different partitions are independent and may be equal.
struct HQ_EXPORT MessageId {
  // Milliseconds since the Unix epoch. Limit: < 2^48 (year 10889).
  uint64_t ms = 0;
  // Sequence within `ms`, 0..65535.
  uint16_t seq = 0;

  static constexpr uint64_t kMaxMs = (uint64_t{1} << 48) - 1;

  // The smallest and the largest id. Max() is never assigned to a message:
  // it is the exclusive end of every range, so [from, Max()) holds all.
  static constexpr MessageId Min() { return MessageId{0, 0}; }
  static constexpr MessageId Max() { return MessageId{kMaxMs, 0xffff}; }

  // The first id at or after time `t` (ms rounded up, seq 0); use it to turn
  // a time range into an id range. Clamped to [Min(), Max()].
  static MessageId AtTime(absl::Time t);

  // The write time the id carries (see the guarantees above).
  absl::Time time() const {
    return absl::FromUnixMillis(static_cast<int64_t>(ms));
  }

  // The id that follows this one; Max().Next() == Max().
  MessageId Next() const {
    if (seq < 0xffff) return MessageId{ms, static_cast<uint16_t>(seq + 1)};
    if (ms < kMaxMs) return MessageId{ms + 1, 0};
    return *this;
  }

  // "ms-seq", for example "1767225600000-3". Parse accepts exactly that.
  std::string ToString() const;
  static std::optional<MessageId> Parse(std::string_view text);

  friend constexpr auto operator<=>(const MessageId&,
                                    const MessageId&) = default;
};

// A message to write. The views must stay valid for the duration of the
// Put or PutBatch call only; hq copies what it keeps.
struct Message {
  // The message's topic (HQueue's column qualifier, Hedwig's topic). Topics
  // need no creation. Limit: 0..1024 bytes, any bytes. Default: "".
  std::string_view topic;

  // The body. Limit: the queue's QueueOptions::max_payload_bytes.
  std::string_view payload;

  // Optional partitioning key (a crawler's URL, a user id). When set and
  // `partition` is not, the partition is XXH3_64(key) % partitions. The key is
  // stored with the message and returned by scanners. Limit: 0..1024 bytes.
  std::string_view key;

  // Explicit partition, 0..partitions-1. Wins over `key`.
  // When neither is set: the `topic` layout uses XXH3_64(topic) % partitions;
  // the `time` layout picks partitions round-robin.
  std::optional<uint32_t> partition;

  // 0..priorities-1; higher is served first by consumer groups. Default 0.
  int priority = 0;

  // Delayed delivery: no consumer group hands the message out before
  // max(not_before, the write time + delay), by the Db's clock (whole
  // milliseconds, rounded up). The message is stored in id order like any
  // other, and scanners see it at once, with MessageView::not_before set.
  // Defaults: no delay. Limits: delay >= 0, finite; not_before before year
  // 10889.
  absl::Time not_before = absl::InfinitePast();
  absl::Duration delay = absl::ZeroDuration();

  // Deduplication (a crawler's URL). If a live message of the queue (one
  // not past the queue's TTL) was written with the same dedup key, the Put
  // writes nothing and returns that message's partition and id with
  // PutResult::duplicate set. Check and insert are atomic, also across
  // concurrent producers and within one PutBatch. The key is remembered
  // while its message lives and forgotten with it (TTL, DropQueue).
  // Empty: no deduplication. Limit: 0..1024 bytes.
  std::string_view dedup_key;
};

// Where a written message went.
struct PutResult {
  uint32_t partition = 0;
  MessageId id;
  // The message was not written: a live message with its dedup key exists,
  // and partition and id name that one.
  bool duplicate = false;
};

// A message read from a queue. The views point into the Scanner that
// produced it and are valid until that scanner's next call.
struct MessageView {
  MessageId id;
  uint32_t partition = 0;
  int priority = 0;
  std::string_view topic;
  std::string_view key;
  std::string_view payload;
  // Its delayed-delivery time; InfinitePast() if it had none.
  absl::Time not_before = absl::InfinitePast();
  // The dedup key it was written with (Message::dedup_key); empty if none.
  // Scanners set it; subscription listeners and claimed tasks see it empty.
  std::string_view dedup_key;
};

}  // namespace hq

#endif  // HQ_MESSAGE_H_
