// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq_bench: hq against raw LevelDB, in one run, in the shape of LevelDB's
// db_bench. Each workload writes or reads --num messages of --value_size
// payload bytes and prints one line
//
//   NAME : X micros/op; Y msgs/s; Z MB/s
//
// An op is one message (with --batch=N one write call carries N of them).
// MB/s counts payload bytes only (--value_size per message; 1 MB = 2^20
// bytes), not hq's key and value framing, so hq and raw LevelDB lines
// compare directly.
//
// Workloads, run in the order given by --benchmarks:
//
//   put              hq Queue::Put of --num messages from one thread into a
//                    fresh hq Db holding one queue (Queue::PutBatch of
//                    --batch messages per call when --batch > 1). Message i
//                    names partition i % partitions explicitly, has priority
//                    (i / partitions) % priorities and topic
//                    "t<(i / (partitions * priorities)) % topics>".
//                    With --threads=N, N threads each put an equal share.
//   fillseq_leveldb  The same messages written to a fresh raw LevelDB with
//                    one leveldb::DB::Put each (one leveldb::WriteBatch of
//                    --batch entries per Write when --batch > 1). Keys and
//                    values are the ones hq stores: encoded inside the timed
//                    loop with hq's own encoders (lib/format/layout_codec.h,
//                    lib/format/format.h), with MessageIds assigned as hq
//                    assigns them (clock ms, seq increasing within a ms, per
//                    partition). The database uses the leveldb::Options hq
//                    uses (DbImpl::Init): write buffer, block cache of
//                    --cache_bytes, 10-bit bloom filter, max_open_files.
//   scan             A full scan of the queue `put` wrote: every partition,
//                    ScanOptions::Order::kMerged, reading every payload.
//                    REQUIRES: `put` earlier in --benchmarks.
//   create_queues    Db::CreateQueue of --num queues ("q0", "q1", ...) in
//                    the hq Db (a fresh one if no workload opened it yet):
//                    one catalog record each, --num ops.
//   reopen           Closes the hq Db and times Db::Open (one op), after an
//                    untimed close and open that turns the log into tables,
//                    so the timed Open reads what a restart reads. Also
//                    prints `reopen heap_kb : N`, the growth of the process's
//                    heap in use across that Open. Run it before and
//                    after create_queues to see Open's cost per queue:
//                    --benchmarks=put,reopen,create_queues,reopen
//   leases           hq's LeaseManager with --num live leases (deadlines
//                    1-2 h away, so none fires): lease_create, lease_renew
//                    and lease_cancel lines (one op = one call), the memory
//                    per live lease (heap growth / --num), and
//                    lease_walk_all: one pass over the same deadlines, what
//                    a poll-every-lease thread (HBase's Leases) pays on
//                    every wake, against hq's one heap peek.
//   ttl              A queue with a 1 h TTL on a simulated clock: --num
//                    messages written, the clock moved 2 h, 1000 live ones
//                    written. ttl_sweep times Db::CompactExpired (one op = one
//                    expired message deleted) and prints the directory size
//                    before the messages were written, when full, and after
//                    the sweep. ttl_scan_after_sweep reads the 1000 live ones
//                    (one op = one message); ttl_scan_leveldb_tombstones does
//                    the same on a raw LevelDB whose --num older keys were
//                    deleted but not compacted, read from the start: the
//                    tombstone penalty hq's sweep and lane seeks avoid.
//   scan_lanes       The same full scan in ScanOptions::Order::kLane (storage
//                    order, lane after lane): the same order as the raw
//                    iterator, so the pair measures hq's own overhead, while
//                    `scan` adds the cost of merging lanes into id order.
//                    REQUIRES: `put` earlier in --benchmarks.
//   claim_complete   A fresh queue filled (untimed) with --num messages, then
//                    one consumer of a ConsumerGroup claims --claim_batch
//                    tasks (ConsumerGroup::Claim) and completes them
//                    (ConsumerGroup::Complete) until the queue is drained:
//                    one op = one message claimed and completed. Each call
//                    is one LevelDB write (sync with --sync).
//   claim_complete_sqlite  The same work on SQLite (WAL journal,
//                    synchronous=NORMAL, or FULL with --sync): a table
//                    tasks(id INTEGER PRIMARY KEY, priority, topic,
//                    payload, state, lease_until, attempts) with an index
//                    on (state, priority DESC, id), filled untimed, then per
//                    batch one "UPDATE ... WHERE id IN (SELECT ... LIMIT n)
//                    RETURNING id, payload" and one "DELETE ... WHERE id IN
//                    (...)", each its own transaction.
//   claim_sparse     Claims that follow the topics with work: a queue in
//                    the topic layout gets --num messages, each in a topic
//                    of its own, and a group completes them all (untimed).
//                    Then the Db is reopened and claim_sparse_load times
//                    the first Queue::Group call (it reads the lane
//                    directory once: ms, and micros per topic); 1000
//                    messages go to 10 topics, and claim_sparse times
//                    claiming and completing them in --claim_batch
//                    batches (one op = one message), as does
//                    claim_sparse_small on a queue of only those 10
//                    topics: the two lines should match.
//   put_dedup        As put, into a fresh hq Db, but every message carries a
//                    dedup key of its own ("https://s<i % 1000>.example/
//                    <i>", Message::dedup_key), so each Put also looks the
//                    key up in the dedup index (a bloom-filtered point read)
//                    and writes an index record. Then, in the same Db,
//                    put_dedup_duplicates puts the same --num messages
//                    again: every one is found a duplicate and nothing is
//                    written (one op = one message). Also prints
//                    `put_dedup heap_kb : N`, the growth of the heap in use
//                    across both (the index lives in LevelDB, not in
//                    memory).
//   subscribe        Push delivery: a fresh queue with one subscription
//                    (Queue::Subscribe); one thread puts --num messages
//                    (PutBatch of --batch when > 1) while the Db's delivery
//                    threads push them to the listener. One op = one
//                    message delivered; the time runs from the first Put to
//                    the last delivery. Also prints `subscribe latency
//                    micros : ...`, from the start of the Put call to the
//                    listener call, for every message (the put time rides
//                    in the payload's first 8 bytes).
//   subscribe_10     The same with 10 subscriptions on the queue: one op =
//                    one message delivered to all 10; latency as seen by
//                    the first.
//   put_variants     Eight put runs in one, each into a fresh hq Db:
//                    put_t<T>_b<B>[_sync] for T = 1 and N threads (N =
//                    --threads, or 8 when that is 1), batch B = 1 and 100,
//                    sync off (--num messages) and on (--sync_num). Then
//                    the ratios of batching (put_t1_b100/put_t1_b1), of
//                    threads (put_tN_b1/put_t1_b1) and of group commit
//                    (put_tN_b1_sync/put_t1_b1_sync, put_tN_b100_sync/
//                    put_t1_b100_sync).
//   put_sqlite       The same enqueue on SQLite: the claim_complete_sqlite
//                    table, one INSERT per message, --batch of them per
//                    transaction (WAL, synchronous NORMAL, or FULL with
//                    --sync). One connection: SQLite has one writer.
//   put_redis        The same enqueue on Redis Streams: one XADD per message
//                    (fields t = topic, p = payload) to stream
//                    bench:<partition>, --batch commands per pipeline (one
//                    round trip). Needs --peers=redis (see Peers below).
//   claim_complete_redis  claim_complete on Redis Streams: the streams
//                    filled (untimed), one consumer group, then XREADGROUP
//                    COUNT --claim_batch and one XACK per stream until the
//                    streams are drained (one op = one entry read and
//                    acknowledged; like hq's Complete, XACK keeps the
//                    entry in the stream).
//   scan_partition   As scan, of partition 0 only (ScanOptions::partitions).
//   scan_topic       As scan, of topic t0 only (ScanOptions::topics): in the
//                    time layout it reads past every other topic, in the
//                    topic layout only t0's lanes. REQUIRES: `put` earlier.
//   many_topics      For the topic layout, then the time layout, in a fresh
//                    Db each: --num messages over --many_topics topics
//                    (message i in topic u<i % topics>, the layout choosing
//                    partitions; PutBatch of --batch): many_topics_put[L];
//                    many_topics_reopen[L], Db::Open of it (one op);
//                    many_topics_group_load[L], the first Queue::Group call
//                    after the reopen, which reads the lane directory (one
//                    op); many_topics_read_topic[L], whole-topic scans of
//                    random topics (one op = one topic read; up to 1000 or
//                    5 s); many_topics_claim[L], one consumer draining the
//                    queue (one op = one message); `many_topics heap_kb[L]`,
//                    heap growth after the put, the group load and the
//                    claims. Then the ratios
//                    topic/time of put, read_topic and claim.
//   layout_lab       The rowkey-layout lab (bench/layout_lab.h): --num
//                    messages in segments of --lab_segment_size, stored
//                    under each layout of --lab_layouts in raw LevelDB and
//                    read back segment by segment, by one scan where the
//                    layout keeps a segment contiguous and by one Get per
//                    message where it does not: lab_write[L], lab_read[L],
//                    and each layout's read ratio to the first's.
//   recover          Open after a crash: a child process (this binary)
//                    fills the log of a fresh Db to about 90% of the write
//                    buffer (so the memtable holds it all and no table was
//                    written) and is killed with SIGKILL; recover times
//                    Db::Open, which replays that log (one op), and checks
//                    every message is there.
//   backup           Db::Backup of the hq Db `put` wrote, open (after an
//                    untimed reopen that settles it), into a fresh
//                    directory beside it, three times; then the same with
//                    the Db opened through an Env that is not the file
//                    system's, so that Backup copies the tables instead of
//                    linking them. Prints `backup_linked` and
//                    `backup_copied` lines: the three times, their median,
//                    the Db's table bytes and the bytes each backup copied.
//                    REQUIRES: `put` earlier in --benchmarks. For a 1 GB Db:
//                    --benchmarks=put,backup --num=4500000 --value_size=400
//                    --partitions=8 --batch=100 --peers=none
//   scan_leveldb     A raw leveldb::Iterator over the database
//                    fillseq_leveldb wrote, SeekToFirst to the end, reading
//                    every key and value. REQUIRES: fillseq_leveldb earlier
//                    in --benchmarks.
//   scan_leveldb_checked  The same with ReadOptions::verify_checksums, as
//                    every hq read is (hq's scan also checks each table
//                    block's CRC in its Env, lib/engine/checked_read.h): the
//                    cost of checksums on a scan.
//
// Memory: every `heap_kb` line (and the lease memory line) is a growth of
// the heap in use (malloc'ed and not freed; HeapKb in bench/bench_util.h),
// not of resident memory, which counts the pages of LevelDB's memory-mapped
// table files while they sit in the page cache, and memory malloc keeps
// after a free.
//
// After the workloads, for every pair that ran, one line each:
//
//   ratio put/leveldb_put : R      put msgs/s / fillseq_leveldb msgs/s
//   ratio scan/leveldb_scan : R    scan msgs/s / scan_leveldb msgs/s
//   ratio scan_lanes/leveldb_scan : R  scan_lanes msgs/s / scan_leveldb
//   ratio leveldb_scan_checked/leveldb_scan : R  the checksums' cost
//   ratio claim_complete/sqlite_claim_complete : R
//   ratio claim_complete/redis_claim_complete : R
//   ratio put/sqlite_put : R       put msgs/s / put_sqlite msgs/s
//   ratio put/redis_xadd : R       put msgs/s / put_redis msgs/s
//   ratio claim_sparse/claim_sparse_small : R
//   ratio put_dedup/put : R        the cost of dedup keys on Put
//   ratio subscribe/leveldb_put : R   delivered msgs/s / fillseq_leveldb
//   ratio subscribe_10/leveldb_put : R
//
// Fairness: after each write workload, untimed, the benchmark waits until
// that database has no compaction due (LevelDB's compaction score below 1
// and its table files unchanged for a second), like RocksDB db_bench's
// waitforcompaction. So no workload is charged for background work an
// earlier one left behind, and both scans read databases settled the same
// way. Before each scan workload its database is closed and reopened,
// untimed, so every scan starts alike: cold block cache, warm page cache,
// empty memtable. A scan's time includes opening its scanner or iterator.
//
// Flags:
//
//   --benchmarks=LIST  Comma-separated workloads, run in that order.
//                      Default:
//                      fillseq_leveldb,put,scan_leveldb,scan,scan_lanes.
//   --num=N            Messages per workload. Default: 1000000.
//   --value_size=N     Payload bytes per message, about half compressible.
//                      Default: 100.
//   --partitions=N     Partitions of the queue (1..65535). Default: 1.
//   --priorities=N     Priority levels of the queue (1..256). Default: 1.
//   --topics=N         Topics "t0".."t<N-1>" the messages cycle over.
//                      Default: 1.
//   --batch=N          Messages per write call: > 1 uses Queue::PutBatch and,
//                      for raw LevelDB, one WriteBatch of N. Default: 1.
//   --layout=L         Queue layout: time or topic. Default: time.
//   --sync=B           fsync every write call (PutOptions::sync,
//                      WriteOptions::sync). Default: false.
//   --histogram=B      After each workload line, print a line
//                        NAME latency micros/call : count N avg A p50 B
//                        p99 C p99.9 D max E
//                      A call is one Put / PutBatch / DB::Put / DB::Write,
//                      or one Scanner::Next / Iterator::Next. Timing every
//                      call adds two clock reads to it, visible in the scan
//                      lines. Default: false.
//   --db=DIR           Directory for the two databases (DIR/hq and
//                      DIR/leveldb, destroyed before each write workload and
//                      kept at the end). Default: a fresh directory under
//                      /tmp, removed at the end.
//   --threads=N        Threads that write in put and put_dedup, each an
//                      equal contiguous share of the --num messages (so
//                      concurrent sync puts share fsyncs: group commit).
//                      Default: 1.
//   --claim_batch=N    Tasks per Claim and Complete call (1..10000).
//                      Default: 100.
//   --cache_bytes=N    Block cache of each database (hq::Options::
//                      cache_bytes; 0: LevelDB's internal 8 MiB cache).
//                      Default: 67108864.
//   --write_buffer_bytes=N  hq::Options::write_buffer_bytes of each
//                      database (raw LevelDB's write_buffer_size too).
//                      Default: -1, hq's default (64 MiB).
//   --peers=LIST       Peers measured in the same run: sqlite, redis, or
//                      none. Each listed peer's workload runs right after
//                      the hq workload it is compared with (put_sqlite and
//                      put_redis after put, claim_complete_sqlite and
//                      claim_complete_redis after claim_complete) unless
//                      --benchmarks names it already. Default: sqlite.
//   --sync_num=N       Messages of each sync run of put_variants.
//                      Default: 20000.
//   --many_topics=N    Topics of many_topics. Default: 1000000.
//   --lab_layouts=LIST Layouts of layout_lab, the first the baseline.
//                      Default: salt_index_segment_time_job,
//                      salt_time_job_segment_index.
//   --lab_segment_size=N  Messages per segment in layout_lab. Default: 10000.
//   --lab_read_segments=N Segments layout_lab reads per layout. Default: 20.
//
// Peers. SQLite is linked in. For Redis, the bench starts redis-server
// itself (Debian: apt-get install redis-server; searched on PATH, then
// /usr/bin and /usr/sbin) on a free 127.0.0.1 port, in DIR/redis, with
// appendonly on and appendfsync no (always with --sync), the durability of
// hq's writes (sync off: a write reaches the OS before it is acknowledged),
// and stops it at the end. Without redis-server the Redis workloads print
// `NAME : skipped: ...` and no ratio.

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/layout_lab.h"
#include "bench/redis_peer.h"
#include "hq/hq.h"
#include "leveldb/cache.h"
#include "leveldb/db.h"
#include "leveldb/filter_policy.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"
#include "leveldb/write_batch.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/lease_manager.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "sqlite3.h"

