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
// Every workload starts alike, whatever ran before it: the heap is warmed
// once (two write buffers and 16 MiB, touched and kept), and dirty pages
// are written back before each workload. So the order of --benchmarks does
// not move a ratio.
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
//   ingest           Sustained ingest, three times in turn: --num messages
//                    (PutBatch of --batch, as `put` describes them) into a
//                    fresh hq Db whose queue has the time layout
//                    (ingest_time), one with the topic layout
//                    (ingest_topic), and a fresh raw LevelDB with the time
//                    layout's keys and values (ingest_leveldb, as
//                    fillseq_leveldb). Per target: its line (time to the
//                    last write acknowledged); `tenths K msgs/s`, the rate
//                    of each tenth of the messages; `write amplification`,
//                    bytes written per byte of keys and values (as stored),
//                    from /proc/self/io: write_bytes less
//                    cancelled_write_bytes (what reached the disk's
//                    queue), and wchar (what LevelDB passed to write(2)),
//                    at the last write and after the compactions it left
//                    were done; `level0`, the share of 10 ms samples of
//                    "leveldb.num-files-at-level0" at LevelDB 1.23's
//                    slowdown (8) and stop (12) triggers; `compaction`, the
//                    totals of "leveldb.stats" (time, MB read and written)
//                    and the tables per level.
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
//                    the first Queue::Group call (ms, and micros per
//                    topic: it reads only the group's own records); 1000
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
//                    after the reopen (one op); many_topics_first_claim[L],
//                    the first Claim of --claim_batch after it (one op);
//                    many_topics_read_topic[L], whole-topic scans of
//                    random topics (one op = one topic read; up to 1000 or
//                    5 s); many_topics_claim[L], one consumer draining the
//                    queue (one op = one message); many_topics_sub_load[L],
//                    a new subscription's Subscribe call, and
//                    many_topics_subscribe[L], its delivery of every
//                    message (one op = one message; the topic layout's
//                    walks the lanes, as one created over existing
//                    data does), many_topics_sub_first[L], the time from
//                    Subscribe to its first delivery (one op);
//                    `many_topics heap_kb[L]`, heap growth after the put,
//                    the group load, the first claim, the claims and the
//                    subscription, and `many_topics leveldb_kb[L]`, the
//                    part of the heap LevelDB's memtables and block cache
//                    held after the first claim, the claims and the
//                    subscription (leveldb.approximate-memory-usage).
//                    Unless --many_topics_extras=false, then
//                    many_topics_put[topic_with_group], the topic layout's
//                    put into a queue with a consumer group from the start
//                    (its batches write lane index records; a queue
//                    without consumers writes none), and
//                    many_topics_put[topic_group_deleted], the same put
//                    into a queue whose only group claimed once and was
//                    deleted (Queue::DeleteGroup) before it (it writes no
//                    lane index records again). Then, for each
//                    layout in a fresh Db, many_topics_put[L_while_claiming],
//                    the same put while one consumer of a group created
//                    first claims (--claim_batch, waiting up to 20 ms) and
//                    completes on its own thread, as a crawler runs, and
//                    many_topics_through[L_while_claiming], the time until
//                    it has completed every message (one op = one
//                    message; fails unless it completed --num). Then
//                    many_topics_put[leveldb_topic_keys_index_after], the
//                    topic layout's keys and values written to a fresh raw
//                    LevelDB (batches of --batch) with one lane index
//                    record per batch keyed after every message key (a
//                    layout hq does not use: what it would cost),
//                    many_topics_put[leveldb_topic_keys_index_shared], the
//                    index at hq's key with each lane prefix-compressed
//                    against the one before (also not hq's: what a smaller
//                    index would cost), then
//                    many_topics_put[leveldb_topic_keys], the topic
//                    layout's keys and values written to a fresh raw
//                    LevelDB (batches of --batch), and
//                    many_topics_put[leveldb_topic_keys_index], the same
//                    with one lane index record per batch (as hq writes);
//                    with --many_topics_drain, the floors of a claim over
//                    those messages in that raw LevelDB (each message read
//                    and copied out once, one write per claim of
//                    --claim_batch and one per completion of it):
//                    many_topics_claim[leveldb_two_cursors_per_topic], a
//                    topic's cursor written at its claim and again at its
//                    completion (as hq's topic layout writes);
//                    [leveldb_cursor_per_topic], one record per claim and
//                    one cursor per topic at completion; and
//                    [leveldb_record_per_claim], no record per topic. Then
//                    the ratios topic/time of put, read_topic, claim and
//                    subscribe, of the topic layout's put to those raw
//                    LevelDB puts and its claim to the first floor, and of
//                    the floors to the time layout: how near the topic
//                    layout could come.
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
//   scan_leveldb_checked  The same with ReadOptions::verify_checksums: the
//                    CRC-32C of every table block read, the check hq's Env
//                    makes on every block it reads (hq leaves LevelDB's own
//                    off, lib/engine/checked_read.h). The ratio
//                    leveldb_scan_checked/leveldb_scan is the cost of
//                    checksums on a scan; scan/leveldb_scan_checked compares
//                    hq's scan with a raw scan that checks as much.
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
//   --raw_max_file_bytes=N, --raw_block_bytes=N, --raw_compression=B
//                      For the raw LevelDB only: leveldb::Options
//                      max_file_size, block_size (0: LevelDB's defaults,
//                      2 MiB and 4 KiB) and Snappy compression (default:
//                      true), to measure an option hq does not set.
//   --mutex_deadlock_detection=B
//                      Abseil's Mutex deadlock detection (absl::
//                      SetMutexDeadlockDetectionMode). Debian's libabsl is
//                      built without NDEBUG, so it is on unless a program
//                      turns it off: every lock then consults one global
//                      graph (2 to 3% of a batch-1 Put). Default: false,
//                      Abseil's default in an optimized (NDEBUG) build.
//   --claim_batch=N    Tasks per Claim and Complete call (1..10000).
//                      Default: 100.
//   --topic_max_in_flight=N, --topic_interval=D
//                      claim_complete's group paces every topic
//                      (GroupOptions::pacing): at most N tasks of a topic
//                      in flight, at least D between two hand-outs.
//                      Default: 0 and 0 (no pacing).
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
//   --many_topics_drain=false  many_topics stops after read_topic: no
//                      claims, no subscription (start-up and memory at a
//                      scale where draining takes hours).
//   --many_topics_extras=false  many_topics runs only its two layouts
//                      and their ratios: no put with a group, no put while
//                      claiming, no raw LevelDB.
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
//
// Code: this file holds main, the flags, the run loop and the ratios; each
// family of workloads is in bench/workloads_<family>.cc (write, read,
// consume, admin, peers) and registers itself in bench/registry.h; what
// they share (Config, the messages, the open databases) is in
// bench/workload.h; the peers' clients are bench/sqlite_peer.h and
// bench/redis_peer.h.

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/layout_lab.h"
#include "bench/registry.h"
#include "bench/workload.h"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"

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
ABSL_FLAG(int64_t, raw_max_file_bytes, 0,
          "Raw LevelDB only: leveldb::Options::max_file_size (0: LevelDB's "
          "2 MiB).");
