// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Repair (hq/db.h has the steps and the contract):
//   - repair::ReadFiles (lib/admin/repair_read.cc): the read of the files
//     as they were ("before");
//   - CopyAside: the copy of the directory beside it;
//   - CutAllLogs (lib/engine/log_recovery.h) and LevelDB's RepairDB;
//   - RecreateLostQueues and MendRecords (lib/admin/repair_mend.h): hq's
//     records mended until Verify is clean.

#include "lib/admin/repair.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "hq/clock.h"
#include "hq/status.h"
#include "leveldb/comparator.h"
#include "leveldb/db.h"
#include "leveldb/filter_policy.h"
#include "leveldb/table.h"
#include "leveldb/write_batch.h"
#include "lib/admin/repair_mend.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/log_recovery.h"
#include "lib/engine/options_check.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/format/log_check.h"
#include "lib/format/manifest.h"
#include "lib/util/file_util.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/progress.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"
#include "lib/util/sync.h"

namespace hq {
namespace repair {

namespace {
std::atomic<bool> skip_mending{false};
std::atomic<bool> force_repair{false};
std::atomic<void (*)(int)> copy_aside_hook{nullptr};
}  // namespace

void TEST_SetSkipMending(bool skip) { skip_mending.store(skip); }
void TEST_SetForceRepair(bool force) { force_repair.store(force); }
void TEST_SetCopyAsideHook(void (*hook)(int)) { copy_aside_hook.store(hook); }

namespace {

// Collects what LevelDB's RepairDB logs.
class CaptureLogger final : public leveldb::Logger {
 public:
  void Logv(const char* format, va_list ap) override {
    char buf[1024];
    std::vsnprintf(buf, sizeof buf, format, ap);
    std::string line(buf);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) {
      line.pop_back();
    }
    MutexLock l(&mu_);
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> lines() {
    MutexLock l(&mu_);
    return lines_;
  }

 private:
  Mutex mu_;
  std::vector<std::string> lines_ ABSL_GUARDED_BY(mu_);
};

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// The suffix of a copy aside while it is being made: a directory
// "<path>.before-repair-<stamp>[-N].partial" is a copy a repair did not
// finish (it was killed while copying, before it changed anything).
constexpr char kPartialSuffix[] = ".partial";

// Renames directory `from` to `to`: one rename(2) on the real file system;
// file by file on Envs without directories.
absl::Status RenameDir(leveldb::Env* env, const std::string& from,
                       const std::string& to) {
  if (file_util::IsDefaultEnv(env)) {
    return file_util::FromIo(env->RenameFile(from, to),
                             absl::StrCat("renaming '", from, "'"));
  }
  HQ_ASSIGN_OR_RETURN(const std::vector<file_util::Entry> files,
                      file_util::ListFiles(env, from));
  HQ_RETURN_IF_ERROR(file_util::FromIo(env->CreateDir(to), "creating " + to));
  for (const file_util::Entry& e : files) {
    HQ_RETURN_IF_ERROR(file_util::FromIo(
        env->RenameFile(from + "/" + e.name, to + "/" + e.name),
        absl::StrCat("renaming '", from, "/", e.name, "'")));
  }
  env->RemoveDir(from);
  return absl::OkStatus();
}

// Removes directory `dir` and everything under it.
absl::Status RemoveTree(leveldb::Env* env, const std::string& dir) {
  if (file_util::IsDefaultEnv(env)) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("could not remove '", dir, "': ", ec.message()));
    }
    return absl::OkStatus();
  }
  HQ_ASSIGN_OR_RETURN(const std::vector<file_util::Entry> files,
                      file_util::ListFiles(env, dir));
  std::set<std::string> subdirs;
  for (const file_util::Entry& e : files) {
    HQ_RETURN_IF_ERROR(file_util::FromIo(env->RemoveFile(dir + "/" + e.name),
                                         "removing " + dir + "/" + e.name));
    for (size_t slash = e.name.find('/'); slash != std::string::npos;
         slash = e.name.find('/', slash + 1)) {
      subdirs.insert(e.name.substr(0, slash));
    }
  }
  // Deepest first: a longer name under the same parent sorts later.
  for (auto d = subdirs.rbegin(); d != subdirs.rend(); ++d) {
    env->RemoveDir(dir + "/" + *d);
  }
  env->RemoveDir(dir);
  if (file_util::DirExists(env, dir)) {
    return absl::InternalError(absl::StrCat("could not remove '", dir, "'"));
  }
  return absl::OkStatus();
}

