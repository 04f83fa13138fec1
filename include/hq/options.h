// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Options for opening a Db, creating a queue, writing and scanning.
// Every field documents its default and its limits; a value outside its
// limits makes the call that receives it fail with InvalidArgument.

#ifndef HQ_OPTIONS_H_
#define HQ_OPTIONS_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "hq/layout.h"
#include "hq/message.h"

namespace leveldb {
class Env;  // Extension point: see Options::env.
}  // namespace leveldb

namespace hq {

class Clock;

// Options for Db::Open.
struct Options {
  // ---- Behaviour ----

  // Create the directory and an empty Db if `path` holds none. Default: true.
  bool create_if_missing = true;

  // Fail with AlreadyExists if `path` already holds a Db. Default: false.
  bool error_if_exists = false;

  // The default for PutOptions::sync (and for catalog changes).
  // false: an acknowledged write survives a crash of the process (kill -9)
  //        but may be lost on a power cut or kernel crash.
  // true:  each write is fsync'ed before it is acknowledged and survives a
  //        power cut. Concurrent writers share one fsync (group commit).
  // After a power cut what is left is a prefix of the writes in commit
  // order: a synced write survives with every write before it, and no
  // write survives while an earlier one is lost.
  // Default: false.
  bool sync_writes = false;

  // Source of time for MessageIds, leases, TTL and redelivery deadlines
  // (hq/clock.h). Not owned; must outlive the Db. Default: nullptr, meaning
  // Clock::Default().
  Clock* clock = nullptr;

  // LevelDB environment: where files live. Tests pass
  // leveldb::NewMemEnv(leveldb::Env::Default()) for an in-memory Db, or a
  // fault-injecting wrapper. Not owned; must outlive the Db.
  // Default: nullptr, meaning leveldb::Env::Default() (the file system).
  leveldb::Env* env = nullptr;

  // What Open does when a write-ahead log is damaged (bit rot, a bad
  // sector, a power cut that lost a page in the middle of unsynced data).
  // A record cut short at the very end of the last log, which a killed
  // writer leaves, is never damage: it was not acknowledged as durable, and
  // Open ignores it in both modes. A log cut short before a later log that
  // holds records (a power cut that lost the end of a log LevelDB had
  // switched away from) is damage. Either way every read checks what it reads:
  // a damaged table block fails the read with DataLoss naming its file.
  enum class Recovery {
    // Open recovers to the last intact record before the first damage:
    // that record and every one before it survive, and every later record
    // of that log and every later log is dropped, so what survives is a
    // prefix of the writes in commit order, never a hole. Dropped bytes
    // are kept in the directory's "dropped" folder (never deleted) and
    // listed by Db::recovery() and Db::Verify.
    kPointInTime,
    // If recovering to the point in time would drop an intact record (a
    // hole: damage with intact records after it, or a later log), Open
    // fails with DataLoss, naming the log, the offset and what is wrong,
    // and changes nothing. A torn tail (damage with nothing intact after
    // it, in its log or a later one: the unwritten tail of a crash or a
    // power cut) is cut and kept as under kPointInTime.
    kAbsoluteConsistency,
  };
  // Default: kPointInTime (RocksDB's default WAL recovery mode too).
  Recovery recovery = Recovery::kPointInTime;

  // A Scanner not called for this long expires (HBase's scanner lease): its
  // iterator and snapshot are released at once and its next call fails
  // with FailedPrecondition. The lease is checked lazily, so an idle
  // scanner expires between scanner_lease and twice that after its last
  // call; a scanner in use never expires. Default: 60 s. Limits: 1 ms ..
  // 30 days.
  absl::Duration scanner_lease = absl::Seconds(60);

  // Scanners that may hold an iterator and snapshot at once; past it,
  // NewScanner fails with ResourceExhausted. Default: 10000. Limits:
  // 1..1000000.
  int max_open_scanners = 10000;

  // How often a background sweep deletes messages older than their queue's
  // TTL and compacts the range they used (Db::CompactExpired runs one now).
  // Measured on Options::clock. Zero: no background sweeps. Expired
  // messages are invisible to readers at once either way.
  // Default: 60 s. Limits: 0, or 1 ms .. 30 days.
  absl::Duration ttl_sweep_interval = absl::Seconds(60);

  // Keys a sweep deletes per WriteBatch (each batch also records how far
  // the sweep got, so it resumes there). Default: 1000. Limits: 1..100000.
  int ttl_sweep_batch = 1000;