ABSL_FLAG(int64_t, raw_block_bytes, 0,
          "Raw LevelDB only: leveldb::Options::block_size (0: LevelDB's "
          "4 KiB).");
ABSL_FLAG(bool, raw_compression, true,
          "Raw LevelDB only: Snappy compression (false: none).");
ABSL_FLAG(bool, mutex_deadlock_detection, false,
          "Abseil's Mutex deadlock detection (on in Debian's libabsl unless "
          "turned off; off in an optimized Abseil build).");
ABSL_FLAG(int32_t, claim_batch, 100,
          "Tasks per Claim and Complete call in claim_complete.");
ABSL_FLAG(uint32_t, topic_max_in_flight, 0,
          "claim_complete's pacing: tasks of a topic in flight (0: no limit).");
ABSL_FLAG(std::string, topic_interval, "0",
          "claim_complete's pacing: least time between two hand-outs of a "
          "topic.");
ABSL_FLAG(int64_t, cache_bytes, int64_t{64} << 20,
          "Block cache bytes of each database (0: LevelDB's own 8 MiB).");
ABSL_FLAG(int64_t, many_topics, 1000000, "Topics of many_topics.");
ABSL_FLAG(bool, many_topics_drain, true,
          "many_topics drains its group and runs its subscription.");
ABSL_FLAG(bool, many_topics_extras, true,
          "many_topics runs its puts with a group and raw LevelDB.");
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