// Removes the unfinished copies aside of `path` that an earlier repair
// killed while copying left (their names end in kPartialSuffix), and adds
// their paths to report->removed_partial_copies. Such a repair changed
// nothing in `path`: what it copied is still there.
absl::Status RemovePartialCopies(leveldb::Env* env, const std::string& path,
                                 RepairReport* report) {
  const std::string parent = Parent(path);
  const size_t slash = path.rfind('/');
  const std::string prefix =
      absl::StrCat(slash == std::string::npos ? path : path.substr(slash + 1),
                   ".before-repair-");
  std::vector<std::string> children;
  if (!env->GetChildren(parent, &children).ok()) return absl::OkStatus();
  std::set<std::string> partial;
  for (const std::string& c : children) {
    // Envs without directories list the files under them ("d/f").
    const std::string name = c.substr(0, c.find('/'));
    if (name.starts_with(prefix) && name.ends_with(kPartialSuffix)) {
      partial.insert(name);
    }
  }
  for (const std::string& name : partial) {
    const std::string dir = parent == "/" ? "/" + name : parent + "/" + name;
    if (absl::Status s = RemoveTree(env, dir); !s.ok()) {
      return absl::Status(
          s.code(),
          absl::StrCat("Repair: removing the unfinished copy aside '", dir,
                       "' of an interrupted repair (nothing "
                       "was changed): ",
                       s.message()));
    }
    report->removed_partial_copies.push_back(dir);
  }
  if (!partial.empty()) return file_util::SyncDir(env, parent);
  return absl::OkStatus();
}

// Copies every file of `path` (listed in `files`, relative names) but LOCK
// into a new directory beside it: first under a name ending in
// kPartialSuffix, synced, then renamed, so that a copy under the final name
// is whole. Nothing in `path` changes; on failure what was created is
// removed.
absl::Status CopyAside(leveldb::Env* env, const std::string& path,
                       const std::vector<file_util::Entry>& files,
                       const std::string& stamp,
                       const ProgressCallback& callback, RepairReport* report) {
  auto taken = [env](const std::string& name) {
    for (const std::string& n : {name, name + std::string(kPartialSuffix)}) {
      if (file_util::DirExists(env, n) ||
          (file_util::IsDefaultEnv(env) && env->FileExists(n))) {
        return true;
      }
    }
    return false;
  };
  std::string aside = absl::StrCat(path, ".before-repair-", stamp);
  for (int i = 2; taken(aside); ++i) {
    if (i > 9) {
      return absl::AlreadyExistsError(
          absl::StrCat("Repair: the copy aside '", aside, "' exists"));
    }
    aside = absl::StrCat(path, ".before-repair-", stamp, "-", i);
  }
  const std::string partial = absl::StrCat(aside, kPartialSuffix);
  HQ_RETURN_IF_ERROR(
      file_util::FromIo(env->CreateDir(partial),
                        absl::StrCat("Repair: creating the copy aside '",
                                     partial, "' (nothing was changed)")));
  std::vector<std::string> created, dirs = {partial};
  absl::Status s;
  int copied = 0;
  uint64_t total = 0;
  for (const file_util::Entry& e : files) {
    if (e.name != "LOCK") total += e.bytes;
  }
  PhaseProgress progress(callback, "copying aside", total);
  for (const file_util::Entry& e : files) {
    if (e.name == "LOCK") continue;
    // Subdirectories (dropped/, lost/) first.
    for (size_t slash = e.name.find('/'); slash != std::string::npos;
         slash = e.name.find('/', slash + 1)) {
      const std::string d = partial + "/" + e.name.substr(0, slash);
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) {
        env->CreateDir(d);
        dirs.push_back(d);
      }
    }
    const std::string to = partial + "/" + e.name;
    absl::StatusOr<uint64_t> n =
        file_util::CopyFile(env, path + "/" + e.name, to);
    created.push_back(to);
    if (!n.ok()) {
      s = n.status();
      break;
    }
    report->copied_bytes += *n;
    progress.Add(*n);
    if (void (*hook)(int) = copy_aside_hook.load()) hook(++copied);
  }
  for (auto d = dirs.rbegin(); s.ok() && d != dirs.rend(); ++d) {
    s = file_util::SyncDir(env, *d);
  }
  if (s.ok()) s = RenameDir(env, partial, aside);
  if (s.ok()) s = file_util::SyncDir(env, Parent(aside));
  if (!s.ok()) {
    RemoveTree(env, partial).IgnoreError();  // What is left is named partial.
    return absl::Status(s.code(),
                        absl::StrCat("Repair: copying the database aside "
                                     "(nothing was changed): ",
                                     s.message()));
  }
  report->copied_to = aside;
  progress.Finish();
  return absl::OkStatus();
}

