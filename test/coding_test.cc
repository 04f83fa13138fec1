// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/format/coding.h"

#include <random>
#include <vector>

#include "test/test_util.h"

namespace hq::coding {
namespace {

TEST_CASE("fixed-width integers round-trip and sort numerically") {
  std::mt19937_64 rng(42);
  std::vector<uint64_t> values = {
      0,       1,           0xff,           0x100,     0xffff,
      0x10000, 0xffffffffu, 0x100000000ull, UINT64_MAX};
  for (int i = 0; i < 10000; ++i) values.push_back(rng() >> (rng() % 64));

  for (uint64_t v : values) {
    std::string s;
    PutFixed64(&s, v);
    PutFixed32(&s, static_cast<uint32_t>(v));
    PutFixed16(&s, static_cast<uint16_t>(v));
    PutFixed8(&s, static_cast<uint8_t>(v));
    REQUIRE(s.size() == 15);
    std::string_view in = s;
    uint64_t a;
    uint32_t b;
    uint16_t c;
    uint8_t d;
    REQUIRE(GetFixed64(&in, &a));
    REQUIRE(GetFixed32(&in, &b));
    REQUIRE(GetFixed16(&in, &c));
    REQUIRE(GetFixed8(&in, &d));
    REQUIRE(in.empty());
    CHECK(a == v);
    CHECK(b == static_cast<uint32_t>(v));
    CHECK(c == static_cast<uint16_t>(v));
    CHECK(d == static_cast<uint8_t>(v));
  }
  // Byte order is numeric order: the property keys depend on.
  for (size_t i = 1; i < values.size(); ++i) {
    std::string x, y;
    PutFixed64(&x, values[i - 1]);
    PutFixed64(&y, values[i]);
    CHECK((x < y) == (values[i - 1] < values[i]));
    std::string x16, y16;
    PutFixed16(&x16, static_cast<uint16_t>(values[i - 1]));
    PutFixed16(&y16, static_cast<uint16_t>(values[i]));
    CHECK((x16 < y16) == (static_cast<uint16_t>(values[i - 1]) <
                          static_cast<uint16_t>(values[i])));
  }
}

TEST_CASE("every 16-bit value round-trips and sorts") {
  std::string prev;
  for (uint32_t v = 0; v <= 0xffff; ++v) {
    std::string s;
    PutFixed16(&s, static_cast<uint16_t>(v));
    std::string_view in = s;
    uint16_t out;
    REQUIRE(GetFixed16(&in, &out));
    REQUIRE(out == v);
    if (v > 0) REQUIRE(prev < s);
    prev = s;
  }
}

TEST_CASE("varints round-trip at every length boundary") {
  std::vector<uint64_t> values;
  for (int shift = 0; shift < 64; ++shift) {
    const uint64_t p = uint64_t{1} << shift;
    values.insert(values.end(), {p - 1, p, p + 1});
  }
  values.push_back(UINT64_MAX);
  std::string s;
  for (uint64_t v : values) PutVarint64(&s, v);
  std::string_view in = s;
  for (uint64_t v : values) {
    uint64_t out;
    REQUIRE(GetVarint64(&in, &out));
    REQUIRE(out == v);
  }
  REQUIRE(in.empty());

  std::string s32;
  PutVarint32(&s32, UINT32_MAX);
  std::string_view in32 = s32;
  uint32_t out32;
  REQUIRE(GetVarint32(&in32, &out32));
  CHECK(out32 == UINT32_MAX);
}

TEST_CASE("truncated and malformed input is rejected") {
  uint64_t v64;
  uint32_t v32;
  uint16_t v16;
  uint8_t v8;
  std::string_view empty;
  CHECK_FALSE(GetFixed8(&empty, &v8));
  std::string_view three("abc", 3);
  CHECK_FALSE(GetFixed32(&three, &v32));
  std::string_view one("a", 1);
  CHECK_FALSE(GetFixed16(&one, &v16));
  std::string_view seven("abcdefg", 7);
  CHECK_FALSE(GetFixed64(&seven, &v64));

  std::string unterminated("\x80\x80", 2);
  std::string_view in = unterminated;
  CHECK_FALSE(GetVarint64(&in, &v64));

  std::string too_long(11, '\x80');
  in = too_long;
  CHECK_FALSE(GetVarint64(&in, &v64));

  std::string over32;
  PutVarint64(&over32, uint64_t{1} << 32);
  in = over32;
  CHECK_FALSE(GetVarint32(&in, &v32));

  std::string short_body;
  PutVarint32(&short_body, 10);
  short_body += "abc";
  in = short_body;
  std::string_view body;
  CHECK_FALSE(GetLengthPrefixed(&in, &body));
}

TEST_CASE("PrefixSuccessor bounds every string with the prefix") {
  CHECK(PrefixSuccessor("abc") == "abd");
  CHECK(PrefixSuccessor(std::string("a\xff\xff", 3)) == "b");
  CHECK(PrefixSuccessor(std::string("\xff\xff", 2)).empty());
  CHECK(PrefixSuccessor("").empty());
  const std::string prefix("k\x01\xff", 3);
  const std::string succ = PrefixSuccessor(prefix);
  for (const std::string& s :
       {prefix, prefix + '\0', prefix + "\xff\xff\xff", prefix + "zzz"}) {
    CHECK(s < succ);
  }
  CHECK_FALSE(std::string("k\x02", 2) < succ);
}

}  // namespace
}  // namespace hq::coding