  // How often the Db publishes its live status: the file "hq-status" in
  // its directory, which the hq tool reads while this process holds the
  // Db, and also at once when a group is loaded or first hands out tasks
  // and when a subscription starts (the groups and subscriptions loaded in
  // this process: their stats with tasks in flight and leases, claim and
  // completion rates, over the last interval or since the group's load, the
  // first 1000 pending tasks of each group, subscription lag). Each publication
  // runs every loaded group's Stats() and ListPending(1000) (which holds
  // the group's lock while it lists: claims wait that long) and each
  // subscription's Stats() on a background thread, and writes the file
  // (not synced) and renames it into place. A clean close deletes it, and
  // Open deletes one left by a process that died.
  // Measured on Options::clock. Zero: never. Default: 5 s. Limits: 0, or
  // 100 ms .. 1 day.
  absl::Duration status_interval = absl::Seconds(5);

  // ---- Performance ----

  // Size of the block cache shared by all reads. Default: 64 MiB.
  // Limits: 0 (LevelDB's internal 8 MiB cache) .. 1 TiB.
  size_t cache_bytes = size_t{64} << 20;

  // Bits per key of the bloom filter on every table (point lookups, such
  // as a partition's id reservation, skip tables that cannot hold the key).
  // 0 disables the filter. Default: 10 (about 1% false positives).
  // Limits: 0..40.
  int bloom_bits_per_key = 10;

  // Bytes buffered in memory before a table is written (LevelDB
  // write_buffer_size; up to two such buffers exist at once). Larger is
  // faster for writes (fewer, larger level-0 tables, fewer compactions) and
  // slower to reopen after a crash, which replays up to this much log.
  // Default: 64 MiB, tuned for queues: on a 2-core machine it took hq's
  // puts from 549K to 753K msgs/s (PutBatch of 100: 1.05M to 1.57M), and
  // Open after a kill with a full buffer from 27 ms to 223 ms (hq_bench
  // --benchmarks=fillseq_leveldb,put,recover --write_buffer_bytes=...).
  // Limits: 64 KiB .. 1 GiB.
  size_t write_buffer_bytes = size_t{64} << 20;

  // Open table files LevelDB may keep (max_open_files). Default: 1000.
  // Limits: 64 .. 1000000.
  int max_open_files = 1000;

  // Threads that deliver messages to subscriptions (subscription.h),
  // shared by all of them; started at the first Queue::Subscribe.
  // Default: 2. Limits: 1..64.
  int delivery_threads = 2;
};

// Options for Db::CreateQueue. Fixed for the life of the queue.
struct QueueOptions {
  // Number of partitions: the unit of ordering and of id assignment.
  // Default: 1. Limits: 1..65535.
  uint32_t partitions = 1;

  // Number of priority levels; messages carry priorities 0..priorities-1.
  // Default: 1. Limits: 1..256.
  int priorities = 1;

  // Messages older than this (by their MessageId's time) expire.
  // absl::InfiniteDuration() keeps messages forever. Stored with the queue;
  // enforcement (invisibility and reclaiming) arrives with TTL compaction.
  // Default: infinite. Limits: >= 1 ms, whole milliseconds, or infinite.
  absl::Duration ttl = absl::InfiniteDuration();

  // Rowkey layout; see layout.h. Default: Layout::kTime.
  Layout layout = Layout::kTime;

  // Largest payload accepted by Put. Default: 1 MiB. Limits: 1 .. 64 MiB.
  uint32_t max_payload_bytes = uint32_t{1} << 20;
};

// Options for Queue::Put and Queue::PutBatch.
struct PutOptions {
  // Whether to fsync before acknowledging; see Options::sync_writes for
  // what survives a crash either way. Default: std::nullopt, meaning
  // Options::sync_writes.
  std::optional<bool> sync;
};

// Options for Queue::NewScanner.
struct ScanOptions {
  // Order of the messages returned. Persisted nowhere.
  enum class Order {
    // Ascending (MessageId, partition): one time-ordered stream merged from
    // every lane in scope (HQueue's QueueScanner / CombinedPartitionScanner).
    // Memory: one buffered message per lane in scope, more for lanes being
    // read. With the `topic` layout and no topic filter that is one per
    // topic with messages in range: prefer kLane for millions of topics.
    kMerged,
    // Lane by lane in storage order: partition ascending, then priority
    // descending, then (topic layout) topic, shorter topics first and equal
    // lengths in byte order; within a lane by MessageId.
    // Constant memory whatever the number of lanes.
    kLane,
  };

  // Partitions to read. Empty: all partitions. Every entry must be
  // < the queue's partitions; duplicates are ignored.
  std::vector<uint32_t> partitions;

  // Topics to read. Empty: all topics. Duplicates are ignored.
  std::vector<std::string> topics;

  // Id range [from, to). For a time range use MessageId::AtTime(t).
  // Default: everything. REQUIRES: from <= to.
  MessageId from = MessageId::Min();
  MessageId to = MessageId::Max();

  // Default: Order::kMerged.
  Order order = Order::kMerged;
};

}  // namespace hq

#endif  // HQ_OPTIONS_H_
