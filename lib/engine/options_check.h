// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The check of the Db's options (hq/options.h): OK, or InvalidArgument
// naming the option outside its limits (documented with each option).
// QueueOptions are checked by the queue record's grammar
// (format::ValidateQueueOptions), since a stored record must meet them.

#ifndef HQ_LIB_ENGINE_OPTIONS_CHECK_H_
#define HQ_LIB_ENGINE_OPTIONS_CHECK_H_

#include "absl/status/status.h"
#include "hq/options.h"

namespace hq {

absl::Status ValidateOptions(const Options& options);

}  // namespace hq

#endif  // HQ_LIB_ENGINE_OPTIONS_CHECK_H_
