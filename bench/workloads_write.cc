// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq_bench's write workloads: put, fillseq_leveldb, put_variants (batching,
// threads and group commit), put_dedup, ingest and create_queues. See the top
// of hq_bench.cc for what each measures.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/registry.h"
#include "bench/workload.h"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "lib/engine/db_impl.h"
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

// The process's I/O counters (/proc/self/io), in bytes.
struct ProcIo {
  bool ok = false;
  int64_t wchar = 0;        // Passed to write(2) and friends.
  int64_t write_bytes = 0;  // Sent (or to be sent) to the storage layer.
  int64_t cancelled = 0;    // cancelled_write_bytes: dirty pages dropped.

  static ProcIo Read() {
    ProcIo io;
    std::FILE* f = std::fopen("/proc/self/io", "r");
    if (f == nullptr) return io;
    char name[64];
    long long value;
    int found = 0;
    while (std::fscanf(f, "%63[^:]: %lld\n", name, &value) == 2) {
      const std::string_view n = name;
      if (n == "wchar") io.wchar = value, ++found;
      if (n == "write_bytes") io.write_bytes = value, ++found;
      if (n == "cancelled_write_bytes") io.cancelled = value, ++found;
    }
    std::fclose(f);
    io.ok = found == 3;
    return io;
  }
  // Bytes written to disk: write_bytes less the dirty pages never written.
  int64_t disk() const { return write_bytes - cancelled; }
};

// Samples LevelDB's level-0 table count every 10 ms from its own thread,
// counting the samples at or over LevelDB 1.23's slowdown (8 tables: each
// write sleeps 1 ms) and stop (12: writes wait for the compaction) triggers.
class Level0Monitor {
 public:
  explicit Level0Monitor(leveldb::DB* db)
      : db_(db), thread_([this] { Run(); }) {}
  ~Level0Monitor() { Stop(); }

