// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq::Db: one LevelDB directory holding any number of queues.

#ifndef HQ_DB_H_
#define HQ_DB_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
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
  // Records of the lane activity index (topic layout queues) that every
  // consumer has read past, deleted.
  int64_t hints_trimmed = 0;
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
    // Nothing intact after the damage, in this log or a later one: the
    // unwritten tail a crash or a power cut leaves, not a hole.
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

// ---- Backup and repair (Db::Backup, Db::Repair) ----

// What Db::Backup made.
struct BackupReport {
  std::string path;           // The backup's directory (`dest`).
  int64_t tables = 0;         // Table files in the backup.
  int64_t tables_linked = 0;  // Of them, hard links to the Db's own files.
  uint64_t table_bytes = 0;   // The tables' total size.
  int64_t logs = 0;           // Write-ahead logs copied.
  // Bytes written: the logs, the MANIFEST, CURRENT, and the tables that
  // could not be linked. With every table linked, about the Db's write
  // buffers (Options::write_buffer_bytes), whatever the Db's size.
  uint64_t bytes_copied = 0;
  // The backup holds every write acknowledged before this moment (it is
  // taken after the last log was read).
  absl::Time as_of;
  absl::Duration took;  // How long Backup took.
};

// How far a long call (Db::Verify, Db::Backup, Db::Repair, Db::CompactAll)
// has come: in its current phase, `done` of about `total` bytes. The phases,
// in order:
//   Verify: "checking tables" (the table files' bytes read), "checking
//     records" (the key range walked, in LevelDB's approximate bytes);
//   Backup: "copying" (the bytes of the files linked or copied);
//   CompactAll: "compacting" (the key range compacted, in LevelDB's
//     approximate bytes as they were before the compaction);
//   Repair: "copying aside" (the bytes of the files copied), then
//     Verify's phases for each Verify it runs (of the Db as it was, when
//     nothing is damaged; of the result, each round).
// `total` may be an estimate; `done` never passes it.
struct Progress {
  std::string_view phase;
  uint64_t done = 0;
  uint64_t total = 0;
};
// Called on the thread of the call, with done == 0 when a phase starts and
// done == total when it ends, and in between as work is done (per file,
// or per few thousand keys): it should return quickly and must not call
// into the Db. An empty callback is never called.
using ProgressCallback = std::function<void(const Progress&)>;

// What Db::Repair found, changed and lost. Every list is in the order it
// was found; nothing it names was deleted.
struct RepairReport {
  // True when the Db needed no repair: its files read without damage, it is
  // of this hq's format version, and Db::Open and Verify found nothing
  // (`verify` is that Verify). Repair then only opened and closed it, as
  // `hq verify` does: no copy aside (copied_to is ""), no file rewritten,
  // and the counts before and after are the same.
  bool nothing_to_repair = false;

  // The directory as it was, copied before anything was changed:
  // "<path>.before-repair-<UTC time>" beside it (e.g.
  // "/data/q.before-repair-20260101T120000Z"), every file and subdirectory,
  // synced. The copy is made under that name with ".partial" appended and
  // renamed once whole, so a directory of the final name is a whole copy.
  // hq never deletes it: once the repaired Db is trusted, delete it
  // yourself.
  std::string copied_to;
  uint64_t copied_bytes = 0;
  // Unfinished copies aside ("<path>.before-repair-<time>[-N].partial")
  // that an earlier repair, killed while copying, left beside the
  // directory: it had changed nothing yet, so Repair removes them and
  // names them here.
  std::vector<std::string> removed_partial_copies;

  // Damage found by the read of the files as they were, before anything
  // was changed.
  struct Damage {
    std::string file;  // "000005.ldb", "MANIFEST-000004", "CURRENT", ...
    std::string what;  // What is wrong ("checksum mismatch", "missing").
    // The keys that could not be read, in words, if known: for a damaged
    // block, "between K1 and K2", the readable keys on either side in
    // lowercase hex (or "the table's start" / "the table's end"), and where
    // they are messages, their queue, partition, priority and ids; for a
    // missing or unreadable table the MANIFEST names, "from K1 to K2", its
    // smallest and largest key. For people: the format may change.
    std::string lost_keys;
    // Whether keys were lost with it: true for a table (a block, or all of
    // it); false for CURRENT or a MANIFEST, which RepairDB rebuilds from
    // the tables.
    bool keys_lost = false;
  };
  std::vector<Damage> damage;