#ifndef HQ_VERSION
#define HQ_VERSION "unknown"
#endif

ABSL_FLAG(std::string, benchmarks,
          "fillseq_leveldb,put,scan_leveldb,scan,scan_lanes",
          "Comma-separated workloads, run in that order: put, "
          "fillseq_leveldb, scan, scan_leveldb.");
ABSL_FLAG(int64_t, num, 1000000, "Messages per workload.");
ABSL_FLAG(int32_t, value_size, 100, "Payload bytes per message.");
ABSL_FLAG(int32_t, partitions, 1, "Partitions of the queue (1..65535).");
ABSL_FLAG(int32_t, priorities, 1, "Priority levels of the queue (1..256).");
ABSL_FLAG(int32_t, topics, 1, "Topics t0..t<N-1> the messages cycle over.");
ABSL_FLAG(int32_t, batch, 1,
          "Messages per write call (>1: PutBatch / raw WriteBatch).");
ABSL_FLAG(std::string, layout, "time", "Queue layout: time or topic.");
ABSL_FLAG(bool, sync, false, "fsync every write call.");
ABSL_FLAG(bool, histogram, false,
          "Print a latency histogram of each workload's calls.");
ABSL_FLAG(std::string, db, "",
          "Directory for the databases (default: a temporary directory "
          "under /tmp, removed at the end).");
ABSL_FLAG(int32_t, threads, 1,
          "Threads that put (put, put_dedup): each writes an equal share.");
ABSL_FLAG(int32_t, claim_batch, 100,
          "Tasks per Claim and Complete call in claim_complete.");
ABSL_FLAG(int64_t, cache_bytes, int64_t{64} << 20,
          "Block cache bytes of each database (0: LevelDB's own 8 MiB).");
ABSL_FLAG(int64_t, many_topics, 1000000, "Topics of many_topics.");
ABSL_FLAG(std::string, lab_layouts,
          "salt_index_segment_time_job,salt_time_job_segment_index",
          "Rowkey layouts of layout_lab (orders of salt, index, segment, "
          "time, job); the first is the one the others are compared with.");
ABSL_FLAG(int64_t, lab_segment_size, 10000,
          "Messages per segment in layout_lab.");
ABSL_FLAG(int64_t, lab_read_segments, 20,
          "Segments layout_lab reads per layout.");
ABSL_FLAG(int64_t, sync_num, 20000,
          "Messages of each sync run of put_variants.");
ABSL_FLAG(int64_t, write_buffer_bytes, -1,
          "hq::Options::write_buffer_bytes of each database (-1: hq's "
          "default).");
ABSL_FLAG(std::string, recover_child, "",
          "Internal: the child process of the recover workload.");
ABSL_FLAG(std::string, peers, "sqlite",
          "Peers run after put and claim_complete: sqlite, redis, none.");

namespace hq::bench {
namespace {

// The id a fresh hq Db gives its first queue; the raw LevelDB keys use it so
// that they are byte for byte the keys hq writes. `put` checks it.
constexpr uint32_t kQueueId = 1;
constexpr char kQueueName[] = "bench";

constexpr char kPut[] = "put";
constexpr char kFillLevelDb[] = "fillseq_leveldb";
constexpr char kScan[] = "scan";
constexpr char kScanLevelDb[] = "scan_leveldb";
constexpr char kScanLevelDbChecked[] = "scan_leveldb_checked";
constexpr char kScanLanes[] = "scan_lanes";
constexpr char kCreateQueues[] = "create_queues";
constexpr char kReopen[] = "reopen";
constexpr char kLeases[] = "leases";
constexpr char kTtl[] = "ttl";
constexpr char kClaimComplete[] = "claim_complete";
constexpr char kClaimCompleteSqlite[] = "claim_complete_sqlite";
constexpr char kClaimSparse[] = "claim_sparse";
constexpr char kPutDedup[] = "put_dedup";
constexpr char kSubscribe[] = "subscribe";
constexpr char kSubscribe10[] = "subscribe_10";
constexpr char kPutSqlite[] = "put_sqlite";
constexpr char kPutVariants[] = "put_variants";
constexpr char kScanPartition[] = "scan_partition";
constexpr char kScanTopic[] = "scan_topic";
constexpr char kManyTopics[] = "many_topics";
constexpr char kLayoutLab[] = "layout_lab";
constexpr char kRecover[] = "recover";
constexpr char kPutRedis[] = "put_redis";
constexpr char kClaimCompleteRedis[] = "claim_complete_redis";
constexpr char kBackup[] = "backup";

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
  int threads = 1;
  int64_t sync_num = 20000;
  int64_t many_topics = 1000000;
  LayoutLabOptions lab;
  bool sqlite = false;  // --peers
  bool redis = false;
};

absl::StatusOr<Config> ConfigFromFlags() {
  Config c;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_benchmarks),
                                               ',', absl::SkipEmpty())) {
    c.benchmarks.emplace_back(name);
  }
  const int64_t num = absl::GetFlag(FLAGS_num);
  const int32_t value_size = absl::GetFlag(FLAGS_value_size);
  const int32_t partitions = absl::GetFlag(FLAGS_partitions);
  const int32_t priorities = absl::GetFlag(FLAGS_priorities);
  const int32_t topics = absl::GetFlag(FLAGS_topics);
  const int32_t batch = absl::GetFlag(FLAGS_batch);
  const int64_t cache_bytes = absl::GetFlag(FLAGS_cache_bytes);
  const std::string layout = absl::GetFlag(FLAGS_layout);
  if (num < 1) return absl::InvalidArgumentError("--num must be >= 1");
  if (value_size < 0 ||
      static_cast<uint32_t>(value_size) > format::kMaxPayloadLimit) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--value_size must be in 0..%d", format::kMaxPayloadLimit));
  }
  if (partitions < 1 ||
      static_cast<uint32_t>(partitions) > format::kMaxPartitions) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--partitions must be in 1..%d", format::kMaxPartitions));
  }
  if (priorities < 1 || priorities > format::kMaxPriorities) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--priorities must be in 1..%d", format::kMaxPriorities));
  }
  if (topics < 1) return absl::InvalidArgumentError("--topics must be >= 1");
  if (batch < 1) return absl::InvalidArgumentError("--batch must be >= 1");
  if (cache_bytes < 0) {
    return absl::InvalidArgumentError("--cache_bytes must be >= 0");
  }
  const std::optional<Layout> parsed = ParseLayout(layout);
  if (!parsed.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--layout must be time or topic, not '", layout, "'"));
  }
  c.num = num;
  c.value_size = static_cast<size_t>(value_size);
  c.partitions = static_cast<uint32_t>(partitions);
  c.priorities = priorities;
  c.topics = topics;
  c.batch = batch;
  c.layout = *parsed;
  c.sync = absl::GetFlag(FLAGS_sync);
  c.histogram = absl::GetFlag(FLAGS_histogram);
  c.db = absl::GetFlag(FLAGS_db);
  c.cache_bytes = static_cast<size_t>(cache_bytes);
  c.write_buffer_bytes = absl::GetFlag(FLAGS_write_buffer_bytes);
  if (c.write_buffer_bytes != -1 &&
      (c.write_buffer_bytes < (int64_t{64} << 10) ||
       c.write_buffer_bytes > (int64_t{1} << 30))) {
    return absl::InvalidArgumentError(
        "--write_buffer_bytes must be -1 or in 65536..1073741824");
  }
  const int32_t claim_batch = absl::GetFlag(FLAGS_claim_batch);
  if (claim_batch < 1 || claim_batch > 10000) {
    return absl::InvalidArgumentError("--claim_batch must be in 1..10000");
  }
  c.claim_batch = static_cast<uint32_t>(claim_batch);
  const int32_t threads = absl::GetFlag(FLAGS_threads);
  if (threads < 1 || threads > 1024) {
    return absl::InvalidArgumentError("--threads must be in 1..1024");
  }
  c.threads = threads;
  c.sync_num = absl::GetFlag(FLAGS_sync_num);
  c.many_topics = absl::GetFlag(FLAGS_many_topics);
  c.lab.layouts.clear();
  for (absl::string_view l : absl::StrSplit(absl::GetFlag(FLAGS_lab_layouts),
                                            ',', absl::SkipEmpty())) {
    c.lab.layouts.emplace_back(l);
    HQ_RETURN_IF_ERROR(CheckLabLayout(c.lab.layouts.back()));
  }
  if (c.lab.layouts.empty()) {
    return absl::InvalidArgumentError("--lab_layouts is empty");
  }
  c.lab.messages = num;
  c.lab.segment_size = absl::GetFlag(FLAGS_lab_segment_size);
  c.lab.read_segments = absl::GetFlag(FLAGS_lab_read_segments);
  c.lab.value_size = static_cast<size_t>(value_size);
  if (c.lab.segment_size < 1 || c.lab.read_segments < 1) {
    return absl::InvalidArgumentError(
        "--lab_segment_size and --lab_read_segments must be >= 1");
  }
  if (c.many_topics < 1) {
    return absl::InvalidArgumentError("--many_topics must be >= 1");
  }
  if (c.sync_num < 1)
    return absl::InvalidArgumentError("--sync_num must be >= 1");
  for (absl::string_view peer :
       absl::StrSplit(absl::GetFlag(FLAGS_peers), ',', absl::SkipEmpty())) {
    if (peer == "sqlite") {
      c.sqlite = true;
    } else if (peer == "redis") {
      c.redis = true;
    } else if (peer != "none") {
      return absl::InvalidArgumentError(absl::StrCat(
          "--peers lists sqlite, redis or none, not '", peer, "'"));
    }
  }
  // Each peer's workload right after the hq workload it is compared with,
  // unless listed already.
  auto listed = [&c](const char* name) {
    return std::find(c.benchmarks.begin(), c.benchmarks.end(), name) !=
           c.benchmarks.end();
  };
  std::vector<std::string> expanded;
  for (const std::string& name : c.benchmarks) {
    expanded.push_back(name);
    const bool put = name == kPut, claim = name == kClaimComplete;
    if (!put && !claim) continue;
    const char* sqlite = put ? kPutSqlite : kClaimCompleteSqlite;
    const char* redis = put ? kPutRedis : kClaimCompleteRedis;
    if (c.sqlite && !listed(sqlite)) expanded.push_back(sqlite);
    if (c.redis && !listed(redis)) expanded.push_back(redis);
  }
  c.benchmarks = std::move(expanded);

  // Every name known, every scan after the write it reads.
  bool put = false, fill = false;
  for (const std::string& name : c.benchmarks) {
    if (name == kPut) {
      put = true;
    } else if (name == kFillLevelDb) {
      fill = true;
    } else if (name == kLeases || name == kTtl ||
               name == kClaimCompleteSqlite || name == kClaimSparse ||
               name == kPutDedup || name == kSubscribe ||
               name == kSubscribe10 || name == kPutSqlite ||
               name == kPutRedis || name == kClaimCompleteRedis ||
               name == kManyTopics || name == kLayoutLab || name == kRecover) {
      // Self-contained.
    } else if (name == kPutVariants) {
      put = true;  // Leaves an hq Db open.
      // Self-contained.
    } else if (name == kClaimComplete) {
      put = true;  // Leaves an hq Db open.
    } else if (name == kCreateQueues) {
      put = true;  // Leaves an hq Db open.
    } else if (name == kBackup) {
      if (!put) {
        return absl::FailedPreconditionError(
            "'backup' backs up the hq Db: list put before it in --benchmarks");
      }
    } else if (name == kReopen) {
      if (!put) {
        return absl::FailedPreconditionError(
            "'reopen' reopens the hq Db: list put or create_queues before it "
            "in --benchmarks");
      }
    } else if (name == kScan || name == kScanLanes || name == kScanPartition ||
               name == kScanTopic) {
      if (!put) {
        return absl::FailedPreconditionError(absl::StrCat(
            "'", name,
            "' reads the queue 'put' writes: list put before it in "
            "--benchmarks"));
      }
    } else if (name == kScanLevelDb || name == kScanLevelDbChecked) {
      if (!fill) {
        return absl::FailedPreconditionError(
            absl::StrCat("'", name,
                         "' reads the database 'fillseq_leveldb' writes: "
                         "list fillseq_leveldb before it in --benchmarks"));
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown benchmark '", name,
          "'; known: put, fillseq_leveldb, scan, scan_lanes, scan_leveldb, "
          "scan_leveldb_checked, "
          "create_queues, reopen, leases, ttl, claim_complete, "
          "claim_complete_sqlite, claim_complete_redis, claim_sparse, "
          "put_sqlite, put_redis, put_dedup, subscribe, subscribe_10, "
          "backup"));
    }
  }
  if (c.benchmarks.empty()) {
    return absl::InvalidArgumentError("--benchmarks is empty");
  }
  return c;
}

