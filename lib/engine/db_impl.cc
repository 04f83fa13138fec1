// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/db_impl.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "hq/status.h"
#include "leveldb/env.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/log_recovery.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

// Directories open in this process, keyed by Env and normalized path. LevelDB
// detects a second opener through its LOCK file only on a real file system
// in another process; this also covers the same process and in-memory Envs.
Mutex registry_mu(absl::kConstInit);
absl::flat_hash_set<std::string>* OpenDirs()
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(registry_mu) {
  static auto* dirs = new absl::flat_hash_set<std::string>;
  return dirs;
}

std::string LockKey(const std::string& path, leveldb::Env* env) {
  std::string normalized = path;
  if (env == leveldb::Env::Default()) {
    std::error_code ec;
    auto p = std::filesystem::weakly_canonical(path, ec);
    if (!ec) normalized = p.string();
  } else {
    normalized = std::filesystem::path(path).lexically_normal().string();
  }
  while (normalized.size() > 1 && normalized.back() == '/') {
    normalized.pop_back();
  }
  return absl::StrFormat("%p:%s", static_cast<void*>(env), normalized);
}

constexpr size_t kMaxGroupBytes = size_t{1} << 20;
constexpr size_t kDeleteBatch = 1000;

// LevelDB 1.23 drops a full log file without syncing it when it switches
// to a new one (it deletes the WritableFile, which closes it), and flushes
// that log's memtable to a table in the background. A sync=true write to
// the new log made before the flush is done could then survive a power cut
// while the unsynced writes before it (in the old log) were lost: a hole in
// a lane, or a message whose queue's catalog record is gone. This Env syncs
// every log file before it is closed, so what survives of the logs is a
// prefix of the writes (cost: one fsync per memtable switch). LevelDB does
// not look at that sync's status, so if it fails, every later log append
// and sync fails too: the write that meets it fails and hq refuses writes
// until reopened (db.h).
class SyncLogOnCloseEnv final : public leveldb::EnvWrapper {
 public:
  explicit SyncLogOnCloseEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}

  leveldb::Status NewWritableFile(const std::string& name,
                                  leveldb::WritableFile** result) override {
    leveldb::Status s = target()->NewWritableFile(name, result);
    if (s.ok() && name.ends_with(".log")) {
      *result = new LogFile(*result, name, &failed_);
    }
    return s;
  }

 private:
  class LogFile final : public leveldb::WritableFile {
   public:
    LogFile(leveldb::WritableFile* f, std::string name,
            std::atomic<bool>* failed)
        : f_(f), name_(std::move(name)), failed_(failed) {}
    ~LogFile() override {
      if (!closed_) SyncForClose();
      delete f_;
    }
    leveldb::Status Append(const leveldb::Slice& data) override {
      if (failed_->load()) return Failed();
      return f_->Append(data);
    }
    leveldb::Status Close() override {
      leveldb::Status s = SyncForClose();
      closed_ = true;
      leveldb::Status c = f_->Close();
      return s.ok() ? c : s;
    }
    leveldb::Status Flush() override { return f_->Flush(); }
    leveldb::Status Sync() override {
      if (failed_->load()) return Failed();
      return f_->Sync();
    }

   private:
    leveldb::Status SyncForClose() {
      leveldb::Status s = f_->Sync();
      if (!s.ok()) failed_->store(true);
      return s;
    }
    leveldb::Status Failed() const {
      return leveldb::Status::IOError(
          name_, "an earlier log file could not be synced when closed");
    }

    leveldb::WritableFile* const f_;
    const std::string name_;
    std::atomic<bool>* const failed_;
    bool closed_ = false;
  };

  std::atomic<bool> failed_{false};
};

}  // namespace

absl::Status FromLevelDb(const leveldb::Status& s, std::string_view context) {
  if (s.ok()) return absl::OkStatus();
  std::string msg = absl::StrCat(Av(context), ": ", s.ToString());
  if (s.IsCorruption()) return absl::DataLossError(msg);
  if (s.IsNotFound()) return absl::NotFoundError(msg);
  return absl::InternalError(msg);
}

// A request in the write pipeline: messages to put, or (exclusive) a
// function the leader runs alone while no write is in flight.
struct DbImpl::Writer {
  QueueImpl* queue = nullptr;
  std::span<const Message> messages;
  const uint32_t* partitions = nullptr;
  PutResult* results = nullptr;
  std::function<absl::Status()> exclusive;
  AppendFn append;
  QueueImpl* also_live = nullptr;
  bool sync = false;

  bool done = false;
  bool in_batch = false;
  absl::Status status;
  CondVar cv;
};

absl::StatusOr<std::unique_ptr<Db>> Db::Open(const std::string& path,
                                             const Options& options) {
  return DbImpl::Open(path, options);
}

absl::StatusOr<std::unique_ptr<Db>> DbImpl::Open(const std::string& path,
                                                 const Options& options) {
  if (path.empty()) return absl::InvalidArgumentError("Db path is empty");
  HQ_RETURN_IF_ERROR(format::ValidateOptions(options));
  leveldb::Env* env = options.env ? options.env : leveldb::Env::Default();
  std::string lock_key = LockKey(path, env);
  {
    MutexLock l(&registry_mu);
    if (!OpenDirs()->insert(lock_key).second) {
      return absl::FailedPreconditionError(absl::StrCat(
          "hq database directory '", path,
          "' is already open in this process; close the other Db first"));
    }
  }
  std::unique_ptr<DbImpl> db(new DbImpl(path, options, std::move(lock_key)));
  HQ_RETURN_IF_ERROR(db->Init());  // ~DbImpl unregisters on failure.
  if (options.ttl_sweep_interval > absl::ZeroDuration()) {
    db->janitor_ = std::thread([raw = db.get()] { raw->JanitorLoop(); });
    db->ArmSweepTimer();
  }
  return std::unique_ptr<Db>(std::move(db));
}

