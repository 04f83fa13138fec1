// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/format/coding.h"

namespace hq::coding {

void PutVarint64(std::string* dst, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  dst->append(buf, n);
}

void PutVarint32(std::string* dst, uint32_t v) { PutVarint64(dst, v); }

void PutLengthPrefixed(std::string* dst, std::string_view v) {
  PutVarint32(dst, static_cast<uint32_t>(v.size()));
  dst->append(v);
}

bool GetVarint64(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (size_t i = 0; i < in->size() && i < 10; ++i) {
    const uint64_t byte = static_cast<unsigned char>((*in)[i]);
    if (i == 9 && byte > 1) return false;  // Would overflow 64 bits.
    result |= (byte & 0x7f) << (7 * i);
    if ((byte & 0x80) == 0) {
      *v = result;
      in->remove_prefix(i + 1);
      return true;
    }
  }
  return false;
}

bool GetVarint32(std::string_view* in, uint32_t* v) {
  std::string_view copy = *in;
  uint64_t wide;
  if (!GetVarint64(&copy, &wide) || wide > UINT32_MAX) return false;
  *v = static_cast<uint32_t>(wide);
  *in = copy;
  return true;
}

bool GetLengthPrefixed(std::string_view* in, std::string_view* v) {
  uint32_t len;
  if (!GetVarint32(in, &len) || in->size() < len) return false;
  *v = in->substr(0, len);
  in->remove_prefix(len);
  return true;
}

std::string PrefixSuccessor(std::string_view prefix) {
  std::string s(prefix);
  while (!s.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(s.back());
    if (last != 0xff) {
      ++last;
      return s;
    }
    s.pop_back();
  }
  return s;
}

}  // namespace hq::coding
