// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq_bench's read workloads: scans of the queue `put` wrote (scan,
// scan_lanes, scan_partition, scan_topic) and of the raw LevelDB
// fillseq_leveldb wrote (scan_leveldb, scan_leveldb_checked). See the top
// of hq_bench.cc for what each measures.

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "bench/bench_util.h"
#include "bench/registry.h"
#include "bench/workload.h"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"
#include "lib/util/status_macros.h"

namespace hq::bench {
namespace {

// Reads what `so` selects of the queue `put` wrote; `selected(i)` says
// whether message i is among it (the count is checked).
ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Scan(
    Context& c, Histogram* hist, const ScanOptions& so,
    const std::function<bool(int64_t)>& selected) {
  if (c.queue == nullptr) {
    return absl::FailedPreconditionError("no queue: run put first");
  }
  int64_t expected = 0;
  for (int64_t i = 0; i < c.put_messages; ++i) expected += selected(i);
  HQ_RETURN_IF_ERROR(c.ReopenHq());
  if (hist != nullptr) hist->Reserve(static_cast<size_t>(c.put_messages + 1));
  int64_t count = 0;
  int64_t payload_bytes = 0;
  uint64_t touched = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  {
    HQ_ASSIGN_OR_RETURN(std::unique_ptr<Scanner> scanner,
                        c.queue->NewScanner(so));
    while (true) {
      const SteadyClock::time_point op_start =
          hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
      if (!scanner->Next()) break;
      if (hist != nullptr) hist->Add(MicrosSince(op_start));
      const MessageView& m = scanner->message();
      ++count;
      payload_bytes += static_cast<int64_t>(m.payload.size());
      if (!m.payload.empty()) {
        touched += static_cast<unsigned char>(m.payload.back());
      }
    }
    HQ_RETURN_IF_ERROR(scanner->status());
  }
  const double seconds = MicrosSince(start) / 1e6;
  sink = sink + touched;
  const int64_t value_size = static_cast<int64_t>(c.config.value_size);
  if (count != expected || payload_bytes != count * value_size) {
    return absl::DataLossError(absl::StrFormat(
        "read %d messages of %d payload bytes; put wrote %d of %d bytes", count,
        payload_bytes, expected, expected * value_size));
  }
  return Result{seconds, count, payload_bytes};
}

absl::StatusOr<Result> ScanAll(Context& c, Histogram* hist) {
  return Scan(c, hist, {}, [](int64_t) { return true; });
}

absl::StatusOr<Result> ScanLanes(Context& c, Histogram* hist) {
  return Scan(c, hist, {.order = ScanOptions::Order::kLane},
              [](int64_t) { return true; });
}

absl::StatusOr<Result> ScanPartition(Context& c, Histogram* hist) {
  return Scan(c, hist, {.partitions = {0}},
              [&c](int64_t i) { return c.source.partition(i) == 0; });
}

absl::StatusOr<Result> ScanTopic(Context& c, Histogram* hist) {
  const std::string& t0 = c.source.topics()[0];
  return Scan(c, hist, {.topics = {t0}},
              [&c, &t0](int64_t i) { return c.source.topic(i) == t0; });
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ScanLevelDb(Context& c,
                                                           Histogram* hist,
                                                           bool checked) {
  if (c.raw.db == nullptr) {
    return absl::FailedPreconditionError(
        "no raw database: run fillseq_leveldb first");
  }
  HQ_RETURN_IF_ERROR(c.ReopenRaw());
  if (hist != nullptr) hist->Reserve(static_cast<size_t>(c.fill_messages + 1));
  int64_t count = 0;
  int64_t stored_bytes = 0;
  uint64_t touched = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  {
    leveldb::ReadOptions ro;
    ro.verify_checksums = checked;
    std::unique_ptr<leveldb::Iterator> it(c.raw.db->NewIterator(ro));
    SteadyClock::time_point op_start =
        hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
    it->SeekToFirst();
    for (; it->Valid(); it->Next()) {
      if (hist != nullptr) hist->Add(MicrosSince(op_start));
      const leveldb::Slice key = it->key();
      const leveldb::Slice value = it->value();
      ++count;
      stored_bytes += static_cast<int64_t>(key.size() + value.size());
      touched += static_cast<unsigned char>(key[key.size() - 1]);
      if (!value.empty()) {
        touched += static_cast<unsigned char>(value[value.size() - 1]);
      }
      if (hist != nullptr) op_start = SteadyClock::now();
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "iterating"));
  }
  const double seconds = MicrosSince(start) / 1e6;
  sink = sink + touched + static_cast<uint64_t>(stored_bytes);
  if (count != c.fill_messages) {
    return absl::DataLossError(absl::StrFormat(
        "read %d records; fillseq_leveldb wrote %d", count, c.fill_messages));
  }
  return c.Payloads(seconds, count);
}

}  // namespace

void AddReadWorkloads(std::vector<Workload>* out) {
  using Needs = Workload::Needs;
  out->push_back({.name = "scan",
                  .description = "a full scan of put's queue in id order "
                                 "(lanes merged)",
                  .run = ScanAll,
                  .needs = Needs::kHqDb,
                  .unmet = "'scan' reads the queue 'put' writes: list put "
                           "before it in --benchmarks"});
  out->push_back({.name = "scan_lanes",
                  .description = "the same scan in storage order, lane after "
                                 "lane",
                  .run = ScanLanes,
                  .needs = Needs::kHqDb,
                  .unmet =
                      "'scan_lanes' reads the queue 'put' writes: list put "
                      "before it in --benchmarks"});
  out->push_back({.name = "scan_partition",
                  .description = "a scan of partition 0 of put's queue",
                  .run = ScanPartition,
                  .needs = Needs::kHqDb,
                  .unmet =
                      "'scan_partition' reads the queue 'put' writes: list put "
                      "before it in --benchmarks"});
  out->push_back({.name = "scan_topic",
                  .description = "a scan of topic t0 of put's queue",
                  .run = ScanTopic,
                  .needs = Needs::kHqDb,
                  .unmet =
                      "'scan_topic' reads the queue 'put' writes: list put "
                      "before it in --benchmarks"});
  out->push_back({.name = "scan_leveldb",
                  .description = "a raw leveldb::Iterator over "
                                 "fillseq_leveldb's database",
                  .run =
                      [](Context& c, Histogram* hist) {
                        return ScanLevelDb(c, hist, /*checked=*/false);
                      },
                  .needs = Needs::kLevelDb,
                  .unmet = "'scan_leveldb' reads the database "
                           "'fillseq_leveldb' writes: list fillseq_leveldb "
                           "before it in --benchmarks"});
  out->push_back({.name = "scan_leveldb_checked",
                  .description = "the same with ReadOptions::verify_checksums",
                  .run =
                      [](Context& c, Histogram* hist) {
                        return ScanLevelDb(c, hist, /*checked=*/true);
                      },
                  .needs = Needs::kLevelDb,
                  .unmet = "'scan_leveldb_checked' reads the database "
                           "'fillseq_leveldb' writes: list fillseq_leveldb "
                           "before it in --benchmarks"});
}

}  // namespace hq::bench
