// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/format/format.h"

#include <cstdlib>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "test/test_util.h"

namespace hq::format {
namespace {

TEST_CASE("queue records round-trip") {
  QueueRecord r;
  r.id = 123456;
  r.options.partitions = GENERATE(1u, 7u, 65535u);
  r.options.priorities = GENERATE(1, 256);
  r.options.ttl = GENERATE(absl::InfiniteDuration(), absl::Milliseconds(1),
                           absl::Hours(24 * 365));
  r.options.layout = GENERATE(Layout::kTime, Layout::kTopic);
  r.options.max_payload_bytes = GENERATE(1u, 1u << 20, 64u << 20);
  r.created = absl::FromUnixMillis(1767225600123);
  QueueRecord out;
  HQ_REQUIRE_OK(DecodeQueueRecord(EncodeQueueRecord(r), &out));
  CHECK(out.id == r.id);
  CHECK(out.options.partitions == r.options.partitions);
  CHECK(out.options.priorities == r.options.priorities);
  CHECK(out.options.ttl == r.options.ttl);
  CHECK(out.options.layout == r.options.layout);
  CHECK(out.options.max_payload_bytes == r.options.max_payload_bytes);
  CHECK(out.created == r.created);
}

TEST_CASE("malformed queue records are DataLoss") {
  QueueRecord r;
  r.id = 9;
  const std::string good = EncodeQueueRecord(r);
  QueueRecord out;
  // Every truncation, every trailing byte, and a bad version.
  for (size_t n = 0; n < good.size(); ++n) {
    CHECK(absl::IsDataLoss(DecodeQueueRecord(good.substr(0, n), &out)));
  }
  CHECK(absl::IsDataLoss(DecodeQueueRecord(good + "x", &out)));
  std::string bad_version = good;
  bad_version[0] = 2;
  CHECK(absl::IsDataLoss(DecodeQueueRecord(bad_version, &out)));
  // Options outside their limits (partitions = 0) are caught too.
  std::string zero_partitions = good;
  zero_partitions[5] = zero_partitions[6] = 0;
  CHECK(absl::IsDataLoss(DecodeQueueRecord(zero_partitions, &out)));
  std::string bad_layout = good;
  bad_layout[9] = 7;
  CHECK(absl::IsDataLoss(DecodeQueueRecord(bad_layout, &out)));
}

TEST_CASE("message values round-trip with and without a key") {
  const std::string binary("\0\xff\x01payload", 10);
  for (const std::string& key : {std::string(), std::string("url"), binary}) {
    for (const std::string& payload :
         {std::string(), std::string("x"), binary, std::string(5000, 'p')}) {
      for (uint64_t not_before : {uint64_t{0}, uint64_t{1},
                                  uint64_t{1767225600000}, MessageId::kMaxMs}) {
        std::string v;
        AppendMessageValue(&v, key, payload, not_before);
        std::string_view k, p;
        uint64_t nb = 7;
        REQUIRE(DecodeMessageValue(v, &k, &p, &nb));
        CHECK(k == key);
        CHECK(p == payload);
        CHECK(nb == not_before);
        // Without a not-before the value is what it always was.
        if (not_before == 0)
          CHECK(v.size() ==
                2 + (key.empty() ? 0 : 1 + key.size()) + payload.size());
      }
    }
  }
}

TEST_CASE("malformed message values are rejected") {
  std::string_view k, p;
  CHECK_FALSE(DecodeMessageValue("", &k, &p));
  CHECK_FALSE(DecodeMessageValue(std::string("\x01", 1), &k, &p));
  CHECK_FALSE(DecodeMessageValue(std::string("\x02\x00", 2), &k, &p));
  CHECK_FALSE(DecodeMessageValue(std::string("\x01\x02", 2), &k, &p));
  CHECK_FALSE(DecodeMessageValue(std::string("\x01\x04", 2), &k, &p));
  // A not-before of 0 is never written.
  CHECK_FALSE(DecodeMessageValue(std::string("\x01\x02\x00", 3), &k, &p));
  // Key flag with a key length running past the end.
  CHECK_FALSE(DecodeMessageValue(std::string("\x01\x01\x05"
                                             "ab",
                                             5),
                                 &k, &p));
}

TEST_CASE("queue names are validated") {
  for (const char* good :
       {"a", "Z", "0", "crawl.frontier", "q_1-2", "a.b.c-d_e"}) {
    INFO(good);
    HQ_REQUIRE_OK(ValidateQueueName(good));
  }
  HQ_REQUIRE_OK(ValidateQueueName(std::string(kMaxQueueNameBytes, 'q')));
  for (const std::string& bad :
       {std::string(), std::string(kMaxQueueNameBytes + 1, 'q'),
        std::string(".hidden"), std::string("-x"), std::string("_x"),
        std::string("has space"), std::string("slash/name"),
        std::string("nul\0byte", 8), std::string("caf\xc3\xa9")}) {
    INFO(bad);
    const absl::Status s = ValidateQueueName(bad);
    CHECK(absl::IsInvalidArgument(s));
  }
}

TEST_CASE("queue options outside their limits are InvalidArgument") {
  auto bad = [](auto mutate) {
    QueueOptions o;
    mutate(o);
    return absl::IsInvalidArgument(ValidateQueueOptions(o));
  };
  HQ_REQUIRE_OK(ValidateQueueOptions(QueueOptions{}));
  CHECK(bad([](QueueOptions& o) { o.partitions = 0; }));
  CHECK(bad([](QueueOptions& o) { o.partitions = 65536; }));
  CHECK(bad([](QueueOptions& o) { o.priorities = 0; }));
  CHECK(bad([](QueueOptions& o) { o.priorities = 257; }));
  CHECK(bad([](QueueOptions& o) { o.ttl = absl::ZeroDuration(); }));
  CHECK(bad([](QueueOptions& o) { o.ttl = absl::Microseconds(1500); }));
  CHECK(bad([](QueueOptions& o) { o.ttl = -absl::Seconds(1); }));
  CHECK(bad([](QueueOptions& o) { o.layout = static_cast<Layout>(0); }));
  CHECK(bad([](QueueOptions& o) { o.max_payload_bytes = 0; }));
  CHECK(bad([](QueueOptions& o) { o.max_payload_bytes = (64u << 20) + 1; }));
}

// Found by test/fuzz/records_fuzz.cc: the decoders accepted values the
// format forbids (topic and partition lists out of order or repeated, a
// dead letter's reason outside DeadLetterReason, a topic over the limit).
// A group's unsorted topic list made the stored filter never match the
// options; a subscription's broke the binary searches of its scope.
TEST_CASE("fuzz: records with lists out of order or repeated are DataLoss") {
  GroupRecord g;
  g.id = 3;
  g.topics = {"a", "b"};
  GroupRecord g_out;
  HQ_REQUIRE_OK(DecodeGroupRecord(EncodeGroupRecord(g), &g_out));
  CHECK(g_out.topics == g.topics);
  g.topics = GENERATE(std::vector<std::string>{"b", "a"},
                      std::vector<std::string>{"a", "a"});
  CHECK(absl::IsDataLoss(DecodeGroupRecord(EncodeGroupRecord(g), &g_out)));

  SubRecord r;
  r.id = 4;
  r.partitions = {0, 5};
  r.topics = {"x", "y"};
  SubRecord r_out;
  HQ_REQUIRE_OK(DecodeSubRecord(EncodeSubRecord(r), &r_out));
  CHECK(r_out.partitions == r.partitions);
  CHECK(r_out.topics == r.topics);
  SubRecord bad = r;
  bad.partitions = {5, 0};
  CHECK(absl::IsDataLoss(DecodeSubRecord(EncodeSubRecord(bad), &r_out)));
  bad.partitions = {5, 5};
  CHECK(absl::IsDataLoss(DecodeSubRecord(EncodeSubRecord(bad), &r_out)));
  bad = r;
  bad.topics = {"y", "x"};
  CHECK(absl::IsDataLoss(DecodeSubRecord(EncodeSubRecord(bad), &r_out)));
  bad.topics = {"x", "x"};
  CHECK(absl::IsDataLoss(DecodeSubRecord(EncodeSubRecord(bad), &r_out)));
}

TEST_CASE("fuzz: dead values with an unknown reason or a long topic fail") {
  DeadValue d;
  d.original_partition = 1;
  d.original_id = MessageId{1767225600000, 2};
  d.priority = 3;
  d.attempts = 4;
  d.dead_ms = 1767225600500;
  d.topic.push_back('t');  // Not = "t": GCC 12 -Wrestrict false positive.
  DeadValue out;
  for (DeadLetterReason r :
       {DeadLetterReason::kLeaseExpired, DeadLetterReason::kReleased,
        DeadLetterReason::kInterrupted, DeadLetterReason::kRejected}) {
    d.reason = static_cast<uint8_t>(r);
    REQUIRE(DecodeDead(EncodeDead(d), &out));
    CHECK(out.reason == d.reason);
  }
  d.reason = GENERATE(0, 5, 255);
  CHECK_FALSE(DecodeDead(EncodeDead(d), &out));
  d.reason = 1;
  d.topic = std::string(kMaxTopicBytes, 'x');
  CHECK(DecodeDead(EncodeDead(d), &out));
  d.topic = std::string(kMaxTopicBytes + 1, 'x');
  CHECK_FALSE(DecodeDead(EncodeDead(d), &out));
}

}  // namespace
}  // namespace hq::format

