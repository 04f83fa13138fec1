// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Backup: a consistent copy of a live Db, made by the process that has
// it open.
//
// Why it is consistent. LevelDB's state is its MANIFEST (which tables, from
// which log on to replay) plus the logs. Tables are never modified once
// written and logs only appended to; files are deleted only after the
// MANIFEST stopped naming them. So Backup:
//   1. pins the Db's files: while a backup runs, LevelDB's deletions of
//      tables, logs and MANIFESTs are deferred (FilePinEnv,
//      lib/engine/file_pin_env.h, the Env LevelDB is opened with), so every
//      file the copy needs stays;
//   2. reads the MANIFEST up to its last complete edit: a version V whose
//      tables all exist (pinned), and the first log V needs;
//   3. links (or copies) V's tables;
//   4. lists the logs from V's first on and copies them in number order,
//      the last one up to its last complete record. LevelDB starts a new
//      log only after the previous one's last append, so every log but the
//      last is complete; records flushed into tables after step 2 are in
//      these logs too (pinned), so replaying them over V gives the Db as of
//      the end of the last log's copy: a prefix of the writes in commit
//      order, containing every write acknowledged before Backup began;
//   5. writes V's MANIFEST bytes and CURRENT, syncs, unpins.
// RocksDB's Checkpoint does the same with DisableFileDeletions; LevelDB 1.23
// has no such call, hence the Env. The hq tool's LiveCopy
// (tools/live_view.h) copies a Db held by another process the same way but
// cannot pin its files: it retries when the MANIFEST changed under it.

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "lib/admin/inspect.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/file_pin_env.h"
#include "lib/format/log_check.h"
#include "lib/format/manifest.h"
#include "lib/util/file_util.h"
#include "lib/util/progress.h"
#include "lib/util/status_macros.h"

namespace hq {
namespace {

namespace fs = std::filesystem;

// Whether `a` is `b` or lies inside it, after resolving what exists of both.
bool Inside(const std::string& a, const std::string& b, bool real_fs) {
  std::error_code ec;
  fs::path pa = fs::path(a), pb = fs::path(b);
  if (real_fs) {
    pa = fs::weakly_canonical(fs::absolute(pa, ec), ec);
    pb = fs::weakly_canonical(fs::absolute(pb, ec), ec);
  }
  pa = pa.lexically_normal();
  pb = pb.lexically_normal();
  const fs::path rel = pa.lexically_relative(pb);
  return !rel.empty() && *rel.begin() != "..";
}

// Checks `dest` and creates it unless it is an empty directory. Returns
// whether it created it.
absl::StatusOr<bool> PrepareDest(leveldb::Env* env, const std::string& db,
                                 const std::string& dest) {
  if (dest.empty()) {
    return absl::InvalidArgumentError("Backup: the destination path is empty");
  }
  const bool real_fs = file_util::IsDefaultEnv(env);
  if (Inside(dest, db, real_fs)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Backup: the destination '", dest,
                     "' is inside the database directory '", db, "'"));
  }
  if (real_fs) {
    std::error_code ec;
    const fs::file_status st = fs::status(dest, ec);
    if (fs::exists(st)) {
      if (!fs::is_directory(st)) {
        return absl::AlreadyExistsError(absl::StrCat(
            "Backup: the destination '", dest, "' exists and is a file"));
      }
      if (!fs::is_empty(dest, ec) || ec) {
        return absl::AlreadyExistsError(absl::StrCat(
            "Backup: the destination directory '", dest, "' is not empty"));
      }
      return false;
    }
    fs::path parent = fs::absolute(fs::path(dest), ec).lexically_normal();
    if (!parent.has_filename()) parent = parent.parent_path();
    parent = parent.parent_path();
    if (!fs::is_directory(parent, ec)) {
      return absl::NotFoundError(
          absl::StrCat("Backup: the destination's parent directory '",
                       parent.string(), "' does not exist"));
    }
  } else if (file_util::DirExists(env, dest)) {
    return absl::AlreadyExistsError(absl::StrCat(
        "Backup: the destination directory '", dest, "' is not empty"));
  }
  HQ_RETURN_IF_ERROR(file_util::FromIo(
      env->CreateDir(dest), absl::StrCat("Backup: creating '", dest, "'")));
  return true;
}

