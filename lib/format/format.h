// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Every record hq stores in its LevelDB, except message keys (whose grammar
// belongs to the layouts, see layout_codec.h). doc/format.md has the same
// grammar. Integers in keys are big-endian (coding.h).
//
// The first byte of every key is a record tag. DO NOT CHANGE the tags.
//
//   meta key     := 0x00 name                   name: "format" |
//   "next_queue_id"
//     "format"        -> fixed32 format version (kFormatVersion)
//     "next_queue_id" -> fixed32 the next queue id to hand out
//   catalog key  := 0x01 queue_name             -> queue record
//   reserve key  := 0x02 fixed32 queue_id fixed16 partition
//                   -> fixed64 reserved_ms: every MessageId ever assigned in
//                      the partition has ms < reserved_ms
//   drop key     := 0x03 fixed32 queue_id       -> "" (drop in progress)
//   lane dir key := 0x04 fixed32 queue_id fixed16 partition
//                   fixed8 (255 - priority) [fixed16 topic_len topic]  -> ""
//                   One per lane ever written: the lane's prefix
//                   (layout_codec.h) with tag 0x04 for 0x10; the topic part
//                   only in the topic layout. Written in the batch of the
//                   lane's first message since Open, with the lane's fence,
//                   so lanes are found without reading any lane.
//   ttl key      := 0x05 fixed32 queue_id       -> queue_name
//                   One per queue with a finite TTL: what the sweep visits.
//   lane head    := lane prefix (layout_codec.h), exactly   -> message_id
//                   The TTL sweep's watermark of a lane: every message below
//                   that id was deleted, so the next sweep seeks there and
//                   never rescans tombstones. It sorts just before the lane's
//                   first message (readers always seek to prefix + id, so
//                   they never meet it), which keeps a sweep's writes inside
//                   the lane: a watermark elsewhere in the key space would
//                   make the memtable flush before a lane's compaction span
//                   the queue, and the compaction rewrite the live lanes
//                   between.
//   group key    := 0x06 fixed32 queue_id group_name  -> group record
//   cursor key   := 0x07 fixed32 queue_id fixed32 group_id lane_rest
//                   -> cursor value
//                   lane_rest: a lane prefix without its first 5 bytes (tag
//                   and queue id): fixed16 partition fixed8 (255 - priority)
//                   [fixed16 topic_len topic], self-delimiting.
//   task key     := 0x08 fixed32 queue_id fixed32 group_id lane_rest
//                   message_id                  -> task value
//                   One per task between a lane's completion cursor and
//                   beyond its scan cursor: in flight, waiting to be
//                   delivered again, or completed out of order.
//   dead key     := 0x09 fixed32 queue_id fixed32 group_id
//                   fixed16 dead_partition message_id(in the dead queue)
//                   -> dead value
//   message key  := 0x10 fixed32 queue_id fixed16 partition
//                   fixed8 (255 - priority) layout-specific-suffix
//                   -> message value
//
//   queue record := fixed8 1 (record version)
//                   fixed32 queue_id
//                   fixed16 partitions          1..65535
//                   fixed16 priorities          1..256
//                   fixed8 layout               hq::Layout value
//                   varint64 ttl_ms             0 = infinite
//                   varint32 max_payload_bytes
//                   varint64 created_ms         Unix ms
//   group record := fixed8 1 (record version)
//                   fixed32 group_id
//                   varint32 n  (length-prefixed topic){n}   topic filter,
//                                                            sorted, unique
//   cursor value := fixed8 1  fixed64 scan_id  fixed64 completion_id
//   task value   := fixed8 1  fixed8 state  varint32 attempts  varint64 ms
//                   state: 1 in flight (ms: claimed at), 2 waiting (ms: due),
//                   3 completed (ms: 0). DO NOT CHANGE the values.
//   dead value   := fixed8 1  fixed16 original_partition
//                   fixed64 original_id  fixed8 priority  fixed8 reason
//                   varint32 attempts  varint64 dead_ms
//                   (length-prefixed topic)
//                   reason: hq::DeadLetterReason.
//   meta "next_group_id" -> fixed32 the next group id to hand out
//   dedup key    := 0x0a fixed32 queue_id dedup_key
//                   -> fixed16 partition message_id
//                   The message written with that dedup key; stale once
//                   the message is past the queue's TTL (the sweep deletes
//                   it with the message).
//   message value := fixed8 1 (value version)
//                   fixed8 flags                bit 0: has key; bit 1: has
//                                               not-before; bit 2: has
//                                               dedup key; others 0
//                   [varint32 key_len key]      if flags bit 0
//                   [varint32 len dedup_key]    if flags bit 2
//                   [varint64 not_before_ms]    if flags bit 1: Unix ms > 0
//                   payload                     the rest

