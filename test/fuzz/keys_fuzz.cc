// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Fuzz target: the key decoders (lib/format/layout_codec.h): message keys in
// both layouts and the lane prefix of any key (LanePrefixOf), lane prefixes
// (and lane directory keys, cursor and checkpoint keys' lane_rest, which are
// lane prefixes under another tag), lane membership of a key, and
// MessageId's text form. The first byte picks what
// to decode.
//
// Keys are canonical: a key that decodes re-encodes to exactly its bytes.
// Built from the input, keys must decode back to what made them, and byte
// order must be the order the format promises (partition, then priority
// descending, then topic (topic layout: length, then bytes), then id).

#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include "hq/message.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "test/fuzz/fuzz_util.h"

namespace hq::fuzz {
namespace {

const LayoutCodec& Codec(bool topic) {
  return LayoutCodec::For(topic ? Layout::kTopic : Layout::kTime);
}

void DecodeKey(bool topic, uint32_t queue_id, std::string_view key) {
  const LayoutCodec& codec = Codec(topic);
  // Any key: a checked lane prefix length within it, or 0.
  const size_t lane_size = codec.LanePrefixOf(key);
  FUZZ_CHECK(lane_size <= key.size());
  FUZZ_CHECK(lane_size == 0 || lane_size >= LayoutCodec::kHeadSize);
  DecodedKey k;
  if (!codec.DecodeMessageKey(key, queue_id, &k)) return;
  FUZZ_CHECK(lane_size == k.lane_prefix_size, "LanePrefixOf of a message");
  FUZZ_CHECK(k.partition <= 0xffff);
  FUZZ_CHECK(k.priority >= 0 && k.priority <= 255);
  FUZZ_CHECK(k.topic.size() <= format::kMaxTopicBytes);
  FUZZ_CHECK(k.id.ms <= MessageId::kMaxMs);
  FUZZ_CHECK(k.topic.empty() ||
             (k.topic.data() >= key.data() &&
              k.topic.data() + k.topic.size() <= key.data() + key.size()));
  std::string again;
  codec.AppendMessageKey(&again, queue_id, k.partition, k.priority, k.topic,
                         k.id);
  FUZZ_CHECK(again == key, "message keys are canonical");
  FUZZ_CHECK(k.lane_prefix_size == codec.LanePrefixSize(key));
  const std::string_view prefix = key.substr(0, k.lane_prefix_size);
  std::string lane;
  codec.AppendLanePrefix(&lane, queue_id, k.partition, k.priority, k.topic);
  FUZZ_CHECK(lane == prefix);
  MessageId id;
  FUZZ_CHECK(LayoutCodec::LaneMessage(key, prefix, &id) ==
             !(k.id == MessageId::Max()));
  if (!(k.id == MessageId::Max())) FUZZ_CHECK(id == k.id);
  // Another queue's decoder refuses it.
  FUZZ_CHECK(!codec.DecodeMessageKey(key, queue_id + 1, &k));
}

void ParsePrefix(bool topic, std::string_view prefix) {
  uint32_t partition;
  int priority;
  std::string_view t;
  if (!LayoutCodec::ParseLanePrefix(prefix, topic, &partition, &priority, &t)) {
    return;
  }
  FUZZ_CHECK(partition <= 0xffff && priority >= 0 && priority <= 255);
  FUZZ_CHECK(t.size() <= format::kMaxTopicBytes, "topic of %zu bytes",
             t.size());
  if (!topic) FUZZ_CHECK(t.empty());
  // Tag and queue id are the caller's (they vary: 0x04, 0x07, 0x10...).
  std::string again;
  Codec(topic).AppendLanePrefix(
      &again, coding::DecodeFixed32(prefix.data() + 1), partition, priority, t);
  FUZZ_CHECK(again.substr(1) == prefix.substr(1), "lane prefixes canonical");
}

void ParseId(std::string_view text) {
  const std::optional<MessageId> id = MessageId::Parse(text);
  if (!id) return;
  FUZZ_CHECK(id->ms <= MessageId::kMaxMs);
  FUZZ_CHECK(MessageId::Parse(id->ToString()) == id);
}

// Builds two keys from the input and checks round trips and order.
void BuildKeys(Input& in) {
  const bool topic = in.Bool();
  const LayoutCodec& codec = Codec(topic);
  const uint32_t queue_id = in.U32();
  struct Parts {
    uint32_t partition;
    int priority;
    std::string topic;
    MessageId id;
  };
  auto make = [&]() {
    Parts p;
    p.partition = in.U16();
    p.priority = in.U8();
    p.topic = in.Bytes(40);
    const uint64_t v = in.U64();
    p.id = MessageId{v >> 16, static_cast<uint16_t>(v)};
    return p;
  };
  Parts a = make();
  Parts b = in.Bool() ? a : make();
  if (in.Bool()) b.id = a.id.Next();  // Neighbours in a lane.
  std::string ka, kb;
  codec.AppendMessageKey(&ka, queue_id, a.partition, a.priority, a.topic, a.id);
  codec.AppendMessageKey(&kb, queue_id, b.partition, b.priority, b.topic, b.id);
  for (const auto* p : {&a, &b}) {
    const std::string& key = p == &a ? ka : kb;
    DecodedKey k;
    FUZZ_CHECK(codec.DecodeMessageKey(key, queue_id, &k));
    FUZZ_CHECK(k.partition == p->partition && k.priority == p->priority &&
               k.id == p->id && k.topic == p->topic);
    DecodeKey(topic, queue_id, key);
    std::string lane;
    codec.AppendLanePrefix(&lane, queue_id, p->partition, p->priority,
                           p->topic);
    uint32_t partition;
    int priority;
    std::string_view t;
    FUZZ_CHECK(
        LayoutCodec::ParseLanePrefix(lane, topic, &partition, &priority, &t));
    FUZZ_CHECK(partition == p->partition && priority == p->priority &&
               t == (topic ? std::string_view(p->topic) : ""));
    // The lane directory key is the prefix under tag 0x04.
    std::string dir;
    format::AppendLaneDirKey(&dir, lane);
    FUZZ_CHECK(dir[0] == format::kLaneDirTag &&
               dir.substr(1) == lane.substr(1));
    // The fence sorts after every message of the lane; the head before.
    std::string fence;
    LayoutCodec::AppendLaneFence(&fence, lane);
    MessageId id;
    FUZZ_CHECK(!LayoutCodec::LaneMessage(fence, lane, &id));
    if (!(p->id == MessageId::Max())) FUZZ_CHECK(key < fence);
    FUZZ_CHECK(lane < key);
  }
  // Byte order is the promised order.
  auto order = [&](const Parts& p) {
    const std::string t = p.topic;
    return topic ? std::make_tuple(p.partition, 255 - p.priority, t.size(), t,
                                   p.id, std::string())
                 : std::make_tuple(p.partition, 255 - p.priority, size_t{0},
                                   std::string(), p.id, t);
  };
  const auto oa = order(a), ob = order(b);
  if (oa < ob) FUZZ_CHECK(ka < kb);
  if (ob < oa) FUZZ_CHECK(kb < ka);
  if (oa == ob) FUZZ_CHECK(ka == kb);
  // MessageId text.
  FUZZ_CHECK(MessageId::Parse(a.id.ToString()) == a.id);
}

}  // namespace
}  // namespace hq::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hq::fuzz;  // NOLINT
  Input in(data, size);
  const uint8_t which = in.U8();
  if (which >= 0x80) {
    BuildKeys(in);
    return 0;
  }
  switch (which % 4) {
    case 0:
    case 1: {
      // The queue id: the key's own (else most keys fail at once), or
      // another one.
      const bool own = in.Bool();
      const std::string_view key = in.Rest();
      const uint32_t id = own && key.size() >= 5
                              ? hq::coding::DecodeFixed32(key.data() + 1)
                              : 7;
      DecodeKey(which % 4 == 1, id, key);
      break;
    }
    case 2: {
      const bool topic = in.Bool();
      ParsePrefix(topic, in.Rest());
      break;
    }
    case 3:
      ParseId(in.Rest());
      break;
  }
  return 0;
}