// The state a backup copies: CURRENT, the MANIFEST it names (cut to its
// intact end) and what that MANIFEST says.
struct SourceState {
  std::string current;
  std::string manifest_name;
  std::string manifest_data;
  manifest::State state;
};

// Reads CURRENT and the MANIFEST it names in `from`.
absl::StatusOr<SourceState> ReadSourceState(leveldb::Env* env,
                                            const std::string& from) {
  SourceState src;
  leveldb::Status s =
      leveldb::ReadFileToString(env, from + "/CURRENT", &src.current);
  if (!s.ok()) return file_util::FromIo(s, "Backup: reading CURRENT");
  std::string_view name;
  if (!manifest::ParseCurrent(src.current, &name)) {
    return absl::DataLossError(
        absl::StrCat("Backup: the database's CURRENT file is damaged"));
  }
  src.manifest_name = std::string(name);
  s = leveldb::ReadFileToString(env, from + "/" + src.manifest_name,
                                &src.manifest_data);
  if (!s.ok()) {
    return file_util::FromIo(
        s, absl::StrCat("Backup: reading ", src.manifest_name));
  }
  std::string error;
  if (!manifest::Read(src.manifest_data, &src.state, &error)) {
    return absl::DataLossError(absl::StrCat(
        "Backup: the database's ", src.manifest_name, " is damaged: ", error));
  }
  src.manifest_data.resize(src.state.intact_end);
  return src;
}

// Links (or copies) into `to` every table `src` names, of `tables` (the
// table files in `from`, by number).
absl::Status LinkTables(leveldb::Env* env, const std::string& from,
                        const std::string& to, const SourceState& src,
                        const std::map<uint64_t, std::string>& tables,
                        BackupReport* report, std::vector<std::string>* created,
                        PhaseProgress* progress) {
  for (const auto& [n, table] : src.state.tables) {
    auto it = tables.find(n);
    if (it == tables.end()) {
      return absl::DataLossError(absl::StrFormat(
          "Backup: table %06d.ldb, which the database's %s names, is missing",
          n, src.manifest_name));
    }
    bool linked = false;
    const std::string dst = to + "/" + it->second;
    absl::StatusOr<uint64_t> bytes =
        file_util::LinkOrCopy(env, from + "/" + it->second, dst, &linked);
    if (!bytes.ok()) {
      return absl::Status(bytes.status().code(),
                          absl::StrCat("Backup: ", bytes.status().message()));
    }
    created->push_back(dst);
    ++report->tables;
    report->table_bytes += *bytes;
    progress->Add(*bytes);
    if (linked) {
      ++report->tables_linked;
    } else {
      report->bytes_copied += *bytes;
    }
  }
  return absl::OkStatus();
}

// Copies into `to` the logs of `logs` that `src` still needs, each up to
// its last complete record.
absl::Status CopyLogs(leveldb::Env* env, const std::string& from,
                      const std::string& to, const SourceState& src,
                      const std::map<uint64_t, std::string>& logs,
                      BackupReport* report, std::vector<std::string>* created,
                      PhaseProgress* progress) {
  for (const auto& [n, name] : logs) {
    if (n < src.state.log_number && n != src.state.prev_log_number) continue;
    std::string data;
    const leveldb::Status s =
        leveldb::ReadFileToString(env, from + "/" + name, &data);
    if (!s.ok()) {
      return file_util::FromIo(s, absl::StrCat("Backup: reading ", name));
    }
    // The log being written ends, at any moment, with a record cut short:
    // the copy ends with the last complete one. A damaged record with
    // intact ones after it is damage in the live Db, not a copy's cut.
    const log_check::LogCheck c = log_check::Check(data);
    if (c.state == log_check::LogCheck::State::kDamaged && c.intact_after > 0) {
      return absl::DataLossError(
          absl::StrCat("Backup: the database's log ", name, " is damaged (",
                       c.damage, " at offset ", c.damage_offset, ")"));
    }
    const std::string dst = to + "/" + name;
    HQ_RETURN_IF_ERROR(file_util::WriteFile(
        env, dst, std::string_view(data).substr(0, c.intact_end)));
    created->push_back(dst);
    ++report->logs;
    report->bytes_copied += c.intact_end;
    progress->Add(data.size());
  }
  return absl::OkStatus();
}

