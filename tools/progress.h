// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Progress of the tool's long commands (verify, backup, repair) on a
// terminal: one line on stderr, rewritten in place, with the phase, done
// of total, rate and time left, as rsync --info=progress2 shows it.

#ifndef HQ_TOOLS_PROGRESS_H_
#define HQ_TOOLS_PROGRESS_H_

#include "hq/db.h"

namespace hq::tool {

// A callback that draws `command`'s progress on stderr when stderr is a
// terminal and --json is not given; an empty callback otherwise (scripts
// and JSON get nothing of it). Each phase gets a line of its own: drawn
// at its start, at most ten times a second while it runs, and at its end.
ProgressCallback TerminalProgress(const char* command);

}  // namespace hq::tool

#endif  // HQ_TOOLS_PROGRESS_H_
