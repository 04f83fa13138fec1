// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// What hq_bench's workloads share: timing, results, latency histograms, the
// raw LevelDB opened with hq's options, and waiting for compactions.

#ifndef HQ_BENCH_BENCH_UTIL_H_
#define HQ_BENCH_BENCH_UTIL_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "hq/options.h"
#include "leveldb/cache.h"
#include "leveldb/db.h"
#include "leveldb/filter_policy.h"
#include "leveldb/options.h"

namespace hq::bench {

// What the reads read is added here, so that no read can be optimised away.
extern volatile uint64_t sink;

using SteadyClock = std::chrono::steady_clock;

inline double MicrosSince(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::micro>(SteadyClock::now() - start)
      .count();
}

// Per-call latencies in micros. Keeps every sample: exact percentiles.
class Histogram {
 public:
  void Reserve(size_t n) { micros_.reserve(n); }
  void Add(double micros) { micros_.push_back(micros); }
  void Merge(const Histogram& other) {
    micros_.insert(micros_.end(), other.micros_.begin(), other.micros_.end());
  }
  // "count N avg A p50 B p99 C p99.9 D max E" (sorts the samples).
  std::string Summary();

 private:
  std::vector<double> micros_;
};

// One workload's outcome: `messages` ops in `seconds`, carrying
// `payload_bytes` of payload.
struct Result {
  double seconds = 0;
  int64_t messages = 0;
  int64_t payload_bytes = 0;

  double msgs_per_sec() const {
    return seconds > 0 ? static_cast<double>(messages) / seconds : 0;
  }
};

// Prints "NAME : X micros/op; Y msgs/s; Z MB/s".
void PrintLine(const std::string& name, const Result& r);

// Prints "ratio NAME : R" with R = a's msgs/s / b's msgs/s.
void PrintRatio(const std::string& name, const Result& a, const Result& b);

// A raw LevelDB opened with the leveldb::Options hq derives from the same
// hq::Options (as DbImpl::Init does).
struct RawDb {
  std::unique_ptr<leveldb::Cache> cache;
  std::unique_ptr<const leveldb::FilterPolicy> filter;
  std::unique_ptr<leveldb::DB> db;  // Declared last: destroyed first.
};

// LevelDB options hq does not set, applied to raw LevelDB only (the
// --raw_* flags): to measure an option before hq exposes it. 0: LevelDB's
// default.
struct RawTuning {
  size_t max_file_bytes = 0;  // leveldb::Options::max_file_size.
  size_t block_bytes = 0;     // leveldb::Options::block_size.
  bool compression = true;    // false: kNoCompression.
};
RawTuning& raw_tuning();

// The leveldb::Options hq uses for `o`, then raw_tuning(); the cache and
// filter go into `raw`.
leveldb::Options LevelDbOptions(const Options& o, RawDb* raw);

// Destroys what is at `path` and opens a fresh raw LevelDB there.
absl::Status OpenFreshRawDb(const Options& o, const std::string& path,
                            RawDb* raw);

// Closes `raw` (if open) and opens the raw LevelDB at `path` again with a
// new, cold block cache (creating it if missing).
absl::Status ReopenRawDb(const Options& o, const std::string& path, RawDb* raw);

absl::Status FromLevelDb(const leveldb::Status& s, std::string_view what);

// "N * model" from /proc/cpuinfo; its cache size goes to `*cache`.
std::string CpuSummary(std::string* cache);

// LevelDB 1.23's compaction score of a "leveldb.sstables" property.
double CompactionScore(const std::string& sstables);

// Waits (untimed) until `db` has no compaction due and its table files have
// not changed for a second. Gives up after ten minutes.
void WaitForCompactions(leveldb::DB* db);

// Heap bytes in use, in KiB (glibc mallinfo2, all arenas: allocated chunks
// and mmap'ed blocks). Unlike resident memory it neither counts the pages
// of LevelDB's memory-mapped table files (resident while in the page cache)
// nor memory freed but kept by malloc, so a difference of two readings is
// what the code between them holds.
int64_t HeapKb();

// Bytes of the files under `dir` (recursively).
uint64_t DirectoryBytes(const std::string& dir);

}  // namespace hq::bench

#endif  // HQ_BENCH_BENCH_UTIL_H_