absl::StatusOr<std::string> DbImpl::ClaimDirectory(const std::string& path,
                                                   leveldb::Env* env) {
  std::string key = LockKey(path, env);
  MutexLock l(&registry_mu);
  if (!OpenDirs()->insert(key).second) {
    return absl::FailedPreconditionError(absl::StrCat(
        "hq database directory '", path,
        "' is already open in this process; close the other Db first"));
  }
  return key;
}

void DbImpl::ReleaseDirectory(const std::string& key) {
  MutexLock l(&registry_mu);
  OpenDirs()->erase(key);
}

DbImpl::DbImpl(std::string path, const Options& options, std::string lock_key)
    : path_(std::move(path)),
      options_(options),
      lock_key_(std::move(lock_key)),
      clock_(options.clock ? options.clock : Clock::Default()),
      leases_(std::make_unique<LeaseManagerImpl>(clock_)) {}

absl::Status DbImpl::Init() {
  leveldb::Options lo;
  table_env_ = std::make_unique<TableCheckEnv>(
      options_.env ? options_.env : leveldb::Env::Default());
  pin_env_ = std::make_unique<FilePinEnv>(table_env_.get());
  env_ = std::make_unique<SyncLogOnCloseEnv>(pin_env_.get());
  lo.env = env_.get();
  lo.create_if_missing = options_.create_if_missing;
  lo.error_if_exists = options_.error_if_exists;
  // LevelDB then fails (instead of skipping) on a damaged record it meets
  // at Open or in a compaction, whose reads it then verifies: damage is
  // never copied into a new table with a fresh checksum.
  lo.paranoid_checks = true;
  lo.write_buffer_size = options_.write_buffer_bytes;
  lo.max_open_files = options_.max_open_files;
  if (options_.cache_bytes > 0) {
    cache_.reset(leveldb::NewLRUCache(options_.cache_bytes));
    lo.block_cache = cache_.get();
  }
  if (options_.bloom_bits_per_key > 0) {
    filter_.reset(leveldb::NewBloomFilterPolicy(options_.bloom_bits_per_key));
    lo.filter_policy = filter_.get();
  }
  // Before LevelDB sees the directory: never create a Db over one that
  // lost its CURRENT, and cut damaged logs to a prefix (log_recovery.h).
  HQ_RETURN_IF_ERROR(CheckNotOrphaned(lo.env, path_));
  HQ_RETURN_IF_ERROR(RecoverLogs(lo.env, path_, options_.recovery, &recovery_));
  leveldb::DB* raw = nullptr;
  leveldb::Status s = leveldb::DB::Open(lo, path_, &raw);
  if (!s.ok()) {
    const std::string text = s.ToString();
    if (s.IsInvalidArgument() && absl::StrContains(text, "does not exist")) {
      return absl::NotFoundError(absl::StrCat(
          "no hq database in '", path_, "' and create_if_missing is false"));
    }
    if (s.IsInvalidArgument() && absl::StrContains(text, "exists")) {
      return absl::AlreadyExistsError(absl::StrCat(
          "hq database '", path_, "' exists and error_if_exists is true"));
    }
    // LevelDB's LockFile: "IO error: lock <dir>/LOCK: <errno text>", or
    // "... already held by process" within one process.
    if (s.IsIOError() && (absl::StartsWith(text, "IO error: lock ") ||
                          absl::StrContains(text, "already held by process"))) {
      return WithErrorDetail(
          absl::FailedPreconditionError(absl::StrCat(
              "hq database directory '", path_,
              "' is in use by another process (LevelDB: ", text, ")")),
          ErrorDetail::kDbLocked);
    }
    if (s.IsCorruption()) {
      // LevelDB read its MANIFEST (or a log it replays) and found damage.
      const std::string current = CurrentManifest(lo.env, path_);
      return absl::DataLossError(absl::StrCat(
          "opening hq database '", path_, "': ", text, " (its CURRENT names ",
          current.empty() ? "nothing" : current,
          "); nothing was changed; run `hq repair ", path_,
          "` (Db::Repair) to rebuild it"));
    }
    return FromLevelDb(s, absl::StrCat("opening hq database '", path_, "'"));
  }
  db_.reset(raw);

  // Format record: written on creation, checked on every open.
  std::string value;
  s = CheckedGet(db_.get(), CheckedReadOptions(), format::MetaKey("format"),
                 &value);
  if (s.IsNotFound()) {
    std::unique_ptr<leveldb::Iterator> it(
        NewCheckedIterator(db_.get(), CheckedReadOptions()));
    it->SeekToFirst();
    if (it->Valid()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "'", path_, "' holds a LevelDB database that is not an hq database"));
    }
    leveldb::WriteBatch b;
    std::string v;
    coding::PutFixed32(&v, format::kFormatVersion);
    b.Put(format::MetaKey("format"), v);
    v.clear();
    coding::PutFixed32(&v, 1);
    b.Put(format::MetaKey("next_queue_id"), v);
    leveldb::WriteOptions wo;
    wo.sync = true;
    HQ_RETURN_IF_ERROR(
        FromLevelDb(db_->Write(wo, &b), "initializing hq database"));
    MutexLock l(&write_mu_);
    opened_ = true;
    return absl::OkStatus();
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading the format record"));
  std::string_view in = value;
  uint32_t version;
  if (!coding::GetFixed32(&in, &version) || !in.empty()) {
    return absl::DataLossError(
        absl::StrCat("'", path_, "': malformed format record"));
  }
  if (version != format::kFormatVersion) {
    return absl::DataLossError(absl::StrFormat(
        "'%s' has hq format version %d; this hq reads version %d", path_,
        version, format::kFormatVersion));
  }
  s = CheckedGet(db_.get(), CheckedReadOptions(),
                 format::MetaKey("next_queue_id"), &value);
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading next_queue_id"));
  in = value;
  {
    MutexLock l(&catalog_mu_);
    if (!coding::GetFixed32(&in, &next_queue_id_) || !in.empty()) {
      return absl::DataLossError("malformed next_queue_id record");
    }
  }
  HQ_RETURN_IF_ERROR(FinishPendingDrops());
  MutexLock l(&write_mu_);
  opened_ = true;
  return absl::OkStatus();
}

