// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The info log (LevelDB's LOG file) of a Db, given to LevelDB as
// Options::info_log, for two jobs LevelDB's own LOG does not do:
//   - An Open that is refused changes no file. LevelDB renames LOG to
//     LOG.old as it starts an Open, before it knows whether the Open
//     succeeds; this log keeps every line in memory until Commit(), which
//     the Db calls once LevelDB's Open succeeded, and only then rotates LOG
//     to LOG.old and writes them to a new LOG. Dropped unwritten if the Open
//     fails.
//   - A background compaction that fails shows in no call's Status: LevelDB
//     logs it ("Compaction error: ...", or a level-0 table written with an
//     error) and keeps it as its background error, which only later writes
//     return. The observer given at construction sees each such line, on
//     LevelDB's background thread, while LevelDB holds its own mutex: it
//     must not call into LevelDB nor wait on a lock held around such calls.

#ifndef HQ_LIB_ENGINE_INFO_LOG_H_
#define HQ_LIB_ENGINE_INFO_LOG_H_

#include <cstdarg>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "leveldb/env.h"
#include "lib/util/sync.h"

namespace hq {

class InfoLog final : public leveldb::Logger {
 public:
  // `on_background_error` gets LevelDB's status text of each failed
  // background compaction ("Corruption: ...").
  InfoLog(leveldb::Env* env, std::string dir,
          std::function<void(std::string_view)> on_background_error);
  ~InfoLog() override;

  // Rotates dir/LOG to dir/LOG.old, opens a new dir/LOG through the Env
  // (the in-memory Env's logger writes nothing) and writes the lines logged
  // so far to it; later lines go there directly. Best effort, as LevelDB's
  // own LOG: a file that cannot be written loses lines, never fails a call.
  void Commit();

  void Logv(const char* format, std::va_list ap) override;

  // The status text of a failed background compaction in `line`, a line
  // LevelDB logged, or "" if it reports none.
  static std::string BackgroundError(std::string_view line);

 private:
  leveldb::Env* const env_;
  const std::string dir_;
  const std::function<void(std::string_view)> on_background_error_;
  Mutex mu_;
  bool committed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> pending_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<leveldb::Logger> file_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_INFO_LOG_H_