// The flags' numbers and strings, checked, into `c` (all but --benchmarks,
// --lab_* and --peers).
absl::Status ScalarsFromFlags(Config& c) {
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
  const int64_t raw_file = absl::GetFlag(FLAGS_raw_max_file_bytes);
  const int64_t raw_block = absl::GetFlag(FLAGS_raw_block_bytes);
  if (raw_file < 0 || raw_file > (int64_t{1} << 30) || raw_block < 0 ||
      raw_block > (int64_t{4} << 20)) {
    return absl::InvalidArgumentError(
        "--raw_max_file_bytes must be in 0..2^30, --raw_block_bytes in "
        "0..4 MiB");
  }
  raw_tuning() = {.max_file_bytes = static_cast<size_t>(raw_file),
                  .block_bytes = static_cast<size_t>(raw_block),
                  .compression = absl::GetFlag(FLAGS_raw_compression)};
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
  c.pacing.max_in_flight =
      static_cast<uint32_t>(absl::GetFlag(FLAGS_topic_max_in_flight));
  if (!absl::ParseDuration(absl::GetFlag(FLAGS_topic_interval),
                           &c.pacing.interval)) {
    return absl::InvalidArgumentError(
        "--topic_interval must be a duration (0, 1ms)");
  }
  const int32_t threads = absl::GetFlag(FLAGS_threads);
  if (threads < 1 || threads > 1024) {
    return absl::InvalidArgumentError("--threads must be in 1..1024");
  }
  c.threads = threads;
  c.sync_num = absl::GetFlag(FLAGS_sync_num);
  c.many_topics = absl::GetFlag(FLAGS_many_topics);
  c.many_topics_drain = absl::GetFlag(FLAGS_many_topics_drain);
  c.many_topics_extras = absl::GetFlag(FLAGS_many_topics_extras);
  return absl::OkStatus();
}

// --lab_layouts, --lab_segment_size and --lab_read_segments into c.lab;
// also --many_topics and --sync_num checked.
absl::Status LabFromFlags(Config& c) {
  c.lab.layouts.clear();
  for (absl::string_view l : absl::StrSplit(absl::GetFlag(FLAGS_lab_layouts),
                                            ',', absl::SkipEmpty())) {
    c.lab.layouts.emplace_back(l);
    HQ_RETURN_IF_ERROR(CheckLabLayout(c.lab.layouts.back()));
  }
  if (c.lab.layouts.empty()) {
    return absl::InvalidArgumentError("--lab_layouts is empty");
  }
  c.lab.messages = c.num;
  c.lab.segment_size = absl::GetFlag(FLAGS_lab_segment_size);
  c.lab.read_segments = absl::GetFlag(FLAGS_lab_read_segments);
  c.lab.value_size = c.value_size;
  if (c.lab.segment_size < 1 || c.lab.read_segments < 1) {
    return absl::InvalidArgumentError(
        "--lab_segment_size and --lab_read_segments must be >= 1");
  }
  if (c.many_topics < 1) {
    return absl::InvalidArgumentError("--many_topics must be >= 1");
  }
  if (c.sync_num < 1) {
    return absl::InvalidArgumentError("--sync_num must be >= 1");
  }
  return absl::OkStatus();
}

// --peers into c.sqlite and c.redis, and each peer's workload into
// c.benchmarks right after the hq workload it is compared with, unless
// listed already.
absl::Status PeersFromFlags(Config& c) {
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
  auto listed = [&c](const char* name) {
    return std::find(c.benchmarks.begin(), c.benchmarks.end(), name) !=
           c.benchmarks.end();
  };
  std::vector<std::string> expanded;
  for (const std::string& name : c.benchmarks) {
    expanded.push_back(name);
    const bool put = name == "put", claim = name == "claim_complete";
    if (!put && !claim) continue;
    const char* sqlite = put ? "put_sqlite" : "claim_complete_sqlite";
    const char* redis = put ? "put_redis" : "claim_complete_redis";
    if (c.sqlite && !listed(sqlite)) expanded.push_back(sqlite);
    if (c.redis && !listed(redis)) expanded.push_back(redis);
  }
  c.benchmarks = std::move(expanded);
  return absl::OkStatus();
}