DbImpl::~DbImpl() {
  // First, while the Db still works: stop delivery and write every
  // subscription's checkpoints (the clean-close guarantee).
  StopSubscriptions();
  {
    MutexLock l(&write_mu_);
    closing_ = true;  // A sweep in progress stops at its next lane.
  }
  WakeAllWaiters();  // Blocked claims return FailedPrecondition.
  if (janitor_.joinable()) {
    {
      MutexLock l(&janitor_mu_);
      janitor_stop_ = true;
      janitor_cv_.Signal();
    }
    janitor_.join();
  }
  {
    // Wait for calls in progress (a leader may be inside LevelDB's Write
    // with write_mu_ released); new ones fail.
    MutexLock l(&write_mu_);
    while (active_ops_ > 0) ops_done_.Wait(&write_mu_);
    if (opened_ && bg_error_.ok()) TightenReservations();
  }
  // Destroys pending lease actions too (and whatever they own).
  leases_->Shutdown();
  {
    MutexLock l(&pool_mu_);
    pool_.reset();  // Every job was stopped above.
  }
  if (live_scanners_.load() != 0) {
    std::fprintf(stderr,
                 "hq: Db '%s' destroyed while %d scanners are alive; "
                 "destroy every Scanner before its Db\n",
                 path_.c_str(), live_scanners_.load());
    std::abort();
  }
  db_.reset();
  MutexLock l(&registry_mu);
  OpenDirs()->erase(lock_key_);
}

void DbImpl::TightenReservations() {
  // At a clean close no write is in flight, so every partition's last id is
  // known: lower its reservation to just past it, so the next Open continues
  // from the last id instead of up to kReserveWindowMs ahead. Best effort:
  // if this fails the wider reservations stay, which is also correct.
  leveldb::WriteBatch b;
  std::string v;
  for (const auto& [k, st] : ids_) {
    if (!st.has_last || st.last.ms + 1 >= st.reserved_ms) continue;
    v.clear();
    coding::PutFixed64(&v, st.last.ms + 1);
    b.Put(format::ReserveKey(static_cast<uint32_t>(k >> 16),
                             static_cast<uint32_t>(k & 0xffff)),
          v);
  }
  leveldb::WriteOptions wo;
  wo.sync = true;
  if (b.ApproximateSize() > leveldb::WriteBatch().ApproximateSize()) {
    db_->Write(wo, &b);
  }
}

absl::Status DbImpl::AcquireScannerResources() {
  if (scanner_resources_.fetch_add(1) >= options_.max_open_scanners) {
    scanner_resources_.fetch_sub(1);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "hq database '%s' has %d open scanners, Options::max_open_scanners; "
        "destroy some (or let their leases expire)",
        path_, options_.max_open_scanners));
  }
  return absl::OkStatus();
}

absl::Status DbImpl::BeginOp() {
  MutexLock l(&write_mu_);
  if (closing_) {
    return ClosingError();
  }
  ++active_ops_;
  return absl::OkStatus();
}

void DbImpl::EndOp() {
  MutexLock l(&write_mu_);
  if (--active_ops_ == 0 && closing_) ops_done_.SignalAll();
}

absl::Status DbImpl::ClosingError() const {
  return absl::FailedPreconditionError(
      absl::StrCat("hq database '", path_, "' is closing"));
}

absl::Status DbImpl::BrokenError() const {
  return absl::FailedPreconditionError(
      absl::StrCat("hq database '", path_,
                   "' refuses writes after an earlier write failed (",
                   bg_error_.ToString(), "); reopen it"));
}

void DbImpl::RecordWriteError(const absl::Status& s) {
  if (bg_error_.ok()) bg_error_ = s;
  ids_.clear();
  known_lanes_.clear();
  last_lane_.clear();
}

absl::Status DbImpl::WriteOther(const leveldb::WriteOptions& wo,
                                leveldb::WriteBatch* b,
                                std::string_view context) {
  {
    MutexLock l(&write_mu_);
    if (!bg_error_.ok()) return BrokenError();
  }
  absl::Status s = FromLevelDb(db_->Write(wo, b), context);
  if (!s.ok()) {
    MutexLock l(&write_mu_);
    RecordWriteError(s);
  }
  return s;
}

leveldb::WriteOptions DbImpl::CatalogWriteOptions() const {
  leveldb::WriteOptions wo;
  wo.sync = options_.sync_writes;
  return wo;
}

size_t DbImpl::TEST_QueuedWriters() {
  MutexLock l(&write_mu_);
  return writers_.size();
}

bool DbImpl::IsClosing() {
  MutexLock l(&write_mu_);
  return closing_;
}

bool DbImpl::TEST_Closing() { return IsClosing(); }

std::vector<QueueImpl*> DbImpl::CachedQueues() {
  // Copied, so that callers act on them without catalog_mu_ (Queue::Group
  // and Queue::Subscribe take their own locks before the catalog's).
  std::vector<QueueImpl*> queues;
  MutexLock l(&catalog_mu_);
  for (auto& [name, q] : queues_) queues.push_back(q.get());
  for (auto& q : dropped_) queues.push_back(q.get());
  return queues;
}

void DbImpl::WakeAllWaiters() {
  for (QueueImpl* q : CachedQueues()) q->WakeWaiters();
}

void DbImpl::StopSubscriptions() {
  for (QueueImpl* q : CachedQueues()) q->StopSubscriptions();
}

size_t DbImpl::TEST_CachedQueueCount() {
  MutexLock l(&catalog_mu_);
  return queues_.size();
}

// ---------------------------------------------------------------- catalog