// Before LevelDB's repair, moves into lost/: every file of dropped/
// (Repair reports it, so the repaired Db no longer answers for it in
// Verify), and an earlier repair's lost/MANIFEST-N, when the directory
// holds a MANIFEST-N too, renamed MANIFEST-N.before-repair-STAMP (LevelDB's
// repair archives every MANIFEST into lost/, replacing a file of that name;
// its own MANIFEST-1 is left when a repair stopped before hq opened it). The
// renamed manifests go into `lost_before`, so they are not reported as new; the
// cuts in `logs` are renamed to where their bytes now are.
absl::Status ClearLost(leveldb::Env* env, const std::string& path,
                       const std::string& stamp,
                       std::set<std::string>* lost_before,
                       RecoveryReport* logs) {
  const std::string lost = path + "/lost";
  env->CreateDir(lost);  // Fails if it exists; a rename below says if not.
  std::vector<std::string> names;
  if (env->GetChildren(lost, &names).ok()) {
    for (const std::string& n : names) {
      if (!n.starts_with("MANIFEST-") || !env->FileExists(path + "/" + n)) {
        continue;
      }
      const std::string to = absl::StrCat(n, ".before-repair-", stamp);
      HQ_RETURN_IF_ERROR(
          file_util::FromIo(env->RenameFile(lost + "/" + n, lost + "/" + to),
                            absl::StrCat("Repair: renaming lost/", n)));
      lost_before->insert("lost/" + to);
    }
  }
  const std::string dropped = absl::StrCat(path, "/", kDroppedDir);
  names.clear();
  if (!env->GetChildren(dropped, &names).ok()) return absl::OkStatus();
  for (const std::string& n : names) {
    if (n == "." || n == "..") continue;
    std::string to = absl::StrCat("lost/", n);
    if (env->FileExists(path + "/" + to)) to += absl::StrCat(".", stamp);
    HQ_RETURN_IF_ERROR(file_util::FromIo(
        env->RenameFile(dropped + "/" + n, path + "/" + to),
        absl::StrCat("Repair: moving ", kDroppedDir, "/", n, " into lost/")));
    for (RecoveryReport::Dropped& d : logs->dropped) {
      if (d.saved_as == absl::StrCat(kDroppedDir, "/", n)) d.saved_as = to;
    }
  }
  env->RemoveDir(dropped);
  return file_util::SyncDir(env, lost);
}

// The steps of one Db::Repair, in the order Db::Repair runs them. A step
// after CopyAside that fails says where the copy is (Failed).
class Repairer {
 public:
  Repairer(const Options& options, std::string path,
           const ProgressCallback& progress)
      : options_(options),
        progress_(progress),
        env_(options.env ? options.env : leveldb::Env::Default()),
        path_(std::move(path)),
        filter_(options.bloom_bits_per_key > 0
                    ? leveldb::NewBloomFilterPolicy(options.bloom_bits_per_key)
                    : nullptr) {}
  ~Repairer() {
    if (lock_ != nullptr) env_->UnlockFile(lock_);
    if (!claim_.empty()) DbImpl::ReleaseDirectory(claim_);
  }

  const std::string& path() const { return path_; }
  RepairReport& report() { return report_; }
  // Held open neither in this process nor in another.
  absl::Status Lock();
  // Lists the files; NotFound if none of them is LevelDB's.
  absl::Status List();
  // The files as they were ("before"), and whether this hq can repair them.
  absl::Status ReadBefore();
  // Whether the Db needs no repair: no damage in its files as they were,
  // this hq's format, and hq's Open and Verify find nothing. Then the
  // report says nothing_to_repair, and the Db was only opened and closed.
  // Otherwise it is locked again and listed anew (Open may have turned its
  // log into a table).
  absl::StatusOr<bool> AlreadyClean();
  // Room and permission, before anything changes.
  absl::Status CheckRoom() const;
  // Removes what an earlier repair killed while copying aside left.
  absl::Status RemovePartialCopies() {
    return repair::RemovePartialCopies(env_, path_, &report_);
  }
  absl::Status CopyAside();
  // Logs cut to a prefix, dropped/ into lost/, LevelDB's RepairDB.
  absl::Status RepairFiles();
  // Up to three rounds of mending hq's records and verifying with hq's own
  // Open, until Verify is clean or a round changes nothing.
  absl::Status MendUntilClean();
  // `s` with where the copy aside is.
  absl::Status Failed(const absl::Status& s) const;

