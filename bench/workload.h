// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// What hq_bench's workloads share: the configuration the flags give, the
// messages every write workload writes, and the Context a run carries from
// workload to workload (the hq Db `put` wrote, the raw LevelDB
// fillseq_leveldb wrote, the Redis server) with the helpers that open,
// close, fill and drain them. The workloads themselves live in one file per
// family (workloads_*.cc) and are listed in the registry (registry.h).

#ifndef HQ_BENCH_WORKLOAD_H_
#define HQ_BENCH_WORKLOAD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/bench_util.h"
#include "bench/layout_lab.h"
#include "bench/redis_peer.h"
#include "hq/hq.h"

namespace hq::bench {

// The id a fresh hq Db gives its first queue; the raw LevelDB keys use it so
// that they are byte for byte the keys hq writes. `put` checks it.
inline constexpr uint32_t kQueueId = 1;
inline constexpr char kQueueName[] = "bench";

// The flags, checked (see ConfigFromFlags in hq_bench.cc).
struct Config {
  std::vector<std::string> benchmarks;
  int64_t num = 0;
  size_t value_size = 0;
  uint32_t partitions = 1;
  int priorities = 1;
  int topics = 1;
  int64_t batch = 1;
  Layout layout = Layout::kTime;
  bool sync = false;
  bool histogram = false;
  std::string db;  // Empty: a temporary directory.
  size_t cache_bytes = 0;
  int64_t write_buffer_bytes = -1;  // -1: hq's default.
  uint32_t claim_batch = 100;
  TopicPacing pacing;  // Of claim_complete's group.
  int threads = 1;
  int64_t sync_num = 20000;
  int64_t many_topics = 1000000;
  bool many_topics_drain = true;  // false: no claims nor subscription.
  // false: many_topics runs only its two layouts (no put with a group, no
  // raw LevelDB).
  bool many_topics_extras = true;
  LayoutLabOptions lab;
  bool sqlite = false;  // --peers
  bool redis = false;
};

// The messages every write workload writes; message i is a pure function of
// i, so `put` and `fillseq_leveldb` write the same ones.
class MessageSource {
 public:
  explicit MessageSource(const Config& c);

  uint32_t partition(int64_t i) const {
    return static_cast<uint32_t>(static_cast<uint64_t>(i) % partitions_);
  }
  int priority(int64_t i) const {
    return static_cast<int>(static_cast<uint64_t>(i) / partitions_ %
                            priorities_);
  }
  const std::string& topic(int64_t i) const {
    return topics_[static_cast<uint64_t>(i) / partitions_ / priorities_ %
                   topics_.size()];
  }
  std::string_view payload(int64_t i) const {
    const size_t offset = static_cast<uint64_t>(i) * value_size_ % kPoolBytes;
    return std::string_view(pool_).substr(offset, value_size_);
  }
  const std::vector<std::string>& topics() const { return topics_; }

  // Message i with its topic, payload, partition and priority (the topic
  // and payload point into this source).
  Message message(int64_t i) const {
    return {.topic = topic(i),
            .payload = payload(i),
            .partition = partition(i),
            .priority = priority(i)};
  }

 private:
  static constexpr size_t kPoolBytes = size_t{1} << 20;

  const uint64_t partitions_;
  const uint64_t priorities_;
  const size_t value_size_;
  std::vector<std::string> topics_;
  std::string pool_;
};

// How a put workload writes: `num` messages from `threads` threads,
// `batch` per call, fsync'ed or not.
struct PutShape {
  int64_t num = 0;
  int threads = 1;
  int64_t batch = 1;
  bool sync = false;
};

// One run's state, handed to every workload in turn. The hq Db and queue
// that `put` (or claim_complete, create_queues, put_variants) leaves open
// are the ones the scans, reopen and backup use; the raw LevelDB
// fillseq_leveldb leaves open is the one scan_leveldb reads.
struct Context {
  explicit Context(Config c);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Makes root (a fresh directory under /tmp unless --db names one).
  absl::Status MakeDirectories();

  // Opens a fresh hq Db holding one empty queue.
  absl::Status OpenFreshHq();
  void CloseHq();
  // Closes and reopens the hq Db and the raw LevelDB (untimed), so every
  // scan starts the same way: cold block cache, warm page cache, nothing in
  // the memtable, no compaction due.
  absl::Status ReopenHq();
  absl::Status ReopenRaw();
  // Opens a fresh raw LevelDB.
  absl::Status OpenFreshRaw();
  void CloseRaw();
  // Waits (untimed) for the open hq Db's compactions.
  void WaitForHqCompactions();

  PutShape ShapeFromFlags() const {
    return {config.num, config.threads, config.batch, config.sync};
  }
  // Puts messages as `put` describes, shaped by `shape`, with dedup keys if
  // `dedup` (counting in `*duplicates` the puts found duplicates).
  absl::StatusOr<Result> TimedPuts(const PutShape& shape, Histogram* hist,
                                   bool dedup, int64_t* duplicates);
  // Fills the fresh queue with --num messages, untimed, in batches.
  absl::Status FillQueue();
  // Claims and completes everything `group` has; returns how many.
  // With `hist`, records each Claim+Complete call; with `bytes`, adds the
  // payload bytes claimed (so that no read is optimised away).
  absl::StatusOr<int64_t> Drain(ConsumerGroup* group, Histogram* hist = nullptr,
                                uint64_t* bytes = nullptr);
  // The Result of `messages` messages of --value_size in `seconds`.
  Result Payloads(double seconds, int64_t messages) const {
    return {seconds, messages,
            messages * static_cast<int64_t>(config.value_size)};
  }

  const Config config;
  const MessageSource source;
  Options hq_options;
  QueueOptions queue_options;

  std::string root;
  bool remove_root = false;
  std::string hq_path;
  std::string raw_path;

  std::unique_ptr<Db> hq_db;
  Queue* queue = nullptr;  // Owned by hq_db.
  RawDb raw;
  std::unique_ptr<RedisServer> redis;
  std::unique_ptr<RedisClient> redis_client;  // Connected to redis.

  int64_t put_messages = 0;   // Written by the last `put`.
  int64_t fill_messages = 0;  // Written by the last `fillseq_leveldb`.

 private:
  // Puts messages [begin, end) as `put` describes (one thread's share).
  absl::Status PutRange(const PutShape& shape, int64_t begin, int64_t end,
                        Histogram* hist, bool dedup, int64_t* duplicates);
};

}  // namespace hq::bench

#endif  // HQ_BENCH_WORKLOAD_H_
