// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/format/log_check.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "lib/format/coding.h"
#include "lib/util/crc32c.h"

namespace hq::log_check {
namespace {

// DO NOT CHANGE: LevelDB's record types.
enum Type : uint8_t {
  kZero = 0,
  kFull = 1,
  kFirst = 2,
  kMiddle = 3,
  kLast = 4
};

uint32_t Little32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t{u[0]} | uint32_t{u[1]} << 8 | uint32_t{u[2]} << 16 |
         uint32_t{u[3]} << 24;
}

// One physical record at `pos`, or why there is none.
struct Physical {
  enum Kind { kRecord, kTrailer, kCutShort, kBad } kind;
  uint8_t type = 0;
  uint64_t length = 0;            // Of the data.
  std::string bad;                // kBad: what is wrong.
  bool length_plausible = false;  // kBad: the header's length fits.
};

Physical ReadPhysical(std::string_view data, uint64_t pos) {
  const uint64_t block_left = kBlockSize - pos % kBlockSize;
  if (block_left < kHeaderSize) return {Physical::kTrailer};
  if (data.size() - pos < kHeaderSize) return {Physical::kCutShort};
  const char* h = data.data() + pos;
  Physical p{Physical::kBad};
  p.length = static_cast<uint8_t>(h[4]) | static_cast<uint8_t>(h[5]) << 8;
  p.type = static_cast<uint8_t>(h[6]);
  if (p.type == kZero && p.length == 0) {
    p.bad = "zeroed record header";
    return p;
  }
  if (kHeaderSize + p.length > block_left) {
    p.bad = absl::StrCat("record length ", p.length, " crosses its block");
    return p;
  }
  if (pos + kHeaderSize + p.length > data.size()) {
    return {Physical::kCutShort};
  }
  p.length_plausible = true;
  const uint32_t expected = crc32c::Unmask(Little32(h));
  if (crc32c::Extend(0, h + 6, 1 + p.length) != expected) {
    p.bad = "checksum mismatch";
    return p;
  }
  if (p.type < kFull || p.type > kLast) {
    p.bad = absl::StrCat("unknown record type ", p.type);
    return p;
  }
  p.kind = Physical::kRecord;
  return p;
}

// Counts the logical records that start (FULL or FIRST) in an unbroken run
// of intact physical records from `pos`; sets *end where the run stopped.
int64_t CountRun(std::string_view data, uint64_t pos, uint64_t* end) {
  int64_t n = 0;
  while (pos < data.size()) {
    const Physical p = ReadPhysical(data, pos);
    if (p.kind == Physical::kTrailer) {
      pos += kBlockSize - pos % kBlockSize;
      continue;
    }
    if (p.kind != Physical::kRecord) break;
    if (p.type == kFull || p.type == kFirst) ++n;
    pos += kHeaderSize + p.length;
  }
  *end = std::min<uint64_t>(pos, data.size());
  return n;
}

// Intact logical records after a damaged record at `pos`: resynchronizes
// right after it (if its length could be trusted) and at every later block.
int64_t IntactAfter(std::string_view data, uint64_t pos, const Physical& bad) {
  int64_t n = 0;
  uint64_t next = bad.length_plausible ? pos + kHeaderSize + bad.length
                                       : (pos / kBlockSize + 1) * kBlockSize;
  while (next < data.size()) {
    uint64_t end;
    n += CountRun(data, next, &end);
    next = std::max(end, next) / kBlockSize * kBlockSize + kBlockSize;
  }
  return n;
}

}  // namespace

LogCheck Check(std::string_view data,
               const std::function<void(std::string_view)>& record) {
  LogCheck c;
  uint64_t pos = 0;
  bool in_fragment = false;
  uint64_t fragment_start = 0;
  std::string assembled;
  auto damaged = [&](uint64_t at, const Physical& p, std::string what) {
    c.state = LogCheck::State::kDamaged;
    c.damage_offset = in_fragment ? fragment_start : at;
    c.damage = std::move(what);
    c.intact_after = IntactAfter(data, at, p);
    return c;
  };
  while (pos < data.size()) {
    const Physical p = ReadPhysical(data, pos);
    if (p.kind == Physical::kTrailer) {
      pos += kBlockSize - pos % kBlockSize;
      continue;
    }
    if (p.kind == Physical::kCutShort) break;
    if (p.kind == Physical::kBad) return damaged(pos, p, p.bad);
    const bool starts = p.type == kFull || p.type == kFirst;
    if (starts == in_fragment) {
      return damaged(pos, p,
                     in_fragment ? "a fragmented record without its end"
                                 : "a record fragment without its start");
    }
    const std::string_view body = data.substr(pos + kHeaderSize, p.length);
    if (p.type == kFirst) {
      in_fragment = true;
      fragment_start = pos;
      assembled.assign(body.data(), body.size());
    } else if (p.type == kMiddle) {
      assembled.append(body.data(), body.size());
    }
    pos += kHeaderSize + p.length;
    if (p.type == kFull || p.type == kLast) {
      if (record) {
        if (p.type == kLast) assembled.append(body.data(), body.size());
        record(p.type == kFull ? body : std::string_view(assembled));
      }
      in_fragment = false;
      ++c.records;
      c.intact_end = pos;
    }
  }
  if (pos < data.size() || in_fragment) c.state = LogCheck::State::kShortTail;
  return c;
}

}  // namespace hq::log_check
