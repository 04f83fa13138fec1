// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "hq/message.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "hq/layout.h"

namespace hq {

MessageId MessageId::AtTime(absl::Time t) {
  if (t <= absl::UnixEpoch()) return Min();
  const absl::Duration since = t - absl::UnixEpoch();
  const int64_t ms = absl::ToInt64Milliseconds(since);  // Saturates.
  if (static_cast<uint64_t>(ms) > kMaxMs) return Max();
  // Round up to the next whole millisecond.
  const uint64_t up = absl::Milliseconds(ms) < since ? ms + 1 : ms;
  if (up > kMaxMs) return Max();
  return MessageId{up, 0};
}

std::string MessageId::ToString() const { return absl::StrCat(ms, "-", seq); }

std::optional<MessageId> MessageId::Parse(std::string_view text) {
  const size_t dash = text.find('-');
  if (dash == std::string_view::npos) return std::nullopt;
  const std::string_view ms_text = text.substr(0, dash);
  const std::string_view seq_text = text.substr(dash + 1);
  auto digits = [](std::string_view s) {
    if (s.empty()) return false;
    for (char c : s) {
      if (c < '0' || c > '9') return false;
    }
    return true;
  };
  uint64_t ms;
  uint32_t seq;
  if (!digits(ms_text) || !digits(seq_text) ||
      !absl::SimpleAtoi(absl::string_view(ms_text.data(), ms_text.size()),
                        &ms) ||
      !absl::SimpleAtoi(absl::string_view(seq_text.data(), seq_text.size()),
                        &seq) ||
      ms > kMaxMs || seq > 0xffff) {
    return std::nullopt;
  }
  return MessageId{ms, static_cast<uint16_t>(seq)};
}

std::string_view LayoutName(Layout layout) {
  switch (layout) {
    case Layout::kTime:
      return "time";
    case Layout::kTopic:
      return "topic";
  }
  return "unknown";
}

std::optional<Layout> ParseLayout(std::string_view name) {
  if (name == "time") return Layout::kTime;
  if (name == "topic") return Layout::kTopic;
  return std::nullopt;
}

}  // namespace hq
