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
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"
#include "lib/util/sync.h"

namespace hq {
namespace repair {

namespace {
std::atomic<bool> skip_mending{false};
}  // namespace

void TEST_SetSkipMending(bool skip) { skip_mending.store(skip); }

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

// Copies every file of `path` (listed in `files`, relative names) but LOCK
// into a new directory beside it. Nothing in `path` changes; on failure
// what was created is removed.
absl::Status CopyAside(leveldb::Env* env, const std::string& path,
                       const std::vector<file_util::Entry>& files,
                       const std::string& stamp, RepairReport* report) {
  std::string aside = absl::StrCat(path, ".before-repair-", stamp);
  for (int i = 2; file_util::DirExists(env, aside) ||
                  (file_util::IsDefaultEnv(env) && env->FileExists(aside));
       ++i) {
    if (i > 9) {
      return absl::AlreadyExistsError(
          absl::StrCat("Repair: the copy aside '", aside, "' exists"));
    }
    aside = absl::StrCat(path, ".before-repair-", stamp, "-", i);
  }
  HQ_RETURN_IF_ERROR(file_util::FromIo(
      env->CreateDir(aside), absl::StrCat("Repair: creating the copy aside '",
                                          aside, "' (nothing was changed)")));
  std::vector<std::string> created, dirs = {aside};
  absl::Status s;
  for (const file_util::Entry& e : files) {
    if (e.name == "LOCK") continue;
    // Subdirectories (dropped/, lost/) first.
    for (size_t slash = e.name.find('/'); slash != std::string::npos;
         slash = e.name.find('/', slash + 1)) {
      const std::string d = aside + "/" + e.name.substr(0, slash);
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) {
        env->CreateDir(d);
        dirs.push_back(d);
      }
    }
    const std::string to = aside + "/" + e.name;
    absl::StatusOr<uint64_t> n =
        file_util::CopyFile(env, path + "/" + e.name, to);
    created.push_back(to);
    if (!n.ok()) {
      s = n.status();
      break;
    }
    report->copied_bytes += *n;
  }
  for (auto d = dirs.rbegin(); s.ok() && d != dirs.rend(); ++d) {
    s = file_util::SyncDir(env, *d);
  }
  if (s.ok()) s = file_util::SyncDir(env, Parent(aside));
  if (!s.ok()) {
    for (const std::string& f : created) env->RemoveFile(f);
    for (auto d = dirs.rbegin(); d != dirs.rend(); ++d) env->RemoveDir(*d);
    return absl::Status(s.code(),
                        absl::StrCat("Repair: copying the database aside "
                                     "(nothing was changed): ",
                                     s.message()));
  }
  report->copied_to = aside;
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

}  // namespace
}  // namespace repair