// The messages every write workload writes; message i is a pure function of
// i, so `put` and `fillseq_leveldb` write the same ones.
class MessageSource {
 public:
  explicit MessageSource(const Config& c)
      : partitions_(c.partitions),
        priorities_(static_cast<uint32_t>(c.priorities)),
        value_size_(c.value_size) {
    for (int t = 0; t < c.topics; ++t) topics_.push_back(absl::StrCat("t", t));
    // Pieces of 100 bytes: 50 random printable bytes, then the same 50
    // again, so that Snappy (LevelDB's default) halves them, as in db_bench.
    std::mt19937 rng(301);
    std::uniform_int_distribution<int> printable(' ', '~');
    pool_.resize(kPoolBytes + value_size_);
    for (size_t i = 0; i < pool_.size(); i += 100) {
      for (size_t j = 0; j < 50 && i + j < pool_.size(); ++j) {
        pool_[i + j] = static_cast<char>(printable(rng));
        if (i + j + 50 < pool_.size()) pool_[i + j + 50] = pool_[i + j];
      }
    }
  }

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

 private:
  static constexpr size_t kPoolBytes = size_t{1} << 20;

  const uint64_t partitions_;
  const uint64_t priorities_;
  const size_t value_size_;
  std::vector<std::string> topics_;
  std::string pool_;
};

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

// A SQLite connection with its prepared statements, for the peer
// workloads.
class Sqlite {
 public:
  Sqlite() = default;
  Sqlite(const Sqlite&) = delete;
  Sqlite& operator=(const Sqlite&) = delete;
  ~Sqlite() {
    for (sqlite3_stmt* s : statements_) sqlite3_finalize(s);
    if (db_ != nullptr) sqlite3_close(db_);
  }

  absl::Status Open(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) {
      return Error(absl::StrCat("opening ", path));
    }
    return absl::OkStatus();
  }
  absl::Status Exec(const char* sql) {
    if (sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) != SQLITE_OK) {
      return Error(sql);
    }
    return absl::OkStatus();
  }
  absl::StatusOr<sqlite3_stmt*> Prepare(const std::string& sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      return Error(sql);
    }
    statements_.push_back(s);
    return s;
  }
  // Runs a statement that returns no rows, then resets it.
  absl::Status StepDone(sqlite3_stmt* s) {
    const int rc = sqlite3_step(s);
    sqlite3_reset(s);
    if (rc != SQLITE_DONE) return Error("step");
    return absl::OkStatus();
  }
  absl::Status Error(std::string_view what) const {
    return absl::InternalError(
        absl::StrCat("sqlite: ", absl::string_view(what.data(), what.size()),
                     ": ", sqlite3_errmsg(db_)));
  }

 private:
  sqlite3* db_ = nullptr;
  std::vector<sqlite3_stmt*> statements_;
};

class Benchmark {
 public:
  explicit Benchmark(Config config)
      : config_(std::move(config)), source_(config_) {
    hq_options_.cache_bytes = config_.cache_bytes;
    if (config_.write_buffer_bytes != -1) {
      hq_options_.write_buffer_bytes =
          static_cast<size_t>(config_.write_buffer_bytes);
    }
    queue_options_.partitions = config_.partitions;
    queue_options_.priorities = config_.priorities;
    queue_options_.layout = config_.layout;
    queue_options_.max_payload_bytes =
        std::max<uint32_t>(queue_options_.max_payload_bytes,
                           static_cast<uint32_t>(config_.value_size));
  }

  ~Benchmark() {
    CloseHq();
    CloseRaw();
    if (remove_root_) {
      std::error_code ec;
      std::filesystem::remove_all(root_, ec);
    }
  }

  absl::Status Run() {
    HQ_RETURN_IF_ERROR(MakeDirectories());
    PrintHeader();
    std::optional<Result> scan_leveldb_checked;
    std::optional<Result> put, fill, scan, scan_lanes, scan_leveldb, claim,
        claim_sqlite, put_dedup, subscribe, subscribe10, put_sqlite, put_redis,
        claim_redis;
    for (const std::string& name : config_.benchmarks) {
      Histogram hist;
      Histogram* h = config_.histogram ? &hist : nullptr;
      absl::StatusOr<Result> r;
      if (name == kPut) {
        r = Put(h);
        if (r.ok()) put = *r;
      } else if (name == kFillLevelDb) {
        r = FillLevelDb(h);
        if (r.ok()) fill = *r;
      } else if (name == kScan) {
        r = Scan(h, {}, [](int64_t) { return true; });
        if (r.ok()) scan = *r;
      } else if (name == kLeases) {
        r = Leases();
      } else if (name == kTtl) {
        r = Ttl();
      } else if (name == kCreateQueues) {
        r = CreateQueues(h);
      } else if (name == kReopen) {
        r = Reopen();
      } else if (name == kScanLanes) {
        r = Scan(h, {.order = ScanOptions::Order::kLane},
                 [](int64_t) { return true; });
        if (r.ok()) scan_lanes = *r;
      } else if (name == kClaimComplete) {
        r = ClaimComplete(h);
        if (r.ok()) claim = *r;
      } else if (name == kClaimCompleteSqlite) {
        r = ClaimCompleteSqlite(h);
        if (r.ok()) claim_sqlite = *r;
      } else if (name == kRecover) {
        r = Recover();
      } else if (name == kBackup) {
        r = BackupWorkload();
      } else if (name == kLayoutLab) {
        const absl::Status s = RunLayoutLab(config_.lab, hq_options_, root_);
        r = s.ok() ? absl::StatusOr<Result>(Result{}) : s;
      } else if (name == kManyTopics) {
        r = ManyTopics();
      } else if (name == kPutVariants) {
        r = PutVariants();
      } else if (name == kScanPartition) {
        r = Scan(h, {.partitions = {0}},
                 [this](int64_t i) { return source_.partition(i) == 0; });
      } else if (name == kScanTopic) {
        r = Scan(h, {.topics = {source_.topics()[0]}}, [this](int64_t i) {
          return source_.topic(i) == source_.topics()[0];
        });
      } else if (name == kPutSqlite) {
        r = PutSqlite(h);
        if (r.ok()) put_sqlite = *r;
      } else if (name == kPutRedis) {
        r = PutRedis(h);
        if (r.ok() && r->messages > 0) put_redis = *r;
      } else if (name == kClaimCompleteRedis) {
        r = ClaimCompleteRedis(h);
        if (r.ok() && r->messages > 0) claim_redis = *r;
      } else if (name == kClaimSparse) {
        r = ClaimSparse();
      } else if (name == kPutDedup) {
        r = PutDedup(h);
        if (r.ok()) put_dedup = *r;
      } else if (name == kSubscribe || name == kSubscribe10) {
        r = Subscribe(name, name == kSubscribe ? 1 : 10);
        if (r.ok()) (name == kSubscribe ? subscribe : subscribe10) = *r;
      } else {
        const bool checked = name == kScanLevelDbChecked;
        r = ScanLevelDb(h, checked);
        if (r.ok()) (checked ? scan_leveldb_checked : scan_leveldb) = *r;
      }
      if (!r.ok()) {
        return absl::Status(r.status().code(),
                            absl::StrCat(name, ": ", r.status().message()));
      }
      if (r->messages > 0) PrintLine(name, *r);  // Else printed its own.
      if (h != nullptr) {
        std::printf("%s latency micros/call : %s\n", name.c_str(),
                    h->Summary().c_str());
      }
      std::fflush(stdout);
    }
    // One `ratio A/B : R` line when both workloads ran.
    auto print_ratio = [](const char* name, const std::optional<Result>& a,
                          const std::optional<Result>& b) {
      if (a && b) PrintRatio(name, *a, *b);
    };
    print_ratio("put/leveldb_put", put, fill);
    print_ratio("scan/leveldb_scan", scan, scan_leveldb);
    print_ratio("scan_lanes/leveldb_scan", scan_lanes, scan_leveldb);
    print_ratio("leveldb_scan_checked/leveldb_scan", scan_leveldb_checked,
                scan_leveldb);
    print_ratio("scan/leveldb_scan_checked", scan, scan_leveldb_checked);
    print_ratio("subscribe/leveldb_put", subscribe, fill);
    print_ratio("subscribe_10/leveldb_put", subscribe10, fill);
    print_ratio("put_dedup/put", put_dedup, put);
    print_ratio("put/sqlite_put", put, put_sqlite);
    print_ratio("put/redis_xadd", put, put_redis);
    print_ratio("claim_complete/sqlite_claim_complete", claim, claim_sqlite);
    print_ratio("claim_complete/redis_claim_complete", claim, claim_redis);
    std::fflush(stdout);
    return absl::OkStatus();
  }