 private:
  // Mends hq's records through LevelDB directly; the number of changes.
  absl::StatusOr<int64_t> Mend(SideDb* side);
  // Opens the Db with hq, verifies it and counts what it holds.
  absl::Status VerifyAndCount(const Options& open_options);
  void CountQueues(const Census& after);

  const Options& options_;
  const ProgressCallback& progress_;
  leveldb::Env* const env_;
  const std::string path_;
  const std::unique_ptr<const leveldb::FilterPolicy> filter_;
  std::string claim_;
  leveldb::FileLock* lock_ = nullptr;
  std::vector<file_util::Entry> files_;
  uint64_t total_bytes_ = 0, log_bytes_ = 0;
  std::set<std::string> lost_before_;
  FileRead before_;
  std::string stamp_;
  RepairReport report_;
};

absl::Status Repairer::Lock() {
  HQ_ASSIGN_OR_RETURN(claim_, DbImpl::ClaimDirectory(path_, env_));
  if (leveldb::Status s = env_->LockFile(path_ + "/LOCK", &lock_); !s.ok()) {
    lock_ = nullptr;
    return LockFileError(s, path_, "; Repair needs it closed");
  }
  return absl::OkStatus();
}

absl::Status Repairer::List() {
  HQ_ASSIGN_OR_RETURN(files_, file_util::ListFiles(env_, path_));
  total_bytes_ = log_bytes_ = 0;
  lost_before_.clear();
  bool leveldb_files = false;
  for (const file_util::Entry& e : files_) {
    uint64_t n;
    total_bytes_ += e.bytes;
    if (manifest::ParseLogName(e.name, &n)) log_bytes_ += e.bytes;
    if (e.name == "CURRENT" || manifest::ParseTableName(e.name, &n) ||
        manifest::ParseLogName(e.name, &n) ||
        manifest::ParseManifestName(e.name, &n)) {
      leveldb_files = true;
    }
    if (e.name.starts_with("lost/")) lost_before_.insert(e.name);
  }
  if (!leveldb_files) {
    return absl::NotFoundError(absl::StrCat(
        "Repair: no hq database in '", path_, "' (no LevelDB file in it)"));
  }
  return absl::OkStatus();
}

absl::Status Repairer::ReadBefore() {
  HQ_RETURN_IF_ERROR(ReadFiles(env_, path_, &before_));
  const Census& bc = before_.census;
  if (bc.has_format() && bc.format_version() != 0 &&
      (bc.format_version() < format::kOldestFormatVersion ||
       bc.format_version() > format::kFormatVersion)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "Repair: '%s' has hq format version %d; this hq repairs versions "
        "%d..%d (nothing was changed)",
        path_, bc.format_version(), format::kOldestFormatVersion,
        format::kFormatVersion));
  }
  if (!bc.has_format() && !bc.looks_like_hq() && bc.keys() > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("Repair: '", path_,
                     "' holds a LevelDB database that is not an hq database "
                     "(nothing was changed)"));
  }
  report_.damage = before_.damage;
  report_.keys_before = bc.keys();
  report_.messages_before = bc.messages();
  return absl::OkStatus();
}

absl::StatusOr<bool> Repairer::AlreadyClean() {
  const Census& bc = before_.census;
  if (force_repair.load() || !before_.damage.empty() || before_.log_damaged ||
      !bc.has_format() || bc.format_version() != format::kFormatVersion) {
    return false;
  }
  for (const file_util::Entry& e : files_) {
    if (e.name.starts_with(absl::StrCat(kDroppedDir, "/"))) return false;
  }
  env_->UnlockFile(lock_);  // Db::Open takes both next.
  lock_ = nullptr;
  DbImpl::ReleaseDirectory(claim_);
  claim_.clear();
  Options open_options = options_;
  open_options.create_if_missing = false;
  open_options.error_if_exists = false;
  open_options.ttl_sweep_interval = absl::ZeroDuration();
  {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path_, open_options);
    if (!db.ok() && GetErrorDetail(db.status()) == ErrorDetail::kDbLocked) {
      return db.status();
    }
    if (db.ok() && (*db)->recovery().dropped.empty()) {
      absl::StatusOr<VerifyReport> v = (*db)->Verify(progress_);
      if (v.ok() && v->ok()) {
        report_.nothing_to_repair = true;
        report_.verify = *std::move(v);
        report_.keys_after = bc.keys();
        report_.messages_after = bc.messages();
        CountQueues(bc);
        return true;
      }
    }
  }
  HQ_RETURN_IF_ERROR(Lock());
  HQ_RETURN_IF_ERROR(List());
  return false;
}