absl::StatusOr<RepairReport> Db::Repair(const std::string& path_arg,
                                        const Options& options) {
  using repair::Census;
  if (path_arg.empty()) {
    return absl::InvalidArgumentError("Repair: the database path is empty");
  }
  HQ_RETURN_IF_ERROR(ValidateOptions(options));
  leveldb::Env* env = options.env ? options.env : leveldb::Env::Default();
  std::string path = path_arg;
  if (file_util::IsDefaultEnv(env)) {
    // Absolute, so that "." or "db/" gets its copy aside beside it.
    std::error_code ec;
    const std::filesystem::path abs =
        std::filesystem::absolute(path, ec).lexically_normal();
    if (!ec) path = abs.string();
  }
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  if (!file_util::DirExists(env, path)) {
    return absl::NotFoundError(
        absl::StrCat("Repair: no directory '", path, "'"));
  }

  // Held open neither in this process nor in another.
  std::string claim;
  HQ_ASSIGN_OR_RETURN(claim, DbImpl::ClaimDirectory(path, env));
  absl::Cleanup release = [&claim] {
    if (!claim.empty()) DbImpl::ReleaseDirectory(claim);
  };
  leveldb::FileLock* lock = nullptr;
  if (leveldb::Status s = env->LockFile(path + "/LOCK", &lock); !s.ok()) {
    return WithErrorDetail(absl::FailedPreconditionError(absl::StrCat(
                               "hq database directory '", path,
                               "' is in use by another process (LevelDB: ",
                               s.ToString(), "); Repair needs it closed")),
                           ErrorDetail::kDbLocked);
  }
  absl::Cleanup unlock = [&] {
    if (lock != nullptr) env->UnlockFile(lock);
  };

  HQ_ASSIGN_OR_RETURN(const std::vector<file_util::Entry> files,
                      file_util::ListFiles(env, path));
  uint64_t total = 0, log_bytes = 0;
  bool leveldb_files = false;
  std::set<std::string> lost_before;
  for (const file_util::Entry& e : files) {
    uint64_t n;
    total += e.bytes;
    if (manifest::ParseLogName(e.name, &n)) log_bytes += e.bytes;
    if (e.name == "CURRENT" || manifest::ParseTableName(e.name, &n) ||
        manifest::ParseLogName(e.name, &n) ||
        manifest::ParseManifestName(e.name, &n)) {
      leveldb_files = true;
    }
    if (e.name.starts_with("lost/")) lost_before.insert(e.name);
  }
  if (!leveldb_files) {
    return absl::NotFoundError(absl::StrCat("Repair: no hq database in '", path,
                                            "' (no LevelDB file in it)"));
  }

  // 2. The files as they were.
  RepairReport report;
  repair::FileRead before;
  HQ_RETURN_IF_ERROR(repair::ReadFiles(env, path, &before));
  const Census& bc = before.census;
  if (bc.has_format() && bc.format_version() != 0 &&
      (bc.format_version() < format::kOldestFormatVersion ||
       bc.format_version() > format::kFormatVersion)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "Repair: '%s' has hq format version %d; this hq repairs versions "
        "%d..%d (nothing was changed)",
        path, bc.format_version(), format::kOldestFormatVersion,
        format::kFormatVersion));
  }
  if (!bc.has_format() && !bc.looks_like_hq() && bc.keys() > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("Repair: '", path,
                     "' holds a LevelDB database that is not an hq database "
                     "(nothing was changed)"));
  }
  report.damage = before.damage;

  // 1. Room and permission, before anything changes.
  const std::string parent = repair::Parent(path);
  if (file_util::IsDefaultEnv(env)) {
    for (const std::string& d : {path, parent}) {
      if (access(d.c_str(), W_OK | X_OK) != 0) {
        return absl::PermissionDeniedError(absl::StrCat(
            "Repair: cannot write in '", d, "' (nothing was changed)"));
      }
    }
  }
  uint64_t damaged_table_bytes = 0;
  for (const RepairReport::Damage& d : before.damage) {
    for (const file_util::Entry& e : files) {
      if (e.name == d.file) damaged_table_bytes += e.bytes;
    }
  }
  const uint64_t need = total + log_bytes + damaged_table_bytes + (1 << 20);
  if (const int64_t free_bytes = file_util::FreeBytes(env, parent);
      free_bytes >= 0 && static_cast<uint64_t>(free_bytes) < need) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "Repair: %d bytes free beside '%s', and repairing it needs about %d "
        "(a copy aside of %d bytes, and room for the tables it rebuilds); "
        "nothing was changed",
        free_bytes, path, need, total));
  }

  // 3. The copy aside.
  const std::string stamp =
      absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone());
  HQ_RETURN_IF_ERROR(repair::CopyAside(env, path, files, stamp, &report));
  auto failed = [&report](const absl::Status& s) {
    return WithErrorDetail(
        absl::Status(s.code(), absl::StrCat(s.message(),
                                            "; the database as it was is in ",
                                            report.copied_to)),
        GetErrorDetail(s));
  };

  // 4. Logs cut to a prefix; 5. LevelDB's repair.
  if (absl::Status s = CutAllLogs(env, path, &report.logs); !s.ok()) {
    return failed(s);
  }
  if (absl::Status s =
          repair::ClearLost(env, path, stamp, &lost_before, &report.logs);
      !s.ok()) {
    return failed(s);
  }
  std::unique_ptr<const leveldb::FilterPolicy> filter(
      options.bloom_bits_per_key > 0
          ? leveldb::NewBloomFilterPolicy(options.bloom_bits_per_key)
          : nullptr);
  {
    repair::CaptureLogger logger;
    leveldb::Options lo;
    lo.env = env;
    lo.paranoid_checks = true;  // Verify every block it copies.
    lo.info_log = &logger;
    lo.filter_policy = filter.get();
    const leveldb::Status s = leveldb::RepairDB(path, lo);
    report.leveldb_log = logger.lines();
    if (!s.ok())
      return failed(file_util::FromIo(s, "Repair: LevelDB's repair"));
  }
  if (absl::StatusOr<std::vector<file_util::Entry>> after =
          file_util::ListFiles(env, path);
      after.ok()) {
    for (const file_util::Entry& e : *after) {
      if (e.name.starts_with("lost/") && !lost_before.contains(e.name)) {
        report.moved_to_lost.push_back(e.name);
      }
    }
  }
  env->UnlockFile(lock);  // LevelDB's Open takes it next.
  lock = nullptr;

  // 6, 7. Mend, then verify with hq's own Open, until clean.
  Clock* clock = options.clock ? options.clock : Clock::Default();
  repair::SideDb side(env, absl::StrCat(path, "/lost/hq-records-", stamp));
  Options open_options = options;
  open_options.create_if_missing = false;
  open_options.error_if_exists = false;
  open_options.ttl_sweep_interval = absl::ZeroDuration();
  open_options.recovery = Options::Recovery::kPointInTime;
  for (int round = 0; round < 3; ++round) {
    int64_t changes = 0;
    {
      leveldb::Options lo;
      lo.env = env;
      lo.paranoid_checks = true;
      lo.filter_policy = filter.get();
      lo.write_buffer_size = options.write_buffer_bytes;
      leveldb::DB* raw = nullptr;
      leveldb::Status s = leveldb::DB::Open(lo, path, &raw);
      if (!s.ok()) {
        return failed(
            file_util::FromIo(s, "Repair: opening the repaired database"));
      }
      std::unique_ptr<leveldb::DB> db(raw);
      if (!repair::skip_mending.load()) {
        absl::StatusOr<int64_t> queues =
            repair::RecreateLostQueues(db.get(), clock->Now(), &report);
        if (!queues.ok()) return failed(queues.status());
        absl::StatusOr<int64_t> n =
            repair::MendRecords(db.get(), clock->Now(), &side, &report);
        if (!n.ok()) return failed(n.status());
        changes = *queues + *n;
      }
    }
    DbImpl::ReleaseDirectory(claim);
    claim.clear();
    {
      absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(path, open_options);
      if (!db.ok()) return failed(db.status());
      absl::StatusOr<VerifyReport> v = (*db)->Verify();
      if (!v.ok()) return failed(v.status());
      report.verify = *std::move(v);
      // The counts after.
      Census census;
      leveldb::DB* ldb = static_cast<DbImpl*>(db->get())->leveldb();
      leveldb::ReadOptions ro = CheckedReadOptions();
      ro.fill_cache = false;
      std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(ldb, ro));
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        census.Add(View(it->key()), View(it->value()));
      }
      if (!it->status().ok()) {
        return failed(FromLevelDb(it->status(), "Repair: counting"));
      }
      report.keys_after = census.keys();
      report.messages_after = census.messages();
      report.queues.clear();
      std::map<uint32_t, RepairReport::QueueCount> queues;
      auto name = [](const Census& c, uint32_t id) {
        auto n = c.names().find(id);
        return n != c.names().end() ? n->second : absl::StrCat("queue id ", id);
      };
      for (const auto& [id, n] : bc.per_queue()) {
        queues[id].queue = name(bc, id);
        queues[id].messages_before = n;
      }
      for (const auto& [id, n] : census.per_queue()) {
        if (queues[id].queue.empty() || census.names().contains(id)) {
          queues[id].queue = name(census, id);
        }
        queues[id].messages_after = n;
      }
      for (auto& [id, q] : queues) report.queues.push_back(std::move(q));
    }
    HQ_ASSIGN_OR_RETURN(claim, DbImpl::ClaimDirectory(path, env));
    if (report.verify.ok() || changes == 0) break;
  }
  report.keys_before = bc.keys();
  report.messages_before = bc.messages();
  if (side.used()) report.moved_aside_to = side.dir();
  return report;
}

}  // namespace hq
