// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#ifndef HQ_LIB_ENGINE_DB_IMPL_H_
#define HQ_LIB_ENGINE_DB_IMPL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/container/node_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hq/clock.h"
#include "hq/db.h"
#include "leveldb/cache.h"
#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/filter_policy.h"
#include "leveldb/write_batch.h"
#include "lib/engine/db_extensions.h"
#include "lib/engine/delivery_pool.h"
#include "lib/engine/file_pin_env.h"
#include "lib/engine/info_log.h"
#include "lib/engine/lease_manager.h"
#include "lib/engine/log_sync_env.h"
#include "lib/engine/write_group.h"
#include "lib/format/format.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/sync.h"

namespace hq {

class LayoutCodec;
class QueueImpl;
class DeliveryPool;

// MessageIds are assigned inside the write pipeline: writers queue up, the
// writer at the front (the leader) takes the queued writers as one group,
// assigns their ids and writes them as one LevelDB WriteBatch while the
// others wait. Groups are written one at a time in the order their ids were
// assigned, so within a partition a higher id is never visible before a
// lower one (the lane-visibility guarantee), and concurrent sync writers
// share one fsync.
//
// Id assignment survives crashes through a per-partition reservation record
// (format.h): every id handed out has ms below the reserved ms, and a write
// that would pass it carries a new reservation, kReserveWindowMs ahead, in
// the same WriteBatch. Reopening continues from the reservation, so ids
// never repeat; at most once a second per busy partition pays one small
// extra record.
class DbImpl final : public Db {
 public:
  // Db::Open (lib/admin/db_open.cc), with the calls that the folders above
  // the engine implement: `extensions` outlives the Db.
  static absl::StatusOr<std::unique_ptr<Db>> Open(const std::string& path,
                                                  const Options& options,
                                                  DbExtensions* extensions);
  ~DbImpl() override;

  absl::StatusOr<Queue*> CreateQueue(std::string_view name,
                                     const QueueOptions& options) override;
  absl::StatusOr<Queue*> OpenQueue(std::string_view name) override;
  absl::Status DropQueue(std::string_view name) override;
  absl::StatusOr<std::vector<std::string>> ListQueues() override;
  const std::string& path() const override { return path_; }
  LeaseManager* leases() override { return leases_.get(); }
  const RecoveryReport& recovery() const override { return recovery_; }
  LeaseManagerImpl* lease_impl() { return leases_.get(); }
  absl::StatusOr<SweepStats> CompactExpired() override;
  // Implemented by the extensions (lib/admin).
  using Db::CompactAll;
  absl::StatusOr<SweepStats> CompactAll(
      const ProgressCallback& progress) override {
    return extensions_->CompactAll(this, progress);
  }
  using Db::Backup;
  using Db::Verify;
  absl::StatusOr<VerifyReport> Verify(
      const ProgressCallback& progress) override {
    return extensions_->Verify(this, progress);
  }
  absl::StatusOr<BackupReport> Backup(
      const std::string& dest, const ProgressCallback& progress) override {
    return extensions_->Backup(this, dest, progress);
  }
  DbExtensions* extensions() const { return extensions_; }
  // Runs `f` inside every later Backup, after it read the MANIFEST and
  // before it links the tables (tests compact there). Not thread-safe with
  // Backup.
  void TEST_SetBackupHook(std::function<void()> f) {
    backup_hook_ = std::move(f);
  }
  // For Backup and Verify: the hook above (empty if none), the Env that
  // defers LevelDB's file deletions (lib/engine/file_pin_env.h), and
  // LevelDB's own Env (the top of the chain).
  const std::function<void()>& backup_hook() const { return backup_hook_; }
  FilePinEnv* pin_env() const { return pin_env_.get(); }
  leveldb::Env* leveldb_env() const { return env_.get(); }
  // Options::env, or the default Env: what hq's own files are written
  // through (LevelDB's go through leveldb_env(), over it).
  leveldb::Env* BaseEnv() const {
    return options_.env ? options_.env : leveldb::Env::Default();
  }

  // ---- For QueueImpl and ScannerImpl ----

