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
#include "absl/strings/str_join.h"
#include "hq/status.h"
#include "leveldb/env.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/log_recovery.h"
#include "lib/engine/log_sync_env.h"
#include "lib/engine/options_check.h"
#include "lib/engine/queue_impl.h"
#include "lib/engine/table_check.h"
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

}  // namespace

absl::StatusOr<std::unique_ptr<Db>> DbImpl::Open(const std::string& path,
                                                 const Options& options,
                                                 DbExtensions* extensions) {
  if (path.empty()) return absl::InvalidArgumentError("Db path is empty");
  HQ_RETURN_IF_ERROR(ValidateOptions(options));
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
  std::unique_ptr<DbImpl> db(
      new DbImpl(path, options, std::move(lock_key), extensions));
  HQ_RETURN_IF_ERROR(db->Init());  // ~DbImpl unregisters on failure.
  // A status file left by a process that died describes nothing now (and
  // its pid may be this process's: a container's pid 1).
  db->RemoveStatusFile();
  if (db->JanitorRuns()) {
    db->janitor_ = std::thread([raw = db.get()] { raw->JanitorLoop(); });
  }
  if (options.ttl_sweep_interval > absl::ZeroDuration()) {
    db->ArmJanitorTimer(options.ttl_sweep_interval, &DbImpl::sweep_due_);
  }
  if (options.status_interval > absl::ZeroDuration()) {
    db->ArmJanitorTimer(options.status_interval, &DbImpl::status_due_);
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

DbImpl::DbImpl(std::string path, const Options& options, std::string lock_key,
               DbExtensions* extensions)
    : path_(std::move(path)),
      options_(options),
      lock_key_(std::move(lock_key)),
      extensions_(extensions),
      clock_(options.clock ? options.clock : Clock::Default()),
      leases_(std::make_unique<LeaseManagerImpl>(clock_)) {}

absl::Status DbImpl::Init() {
  const leveldb::Options lo = LevelDbOptions();
  // Before LevelDB sees the directory: never create a Db over one that
  // lost its CURRENT, and cut damaged logs to a prefix (log_recovery.h).
  HQ_RETURN_IF_ERROR(CheckNotOrphaned(lo.env, path_));
  HQ_RETURN_IF_ERROR(RecoverLogs(lo.env, path_, options_.recovery, &recovery_));
  HQ_RETURN_IF_ERROR(OpenLevelDb(lo));
  info_log_->Commit();  // Only now: a refused Open changes no file.
  HQ_RETURN_IF_ERROR(InitFormat());
  HQ_RETURN_IF_ERROR(LoadNextQueueId());
  HQ_RETURN_IF_ERROR(FinishPendingDrops());
  HQ_RETURN_IF_ERROR(FinishPendingDeletes());
  MutexLock l(&write_mu_);
  opened_ = true;
  return absl::OkStatus();
}

leveldb::Options DbImpl::LevelDbOptions() {
  leveldb::Options lo;
  table_env_ = std::make_unique<TableCheckEnv>(BaseEnv());
  pin_env_ = std::make_unique<FilePinEnv>(table_env_.get());
  env_ = std::make_unique<LogSyncEnv>(pin_env_.get());
  lo.env = env_.get();
  info_log_ = std::make_unique<InfoLog>(
      env_.get(), path_,
      [this](std::string_view error) { NoteBackgroundError(error); });
  lo.info_log = info_log_.get();
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
  return lo;
}

absl::Status DbImpl::OpenLevelDb(const leveldb::Options& lo) {
  leveldb::DB* raw = nullptr;
  const leveldb::Status s = leveldb::DB::Open(lo, path_, &raw);
  if (s.ok()) {
    db_.reset(raw);
    return absl::OkStatus();
  }
  const std::string text = s.ToString();
  // LevelDB creates the Db's directory, not its parents; then its LOCK
  // cannot be opened (ENOENT, NotFound).
  if (s.IsNotFound()) {
    std::string dir = path_;
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    const std::string parent =
        std::filesystem::path(dir).parent_path().string();
    if (!parent.empty() && !lo.env->FileExists(parent)) {
      return absl::NotFoundError(absl::StrCat(
          lo.create_if_missing ? "cannot create hq database '"
                               : "no hq database in '",
          path_, "': its parent directory '", parent, "' does not exist"));
    }
  }
  if (s.IsInvalidArgument() && absl::StrContains(text, "does not exist")) {
    return absl::NotFoundError(absl::StrCat(
        "no hq database in '", path_, "' and create_if_missing is false"));
  }
  if (s.IsInvalidArgument() && absl::StrContains(text, "exists")) {
    return absl::AlreadyExistsError(absl::StrCat(
        "hq database '", path_, "' exists and error_if_exists is true"));
  }
  // LevelDB's LockFile names LOCK: held, or not writable.
  if (s.IsIOError() && absl::StrContains(text, path_ + "/LOCK")) {
    return LockFileError(s, path_);
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

absl::Status DbImpl::InitFormat() {
  std::string value;
  leveldb::Status s = CheckedGet(db_.get(), CheckedReadOptions(),
                                 format::MetaKey("format"), &value);
  auto write_version = [this](bool first, std::string_view context) {
    leveldb::WriteBatch b;
    std::string v;
    coding::PutFixed32(&v, format::kFormatVersion);
    b.Put(format::MetaKey("format"), v);
    if (first) {
      v.clear();
      coding::PutFixed32(&v, 1);
      b.Put(format::MetaKey("next_queue_id"), v);
    }
    leveldb::WriteOptions wo;
    wo.sync = true;
    return FromLevelDb(db_->Write(wo, &b), context);
  };
  if (s.IsNotFound()) {
    // A new Db, or someone else's.
    std::unique_ptr<leveldb::Iterator> it(
        NewCheckedIterator(db_.get(), CheckedReadOptions()));
    it->SeekToFirst();
    if (it->Valid()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "'", path_, "' holds a LevelDB database that is not an hq database"));
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading the database"));
    return write_version(/*first=*/true, "initializing hq database");
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading the format record"));
  std::string_view in = value;
  uint32_t version;
  if (!coding::GetFixed32(&in, &version) || !in.empty()) {
    return absl::DataLossError(
        absl::StrCat("'", path_, "': malformed format record"));
  }
  if (version < format::kOldestFormatVersion ||
      version > format::kFormatVersion) {
    return absl::DataLossError(absl::StrFormat(
        "'%s' has hq format version %d; this hq reads versions %d..%d", path_,
        version, format::kOldestFormatVersion, format::kFormatVersion));
  }
  if (version == format::kFormatVersion) return absl::OkStatus();
  // doc/format.md, "Db metadata": the upgrade rewrites only this record.
  return write_version(/*first=*/false,
                       "upgrading the hq database's format version");
}

absl::Status DbImpl::LoadNextQueueId() {
  std::string value;
  const leveldb::Status s =
      CheckedGet(db_.get(), CheckedReadOptions(),
                 format::MetaKey("next_queue_id"), &value);
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading next_queue_id"));
  std::string_view in = value;
  MutexLock l(&catalog_mu_);
  if (!coding::GetFixed32(&in, &next_queue_id_) || !in.empty()) {
    return absl::DataLossError("malformed next_queue_id record");
  }
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
    if (options_.status_interval > absl::ZeroDuration()) RemoveStatusFile();
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

absl::Status DbImpl::BeginOp(bool despite_damage) {
  if (!despite_damage) HQ_RETURN_IF_ERROR(DamageError());
  MutexLock l(&write_mu_);
  if (closing_) {
    return ClosingError();
  }
  ++active_ops_;
  return absl::OkStatus();
}

void DbImpl::NoteBackgroundError(std::string_view leveldb_status) {
  // Other failures (an I/O error writing a table) leave the data as it was:
  // LevelDB fails every later write with them (then BrokenError), and
  // reads go on.
  if (!leveldb_status.starts_with("Corruption: ")) return;
  const std::string message = absl::StrCat(
      "hq database '", path_,
      "': a LevelDB compaction met damage: ", Av(leveldb_status),
      "; every call fails until the Db is reopened; `hq verify` lists the "
      "damage and `hq repair` rebuilds the Db");
  MutexLock l(&damage_mu_);
  if (!damage_.ok()) return;  // The first one stays.
  damage_ = absl::DataLossError(message);
  damage_named_ = leveldb_status.find(".ldb") != std::string_view::npos ||
                  leveldb_status.find(".sst") != std::string_view::npos;
  damaged_.store(true, std::memory_order_release);
}

absl::Status DbImpl::DamageError() {
  if (!damaged_.load(std::memory_order_acquire)) return absl::OkStatus();
  {
    MutexLock l(&damage_mu_);
    if (damage_named_) return damage_;
  }
  // Outside damage_mu_: this reads through LevelDB.
  const std::string tables = DamagedTables();
  MutexLock l(&damage_mu_);
  if (!damage_named_) {
    damage_ = absl::Status(damage_.code(),
                           absl::StrCat(damage_.message(), " (", tables, ")"));
    damage_named_ = true;
  }
  return damage_;
}

std::string DbImpl::DamagedTables() {
  absl::StatusOr<std::vector<table_check::LiveTable>> live =
      table_check::LiveTables(db_.get());
  if (!live.ok()) return "its tables could not be listed to find which";
  const table_check::Report report =
      table_check::CheckTables(db_.get(), env_.get(), path_, *live);
  std::vector<std::string> files;
  for (const table_check::Damage& d : report.damage) {
    const std::string where = absl::StrCat("table file ", d.file);
    if (std::find(files.begin(), files.end(), where) == files.end()) {
      files.push_back(where);
    }
  }
  if (files.empty()) return "no table file fails its checksums";
  return absl::StrCat(absl::StrJoin(files, ", "), " damaged");
}

void DbImpl::EndOp() {
  MutexLock l(&write_mu_);
  if (--active_ops_ == 0 && closing_) ops_done_.SignalAll();
}

absl::Status DbImpl::ClosingError() const {
  return absl::FailedPreconditionError(
      absl::StrCat("hq database '", path_, "' is closing"));
}

absl::Status DbImpl::BrokenError() {
  if (damaged_.load(std::memory_order_acquire)) {
    MutexLock l(&damage_mu_);  // A leaf lock.
    return damage_;
  }
  return absl::FailedPreconditionError(
      absl::StrCat("hq database '", path_,
                   "' refuses writes after an earlier write failed (",
                   bg_error_.ToString(), "); reopen it"));
}

void DbImpl::RecordWriteError(const absl::Status& s) {
  if (bg_error_.ok()) bg_error_ = s;
  ids_.clear();
  last_ids_key_ = kNoPartition;
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
  for (QueueImpl* q : CachedQueues()) q->consumers()->WakeWaiters();
}

void DbImpl::StopSubscriptions() {
  for (QueueImpl* q : CachedQueues()) q->consumers()->StopSubscriptions();
}

size_t DbImpl::TEST_CachedQueueCount() {
  MutexLock l(&catalog_mu_);
  return queues_.size();
}

}  // namespace hq
