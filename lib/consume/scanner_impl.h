// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#ifndef HQ_LIB_CONSUME_SCANNER_IMPL_H_
#define HQ_LIB_CONSUME_SCANNER_IMPL_H_

#include <memory>

#include "absl/status/statusor.h"
#include "hq/options.h"
#include "hq/scanner.h"

namespace hq {

class DbImpl;
class QueueImpl;

// REQUIRES: `options` validated by QueueImpl::NewScanner (and `from`
// already raised to the TTL cutoff). ResourceExhausted past
// Options::max_open_scanners.
absl::StatusOr<std::unique_ptr<Scanner>> NewScannerImpl(
    DbImpl* db, QueueImpl* queue, const ScanOptions& options);

}  // namespace hq

#endif  // HQ_LIB_CONSUME_SCANNER_IMPL_H_
