// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/format/manifest.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "lib/format/coding.h"
#include "lib/format/log_check.h"

namespace hq::manifest {
namespace {

// DO NOT CHANGE: LevelDB's VersionEdit tags.
enum Tag : uint32_t {
  kComparator = 1,
  kLogNumber = 2,
  kNextFileNumber = 3,
  kLastSequence = 4,
  kCompactPointer = 5,
  kDeletedFile = 6,
  kNewFile = 7,
  kPrevLogNumber = 9,
};

bool AllDigits(std::string_view s) {
  return !s.empty() && s.size() <= 19 &&
         std::all_of(s.begin(), s.end(),
                     [](char c) { return c >= '0' && c <= '9'; });
}

bool ParseNumber(std::string_view s, uint64_t* number) {
  if (!AllDigits(s)) return false;
  uint64_t n = 0;
  for (char c : s) n = n * 10 + static_cast<uint64_t>(c - '0');
  *number = n;
  return true;
}

// Applies one edit to `state`; false if it does not decode.
bool Apply(std::string_view edit, State* state) {
  while (!edit.empty()) {
    uint32_t tag, level;
    uint64_t number, bytes;
    std::string_view a, b;
    if (!coding::GetVarint32(&edit, &tag)) return false;
    switch (tag) {
      case kComparator:
        if (!coding::GetLengthPrefixed(&edit, &a)) return false;
        break;
      case kLogNumber:
        if (!coding::GetVarint64(&edit, &state->log_number)) return false;
        break;
      case kPrevLogNumber:
        if (!coding::GetVarint64(&edit, &state->prev_log_number)) return false;
        break;
      case kNextFileNumber:
        if (!coding::GetVarint64(&edit, &state->next_file_number)) {
          return false;
        }
        break;
      case kLastSequence:
        if (!coding::GetVarint64(&edit, &state->last_sequence)) return false;
        break;
      case kCompactPointer:
        if (!coding::GetVarint32(&edit, &level) ||
            !coding::GetLengthPrefixed(&edit, &a)) {
          return false;
        }
        break;
      case kDeletedFile:
        if (!coding::GetVarint32(&edit, &level) ||
            !coding::GetVarint64(&edit, &number)) {
          return false;
        }
        state->tables.erase(number);
        break;
      case kNewFile:
        if (!coding::GetVarint32(&edit, &level) ||
            !coding::GetVarint64(&edit, &number) ||
            !coding::GetVarint64(&edit, &bytes) ||
            !coding::GetLengthPrefixed(&edit, &a) ||
            !coding::GetLengthPrefixed(&edit, &b)) {
          return false;
        }
        state->tables[number] = {static_cast<int>(level), bytes, std::string(a),
                                 std::string(b)};
        break;
      default:
        return false;
    }
  }
  return true;
}

}  // namespace

bool Read(std::string_view data, State* out, std::string* error) {
  State state;
  bool decoded = true;
  const log_check::LogCheck c =
      log_check::Check(data, [&](std::string_view edit) {
        if (!decoded) return;
        decoded = Apply(edit, &state);
        if (decoded) ++state.edits;
      });
  if (c.state == log_check::LogCheck::State::kDamaged) {
    *error = absl::StrCat(c.damage, " at offset ", c.damage_offset);
    return false;
  }
  if (!decoded) {
    *error = absl::StrCat("version edit ", state.edits + 1, " does not decode");
    return false;
  }
  if (state.edits == 0) {
    *error = "no version edit";
    return false;
  }
  state.intact_end = c.intact_end;
  *out = std::move(state);
  return true;
}

std::string_view UserKey(std::string_view internal_key) {
  return internal_key.size() < 8
             ? internal_key
             : internal_key.substr(0, internal_key.size() - 8);
}

bool ParseTableName(std::string_view name, uint64_t* number) {
  for (std::string_view suffix : {".ldb", ".sst"}) {
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      return ParseNumber(name.substr(0, name.size() - suffix.size()), number);
    }
  }
  return false;
}

bool ParseLogName(std::string_view name, uint64_t* number) {
  return name.size() > 4 && name.ends_with(".log") &&
         ParseNumber(name.substr(0, name.size() - 4), number);
}

bool ParseManifestName(std::string_view name, uint64_t* number) {
  constexpr std::string_view kPrefix = "MANIFEST-";
  return name.starts_with(kPrefix) &&
         ParseNumber(name.substr(kPrefix.size()), number);
}

bool ParseCurrent(std::string_view current, std::string_view* manifest_name) {
  if (!current.ends_with('\n')) return false;
  current.remove_suffix(1);
  uint64_t number;
  if (!ParseManifestName(current, &number)) return false;
  *manifest_name = current;
  return true;
}

}  // namespace hq::manifest