absl::StatusOr<QueueImpl*> DbImpl::FindQueueLocked(std::string_view name) {
  HQ_RETURN_IF_ERROR(format::ValidateQueueName(name));
  if (auto it = queues_.find(std::string(name)); it != queues_.end()) {
    return it->second.get();
  }
  std::string value;
  leveldb::Status s = CheckedGet(db_.get(), CheckedReadOptions(),
                                 format::CatalogKey(name), &value);
  if (s.IsNotFound()) {
    return absl::NotFoundError(absl::StrCat("no queue named '", Av(name), "'"));
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading the queue catalog"));
  format::QueueRecord record;
  HQ_RETURN_IF_ERROR(format::DecodeQueueRecord(value, &record));
  auto q = std::make_unique<QueueImpl>(this, std::string(name), record);
  QueueImpl* raw = q.get();
  queues_.emplace(std::string(name), std::move(q));
  return raw;
}

absl::StatusOr<Queue*> DbImpl::CreateQueue(std::string_view name,
                                           const QueueOptions& options) {
  HQ_RETURN_IF_ERROR(format::ValidateQueueName(name));
  HQ_RETURN_IF_ERROR(format::ValidateQueueOptions(options));
  OpScope op(this);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&catalog_mu_);
  auto existing = FindQueueLocked(name);
  if (existing.ok()) {
    return absl::AlreadyExistsError(
        absl::StrCat("queue '", Av(name), "' already exists"));
  }
  if (!absl::IsNotFound(existing.status())) return existing.status();
  if (next_queue_id_ == UINT32_MAX) {
    return absl::ResourceExhaustedError("all 2^32-1 queue ids are used");
  }
  format::QueueRecord record;
  record.id = next_queue_id_;
  record.options = options;
  // Whole ms, and not before 1970 (the catalog stores unsigned ms).
  record.created = absl::FromUnixMillis(
      std::max<int64_t>(0, absl::ToUnixMillis(clock_->Now())));
  leveldb::WriteBatch b;
  b.Put(format::CatalogKey(name), format::EncodeQueueRecord(record));
  if (options.ttl != absl::InfiniteDuration()) {
    b.Put(format::TtlKey(record.id), leveldb::Slice(name.data(), name.size()));
  }
  std::string next;
  coding::PutFixed32(&next, record.id + 1);
  b.Put(format::MetaKey("next_queue_id"), next);
  HQ_RETURN_IF_ERROR(
      WriteOther(CatalogWriteOptions(), &b,
                 absl::StrCat("creating queue '", Av(name), "'")));
  ++next_queue_id_;
  auto q = std::make_unique<QueueImpl>(this, std::string(name), record);
  QueueImpl* raw = q.get();
  queues_.emplace(std::string(name), std::move(q));
  return raw;
}

absl::StatusOr<Queue*> DbImpl::OpenQueue(std::string_view name) {
  OpScope op(this);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&catalog_mu_);
  HQ_ASSIGN_OR_RETURN(QueueImpl * q, FindQueueLocked(name));
  return q;
}

absl::Status DbImpl::DropQueue(std::string_view name) {
  OpScope op(this);
  HQ_RETURN_IF_ERROR(op.status());
  uint32_t queue_id;
  QueueImpl* dropped_queue = nullptr;
  std::vector<std::string> dead_queues;
  {
    MutexLock l(&catalog_mu_);
    HQ_ASSIGN_OR_RETURN(QueueImpl * q, FindQueueLocked(name));
    queue_id = q->id();
    // The dead-letter queues of its consumer groups go with it.
    HQ_ASSIGN_OR_RETURN(std::vector<std::string> groups, q->ListGroups());
    for (const std::string& g : groups) {
      dead_queues.push_back(absl::StrCat(Av(name), ".dead.", g));
    }
    // Run inside the write pipeline so that no write of this queue is in
    // flight; writers queued behind see it dropped.
    Writer w;
    w.exclusive = [this, q, queue_id, name]() -> absl::Status {
      write_mu_.AssertHeld();
      if (!bg_error_.ok()) return BrokenError();
      leveldb::WriteBatch b;
      b.Delete(format::CatalogKey(name));
      b.Delete(format::TtlKey(queue_id));
      b.Put(format::DropKey(queue_id), "");
      leveldb::WriteOptions wo;
      wo.sync = true;
      const absl::Status s = FromLevelDb(
          db_->Write(wo, &b), absl::StrCat("dropping queue '", Av(name), "'"));
      if (!s.ok()) {
        RecordWriteError(s);
        return s;
      }
      q->MarkDropped();
      known_lanes_.clear();  // Drops are rare: forget every queue's lanes.
      last_lane_.clear();
      for (uint32_t p = 0; p < q->options().partitions; ++p) {
        ids_.erase((uint64_t{queue_id} << 16) | p);
      }
      return absl::OkStatus();
    };
    HQ_RETURN_IF_ERROR(RunWriter(&w));
    auto node = queues_.extract(queues_.find(std::string(name)));
    dropped_.push_back(std::move(node.mapped()));
    dropped_queue = dropped_.back().get();
  }
  dropped_queue->WakeWaiters();  // Blocked claims return NotFound.
  absl::Status s = DeleteQueueData(queue_id);
  if (!s.ok()) {
    return WithErrorDetail(
        absl::Status(s.code(),
                     absl::StrCat("queue '", Av(name),
                                  "' is dropped, but deleting its data failed "
                                  "(the next Open finishes it): ",
                                  s.message())),
        ErrorDetail::kDropDurable);
  }
  for (const std::string& dead : dead_queues) {
    s = DropQueue(dead);
    if (!s.ok() && !absl::IsNotFound(s)) {
      return WithErrorDetail(
          absl::Status(s.code(), absl::StrCat("queue '", Av(name),
                                              "' is dropped, but dropping its "
                                              "dead-letter queue failed: ",
                                              s.message())),
          ErrorDetail::kDropDurable);
    }
  }
  return absl::OkStatus();
}

