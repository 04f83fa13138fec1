// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Output of the hq tool: aligned text tables for people and a small JSON
// writer for scripts.

#ifndef HQ_TOOLS_OUTPUT_H_
#define HQ_TOOLS_OUTPUT_H_

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace hq::tool {

// Rows of cells printed as columns separated by two spaces, each as wide
// as its widest cell, with a header row.
class Table {
 public:
  explicit Table(std::vector<std::string> header)
      : header_(std::move(header)) {}
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  bool empty() const { return rows_.empty(); }
  void Print(FILE* out) const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

// Whether `s` is valid UTF-8 (so that it can go into a JSON string as is).
bool IsUtf8(std::string_view s);

// Builds one JSON document. Strings must be valid UTF-8 (IsUtf8); control
// characters, '"' and '\' are escaped. Commas are placed automatically.
class Json {
 public:
  Json& BeginObject();
  Json& EndObject();
  Json& BeginArray();
  Json& EndArray();
  // The name of the next value in an object.
  Json& Key(std::string_view key);
  Json& String(std::string_view s);
  Json& Int(int64_t v);
  Json& Uint(uint64_t v);
  // To three decimals; null if not finite.
  Json& Double(double v);
  Json& Bool(bool v);
  Json& Null();
  // Bytes of any kind: a string `key` if valid UTF-8, else `key`_base64.
  Json& Bytes(std::string_view key, std::string_view bytes);

  const std::string& str() const { return out_; }

 private:
  void Separate();
  std::string out_;
  // Per open container: whether a value was written in it.
  std::vector<bool> has_value_;
  bool after_key_ = false;
};

// Text of arbitrary bytes for a table: C escapes for anything not
// printable ASCII, cut to `width` characters (0: no limit) with "...".
std::string Printable(std::string_view bytes, size_t width = 0);

// "512 B", "1.5 KiB", "3.2 MiB", ...
std::string HumanBytes(uint64_t bytes);

}  // namespace hq::tool

#endif  // HQ_TOOLS_OUTPUT_H_
