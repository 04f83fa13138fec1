// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// FaultEnv: a leveldb::Env wrapper for fault-injection tests. It wraps any
// Env (the in-memory Env of leveldb/helpers/memenv.h, or Env::Default() on a
// real directory) and, per kind of LevelDB file, can
//   - fail appends (IOError), the next n of them or from now on;
//   - fail syncs, likewise;
//   - run out of space: once a byte budget is used up, an append writes the
//     bytes that still fit and fails like ENOSPC ("No space left on
//     device"), as a full disk does;
//   - simulate a power cut: every file written through it loses what was
//     not synced, and files whose directory entry never became durable
//     disappear.
// It counts every fault it injects, per kind, in the Env and for the whole
// process (tests report the totals).
//
// Crash model (that of LevelDB's db/fault_injection_test.cc, written anew):
//   - an Append is durable once a later Sync of that file returned OK;
//   - a new file's directory entry is durable once the file itself was
//     synced, or its directory was: LevelDB's POSIX Env syncs the directory
//     when it syncs a MANIFEST file, and so does this Env (also on top of
//     the in-memory Env, which has no directories to sync);
//   - RemoveFile and RenameFile are durable at once (a rename carries the
//     source's durability to the target); after PowerCut() they do nothing
//     (and return OK), since a dead machine changes nothing on disk;
//   - files this Env did not write are durable as they are.
// With Options::strict_directories, syncing a file does not make its own
// directory entry durable: only a directory sync (a MANIFEST sync) does,
// as POSIX specifies. LevelDB 1.23 does not sync the directory after
// creating a log file or renaming CURRENT, so this mode can lose them.
//
// Use: Options::env = &fault_env. For a power cut: PowerCut() (from then on
// nothing becomes durable, while the Db runs on), destroy the Db (its clean
// close writes nothing durable then), SimulateCrash(), reopen on the same
// FaultEnv.
//
// Thread safety: every method may be called from any thread (LevelDB
// writes tables on its own thread).

#ifndef HQ_TEST_FAULT_ENV_H_
#define HQ_TEST_FAULT_ENV_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "leveldb/env.h"
#include "leveldb/status.h"

namespace hq::test {

// Kinds of LevelDB files, as bits to combine.
enum FileKind : uint32_t {
  kLogFile = 1,       // NNNNNN.log: the write-ahead log.
  kTableFile = 2,     // NNNNNN.ldb (or .sst): tables.
  kManifestFile = 4,  // MANIFEST-NNNNNN.
  kCurrentFile = 8,   // CURRENT, and NNNNNN.dbtmp that becomes it.
  kOtherFile = 16,    // Anything else.
  kAllFiles = 31,
};

// The kind of the file at `path`, by LevelDB's file names.
FileKind FileKindOf(std::string_view path);

// What FaultEnv counts.
enum class Fault {
  kWrite,    // An append failed (FailWrites).
  kSync,     // A sync failed (FailSyncs).
  kNoSpace,  // An append ran out of space (LimitSpace).
  kCrash,    // SimulateCrash.
};
inline constexpr int kFaultKinds = 4;
const char* FaultName(Fault f);

class FaultEnv : public leveldb::EnvWrapper {
 public:
  struct Options {
    // See "strict_directories" at the top of this file. Default: false.
    bool strict_directories = false;
  };
  // What one SimulateCrash did.
  struct CrashStats {
    int files_removed = 0;    // Entries never made durable.
    int files_truncated = 0;  // Cut back to their synced size.
    int64_t bytes_dropped = 0;
    int pages_lost = 0;  // Pages zeroed by Loss::kMiddlePageOfLogs.
  };
  // What a power cut loses of a file's unsynced bytes.
  enum class Loss {
    // All of them: the file is cut back to its synced size.
    kUnsyncedTail,
    // In a log with at least three unsynced 4 KiB pages, one page in the
    // middle of them only (zeroed, as a disk leaves a page it never wrote
    // while it wrote the later ones out of order); the pages after it
    // survive, so the log has a hole. Other files lose their whole
    // unsynced tail.
    kMiddlePageOfLogs,
  };

  // `times` of FailWrites / FailSyncs: fail from now on.
  static constexpr int kForever = -1;

  // `base` is not owned and must outlive this Env.
  explicit FaultEnv(leveldb::Env* base) : FaultEnv(base, Options()) {}
  FaultEnv(leveldb::Env* base, Options options);
  ~FaultEnv() override;

  // ---- Faults. Each replaces the earlier setting of its kind.