absl::Status DbImpl::DeleteQueueData(uint32_t queue_id) {
  // Not during a sweep: it could write watermarks of this queue after they
  // were deleted here. A sweep that starts later finds the queue gone.
  MutexLock sweep(&sweep_mu_);
  for (const std::string& prefix :
       {format::MessagePrefix(queue_id), format::ReservePrefix(queue_id),
        format::LaneDirPrefix(queue_id), format::GroupPrefix(queue_id),
        format::QueuePrefix(format::kDedupTag, queue_id),
        format::QueuePrefix(format::kCursorTag, queue_id),
        format::QueuePrefix(format::kTaskTag, queue_id),
        format::QueuePrefix(format::kDeadTag, queue_id),
        format::QueuePrefix(format::kSubTag, queue_id),
        format::QueuePrefix(format::kCheckpointTag, queue_id)}) {
    std::unique_ptr<leveldb::Iterator> it(
        NewCheckedIterator(db_.get(), CheckedReadOptions()));
    leveldb::WriteBatch b;
    size_t n = 0;
    for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
         it->Next()) {
      b.Delete(it->key());
      if (++n % kDeleteBatch == 0) {
        HQ_RETURN_IF_ERROR(WriteOther(leveldb::WriteOptions(), &b,
                                      "deleting a dropped queue"));
        b.Clear();
      }
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "scanning a dropped queue"));
    HQ_RETURN_IF_ERROR(
        WriteOther(leveldb::WriteOptions(), &b, "deleting a dropped queue"));
    const std::string end = coding::PrefixSuccessor(prefix);
    leveldb::Slice begin_slice(prefix), end_slice(end);
    db_->CompactRange(&begin_slice, &end_slice);
  }
  leveldb::WriteOptions wo;
  wo.sync = true;
  leveldb::WriteBatch b;
  b.Delete(format::DropKey(queue_id));
  return WriteOther(wo, &b, "finishing a queue drop");
}

absl::Status DbImpl::FinishPendingDrops() {
  std::vector<uint32_t> pending;
  {
    std::unique_ptr<leveldb::Iterator> it(
        NewCheckedIterator(db_.get(), CheckedReadOptions()));
    const std::string prefix = format::DropPrefix();
    for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
         it->Next()) {
      std::string_view key = View(it->key());
      key.remove_prefix(1);
      uint32_t id;
      if (!coding::GetFixed32(&key, &id) || !key.empty()) {
        return absl::DataLossError("malformed drop marker");
      }
      pending.push_back(id);
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading drop markers"));
  }
  for (uint32_t id : pending) HQ_RETURN_IF_ERROR(DeleteQueueData(id));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> DbImpl::ListQueues() {
  OpScope op(this);
  HQ_RETURN_IF_ERROR(op.status());
  std::vector<std::string> names;
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  const std::string prefix = format::CatalogPrefix();
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    names.emplace_back(View(it->key()).substr(prefix.size()));
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "listing queues"));
  return names;
}

// ------------------------------------------------------------- TTL sweep

absl::StatusOr<SweepStats> DbImpl::CompactExpired() {
  OpScope op(this);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&sweep_mu_);
  const absl::Time now = clock_->Now();
  SweepStats stats;
  // The TTL index lists only queues with a TTL: no catalog walk.
  std::vector<std::pair<uint32_t, std::string>> queues;
  {
    std::unique_ptr<leveldb::Iterator> it(
        NewCheckedIterator(db_.get(), CheckedReadOptions()));
    const std::string prefix = format::TtlPrefix();
    for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
         it->Next()) {
      std::string_view key = View(it->key()).substr(prefix.size());
      uint32_t id;
      if (!coding::GetFixed32(&key, &id) || !key.empty()) {
        return absl::DataLossError("malformed TTL index key");
      }
      queues.emplace_back(id, std::string(View(it->value())));
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading the TTL index"));
  }
  for (const auto& [id, name] : queues) {
    if (IsClosing()) break;
    HQ_RETURN_IF_ERROR(SweepQueue(id, name, now, &stats));
  }
  ++sweeps_;
  return stats;
}

