// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// SIGINT and SIGTERM read synchronously, as a request to stop. The signals
// stay blocked and a waiting loop takes them with sigtimedwait(2) as its
// sleep, so no handler runs asynchronously: a stop is seen within one sleep
// in every build, sanitized ones included (ThreadSanitizer delivers an
// asynchronous signal to a handler only at its next safe point, which a
// loop sleeping in uninstrumented code may never reach).

#ifndef HQ_TOOLS_STOP_SIGNALS_H_
#define HQ_TOOLS_STOP_SIGNALS_H_

#include "absl/time/time.h"

namespace hq::tool {

// Blocks SIGINT and SIGTERM in the calling thread; threads it starts later
// inherit the mask, so no thread takes them asynchronously. Call first in
// main, before any thread starts.
void BlockStopSignals();

// Gives SIGINT and SIGTERM their default action (ending the process) again
// in the calling thread, and so delivers one already pending. For commands
// that have no clean stop of their own.
void UnblockStopSignals();

// Sleeps for `d`, or less if SIGINT or SIGTERM arrives. Returns true once
// either has arrived (then at once on every later call). REQUIRES: the
// signals are blocked (BlockStopSignals) in every thread.
bool SleepUnlessStopped(absl::Duration d);

}  // namespace hq::tool

#endif  // HQ_TOOLS_STOP_SIGNALS_H_