  void Stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
  }
  std::string Summary() const {
    const double n = std::max<int64_t>(1, samples_);
    return absl::StrFormat(
        "max %d tables; at the slowdown trigger (>= 8) %.1f%% of the time, "
        "at the stop trigger (>= 12) %.1f%%",
        max_, 100.0 * slowdown_ / n, 100.0 * stopped_ / n);
  }

 private:
  void Run() {
    std::string v;
    while (!stop_.load()) {
      if (db_->GetProperty("leveldb.num-files-at-level0", &v)) {
        const int n = std::atoi(v.c_str());
        ++samples_;
        slowdown_ += n >= 8;
        stopped_ += n >= 12;
        max_ = std::max(max_, n);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  leveldb::DB* const db_;
  std::atomic<bool> stop_{false};
  // Written by thread_ only, read after Stop().
  int64_t samples_ = 0, slowdown_ = 0, stopped_ = 0;
  int max_ = 0;
  std::thread thread_;  // Last: starts after the fields above.
};

// The totals of LevelDB 1.23's "leveldb.stats" table (per level: Files,
// Size(MB), Time(sec), Read(MB), Write(MB)).
std::string CompactionSummary(leveldb::DB* db) {
  std::string stats;
  if (!db->GetProperty("leveldb.stats", &stats)) return "unavailable";
  double seconds = 0, read_mb = 0, write_mb = 0;
  std::vector<std::string> files;
  std::istringstream lines(stats);
  std::string line;
  while (std::getline(lines, line)) {
    int level, n;
    double size, t, r, w;
    if (std::sscanf(line.c_str(), "%d %d %lf %lf %lf %lf", &level, &n, &size,
                    &t, &r, &w) == 6) {
      seconds += t;
      read_mb += r;
      write_mb += w;
      files.push_back(absl::StrFormat("L%d %d (%.0f MB)", level, n, size));
    }
  }
  return absl::StrFormat("%.1f s; read %.0f MB; written %.0f MB; tables %s",
                         seconds, read_mb, write_mb,
                         absl::StrJoin(files, ", "));
}

// The bytes of keys and values message [0, num) takes in `layout` (what a
// raw LevelDB stores; hq adds only its bookkeeping records).
int64_t UserBytes(const Context& c, Layout layout) {
  const LayoutCodec& codec = LayoutCodec::For(layout);
  std::string key, value;
  int64_t total = 0;
  for (int64_t i = 0; i < c.config.num; ++i) {
    key.clear();
    codec.AppendMessageKey(&key, kQueueId, c.source.partition(i),
                           c.source.priority(i), c.source.topic(i),
                           MessageId{1, 0});
    value.clear();
    format::AppendMessageValue(&value, "", c.source.payload(i));
    total += static_cast<int64_t>(key.size() + value.size());
  }
  return total;
}

// Sustained ingest: --num messages (--batch per call) into a fresh hq Db in
// the time layout, one in the topic layout, and a raw LevelDB with the
// time layout's keys; per target its line, throughput per tenth of the run,
// bytes written per user byte, level-0 pressure and compaction totals.
ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Ingest(Context& c, Histogram*) {
  const int64_t num = c.config.num;
  const int64_t batch = c.config.batch;
  const QueueOptions saved = c.queue_options;
  struct Target {
    const char* name;
    std::optional<Layout> hq_layout;  // None: raw LevelDB.
  };
  for (const Target& t : {Target{"ingest_time", Layout::kTime},
                          Target{"ingest_topic", Layout::kTopic},
                          Target{"ingest_leveldb", std::nullopt}}) {
    leveldb::DB* db = nullptr;
    std::optional<RawWriter> raw;
    if (t.hq_layout.has_value()) {
      c.CloseRaw();
      c.queue_options = saved;
      c.queue_options.layout = *t.hq_layout;
      HQ_RETURN_IF_ERROR(c.OpenFreshHq());
      db = static_cast<DbImpl*>(c.hq_db.get())->leveldb();
    } else {
      c.CloseHq();
      HQ_RETURN_IF_ERROR(c.OpenFreshRaw());
      db = c.raw.db.get();
      raw.emplace(c);
    }
    const int64_t user_bytes =
        UserBytes(c, t.hq_layout.value_or(c.config.layout));
    std::vector<Message> messages(static_cast<size_t>(batch));
    PutOptions po;
    po.sync = c.config.sync;
    std::vector<double> tenths;
    const ProcIo io_start = ProcIo::Read();
    Level0Monitor level0(db);
    const SteadyClock::time_point start = SteadyClock::now();
    for (int tenth = 0; tenth < 10; ++tenth) {
      const int64_t begin = num * tenth / 10, end = num * (tenth + 1) / 10;
      const SteadyClock::time_point tenth_start = SteadyClock::now();
      for (int64_t i = begin; i < end; i += batch) {
        const int64_t n = std::min(batch, end - i);
        if (raw.has_value()) {
          HQ_RETURN_IF_ERROR(raw->Write(i, n));
          continue;
        }
        for (int64_t j = 0; j < n; ++j) {
          messages[static_cast<size_t>(j)] = c.source.message(i + j);
        }
        HQ_RETURN_IF_ERROR(c.queue->PutBatch(
            std::span<const Message>(messages.data(), static_cast<size_t>(n)),
            nullptr, po));
      }
      const double secs = MicrosSince(tenth_start) / 1e6;
      tenths.push_back(secs > 0 ? (end - begin) / secs : 0);
    }
    const double seconds = MicrosSince(start) / 1e6;
    level0.Stop();
    const ProcIo io_written = ProcIo::Read();
    WaitForCompactions(db);
    const ProcIo io_settled = ProcIo::Read();
    PrintLine(t.name, c.Payloads(seconds, num));
    std::vector<std::string> k;
    for (double r : tenths) k.push_back(absl::StrFormat("%.0f", r / 1e3));
    std::printf("%s tenths K msgs/s : %s\n", t.name,
                absl::StrJoin(k, " ").c_str());
    const double user_mb = user_bytes / 1048576.0;
    if (io_start.ok) {
      auto amp = [&](int64_t bytes) { return bytes / double(user_bytes); };
      std::printf(
          "%s write amplification : user (keys+values) %.0f MB; disk "
          "(write_bytes - cancelled) %.2f at the last write, %.2f settled; "
          "write(2) bytes %.2f, %.2f settled\n",
          t.name, user_mb, amp(io_written.disk() - io_start.disk()),
          amp(io_settled.disk() - io_start.disk()),
          amp(io_written.wchar - io_start.wchar),
          amp(io_settled.wchar - io_start.wchar));
    } else {
      std::printf("%s write amplification : /proc/self/io unavailable\n",
                  t.name);
    }
    std::printf("%s level0 : %s\n", t.name, level0.Summary().c_str());
    std::printf("%s compaction : %s\n", t.name, CompactionSummary(db).c_str());
    std::fflush(stdout);
  }
  c.queue_options = saved;
  c.CloseHq();
  c.CloseRaw();
  return Result{};
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
  out->push_back({.name = "ingest",
                  .description = "sustained ingest of --num messages into "
                                 "the time and topic layouts and raw "
                                 "LevelDB: throughput per tenth, write "
                                 "amplification, level-0 pressure",
                  .run = Ingest});
  out->push_back({.name = "create_queues",
                  .description = "Db::CreateQueue of --num queues",
                  .run = CreateQueues,
                  .opens_hq_db = true});
}

}  // namespace hq::bench