absl::Status DbImpl::SweepQueue(uint32_t queue_id, std::string_view name,
                                absl::Time now, SweepStats* stats) {
  std::string value;
  leveldb::Status s = CheckedGet(db_.get(), CheckedReadOptions(),
                                 format::CatalogKey(name), &value);
  if (s.IsNotFound()) return absl::OkStatus();  // Dropped meanwhile.
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading the queue catalog"));
  format::QueueRecord record;
  HQ_RETURN_IF_ERROR(format::DecodeQueueRecord(value, &record));
  if (record.id != queue_id || record.options.ttl == absl::InfiniteDuration()) {
    return absl::OkStatus();
  }
  ++stats->queues;
  const LayoutCodec& codec = LayoutCodec::For(record.options.layout);
  const MessageId cutoff = MessageId::AtTime(now - record.options.ttl);
  const size_t batch_limit = static_cast<size_t>(options_.ttl_sweep_batch);
  std::unique_ptr<leveldb::Iterator> dir(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  const std::string dir_prefix = format::LaneDirPrefix(queue_id);
  for (dir->Seek(dir_prefix);
       dir->Valid() && View(dir->key()).starts_with(dir_prefix); dir->Next()) {
    // Watermarks are durable: the next sweep resumes where this one stops.
    if (IsClosing()) break;
    ++stats->lanes;
    std::string lane(1, format::kMessageTag);
    lane.append(View(dir->key()).substr(1));
    const std::string& swept_key = lane;  // The lane head (format.h).
    MessageId swept = MessageId::Min();
    s = CheckedGet(db_.get(), CheckedReadOptions(), swept_key, &value);
    if (s.ok()) {
      if (value.size() != LayoutCodec::kMessageIdSize) {
        return absl::DataLossError("malformed TTL sweep watermark");
      }
      swept = LayoutCodec::DecodeMessageId(value.data());
    } else if (!s.IsNotFound()) {
      return FromLevelDb(s, "reading a TTL sweep watermark");
    }
    if (cutoff <= swept) continue;

    std::string start = lane;
    LayoutCodec::AppendMessageId(&start, swept);
    leveldb::WriteBatch b;
    size_t in_batch = 0, lane_deleted = 0;
    MessageId last_deleted;
    // Dedup records of the deleted messages: (record key, partition, id).
    std::vector<std::tuple<std::string, uint32_t, MessageId>> dedups;
    // The watermark moves to just past the last id deleted, never to the
    // cutoff: a message committed late (or below a stepped-back cutoff) and
    // not seen by this sweep stays above it and is deleted next time.
    auto flush = [&]() -> absl::Status {
      std::string v;
      LayoutCodec::AppendMessageId(&v, last_deleted.Next());
      b.Put(swept_key, v);
      HQ_RETURN_IF_ERROR(
          WriteOther(leveldb::WriteOptions(), &b, "sweeping expired messages"));
      b.Clear();
      in_batch = 0;
      if (!dedups.empty()) {
        // Deleted only if they still name the deleted message: a Put may
        // have reused the key since. Inside the write pipeline, so no Put
        // checks or writes a dedup record meanwhile.
        Writer x;
        x.exclusive = [&]() -> absl::Status {
          write_mu_.AssertHeld();
          if (!bg_error_.ok()) return BrokenError();
          leveldb::WriteBatch del;
          std::string value;
          for (const auto& [key, partition, id] : dedups) {
            uint32_t p;
            MessageId stored;
            if (CheckedGet(db_.get(), CheckedReadOptions(), key, &value).ok() &&
                format::DecodeDedup(value, &p, &stored) && p == partition &&
                stored == id) {
              del.Delete(key);
            }
          }
          const absl::Status s =
              FromLevelDb(db_->Write(leveldb::WriteOptions(), &del),
                          "deleting expired dedup records");
          if (!s.ok()) RecordWriteError(s);
          return s;
        };
        HQ_RETURN_IF_ERROR(RunWriter(&x));
        dedups.clear();
      }
      return absl::OkStatus();
    };
    // Seek to where the last sweep stopped: the deleted keys before it are
    // never read again.
    for (it->Seek(start); it->Valid(); it->Next()) {
      const std::string_view key = View(it->key());
      if (!key.starts_with(lane)) break;
      DecodedKey k;
      if (!codec.DecodeMessageKey(key, queue_id, &k)) {
        return absl::DataLossError(
            absl::StrCat("undecodable message key '", Printable(key), "'"));
      }
      ++stats->examined;
      if (k.id >= cutoff) break;  // Live (or the lane's fence).
      std::string_view mkey, payload, dedup;
      if (!format::DecodeMessageValue(View(it->value()), &mkey, &payload,
                                      nullptr, &dedup)) {
        return absl::DataLossError(absl::StrCat(
            "undecodable message value at '", Printable(key), "'"));
      }
      if (!dedup.empty()) {
        dedups.emplace_back(format::DedupKey(queue_id, dedup), k.partition,
                            k.id);
      }
      b.Delete(it->key());
      last_deleted = k.id;
      ++lane_deleted;
      if (++in_batch >= batch_limit) HQ_RETURN_IF_ERROR(flush());
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "sweeping expired messages"));
    if (in_batch > 0) HQ_RETURN_IF_ERROR(flush());
    stats->deleted += static_cast<int64_t>(lane_deleted);
    // Compact this lane's deleted span now, while the memtable holds mostly
    // its tombstones (a span across lanes would rewrite the live messages
    // between them). Small spans are left to LevelDB's own compactions:
    // readers and the next sweep seek past them anyway.
    if (lane_deleted >= batch_limit) {
      std::string end = lane;
      LayoutCodec::AppendMessageId(&end, last_deleted.Next());
      // Iterators pin table files: release them around the compaction, or
      // its obsolete files stay on disk until a later one.
      const std::string resume(View(dir->key()));
      it.reset();
      dir.reset();
      const leveldb::Slice b(start), e(end);
      db_->CompactRange(&b, &e);
      dir.reset(NewCheckedIterator(db_.get(), CheckedReadOptions()));
      it.reset(NewCheckedIterator(db_.get(), CheckedReadOptions()));
      dir->Seek(resume);  // The loop's Next() moves past this lane.
      if (!dir->Valid()) break;
    }
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(dir->status(), "reading the lane directory"));
  return absl::OkStatus();
}

void DbImpl::ArmSweepTimer() {
  // The timer re-arms itself when it fires, so intervals do not drift with
  // the sweeps' duration; sweeps due while one runs coalesce into one.
  (void)leases_->Create(options_.ttl_sweep_interval, [this] {
    {
      MutexLock l(&janitor_mu_);
      sweep_due_ = true;
      janitor_cv_.Signal();
    }
    ArmSweepTimer();
  });
}

void DbImpl::JanitorLoop() {
  while (true) {
    {
      MutexLock l(&janitor_mu_);
      while (!sweep_due_ && !janitor_stop_) janitor_cv_.Wait(&janitor_mu_);
      if (janitor_stop_) return;
      sweep_due_ = false;
    }
    (void)CompactExpired();  // Failures are retried at the next interval.
  }
}

int64_t DbImpl::TEST_SweepCount() {
  MutexLock l(&sweep_mu_);
  return sweeps_;
}

// ---------------------------------------------------------- write pipeline

absl::Status DbImpl::WriteMessages(QueueImpl* queue,
                                   std::span<const Message> messages,
                                   const uint32_t* partitions,
                                   PutResult* results, bool sync,
                                   AppendFn append, QueueImpl* also_live) {
  Writer w;
  w.queue = queue;
  w.messages = messages;
  w.partitions = partitions;
  w.results = results;
  w.sync = sync;
  w.append = std::move(append);
  w.also_live = also_live;
  return RunWriter(&w);
}

absl::Status DbImpl::WriteRecords(QueueImpl* queue,
                                  const leveldb::WriteBatch& b, bool sync) {
  static const size_t kEmptySize = leveldb::WriteBatch().ApproximateSize();
  if (b.ApproximateSize() <= kEmptySize) return absl::OkStatus();
  return WriteMessages(queue, {}, nullptr, nullptr, sync,
                       [&b](leveldb::WriteBatch* out) { out->Append(b); });
}

