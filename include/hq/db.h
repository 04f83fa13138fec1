// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq::Db: one LevelDB directory holding any number of queues.

#ifndef HQ_DB_H_
#define HQ_DB_H_

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hq/export.h"
#include "hq/lease.h"
#include "hq/options.h"
#include "hq/queue.h"

namespace hq {

// What a TTL sweep did (Db::CompactExpired).
struct SweepStats {
  int64_t queues = 0;    // Queues with a TTL visited.
  int64_t lanes = 0;     // Lanes visited.
  int64_t deleted = 0;   // Expired messages deleted.
  int64_t examined = 0;  // Keys read: the deleted ones, plus at most one
                         // more per lane (the first one kept).
};

// One problem Db::Verify found.
struct VerifyProblem {
  // The LevelDB key of the record, in lowercase hex (doc/format.md has the
  // grammar of every key). For a damaged table block: the last key read
  // before the damage (empty if none). Empty for a dropped log.
  std::string key_hex;
  // What is wrong, in words ("unknown record tag 0x7f", "cursor beyond the
  // lane end", "table file 000012.ldb, block at offset 4096 (4021 bytes):
  // ... checksum mismatch; unreadable keys lie after ... and before ...").
  std::string description;
  // The file the problem is in, relative to the Db's directory: a damaged
  // table ("000012.ldb") or what recovery dropped
  // ("dropped/000005.log.hole-at-4096"). Empty for a record's problem.
  std::string file;
};

// What Db::Open's recovery dropped from LevelDB's write-ahead logs
// (Options::recovery). Empty when the logs were intact.
struct RecoveryReport {
  struct Dropped {
    std::string file;     // The log, e.g. "000012.log".
    uint64_t offset = 0;  // Where the dropped part begins: the end of the
                          // last intact record before the damage.
    uint64_t bytes = 0;   // Bytes dropped, from offset to the log's end.
    std::string damage;   // What is wrong at the damage ("checksum
                          // mismatch"), or "after a damaged earlier log".
    // Intact records among the dropped bytes: writes that had survived
    // but are dropped to keep a prefix. 0 with `torn_tail`.
    int64_t records = 0;
    // The damage reached the end of the last log with nothing intact
    // after it: the unwritten tail a power cut leaves, not a hole.
    bool torn_tail = false;
    // Where the dropped bytes are kept, relative to the Db's directory
    // ("dropped/000012.log.hole-at-4096"). hq never deletes them.
    std::string saved_as;
  };
  std::vector<Dropped> dropped;

  // True if no intact record was dropped (nothing, or only a torn tail).
  bool lost_nothing_intact() const {
    for (const Dropped& d : dropped) {
      if (!d.torn_tail) return false;
    }
    return true;
  }
};

// What Db::Verify found.
struct VerifyReport {
  int64_t keys = 0;      // Keys examined: every readable key of the Db.
  int64_t queues = 0;    // Queues in the catalog.
  int64_t messages = 0;  // Message records (not counting fences and heads).
  int64_t tables = 0;    // Table files whose every block was read.
  int64_t blocks = 0;    // Blocks read from them, checksums checked.
  // Every problem found: first the damaged table files and blocks, and the
  // logs recovery dropped (each with its `file`), then the records'
  // problems in key order; at most kMaxListedProblems of them
  // (problem_count counts them all).
  std::vector<VerifyProblem> problems;
  int64_t problem_count = 0;
  static constexpr size_t kMaxListedProblems = 1000;
  // Every file under the Db's dropped/ folder (RecoveryReport::saved_as of
  // this and earlier Opens), a torn tail's too, which is no problem.
  std::vector<std::string> dropped;

  bool ok() const { return problem_count == 0; }
  void AddProblem(VerifyProblem p) {
    ++problem_count;
    if (problems.size() < kMaxListedProblems) problems.push_back(std::move(p));
  }
};

// An open Db. Create with Db::Open; close by destroying it. Destruction
// waits for calls already in progress on other threads (calls that start
// once it has begun fail with FailedPrecondition, and using the Db or a
// Queue* after the destructor returned is undefined). Every Scanner must be
// destroyed before its Db.
//
// Write failures: if LevelDB fails a write (an I/O error, a full disk), that
// call fails with Internal and every later write (Put, PutBatch,
// CreateQueue, DropQueue) fails with FailedPrecondition until the Db is
// reopened, because LevelDB cannot be trusted to keep writes appended after
// a failed one. Reads keep working. Nothing acknowledged is lost.
//
// Thread safety: all methods may be called concurrently from any threads.
class HQ_EXPORT Db {
 public:
  // Opens (or, with create_if_missing, creates) the Db in directory `path`.
  // Nothing per queue is read: Open's time and memory do not depend on how
  // many queues or messages the Db holds.
  // Errors:
  //   InvalidArgument:    an option outside its limits; empty path;
  //   NotFound:           no Db at `path` and !create_if_missing;
  //   AlreadyExists:      a Db at `path` and error_if_exists;
  //   FailedPrecondition: the directory is already open, by another process
  //                       or by another Db object in this process (the
  //                       message names the directory); or it holds a
  //                       LevelDB database that is not an hq database;
  //   DataLoss:           stored data is corrupt, or of an hq format version
  //                       this hq cannot read;
  //   Internal:           any other storage error.
  static absl::StatusOr<std::unique_ptr<Db>> Open(const std::string& path,
                                                  const Options& options = {});