 private:
  absl::Status MakeDirectories() {
    if (config_.db.empty()) {
      std::string tmpl = "/tmp/hq_bench-XXXXXX";
      if (mkdtemp(tmpl.data()) == nullptr) {
        return absl::InternalError("cannot create a directory under /tmp");
      }
      root_ = tmpl;
      remove_root_ = true;
    } else {
      root_ = config_.db;
      std::error_code ec;
      std::filesystem::create_directories(root_, ec);
      if (ec) {
        return absl::InternalError(
            absl::StrCat("cannot create --db ", root_, ": ", ec.message()));
      }
    }
    hq_path_ = root_ + "/hq";
    raw_path_ = root_ + "/leveldb";
    return absl::OkStatus();
  }

  void PrintHeader() const {
    const LayoutCodec& codec = LayoutCodec::For(config_.layout);
    size_t key_bytes = 0;
    for (const std::string& topic : source_.topics()) {
      std::string key;
      codec.AppendMessageKey(&key, kQueueId, 0, 0, topic, MessageId{});
      key_bytes += key.size();
    }
    const double avg_key = static_cast<double>(key_bytes) /
                           static_cast<double>(source_.topics().size());
    std::string value;
    format::AppendMessageValue(&value, "", source_.payload(0));
    std::string cpu_cache = "unknown";
    const std::string cpu = CpuSummary(&cpu_cache);
    const double raw_mb = (avg_key + static_cast<double>(value.size())) *
                          static_cast<double>(config_.num) / 1048576.0;

    std::printf("hq:          version %s\n", HQ_VERSION);
    std::printf("LevelDB:     version %d.%d\n", leveldb::kMajorVersion,
                leveldb::kMinorVersion);
    std::printf("Date:        %s\n",
                absl::FormatTime("%Y-%m-%d %H:%M:%S %Z", absl::Now(),
                                 absl::LocalTimeZone())
                    .c_str());
    std::printf("CPU:         %s\n", cpu.c_str());
    std::printf("CPUCache:    %s\n", cpu_cache.c_str());
    std::printf("Keys:        %.1f bytes each (%s layout, avg over topics)\n",
                avg_key, std::string(LayoutName(config_.layout)).c_str());
    std::printf(
        "Values:      %zu bytes each (%zu-byte payload, about half "
        "compressible)\n",
        value.size(), config_.value_size);
    std::printf("Entries:     %" PRId64 "\n", config_.num);
    std::printf("RawSize:     %.1f MB (estimated keys + values)\n", raw_mb);
    std::printf("Layout:      %s\n",
                std::string(LayoutName(config_.layout)).c_str());
    std::printf("Partitions:  %u\n", config_.partitions);
    std::printf("Priorities:  %d\n", config_.priorities);
    std::printf("Topics:      %d\n", config_.topics);
    std::printf("Batch:       %" PRId64 "\n", config_.batch);
    std::printf("Sync:        %s\n", config_.sync ? "true" : "false");
    std::printf("Cache:       %zu bytes\n", config_.cache_bytes);
    std::printf("WriteBuffer: %zu bytes\n", hq_options_.write_buffer_bytes);
    std::printf("Bloom:       %d bits/key\n", hq_options_.bloom_bits_per_key);
    std::printf("DB:          %s%s\n", root_.c_str(),
                remove_root_ ? " (removed at the end)" : "");
    std::printf("Throughput:  MB/s counts payload bytes only\n");
#if !defined(__OPTIMIZE__)
    std::printf(
        "WARNING: Optimization is disabled: benchmarks unnecessarily "
        "slow\n");
#endif
#ifndef NDEBUG
    std::printf(
        "WARNING: Assertions are enabled; benchmarks unnecessarily "
        "slow\n");
#endif
    std::printf("------------------------------------------------\n");
    std::fflush(stdout);
  }

  // ---- Opening and closing.

  // Opens a fresh hq Db holding one empty queue.
  absl::Status OpenFreshHq() {
    CloseHq();
    HQ_RETURN_IF_ERROR(
        FromLevelDb(leveldb::DestroyDB(hq_path_, leveldb::Options()),
                    absl::StrCat("destroying ", hq_path_)));
    HQ_ASSIGN_OR_RETURN(hq_db_, Db::Open(hq_path_, hq_options_));
    HQ_ASSIGN_OR_RETURN(queue_,
                        hq_db_->CreateQueue(kQueueName, queue_options_));
    const uint32_t id = static_cast<QueueImpl*>(queue_)->id();
    if (id != kQueueId) {
      return absl::InternalError(absl::StrFormat(
          "the first queue of a fresh hq Db has id %d, not %d: update "
          "kQueueId so that fillseq_leveldb writes hq's keys",
          id, kQueueId));
    }
    return absl::OkStatus();
  }

  void CloseHq() {
    queue_ = nullptr;
    hq_db_.reset();
  }

  // Closes and reopens the hq Db and the raw LevelDB (untimed), so every
  // scan starts the same way: cold block cache, warm page cache, nothing in
  // the memtable, no compaction due.
  absl::Status ReopenHq() {
    CloseHq();
    HQ_ASSIGN_OR_RETURN(hq_db_, Db::Open(hq_path_, hq_options_));
    HQ_ASSIGN_OR_RETURN(queue_, hq_db_->OpenQueue(kQueueName));
    WaitForCompactions(static_cast<DbImpl*>(hq_db_.get())->leveldb());
    return absl::OkStatus();
  }
  absl::Status ReopenRaw() {
    HQ_RETURN_IF_ERROR(ReopenRawDb(hq_options_, raw_path_, &raw_));
    WaitForCompactions(raw_.db.get());
    return absl::OkStatus();
  }

  // Opens a fresh raw LevelDB.
  absl::Status OpenFreshRaw() {
    return OpenFreshRawDb(hq_options_, raw_path_, &raw_);
  }

  void CloseRaw() {
    raw_.db.reset();
    raw_.filter.reset();
    raw_.cache.reset();
  }

  // ---- Workloads. Never inlined, so that a profiler (perf, callgrind
  // --toggle-collect) can tell them apart.

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Put(Histogram* hist) {
    HQ_RETURN_IF_ERROR(OpenFreshHq());
    return TimedPuts(ShapeFromFlags(), hist, /*dedup=*/false, nullptr);
  }

