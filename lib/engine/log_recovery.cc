// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/log_recovery.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "lib/format/log_check.h"
#include "lib/format/manifest.h"
#include "lib/util/file_util.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

// A failed file operation (`what` names it). Db::Open and Db::Repair
// report these as Internal (hq/db.h), not file_util's finer codes.
absl::Status Io(const leveldb::Status& s, std::string_view what) {
  return file_util::AsInternal(file_util::FromIo(s, what));
}

// Writes `data` to a new file `path`, synced; errors as Io's.
absl::Status WriteSynced(leveldb::Env* env, const std::string& path,
                         std::string_view data) {
  return file_util::AsInternal(file_util::WriteFile(env, path, data));
}

struct LogFile {
  uint64_t number;
  std::string name;
};

// The logs LevelDB will replay, in number order; false if CURRENT or the
// MANIFEST it names cannot be read.
bool LogsToReplay(leveldb::Env* env, const std::string& dir,
                  std::vector<LogFile>* logs) {
  const std::string name = CurrentManifest(env, dir);
  std::string manifest;
  if (name.empty() ||
      !leveldb::ReadFileToString(env, dir + "/" + name, &manifest).ok()) {
    return false;
  }
  manifest::State numbers;
  std::string error;
  if (!manifest::Read(manifest, &numbers, &error)) return false;
  std::vector<std::string> children;
  if (!env->GetChildren(dir, &children).ok()) return false;
  for (const std::string& child : children) {
    uint64_t n;
    if (manifest::ParseLogName(child, &n) &&
        (n >= numbers.log_number ||
         (numbers.prev_log_number != 0 && n == numbers.prev_log_number))) {
      logs->push_back({n, child});
    }
  }
  std::sort(logs->begin(), logs->end(), [](const LogFile& a, const LogFile& b) {
    return a.number < b.number;
  });
  return true;
}

std::string Describe(const RecoveryReport::Dropped& d) {
  return absl::StrCat(d.file, " from offset ", d.offset, " (", d.bytes,
                      " bytes, ", d.records, " intact records): ", d.damage);
}

// True if `manifests` is the one MANIFEST LevelDB writes before CURRENT
// when it creates a Db (MANIFEST-000001: no table, no sequence number), so
// the creation was cut short and the directory never held a message. A
// kill can leave that MANIFEST empty or with its one edit cut short, and a
// power cut zero-filled: those are unfinished creations too. Any other
// content must read as edits that name no table.
bool IsUnfinishedCreation(leveldb::Env* env, const std::string& dir,
                          const std::vector<std::string>& manifests) {
  if (manifests.size() != 1 || manifests[0] != "MANIFEST-000001") {
    return false;
  }
  std::string data;
  if (!leveldb::ReadFileToString(env, dir + "/" + manifests[0], &data).ok()) {
    return false;
  }
  if (data.find_first_not_of('\0') == std::string::npos) return true;
  // LevelDB writes the new Db's edit as one FULL record (type 1) whose
  // first field is the comparator (tag 1); cut short, that is all there is
  // to recognize it by.
  const log_check::LogCheck c = log_check::Check(data);
  if (c.state == log_check::LogCheck::State::kShortTail && c.records == 0) {
    return data.size() > log_check::kHeaderSize && data[6] == 1 &&
           data[log_check::kHeaderSize] == 1;
  }
  manifest::State m;
  std::string error;
  return manifest::Read(data, &m, &error) && m.tables.empty() &&
         m.last_sequence == 0;
}

}  // namespace

std::string CurrentManifest(leveldb::Env* env, const std::string& dir) {
  std::string current;
  if (!leveldb::ReadFileToString(env, dir + "/CURRENT", &current).ok()) {
    return "";
  }
  std::string name(absl::StripTrailingAsciiWhitespace(Av(current)));
  return name.find('/') == std::string::npos ? name : "";
}

absl::Status CheckNotOrphaned(leveldb::Env* env, const std::string& dir) {
  if (env->FileExists(dir + "/CURRENT")) return absl::OkStatus();
  std::vector<std::string> children;
  if (!env->GetChildren(dir, &children).ok()) return absl::OkStatus();
  int tables = 0, logs = 0;
  std::vector<std::string> manifests;
  for (const std::string& c : children) {
    uint64_t n;
    if (c.starts_with("MANIFEST-")) manifests.push_back(c);
    if (c.ends_with(".ldb") || c.ends_with(".sst")) ++tables;
    if (manifest::ParseLogName(c, &n)) ++logs;
  }
  if (tables == 0 && logs == 0 &&
      (manifests.empty() || IsUnfinishedCreation(env, dir, manifests))) {
    return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrCat(
      "hq database directory '", dir, "' has no CURRENT file but holds ",
      manifests.empty() ? "no MANIFEST" : absl::StrJoin(manifests, ", "), ", ",
      tables, " table files and ", logs,
      " logs: hq neither opens nor creates a Db there (that would lose "
      "them); run `hq repair ",
      dir, "` (Db::Repair) to rebuild it"));
}

