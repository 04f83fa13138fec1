// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Fuzz target: lib/format/coding.h, the encoding every key and value is made
// of. Decodes a stream of fixed-width integers, varints and length-prefixed
// strings (the input says which, byte by byte), checking that nothing reads
// past the input, that what decodes re-encodes to the same value (and bytes,
// unless a varint was overlong), and that Put/Get round-trip values built
// from the input; and PrefixSuccessor's promise.

#include <cstdint>
#include <string>
#include <string_view>

#include "lib/format/coding.h"
#include "test/fuzz/fuzz_util.h"

namespace hq::fuzz {
namespace {

using namespace hq::coding;  // NOLINT

void DecodeStream(Input& in) {
  const std::string ops = in.Bytes(32);
  std::string_view rest = in.Rest();
  for (char op : ops) {
    const std::string_view before = rest;
    std::string again;
    bool ok = false;
    switch (static_cast<uint8_t>(op) % 7) {
      case 0: {
        uint8_t v;
        if ((ok = GetFixed8(&rest, &v))) PutFixed8(&again, v);
        break;
      }
      case 1: {
        uint16_t v;
        if ((ok = GetFixed16(&rest, &v))) {
          PutFixed16(&again, v);
          FUZZ_CHECK(DecodeFixed16(before.data()) == v);
        }
        break;
      }
      case 2: {
        uint32_t v;
        if ((ok = GetFixed32(&rest, &v))) {
          PutFixed32(&again, v);
          FUZZ_CHECK(DecodeFixed32(before.data()) == v);
        }
        break;
      }
      case 3: {
        uint64_t v;
        if ((ok = GetFixed64(&rest, &v))) {
          PutFixed64(&again, v);
          FUZZ_CHECK(DecodeFixed64(before.data()) == v);
        }
        break;
      }
      case 4: {
        uint32_t v;
        if ((ok = GetVarint32(&rest, &v))) PutVarint32(&again, v);
        break;
      }
      case 5: {
        uint64_t v;
        if ((ok = GetVarint64(&rest, &v))) PutVarint64(&again, v);
        break;
      }
      case 6: {
        std::string_view v;
        if ((ok = GetLengthPrefixed(&rest, &v))) {
          FUZZ_CHECK(v.empty() ||
                     (v.data() >= before.data() &&
                      v.data() + v.size() <= before.data() + before.size()));
          PutLengthPrefixed(&again, v);
        }
        break;
      }
    }
    if (!ok) {
      // A failed Get leaves `in` unspecified: stop reading.
      return;
    }
    const size_t used = before.size() - rest.size();
    FUZZ_CHECK(rest.data() == before.data() + used, "consumed from the front");
    FUZZ_CHECK(again.size() <= used);
    if (again.size() == used) {
      FUZZ_CHECK(again == before.substr(0, used));
    } else {
      // Only an overlong varint (a byte 0x80 with nothing after it in the
      // value) re-encodes shorter.
      FUZZ_CHECK(static_cast<uint8_t>(op) % 7 >= 4);
    }
  }
}

void RoundTrip(Input& in) {
  std::string s;
  const uint8_t a = in.U8();
  const uint16_t b = in.U16();
  const uint32_t c = in.U32() >> (in.U8() % 32);
  const uint64_t d = in.U64() >> (in.U8() % 64);
  const std::string e = in.Bytes(300);
  PutFixed8(&s, a);
  PutFixed16(&s, b);
  PutFixed32(&s, c);
  PutFixed64(&s, d);
  PutVarint32(&s, c);
  PutVarint64(&s, d);
  PutLengthPrefixed(&s, e);
  std::string_view v = s;
  uint8_t a2;
  uint16_t b2;
  uint32_t c2, c3;
  uint64_t d2, d3;
  std::string_view e2;
  FUZZ_CHECK(GetFixed8(&v, &a2) && a2 == a);
  FUZZ_CHECK(GetFixed16(&v, &b2) && b2 == b);
  FUZZ_CHECK(GetFixed32(&v, &c2) && c2 == c);
  FUZZ_CHECK(GetFixed64(&v, &d2) && d2 == d);
  FUZZ_CHECK(GetVarint32(&v, &c3) && c3 == c);
  FUZZ_CHECK(GetVarint64(&v, &d3) && d3 == d);
  FUZZ_CHECK(GetLengthPrefixed(&v, &e2) && e2 == e);
  FUZZ_CHECK(v.empty());
  // Big-endian: byte order is numeric order.
  std::string x, y;
  const uint64_t d4 = in.U64();
  PutFixed64(&x, d);
  PutFixed64(&y, d4);
  FUZZ_CHECK((x < y) == (d < d4));
  // A varint64 too big for 32 bits is no varint32, and leaves `in` as is.
  std::string w;
  PutVarint64(&w, d);
  std::string_view wv = w;
  uint32_t narrow;
  if (d > UINT32_MAX) {
    FUZZ_CHECK(!GetVarint32(&wv, &narrow) && wv.size() == w.size());
  }
}

void Successor(Input& in) {
  const std::string prefix = in.Bytes(16);
  const std::string next = PrefixSuccessor(prefix);
  if (next.empty()) {
    FUZZ_CHECK(prefix.find_first_not_of('\xff') == std::string::npos);
    return;
  }
  FUZZ_CHECK(!next.starts_with(prefix) && prefix < next);
  // Greater than any string with the prefix; and the smallest such: the
  // prefix with its last non-0xff byte incremented and the rest dropped.
  const std::string with = prefix + std::string(in.Rest());
  FUZZ_CHECK(with < next);
  FUZZ_CHECK(next.size() <= prefix.size() &&
             prefix.compare(0, next.size() - 1, next, 0, next.size() - 1) ==
                 0 &&
             static_cast<uint8_t>(next.back()) ==
                 static_cast<uint8_t>(prefix[next.size() - 1]) + 1);
}

}  // namespace
}  // namespace hq::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hq::fuzz;  // NOLINT
  Input in(data, size);
  switch (in.U8() % 3) {
    case 0:
      DecodeStream(in);
      break;
    case 1:
      RoundTrip(in);
      break;
    case 2:
      Successor(in);
      break;
  }
  return 0;
}
