// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A library the Python fleet suites preload (LD_PRELOAD, test/fleet/
// meson.build): on a fatal signal (SIGABRT, SIGSEGV, ...) in any thread,
// absl's failure signal handler prints that thread's native stack to
// stderr, then the signal takes its course. Python's own faulthandler shows
// only Python frames, and none of the threads the fleet's C and C++
// libraries start; pytest installs it after this one, and it re-raises the
// signal to this handler once it has printed.

#include "absl/debugging/failure_signal_handler.h"
#include "absl/debugging/symbolize.h"

namespace {

__attribute__((constructor)) void InstallFailureTrace() {
  absl::InitializeSymbolizer("/proc/self/exe");
  absl::FailureSignalHandlerOptions options;
  options.call_previous_handler = true;
  absl::InstallFailureSignalHandler(options);
}

}  // namespace