// Every name in c.benchmarks registered, and every workload after the one
// whose database it reads.
absl::Status CheckBenchmarks(const Config& c) {
  bool hq_db = false, leveldb = false;
  for (const std::string& name : c.benchmarks) {
    const Workload* w = FindWorkload(name);
    if (w == nullptr) {
      std::vector<std::string> known;
      for (const Workload& k : Workloads()) known.emplace_back(k.name);
      return absl::InvalidArgumentError(
          absl::StrCat("unknown benchmark '", name,
                       "'; known: ", absl::StrJoin(known, ", ")));
    }
    const bool met = w->needs == Workload::Needs::kNothing ||
                     (w->needs == Workload::Needs::kHqDb && hq_db) ||
                     (w->needs == Workload::Needs::kLevelDb && leveldb);
    if (!met) return absl::FailedPreconditionError(w->unmet);
    hq_db = hq_db || w->opens_hq_db;
    leveldb = leveldb || name == "fillseq_leveldb";
  }
  if (c.benchmarks.empty()) {
    return absl::InvalidArgumentError("--benchmarks is empty");
  }
  return absl::OkStatus();
}

absl::StatusOr<Config> ConfigFromFlags() {
  Config c;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_benchmarks),
                                               ',', absl::SkipEmpty())) {
    c.benchmarks.emplace_back(name);
  }
  HQ_RETURN_IF_ERROR(ScalarsFromFlags(c));
  HQ_RETURN_IF_ERROR(LabFromFlags(c));
  HQ_RETURN_IF_ERROR(PeersFromFlags(c));
  HQ_RETURN_IF_ERROR(CheckBenchmarks(c));
  return c;
}

// The header's estimate of a key's bytes, averaged over the topics.
double AverageKeyBytes(const Context& c) {
  const LayoutCodec& codec = LayoutCodec::For(c.config.layout);
  size_t key_bytes = 0;
  for (const std::string& topic : c.source.topics()) {
    std::string key;
    codec.AppendMessageKey(&key, kQueueId, 0, 0, topic, MessageId{});
    key_bytes += key.size();
  }
  return static_cast<double>(key_bytes) /
         static_cast<double>(c.source.topics().size());
}

// The header: versions, machine, and the shape of the run.
void PrintHeader(const Context& c) {
  const Config& config = c.config;
  const double avg_key = AverageKeyBytes(c);
  std::string value;
  format::AppendMessageValue(&value, "", c.source.payload(0));
  std::string cpu_cache = "unknown";
  const std::string cpu = CpuSummary(&cpu_cache);
  const double raw_mb = (avg_key + static_cast<double>(value.size())) *
                        static_cast<double>(config.num) / 1048576.0;
  const std::string layout(LayoutName(config.layout));

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
              avg_key, layout.c_str());
  std::printf(
      "Values:      %zu bytes each (%zu-byte payload, about half "
      "compressible)\n",
      value.size(), config.value_size);
  std::printf("Entries:     %" PRId64 "\n", config.num);
  std::printf("RawSize:     %.1f MB (estimated keys + values)\n", raw_mb);
  std::printf("Layout:      %s\n", layout.c_str());
  std::printf("Partitions:  %u\n", config.partitions);
  std::printf("Priorities:  %d\n", config.priorities);
  std::printf("Topics:      %d\n", config.topics);
  std::printf("Batch:       %" PRId64 "\n", config.batch);
  std::printf("Sync:        %s\n", config.sync ? "true" : "false");
  std::printf("Cache:       %zu bytes\n", config.cache_bytes);
  std::printf("WriteBuffer: %zu bytes\n", c.hq_options.write_buffer_bytes);
  const RawTuning& raw = raw_tuning();
  if (raw.max_file_bytes > 0 || raw.block_bytes > 0 || !raw.compression) {
    std::printf("Raw LevelDB: max_file_size %zu, block_size %zu, %s\n",
                raw.max_file_bytes, raw.block_bytes,
                raw.compression ? "snappy" : "no compression");
  }
  std::printf("Bloom:       %d bits/key\n", c.hq_options.bloom_bits_per_key);
  std::printf("Mutexes:     Abseil deadlock detection %s\n",
              absl::GetFlag(FLAGS_mutex_deadlock_detection) ? "on" : "off");
  std::printf("DB:          %s%s\n", c.root.c_str(),
              c.remove_root ? " (removed at the end)" : "");
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

