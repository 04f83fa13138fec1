// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include <algorithm>
#include <random>
#include <tuple>
#include <vector>

#include "lib/format/layout_codec.h"
#include "test/test_util.h"

namespace hq {
namespace {

struct KeyParts {
  uint32_t partition;
  int priority;
  std::string topic;
  MessageId id;
};

std::vector<KeyParts> RandomParts(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  const std::vector<std::string> topics = {
      "", "a", "ab", "b", "z", "\xff", std::string("\0x", 2)};
  std::vector<KeyParts> out;
  for (int i = 0; i < n; ++i) {
    KeyParts k;
    k.partition = rng() % 3 == 0 ? 65534 + rng() % 2 : rng() % 300;
    k.priority = static_cast<int>(rng() % 256);
    k.topic = topics[rng() % topics.size()];
    const uint64_t ms_choices[] = {0,
                                   1,
                                   255,
                                   256,
                                   1767225600000,
                                   MessageId::kMaxMs,
                                   rng() & MessageId::kMaxMs};
    k.id = MessageId{ms_choices[rng() % 7], static_cast<uint16_t>(rng())};
    out.push_back(k);
  }
  return out;
}

TEST_CASE("message keys round-trip in both layouts") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const LayoutCodec& codec = LayoutCodec::For(layout);
  REQUIRE(codec.layout() == layout);
  for (const KeyParts& k : RandomParts(5000, 1)) {
    std::string key;
    codec.AppendMessageKey(&key, 77, k.partition, k.priority, k.topic, k.id);
    DecodedKey d;
    REQUIRE(codec.DecodeMessageKey(key, 77, &d));
    CHECK(d.partition == k.partition);
    CHECK(d.priority == k.priority);
    CHECK(d.topic == k.topic);
    CHECK(d.id == k.id);
    // The lane prefix is a prefix of the key and is what AppendLanePrefix
    // produces; the id starts right after it.
    std::string lane;
    codec.AppendLanePrefix(&lane, 77, k.partition, k.priority, k.topic);
    CHECK(key.substr(0, d.lane_prefix_size) == lane);
    std::string seek = lane;
    LayoutCodec::AppendMessageId(&seek, k.id);
    CHECK(key.compare(0, seek.size(), seek) == 0);
    // Another queue's keys are not this queue's.
    CHECK_FALSE(codec.DecodeMessageKey(key, 78, &d));
  }
}

// Byte order of keys is the order the layout promises.
TEST_CASE("key order is partition, priority descending, lane, id") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const LayoutCodec& codec = LayoutCodec::For(layout);
  std::vector<KeyParts> parts = RandomParts(4000, 2);
  std::vector<std::pair<std::string, size_t>> keys;
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string key;
    const KeyParts& k = parts[i];
    codec.AppendMessageKey(&key, 5, k.partition, k.priority, k.topic, k.id);
    keys.emplace_back(key, i);
  }
  std::sort(keys.begin(), keys.end());
  auto rank = [&](const KeyParts& k) {
    // Topic layout lanes sort topics by (length, bytes): the u16 length
    // prefix comes first.
    const std::string lane_topic =
        layout == Layout::kTopic
            ? std::string(1, static_cast<char>(k.topic.size() >> 8)) +
                  static_cast<char>(k.topic.size() & 0xff) + k.topic
            : std::string();
    const std::string row_topic = layout == Layout::kTime ? k.topic : "";
    return std::make_tuple(k.partition, -k.priority, lane_topic, k.id,
                           row_topic);
  };
  for (size_t i = 1; i < keys.size(); ++i) {
    const KeyParts& a = parts[keys[i - 1].second];
    const KeyParts& b = parts[keys[i].second];
    INFO("i=" << i);
    CHECK(rank(a) <= rank(b));
  }
}

TEST_CASE("message ids encode in 8 bytes, byte order = id order") {
  std::mt19937_64 rng(3);
  std::vector<MessageId> ids = {MessageId::Min(), MessageId::Max(),
                                MessageId{1, 0}, MessageId{0, 0xffff}};
  for (int i = 0; i < 20000; ++i) {
    ids.push_back(
        MessageId{rng() & MessageId::kMaxMs, static_cast<uint16_t>(rng())});
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    std::string a;
    LayoutCodec::AppendMessageId(&a, ids[i]);
    REQUIRE(a.size() == LayoutCodec::kMessageIdSize);
    REQUIRE(LayoutCodec::DecodeMessageId(a.data()) == ids[i]);
    if (i > 0) {
      std::string b;
      LayoutCodec::AppendMessageId(&b, ids[i - 1]);
      REQUIRE((b < a) == (ids[i - 1] < ids[i]));
    }
  }
}

