// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/options_check.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/format/format.h"

namespace hq {

absl::Status ValidateOptions(const Options& o) {
  if (o.cache_bytes > (size_t{1} << 40)) {
    return absl::InvalidArgumentError("Options::cache_bytes is over 1 TiB");
  }
  if (o.bloom_bits_per_key < 0 || o.bloom_bits_per_key > 40) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Options::bloom_bits_per_key is %d; it must be in 0..40",
        o.bloom_bits_per_key));
  }
  if (o.write_buffer_bytes < (size_t{64} << 10) ||
      o.write_buffer_bytes > (size_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Options::write_buffer_bytes is %d; it must be in 64 KiB..1 GiB",
        o.write_buffer_bytes));
  }
  if (o.scanner_lease < absl::Milliseconds(1) ||
      o.scanner_lease > absl::Hours(24 * 30)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Options::scanner_lease is ", absl::FormatDuration(o.scanner_lease),
        "; it must be in 1ms..720h"));
  }
  if (o.ttl_sweep_interval != absl::ZeroDuration() &&
      (o.ttl_sweep_interval < absl::Milliseconds(1) ||
       o.ttl_sweep_interval > absl::Hours(24 * 30))) {
    return absl::InvalidArgumentError(
        absl::StrCat("Options::ttl_sweep_interval is ",
                     absl::FormatDuration(o.ttl_sweep_interval),
                     "; it must be 0 or in 1ms..720h"));
  }
  if (o.status_interval != absl::ZeroDuration() &&
      (o.status_interval < absl::Milliseconds(100) ||
       o.status_interval > absl::Hours(24))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Options::status_interval is ", absl::FormatDuration(o.status_interval),
        "; it must be 0 or in 100ms..24h"));
  }
  if (o.ttl_sweep_batch < 1 || o.ttl_sweep_batch > 100000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Options::ttl_sweep_batch is %d; it must be in 1..100000",
        o.ttl_sweep_batch));
  }
  if (o.max_open_scanners < 1 || o.max_open_scanners > 1000000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Options::max_open_scanners is %d; it must be in 1..1000000",
        o.max_open_scanners));
  }
  if (o.max_open_files < 64 || o.max_open_files > 1000000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Options::max_open_files is %d; it must be in 64..1000000",
        o.max_open_files));
  }
  if (o.delivery_threads < 1 || o.delivery_threads > 64) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Options::delivery_threads is %d; it must be in 1..64",
                        o.delivery_threads));
  }
  return absl::OkStatus();
}

}  // namespace hq
