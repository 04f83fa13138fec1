// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "tools/output.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"

namespace hq::tool {

void Table::Print(FILE* out) const {
  std::vector<size_t> width(header_.size(), 0);
  auto measure = [&](const std::vector<std::string>& row) {
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      width[i] = std::max(width[i], row[i].size());
    }
  };
  measure(header_);
  for (const auto& row : rows_) measure(row);
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t i = 0; i < row.size() && i < width.size(); ++i) {
      if (i > 0) line.append("  ");
      line.append(row[i]);
      if (i + 1 < row.size()) line.append(width[i] - row[i].size(), ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::fprintf(out, "%s\n", line.c_str());
  };
  print(header_);
  for (const auto& row : rows_) print(row);
}

bool IsUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      n = 1;
      cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2;
      cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3;
      cp = c & 0x07;
    } else {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF.
    if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) ||
        (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += n + 1;
  }
  return true;
}

void Json::Separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_value_.empty()) {
    if (has_value_.back()) out_.push_back(',');
    has_value_.back() = true;
  }
}

Json& Json::BeginObject() {
  Separate();
  out_.push_back('{');
  has_value_.push_back(false);
  return *this;
}

Json& Json::EndObject() {
  out_.push_back('}');
  has_value_.pop_back();
  return *this;
}

Json& Json::BeginArray() {
  Separate();
  out_.push_back('[');
  has_value_.push_back(false);
  return *this;
}

Json& Json::EndArray() {
  out_.push_back(']');
  has_value_.pop_back();
  return *this;
}

Json& Json::Key(std::string_view key) {
  String(key);
  out_.push_back(':');
  after_key_ = true;
  return *this;
}

Json& Json::String(std::string_view s) {
  Separate();
  out_.push_back('"');
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out_.append("\\\"");
        break;
      case '\\':
        out_.append("\\\\");
        break;
      case '\n':
        out_.append("\\n");
        break;
      case '\r':
        out_.append("\\r");
        break;
      case '\t':
        out_.append("\\t");
        break;
      case '\b':
        out_.append("\\b");
        break;
      case '\f':
        out_.append("\\f");
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          out_.append(absl::StrFormat("\\u%04x", c));
        } else {
          out_.push_back(ch);
        }
    }
  }
  out_.push_back('"');
  return *this;
}

Json& Json::Int(int64_t v) {
  Separate();
  out_.append(std::to_string(v));
  return *this;
}

Json& Json::Double(double v) {
  if (!std::isfinite(v)) return Null();
  Separate();
  out_.append(absl::StrFormat("%.3f", v));
  return *this;
}

Json& Json::Uint(uint64_t v) {
  Separate();
  out_.append(std::to_string(v));
  return *this;
}

Json& Json::Bool(bool v) {
  Separate();
  out_.append(v ? "true" : "false");
  return *this;
}

Json& Json::Null() {
  Separate();
  out_.append("null");
  return *this;
}

Json& Json::Bytes(std::string_view key, std::string_view bytes) {
  if (IsUtf8(bytes)) return Key(key).String(bytes);
  const std::string b64 =
      absl::Base64Escape(absl::string_view(bytes.data(), bytes.size()));
  return Key(std::string(key) + "_base64").String(b64);
}

std::string Printable(std::string_view bytes, size_t width) {
  std::string s =
      absl::CHexEscape(absl::string_view(bytes.data(), bytes.size()));
  if (width > 3 && s.size() > width) {
    s.resize(width - 3);
    s.append("...");
  }
  return s;
}

std::string HumanBytes(uint64_t bytes) {
  if (bytes < 1024) return absl::StrFormat("%d B", bytes);
  const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", v, units[u]);
}

}  // namespace hq::tool