  // The next `times` appends (kForever: every append) to files of `kinds`
  // fail with an IOError and write nothing.
  void FailWrites(uint32_t kinds, int times = 1);
  // The next `times` syncs (kForever: every sync) of files of `kinds` fail
  // with an IOError; the data stays unsynced.
  void FailSyncs(uint32_t kinds, int times = 1);
  // Appends to files of `kinds` may write `bytes` more bytes in total; the
  // append that crosses the budget writes what fits and fails with an
  // IOError saying "No space left on device"; later ones write nothing and
  // fail likewise.
  void LimitSpace(int64_t bytes, uint32_t kinds = kAllFiles);
  // Space left under LimitSpace (-1: unlimited).
  int64_t space_left() const;
  // Ends every fault above (not a power cut).
  void ClearFaults();

  // ---- Power cuts.

  // From now on nothing becomes durable: syncs return OK without effect,
  // new files' entries stay volatile, removes and renames do nothing.
  // Appends still happen, so the Db runs on (until the test destroys it)
  // as if the power failed under it.
  void PowerCut();
  // The power cut takes effect: every file written through this Env is cut
  // back to its synced size, and files whose directory entry is not durable
  // are removed. Implies PowerCut() if not called. Afterwards the Env works
  // normally again (faults set before stay set).
  // REQUIRES: no Db is open on this Env (destroy it first).
  leveldb::Status SimulateCrash(CrashStats* stats = nullptr,
                                Loss loss = Loss::kUnsyncedTail);

  // ---- Inspection.

  // A file written through this Env, as it stands.
  struct FileInfo {
    std::string name;
    FileKind kind = kOtherFile;
    int64_t size = 0;    // Bytes appended.
    int64_t synced = 0;  // Of which durable.
    bool entry_durable = false;
  };
  // Every file written through this Env and not removed, by name.
  std::vector<FileInfo> Files() const;

  // ---- Counters.

  // Faults of kind `f` injected by this Env.
  int64_t injected(Fault f) const;
  // Faults of kind `f` injected by every FaultEnv of this process.
  static int64_t TotalInjected(Fault f);
  // Bytes appended (and accepted) to files of `kinds` since construction.
  int64_t bytes_written(uint32_t kinds = kAllFiles) const;

  // ---- leveldb::Env.
  leveldb::Status NewWritableFile(const std::string& name,
                                  leveldb::WritableFile** result) override;
  leveldb::Status NewAppendableFile(const std::string& name,
                                    leveldb::WritableFile** result) override;
  leveldb::Status RemoveFile(const std::string& name) override;
  leveldb::Status RenameFile(const std::string& from,
                             const std::string& to) override;

 private:
  class File;
  struct FileState {
    std::string dir;
    FileKind kind = kOtherFile;
    int64_t size = 0;    // Bytes appended.
    int64_t synced = 0;  // Bytes durable.
    bool entry_durable = false;
  };
  struct Rule {
    uint32_t kinds = 0;
    int times = 0;  // 0: off; kForever: always.
  };

  // REQUIRES: mu_ held.
  bool Take(Rule* rule, FileKind kind);
  void Count(Fault f);
  // The File's hooks. Take mu_.
  leveldb::Status OnAppend(const std::string& name, FileState* st,
                           leveldb::WritableFile* f,
                           const leveldb::Slice& data);
  leveldb::Status OnSync(const std::string& name, FileState* st,
                         leveldb::WritableFile* f);
  // Rewrites `name` with its first `size` bytes, through the base Env.
  leveldb::Status Truncate(const std::string& name, int64_t size);
  // Rewrites `name` with the page of `page_size` bytes at `offset` zeroed.
  leveldb::Status ZeroPage(const std::string& name, int64_t offset,
                           int64_t page_size);
  // Reads the first `size` bytes of `name` (fewer if it is shorter).
  leveldb::Status ReadPrefix(const std::string& name, int64_t size,
                             std::string* data);

  const Options options_;

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<FileState>> files_;  // Guarded.
  Rule fail_writes_, fail_syncs_;                            // Guarded.
  int64_t space_left_ = -1;                                  // Guarded.
  uint32_t space_kinds_ = kAllFiles;                         // Guarded.
  bool powered_off_ = false;                                 // Guarded.
  std::array<int64_t, 5> bytes_by_kind_{};                   // Guarded.
  std::array<std::atomic<int64_t>, kFaultKinds> injected_{};
};

}  // namespace hq::test

#endif  // HQ_TEST_FAULT_ENV_H_