  // Logs cut at their first damaged record, as Db::Open's point-in-time
  // recovery cuts them (Options::Recovery::kPointInTime): the cut bytes,
  // and any later log, are kept in <path>/lost/ (Dropped::saved_as), as is
  // whatever an earlier Open left in <path>/dropped/, so the repaired Db
  // verifies clean. LevelDB's own repair would convert the intact records
  // after the damage too, leaving a hole; hq keeps a prefix of the writes.
  RecoveryReport logs;

  // Files LevelDB's RepairDB moved into <path>/lost/ (as "lost/000005.ldb"):
  // damaged tables (after copying their readable entries into a new table
  // of the same number), logs (after converting them into tables) and the
  // old MANIFESTs.
  std::vector<std::string> moved_to_lost;
  // RepairDB's own account, one line per event (its info log): entries
  // recovered per table and log, what it dropped.
  std::vector<std::string> leveldb_log;

  // One change to an hq record (doc/format.md) after RepairDB.
  struct Change {
    enum class Action {
      kRewritten,   // The record's value was corrected (a counter raised,
                    // a cursor lowered to its lane's end, ...).
      kAdded,       // A missing record was written (a reservation, a TTL
                    // index record, ...).
      kMovedAside,  // The record was moved to `moved_aside_to` (see there).
    };
    std::string key_hex;  // The record's key, in lowercase hex.
    std::string problem;  // What was wrong, and what was done about it.
    Action action = Action::kRewritten;
  };
  // At most kMaxListedChanges of them; change_count counts them all.
  std::vector<Change> changes;
  int64_t change_count = 0;
  static constexpr size_t kMaxListedChanges = 1000;

  // Records Repair cannot mend are neither deleted nor left to fail
  // Verify: they are moved, keys and values unchanged, into a LevelDB
  // database of their own in this directory
  // ("<path>/lost/hq-records-<UTC time>"; "" if none was moved): records
  // hq does not understand (unknown tags, keys or values that do not
  // decode) and records whose owner is gone (a group or subscription its
  // queue does not have; records of a queue missing from the catalog that
  // has no message left, see Repair). Open it with any LevelDB tool to
  // read them.
  std::string moved_aside_to;
  int64_t moved_aside = 0;

  // Messages per queue, before (read from the files as they were, as far
  // as they could be read: tables block by block, logs up to their first
  // damage) and after. A queue missing from the catalog is named
  // "queue id N".
  struct QueueCount {
    std::string queue;
    int64_t messages_before = 0;
    int64_t messages_after = 0;
  };
  std::vector<QueueCount> queues;
  int64_t keys_before = 0, keys_after = 0;
  int64_t messages_before = 0, messages_after = 0;

  // Db::Verify of the repaired Db.
  VerifyReport verify;