  // Writes `messages` of `queue` atomically, partition i going to
  // partitions[i], and fills results[i]. REQUIRES: messages validated.
  // `append`, if set, is called by the pipeline's leader once the ids are
  // assigned (results filled), to add records to the same atomic batch; it
  // must not block or take locks. If `also_live` is set and that queue was
  // dropped, the write fails with NotFound (so that no record of a dropped
  // queue is written after its drop).
  using AppendFn = std::function<void(leveldb::WriteBatch*)>;
  absl::Status WriteMessages(QueueImpl* queue,
                             std::span<const Message> messages,
                             const uint32_t* partitions, PutResult* results,
                             bool sync, AppendFn append = nullptr,
                             QueueImpl* also_live = nullptr);
  // Writes bookkeeping records of `queue` (consumer groups) through the
  // pipeline: NotFound once the queue is dropped, sticky errors as Put.
  absl::Status WriteRecords(QueueImpl* queue, const leveldb::WriteBatch& b,
                            bool sync);
  // Writes records of a topic layout `queue` that need the lane activity
  // index (doc/format.md, "Lane activity index"): `fill` runs in the
  // pipeline's leader, after `queue`'s hint sequences are loaded, and adds
  // records to `b` through `hints` (which must not be kept).
  class HintWriter {
   public:
    // Appends a hint for the topic layout lane `lane_prefix`.
    virtual void Append(std::string_view lane_prefix) = 0;
    // The seq the next hint of `priority` gets.
    virtual uint64_t Next(int priority) = 0;
    // Whether the batch holds messages of the queue that got no hint (the
    // queue had no consumer source record when they were appended).
    virtual bool UnhintedInBatch() = 0;
    // For each of the queue's partitions, the id the next message gets at
    // the earliest: every message appended before is below it (NextIds'
    // contract, at this point of the batch). False on a read error.
    virtual bool NextIds(std::vector<MessageId>* ids) = 0;

   protected:
    ~HintWriter() = default;
  };
  absl::Status WriteWithHints(
      QueueImpl* queue, bool sync,
      const std::function<void(HintWriter* hints, leveldb::WriteBatch* b)>&
          fill);
  // Writes a new consumer group's record (key `key`) with the next group
  // id, which it sets in `record`. The id and the counter are written in
  // one batch, one group at a time, so the stored counter never falls
  // behind an id in use.
  absl::Status CreateGroupRecord(QueueImpl* queue, std::string_view key,
                                 format::GroupRecord* record);
  // The same for any record that needs an id from that counter
  // (subscriptions): `fill` gets the new id and adds the records to write
  // with it. Returns the id.
  absl::StatusOr<uint32_t> CreateWithId(
      QueueImpl* queue,
      const std::function<void(uint32_t id, leveldb::WriteBatch*)>& fill);
  // For each partition of `q`: an id that every message stored now is
  // below and every message written later is at or above (MessageId::Min()
  // for a partition never written to). Taken in the write pipeline,
  // between two batches, so no write straddles it.
  absl::StatusOr<std::vector<MessageId>> NextIds(QueueImpl* q);
  // The Db's delivery threads (created at the first call).
  DeliveryPool* delivery_pool();

  // ---- Deleting a consumer group or subscription (doc/format.md,
  // "Consumer deletes"; lib/engine/consumer_delete.cc).

  // Deletes the record at `record_key` (of consumer `consumer_id` of
  // `queue`) and writes its tombstone with `value`, in one synced batch.
  absl::Status BeginConsumerDelete(QueueImpl* queue,
                                   std::string_view record_key,
                                   uint32_t consumer_id,
                                   const format::DeleteValue& value);
  // Deletes every record of the consumer in batches of 1000 keys, drops
  // its dead-letter queue if `value` names one that the catalog still has
  // with that id, then the tombstone. The queue's next write reads again
  // whether a consumer's source position remains (LoadHasSources).
  absl::Status FinishConsumerDelete(uint32_t queue_id, uint32_t consumer_id,
                                    const format::DeleteValue& value);
  // The queue's next write reads again whether the queue has a consumer's
  // source position (after one was deleted). Runs in the write pipeline.
  absl::Status ForgetHasSources(uint32_t queue_id);
  // Calls `hook` with the batch's number (from 0) before each batch of
  // deletions FinishConsumerDelete writes; a non-OK status stops the delete
  // there and is returned, leaving the rest as a crash would (nullptr:
  // none). REQUIRES: no delete runs.
  void TEST_SetDeleteBatchHook(std::function<absl::Status(int)> hook) {
    delete_batch_hook_ = std::move(hook);
  }