absl::Status DbImpl::CreateGroupRecord(QueueImpl* queue, std::string_view key,
                                       format::GroupRecord* record) {
  absl::StatusOr<uint32_t> id =
      CreateWithId(queue, [&](uint32_t id, leveldb::WriteBatch* b) {
        record->id = id;
        b->Put(leveldb::Slice(key.data(), key.size()),
               format::EncodeGroupRecord(*record));
      });
  return id.status();
}

absl::StatusOr<uint32_t> DbImpl::CreateWithId(
    QueueImpl* queue,
    const std::function<void(uint32_t id, leveldb::WriteBatch*)>& fill) {
  MutexLock l(&group_id_mu_);
  if (next_group_id_ == 0) {
    std::string value;
    leveldb::Status s = CheckedGet(db_.get(), CheckedReadOptions(),
                                   format::MetaKey("next_group_id"), &value);
    if (s.IsNotFound()) {
      next_group_id_ = 1;
    } else {
      HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading next_group_id"));
      std::string_view in = value;
      if (!coding::GetFixed32(&in, &next_group_id_) || !in.empty() ||
          next_group_id_ == 0) {
        return absl::DataLossError("malformed next_group_id record");
      }
    }
  }
  if (next_group_id_ == UINT32_MAX) {
    return absl::ResourceExhaustedError("all 2^32-1 group ids are used");
  }
  const uint32_t id = next_group_id_;
  std::string v;
  coding::PutFixed32(&v, next_group_id_ + 1);
  leveldb::WriteBatch b;
  b.Put(format::MetaKey("next_group_id"), v);
  fill(id, &b);
  HQ_RETURN_IF_ERROR(WriteRecords(queue, b, options_.sync_writes));
  ++next_group_id_;
  return id;
}

DeliveryPool* DbImpl::delivery_pool() {
  MutexLock l(&pool_mu_);
  if (pool_ == nullptr) {
    pool_ = std::make_unique<DeliveryPool>(options_.delivery_threads);
  }
  return pool_.get();
}

absl::StatusOr<DbImpl::PartitionIds*> DbImpl::LoadPartition(
    uint32_t queue_id, uint32_t partition) {
  const uint64_t k = (uint64_t{queue_id} << 16) | partition;
  if (auto it = ids_.find(k); it != ids_.end()) return &it->second;
  std::string value;
  leveldb::Status s =
      CheckedGet(db_.get(), CheckedReadOptions(),
                 format::ReserveKey(queue_id, partition), &value);
  PartitionIds ids;
  if (s.ok()) {
    std::string_view in = value;
    uint64_t reserved;
    if (!coding::GetFixed64(&in, &reserved) || !in.empty() ||
        reserved > MessageId::kMaxMs + 1) {
      return absl::DataLossError(absl::StrFormat(
          "malformed id reservation of partition %d", partition));
    }
    ids.reserved_ms = reserved;
    if (reserved > 0) {
      // Every stored id is below (reserved, 0): continue from there.
      ids.last = MessageId{reserved - 1, 0xffff};
      ids.has_last = true;
    }
  } else if (!s.IsNotFound()) {
    return FromLevelDb(s, "reading an id reservation");
  }
  return &ids_.emplace(k, ids).first->second;
}

absl::Status DbImpl::AddToBatch(Writer* w) {
  QueueImpl* q = w->queue;
  if (q->dropped()) return q->DroppedError();
  if (w->also_live != nullptr && w->also_live->dropped()) {
    return w->also_live->DroppedError();
  }
  const uint32_t qid = q->id();
  const LayoutCodec& codec = q->codec();
  const absl::Time clock_now = clock_->Now();
  const int64_t clock_ms = absl::ToUnixMillis(clock_now);
  const uint64_t now_ms =
      clock_ms < 0
          ? 0
          : std::min(static_cast<uint64_t>(clock_ms), MessageId::kMaxMs);
  // First pass: check dedup keys, load partitions and assign ids. Every
  // failure happens here, before anything is appended to batch_ or any
  // reservation is raised. Dedup check and insert are atomic: they happen
  // here, in the leader, one batch at a time.
  std::vector<std::string> dedup_added;  // Undone if this writer fails.
  auto undo = [&] {
    for (const std::string& k : dedup_added) dedup_in_batch_.erase(k);
  };
  const MessageId cutoff = q->TtlCutoff(clock_now);
  std::string value;
  for (size_t i = 0; i < w->messages.size(); ++i) {
    const Message& m = w->messages[i];
    std::string dedup;
    if (!m.dedup_key.empty()) {
      dedup = format::DedupKey(qid, m.dedup_key);
      if (auto it = dedup_in_batch_.find(dedup); it != dedup_in_batch_.end()) {
        w->results[i] = it->second;  // Written earlier in this batch.
        w->results[i].duplicate = true;
        continue;
      }
      leveldb::Status s =
          CheckedGet(db_.get(), CheckedReadOptions(), dedup, &value);
      if (s.ok()) {
        PutResult existing;
        if (!format::DecodeDedup(value, &existing.partition, &existing.id)) {
          undo();
          return absl::DataLossError("malformed dedup record");
        }
        if (!(existing.id < cutoff)) {
          existing.duplicate = true;
          w->results[i] = existing;
          continue;
        }
      } else if (!s.IsNotFound()) {
        undo();
        return FromLevelDb(s, "reading a dedup record");
      }
    }
    const uint32_t p = w->partitions[i];
    absl::StatusOr<PartitionIds*> loaded = LoadPartition(qid, p);
    if (!loaded.ok()) {
      undo();
      return loaded.status();
    }
    PartitionIds* st = *loaded;
    MessageId id;
    if (!st->has_last || now_ms > st->last.ms) {
      id = MessageId{now_ms, 0};
    } else if (st->last.Next() < MessageId::Max()) {
      // Max() is never assigned: it stays the exclusive end of every range.
      id = st->last.Next();
    } else {
      undo();
      return absl::ResourceExhaustedError(absl::StrFormat(
          "partition %d of queue '%s' has used every MessageId", p, q->name()));
    }
    // Skipped ids (if a later message fails) are harmless gaps.
    st->last = id;
    st->has_last = true;
    w->results[i] = PutResult{p, id};
    if (!dedup.empty()) {
      dedup_in_batch_.emplace(dedup, w->results[i]);
      dedup_added.push_back(std::move(dedup));
    }
  }
  // Second pass: append reservations and messages.
  for (size_t i = 0; i < w->messages.size(); ++i) {
    const Message& m = w->messages[i];
    if (w->results[i].duplicate) continue;
    const auto [p, id, duplicate] = w->results[i];
    PartitionIds& st = ids_[(uint64_t{qid} << 16) | p];
    if (id.ms >= st.reserved_ms) {
      st.reserved_ms =
          std::min(id.ms + kReserveWindowMs, MessageId::kMaxMs + 1);
      value_buf_.clear();
      coding::PutFixed64(&value_buf_, st.reserved_ms);
      batch_.Put(format::ReserveKey(qid, p), value_buf_);
    }
    key_buf_.clear();
    codec.AppendMessageKey(&key_buf_, qid, p, m.priority, m.topic, id);
    NoteLaneWritten(
        std::string_view(key_buf_.data(), codec.LanePrefixSize(key_buf_)));
    value_buf_.clear();
    // Delayed delivery: stored only when it is in the future.
    uint64_t not_before_ms = 0;
    if (m.not_before != absl::InfinitePast() ||
        m.delay != absl::ZeroDuration()) {
      const absl::Time at = std::max(m.not_before, clock_now + m.delay);
      const int64_t ms = absl::ToInt64Milliseconds(
          absl::Ceil(at - absl::UnixEpoch(), absl::Milliseconds(1)));
      if (at > clock_now && ms > 0) not_before_ms = static_cast<uint64_t>(ms);
    }
    format::AppendMessageValue(&value_buf_, m.key, m.payload, not_before_ms,
                               m.dedup_key);
    batch_.Put(key_buf_, value_buf_);
    if (!m.dedup_key.empty()) {
      batch_.Put(format::DedupKey(qid, m.dedup_key),
                 format::EncodeDedup(p, id));
    }
  }
  if (w->append) w->append(&batch_);
  return absl::OkStatus();
}

