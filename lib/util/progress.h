// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// One phase of a long call's progress (hq::Progress, hq/db.h).

#ifndef HQ_LIB_UTIL_PROGRESS_H_
#define HQ_LIB_UTIL_PROGRESS_H_

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "hq/db.h"

namespace hq {

// Tells `callback` (if not empty) of one phase: done 0 at construction,
// then each Add or Set, and done == total at Finish. `phase` must outlive
// it (a literal). `done` is kept at or below `total`. Not thread-safe.
class PhaseProgress {
 public:
  PhaseProgress(const ProgressCallback& callback, std::string_view phase,
                uint64_t total)
      : callback_(callback), progress_{.phase = phase, .total = total} {
    Call();
  }
  PhaseProgress(const PhaseProgress&) = delete;
  PhaseProgress& operator=(const PhaseProgress&) = delete;

  void Add(uint64_t bytes) { Set(progress_.done + bytes); }
  void Set(uint64_t done) {
    progress_.done = std::min(done, progress_.total);
    Call();
  }
  void Finish() { Set(progress_.total); }

 private:
  void Call() {
    if (callback_) callback_(progress_);
  }

  const ProgressCallback& callback_;
  Progress progress_;
};

}  // namespace hq

#endif  // HQ_LIB_UTIL_PROGRESS_H_