  // Registers a call that uses the storage, so that ~DbImpl waits for it.
  // Fails with FailedPrecondition once the Db is closing, and with
  // DamageError() once a background compaction failed, unless
  // `despite_damage` (Verify, which reports the damage itself).
  absl::Status BeginOp(bool despite_damage = false);
  void EndOp();
  class OpScope {
   public:
    explicit OpScope(DbImpl* db, bool despite_damage = false)
        : db_(db), status_(db->BeginOp(despite_damage)) {}
    ~OpScope() {
      if (status_.ok()) db_->EndOp();
    }
    const absl::Status& status() const { return status_; }

   private:
    DbImpl* const db_;
    const absl::Status status_;
  };

  // OK, or DataLoss naming the damaged table once a LevelDB compaction met
  // damage (LevelDB keeps it as its background error, which only writes
  // return). Once set it stays set: every call fails with it until the Db
  // is reopened.
  absl::Status DamageError();
  // As if LevelDB had logged that a compaction failed with `leveldb_status`.
  void TEST_NoteBackgroundError(std::string_view leveldb_status) {
    NoteBackgroundError(leveldb_status);
  }

  leveldb::DB* leveldb() const { return db_.get(); }
  // Whether the destructor has begun (calls then fail, sweeps stop), and
  // the status calls then get.
  bool IsClosing();
  absl::Status ClosingError() const;
  Clock* clock() const { return clock_; }
  bool default_sync() const { return options_.sync_writes; }
  void ScannerOpened() { live_scanners_.fetch_add(1); }
  void ScannerClosed() { live_scanners_.fetch_sub(1); }
  // Counts a scanner holding an iterator and snapshot; ResourceExhausted
  // past Options::max_open_scanners.
  absl::Status AcquireScannerResources();
  void ScannerResourcesReleased() { scanner_resources_.fetch_sub(1); }
  absl::Duration scanner_lease() const { return options_.scanner_lease; }
  // Scanners holding an iterator and snapshot (not expired, not destroyed).
  int TEST_ScannerResources() { return scanner_resources_.load(); }
  // Has the janitor publish the live status as soon as it can, besides
  // every Options::status_interval (nothing if that is zero): at a group's
  // load, its first claim and a subscription's start, so that the tool
  // sees them within a fraction of a second. Never blocks on the
  // publication; requests made while one is pending coalesce.
  void PublishStatusSoon();
  // Publications of the live status made by its timer (not the early
  // ones of PublishStatusSoon) since Open.
  int64_t TEST_TimedStatusCount();

  // Queues held in memory (created or opened since Open).
  size_t TEST_CachedQueueCount();
  // Writers in the write pipeline (the leader and those queued behind it).
  size_t TEST_QueuedWriters();
  // Whether the destructor has begun.
  bool TEST_Closing();
  // Sweeps completed (by CompactExpired or the janitor).
  int64_t TEST_SweepCount();
  // Ranges of dropped queues the janitor has compacted (ReclaimLater).
  int64_t TEST_ReclaimedRanges();
  // LevelDB writes made by the write pipeline (messages and group records).
  int64_t TEST_PipelineWrites() { return pipeline_writes_.load(); }
  // The Env that syncs closed logs in the background (its TEST_ hooks).
  LogSyncEnv* TEST_LogSyncEnv() { return env_.get(); }

  static constexpr uint64_t kReserveWindowMs = 1000;

  // ---- For Db::Repair (lib/admin/repair.cc) ----

  // Marks directory `path` of `env` as open in this process, as Open does,
  // so that an Open of it fails meanwhile. Returns the key to release it
  // with; FailedPrecondition if it is open already.
  static absl::StatusOr<std::string> ClaimDirectory(const std::string& path,
                                                    leveldb::Env* env);
  static void ReleaseDirectory(const std::string& key);

