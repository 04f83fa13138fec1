// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// CRC-32C (Castagnoli), the checksum of LevelDB's log records and table
// blocks (LevelDB's doc/log_format.md, doc/table_format.md), for hq's own
// checks of those files. Uses the SSE4.2 instruction where the CPU has it.

#ifndef HQ_LIB_UTIL_CRC32C_H_
#define HQ_LIB_UTIL_CRC32C_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace hq::crc32c {

// The CRC-32C of `data` appended to a stream whose CRC so far is `crc`
// (0 for an empty stream).
uint32_t Extend(uint32_t crc, const char* data, size_t n);

// The same, without the SSE4.2 instruction (for tests).
uint32_t TEST_ExtendPortable(uint32_t crc, const char* data, size_t n);

inline uint32_t Value(std::string_view data) {
  return Extend(0, data.data(), data.size());
}

// LevelDB stores CRCs masked, since a CRC of a string holding CRCs is weak.
// DO NOT CHANGE: LevelDB's on-disk formats use this mask.
inline constexpr uint32_t kMaskDelta = 0xa282ead8u;

inline uint32_t Mask(uint32_t crc) {
  return ((crc >> 15) | (crc << 17)) + kMaskDelta;
}

inline uint32_t Unmask(uint32_t masked) {
  const uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace hq::crc32c

#endif  // HQ_LIB_UTIL_CRC32C_H_
