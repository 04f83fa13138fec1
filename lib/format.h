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
//   message value := fixed8 1 (value version)
//                   fixed8 flags                bit 0: has key; others 0
//                   [varint32 key_len key]      if flags bit 0
//                   payload                     the rest

#ifndef HQ_LIB_FORMAT_H_
#define HQ_LIB_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hq/options.h"

namespace hq::format {

// DO NOT CHANGE: persisted record tags.
inline constexpr char kMetaTag = 0x00;
inline constexpr char kCatalogTag = 0x01;
inline constexpr char kReserveTag = 0x02;
inline constexpr char kDropTag = 0x03;
inline constexpr char kLaneDirTag = 0x04;
inline constexpr char kTtlTag = 0x05;
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

// OK, or InvalidArgument saying what is wrong with the name.
absl::Status ValidateQueueName(std::string_view name);
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

// Appends a message value.
void AppendMessageValue(std::string* dst, std::string_view key,
                        std::string_view payload);
// Splits a message value into views of `in`. False if malformed.
bool DecodeMessageValue(std::string_view in, std::string_view* key,
                        std::string_view* payload);

}  // namespace hq::format

#endif  // HQ_LIB_FORMAT_H_