absl::Status Repairer::CheckRoom() const {
  const std::string parent = Parent(path_);
  if (file_util::IsDefaultEnv(env_)) {
    for (const std::string& d : {path_, parent}) {
      if (access(d.c_str(), W_OK | X_OK) != 0) {
        return absl::PermissionDeniedError(absl::StrCat(
            "Repair: cannot write in '", d, "' (nothing was changed)"));
      }
    }
  }
  uint64_t damaged_table_bytes = 0;
  for (const RepairReport::Damage& d : before_.damage) {
    for (const file_util::Entry& e : files_) {
      if (e.name == d.file) damaged_table_bytes += e.bytes;
    }
  }
  const uint64_t need =
      total_bytes_ + log_bytes_ + damaged_table_bytes + (1 << 20);
  if (const int64_t free_bytes = file_util::FreeBytes(env_, parent);
      free_bytes >= 0 && static_cast<uint64_t>(free_bytes) < need) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "Repair: %d bytes free beside '%s', and repairing it needs about %d "
        "(a copy aside of %d bytes, and room for the tables it rebuilds); "
        "nothing was changed",
        free_bytes, path_, need, total_bytes_));
  }
  return absl::OkStatus();
}

absl::Status Repairer::CopyAside() {
  stamp_ = absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone());
  return repair::CopyAside(env_, path_, files_, stamp_, progress_, &report_);
}

absl::Status Repairer::Failed(const absl::Status& s) const {
  return WithErrorDetail(
      absl::Status(s.code(),
                   absl::StrCat(s.message(), "; the database as it was is in ",
                                report_.copied_to)),
      GetErrorDetail(s));
}

absl::Status Repairer::RepairFiles() {
  HQ_RETURN_IF_ERROR(CutAllLogs(env_, path_, &report_.logs));
  HQ_RETURN_IF_ERROR(
      ClearLost(env_, path_, stamp_, &lost_before_, &report_.logs));
  CaptureLogger logger;
  leveldb::Options lo;
  lo.env = env_;
  lo.paranoid_checks = true;  // Verify every block it copies.
  lo.info_log = &logger;
  lo.filter_policy = filter_.get();
  const leveldb::Status s = leveldb::RepairDB(path_, lo);
  report_.leveldb_log = logger.lines();
  if (!s.ok()) return file_util::FromIo(s, "Repair: LevelDB's repair");
  if (absl::StatusOr<std::vector<file_util::Entry>> after =
          file_util::ListFiles(env_, path_);
      after.ok()) {
    for (const file_util::Entry& e : *after) {
      if (e.name.starts_with("lost/") && !lost_before_.contains(e.name)) {
        report_.moved_to_lost.push_back(e.name);
      }
    }
  }
  env_->UnlockFile(lock_);  // LevelDB's Open takes it next.
  lock_ = nullptr;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Repairer::Mend(SideDb* side) {
  leveldb::Options lo;
  lo.env = env_;
  lo.paranoid_checks = true;
  lo.filter_policy = filter_.get();
  lo.write_buffer_size = options_.write_buffer_bytes;
  leveldb::DB* raw = nullptr;
  leveldb::Status s = leveldb::DB::Open(lo, path_, &raw);
  if (!s.ok()) {
    return file_util::FromIo(s, "Repair: opening the repaired database");
  }
  std::unique_ptr<leveldb::DB> db(raw);
  if (skip_mending.load()) return 0;
  Clock* clock = options_.clock ? options_.clock : Clock::Default();
  HQ_ASSIGN_OR_RETURN(const int64_t queues,
                      RecreateLostQueues(db.get(), clock->Now(), &report_));
  HQ_ASSIGN_OR_RETURN(const int64_t records,
                      MendRecords(db.get(), clock->Now(), side, &report_));
  return queues + records;
}

absl::Status Repairer::VerifyAndCount(const Options& open_options) {
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path_, open_options));
  HQ_ASSIGN_OR_RETURN(report_.verify, db->Verify(progress_));
  Census after;
  leveldb::DB* ldb = static_cast<DbImpl*>(db.get())->leveldb();
  leveldb::ReadOptions ro = CheckedReadOptions();
  ro.fill_cache = false;
  std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(ldb, ro));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    after.Add(View(it->key()), View(it->value()));
  }
  if (!it->status().ok()) {
    return FromLevelDb(it->status(), "Repair: counting");
  }
  report_.keys_after = after.keys();
  report_.messages_after = after.messages();
  CountQueues(after);
  return absl::OkStatus();
}

