// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq_bench's workloads by name. Each family of workloads (workloads_*.cc)
// adds its own to the registry; hq_bench.cc checks --benchmarks against it
// and runs what it names, in order.

#ifndef HQ_BENCH_REGISTRY_H_
#define HQ_BENCH_REGISTRY_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/bench_util.h"
#include "bench/workload.h"

namespace hq::bench {

struct Workload {
  // What must run earlier in --benchmarks.
  enum class Needs {
    kNothing,
    kHqDb,     // An open hq Db (put, or a workload that leaves one open).
    kLevelDb,  // fillseq_leveldb's raw LevelDB.
  };

  const char* name = "";
  const char* description = "";  // One line, for --help.
  // Runs the workload. A Result with messages > 0 is printed as the
  // workload's line by the caller; a workload that prints its own lines
  // returns Result{}. `hist` is null without --histogram.
  absl::StatusOr<Result> (*run)(Context& c, Histogram* hist) = nullptr;
  Needs needs = Needs::kNothing;
  const char* unmet = "";    // The error when `needs` is not met.
  bool opens_hq_db = false;  // Leaves an hq Db open (meets kHqDb).
};

// The families. Each appends its workloads to `out`.
void AddWriteWorkloads(std::vector<Workload>* out);
void AddReadWorkloads(std::vector<Workload>* out);
void AddConsumeWorkloads(std::vector<Workload>* out);
void AddAdminWorkloads(std::vector<Workload>* out);
void AddPeerWorkloads(std::vector<Workload>* out);

// Every workload, family by family.
const std::vector<Workload>& Workloads();

// The workload named `name`, or null.
const Workload* FindWorkload(std::string_view name);

// The recover workload's child (--recover_child): fills the log of a fresh
// Db at `dir` to about 90% of the write buffer, without filling the memtable
// (so nothing has been written to a table), prints "READY <messages>" and
// waits to be killed. Returns the process's exit code on failure.
int RecoverChild(const std::string& dir, const Config& config);

}  // namespace hq::bench

#endif  // HQ_BENCH_REGISTRY_H_
