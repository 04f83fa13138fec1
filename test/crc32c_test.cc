// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/util/crc32c.h"

#include <random>
#include <string>

#include "test/test_util.h"

namespace hq::crc32c {
namespace {

// RFC 3720 (iSCSI) B.4 test vectors, and the classic check value.
TEST_CASE("crc32c matches the standard test vectors") {
  std::string zeros(32, '\0'), ones(32, '\xff'), up(32, '\0'), down(32, '\0');
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<char>(i);
    down[i] = static_cast<char>(31 - i);
  }
  CHECK(Value(zeros) == 0x8a9136aau);
  CHECK(Value(ones) == 0x62a8ab43u);
  CHECK(Value(up) == 0x46dd794eu);
  CHECK(Value(down) == 0x113fdb5cu);
  CHECK(Value("123456789") == 0xe3069283u);
  CHECK(Value("") == 0u);
}

TEST_CASE("crc32c: the fast path equals the portable one, and extends") {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string data(rng() % 300, '\0');
    for (char& c : data) c = static_cast<char>(rng());
    const size_t cut = data.empty() ? 0 : rng() % data.size();
    const uint32_t whole = Value(data);
    REQUIRE(whole == TEST_ExtendPortable(0, data.data(), data.size()));
    REQUIRE(Extend(Value(data.substr(0, cut)), data.data() + cut,
                   data.size() - cut) == whole);
  }
}

TEST_CASE("crc32c masks round-trip and change the value") {
  for (uint32_t crc : {0u, 1u, 0x8a9136aau, 0xffffffffu}) {
    CHECK(Unmask(Mask(crc)) == crc);
    CHECK(Mask(crc) != crc);
    CHECK(Mask(Mask(crc)) != Mask(crc));
  }
}

}  // namespace
}  // namespace hq::crc32c
