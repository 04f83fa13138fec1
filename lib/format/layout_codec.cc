// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Grammar of both layouts (also in doc/format.md):
//
//   time layout:  key := head message_id topic
//                 lane prefix := head
//   topic layout: key := head fixed16 topic_len topic message_id
//                 lane prefix := head fixed16 topic_len topic
//
// `topic` is raw bytes (0..1024). In the time layout it is the rest of the
// key; in the topic layout it is length-prefixed so that no lane prefix is a
// prefix of another lane's keys.

#include "lib/format/layout_codec.h"

#include "lib/format/coding.h"
#include "lib/format/format.h"

namespace hq {
namespace {

// Writes head (LayoutCodec::kHeadSize bytes) to `p`.
void EncodeHead(char* p, uint32_t queue_id, uint32_t partition, int priority) {
  p[0] = format::kMessageTag;
  coding::EncodeFixed32(p + 1, queue_id);
  coding::EncodeFixed16(p + 5, static_cast<uint16_t>(partition));
  p[7] = static_cast<char>(255 - priority);
}

uint64_t EncodedId(MessageId id) { return (id.ms << 16) | id.seq; }

// Checks tag, queue and the fixed part; fills partition and priority.
bool DecodeHead(std::string_view key, uint32_t queue_id, DecodedKey* out) {
  if (key.size() < LayoutCodec::kHeadSize + LayoutCodec::kMessageIdSize ||
      key[0] != format::kMessageTag ||
      coding::DecodeFixed32(key.data() + 1) != queue_id) {
    return false;
  }
  out->partition = coding::DecodeFixed16(key.data() + 5);
  out->priority = 255 - static_cast<unsigned char>(key[7]);
  return true;
}

class TimeCodec final : public LayoutCodec {
 public:
  Layout layout() const override { return Layout::kTime; }
  bool lane_has_topic() const override { return false; }

  void AppendLanePrefix(std::string* dst, uint32_t queue_id, uint32_t partition,
                        int priority,
                        std::string_view /*topic*/) const override {
    AppendHead(dst, queue_id, partition, priority);
  }

  size_t AppendMessageKey(std::string* dst, uint32_t queue_id,
                          uint32_t partition, int priority,
                          std::string_view topic, MessageId id) const override {
    char buf[kHeadSize + kMessageIdSize];
    EncodeHead(buf, queue_id, partition, priority);
    coding::EncodeFixed64(buf + kHeadSize, EncodedId(id));
    dst->append(buf, sizeof(buf));
    dst->append(topic);
    return kHeadSize;
  }

  size_t LanePrefixSize(std::string_view /*key*/) const override {
    return kHeadSize;
  }

  size_t LanePrefixOf(std::string_view key) const override {
    return key.size() >= kHeadSize ? kHeadSize : 0;
  }

  bool DecodeMessageKey(std::string_view key, uint32_t queue_id,
                        DecodedKey* out) const override {
    if (!DecodeHead(key, queue_id, out)) return false;
    out->id = DecodeMessageId(key.data() + kHeadSize);
    out->topic = key.substr(kHeadSize + kMessageIdSize);
    out->lane_prefix_size = kHeadSize;
    return out->topic.size() <= format::kMaxTopicBytes;
  }
};

class TopicCodec final : public LayoutCodec {
 public:
  Layout layout() const override { return Layout::kTopic; }
  bool lane_has_topic() const override { return true; }

  void AppendLanePrefix(std::string* dst, uint32_t queue_id, uint32_t partition,
                        int priority, std::string_view topic) const override {
    char buf[kHeadSize + 2];
    EncodeHead(buf, queue_id, partition, priority);
    coding::EncodeFixed16(buf + kHeadSize, static_cast<uint16_t>(topic.size()));
    dst->append(buf, sizeof(buf));
    dst->append(topic);
  }

  size_t AppendMessageKey(std::string* dst, uint32_t queue_id,
                          uint32_t partition, int priority,
                          std::string_view topic, MessageId id) const override {
    AppendLanePrefix(dst, queue_id, partition, priority, topic);
    AppendMessageId(dst, id);
    return kHeadSize + 2 + topic.size();
  }

  size_t LanePrefixSize(std::string_view key) const override {
    return key.size() - kMessageIdSize;
  }

  size_t LanePrefixOf(std::string_view key) const override {
    if (key.size() < kHeadSize + 2) return 0;
    const size_t size =
        kHeadSize + 2 + coding::DecodeFixed16(key.data() + kHeadSize);
    return size <= key.size() ? size : 0;
  }

  bool DecodeMessageKey(std::string_view key, uint32_t queue_id,
                        DecodedKey* out) const override {
    if (!DecodeHead(key, queue_id, out) || key.size() < kHeadSize + 2) {
      return false;
    }
    const size_t len = coding::DecodeFixed16(key.data() + kHeadSize);
    if (len > format::kMaxTopicBytes ||
        key.size() != kHeadSize + 2 + len + kMessageIdSize) {
      return false;
    }
    out->topic = key.substr(kHeadSize + 2, len);
    out->lane_prefix_size = kHeadSize + 2 + len;
    out->id = DecodeMessageId(key.data() + out->lane_prefix_size);
    return true;
  }
};

}  // namespace

const LayoutCodec& LayoutCodec::For(Layout layout) {
  static const TimeCodec* const kTime = new TimeCodec;
  static const TopicCodec* const kTopic = new TopicCodec;
  return layout == Layout::kTopic ? static_cast<const LayoutCodec&>(*kTopic)
                                  : *kTime;
}

void LayoutCodec::AppendHead(std::string* dst, uint32_t queue_id,
                             uint32_t partition, int priority) {
  char buf[kHeadSize];
  EncodeHead(buf, queue_id, partition, priority);
  dst->append(buf, kHeadSize);
}

void LayoutCodec::AppendMessageId(std::string* dst, MessageId id) {
  coding::PutFixed64(dst, EncodedId(id));
}

void LayoutCodec::AppendLaneFence(std::string* dst,
                                  std::string_view lane_prefix) {
  dst->append(lane_prefix);
  AppendMessageId(dst, MessageId::Max());
}

MessageId LayoutCodec::DecodeMessageId(const char* p) {
  const uint64_t v = coding::DecodeFixed64(p);
  return MessageId{v >> 16, static_cast<uint16_t>(v & 0xffff)};
}

bool LayoutCodec::ParseLanePrefix(std::string_view prefix, bool has_topic,
                                  uint32_t* partition, int* priority,
                                  std::string_view* topic) {
  // 0x10 queue partition priority [fixed16 len topic].
  if (prefix.size() < kHeadSize) return false;
  *partition = coding::DecodeFixed16(prefix.data() + 5);
  *priority = 255 - static_cast<unsigned char>(prefix[7]);
  std::string_view rest = prefix.substr(kHeadSize);
  if (!has_topic) {
    *topic = std::string_view();
    return rest.empty();
  }
  uint16_t len;
  if (!coding::GetFixed16(&rest, &len) || rest.size() != len ||
      len > format::kMaxTopicBytes) {
    return false;
  }
  *topic = rest;
  return true;
}

bool LayoutCodec::LaneMessage(std::string_view key, std::string_view prefix,
                              MessageId* id) {
  if (!key.starts_with(prefix) || key.size() < prefix.size() + kMessageIdSize) {
    return false;
  }
  *id = DecodeMessageId(key.data() + prefix.size());
  return !(*id == MessageId::Max());
}

}  // namespace hq