TEST_CASE("malformed message keys are rejected") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const LayoutCodec& codec = LayoutCodec::For(layout);
  std::string key;
  codec.AppendMessageKey(&key, 1, 2, 3, "topic", MessageId{10, 1});
  DecodedKey d;
  REQUIRE(codec.DecodeMessageKey(key, 1, &d));
  // Every truncation is rejected by the topic layout; the time layout's
  // topic is the tail, so only cuts into the fixed part are detectable.
  const size_t fixed = LayoutCodec::kHeadSize + LayoutCodec::kMessageIdSize;
  for (size_t n = 0; n < key.size(); ++n) {
    if (layout == Layout::kTime && n >= fixed) continue;
    INFO("n=" << n);
    CHECK_FALSE(codec.DecodeMessageKey(key.substr(0, n), 1, &d));
  }
  std::string wrong_tag = key;
  wrong_tag[0] = 0x11;
  CHECK_FALSE(codec.DecodeMessageKey(wrong_tag, 1, &d));
  if (layout == Layout::kTopic) {
    CHECK_FALSE(codec.DecodeMessageKey(key + "x", 1, &d));
  }
}

TEST_CASE("MessageId helpers") {
  CHECK(MessageId{5, 7}.ToString() == "5-7");
  CHECK(MessageId::Parse("5-7") == MessageId{5, 7});
  CHECK(MessageId::Parse("1767225600000-65535") ==
        MessageId{1767225600000, 65535});
  for (const char* bad : {"", "5", "5-", "-7", "5-65536", "a-1", "1-b",
                          "281474976710656-0", "5-7-8", " 5-7", "+5-7"}) {
    INFO(bad);
    CHECK_FALSE(MessageId::Parse(bad).has_value());
  }
  CHECK(MessageId{5, 0xffff}.Next() == MessageId{6, 0});
  CHECK(MessageId{5, 1}.Next() == MessageId{5, 2});
  CHECK(MessageId::Max().Next() == MessageId::Max());
  CHECK(MessageId::AtTime(absl::FromUnixMillis(1234)) == MessageId{1234, 0});
  CHECK(MessageId::AtTime(absl::FromUnixMillis(1234) + absl::Microseconds(1)) ==
        MessageId{1235, 0});
  CHECK(MessageId::AtTime(absl::InfinitePast()) == MessageId::Min());
  CHECK(MessageId::AtTime(absl::FromUnixMillis(MessageId::kMaxMs)) ==
        MessageId{MessageId::kMaxMs, 0});
  CHECK(MessageId::AtTime(absl::InfiniteFuture()) == MessageId::Max());
  CHECK(MessageId{1234, 9}.time() == absl::FromUnixMillis(1234));
  CHECK(LayoutName(Layout::kTopic) == "topic");
  CHECK(ParseLayout("time") == Layout::kTime);
  CHECK_FALSE(ParseLayout("Time").has_value());
}

// Found by test/fuzz/keys_fuzz.cc: a lane prefix (as read back from the lane
// directory, cursor and checkpoint keys) with a topic over the 1024-byte
// limit parsed as a lane no message can have.
TEST_CASE("fuzz: lane prefixes with a topic over the limit are rejected") {
  const LayoutCodec& codec = LayoutCodec::For(Layout::kTopic);
  uint32_t partition;
  int priority;
  std::string_view topic;
  std::string prefix;
  codec.AppendLanePrefix(&prefix, 1, 2, 3,
                         std::string(format::kMaxTopicBytes, 't'));
  REQUIRE(LayoutCodec::ParseLanePrefix(prefix, true, &partition, &priority,
                                       &topic));
  CHECK(partition == 2);
  CHECK(priority == 3);
  CHECK(topic.size() == format::kMaxTopicBytes);
  prefix.clear();
  codec.AppendLanePrefix(&prefix, 1, 2, 3,
                         std::string(format::kMaxTopicBytes + 1, 't'));
  CHECK_FALSE(LayoutCodec::ParseLanePrefix(prefix, true, &partition, &priority,
                                           &topic));
}

}  // namespace
}  // namespace hq