 private:
  // A request in the write pipeline: messages to put, or (exclusive) a
  // function the leader runs alone while no write is in flight.
  struct Writer {
    QueueImpl* queue = nullptr;
    std::span<const Message> messages;
    const uint32_t* partitions = nullptr;
    PutResult* results = nullptr;
    std::function<absl::Status()> exclusive;
    AppendFn append;
    QueueImpl* also_live = nullptr;
    bool sync = false;
    // Load every priority's hint sequence of `queue` before `append`.
    bool load_hints = false;

    bool done = false;
    bool in_batch = false;
    absl::Status status;
    CondVar cv;
  };
  // The ids of one partition (lib/engine/write_group.h).
  using PartitionIds = ::hq::PartitionIds;
  static uint64_t PartitionKey(uint32_t queue_id, uint32_t partition) {
    return (uint64_t{queue_id} << 16) | partition;
  }

  DbImpl(std::string path, const Options& options, std::string lock_key,
         DbExtensions* extensions);
  // Opens LevelDB under hq's checks and checks (or writes) hq's records.
  absl::Status Init();
  // LevelDB's options over hq's Env chain, cache and filter (created here).
  leveldb::Options LevelDbOptions();
  // Opens db_, mapping LevelDB's errors to hq's documented codes.
  absl::Status OpenLevelDb(const leveldb::Options& lo);
  // Writes the format record of a new Db, checks an existing one's and
  // upgrades an older version's.
  absl::Status InitFormat();
  absl::Status LoadNextQueueId();

  // Leader only. The next hint seq of (queue_id, priority), loaded at
  // first use by one seek to its last hint.
  absl::StatusOr<uint64_t*> LoadHintSeq(uint32_t queue_id, int priority)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // The seq the next hint under `prefix` (HintPrefix) gets: after the
  // newest hint, or past the index head's trimmed_below, or 1. One seek.
  absl::StatusOr<uint64_t> NextHintSeq(const std::string& prefix,
                                       leveldb::Iterator* it);
  // Leader only. Adds `lane` (a topic layout lane prefix) to the batch's
  // hint of its (queue, priority) unless it is there. REQUIRES: its seq is
  // loaded.
  void AppendHint(uint32_t queue_id, int priority, std::string_view lane)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Leader only. Appends to batch_ the batch's hints, one per (queue,
  // priority), each with the next seq.
  void FlushHints() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  class LeaderHints;

