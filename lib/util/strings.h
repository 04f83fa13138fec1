// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Debian's Abseil (20220623) has its own absl::string_view, distinct from
// std::string_view. hq's interfaces use std::string_view; convert at the
// boundary with Av().

#ifndef HQ_LIB_UTIL_STRINGS_H_
#define HQ_LIB_UTIL_STRINGS_H_

#include <string>
#include <string_view>

#include "absl/strings/escaping.h"
#include "absl/strings/string_view.h"

namespace hq {

inline absl::string_view Av(std::string_view s) {
  return absl::string_view(s.data(), s.size());
}

// Printable form of arbitrary bytes, for error messages.
inline std::string Printable(std::string_view s) {
  return absl::CHexEscape(Av(s));
}

}  // namespace hq

#endif  // HQ_LIB_UTIL_STRINGS_H_