namespace hq::format {
namespace {

// A file of the source tree (HQ_SOURCE_ROOT, set by meson test).
std::string SourceFile(const std::string& path) {
  const char* root = std::getenv("HQ_SOURCE_ROOT");
  INFO("environment variable HQ_SOURCE_ROOT");
  REQUIRE(root != nullptr);
  std::ifstream in(std::string(root) + "/" + path);
  INFO(path);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_CASE("source records round-trip with and without walk floors") {
  SourceValue v;
  v.priorities.resize(2);
  v.priorities[1].next_seq = 7;
  v.priorities[1].walking = true;
  v.priorities[1].walk_from = std::string("\x00\x01\xfe", 3);
  SourceValue back;
  // Format 9's record: no floors, its first byte 1.
  std::string old = EncodeSource(v);
  CHECK(old[0] == 1);
  REQUIRE(DecodeSource(old, &back));
  CHECK(back.floors.empty());
  CHECK(back.priorities[1].next_seq == 7);
  CHECK(back.priorities[1].walk_from == v.priorities[1].walk_from);
  v.floors = {MessageId{5, 1}, MessageId::Min(),
              MessageId{(1ull << 48) - 1, 65535}};
  const std::string with = EncodeSource(v);
  CHECK(with[0] == 2);
  REQUIRE(DecodeSource(with, &back));
  CHECK(back.floors == v.floors);
  CHECK(back.priorities[1].walking);
  // Truncated anywhere, a floor count of 0, or bytes after: malformed.
  for (size_t n = 0; n < with.size(); ++n) {
    CHECK_FALSE(DecodeSource(with.substr(0, n), &back));
  }
  CHECK_FALSE(DecodeSource(with + "x", &back));
  std::string zero = old;
  zero[0] = 2;
  zero.push_back('\0');
  CHECK_FALSE(DecodeSource(zero, &back));
  std::string v3 = with;
  v3[0] = 3;
  CHECK_FALSE(DecodeSource(v3, &back));
}

TEST_CASE("doc/format.md and lib/format name the same record tags") {
  const std::string doc = SourceFile("doc/format.md");
  const std::string header = SourceFile("lib/format/format.h");
  // The tags format.h defines, as "0x0a".
  std::set<std::string> defined;
  const std::regex constant(
      R"re(inline constexpr char k\w+Tag = (0x[0-9a-f]{2});)re");
  for (std::sregex_iterator m(header.begin(), header.end(), constant), e;
       m != e; ++m) {
    defined.insert((*m)[1]);
  }
  // The rows of doc/format.md's table of tags: "| `0x0a` | ... |".
  std::set<std::string> documented;
  const std::regex row(R"re(\n\| `(0x[0-9a-f]{2})` \|)re");
  for (std::sregex_iterator m(doc.begin(), doc.end(), row), e; m != e; ++m) {
    documented.insert((*m)[1]);
  }
  CHECK(defined.size() >= 14);
  CHECK(defined == documented);
  // Each tag also opens a key in the grammar: "key := 0x0a ...".
  for (const std::string& tag : defined) {
    INFO(tag);
    CHECK(doc.find(":= " + tag + " ") != std::string::npos);
  }
}

TEST_CASE("every doc/format.md section lib/ names exists") {
  const std::string doc = SourceFile("doc/format.md");
  std::set<std::string> sections;
  const std::regex heading(R"re(\n## ([^\n]+))re");
  for (std::sregex_iterator m(doc.begin(), doc.end(), heading), e; m != e;
       ++m) {
    sections.insert((*m)[1]);
  }
  const std::regex named(R"re(doc/format\.md, "([^"]+)")re");
  int references = 0;
  for (const char* file :
       {"lib/format/format.h", "lib/format/layout_codec.h"}) {
    const std::string text = SourceFile(file);
    for (std::sregex_iterator m(text.begin(), text.end(), named), e; m != e;
         ++m) {
      INFO(file << " names \"" << (*m)[1] << "\"");
      CHECK(sections.contains((*m)[1]));
      ++references;
    }
  }
  CHECK(references >= 12);
}

}  // namespace
}  // namespace hq::format