  // Writes `b` outside the write pipeline (catalog changes, drops), unless
  // an earlier write failed; a failure poisons the Db (bg_error_).
  absl::Status WriteOther(const leveldb::WriteOptions& wo,
                          leveldb::WriteBatch* b, std::string_view context);
  // The status writes get once a write has failed (DamageError() if a
  // compaction failed). REQUIRES: bg_error_.
  absl::Status BrokenError() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void RecordWriteError(const absl::Status& s)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  // Runs `w` through the write pipeline; returns its status.
  absl::Status RunWriter(Writer* w);
  absl::Status RunWriterLocked(Writer* w)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // As leader: assigns ids for `w` and appends it to batch_. On failure
  // nothing of `w` is in batch_.
  absl::Status AddToBatch(Writer* w) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Checks w's dedup keys and sets w->results (an id for each message that
  // is not a duplicate), adding each new dedup key to dedup_in_batch_ and
  // `dedup_added`. Appends nothing to batch_.
  absl::Status AssignIds(Writer* w, absl::Time now,
                         std::vector<std::string>* dedup_added)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // True (and *result set) if `dedup` (a dedup record key) names a message
  // written earlier in this batch, or a stored one not past the TTL cutoff.
  absl::StatusOr<bool> FindDuplicate(const std::string& dedup,
                                     const MessageId& cutoff, PutResult* result)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Appends message `m` with its assigned `r` to batch_: the reservation if
  // r.id passes it, the message, its hint and its dedup record.
  // `st` holds the ids of r.partition; `has_topic` is q's codec's
  // lane_has_topic().
  // `hint`: a topic layout message gets a hint (LoadHasSources).
  void AppendMessage(QueueImpl* q, bool has_topic, bool hint, const Message& m,
                     const PutResult& r, absl::Time now, PartitionIds* st)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Whether the topic layout queue `queue_id` has a consumer source record
  // (lib/consume/lane_source.h), read at its first write after Open (one
  // seek) and set by WriteWithHints, which only consumers call. Until it
  // has one, its messages get no hint: a consumer created later walks the
  // lanes written before it (doc/format.md, "Lane activity index").
  absl::StatusOr<bool> LoadHasSources(uint32_t queue_id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  absl::StatusOr<PartitionIds*> LoadPartition(uint32_t queue_id,
                                              uint32_t partition)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  absl::StatusOr<QueueImpl*> FindQueueLocked(std::string_view name)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(catalog_mu_);
  // Deletes every record of a dropped queue and removes its drop marker;
  // hands its large ranges to ReclaimLater.
  absl::Status DeleteQueueData(uint32_t queue_id);
  // Deletes every key that starts with `prefix`, in batches of a thousand
  // deletions, each written by `write` (which may fail to stop the delete);
  // a range of ttl_sweep_batch keys or more goes to ReclaimLater. `what`
  // names the range in a read error ("scanning <what>").
  absl::Status DeleteKeysUnder(
      const std::string& prefix, std::string_view what,
      const std::function<absl::Status(leveldb::WriteBatch*)>& write);
  // Has the janitor, if it runs, compact the keys starting with `prefix`
  // (returning the disk space of deleted records). Without a janitor the
  // space returns as LevelDB compacts, or at once with CompactAll.
  void ReclaimLater(std::string prefix);
  // Compacts what ReclaimLater queued, until it is empty or the janitor
  // stops. Janitor thread only.
  void ReclaimQueued();
  bool JanitorRuns() const {
    return options_.ttl_sweep_interval > absl::ZeroDuration() ||
           options_.status_interval > absl::ZeroDuration();
  }
  absl::Status FinishPendingDrops();
  // Finishes every consumer delete whose tombstone remains (at Open).
  absl::Status FinishPendingDeletes();
  // Wakes the blocked claims of every queue's groups (closing).
  void WakeAllWaiters();
  // Stops every subscription and writes its checkpoints (a clean close).
  void StopSubscriptions();
  // The queues held in memory, live and dropped.
  std::vector<QueueImpl*> CachedQueues();
  // Trims the lane activity index below every consumer's source position
  // (lib/engine/hint_trim.cc); part of each sweep.
  absl::Status TrimHints(SweepStats* stats);
  // Per priority, the lowest next_seq of the source positions of
  // `queue_id` (UINT64_MAX where none).
  absl::StatusOr<std::vector<uint64_t>> LowestSourcePositions(
      uint32_t queue_id, leveldb::Iterator* it);
  // Deletes the hints of (queue_id, priority) with seq in [from, below)
  // and records `below` in the index head, in batches of ttl_sweep_batch.
  absl::Status TrimHintRange(uint32_t queue_id, int priority, uint64_t from,
                             uint64_t below, leveldb::Iterator* it,
                             SweepStats* stats);
  // Sweeps one queue with a TTL (see CompactExpired).
  absl::Status SweepQueue(uint32_t queue_id, std::string_view name,
                          absl::Time now, SweepStats* stats);
  // What a sweep of one queue needs to know of it.
  struct LaneSweep {
    uint32_t queue_id;
    const LayoutCodec* codec;
    MessageId cutoff;    // Messages below it have expired.
    size_t batch_limit;  // Options::ttl_sweep_batch.
  };
  // The dedup record of a deleted message: (record key, partition, id).
  struct SweptDedup {
    std::string key;
    uint32_t partition;
    MessageId id;
  };
  // The TTL sweep watermark of `lane` (a lane prefix): every message below
  // it was deleted. Min() if none is stored.
  absl::StatusOr<MessageId> ReadSweepWatermark(const std::string& lane);
  // Deletes the messages of `lane` from `swept` up to the cutoff, writing
  // each batch_limit deletions with the moved watermark; returns how many
  // it deleted and the last one's id.
  absl::StatusOr<uint64_t> SweepLane(const LaneSweep& sweep,
                                     const std::string& lane, MessageId swept,
                                     leveldb::Iterator* it, SweepStats* stats,
                                     MessageId* last_deleted);
  // Writes `b` with the watermark of `lane` just past `last_deleted`, then
  // deletes the dedup records that still name their message; clears both.
  absl::Status FlushSweep(const std::string& lane, MessageId last_deleted,
                          leveldb::WriteBatch* b,
                          std::vector<SweptDedup>* dedups);
  // The janitor thread: runs a sweep each time the sweep timer fires, and
  // publishes the live status each time the status timer does.
  void JanitorLoop();
  // Sets *due (sweep_due_ or status_due_) and wakes the janitor every
  // `interval` on the Db's clock.
  void ArmJanitorTimer(absl::Duration interval, bool DbImpl::*due);
  // Writes the live status file (lib/engine/status_publish.cc). `timed`:
  // the status timer's publication, which starts the next interval of the
  // rates; an early one (PublishStatusSoon) gives the rates since the last
  // timed one, or since the group's load, and starts none. Janitor thread
  // only.
  absl::Status PublishStatus(bool timed);
  // Deletes it (at a clean close, and at Open: one a dead process left).
  void RemoveStatusFile();
  std::string StatusFile() const;  // Its path.
  leveldb::WriteOptions CatalogWriteOptions() const;
  void TightenReservations() ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  // Constant after construction.
  const std::string path_;
  const Options options_;
  const std::string lock_key_;
  DbExtensions* const extensions_;
  Clock* const clock_;
  std::unique_ptr<leveldb::Cache> cache_;
  std::unique_ptr<const leveldb::FilterPolicy> filter_;
  // LevelDB's Env: env_ (keeps the logs LevelDB closes until a sync write
  // syncs them or LevelDB removes them; lib/engine/log_sync_env.h) over
  // pin_env_ over table_env_ (checks every
  // table block read) over Options::env. Each outlives db_.
  RecoveryReport recovery_;  // Set by Init.
  std::unique_ptr<leveldb::Env> table_env_;
  // Between env_ and table_env_: defers LevelDB's file deletions while a
  // Backup runs (lib/engine/file_pin_env.h).
  std::unique_ptr<FilePinEnv> pin_env_;
  std::function<void()> backup_hook_;                   // TEST_SetBackupHook.
  std::function<absl::Status(int)> delete_batch_hook_;  // TEST_ hook.
  std::unique_ptr<LogSyncEnv> env_;
  // LevelDB's info log (lib/engine/info_log.h); outlives db_.
  std::unique_ptr<InfoLog> info_log_;
  std::unique_ptr<leveldb::DB> db_;
  std::unique_ptr<LeaseManagerImpl> leases_;

  // Held for a whole sweep (one at a time), and while a dropped queue's
  // records are deleted.
  Mutex sweep_mu_ ABSL_ACQUIRED_BEFORE(write_mu_);
  int64_t sweeps_ ABSL_GUARDED_BY(sweep_mu_) = 0;

  Mutex janitor_mu_;
  CondVar janitor_cv_;
  bool sweep_due_ ABSL_GUARDED_BY(janitor_mu_) = false;
  bool status_due_ ABSL_GUARDED_BY(janitor_mu_) = false;
  bool status_soon_ ABSL_GUARDED_BY(janitor_mu_) = false;
  // PublishStatusSoon's publications come at most every kEarlyStatusGap
  // (real time): not before next_early_status_.
  static constexpr absl::Duration kEarlyStatusGap = absl::Milliseconds(100);
  absl::Time next_early_status_ ABSL_GUARDED_BY(janitor_mu_) =
      absl::InfinitePast();
  int64_t timed_statuses_ ABSL_GUARDED_BY(janitor_mu_) = 0;
  // Janitor thread only: each group's totals at the last publication.
  struct StatusTotals {
    uint64_t claimed = 0, completed = 0;
    absl::Time at;
  };
  absl::flat_hash_map<std::string, StatusTotals> status_totals_;
  // Key prefixes to compact (ReclaimLater), and how many were compacted.
  std::deque<std::string> reclaim_ ABSL_GUARDED_BY(janitor_mu_);
  int64_t reclaimed_ ABSL_GUARDED_BY(janitor_mu_) = 0;
  bool janitor_stop_ ABSL_GUARDED_BY(janitor_mu_) = false;
  std::thread janitor_;

  std::atomic<int64_t> pipeline_writes_{0};
  std::atomic<int> live_scanners_{0};
  std::atomic<int> scanner_resources_{0};

  Mutex catalog_mu_ ABSL_ACQUIRED_BEFORE(write_mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<QueueImpl>> queues_
      ABSL_GUARDED_BY(catalog_mu_);
  // Dropped queues stay allocated so that Queue* handles stay valid.
  std::vector<std::unique_ptr<QueueImpl>> dropped_ ABSL_GUARDED_BY(catalog_mu_);
  uint32_t next_queue_id_ ABSL_GUARDED_BY(catalog_mu_) = 1;

  Mutex pool_mu_;
  std::unique_ptr<DeliveryPool> pool_ ABSL_GUARDED_BY(pool_mu_);

  Mutex group_id_mu_;
  uint32_t next_group_id_ ABSL_GUARDED_BY(group_id_mu_) = 0;  // 0: not read.

  // A compaction that met damage (DamageError). info_log_'s observer
  // sets it on LevelDB's thread, under LevelDB's mutex: damage_mu_ is never
  // held while calling into LevelDB.
  void NoteBackgroundError(std::string_view leveldb_status);
  // Which table files fail their checksums, as text to append to a message
  // that names none.
  std::string DamagedTables();
  std::atomic<bool> damaged_{false};
  Mutex damage_mu_;
  absl::Status damage_ ABSL_GUARDED_BY(damage_mu_);
  bool damage_named_ ABSL_GUARDED_BY(damage_mu_) = false;

  Mutex write_mu_;
  std::deque<Writer*> writers_ ABSL_GUARDED_BY(write_mu_);
  // Set once Init succeeded.
  bool opened_ ABSL_GUARDED_BY(write_mu_) = false;
  // Set by the destructor: new calls fail, it waits for active_ops_ == 0.
  bool closing_ ABSL_GUARDED_BY(write_mu_) = false;
  int active_ops_ ABSL_GUARDED_BY(write_mu_) = 0;
  CondVar ops_done_;
  // The first failed write. LevelDB 1.23 cannot safely append to its log
  // after a failed append (later records may be lost on recovery), so every
  // later write fails until the Db is reopened.
  absl::Status bg_error_ ABSL_GUARDED_BY(write_mu_);
  // Per (queue id << 16 | partition): loaded on the first write after Open.
  // A node map: PartitionCache keeps pointers into it.
  absl::node_hash_map<uint64_t, PartitionIds> ids_ ABSL_GUARDED_BY(write_mu_);
  // The entry of ids_ LoadPartition found last (kNoPartition: none): a
  // stream of writes to one partition looks it up once.
  static constexpr uint64_t kNoPartition = UINT64_MAX;
  uint64_t last_ids_key_ ABSL_GUARDED_BY(write_mu_) = kNoPartition;
  PartitionIds* last_ids_ ABSL_GUARDED_BY(write_mu_) = nullptr;
  // Per (queue id << 8 | priority): the next hint seq, loaded at the first
  // write of a topic layout queue's priority after Open.
  absl::flat_hash_map<uint64_t, uint64_t> hint_seq_ ABSL_GUARDED_BY(write_mu_);
  // The hints of the batch being built.
  BatchHints hints_ ABSL_GUARDED_BY(write_mu_);
  // LoadHasSources, per queue id.
  absl::flat_hash_map<uint32_t, bool> has_sources_ ABSL_GUARDED_BY(write_mu_);
  // Queues with messages in the batch being built that got no hint.
  absl::flat_hash_set<uint32_t> unhinted_in_batch_ ABSL_GUARDED_BY(write_mu_);
  // Used by the leader only; the leader may touch it without write_mu_
  // while it writes.
  leveldb::WriteBatch batch_;
  std::string key_buf_;
  std::string value_buf_;
  // Dedup keys (format::DedupKey) written by the batch being built.
  absl::flat_hash_map<std::string, PutResult> dedup_in_batch_;
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_DB_IMPL_H_
