// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Byte encodings used by every hq key and value.
//
// Fixed-width integers are big-endian so that, inside keys, byte order is
// numeric order. Varints are LevelDB's (7 bits a byte, low bits first) and
// are only used in values, where order does not matter.
// Put* append to a string; Get* consume from the front of a string_view and
// return false (leaving `in` unspecified) when it is too short or malformed.

#ifndef HQ_LIB_FORMAT_CODING_H_
#define HQ_LIB_FORMAT_CODING_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "hq/export.h"

namespace hq::coding {

// Writes a big-endian integer to the first bytes of `p` (no checks).
inline void EncodeFixed16(char* p, uint16_t v) {
  p[0] = static_cast<char>(v >> 8);
  p[1] = static_cast<char>(v);
}
inline void EncodeFixed32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}
inline void EncodeFixed64(char* p, uint64_t v) {
  EncodeFixed32(p, static_cast<uint32_t>(v >> 32));
  EncodeFixed32(p + 4, static_cast<uint32_t>(v));
}

// Inline: they are on the write path of every message.
inline void PutFixed8(std::string* dst, uint8_t v) {
  dst->push_back(static_cast<char>(v));
}
inline void PutFixed16(std::string* dst, uint16_t v) {
  char buf[2];
  EncodeFixed16(buf, v);
  dst->append(buf, 2);
}
inline void PutFixed32(std::string* dst, uint32_t v) {
  char buf[4];
  EncodeFixed32(buf, v);
  dst->append(buf, 4);
}
inline void PutFixed64(std::string* dst, uint64_t v) {
  char buf[8];
  EncodeFixed64(buf, v);
  dst->append(buf, 8);
}
// The out-of-line codecs are exported: libhq_fleet's records use them.
HQ_EXPORT void PutVarint32(std::string* dst, uint32_t v);
HQ_EXPORT void PutVarint64(std::string* dst, uint64_t v);
// varint32 length, then the bytes.
HQ_EXPORT void PutLengthPrefixed(std::string* dst, std::string_view v);

HQ_EXPORT bool GetVarint32(std::string_view* in, uint32_t* v);
HQ_EXPORT bool GetVarint64(std::string_view* in, uint64_t* v);
HQ_EXPORT bool GetLengthPrefixed(std::string_view* in, std::string_view* v);

// Decodes a big-endian integer from the first bytes of `p` (no checks).
inline uint16_t DecodeFixed16(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<uint16_t>((u[0] << 8) | u[1]);
}
inline uint32_t DecodeFixed32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) |
         (uint32_t{u[2]} << 8) | uint32_t{u[3]};
}
inline uint64_t DecodeFixed64(const char* p) {
  return (uint64_t{DecodeFixed32(p)} << 32) | DecodeFixed32(p + 4);
}

inline bool GetFixed8(std::string_view* in, uint8_t* v) {
  if (in->empty()) return false;
  *v = static_cast<uint8_t>((*in)[0]);
  in->remove_prefix(1);
  return true;
}
inline bool GetFixed16(std::string_view* in, uint16_t* v) {
  if (in->size() < 2) return false;
  *v = DecodeFixed16(in->data());
  in->remove_prefix(2);
  return true;
}
inline bool GetFixed32(std::string_view* in, uint32_t* v) {
  if (in->size() < 4) return false;
  *v = DecodeFixed32(in->data());
  in->remove_prefix(4);
  return true;
}
inline bool GetFixed64(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  *v = DecodeFixed64(in->data());
  in->remove_prefix(8);
  return true;
}

// The smallest string greater than every string that starts with `prefix`,
// or "" if there is none (prefix empty or all 0xff bytes).
std::string PrefixSuccessor(std::string_view prefix);

}  // namespace hq::coding

#endif  // HQ_LIB_FORMAT_CODING_H_