  // Eight put runs, each into a fresh Db: 1 and N threads (N = --threads,
  // or 8 if that is 1), batch 1 and 100, sync off (--num messages) and on
  // (--sync_num). Prints a line each and the ratios that show batching and
  // group commit.
  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> PutVariants() {
    const int many = config_.threads > 1 ? config_.threads : 8;
    const int64_t sync_num = std::min(config_.num, config_.sync_num);
    absl::flat_hash_map<std::string, Result> results;
    auto name = [](int threads, int64_t batch, bool sync) {
      return absl::StrFormat("put_t%d_b%d%s", threads, batch,
                             sync ? "_sync" : "");
    };
    for (const bool sync : {false, true}) {
      for (const int threads : {1, many}) {
        for (const int64_t batch : {int64_t{1}, int64_t{100}}) {
          const PutShape shape{sync ? sync_num : config_.num, threads, batch,
                               sync};
          HQ_RETURN_IF_ERROR(OpenFreshHq());
          HQ_ASSIGN_OR_RETURN(const Result r,
                              TimedPuts(shape, nullptr, false, nullptr));
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

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> PutDedup(Histogram* hist) {
    HQ_RETURN_IF_ERROR(OpenFreshHq());
    const int64_t heap_before = HeapKb();
    int64_t duplicates = 0;
    HQ_ASSIGN_OR_RETURN(Result first,
                        TimedPuts(ShapeFromFlags(), hist, true, &duplicates));
    if (duplicates != 0) {
      return absl::DataLossError(
          absl::StrFormat("%d of %d unique dedup keys were reported duplicates",
                          duplicates, config_.num));
    }
    HQ_ASSIGN_OR_RETURN(
        Result again, TimedPuts(ShapeFromFlags(), nullptr, true, &duplicates));
    if (duplicates != config_.num) {
      return absl::DataLossError(
          absl::StrFormat("%d of %d repeated dedup keys were found duplicates",
                          duplicates, config_.num));
    }
    PrintLine(absl::StrCat(kPutDedup, "_duplicates"), again);
    std::printf("put_dedup heap_kb : %lld\n",
                static_cast<long long>(HeapKb() - heap_before));
    return first;
  }

  // Counts deliveries; the first subscription's listener also records the
  // latency from Put to listener (the put time is in the payload).
  class BenchListener : public MessageListener {
   public:
    explicit BenchListener(Histogram* latency) : latency_(latency) {}
    absl::Status OnMessage(const MessageView& m) override {
      if (latency_ != nullptr && m.payload.size() >= 8) {
        int64_t put_ns;
        std::memcpy(&put_ns, m.payload.data(), 8);
        const int64_t now_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(
                SteadyClock::now().time_since_epoch())
                .count();
        latency_->Add(static_cast<double>(now_ns - put_ns) / 1e3);
      }
      count_.fetch_add(1, std::memory_order_release);
      return absl::OkStatus();
    }
    int64_t count() const { return count_.load(std::memory_order_acquire); }

   private:
    Histogram* const latency_;  // Only the delivery thread touches it.
    std::atomic<int64_t> count_{0};
  };

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Subscribe(
      const std::string& name, int subscriptions) {
    HQ_RETURN_IF_ERROR(OpenFreshHq());
    const int64_t num = config_.num;
    Histogram latency;
    latency.Reserve(static_cast<size_t>(num));
    std::vector<std::unique_ptr<BenchListener>> listeners;
    for (int i = 0; i < subscriptions; ++i) {
      listeners.push_back(
          std::make_unique<BenchListener>(i == 0 ? &latency : nullptr));
      HQ_RETURN_IF_ERROR(queue_
                             ->Subscribe({.name = absl::StrCat("bench", i)},
                                         listeners.back().get())
                             .status());
    }
    const int64_t batch = config_.batch;
    const size_t width = static_cast<size_t>(std::min(batch, num));
    const size_t size = std::max<size_t>(8, config_.value_size);
    std::vector<std::string> payloads(width, std::string(size, 'x'));
    std::vector<Message> messages(width);
    PutOptions po;
    po.sync = config_.sync;
    const SteadyClock::time_point start = SteadyClock::now();
    for (int64_t i = 0; i < num; i += batch) {
      const int64_t n = std::min(batch, num - i);
      const int64_t put_ns =
          std::chrono::duration_cast<std::chrono::nanoseconds>(
              SteadyClock::now().time_since_epoch())
              .count();
      for (int64_t j = 0; j < n; ++j) {
        std::string& p = payloads[static_cast<size_t>(j)];
        const std::string_view body = source_.payload(i + j);
        p.replace(0, std::min(size, body.size()), body);
        std::memcpy(p.data(), &put_ns, 8);
        Message& m = messages[static_cast<size_t>(j)];
        m.topic = source_.topic(i + j);
        m.payload = p;
        m.partition = source_.partition(i + j);
        m.priority = source_.priority(i + j);
      }
      if (batch == 1) {
        HQ_RETURN_IF_ERROR(queue_->Put(messages[0], po).status());
      } else {
        HQ_RETURN_IF_ERROR(queue_->PutBatch(
            std::span<const Message>(messages.data(), static_cast<size_t>(n)),
            nullptr, po));
      }
    }
    // Until every subscription has every message (a liveness bound of
    // ten minutes).
    const SteadyClock::time_point give_up =
        SteadyClock::now() + std::chrono::minutes(10);
    for (const auto& l : listeners) {
      while (l->count() < num) {
        if (SteadyClock::now() > give_up) {
          return absl::DeadlineExceededError(absl::StrFormat(
              "a subscription got %d of %d messages in 10 minutes", l->count(),
              num));
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
    const double seconds = MicrosSince(start) / 1e6;
    CloseHq();  // Stops delivery before the listeners go.
    std::printf("%s latency micros : %s\n", name.c_str(),
                latency.Summary().c_str());
    return Result{seconds, num, num * static_cast<int64_t>(config_.value_size)};
  }

  // How a put workload writes: `num` messages from `threads` threads,
  // `batch` per call, fsync'ed or not.
  struct PutShape {
    int64_t num = 0;
    int threads = 1;
    int64_t batch = 1;
    bool sync = false;
  };
  PutShape ShapeFromFlags() const {
    return {config_.num, config_.threads, config_.batch, config_.sync};
  }

  // Puts messages as `put` describes, shaped by `shape`, with dedup keys if
  // `dedup` (counting in `*duplicates` the puts found duplicates).
  absl::StatusOr<Result> TimedPuts(const PutShape& shape, Histogram* hist,
                                   bool dedup, int64_t* duplicates) {
    const int64_t num = shape.num;
    const int threads = shape.threads;
    // Thread t writes messages [num*t/T, num*(t+1)/T), each with its own
    // histogram and duplicate count, merged at the end.
    std::vector<Histogram> hists(static_cast<size_t>(threads));
    std::vector<int64_t> dups(static_cast<size_t>(threads), 0);
    std::vector<absl::Status> status(static_cast<size_t>(threads));
    const SteadyClock::time_point start = SteadyClock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) {
      pool.emplace_back([&, t] {
        const size_t k = static_cast<size_t>(t);
        status[k] =
            PutRange(shape, num * t / threads, num * (t + 1) / threads,
                     hist != nullptr ? &hists[k] : nullptr, dedup, &dups[k]);
      });
    }
    for (std::thread& t : pool) t.join();
    const double seconds = MicrosSince(start) / 1e6;
    for (const absl::Status& s : status) HQ_RETURN_IF_ERROR(s);
    if (duplicates != nullptr) {
      *duplicates = 0;
      for (int64_t d : dups) *duplicates += d;
    }
    if (hist != nullptr) {
      for (Histogram& h : hists) hist->Merge(h);
    }
    put_messages_ = num;
    WaitForCompactions(static_cast<DbImpl*>(hq_db_.get())->leveldb());
    return Result{seconds, num, num * static_cast<int64_t>(config_.value_size)};
  }

  // Puts messages [begin, end) as `put` describes (one thread's share).
  absl::Status PutRange(const PutShape& shape, int64_t begin, int64_t end,
                        Histogram* hist, bool dedup, int64_t* duplicates) {
    const int64_t batch = shape.batch;
    if (hist != nullptr) {
      hist->Reserve(static_cast<size_t>((end - begin) / batch + 1));
    }
    PutOptions po;
    po.sync = shape.sync;
    const size_t width =
        static_cast<size_t>(std::max<int64_t>(1, std::min(batch, end - begin)));
    std::vector<Message> messages(width);
    std::vector<std::string> keys(dedup ? width : 0);
    std::vector<PutResult> results;
    for (int64_t i = begin; i < end; i += batch) {
      const int64_t n = std::min(batch, end - i);
      for (int64_t j = 0; j < n; ++j) {
        Message& m = messages[static_cast<size_t>(j)];
        m.topic = source_.topic(i + j);
        m.payload = source_.payload(i + j);
        m.partition = source_.partition(i + j);
        m.priority = source_.priority(i + j);
        if (dedup) {
          std::string& k = keys[static_cast<size_t>(j)];
          k.clear();
          absl::StrAppend(&k, "https://s", (i + j) % 1000, ".example/", i + j);
          m.dedup_key = k;
        }
      }
      const SteadyClock::time_point op_start =
          hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
      if (batch == 1) {
        absl::StatusOr<PutResult> r = queue_->Put(messages[0], po);
        if (!r.ok()) return r.status();
        if (r->duplicate) ++*duplicates;
      } else {
        HQ_RETURN_IF_ERROR(queue_->PutBatch(
            std::span<const Message>(messages.data(), static_cast<size_t>(n)),
            dedup ? &results : nullptr, po));
        if (dedup) {
          for (const PutResult& r : results) *duplicates += r.duplicate;
        }
      }
      if (hist != nullptr) hist->Add(MicrosSince(op_start));
    }
    return absl::OkStatus();
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> CreateQueues(Histogram* hist) {
    if (hq_db_ == nullptr) HQ_RETURN_IF_ERROR(OpenFreshHq());
    const int64_t num = config_.num;
    if (hist != nullptr) hist->Reserve(static_cast<size_t>(num));
    std::string name;
    const SteadyClock::time_point start = SteadyClock::now();
    for (int64_t i = 0; i < num; ++i) {
      name = absl::StrCat("q", i);
      const SteadyClock::time_point op_start =
          hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
      HQ_RETURN_IF_ERROR(hq_db_->CreateQueue(name, queue_options_).status());
      if (hist != nullptr) hist->Add(MicrosSince(op_start));
    }
    const double seconds = MicrosSince(start) / 1e6;
    WaitForCompactions(static_cast<DbImpl*>(hq_db_.get())->leveldb());
    return Result{seconds, num, 0};
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Reopen() {
    HQ_RETURN_IF_ERROR(ReopenHq());  // Untimed: log -> tables.
    CloseHq();
    const int64_t heap_before = HeapKb();
    const SteadyClock::time_point start = SteadyClock::now();
    HQ_ASSIGN_OR_RETURN(hq_db_, Db::Open(hq_path_, hq_options_));
    const double seconds = MicrosSince(start) / 1e6;
    std::printf("reopen heap_kb : %lld\n",
                static_cast<long long>(HeapKb() - heap_before));
    HQ_ASSIGN_OR_RETURN(queue_, hq_db_->OpenQueue(kQueueName));
    return Result{seconds, 1, 0};
  }

  // Three Db::Backup calls of the open hq Db, timed; prints `name` with the
  // times, their median and the sizes.
  absl::Status TimedBackups(const std::string& name) {
    std::vector<double> ms;
    BackupReport report;
    for (int i = 0; i < 3; ++i) {
      const std::string dest = absl::StrCat(root_, "/", name, "-", i);
      std::error_code ec;
      std::filesystem::remove_all(dest, ec);
      const SteadyClock::time_point start = SteadyClock::now();
      HQ_ASSIGN_OR_RETURN(report, hq_db_->Backup(dest));
      ms.push_back(MicrosSince(start) / 1e3);
      std::filesystem::remove_all(dest, ec);
    }
    std::vector<double> sorted = ms;
    std::sort(sorted.begin(), sorted.end());
    std::printf(
        "%s : %.1f %.1f %.1f ms; median %.1f ms; %lld tables (%lld linked), "
        "%.1f MB of tables, %.1f MB copied\n",
        name.c_str(), ms[0], ms[1], ms[2], sorted[1],
        static_cast<long long>(report.tables),
        static_cast<long long>(report.tables_linked),
        static_cast<double>(report.table_bytes) / 1048576.0,
        static_cast<double>(report.bytes_copied) / 1048576.0);
    std::fflush(stdout);
    return absl::OkStatus();
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> BackupWorkload() {
    HQ_RETURN_IF_ERROR(ReopenHq());
    HQ_RETURN_IF_ERROR(TimedBackups("backup_linked"));
    // An Env that is not leveldb::Env::Default(): Backup copies.
    class PassThroughEnv final : public leveldb::EnvWrapper {
     public:
      PassThroughEnv() : leveldb::EnvWrapper(leveldb::Env::Default()) {}
    };
    PassThroughEnv env;
    CloseHq();
    Options options = hq_options_;
    options.env = &env;
    HQ_ASSIGN_OR_RETURN(hq_db_, Db::Open(hq_path_, options));
    const absl::Status s = TimedBackups("backup_copied");
    CloseHq();
    HQ_RETURN_IF_ERROR(s);
    HQ_RETURN_IF_ERROR(ReopenHq());
    return Result{};
  }

  // Fills the fresh queue with --num messages, untimed, in batches.
  absl::Status FillQueue() {
    const int64_t num = config_.num;
    std::vector<Message> messages;
    for (int64_t i = 0; i < num; i += 1000) {
      const int64_t n = std::min<int64_t>(1000, num - i);
      messages.resize(static_cast<size_t>(n));
      for (int64_t j = 0; j < n; ++j) {
        Message& m = messages[static_cast<size_t>(j)];
        m.topic = source_.topic(i + j);
        m.payload = source_.payload(i + j);
        m.partition = source_.partition(i + j);
        m.priority = source_.priority(i + j);
      }
      HQ_RETURN_IF_ERROR(queue_->PutBatch(messages, nullptr));
    }
    WaitForCompactions(static_cast<DbImpl*>(hq_db_.get())->leveldb());
    return absl::OkStatus();
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ClaimComplete(
      Histogram* hist) {
    HQ_RETURN_IF_ERROR(OpenFreshHq());
    HQ_RETURN_IF_ERROR(FillQueue());
    put_messages_ = config_.num;
    HQ_ASSIGN_OR_RETURN(ConsumerGroup * group, queue_->Group("bench"));
    uint64_t bytes = 0;
    const SteadyClock::time_point start = SteadyClock::now();
    HQ_ASSIGN_OR_RETURN(const int64_t count, Drain(group, hist, &bytes));
    const double seconds = MicrosSince(start) / 1e6;
    sink = sink + bytes;
    if (count != config_.num) {
      return absl::DataLossError(absl::StrFormat(
          "claimed %d messages of the %d written", count, config_.num));
    }
    return Result{seconds, count,
                  count * static_cast<int64_t>(config_.value_size)};
  }

  // Claims and completes everything `group` has; returns how many.
  // With `hist`, records each Claim+Complete call; with `bytes`, adds the
  // payload bytes claimed (so that no read is optimised away).
  absl::StatusOr<int64_t> Drain(ConsumerGroup* group, Histogram* hist = nullptr,
                                uint64_t* bytes = nullptr) {
    const ClaimOptions co{.max = config_.claim_batch};
    int64_t n = 0;
    for (;;) {
      const SteadyClock::time_point op_start =
          hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
      HQ_ASSIGN_OR_RETURN(std::vector<Task> tasks, group->Claim(co));
      if (tasks.empty()) return n;
      if (bytes != nullptr) {
        for (const Task& t : tasks) *bytes += t.payload.size();
      }
      HQ_RETURN_IF_ERROR(group->Complete(tasks));
      if (hist != nullptr) hist->Add(MicrosSince(op_start));
      n += static_cast<int64_t>(tasks.size());
    }
  }

  // Puts 1000 messages into 10 topics of `q`, then times draining them.
  absl::StatusOr<Result> SparseRound(Queue* q, ConsumerGroup* group) {
    std::vector<Message> batch(1000);
    std::vector<std::string> topics;
    for (int t = 0; t < 10; ++t) topics.push_back(absl::StrCat("busy", t));
    for (size_t i = 0; i < batch.size(); ++i) {
      batch[i].topic = topics[i % topics.size()];
      batch[i].payload = source_.payload(static_cast<int64_t>(i));
    }
    HQ_RETURN_IF_ERROR(q->PutBatch(batch, nullptr));
    const SteadyClock::time_point start = SteadyClock::now();
    HQ_ASSIGN_OR_RETURN(const int64_t n, Drain(group));
    const double seconds = MicrosSince(start) / 1e6;
    if (n != 1000) {
      return absl::DataLossError(absl::StrFormat("claimed %d of 1000", n));
    }
    return Result{seconds, n, n * static_cast<int64_t>(config_.value_size)};
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ClaimSparse() {
    QueueOptions qo = queue_options_;
    qo.layout = Layout::kTopic;
    qo.partitions = 1;
    const std::string path = root_ + "/sparse";
    HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
    Result sparse, small;
    {
      HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, hq_options_));
      HQ_ASSIGN_OR_RETURN(Queue * q, db->CreateQueue("sparse", qo));
      std::vector<Message> batch;
      std::vector<std::string> topics;
      for (int64_t i = 0; i < config_.num; i += 1000) {
        const int64_t n = std::min<int64_t>(1000, config_.num - i);
        topics.clear();
        batch.clear();
        for (int64_t j = 0; j < n; ++j)
          topics.push_back(absl::StrCat("t", i + j));
        for (int64_t j = 0; j < n; ++j) {
          batch.push_back({.topic = topics[static_cast<size_t>(j)],
                           .payload = source_.payload(i + j)});
        }
        HQ_RETURN_IF_ERROR(q->PutBatch(batch, nullptr));
      }
      HQ_ASSIGN_OR_RETURN(ConsumerGroup * g, q->Group("g"));
      HQ_ASSIGN_OR_RETURN(const int64_t drained, Drain(g));
      if (drained != config_.num) {
        return absl::DataLossError("claim_sparse: the fill was not drained");
      }
    }
    {
      HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, hq_options_));
      WaitForCompactions(static_cast<DbImpl*>(db.get())->leveldb());
      HQ_ASSIGN_OR_RETURN(Queue * q, db->OpenQueue("sparse"));
      const SteadyClock::time_point start = SteadyClock::now();
      HQ_ASSIGN_OR_RETURN(ConsumerGroup * g, q->Group("g"));
      const double load_micros = MicrosSince(start);
      std::printf("claim_sparse_load : %.1f ms; %.2f micros/topic\n",
                  load_micros / 1e3,
                  load_micros / static_cast<double>(config_.num));
      HQ_ASSIGN_OR_RETURN(sparse, SparseRound(q, g));
    }
    {
      HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
      HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, hq_options_));
      HQ_ASSIGN_OR_RETURN(Queue * q, db->CreateQueue("sparse", qo));
      HQ_ASSIGN_OR_RETURN(ConsumerGroup * g, q->Group("g"));
      HQ_ASSIGN_OR_RETURN(small, SparseRound(q, g));
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
    PrintLine("claim_sparse", sparse);
    PrintLine("claim_sparse_small", small);
    std::printf("ratio claim_sparse/claim_sparse_small : %.2f\n",
                sparse.msgs_per_sec() / small.msgs_per_sec());
    return Result{};
  }

  // A fresh SQLite work queue in root_/NAME: WAL journal, synchronous
  // NORMAL (FULL with --sync), the tasks table and its index.
  absl::Status OpenSqliteQueue(const std::string& name, Sqlite* db) {
    const std::string path = root_ + "/" + name;
    for (const char* suffix : {"", "-wal", "-shm"}) {
      std::error_code ec;
      std::filesystem::remove(path + suffix, ec);
    }
    HQ_RETURN_IF_ERROR(db->Open(path));
    HQ_RETURN_IF_ERROR(db->Exec("PRAGMA journal_mode=WAL"));
    HQ_RETURN_IF_ERROR(db->Exec(config_.sync ? "PRAGMA synchronous=FULL"
                                             : "PRAGMA synchronous=NORMAL"));
    HQ_RETURN_IF_ERROR(db->Exec(
        "CREATE TABLE tasks(id INTEGER PRIMARY KEY, priority INTEGER, "
        "topic TEXT, payload BLOB, state INTEGER, lease_until INTEGER, "
        "attempts INTEGER)"));
    return db->Exec(
        "CREATE INDEX tasks_ready ON tasks(state, priority DESC, id)");
  }

  // Inserts the --num messages into the tasks table, `batch` rows per
  // transaction (one call in `hist` per transaction).
  absl::Status SqliteEnqueue(Sqlite* db, int64_t batch, Histogram* hist) {
    HQ_ASSIGN_OR_RETURN(sqlite3_stmt * insert,
                        db->Prepare("INSERT INTO tasks(priority, topic, "
                                    "payload, state, lease_until, attempts) "
                                    "VALUES(?, ?, ?, 0, 0, 0)"));
    for (int64_t i = 0; i < config_.num; i += batch) {
      const SteadyClock::time_point op_start =
          hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
      const int64_t end = std::min(config_.num, i + batch);
      HQ_RETURN_IF_ERROR(db->Exec("BEGIN"));
      for (int64_t j = i; j < end; ++j) {
        const std::string& topic = source_.topic(j);
        const std::string_view payload = source_.payload(j);
        sqlite3_bind_int(insert, 1, source_.priority(j));
        sqlite3_bind_text(insert, 2, topic.data(),
                          static_cast<int>(topic.size()), SQLITE_STATIC);
        sqlite3_bind_blob(insert, 3, payload.data(),
                          static_cast<int>(payload.size()), SQLITE_STATIC);
        HQ_RETURN_IF_ERROR(db->StepDone(insert));
      }
      HQ_RETURN_IF_ERROR(db->Exec("COMMIT"));
      if (hist != nullptr) hist->Add(MicrosSince(op_start));
    }
    return absl::OkStatus();
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> PutSqlite(Histogram* hist) {
    Sqlite db;
    HQ_RETURN_IF_ERROR(OpenSqliteQueue("sqlite-put.db", &db));
    const SteadyClock::time_point start = SteadyClock::now();
    HQ_RETURN_IF_ERROR(SqliteEnqueue(&db, config_.batch, hist));
    const double seconds = MicrosSince(start) / 1e6;
    return Result{seconds, config_.num,
                  config_.num * static_cast<int64_t>(config_.value_size)};
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ClaimCompleteSqlite(
      Histogram* hist) {
    Sqlite db;
    HQ_RETURN_IF_ERROR(OpenSqliteQueue("sqlite.db", &db));
    HQ_RETURN_IF_ERROR(SqliteEnqueue(&db, config_.num, nullptr));
    const int n = static_cast<int>(config_.claim_batch);
    HQ_ASSIGN_OR_RETURN(
        sqlite3_stmt * claim,
        db.Prepare("UPDATE tasks SET state = 1, lease_until = ?1, "
                   "attempts = attempts + 1 WHERE id IN (SELECT id FROM "
                   "tasks WHERE state = 0 ORDER BY priority DESC, id LIMIT "
                   "?2) RETURNING id, payload"));
    std::string del = "DELETE FROM tasks WHERE id IN (?";
    for (int i = 1; i < n; ++i) del += ",?";
    del += ")";
    HQ_ASSIGN_OR_RETURN(sqlite3_stmt * complete, db.Prepare(del));
    std::vector<int64_t> ids;
    int64_t count = 0;
    uint64_t bytes = 0;
    const SteadyClock::time_point start = SteadyClock::now();
    for (;;) {
      const SteadyClock::time_point op_start =
          hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
      ids.clear();
      sqlite3_bind_int64(claim, 1, absl::ToUnixMillis(absl::Now()) + 30000);
      sqlite3_bind_int(claim, 2, n);
      int rc;
      while ((rc = sqlite3_step(claim)) == SQLITE_ROW) {
        ids.push_back(sqlite3_column_int64(claim, 0));
        bytes += static_cast<uint64_t>(sqlite3_column_bytes(claim, 1));
      }
      sqlite3_reset(claim);
      if (rc != SQLITE_DONE) return db.Error("claiming");
      if (ids.empty()) break;
      // Unused placeholders of a short last batch stay NULL: match nothing.
      sqlite3_clear_bindings(complete);
      for (size_t i = 0; i < ids.size(); ++i) {
        sqlite3_bind_int64(complete, static_cast<int>(i) + 1, ids[i]);
      }
      HQ_RETURN_IF_ERROR(db.StepDone(complete));
      if (hist != nullptr) hist->Add(MicrosSince(op_start));
      count += static_cast<int64_t>(ids.size());
    }
    const double seconds = MicrosSince(start) / 1e6;
    sink = sink + bytes;
    if (count != config_.num) {
      return absl::DataLossError(absl::StrFormat(
          "sqlite claimed %d tasks of the %d written", count, config_.num));
    }
    return Result{seconds, count,
                  count * static_cast<int64_t>(config_.value_size)};
  }

  // A connection to the bench's redis-server, emptied (FLUSHALL). The
  // server starts at the first Redis workload, in root_/redis, and stops
  // with the bench. NotFound when redis-server is not installed.
  absl::StatusOr<RedisClient*> RedisConnection() {
    if (redis_ == nullptr) {
      HQ_ASSIGN_OR_RETURN(redis_,
                          RedisServer::Start(root_ + "/redis", config_.sync));
      std::printf(
          "Redis:       redis-server %s on 127.0.0.1:%d, appendonly, "
          "appendfsync %s\n",
          redis_->version().c_str(), redis_->port(),
          config_.sync ? "always" : "no");
      HQ_ASSIGN_OR_RETURN(redis_client_, RedisClient::Connect(redis_->port()));
    }
    HQ_RETURN_IF_ERROR(redis_client_->Command({"FLUSHALL"}).status());
    return redis_client_.get();
  }

  // Redis stream of partition p.
  static std::string RedisStream(uint32_t p) {
    return absl::StrCat("bench:", p);
  }

  // XADDs the --num messages to their partitions' streams, `batch` commands
  // per pipeline (one call in `hist` per pipeline).
  absl::Status RedisEnqueue(RedisClient* c, int64_t batch, Histogram* hist) {
    std::vector<std::string> streams;
    for (uint32_t p = 0; p < config_.partitions; ++p) {
      streams.push_back(RedisStream(p));
    }
    std::vector<RespValue> replies;
    for (int64_t i = 0; i < config_.num; i += batch) {
      const SteadyClock::time_point op_start =
          hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
      const int64_t end = std::min(config_.num, i + batch);
      for (int64_t j = i; j < end; ++j) {
        c->Append({"XADD", streams[source_.partition(j)], "*", "t",
                   source_.topic(j), "p", source_.payload(j)});
      }
      HQ_RETURN_IF_ERROR(c->Flush(&replies));
      for (const RespValue& r : replies) {
        if (r.type != RespValue::Type::kString) {
          return absl::InternalError(absl::StrCat("XADD: ", r.str));
        }
      }
      if (hist != nullptr) hist->Add(MicrosSince(op_start));
    }
    return absl::OkStatus();
  }

  // A Redis workload's answer when redis-server is not installed.
  static absl::StatusOr<Result> SkipRedis(const std::string& name,
                                          const absl::Status& s) {
    if (s.code() != absl::StatusCode::kNotFound) return s;
    std::printf("%s : skipped: %s\n", name.c_str(),
                std::string(s.message()).c_str());
    return Result{};
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> PutRedis(Histogram* hist) {
    absl::StatusOr<RedisClient*> c = RedisConnection();
    if (!c.ok()) return SkipRedis(kPutRedis, c.status());
    const SteadyClock::time_point start = SteadyClock::now();
    HQ_RETURN_IF_ERROR(RedisEnqueue(*c, config_.batch, hist));
    const double seconds = MicrosSince(start) / 1e6;
    return Result{seconds, config_.num,
                  config_.num * static_cast<int64_t>(config_.value_size)};
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ClaimCompleteRedis(
      Histogram* hist) {
    absl::StatusOr<RedisClient*> connection = RedisConnection();
    if (!connection.ok()) {
      return SkipRedis(kClaimCompleteRedis, connection.status());
    }
    RedisClient* c = *connection;
    HQ_RETURN_IF_ERROR(RedisEnqueue(c, 1000, nullptr));
    std::vector<std::string> streams;
    const std::string count = absl::StrCat(config_.claim_batch);
    std::vector<std::string_view> read = {"XREADGROUP", "GROUP", "g",      "c",
                                          "COUNT",      count,   "STREAMS"};
    for (uint32_t p = 0; p < config_.partitions; ++p) {
      streams.push_back(RedisStream(p));
    }
    for (const std::string& s : streams) {
      HQ_RETURN_IF_ERROR(
          c->Command({"XGROUP", "CREATE", s, "g", "0"}).status());
      read.push_back(s);
    }
    for (size_t i = 0; i < streams.size(); ++i) read.push_back(">");
    int64_t done = 0;
    uint64_t bytes = 0;
    std::vector<RespValue> replies;
    std::vector<std::string_view> ack;
    const SteadyClock::time_point start = SteadyClock::now();
    for (;;) {
      const SteadyClock::time_point op_start =
          hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
      // Reply: nil, or [[stream, [[id, [field, value, ...]], ...]], ...].
      HQ_ASSIGN_OR_RETURN(const RespValue got, c->Command(read));
      if (got.type != RespValue::Type::kArray) break;
      int64_t claimed = 0;
      for (const RespValue& stream : got.array) {
        if (stream.array.size() != 2) {
          return absl::InternalError("XREADGROUP: unexpected reply");
        }
        ack = {"XACK", stream.array[0].str, "g"};
        for (const RespValue& entry : stream.array[1].array) {
          if (entry.array.size() != 2 || entry.array[1].array.size() != 4) {
            return absl::InternalError("XREADGROUP: unexpected entry");
          }
          ack.push_back(entry.array[0].str);
          bytes += entry.array[1].array[3].str.size();
        }
        claimed += static_cast<int64_t>(ack.size() - 3);
        c->Append(ack);
      }
      if (claimed == 0) break;
      HQ_RETURN_IF_ERROR(c->Flush(&replies));
      int64_t acked = 0;
      for (const RespValue& r : replies) acked += r.integer;
      if (acked != claimed) {
        return absl::InternalError(absl::StrFormat(
            "XACK acknowledged %d of %d entries", acked, claimed));
      }
      if (hist != nullptr) hist->Add(MicrosSince(op_start));
      done += claimed;
    }
    const double seconds = MicrosSince(start) / 1e6;
    sink = sink + bytes;
    if (done != config_.num) {
      return absl::DataLossError(absl::StrFormat(
          "redis claimed %d entries of the %d written", done, config_.num));
    }
    return Result{seconds, done,
                  done * static_cast<int64_t>(config_.value_size)};
  }

  // many_topics: see the top of the file.
  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ManyTopics() {
    const int64_t num = config_.num;
    const int64_t topics = config_.many_topics;
    const int64_t batch = config_.batch;
    absl::flat_hash_map<std::string, Result> results;
    for (const Layout layout : {Layout::kTopic, Layout::kTime}) {
      const std::string ln(LayoutName(layout));
      auto line = [&ln](const char* what) {
        return absl::StrCat("many_topics_", what, "[", ln, "]");
      };
      const std::string path = root_ + "/many-" + ln;
      HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
      const int64_t heap_before = HeapKb();
      QueueOptions qo = queue_options_;
      qo.layout = layout;
      HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, hq_options_));
      HQ_ASSIGN_OR_RETURN(Queue * q, db->CreateQueue("many", qo));

      // Message i goes to topic u<i % topics>; the layout picks partitions.
      const size_t width = static_cast<size_t>(std::min(batch, num));
      std::vector<Message> messages(width);
      std::vector<std::string> names(width);
      SteadyClock::time_point start = SteadyClock::now();
      for (int64_t i = 0; i < num; i += batch) {
        const int64_t n = std::min(batch, num - i);
        for (int64_t j = 0; j < n; ++j) {
          const size_t k = static_cast<size_t>(j);
          names[k].clear();
          absl::StrAppend(&names[k], "u", (i + j) % topics);
          messages[k].topic = names[k];
          messages[k].payload = source_.payload(i + j);
          messages[k].priority = source_.priority(i + j);
        }
        if (batch == 1) {
          HQ_RETURN_IF_ERROR(q->Put(messages[0]).status());
        } else {
          HQ_RETURN_IF_ERROR(q->PutBatch(
              std::span<const Message>(messages.data(), static_cast<size_t>(n)),
              nullptr));
        }
      }
      const Result put{MicrosSince(start) / 1e6, num,
                       num * static_cast<int64_t>(config_.value_size)};
      PrintLine(line("put"), put);
      results[absl::StrCat("put", ln)] = put;
      const int64_t heap_put = HeapKb() - heap_before;
      WaitForCompactions(static_cast<DbImpl*>(db.get())->leveldb());

      // Reopen: Db::Open, then the first Group call (it reads the lane
      // directory).
      db.reset();
      start = SteadyClock::now();
      HQ_ASSIGN_OR_RETURN(db, Db::Open(path, hq_options_));
      PrintLine(line("reopen"), Result{MicrosSince(start) / 1e6, 1, 0});
      HQ_ASSIGN_OR_RETURN(q, db->OpenQueue("many"));
      start = SteadyClock::now();
      HQ_ASSIGN_OR_RETURN(ConsumerGroup * group, q->Group("g"));
      PrintLine(line("group_load"), Result{MicrosSince(start) / 1e6, 1, 0});
      const int64_t heap_load = HeapKb() - heap_before;

      // Whole-topic reads of random topics: up to 1000 of them, or as many
      // as 5 s allow.
      std::mt19937_64 rng(7);
      int64_t reads = 0, read_messages = 0;
      start = SteadyClock::now();
      while (reads < 1000 && MicrosSince(start) < 5e6) {
        const int64_t t =
            static_cast<int64_t>(rng() % static_cast<uint64_t>(topics));
        ScanOptions so;
        so.topics = {absl::StrCat("u", t)};
        HQ_ASSIGN_OR_RETURN(std::unique_ptr<Scanner> sc, q->NewScanner(so));
        int64_t got = 0;
        while (sc->Next()) ++got;
        HQ_RETURN_IF_ERROR(sc->status());
        const int64_t want = num / topics + (t < num % topics ? 1 : 0);
        if (got != want) {
          return absl::DataLossError(absl::StrFormat(
              "topic u%d: read %d messages, put %d", t, got, want));
        }
        read_messages += got;
        ++reads;
      }
      const Result read{MicrosSince(start) / 1e6, reads, 0};
      PrintLine(line("read_topic"), read);
      results[absl::StrCat("read", ln)] = read;

      // Claim across all topics.
      start = SteadyClock::now();
      HQ_ASSIGN_OR_RETURN(const int64_t claimed, Drain(group));
      const Result claim{MicrosSince(start) / 1e6, claimed,
                         claimed * static_cast<int64_t>(config_.value_size)};
      if (claimed != num) {
        return absl::DataLossError(
            absl::StrFormat("claimed %d of %d messages", claimed, num));
      }
      PrintLine(line("claim"), claim);
      results[absl::StrCat("claim", ln)] = claim;
      std::printf(
          "many_topics heap_kb[%s] : after put %lld; after group load %lld; "
          "after claim %lld\n",
          ln.c_str(), static_cast<long long>(heap_put),
          static_cast<long long>(heap_load),
          static_cast<long long>(HeapKb() - heap_before));
      std::fflush(stdout);
    }
    for (const char* what : {"put", "read", "claim"}) {
      PrintRatio(absl::StrCat("many_topics_", what,
                              std::string_view(what) == "read" ? "_topic" : "",
                              "[topic]/[time]"),
                 results[absl::StrCat(what, "topic")],
                 results[absl::StrCat(what, "time")]);
    }
    return Result{};
  }

  // recover: see the top of the file.
  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Recover() {
    const std::string path = root_ + "/recover";
    HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
    int out[2];
    if (pipe(out) != 0) return absl::InternalError("pipe() failed");
    const std::string self = std::filesystem::read_symlink("/proc/self/exe");
    const std::vector<std::string> args = {
        self, absl::StrCat("--recover_child=", path),
        absl::StrCat("--write_buffer_bytes=", hq_options_.write_buffer_bytes),
        absl::StrCat("--value_size=", config_.value_size)};
    std::vector<char*> argv;
    for (const std::string& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return absl::InternalError("fork() failed");
    if (pid == 0) {
      dup2(out[1], STDOUT_FILENO);
      close(out[0]);
      execv(argv[0], argv.data());
      _exit(127);
    }
    close(out[1]);
    std::string said;
    char buf[256];
    ssize_t n;
    while (said.find('\n') == std::string::npos &&
           (n = read(out[0], buf, sizeof(buf))) > 0) {
      said.append(buf, static_cast<size_t>(n));
    }
    close(out[0]);
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    int64_t written = 0;
    if (!absl::SimpleAtoi(
            absl::StripAsciiWhitespace(absl::StripPrefix(said, "READY ")),
            &written) ||
        written <= 0) {
      return absl::InternalError(
          absl::StrCat("the recover child said '", said, "'"));
    }
    const double log_mb = static_cast<double>(DirectoryBytes(path)) / 1048576.0;
    const SteadyClock::time_point start = SteadyClock::now();
    HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, hq_options_));
    const double seconds = MicrosSince(start) / 1e6;
    HQ_ASSIGN_OR_RETURN(Queue * q, db->OpenQueue(kQueueName));
    int64_t read = 0;
    {
      HQ_ASSIGN_OR_RETURN(std::unique_ptr<Scanner> sc, q->NewScanner({}));
      while (sc->Next()) ++read;
      HQ_RETURN_IF_ERROR(sc->status());
    }
    if (read != written) {
      return absl::DataLossError(absl::StrFormat(
          "after the kill, %d of %d messages are there", read, written));
    }
    std::printf("recover : %.1f MB of log with %lld messages\n", log_mb,
                static_cast<long long>(written));
    return Result{seconds, 1, 0};
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Leases() {
    const int64_t num = config_.num;
    std::mt19937_64 rng(42);
    auto far = [&] { return absl::Hours(1) + absl::Seconds(rng() % 3600); };
    std::vector<LeaseId> ids(static_cast<size_t>(num));
    const int64_t heap_before = HeapKb();
    {
      LeaseManagerImpl leases(Clock::Default());
      SteadyClock::time_point start = SteadyClock::now();
      for (int64_t i = 0; i < num; ++i) {
        HQ_ASSIGN_OR_RETURN(ids[static_cast<size_t>(i)],
                            leases.Create(far(), [] {}));
      }
      PrintLine("lease_create", Result{MicrosSince(start) / 1e6, num, 0});
      const int64_t heap_full = HeapKb();
      std::printf("lease memory : %.1f bytes/lease (heap growth)\n",
                  static_cast<double>(heap_full - heap_before) * 1024.0 /
                      static_cast<double>(num));
      std::shuffle(ids.begin(), ids.end(), rng);
      start = SteadyClock::now();
      for (LeaseId id : ids) HQ_RETURN_IF_ERROR(leases.Renew(id, far()));
      PrintLine("lease_renew", Result{MicrosSince(start) / 1e6, num, 0});
      std::shuffle(ids.begin(), ids.end(), rng);
      start = SteadyClock::now();
      for (LeaseId id : ids) HQ_RETURN_IF_ERROR(leases.Cancel(id));
      PrintLine("lease_cancel", Result{MicrosSince(start) / 1e6, num, 0});
    }
    // What a thread that walks every lease on each wake pays per wake.
    std::vector<int64_t> deadlines(static_cast<size_t>(num));
    for (auto& d : deadlines) d = static_cast<int64_t>(rng() >> 1);
    const int64_t now = INT64_MAX / 4;
    constexpr int kWalks = 20;
    int64_t expired = 0;
    const SteadyClock::time_point start = SteadyClock::now();
    for (int w = 0; w < kWalks; ++w) {
      for (int64_t d : deadlines) expired += d <= now;
    }
    sink = sink + static_cast<uint64_t>(expired);
    PrintLine("lease_walk_all", Result{MicrosSince(start) / 1e6, kWalks, 0});
    return Result{};
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Ttl() {
    const int64_t num = config_.num;
    const std::string dir = root_ + "/ttl";
    const std::string raw_dir = root_ + "/ttl-leveldb";
    auto dir_mb = [](const std::string& d) {
      return static_cast<double>(DirectoryBytes(d)) / 1048576.0;
    };
    SimulatedClock clock;
    Options o = hq_options_;
    o.clock = &clock;
    o.ttl_sweep_interval = absl::ZeroDuration();
    HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(dir, o));
    QueueOptions qo = queue_options_;
    qo.ttl = absl::Hours(1);
    HQ_ASSIGN_OR_RETURN(Queue * q, db->CreateQueue("ttl", qo));
    const double mb_empty = dir_mb(dir);
    std::vector<Message> batch;
    for (int64_t i = 0; i < num; ++i) {
      batch.push_back({.topic = source_.topic(i),
                       .payload = source_.payload(i),
                       .partition = source_.partition(i),
                       .priority = source_.priority(i)});
      if (batch.size() == 1000 || i + 1 == num) {
        HQ_RETURN_IF_ERROR(q->PutBatch(batch, nullptr));
        batch.clear();
        clock.Advance(absl::Milliseconds(1));
      }
    }
    static_cast<DbImpl*>(db.get())->leveldb()->CompactRange(nullptr, nullptr);
    const double mb_full = dir_mb(dir);
    clock.Advance(absl::Hours(2));
    constexpr int kLive = 1000;
    for (int64_t i = 0; i < kLive; ++i) {
      batch.push_back({.topic = source_.topic(i),
                       .payload = source_.payload(i),
                       .partition = source_.partition(i),
                       .priority = source_.priority(i)});
    }
    HQ_RETURN_IF_ERROR(q->PutBatch(batch, nullptr));
    SteadyClock::time_point start = SteadyClock::now();
    HQ_ASSIGN_OR_RETURN(SweepStats stats, db->CompactExpired());
    const double sweep_s = MicrosSince(start) / 1e6;
    if (stats.deleted != num) {
      return absl::InternalError(absl::StrFormat(
          "the sweep deleted %d messages, expected %d", stats.deleted, num));
    }
    PrintLine(
        "ttl_sweep",
        Result{sweep_s, num, num * static_cast<int64_t>(config_.value_size)});
    std::printf("ttl disk_mb : empty %.1f; full %.1f; after sweep %.1f\n",
                mb_empty, mb_full, dir_mb(dir));
    start = SteadyClock::now();
    int64_t read = 0;
    {
      HQ_ASSIGN_OR_RETURN(std::unique_ptr<Scanner> sc, q->NewScanner({}));
      while (sc->Next()) ++read;
      HQ_RETURN_IF_ERROR(sc->status());
    }
    const Result after{MicrosSince(start) / 1e6, read, 0};
    if (read != kLive) return absl::InternalError("ttl scan lost messages");
    PrintLine("ttl_scan_after_sweep", after);
    db.reset();

    // Raw LevelDB: the same number of keys written then deleted (as a
    // naive TTL would), not compacted, and the live keys after them.
    RawDb raw;
    leveldb::DB* rdb = nullptr;
    HQ_RETURN_IF_ERROR(FromLevelDb(
        leveldb::DB::Open(LevelDbOptions(hq_options_, &raw), raw_dir, &rdb),
        "opening the raw ttl database"));
    raw.db.reset(rdb);
    const std::string value(static_cast<size_t>(config_.value_size), 'v');
    auto key = [](int64_t i) {
      std::string k;
      LayoutCodec::AppendMessageId(&k, MessageId{static_cast<uint64_t>(i), 0});
      return k;
    };
    for (int64_t i = 0; i < num + kLive; i += 1000) {
      leveldb::WriteBatch b;
      for (int64_t j = i; j < std::min(num + kLive, i + 1000); ++j) {
        b.Put(key(j), value);
      }
      HQ_RETURN_IF_ERROR(FromLevelDb(rdb->Write({}, &b), "raw write"));
    }
    rdb->CompactRange(nullptr, nullptr);
    for (int64_t i = 0; i < num; i += 1000) {
      leveldb::WriteBatch b;
      for (int64_t j = i; j < std::min(num, i + 1000); ++j) b.Delete(key(j));
      HQ_RETURN_IF_ERROR(FromLevelDb(rdb->Write({}, &b), "raw delete"));
    }
    start = SteadyClock::now();
    read = 0;
    {
      std::unique_ptr<leveldb::Iterator> it(rdb->NewIterator({}));
      for (it->SeekToFirst(); it->Valid(); it->Next()) ++read;
    }
    const Result tomb{MicrosSince(start) / 1e6, read, 0};
    PrintLine("ttl_scan_leveldb_tombstones", tomb);
    std::printf("ratio ttl_scan_after_sweep/leveldb_tombstones : %.2f\n",
                after.msgs_per_sec() / tomb.msgs_per_sec());
    return Result{};
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> FillLevelDb(Histogram* hist) {
    HQ_RETURN_IF_ERROR(OpenFreshRaw());
    leveldb::DB* db = raw_.db.get();
    const LayoutCodec& codec = LayoutCodec::For(config_.layout);
    const int64_t num = config_.num;
    const int64_t batch = config_.batch;
    if (hist != nullptr) hist->Reserve(static_cast<size_t>(num / batch + 1));
    leveldb::WriteOptions wo;
    wo.sync = config_.sync;
    IdAssigner ids(config_.partitions);
    std::string key, value;
    leveldb::WriteBatch wb;
    const SteadyClock::time_point start = SteadyClock::now();
    for (int64_t i = 0; i < num; i += batch) {
      const int64_t n = std::min(batch, num - i);
      const SteadyClock::time_point op_start =
          hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
      // One clock reading per write call, as hq reads it once per writer.
      const uint64_t now_ms = IdAssigner::NowMs();
      wb.Clear();
      for (int64_t j = 0; j < n; ++j) {
        const uint32_t p = source_.partition(i + j);
        key.clear();
        codec.AppendMessageKey(&key, kQueueId, p, source_.priority(i + j),
                               source_.topic(i + j), ids.Next(p, now_ms));
        value.clear();
        format::AppendMessageValue(&value, "", source_.payload(i + j));
        if (batch == 1) {
          HQ_RETURN_IF_ERROR(FromLevelDb(db->Put(wo, key, value), "Put"));
        } else {
          wb.Put(key, value);
        }
      }
      if (batch > 1) {
        HQ_RETURN_IF_ERROR(FromLevelDb(db->Write(wo, &wb), "Write"));
      }
      if (hist != nullptr) hist->Add(MicrosSince(op_start));
    }
    const double seconds = MicrosSince(start) / 1e6;
    fill_messages_ = num;
    WaitForCompactions(db);
    return Result{seconds, num, num * static_cast<int64_t>(config_.value_size)};
  }

  // Reads what `so` selects of the queue `put` wrote; `selected(i)` says
  // whether message i is among it (the count is checked).
  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Scan(
      Histogram* hist, const ScanOptions& so,
      const std::function<bool(int64_t)>& selected) {
    if (queue_ == nullptr) {
      return absl::FailedPreconditionError("no queue: run put first");
    }
    int64_t expected = 0;
    for (int64_t i = 0; i < put_messages_; ++i) expected += selected(i);
    HQ_RETURN_IF_ERROR(ReopenHq());
    if (hist != nullptr) hist->Reserve(static_cast<size_t>(put_messages_ + 1));
    int64_t count = 0;
    int64_t payload_bytes = 0;
    uint64_t touched = 0;
    const SteadyClock::time_point start = SteadyClock::now();
    {
      HQ_ASSIGN_OR_RETURN(std::unique_ptr<Scanner> scanner,
                          queue_->NewScanner(so));
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
    if (count != expected ||
        payload_bytes != count * static_cast<int64_t>(config_.value_size)) {
      return absl::DataLossError(absl::StrFormat(
          "read %d messages of %d payload bytes; put wrote %d of %d bytes",
          count, payload_bytes, expected,
          expected * static_cast<int64_t>(config_.value_size)));
    }
    return Result{seconds, count, payload_bytes};
  }

  ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ScanLevelDb(Histogram* hist,
                                                             bool checked) {
    if (raw_.db == nullptr) {
      return absl::FailedPreconditionError(
          "no raw database: run fillseq_leveldb first");
    }
    HQ_RETURN_IF_ERROR(ReopenRaw());
    if (hist != nullptr) {
      hist->Reserve(static_cast<size_t>(fill_messages_ + 1));
    }
    int64_t count = 0;
    int64_t stored_bytes = 0;
    uint64_t touched = 0;
    const SteadyClock::time_point start = SteadyClock::now();
    {
      leveldb::ReadOptions ro;
      ro.verify_checksums = checked;
      std::unique_ptr<leveldb::Iterator> it(raw_.db->NewIterator(ro));
      SteadyClock::time_point op_start =
          hist != nullptr ? SteadyClock::now() : SteadyClock::time_point();
      it->SeekToFirst();
      for (; it->Valid(); it->Next()) {
        if (hist != nullptr) {
          hist->Add(MicrosSince(op_start));
        }
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
    if (count != fill_messages_) {
      return absl::DataLossError(absl::StrFormat(
          "read %d records; fillseq_leveldb wrote %d", count, fill_messages_));
    }
    return Result{seconds, count,
                  count * static_cast<int64_t>(config_.value_size)};
  }

  const Config config_;
  const MessageSource source_;
  Options hq_options_;
  QueueOptions queue_options_;

  std::string root_;
  bool remove_root_ = false;
  std::string hq_path_;
  std::string raw_path_;

  std::unique_ptr<Db> hq_db_;
  Queue* queue_ = nullptr;  // Owned by hq_db_.
  RawDb raw_;
  std::unique_ptr<RedisServer> redis_;
  std::unique_ptr<RedisClient> redis_client_;  // Connected to redis_.

  int64_t put_messages_ = 0;   // Written by the last `put`.
  int64_t fill_messages_ = 0;  // Written by the last `fillseq_leveldb`.
};

}  // namespace

// The recover workload's child: fills the log of a fresh Db at `dir` to
// about 90% of the write buffer, without filling the memtable (so nothing
// has been written to a table), prints "READY <messages>" and waits to be
// killed.
int RecoverChild(const std::string& dir, const Config& config) {
  Options o;
  if (config.write_buffer_bytes != -1) {
    o.write_buffer_bytes = static_cast<size_t>(config.write_buffer_bytes);
  }
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(dir, o);
  if (!db.ok()) return 1;
  absl::StatusOr<Queue*> q = (*db)->CreateQueue(
      kQueueName, {.max_payload_bytes = std::max<uint32_t>(
                       QueueOptions().max_payload_bytes,
                       static_cast<uint32_t>(config.value_size))});
  if (!q.ok()) return 1;
  const std::string payload(config.value_size, 'r');
  std::vector<Message> batch(100, Message{.payload = payload});
  int64_t written = 0;
  // Each message costs about its payload and 40 bytes of key, value framing
  // and log record in the memtable.
  const size_t per = config.value_size + 40;
  while ((static_cast<size_t>(written) + 100) * per <
         o.write_buffer_bytes * 9 / 10) {
    if (!(*q)->PutBatch(batch, nullptr).ok()) return 1;
    written += 100;
  }
  std::printf("READY %lld\n", static_cast<long long>(written));
  std::fflush(stdout);
  pause();
  return 0;
}

}  // namespace hq::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "hq_bench "
      "[--benchmarks=fillseq_leveldb,put,scan_leveldb,scan,scan_lanes] "
      "[--num=N] [--value_size=N] [--batch=N] ...\n"
      "Measures hq against raw LevelDB; see the top of bench/hq_bench.cc.");
  const std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() > 1) {
    std::fprintf(stderr, "hq_bench: unexpected argument '%s'\n", rest[1]);
    return 2;
  }
  absl::StatusOr<hq::bench::Config> config = hq::bench::ConfigFromFlags();
  if (!config.ok()) {
    std::fprintf(stderr, "hq_bench: %s\n",
                 std::string(config.status().message()).c_str());
    return 2;
  }
  if (const std::string dir = absl::GetFlag(FLAGS_recover_child);
      !dir.empty()) {
    return hq::bench::RecoverChild(dir, *config);
  }
  hq::bench::Benchmark bench(*std::move(config));
  const absl::Status s = bench.Run();
  if (!s.ok()) {
    std::fprintf(stderr, "hq_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