// One `ratio NAME : R` line for each pair of workloads that both ran:
// NAME, then the two workloads whose msgs/s it divides.
struct RatioLine {
  const char* name;
  const char* a;
  const char* b;
};
constexpr RatioLine kRatios[] = {
    {"put/leveldb_put", "put", "fillseq_leveldb"},
    {"scan/leveldb_scan", "scan", "scan_leveldb"},
    {"scan_lanes/leveldb_scan", "scan_lanes", "scan_leveldb"},
    {"leveldb_scan_checked/leveldb_scan", "scan_leveldb_checked",
     "scan_leveldb"},
    {"scan/leveldb_scan_checked", "scan", "scan_leveldb_checked"},
    {"subscribe/leveldb_put", "subscribe", "fillseq_leveldb"},
    {"subscribe_10/leveldb_put", "subscribe_10", "fillseq_leveldb"},
    {"put_dedup/put", "put_dedup", "put"},
    {"put/sqlite_put", "put", "put_sqlite"},
    {"put/redis_xadd", "put", "put_redis"},
    {"claim_complete/sqlite_claim_complete", "claim_complete",
     "claim_complete_sqlite"},
    {"claim_complete/redis_claim_complete", "claim_complete",
     "claim_complete_redis"},
};

// Gives every workload the same start, whatever ran before it.
//   - The heap is warm: before the first workload, `bytes` are allocated in
//     LevelDB's arena block size, touched and freed, and freed memory is
//     kept from then on. Without this the first workloads page-faulted
//     their memtables in (11,600 faults at --num=300000) and later ones
//     reused the memory: the order of put and fillseq_leveldb moved their
//     ratio by 0.15.
//   - The earlier workloads' dirty pages are written back, so that their
//     writeback does not compete with this one's writes.
void WarmHeap(size_t bytes) {
  ::mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  constexpr size_t kBlock = 4096;
  std::vector<std::unique_ptr<char[]>> blocks(bytes / kBlock);
  for (auto& b : blocks) {
    b.reset(new char[kBlock]);
    std::memset(b.get(), 1, kBlock);
  }
}

void Settle() { ::sync(); }

// Runs the workloads --benchmarks names, in order, then prints the ratios.
absl::Status Run(Context& c) {
  HQ_RETURN_IF_ERROR(c.MakeDirectories());
  PrintHeader(c);
  // Room for a memtable being filled and one being flushed, and change.
  const int64_t write_buffer =
      c.config.write_buffer_bytes == -1
          ? static_cast<int64_t>(Options().write_buffer_bytes)
          : c.config.write_buffer_bytes;
  WarmHeap(static_cast<size_t>(2 * write_buffer + (int64_t{16} << 20)));
  // The last Result of each workload that printed one.
  absl::flat_hash_map<std::string, Result> results;
  for (const std::string& name : c.config.benchmarks) {
    const Workload* w = FindWorkload(name);  // Checked by ConfigFromFlags.
    Histogram hist;
    Histogram* h = c.config.histogram ? &hist : nullptr;
    Settle();
    const absl::StatusOr<Result> r = w->run(c, h);
    if (!r.ok()) {
      return absl::Status(r.status().code(),
                          absl::StrCat(name, ": ", r.status().message()));
    }
    if (r->messages > 0) {  // Else printed its own lines.
      PrintLine(name, *r);
      results[name] = *r;
    }
    if (h != nullptr) {
      std::printf("%s latency micros/call : %s\n", name.c_str(),
                  h->Summary().c_str());
    }
    std::fflush(stdout);
  }
  for (const RatioLine& ratio : kRatios) {
    const auto a = results.find(ratio.a), b = results.find(ratio.b);
    if (a != results.end() && b != results.end()) {
      PrintRatio(ratio.name, a->second, b->second);
    }
  }
  std::fflush(stdout);
  return absl::OkStatus();
}

// The usage message: how to run, then every registered workload.
std::string Usage() {
  std::string usage =
      "hq_bench "
      "[--benchmarks=fillseq_leveldb,put,scan_leveldb,scan,scan_lanes] "
      "[--num=N] [--value_size=N] [--batch=N] ...\n"
      "Measures hq against raw LevelDB; see the top of bench/hq_bench.cc.\n"
      "Workloads:\n";
  for (const Workload& w : Workloads()) {
    absl::StrAppendFormat(&usage, "  %-22s %s\n", w.name, w.description);
  }
  return usage;
}

}  // namespace
}  // namespace hq::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(hq::bench::Usage());
  const std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  absl::SetMutexDeadlockDetectionMode(
      absl::GetFlag(FLAGS_mutex_deadlock_detection)
          ? absl::OnDeadlockCycle::kAbort
          : absl::OnDeadlockCycle::kIgnore);
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
  hq::bench::Context context(*std::move(config));
  const absl::Status s = hq::bench::Run(context);
  if (!s.ok()) {
    std::fprintf(stderr, "hq_bench: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
