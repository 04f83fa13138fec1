// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The rules of hq's stored records, held once: a RecordWalker walks every
// key of a LevelDB snapshot in key order and checks each record against
// its grammar (lib/format/format.h, lib/format/layout_codec.h,
// doc/format.md) and against the records it refers to. What to do with a
// record that breaks a rule is a WalkPolicy's business: Db::Verify
// (lib/admin/verify.cc) reports it, Db::Repair (lib/admin/repair_mend.cc)
// mends it as the Finding's remedy says.
//
// Key order makes the references cheap: metadata (0x00) comes before the
// catalog (0x01), the catalog before everything of a queue, groups (0x06)
// before their cursors, tasks and dead letters, subscriptions (0x0b)
// before their checkpoints, reservations (0x02) and the lane directory
// (0x04) before messages (0x10). What the walk keeps in memory is per
// queue, group and subscription (and per partition for reservations),
// never per message.
//
// Adding a record kind (a new tag of format.h): write one CheckXxx()
// member in record_walk.cc that states its rules through Reject, Rewrite,
// Add and Later (and Refers, if it names a message id), and add its tag to
// the switch in RecordWalker::Check. Verify reports and Repair mends it
// with nothing else to change; a tag left out of the switch is reported
// as unknown (and moved aside by Repair).

#ifndef HQ_LIB_ADMIN_RECORD_WALK_H_
#define HQ_LIB_ADMIN_RECORD_WALK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hq/message.h"
#include "leveldb/db.h"
#include "lib/format/format.h"

namespace hq {

// A record that breaks a rule, and how Repair mends it.
struct Finding {
  enum class Remedy {
    kMoveAside,  // The record goes into the side Db (value: its value).
    kRewrite,    // `value` is written at `key`.
    kAdd,        // A missing record: `value` is written at `write_key`.
    kLater,      // Mended after the walk (counters and reservations).
    kFail,       // The walk could not read what it needs: `io` says why,
                 // `mend` what it was reading.
  };
  std::string_view key;  // The record found wrong (or missing).
  std::string problem;   // Verify's words.
  Remedy remedy = Remedy::kMoveAside;
  std::string mend;       // Repair's words; empty: `problem`.
  std::string write_key;  // kAdd: where the missing record goes.
  std::string value;      // kMoveAside, kRewrite, kAdd (above).
  leveldb::Status io;     // kFail.
};

// A queue of the catalog, as the walk has read it so far.
struct WalkQueue {
  std::string name;
  format::QueueRecord record;
  bool has_ttl_record = false;
  absl::flat_hash_set<uint32_t> groups;
  absl::flat_hash_set<uint32_t> subs;
};

// What the walk read, for the policy's work after it (WalkEnded) and the
// caller's counts.
struct WalkFacts {
  // The metadata records: present, malformed, their values (1 if absent
  // or malformed).
  bool has_format = false;
  bool has_next_queue_id = false, has_next_group_id = false;
  bool bad_next_queue_id = false, bad_next_group_id = false;
  uint32_t next_queue_id = 1, next_group_id = 1;
  // The highest queue id of the catalog and the drop markers, and the
  // highest group or subscription id (0: none).
  uint32_t max_queue_id = 0, max_group_id = 0;
  absl::flat_hash_map<uint32_t, WalkQueue> queues;  // By queue id.
  // Per partition (PartitionKey): well-formed reservations (ms), and the
  // partitions whose reservation value is malformed.
  absl::flat_hash_map<uint64_t, uint64_t> reserved;
  absl::flat_hash_set<uint64_t> bad_reservation;
  int64_t keys = 0;      // Every key read.
  int64_t messages = 0;  // Message records (not fences nor lane heads).
};

// What a walk does with what it finds. Called from the walking thread
// only, in key order.
class WalkPolicy {
 public:
  virtual ~WalkPolicy() = default;

  // The walk found `f`. Returns true if the record stays (as it is, or
  // rewritten), so that the walk goes on using it; false if it is gone
  // (moved aside) or the walk is failing.
  virtual bool Found(const Finding& f) = 0;

  // A record that stays refers to message id `id` of a partition (a
  // cursor, task, dedup record, checkpoint, lane head); `message` if it is
  // the message itself.
  virtual void Refers(uint32_t /*queue_id*/, uint32_t /*partition*/,
                      MessageId /*id*/, bool /*message*/) {}

  // After each record: a non-OK status ends the walk with it.
  virtual absl::Status Step() { return absl::OkStatus(); }

  // Before each record's rules: its key, and the keys walked so far
  // (this one included).
  virtual void Walking(std::string_view /*key*/, int64_t /*keys*/) {}

  // After the last record's rules, before the walk's closing rule (a
  // queue with a TTL has a TTL index record).
  virtual void WalkEnded(const WalkFacts& /*facts*/) {}
};

// One pass over a snapshot. Not thread-safe; `db`, the snapshot of `ro`
// and `policy` must outlive it.
class RecordWalker {
 public:
  struct Options {
    // Read on past damaged blocks (LevelDB's iterator steps over them)
    // instead of failing at the first: the caller has reported them.
    bool past_damage = false;
    // Keys were lost to damage (Repair): any hint may be gone, so every
    // lane source position goes (its consumer walks the lanes again).
    bool keys_lost = false;
    // What a failed read is said to be doing (the error's context).
    std::string_view reading = "verifying the database";
    std::string_view reading_lanes = "verifying the database";
    std::string_view reading_drops = "reading drop markers";
  };