namespace {

absl::Status CutLocked(leveldb::Env* env, const std::string& dir,
                       const std::vector<LogFile>& logs, Options::Recovery mode,
                       RecoveryReport* report) {
  for (size_t i = 0; i < logs.size(); ++i) {
    const std::string path = dir + "/" + logs[i].name;
    std::string data;
    leveldb::Status s = leveldb::ReadFileToString(env, path, &data);
    if (!s.ok()) return Io(s, absl::StrCat("reading ", path));
    const log_check::LogCheck c = log_check::Check(data);
    const bool short_tail = c.state == log_check::LogCheck::State::kShortTail;
    if (c.state != log_check::LogCheck::State::kDamaged && !short_tail) {
      continue;
    }
    // The later logs, and whether any of them holds a record.
    std::vector<RecoveryReport::Dropped> later;
    int64_t later_records = 0;
    for (size_t j = i + 1; j < logs.size(); ++j) {
      std::string bytes;
      s = leveldb::ReadFileToString(env, dir + "/" + logs[j].name, &bytes);
      if (!s.ok()) return Io(s, absl::StrCat("reading ", logs[j].name));
      RecoveryReport::Dropped l;
      l.file = logs[j].name;
      l.bytes = bytes.size();
      l.damage = "after a damaged earlier log";
      const log_check::LogCheck lc = log_check::Check(bytes);
      l.records = lc.records + lc.intact_after;
      l.saved_as = absl::StrCat(kDroppedDir, "/", l.file);
      later_records += l.records;
      later.push_back(l);
    }
    // A log cut short is what a writer killed mid-record leaves in the last
    // log, and LevelDB ignores it. Before a later log that holds records it
    // is a power cut's loss of the end of a log that LevelDB had closed
    // before that log's sync was done: replaying the later log would leave
    // a hole.
    if (short_tail && later_records == 0) continue;

    RecoveryReport::Dropped d;
    d.file = logs[i].name;
    d.offset = c.intact_end;
    d.bytes = data.size() - c.intact_end;
    d.damage = short_tail
                   ? absl::StrCat("a record cut short at offset ", c.intact_end,
                                  ", before a later log")
                   : absl::StrCat(c.damage, " at offset ", c.damage_offset);
    d.records = c.intact_after;
    // Nothing intact after the damage, here or in a later log: the
    // unwritten tail of a crash or a power cut (also when a crash during
    // an earlier recovery left an empty later log).
    d.torn_tail = c.intact_after == 0 && later_records == 0;
    d.saved_as = absl::StrCat(kDroppedDir, "/", d.file,
                              d.torn_tail ? kTornAt : kHoleAt, d.offset);
    std::vector<RecoveryReport::Dropped> dropped = {d};
    for (RecoveryReport::Dropped& l : later) dropped.push_back(std::move(l));
    if (mode == Options::Recovery::kAbsoluteConsistency && !d.torn_tail) {
      std::vector<std::string> lines;
      for (const auto& x : dropped) lines.push_back(Describe(x));
      return absl::DataLossError(absl::StrCat(
          "hq database '", dir, "': a write-ahead log is damaged; ",
          absl::StrJoin(lines, "; "),
          ". Options::recovery is kAbsoluteConsistency, so nothing was "
          "changed; open with kPointInTime to recover to the last intact "
          "record before the damage (dropped bytes are kept in ",
          kDroppedDir, "/)"));
    }
    // Keep first, then cut: a crash in between repeats the same steps.
    env->CreateDir(dir + "/" + kDroppedDir);  // May exist already.
    HQ_RETURN_IF_ERROR(WriteSynced(env, dir + "/" + d.saved_as,
                                   std::string_view(data).substr(d.offset)));
    const std::string tmp = path + ".hq-cut";
    HQ_RETURN_IF_ERROR(
        WriteSynced(env, tmp, std::string_view(data).substr(0, d.offset)));
    s = env->RenameFile(tmp, path);
    if (!s.ok()) return Io(s, absl::StrCat("replacing ", path));
    for (size_t j = 1; j < dropped.size(); ++j) {
      s = env->RenameFile(dir + "/" + dropped[j].file,
                          dir + "/" + dropped[j].saved_as);
      if (!s.ok()) return Io(s, absl::StrCat("moving ", dropped[j].file));
    }
    for (auto& x : dropped) report->dropped.push_back(std::move(x));
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

absl::Status RecoverLocked(leveldb::Env* env, const std::string& dir,
                           Options::Recovery mode, RecoveryReport* report) {
  std::vector<LogFile> logs;
  if (!LogsToReplay(env, dir, &logs)) return absl::OkStatus();
  return CutLocked(env, dir, logs, mode, report);
}

}  // namespace

absl::Status CutAllLogs(leveldb::Env* env, const std::string& dir,
                        RecoveryReport* report) {
  std::vector<LogFile> needed;
  if (LogsToReplay(env, dir, &needed)) {
    return CutLocked(env, dir, needed, Options::Recovery::kPointInTime, report);
  }
  std::vector<std::string> children;
  leveldb::Status s = env->GetChildren(dir, &children);
  if (!s.ok()) return Io(s, absl::StrCat("listing ", dir));
  std::vector<LogFile> logs;
  for (const std::string& child : children) {
    uint64_t n;
    if (manifest::ParseLogName(child, &n)) logs.push_back({n, child});
  }
  std::sort(logs.begin(), logs.end(), [](const LogFile& a, const LogFile& b) {
    return a.number < b.number;
  });
  return CutLocked(env, dir, logs, Options::Recovery::kPointInTime, report);
}

absl::Status RecoverLogs(leveldb::Env* env, const std::string& dir,
                         Options::Recovery mode, RecoveryReport* report) {
  if (!env->FileExists(dir + "/CURRENT")) return absl::OkStatus();
  // Under LevelDB's own lock, so that a Db open in another process is never
  // touched. Released before LevelDB's Open takes it again: a process that
  // opens the Db in between only makes that Open fail as "in use".
  leveldb::FileLock* lock = nullptr;
  leveldb::Status s = env->LockFile(dir + "/LOCK", &lock);
  if (!s.ok()) return LockFileError(s, dir);
  absl::Status result = RecoverLocked(env, dir, mode, report);
  env->UnlockFile(lock);
  return result;
}

}  // namespace hq
