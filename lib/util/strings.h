// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Debian's Abseil (20220623) has its own absl::string_view, distinct from
// std::string_view. hq's interfaces use std::string_view; convert at the
// boundary with Av(), and LevelDB's Slices with View().

#ifndef HQ_LIB_UTIL_STRINGS_H_
#define HQ_LIB_UTIL_STRINGS_H_

#include <string>
#include <string_view>

#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"
#include "leveldb/slice.h"

namespace hq {

inline absl::string_view Av(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// The bytes of a LevelDB Slice (a key or value read), valid as long as it.
inline std::string_view View(const leveldb::Slice& s) {
  return std::string_view(s.data(), s.size());
}

// Printable form of arbitrary bytes, for error messages.
inline std::string Printable(std::string_view s) {
  return absl::CHexEscape(Av(s));
}

}  // namespace hq

#endif  // HQ_LIB_UTIL_STRINGS_H_