  virtual ~Db() = default;

  // Creates a queue. O(1): one catalog row, no files or threads of its own.
  // Names: 1..128 bytes of [A-Za-z0-9._-], starting with a letter or digit.
  // Errors: InvalidArgument (bad name or option), AlreadyExists,
  // ResourceExhausted (all 2^32-1 queue ids used), FailedPrecondition
  // (closing, or refusing writes after a failed one), Internal (storage).
  virtual absl::StatusOr<Queue*> CreateQueue(std::string_view name,
                                             const QueueOptions& options) = 0;

  // Returns the queue named `name`. Errors: InvalidArgument (bad name),
  // NotFound (no such queue).
  virtual absl::StatusOr<Queue*> OpenQueue(std::string_view name) = 0;

  // Deletes a queue and all its messages, then compacts the range they used
  // so their disk space is returned. Its consumer groups go with it, and so
  // do their dead-letter queues ("<name>.dead.<group>"). Takes time
  // proportional to the queue's size. Queue* and ConsumerGroup* handles to
  // it stay valid but fail with NotFound. If the process dies part-way, the
  // next Open finishes the job (a dead-letter queue not yet dropped then
  // stays, as an ordinary queue).
  // Errors: InvalidArgument (bad name), NotFound (no such queue),
  // FailedPrecondition (closing, or refusing writes after a failed one),
  // Internal. An error whose message says "is dropped" means the drop
  // itself is done and durable, but deleting the data failed; the next
  // Open deletes it.
  virtual absl::Status DropQueue(std::string_view name) = 0;

  // Names of all queues, in byte order. O(number of queues).
  virtual absl::StatusOr<std::vector<std::string>> ListQueues() = 0;

  // The directory this Db was opened on.
  virtual const std::string& path() const = 0;

  // Runs a TTL sweep now, on this thread: in every queue with a TTL, deletes
  // the messages older than it, lane by lane from where the previous sweep
  // stopped (never rescanning deleted keys), in batches of
  // Options::ttl_sweep_batch, then compacts each lane's deleted range (when
  // it holds at least a batch; smaller ones are left to LevelDB's own
  // compactions) so the disk space returns. Expired messages are already
  // invisible to readers; this reclaims their space. Also runs every
  // Options::ttl_sweep_interval in the background. Sweeps never run
  // concurrently (this waits for one in progress). Errors: FailedPrecondition
  // (closing, or refusing writes after a failed one), Internal / DataLoss
  // (storage).
  virtual absl::StatusOr<SweepStats> CompactExpired() = 0;

  // Runs a TTL sweep (CompactExpired), then compacts LevelDB's whole key
  // range, so that space of deleted records (expired messages, dropped
  // queues, completed task records) is returned and reads skip no
  // tombstones. Takes time proportional to the Db's size; reads and
  // writes go on meanwhile. Returns the sweep's figures. Errors as for
  // CompactExpired.
  virtual absl::StatusOr<SweepStats> CompactAll() = 0;

  // Walks every key and value of the Db (on a snapshot; reads and writes go
  // on meanwhile), checks each against its grammar (doc/format.md) and the
  // records it refers to, and reports (does not repair) what is wrong:
  //   - an empty key, or an unknown record tag;
  //   - a metadata, catalog, reservation, lane directory, TTL index, group,
  //     cursor, task, dead letter, dedup, subscription, checkpoint or
  //     message record whose key or value does not decode (a completion
  //     cursor above its scan cursor is a cursor value that does not
  //     decode), including a key that does not parse under its queue's
  //     layout, and a lane head (TTL watermark) or fence with a bad value;
  //   - a partition or priority out of its queue's range;
  //   - a record of a queue id that is not in the catalog (and not being
  //     dropped); a cursor, task or dead letter of a group, or a checkpoint
  //     of a subscription, that its queue does not have;
  //   - a queue id or group id at or above its counter, or used twice;
  //   - a group's scan cursor beyond the end of its lane (with a TTL:
  //     beyond the later of the lane end and the TTL cutoff);
  //   - a message at or above its partition's id reservation, or in a
  //     partition without one, or in a lane missing from the lane directory;
  //   - a TTL index record that does not match the catalog, or a queue with
  //     a TTL and no such record.
  // Memory: proportional to the number of queues, their partitions, groups
  // and subscriptions, not to messages. Errors (the walk itself failed):
  // FailedPrecondition (closing), Internal (storage), DataLoss (LevelDB
  // found a corrupt block).
  virtual absl::StatusOr<VerifyReport> Verify() = 0;

  // The Db's lease manager (lease.h), driven by Options::clock. Owned by
  // the Db; its leases end (without running) when the Db is destroyed.
  virtual LeaseManager* leases() = 0;

  // What this Open's recovery dropped from damaged logs (Options::recovery).
  virtual const RecoveryReport& recovery() const = 0;
};

}  // namespace hq

#endif  // HQ_DB_H_
