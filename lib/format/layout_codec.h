// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The internal interface behind both rowkey layouts (hq/layout.h). Scanners,
// groups and subscriptions work on lanes through it and never look at key
// bytes.
//
// Every message key starts with the same fixed part, its head
// (doc/format.md, "Messages"):
//
// clang-format off
//   head        := 0x10 fixed32 queue_id fixed16 partition fixed8 (255 - priority)
//   message_id  := fixed64 (ms << 16 | seq)        ms < 2^48
// clang-format on
//
// and a layout orders the rest its own way (doc/format.md has both
// grammars; layout_codec.cc implements them). The stored priority byte is
// inverted so that, within a partition, higher priorities sort first.
//
// A lane is a contiguous key range whose messages sort in MessageId order.
// Its keys all start with its lane prefix, and the key at which id X starts
// within the lane is lane_prefix + message_id(X).
//
// A lane swept for TTL starts with its head, the bare lane prefix, holding
// the sweep's watermark (format.h). The sweep writes it in the batch of its
// first deletions, so the rows TTL deletes at a lane's start always follow a
// live key: a seek that runs out of one lane stops at the next lane's head
// or first message and never walks deleted rows.
//
// A Db written before format version 5 may also end lanes with a fence:
//
//   lane fence := lane_prefix message_id(MessageId::Max())   -> ""
//
// Max() is never assigned to a message, so readers stop before it (every
// range ends at or before Max()). No fence is written any more: a key
// ahead of a lane's newest message made every later table of the lane
// overlap the table that held it, which cost sustained ingest a merge of
// every byte (doc/guide.md, "Ingesting fast").

#ifndef HQ_LIB_FORMAT_LAYOUT_CODEC_H_
#define HQ_LIB_FORMAT_LAYOUT_CODEC_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "hq/layout.h"
#include "hq/message.h"

namespace hq {

// A message key taken apart. Views point into the decoded key.
struct DecodedKey {
  uint32_t partition = 0;
  int priority = 0;
  MessageId id;
  std::string_view topic;
  // The key's first `lane_prefix_size` bytes are its lane prefix.
  size_t lane_prefix_size = 0;
};

class LayoutCodec {
 public:
  // The codec of `layout`. REQUIRES: a known layout.
  static const LayoutCodec& For(Layout layout);

  virtual ~LayoutCodec() = default;
  virtual Layout layout() const = 0;

  // Whether the topic is part of the lane (kTopic) or a row attribute within
  // a (partition, priority) lane (kTime).
  virtual bool lane_has_topic() const = 0;

  // Appends the lane prefix of (partition, priority[, topic]). `topic` is
  // ignored unless lane_has_topic().
  virtual void AppendLanePrefix(std::string* dst, uint32_t queue_id,
                                uint32_t partition, int priority,
                                std::string_view topic) const = 0;

  // Appends the full key of a message; returns the size of its lane prefix
  // (what LanePrefixSize would say of it).
  virtual size_t AppendMessageKey(std::string* dst, uint32_t queue_id,
                                  uint32_t partition, int priority,
                                  std::string_view topic,
                                  MessageId id) const = 0;

  // The length of the lane prefix of `key`, a key this codec encoded.
  virtual size_t LanePrefixSize(std::string_view key) const = 0;

  // The length of the lane prefix of `key`, any key of the message key
  // space (a message, a lane head or a fence), checked: 0 if `key` is too
  // short to hold one (its topic length runs past its end).
  virtual size_t LanePrefixOf(std::string_view key) const = 0;

  // Decodes a key of queue `queue_id`. False if `key` is not a well-formed
  // message key of that queue.
  virtual bool DecodeMessageKey(std::string_view key, uint32_t queue_id,
                                DecodedKey* out) const = 0;

  // Layout-independent helpers.

  // Appends head: tag, queue, partition and stored priority.
  static void AppendHead(std::string* dst, uint32_t queue_id,
                         uint32_t partition, int priority);

  static void AppendMessageId(std::string* dst, MessageId id);
  // Appends the fence of the lane whose prefix is `lane_prefix` (written by
  // format versions before 5 only; a seek target for a lane's end).
  static void AppendLaneFence(std::string* dst, std::string_view lane_prefix);
  static MessageId DecodeMessageId(const char* p);
  // Takes a lane prefix apart (head, and the topic with `has_topic`).
  // False if it is malformed.
  static bool ParseLanePrefix(std::string_view prefix, bool has_topic,
                              uint32_t* partition, int* priority,
                              std::string_view* topic);
  // If `key` is a message of the lane `prefix` (not its fence), sets `*id`
  // and returns true.
  static bool LaneMessage(std::string_view key, std::string_view prefix,
                          MessageId* id);

  static constexpr size_t kHeadSize = 1 + 4 + 2 + 1;
  static constexpr size_t kMessageIdSize = 8;
};

}  // namespace hq

#endif  // HQ_LIB_FORMAT_LAYOUT_CODEC_H_