#ifndef HQ_LIB_FORMAT_FORMAT_H_
#define HQ_LIB_FORMAT_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hq/group.h"
#include "hq/message.h"
#include "hq/options.h"
#include "hq/subscription.h"

namespace hq::format {

// DO NOT CHANGE: persisted record tags.
inline constexpr char kMetaTag = 0x00;
inline constexpr char kCatalogTag = 0x01;
inline constexpr char kReserveTag = 0x02;
inline constexpr char kDropTag = 0x03;
inline constexpr char kLaneDirTag = 0x04;
inline constexpr char kTtlTag = 0x05;
inline constexpr char kGroupTag = 0x06;
inline constexpr char kCursorTag = 0x07;
inline constexpr char kTaskTag = 0x08;
inline constexpr char kDeadTag = 0x09;
inline constexpr char kDedupTag = 0x0a;
inline constexpr char kSubTag = 0x0b;
inline constexpr char kCheckpointTag = 0x0c;
inline constexpr char kMessageTag = 0x10;

// Bumped when a change makes old code unable to read new data.
inline constexpr uint32_t kFormatVersion = 1;

// Limits (documented in the public headers).
inline constexpr size_t kMaxQueueNameBytes = 128;
inline constexpr size_t kMaxTopicBytes = 1024;
inline constexpr size_t kMaxKeyBytes = 1024;
inline constexpr uint32_t kMaxPartitions = 65535;
inline constexpr int kMaxPriorities = 256;
inline constexpr uint32_t kMaxPayloadLimit = uint32_t{64} << 20;

std::string MetaKey(std::string_view name);
std::string CatalogKey(std::string_view queue_name);
std::string CatalogPrefix();
std::string ReserveKey(uint32_t queue_id, uint32_t partition);
std::string ReservePrefix(uint32_t queue_id);
std::string DropKey(uint32_t queue_id);
std::string DropPrefix();
// All message keys of a queue start with this.
std::string MessagePrefix(uint32_t queue_id);
// Appends the lane directory key of a lane, given its lane prefix.
void AppendLaneDirKey(std::string* dst, std::string_view lane_prefix);
// All lane directory keys of a queue, or of one of its partitions.
std::string LaneDirPrefix(uint32_t queue_id);
std::string LaneDirPrefix(uint32_t queue_id, uint32_t partition);
std::string TtlKey(uint32_t queue_id);
std::string TtlPrefix();

// Group records (see the grammar above).
std::string GroupKey(uint32_t queue_id, std::string_view group_name);
std::string GroupPrefix(uint32_t queue_id);
// tag queue_id.
std::string QueuePrefix(char tag, uint32_t queue_id);
// tag queue_id group_id: the start of a group's cursor, task or dead keys.
std::string GroupRecordPrefix(char tag, uint32_t queue_id, uint32_t group_id);
// Appends lane_rest (the lane prefix without tag and queue id).
void AppendLaneRest(std::string* dst, std::string_view lane_prefix);
inline constexpr size_t kGroupRecordPrefixSize = 1 + 4 + 4;

struct GroupRecord {
  uint32_t id = 0;
  std::vector<std::string> topics;  // Sorted, unique.
  bool ordered = false;             // GroupOptions::ordered.
};
std::string EncodeGroupRecord(const GroupRecord& record);
absl::Status DecodeGroupRecord(std::string_view in, GroupRecord* record);

struct CursorValue {
  MessageId scan;
  MessageId done;
};
std::string EncodeCursor(const CursorValue& c);
bool DecodeCursor(std::string_view in, CursorValue* c);

// Subscription records: 0x0b queue_id name -> SubRecord; checkpoints
// 0x0c queue_id sub_id lane_rest -> fixed8 1 fixed64 next_id (sub ids come
// from the group id counter).
std::string SubKey(uint32_t queue_id, std::string_view name);
struct SubRecord {
  uint32_t id = 0;
  std::vector<uint32_t> partitions;  // Sorted, unique; empty: all.
  std::vector<std::string> topics;   // Sorted, unique; empty: all.
  // Where a lane without a checkpoint starts.
  MessageId start;
};
std::string EncodeSubRecord(const SubRecord& r);
absl::Status DecodeSubRecord(std::string_view in, SubRecord* r);
std::string EncodeCheckpoint(MessageId next);
bool DecodeCheckpoint(std::string_view in, MessageId* next);

// DO NOT CHANGE: persisted task states.
enum class TaskState : uint8_t { kInFlight = 1, kWaiting = 2, kDone = 3 };
struct TaskValue {
  TaskState state = TaskState::kInFlight;
  uint32_t attempts = 0;
  uint64_t ms = 0;
};
std::string EncodeTask(const TaskValue& t);
bool DecodeTask(std::string_view in, TaskValue* t);

struct DeadValue {
  uint32_t original_partition = 0;
  MessageId original_id;
  int priority = 0;
  uint8_t reason = 0;
  uint32_t attempts = 0;
  uint64_t dead_ms = 0;
  std::string topic;
};
std::string EncodeDead(const DeadValue& d);
bool DecodeDead(std::string_view in, DeadValue* d);

// OK, or InvalidArgument naming the option outside its limits.
absl::Status ValidateGroupOptions(const GroupOptions& options);
// The checks of SubscribeOptions that need no queue (partition ranges are
// checked by the queue).
absl::Status ValidateSubscribeOptions(const SubscribeOptions& options);
// Checks of the topic and partition lists in ScanOptions, ClaimOptions and
// GroupOptions: OK, or InvalidArgument naming `field` ("ScanOptions::topics")
// and the bad entry.
absl::Status ValidateTopicList(std::string_view field,
                               const std::vector<std::string>& topics);
absl::Status ValidatePartitionList(std::string_view field,
                                   const std::vector<uint32_t>& partitions,
                                   uint32_t queue_partitions);

// OK, or InvalidArgument saying what is wrong with the name.
absl::Status ValidateQueueName(std::string_view name);
absl::Status ValidateGroupName(std::string_view name);
// OK, or InvalidArgument naming the option outside its limits.
absl::Status ValidateQueueOptions(const QueueOptions& options);
absl::Status ValidateOptions(const Options& options);

struct QueueRecord {
  uint32_t id = 0;
  QueueOptions options;
  absl::Time created;
};
std::string EncodeQueueRecord(const QueueRecord& record);
// DataLoss on malformed input.
absl::Status DecodeQueueRecord(std::string_view in, QueueRecord* record);

// Appends a message value; not_before_ms 0: none; dedup "": none.
void AppendMessageValue(std::string* dst, std::string_view key,
                        std::string_view payload, uint64_t not_before_ms = 0,
                        std::string_view dedup = {});
// Splits a message value into views of `in`, its not-before time (0 if
// none) into *not_before_ms and its dedup key into *dedup (each if not
// null). False if malformed.
bool DecodeMessageValue(std::string_view in, std::string_view* key,
                        std::string_view* payload,
                        uint64_t* not_before_ms = nullptr,
                        std::string_view* dedup = nullptr);
std::string DedupKey(uint32_t queue_id, std::string_view dedup_key);
std::string EncodeDedup(uint32_t partition, MessageId id);
bool DecodeDedup(std::string_view in, uint32_t* partition, MessageId* id);
// The not-before time of a decoded value (InfinitePast() for 0).
inline absl::Time NotBeforeTime(uint64_t not_before_ms) {
  return not_before_ms == 0
             ? absl::InfinitePast()
             : absl::FromUnixMillis(static_cast<int64_t>(not_before_ms));
}

}  // namespace hq::format

#endif  // HQ_LIB_FORMAT_FORMAT_H_