  RecordWalker(leveldb::DB* db, const leveldb::ReadOptions& ro, absl::Time now,
               WalkPolicy* policy, const Options& options);
  ~RecordWalker();

  // Walks every key once. Errors: a read failure (unless past_damage), or
  // the first non-OK WalkPolicy::Step().
  absl::Status Run();

  const WalkFacts& facts() const { return facts_; }

  static uint64_t PartitionKey(uint32_t queue_id, uint32_t partition) {
    return (uint64_t{queue_id} << 16) | partition;
  }

 private:
  leveldb::Iterator* NewIterator();
  // Reads the drop markers and the consumer delete tombstones: the records
  // they leave behind are leftovers, not problems.
  absl::Status ReadDropMarkers();

  // Hands a finding on the current record to the policy (true: it stays).
  bool Reject(std::string problem, std::string mend = "");
  bool Rewrite(std::string problem, std::string value, std::string mend);
  bool Add(std::string_view key, std::string problem, std::string write_key,
           std::string value, std::string mend);
  bool Later(std::string problem);

  // The lane prefix (tag 0x10) for key bytes `rest` (lane_rest) of queue id.
  static std::string LanePrefix(uint32_t queue_id, std::string_view rest);

  // The rules, one function a record kind (record_walk.cc, and the
  // consumers' records in record_walk_consumer.cc).
  void Check();
  void CheckMeta();
  void CheckCatalog();
  void CheckReserve();
  void CheckDrop();
  void CheckLaneDir();
  void CheckTtl();
  void CheckGroupOrSub(bool is_group);
  bool CheckGroupId(std::string_view kind, uint32_t id);
  void CheckCursor();
  void CheckTask();
  void CheckPark();
  // A claim record names lanes of its group's queue (topic layout), each
  // with cursors as a cursor record has them.
  void CheckClaim();
  void CheckDead();
  void CheckDedup();
  void CheckCheckpoint();
  // The lane activity index (doc/format.md): a hint names a lane of its
  // queue (topic layout only) at its key's priority; a lane source
  // position belongs to a group or subscription of its queue.
  void CheckHint();
  void CheckSource();
  void CheckPace();
  // A consumer delete tombstone (doc/format.md, "Consumer deletes").
  void CheckDelete();
  // Whether the current key (tag queue_id consumer_id ...) is a record of
  // a consumer being deleted.
  bool OfDeletedConsumer() const;
  void CheckMessage();
  void CheckMessageRecord(const WalkQueue& q, uint32_t partition,
                          std::string_view rest, bool head);
  void CheckTtlRecords();

  // Shared steps of the rules.
  WalkQueue* QueueOf(std::string_view kind, size_t min_size);
  WalkQueue* OwnerOf(std::string_view kind, bool of_group);
  bool Lane(std::string_view kind, const WalkQueue& q, std::string_view lane,
            uint32_t* partition = nullptr);
  // A consumer's record keyed by one of its lanes (cursor, park, task,
  // checkpoint): its owner (OwnerOf), and the lane its key names after
  // the consumer's prefix, less `suffix` bytes at the end (Lane), with its
  // partition. `q` is null if the record was handled (rejected, or of a
  // consumer being deleted); a key too short for `suffix` is rejected.
  struct LaneRecord {
    WalkQueue* q = nullptr;
    std::string lane;
    uint32_t partition = 0;
  };
  LaneRecord OwnedLane(std::string_view kind, bool of_group, size_t suffix = 0);
  bool MessageLane(const WalkQueue& q, size_t* lane_size);
  void EnterLane(std::string_view lane);
  void EndLane();
  MessageId LaneEnd(std::string_view lane);
  // The highest scan cursor a group may have in `lane` of `q`: its end,
  // or the TTL cutoff if later.
  MessageId ScanLimit(const WalkQueue& q, std::string_view lane);

  leveldb::DB* const db_;
  const leveldb::ReadOptions ro_;
  const absl::Time now_;
  WalkPolicy* const policy_;
  const Options options_;
  std::unique_ptr<leveldb::Iterator> lane_it_;  // For LaneEnd.
  std::string_view key_, value_;                // The current record.
  WalkFacts facts_;
  absl::flat_hash_set<uint32_t> dropping_;  // Queues being dropped.
  // Consumers being deleted: queue_id << 32 | consumer_id.
  absl::flat_hash_set<uint64_t> deleting_;
  absl::flat_hash_set<uint32_t> group_ids_;  // Groups and subscriptions.
  // Queues a hint of which the policy did not keep.
  absl::flat_hash_set<uint32_t> hints_lost_;
  // Groups and subscriptions (fixed32 queue_id fixed32 consumer_id) a
  // cursor or checkpoint record of which the policy did not keep.
  absl::flat_hash_set<std::string> cursors_lost_;
  std::string lane_;  // The message lane the walk is in ("": none).
};

}  // namespace hq

#endif  // HQ_LIB_ADMIN_RECORD_WALK_H_