  // The repaired Db verifies clean.
  bool clean() const { return verify.ok(); }
  // No table key was lost, no intact log record dropped (a torn last
  // record is not intact), no record moved aside, and every message read
  // before is there after.
  bool lost_nothing() const {
    for (const Damage& d : damage) {
      if (d.keys_lost) return false;
    }
    return logs.lost_nothing_intact() && moved_aside == 0 &&
           messages_after >= messages_before;
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
// Damage met by a compaction: if a LevelDB compaction (CompactAll's, a TTL
// sweep's, or one LevelDB runs in the background as writes fill its
// tables) meets a damaged table, that call (CompactAll, CompactExpired) and
// every later call that reads or writes (Verify aside) fail with DataLoss
// naming the table file, until the Db is reopened. A compaction that fails
// for another reason (an I/O error writing its output) is a write failure
// as above.
//
// Thread safety: all methods may be called concurrently from any threads.
class HQ_EXPORT Db {
 public:
  // Opens (or, with create_if_missing, creates) the Db in directory `path`.
  // Nothing per queue is read: Open's time and memory do not depend on how
  // many queues or messages the Db holds.
  // Errors:
  //   InvalidArgument:    an option outside its limits; empty path;
  //   NotFound:           no Db at `path` and !create_if_missing; or the
  //                       parent directory of `path` does not exist (the
  //                       message names it: Open creates only `path`);
  //   PermissionDenied:   the directory's LOCK file cannot be opened for
  //                       writing (a read-only directory or file system:
  //                       hq needs write access, also to read); the
  //                       message names the file and the errno;
  //   AlreadyExists:      a Db at `path` and error_if_exists;
  //   FailedPrecondition: the directory is already open, by another process
  //                       (ErrorDetail::kDbLocked, hq/status.h) or by
  //                       another Db object in this process (the message
  //                       names the directory); or it holds a LevelDB
  //                       database that is not an hq database;
  //   DataLoss:           stored data is corrupt, or of an hq format version
  //                       this hq cannot read;
  //   Internal:           any other storage error.
  // An Open that fails before LevelDB opened the Db (a held LOCK, a
  // missing table, a damaged MANIFEST) changes no file: LevelDB's info log
  // (LOG) is rotated to LOG.old only once the Open succeeded.
  static absl::StatusOr<std::unique_ptr<Db>> Open(const std::string& path,
                                                  const Options& options = {});

  Db() = default;
  virtual ~Db() = default;
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

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

  // Deletes a queue and all its messages. Its consumer groups go with it,
  // and so do their dead-letter queues ("<name>.dead.<group>"). Takes time
  // proportional to the queue's size; it does not wait for a compaction.
  // Disk space: the janitor thread (Options::ttl_sweep_interval or
  // status_interval nonzero) then compacts each range of the queue that
  // held Options::ttl_sweep_batch records or more; smaller ranges, or all
  // of them without a janitor, return as LevelDB compacts, or at once with
  // CompactAll. Queue* and ConsumerGroup* handles to
  // it stay valid but fail with NotFound. If the process dies part-way, the
  // next Open finishes the job (a dead-letter queue not yet dropped then
  // stays, as an ordinary queue).
  // Errors: InvalidArgument (bad name), NotFound (no such queue),
  // FailedPrecondition (closing, or refusing writes after a failed one),
  // Internal. An error with ErrorDetail::kDropDurable (hq/status.h) means
  // the drop itself is done and durable, but deleting the data failed; the
  // next Open deletes it.
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
  // invisible to readers; this reclaims their space. In every queue with
  // the topic layout (TTL or not) it also deletes the lane activity index's
  // records that every consumer group and subscription has read past
  // (doc/format.md, "Lane activity index"). Also runs every
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
  // CompactExpired; a compaction that meets a damaged table fails with
  // DataLoss naming the file (and so does every later call: "Damage met by
  // a compaction" above).
  absl::StatusOr<SweepStats> CompactAll() {
    return CompactAll(ProgressCallback());
  }
  // The same, telling `progress` how far the compaction has come
  // (Progress). With a callback, the key range is compacted in slices of
  // about equal size, one after the other, so that there is progress to
  // tell; the result is the same.
  virtual absl::StatusOr<SweepStats> CompactAll(
      const ProgressCallback& progress) = 0;

  // Walks every key and value of the Db (on a snapshot; reads and writes go
  // on meanwhile), checks each against its grammar (doc/format.md) and the
  // records it refers to, and reports (does not repair) what is wrong:
  //   - an empty key, or an unknown record tag;
  //   - a metadata, catalog, reservation, lane directory (written by format
  //     versions before 7), TTL index, group,
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
  //     partition without one;
  //   - a TTL index record that does not match the catalog, or a queue with
  //     a TTL and no such record.
  // Memory: proportional to the number of queues, their partitions, groups
  // and subscriptions, not to messages. Errors (the walk itself failed):
  // FailedPrecondition (closing), Internal (storage), DataLoss (LevelDB
  // found a corrupt block).
  absl::StatusOr<VerifyReport> Verify() { return Verify(ProgressCallback()); }
  // The same, telling `progress` how far it has come (Progress).
  virtual absl::StatusOr<VerifyReport> Verify(
      const ProgressCallback& progress) = 0;

  // The Db's lease manager (lease.h), driven by Options::clock. Owned by
  // the Db; its leases end (without running) when the Db is destroyed.
  virtual LeaseManager* leases() = 0;

  // What this Open's recovery dropped from damaged logs (Options::recovery).
  virtual const RecoveryReport& recovery() const = 0;

  // ---- Backup and repair ----

  // Writes a consistent copy of this Db into directory `dest`, while reads
  // and writes go on: the copy holds a prefix of the writes in commit
  // order (what a kill -9 of this process at one moment during the call
  // would leave), including every write acknowledged before Backup was
  // called, and opens as a Db that verifies clean. `dest` must not exist
  // (its parent must) or be an empty directory. Table files are hard-linked
  // when Options::env is the file system and `dest` is on the same one
  // (they are never modified, so the link is a copy at no cost); copied
  // otherwise. The MANIFEST and the write-ahead logs are copied, the last
  // log up to its last complete record. Nothing is locked: while it runs,
  // LevelDB's deletions of obsolete files in this Db are deferred to its
  // end, so their disk space returns a little later. Tasks in flight,
  // leases and unwritten subscription checkpoints are this process's
  // memory, not the Db's: in the copy they are as after a crash.
  // Everything is synced before it returns. If it fails, what it created
  // in `dest` is removed.
  // Errors: InvalidArgument (empty `dest`, or `dest` inside this Db's
  // directory), AlreadyExists (`dest` is a file or a non-empty directory),
  // NotFound (`dest`'s parent does not exist), PermissionDenied,
  // ResourceExhausted (no room), FailedPrecondition (closing), DataLoss
  // (this Db's MANIFEST or log is damaged), Internal (other I/O errors).
  absl::StatusOr<BackupReport> Backup(const std::string& dest) {
    return Backup(dest, ProgressCallback());
  }
  // The same, telling `progress` how far it has come (Progress).
  virtual absl::StatusOr<BackupReport> Backup(
      const std::string& dest, const ProgressCallback& progress) = 0;

  // Repairs the Db in directory `path`, which no process may have open:
  //   1. checks that nothing holds it, that it is an hq database of a
  //      format version this hq reads, and removes the unfinished copy
  //      aside that an earlier repair killed while copying left
  //      (RepairReport::removed_partial_copies);
  //   2. reads every file as far as it can (the "before" of the report,
  //      and the damage it finds);
  //   3. if nothing is damaged, the Db is of this format version, and
  //      Db::Open and Verify find nothing, stops there and says so
  //      (RepairReport::nothing_to_repair): nothing is copied or changed;
  //      else checks that there is room beside it for a copy, and copies
  //      the directory aside (RepairReport::copied_to);
  //   4. cuts damaged logs at their first damaged record, as Open's
  //      point-in-time recovery does, and moves the cut bytes, and all of
  //      dropped/, into lost/;
  //   5. runs LevelDB's RepairDB: it rebuilds the MANIFEST from the tables
  //      it finds, converts the logs into tables and moves what it cannot
  //      use into lost/;
  //   6. mends hq's own records, in the order Verify checks them (its list
  //      in Verify's comment): metadata counters, catalog, reservations,
  //      lane directory (older formats), TTL index, groups, subscriptions,
  //      cursors beyond their lane's end, and the rest; what cannot be
  //      mended is moved aside (RepairReport::moved_aside_to), never
  //      deleted. A queue whose catalog record was lost while messages of
  //      it remain gets one again: named as its TTL index record says, else
  //      "recovered-<queue id>", with the partitions, priorities and
  //      layout its records show, no TTL (stored nowhere else) and the
  //      default payload limit;
  //   7. opens the result with Db::Open and runs Verify, mending again
  //      while that finds something (up to three rounds).
  // Afterwards Db::Open succeeds, and the report says whether Verify is
  // clean (RepairReport::clean()); it also says what was found damaged,
  // cut, moved and changed, and the message counts before and after. A Db
  // without damage comes out with the same messages. Of `options`, Repair
  // uses env, clock (the TTL cutoff of cursor checks), bloom_bits_per_key
  // and write_buffer_bytes (for the tables it writes); logs are always cut
  // as with Recovery::kPointInTime. If Repair fails part-way, or the
  // process dies, the copy aside is the Db as it was: run Repair again, or
  // restore it from there. Between steps 5 and 6, and while step 7 opens
  // the Db, the directory is briefly not locked; a process that opens it
  // then makes Repair fail with FailedPrecondition.
  // Errors: InvalidArgument (empty path, bad options), NotFound (no
  // directory, or no LevelDB file in it), FailedPrecondition (open in
  // this or another process, the latter with ErrorDetail::kDbLocked: the
  // message names the directory; not an hq database; another hq format
  // version), PermissionDenied (its LOCK cannot be opened for writing),
  // AlreadyExists (the copy aside's
  // name is taken), ResourceExhausted (no room for the copy aside: nothing
  // was changed), PermissionDenied (the directory or its parent is not
  // writable: nothing was changed), Internal / DataLoss (storage errors;
  // the message names the copy aside once it exists).
  // `progress`, if not empty, is told how far it has come (Progress).
  static absl::StatusOr<RepairReport> Repair(
      const std::string& path, const Options& options = {},
      const ProgressCallback& progress = {});
};

}  // namespace hq

#endif  // HQ_DB_H_