// Copies the files of a consistent state of the Db in `from` (whose
// deletions are pinned) into `to`; records every file it creates in
// *created.
absl::Status CopyState(leveldb::Env* env, const std::string& from,
                       const std::string& to, const std::function<void()>& hook,
                       const ProgressCallback& callback, BackupReport* report,
                       std::vector<std::string>* created) {
  HQ_ASSIGN_OR_RETURN(const SourceState src, ReadSourceState(env, from));
  if (hook) hook();
  std::vector<std::string> children;
  const leveldb::Status s = env->GetChildren(from, &children);
  if (!s.ok()) return file_util::FromIo(s, "Backup: listing the database");
  std::map<uint64_t, std::string> tables, logs;
  for (const std::string& c : children) {
    uint64_t number;
    if (manifest::ParseTableName(c, &number)) tables[number] = c;
    if (manifest::ParseLogName(c, &number)) logs[number] = c;
  }
  // The total: the tables the MANIFEST names, the logs, MANIFEST, CURRENT.
  uint64_t total = src.manifest_data.size() + src.current.size();
  for (const auto& [n, name] : tables) {
    uint64_t bytes = 0;
    if (src.state.tables.contains(n) &&
        env->GetFileSize(from + "/" + name, &bytes).ok()) {
      total += bytes;
    }
  }
  for (const auto& [n, name] : logs) {
    uint64_t bytes = 0;
    if ((n >= src.state.log_number || n == src.state.prev_log_number) &&
        env->GetFileSize(from + "/" + name, &bytes).ok()) {
      total += bytes;
    }
  }
  PhaseProgress progress(callback, "copying", total);
  HQ_RETURN_IF_ERROR(
      LinkTables(env, from, to, src, tables, report, created, &progress));
  HQ_RETURN_IF_ERROR(
      CopyLogs(env, from, to, src, logs, report, created, &progress));
  report->as_of = absl::Now();

  const std::string manifest_dst = to + "/" + src.manifest_name;
  HQ_RETURN_IF_ERROR(
      file_util::WriteFile(env, manifest_dst, src.manifest_data));
  created->push_back(manifest_dst);
  HQ_RETURN_IF_ERROR(file_util::SyncDir(env, to));
  // CURRENT last: until it exists the directory is not a Db (hq's Open
  // refuses tables without CURRENT).
  const std::string current_dst = to + "/CURRENT";
  HQ_RETURN_IF_ERROR(file_util::WriteFile(env, current_dst, src.current));
  created->push_back(current_dst);
  report->bytes_copied += src.manifest_data.size() + src.current.size();
  HQ_RETURN_IF_ERROR(file_util::SyncDir(env, to));
  progress.Finish();
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BackupReport> BackupDb(DbImpl* db, const std::string& dest,
                                      const ProgressCallback& progress) {
  DbImpl::OpScope op(db);
  HQ_RETURN_IF_ERROR(op.status());
  const absl::Time start = absl::Now();
  leveldb::Env* env = db->BaseEnv();
  HQ_ASSIGN_OR_RETURN(const bool created_dest,
                      PrepareDest(env, db->path(), dest));
  BackupReport report;
  report.path = dest;
  std::vector<std::string> created;
  db->pin_env()->Pin();
  absl::Status s = CopyState(env, db->path(), dest, db->backup_hook(), progress,
                             &report, &created);
  db->pin_env()->Unpin();
  if (!s.ok()) {
    // Only what this call made.
    for (const std::string& f : created) env->RemoveFile(f);
    if (created_dest) env->RemoveDir(dest);
    return s;
  }
  report.took = absl::Now() - start;
  return report;
}

}  // namespace hq
