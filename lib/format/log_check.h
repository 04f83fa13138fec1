// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A reader of LevelDB's log format (LevelDB's doc/log_format.md), used by
// hq to check LevelDB's write-ahead logs before LevelDB replays them and to
// read its MANIFEST. Pure functions on bytes: no Env, no Db.
//
// The format: the file is a sequence of 32 KiB blocks; a block holds
// physical records "checksum:fixed32 length:fixed16 type:uint8 data",
// where checksum is the masked CRC-32C of type and data; a logical record
// is one FULL record, or FIRST, MIDDLE..., LAST; fewer than 7 bytes left in
// a block are a zero-filled trailer.

#ifndef HQ_LIB_FORMAT_LOG_CHECK_H_
#define HQ_LIB_FORMAT_LOG_CHECK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace hq::log_check {

// DO NOT CHANGE: LevelDB's log format.
inline constexpr size_t kBlockSize = 32768;
inline constexpr size_t kHeaderSize = 7;

// What a walk over a log found.
struct LogCheck {
  enum class State {
    kClean,      // Every byte is part of an intact record (or a trailer).
    kShortTail,  // Intact, then a record cut short by the end of the file:
                 // what a writer killed mid-write leaves. LevelDB ignores
                 // it silently.
    kDamaged,    // A damaged record at damage_offset (see below).
  };
  State state = State::kClean;
  // Logical records read intact before the damage (or in all).
  int64_t records = 0;
  // The end of the last intact logical record before the damage: the log
  // truncated here holds a prefix of the writes.
  uint64_t intact_end = 0;
  // kDamaged only: the first damaged byte, what is wrong there, and the
  // intact logical records found after it (by resynchronizing at later
  // records and blocks). intact_after == 0 means nothing can be read after
  // the damage: an unwritten or half-written tail (a power cut). Above 0,
  // the damage is a hole: later writes survive while an earlier one is
  // lost.
  uint64_t damage_offset = 0;
  std::string damage;
  int64_t intact_after = 0;
};

// Walks the log `data`. `record`, if set, receives each intact logical
// record before the damage, in order.
LogCheck Check(std::string_view data,
               const std::function<void(std::string_view)>& record = {});

}  // namespace hq::log_check

#endif  // HQ_LIB_FORMAT_LOG_CHECK_H_