void Repairer::CountQueues(const Census& after) {
  const Census& bc = before_.census;
  auto name = [](const Census& c, uint32_t id) {
    auto n = c.names().find(id);
    return n != c.names().end() ? n->second : absl::StrCat("queue id ", id);
  };
  std::map<uint32_t, RepairReport::QueueCount> queues;
  for (const auto& [id, n] : bc.per_queue()) {
    queues[id].queue = name(bc, id);
    queues[id].messages_before = n;
  }
  for (const auto& [id, n] : after.per_queue()) {
    if (queues[id].queue.empty() || after.names().contains(id)) {
      queues[id].queue = name(after, id);
    }
    queues[id].messages_after = n;
  }
  report_.queues.clear();
  for (auto& [id, q] : queues) report_.queues.push_back(std::move(q));
}

absl::Status Repairer::MendUntilClean() {
  SideDb side(env_, absl::StrCat(path_, "/lost/hq-records-", stamp_));
  Options open_options = options_;
  open_options.create_if_missing = false;
  open_options.error_if_exists = false;
  open_options.ttl_sweep_interval = absl::ZeroDuration();
  open_options.recovery = Options::Recovery::kPointInTime;
  for (int round = 0; round < 3; ++round) {
    HQ_ASSIGN_OR_RETURN(const int64_t changes, Mend(&side));
    DbImpl::ReleaseDirectory(claim_);  // Db::Open claims it next.
    claim_.clear();
    HQ_RETURN_IF_ERROR(VerifyAndCount(open_options));
    HQ_ASSIGN_OR_RETURN(claim_, DbImpl::ClaimDirectory(path_, env_));
    if (report_.verify.ok() || changes == 0) break;
  }
  if (side.used()) report_.moved_aside_to = side.dir();
  return absl::OkStatus();
}

// `path` without trailing slashes; absolute on the default Env, so that "."
// or "db/" gets its copy aside beside it.
std::string NormalPath(leveldb::Env* env, std::string path) {
  if (file_util::IsDefaultEnv(env)) {
    std::error_code ec;
    const std::filesystem::path abs =
        std::filesystem::absolute(path, ec).lexically_normal();
    if (!ec) path = abs.string();
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace
}  // namespace repair

absl::StatusOr<RepairReport> Db::Repair(const std::string& path,
                                        const Options& options,
                                        const ProgressCallback& progress) {
  if (path.empty()) {
    return absl::InvalidArgumentError("Repair: the database path is empty");
  }
  HQ_RETURN_IF_ERROR(ValidateOptions(options));
  leveldb::Env* env = options.env ? options.env : leveldb::Env::Default();
  repair::Repairer r(options, repair::NormalPath(env, path), progress);
  if (!file_util::DirExists(env, r.path())) {
    return absl::NotFoundError(
        absl::StrCat("Repair: no directory '", r.path(), "'"));
  }
  HQ_RETURN_IF_ERROR(r.Lock());
  HQ_RETURN_IF_ERROR(r.RemovePartialCopies());
  HQ_RETURN_IF_ERROR(r.List());
  HQ_RETURN_IF_ERROR(r.ReadBefore());
  HQ_ASSIGN_OR_RETURN(const bool clean, r.AlreadyClean());
  if (clean) return std::move(r.report());
  HQ_RETURN_IF_ERROR(r.CheckRoom());
  HQ_RETURN_IF_ERROR(r.CopyAside());
  if (absl::Status s = r.RepairFiles(); !s.ok()) return r.Failed(s);
  if (absl::Status s = r.MendUntilClean(); !s.ok()) return r.Failed(s);
  return std::move(r.report());
}

}  // namespace hq
