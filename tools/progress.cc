// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "tools/progress.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/flags.h"
#include "tools/output.h"

namespace hq::tool {
namespace {

// "1:05" or "1:02:05".
std::string Clock(absl::Duration d) {
  const int64_t s = absl::ToInt64Seconds(d);
  if (s >= 3600) {
    return absl::StrFormat("%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
  }
  return absl::StrFormat("%d:%02d", s / 60, s % 60);
}

class Drawer {
 public:
  explicit Drawer(const char* command) : command_(command) {}

  void operator()(const Progress& p) {
    if (p.total == 0) return;  // Nothing to do in this phase.
    const absl::Time now = absl::Now();
    const bool end = p.done >= p.total;
    // A phase starts anew (Repair verifies more than once) at done 0.
    if (p.phase != phase_ || (ended_ && p.done == 0)) {
      phase_ = std::string(p.phase);
      phase_start_ = now;
      ended_ = false;
    } else if (ended_ || (!end && now - drawn_ < absl::Milliseconds(100))) {
      return;
    }
    drawn_ = now;
    ended_ = end;
    const double secs = absl::ToDoubleSeconds(now - phase_start_);
    const double rate = secs > 0 ? static_cast<double>(p.done) / secs : 0;
    std::string line = absl::StrFormat(
        "hq %s: %s %s of %s (%d%%)", command_, phase_, HumanBytes(p.done),
        HumanBytes(p.total),
        p.total == 0 ? 100 : static_cast<int>(p.done * 100 / p.total));
    if (rate > 0) {
      absl::StrAppendFormat(&line, ", %s/s",
                            HumanBytes(static_cast<uint64_t>(rate)));
      if (!end) {
        absl::StrAppend(
            &line, ", ",
            Clock(absl::Seconds(static_cast<double>(p.total - p.done) / rate)),
            " left");
      }
    }
    // \r and a clear to the end of the line: the line is rewritten.
    std::fprintf(stderr, "\r%s\033[K%s", line.c_str(), end ? "\n" : "");
    std::fflush(stderr);
  }

 private:
  const char* const command_;
  std::string phase_;
  absl::Time phase_start_, drawn_;
  bool ended_ = false;
};

}  // namespace

ProgressCallback TerminalProgress(const char* command) {
  if (absl::GetFlag(FLAGS_json) || isatty(STDERR_FILENO) != 1) return {};
  auto drawer = std::make_shared<Drawer>(command);
  return [drawer](const Progress& p) { (*drawer)(p); };
}

}  // namespace hq::tool
