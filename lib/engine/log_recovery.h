// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// What hq does to a Db's directory before LevelDB opens it, so that a
// damaged Db is never opened short or destroyed:
//   - CheckNotOrphaned: a directory with LevelDB's files but no CURRENT is
//     never taken for an empty one (LevelDB would create a new Db there
//     and delete the old tables);
//   - RecoverLogs: point-in-time recovery of the write-ahead logs. LevelDB
//     skips a damaged log record and replays the ones after it (a hole);
//     hq cuts the logs at the last intact record before the damage first.

#ifndef HQ_LIB_ENGINE_LOG_RECOVERY_H_
#define HQ_LIB_ENGINE_LOG_RECOVERY_H_

#include <string>

#include "absl/status/status.h"
#include "hq/db.h"
#include "hq/options.h"
#include "leveldb/env.h"

namespace hq {

// The folder, inside a Db's directory, where recovery keeps what it drops,
// and the infixes of its file names there: "<log>.hole-at-<offset>" (intact
// records were dropped after the damage), "<log>.torn-at-<offset>" (only
// a torn tail), or a later log under its own name.
inline constexpr char kDroppedDir[] = "dropped";
inline constexpr char kHoleAt[] = ".hole-at-";
inline constexpr char kTornAt[] = ".torn-at-";

// The name of the MANIFEST that `dir`'s CURRENT names ("MANIFEST-000005"),
// or "" if CURRENT cannot be read or names no file in `dir`.
std::string CurrentManifest(leveldb::Env* env, const std::string& dir);

// OK if `dir` holds a CURRENT file, or none of LevelDB's files, or only
// the MANIFEST-000001 of a creation killed before it wrote CURRENT (no
// table, no log, no sequence number: LevelDB's next creation rewrites it);
// else DataLoss, naming what is there and what to run.
absl::Status CheckNotOrphaned(leveldb::Env* env, const std::string& dir);

// Checks every log LevelDB will replay (per the MANIFEST that CURRENT
// names) in number order. At the first damaged record: under
// kPointInTime, cuts that log at the end of the last intact record before
// the damage and moves every later log aside, keeping all dropped bytes in
// dir/dropped/ and listing them in *report; under kAbsoluteConsistency,
// if an intact record would be dropped, changes nothing and returns
// DataLoss (a torn tail, with nothing intact after the damage in the last
// log, is cut in both modes). A record cut short at the end of
// the last log is left alone (LevelDB ignores it). If CURRENT or the
// MANIFEST cannot be read, does nothing (LevelDB's Open reports it).
// Errors: DataLoss (above), Internal (a file could not be read or written).
absl::Status RecoverLogs(leveldb::Env* env, const std::string& dir,
                         Options::Recovery mode, RecoveryReport* report);

// Db::Repair's cut: RecoverLogs' kPointInTime cut applied, in number order,
// to the logs the MANIFEST still needs if it can be read, else to every log
// in `dir` (Repair converts them all into tables). A log the MANIFEST no
// longer needs is one LevelDB removed after flushing it, which a power cut
// can bring back unsynced and cut short (lib/engine/log_sync_env.h): it is
// never taken as a hole before the later logs. REQUIRES: the caller holds
// the directory's LOCK.
absl::Status CutAllLogs(leveldb::Env* env, const std::string& dir,
                        RecoveryReport* report);

}  // namespace hq

#endif  // HQ_LIB_ENGINE_LOG_RECOVERY_H_