void DbImpl::NoteLaneWritten(std::string_view lane) {
  // A lane's first write since Open also writes (idempotently) its
  // directory entry and its fence (format.h, layout_codec.h).
  if (lane == last_lane_) return;  // The common case: a stream to one lane.
  last_lane_.assign(lane);
  dir_buf_.clear();
  format::AppendLaneDirKey(&dir_buf_, lane);
  if (known_lanes_.contains(Av(dir_buf_))) return;
  if (known_lanes_.size() >= kMaxKnownLanes) known_lanes_.clear();
  batch_.Put(dir_buf_, leveldb::Slice());
  fence_buf_.clear();
  LayoutCodec::AppendLaneFence(&fence_buf_, lane);
  batch_.Put(fence_buf_, leveldb::Slice());
  known_lanes_.insert(dir_buf_);
}

absl::Status DbImpl::RunWriter(Writer* w) {
  MutexLock l(&write_mu_);
  if (closing_) {
    return ClosingError();
  }
  ++active_ops_;
  const absl::Status s = RunWriterLocked(w);
  if (s.ok() && !w->messages.empty() && w->queue->has_listeners()) {
    // Tell the queue's consumer groups which lanes have new messages, while
    // this call still counts as in flight (the Db outlives it).
    write_mu_.Unlock();
    w->queue->NoteWritten(w->messages, w->results);
    write_mu_.Lock();
  }
  if (--active_ops_ == 0 && closing_) ops_done_.SignalAll();
  return s;
}

absl::Status DbImpl::RunWriterLocked(Writer* w) {
  writers_.push_back(w);
  while (!w->done && w != writers_.front()) w->cv.Wait(&write_mu_);
  if (w->done) return w->status;

  // This writer leads: no other write is in flight until it pops itself.
  Writer* last = w;
  if (!bg_error_.ok()) {
    w->status = BrokenError();
  } else if (w->exclusive) {
    w->status = w->exclusive();
  } else {
    batch_.Clear();
    dedup_in_batch_.clear();
    const bool sync = w->sync;
    bool any = false;
    for (Writer* x : writers_) {
      if (x->exclusive) break;
      if (x != w) {
        if (x->sync && !sync) break;  // A sync write never rides a non-sync.
        if (batch_.ApproximateSize() > kMaxGroupBytes) break;
      }
      x->status = AddToBatch(x);
      x->in_batch = x->status.ok();
      any = any || x->in_batch;
      last = x;
    }
    if (any) {
      leveldb::WriteOptions wo;
      wo.sync = sync;
      leveldb::Status s;
      {
        // Writers may queue up meanwhile; only the leader touches batch_.
        write_mu_.Unlock();
        s = db_->Write(wo, &batch_);
        write_mu_.Lock();
      }
      pipeline_writes_.fetch_add(1, std::memory_order_relaxed);
      if (!s.ok()) {
        // The reservations in this batch may not be on disk, and LevelDB's
        // log may have lost its place: refuse writes until reopened.
        const absl::Status err = FromLevelDb(s, "writing messages");
        RecordWriteError(err);
        for (Writer* x : writers_) {
          if (x->in_batch) x->status = err;
          if (x == last) break;
        }
      }
    }
  }

  while (true) {
    Writer* x = writers_.front();
    writers_.pop_front();
    x->done = true;
    if (x != w) x->cv.Signal();
    if (x == last) break;
  }
  if (!writers_.empty()) writers_.front()->cv.Signal();
  return w->status;
}

}  // namespace hq
