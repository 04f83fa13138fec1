// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq_bench's write workloads: put, fillseq_leveldb, put_variants (batching,
// threads and group commit), put_dedup and create_queues. See the top of
// hq_bench.cc for what each measures.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/registry.h"
#include "bench/workload.h"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"

namespace hq::bench {
namespace {

// Assigns MessageIds as DbImpl::AddToBatch does: per partition, the clock's
// ms if it moved past the last id, else the last id's successor.
class IdAssigner {
 public:
  explicit IdAssigner(uint32_t partitions) : last_(partitions) {}

  static uint64_t NowMs() {
    const int64_t ms = absl::ToUnixMillis(absl::Now());
    return ms < 0 ? 0 : std::min(static_cast<uint64_t>(ms), MessageId::kMaxMs);
  }

  MessageId Next(uint32_t partition, uint64_t now_ms) {
    std::optional<MessageId>& last = last_[partition];
    if (!last.has_value() || now_ms > last->ms) {
      last = MessageId{now_ms, 0};
    } else {
      last = last->Next();
    }
    return *last;
  }

 private:
  std::vector<std::optional<MessageId>> last_;
};

// Workloads are never inlined, so that a profiler (perf, callgrind
// --toggle-collect) can tell them apart.

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Put(Context& c,
                                                   Histogram* hist) {
  HQ_RETURN_IF_ERROR(c.OpenFreshHq());
  return c.TimedPuts(c.ShapeFromFlags(), hist, /*dedup=*/false, nullptr);
}

// Eight put runs, each into a fresh Db: 1 and N threads (N = --threads,
// or 8 if that is 1), batch 1 and 100, sync off (--num messages) and on
// (--sync_num). Prints a line each and the ratios that show batching and
// group commit.
ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> PutVariants(Context& c,
                                                           Histogram*) {
  const int many = c.config.threads > 1 ? c.config.threads : 8;
  const int64_t sync_num = std::min(c.config.num, c.config.sync_num);
  absl::flat_hash_map<std::string, Result> results;
  auto name = [](int threads, int64_t batch, bool sync) {
    return absl::StrFormat("put_t%d_b%d%s", threads, batch,
                           sync ? "_sync" : "");
  };
  for (const bool sync : {false, true}) {
    for (const int threads : {1, many}) {
      for (const int64_t batch : {int64_t{1}, int64_t{100}}) {
        const PutShape shape{sync ? sync_num : c.config.num, threads, batch,
                             sync};
        HQ_RETURN_IF_ERROR(c.OpenFreshHq());
        HQ_ASSIGN_OR_RETURN(const Result r,
                            c.TimedPuts(shape, nullptr, false, nullptr));
        const std::string n = name(threads, batch, sync);
        PrintLine(n, r);
        std::fflush(stdout);
        results[n] = r;
      }
    }
  }
  auto ratio = [&](const std::string& a, const std::string& b) {
    PrintRatio(absl::StrCat(a, "/", b), results[a], results[b]);
  };
  ratio(name(1, 100, false), name(1, 1, false));
  ratio(name(many, 1, false), name(1, 1, false));
  ratio(name(many, 1, true), name(1, 1, true));
  ratio(name(many, 100, true), name(1, 100, true));
  return Result{};
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> PutDedup(Context& c,
                                                        Histogram* hist) {
  HQ_RETURN_IF_ERROR(c.OpenFreshHq());
  const int64_t num = c.config.num;
  const int64_t heap_before = HeapKb();
  int64_t duplicates = 0;
  HQ_ASSIGN_OR_RETURN(Result first,
                      c.TimedPuts(c.ShapeFromFlags(), hist, true, &duplicates));
  if (duplicates != 0) {
    return absl::DataLossError(
        absl::StrFormat("%d of %d unique dedup keys were reported duplicates",
                        duplicates, num));
  }
  HQ_ASSIGN_OR_RETURN(Result again, c.TimedPuts(c.ShapeFromFlags(), nullptr,
                                                true, &duplicates));
  if (duplicates != num) {
    return absl::DataLossError(absl::StrFormat(
        "%d of %d repeated dedup keys were found duplicates", duplicates, num));
  }
  PrintLine("put_dedup_duplicates", again);
  std::printf("put_dedup heap_kb : %lld\n",
              static_cast<long long>(HeapKb() - heap_before));
  return first;
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> CreateQueues(Context& c,
                                                            Histogram* hist) {
  if (c.hq_db == nullptr) HQ_RETURN_IF_ERROR(c.OpenFreshHq());
  const int64_t num = c.config.num;
  if (hist != nullptr) hist->Reserve(static_cast<size_t>(num));
  std::string name;
  const SteadyClock::time_point start = SteadyClock::now();
  for (int64_t i = 0; i < num; ++i) {
    name = absl::StrCat("q", i);
    const SteadyClock::time_point op_start =
        hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
    HQ_RETURN_IF_ERROR(c.hq_db->CreateQueue(name, c.queue_options).status());
    if (hist != nullptr) hist->Add(MicrosSince(op_start));
  }
  const double seconds = MicrosSince(start) / 1e6;
  c.WaitForHqCompactions();
  return Result{seconds, num, 0};
}

// Writes messages to the raw LevelDB as hq stores them, keeping its
// buffers from call to call.
class RawWriter {
 public:
  explicit RawWriter(Context& c)
      : c_(c),
        codec_(LayoutCodec::For(c.config.layout)),
        ids_(c.config.partitions) {
    wo_.sync = c.config.sync;
  }

  // Messages [i, i + n): one DB::Put each when --batch is 1, else one
  // WriteBatch.
  absl::Status Write(int64_t i, int64_t n) {
    const MessageSource& source = c_.source;
    leveldb::DB* db = c_.raw.db.get();
    const bool batched = c_.config.batch > 1;
    // One clock reading per write call, as hq reads it once per writer.
    const uint64_t now_ms = IdAssigner::NowMs();
    wb_.Clear();
    for (int64_t j = 0; j < n; ++j) {
      const uint32_t p = source.partition(i + j);
      key_.clear();
      codec_.AppendMessageKey(&key_, kQueueId, p, source.priority(i + j),
                              source.topic(i + j), ids_.Next(p, now_ms));
      value_.clear();
      format::AppendMessageValue(&value_, "", source.payload(i + j));
      if (!batched) {
        HQ_RETURN_IF_ERROR(FromLevelDb(db->Put(wo_, key_, value_), "Put"));
      } else {
        wb_.Put(key_, value_);
      }
    }
    if (batched) HQ_RETURN_IF_ERROR(FromLevelDb(db->Write(wo_, &wb_), "Write"));
    return absl::OkStatus();
  }

 private:
  Context& c_;
  const LayoutCodec& codec_;
  IdAssigner ids_;
  leveldb::WriteOptions wo_;
  std::string key_, value_;
  leveldb::WriteBatch wb_;
};

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> FillLevelDb(Context& c,
                                                           Histogram* hist) {
  HQ_RETURN_IF_ERROR(c.OpenFreshRaw());
  const int64_t num = c.config.num;
  const int64_t batch = c.config.batch;
  if (hist != nullptr) hist->Reserve(static_cast<size_t>(num / batch + 1));
  RawWriter writer(c);
  const SteadyClock::time_point start = SteadyClock::now();
  for (int64_t i = 0; i < num; i += batch) {
    const SteadyClock::time_point op_start =
        hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
    HQ_RETURN_IF_ERROR(writer.Write(i, std::min(batch, num - i)));
    if (hist != nullptr) hist->Add(MicrosSince(op_start));
  }
  const double seconds = MicrosSince(start) / 1e6;
  c.fill_messages = num;
  WaitForCompactions(c.raw.db.get());
  return c.Payloads(seconds, num);
}

}  // namespace

void AddWriteWorkloads(std::vector<Workload>* out) {
  out->push_back({.name = "put",
                  .description = "hq Queue::Put (PutBatch with --batch) of "
                                 "--num messages into a fresh Db",
                  .run = Put,
                  .opens_hq_db = true});
  out->push_back({.name = "fillseq_leveldb",
                  .description = "the same keys and values written to a "
                                 "fresh raw LevelDB",
                  .run = FillLevelDb});
  out->push_back({.name = "put_variants",
                  .description = "put with 1 and N threads, batch 1 and 100, "
                                 "sync off and on; their ratios",
                  .run = PutVariants,
                  .opens_hq_db = true});
  out->push_back({.name = "put_dedup",
                  .description = "put with a dedup key per message, then the "
                                 "same messages again (all duplicates)",
                  .run = PutDedup});
  out->push_back({.name = "create_queues",
                  .description = "Db::CreateQueue of --num queues",
                  .run = CreateQueues,
                  .opens_hq_db = true});
}

}  // namespace hq::bench
