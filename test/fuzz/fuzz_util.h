// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Helpers shared by the fuzz targets (test/fuzz/*_fuzz.cc): a reader that
// turns the fuzzer's bytes into values, and a check that aborts (a crash for
// libFuzzer, a failed test for the replay runner) with a message.

#ifndef HQ_TEST_FUZZ_FUZZ_UTIL_H_
#define HQ_TEST_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

// Aborts with the failed condition (and printf-style context) on stderr.
#define FUZZ_CHECK(cond, ...)                                          \
  do {                                                                 \
    if (!(cond)) {                                                     \
      std::fprintf(stderr, "%s:%d: FUZZ_CHECK(%s) failed: ", __FILE__, \
                   __LINE__, #cond);                                   \
      ::hq::fuzz::PrintContext(__VA_ARGS__);                           \
      std::fprintf(stderr, "\n");                                      \
      std::abort();                                                    \
    }                                                                  \
  } while (0)

namespace hq::fuzz {

// FUZZ_CHECK's optional context: nothing, or a printf format and its values.
inline void PrintContext() {}
inline void PrintContext(const char* text) { std::fputs(text, stderr); }
template <typename A, typename... R>
void PrintContext(const char* format, A a, R... rest) {
  std::fprintf(stderr, format, a, rest...);
}

// Consumes the input from the front. Past the end every read returns 0 or
// "", so any input is a complete program.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}

  bool empty() const { return n_ == 0; }
  size_t size() const { return n_; }

  uint8_t U8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint16_t U16() { return static_cast<uint16_t>((U8() << 8) | U8()); }
  uint32_t U32() { return (uint32_t{U16()} << 16) | U16(); }
  uint64_t U64() { return (uint64_t{U32()} << 32) | U32(); }
  bool Bool() { return (U8() & 1) != 0; }
  // A value in [0, n). REQUIRES: n > 0.
  uint32_t Below(uint32_t n) { return n <= 256 ? U8() % n : U32() % n; }
  // Up to `max` bytes, the length taken from the input first.
  std::string Bytes(size_t max) {
    size_t len = U8() % (max + 1);
    if (len > n_) len = n_;
    std::string s(reinterpret_cast<const char*>(p_), len);
    p_ += len;
    n_ -= len;
    return s;
  }
  // Everything left.
  std::string_view Rest() {
    std::string_view s(reinterpret_cast<const char*>(p_), n_);
    p_ += n_;
    n_ = 0;
    return s;
  }

 private:
  const uint8_t* p_;
  size_t n_;
};

}  // namespace hq::fuzz

#endif  // HQ_TEST_FUZZ_FUZZ_UTIL_H_
