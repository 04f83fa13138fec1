// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The Env between LevelDB and the rest of hq's Envs that lets Db::Backup
// (lib/admin/backup.h) hold LevelDB's file deletions back while it copies.

#ifndef HQ_LIB_ENGINE_FILE_PIN_ENV_H_
#define HQ_LIB_ENGINE_FILE_PIN_ENV_H_

#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "leveldb/env.h"
#include "lib/util/sync.h"

namespace hq {

// A leveldb::Env wrapper that, while pinned, defers the removal of
// LevelDB's tables, logs and MANIFESTs: RemoveFile succeeds and the file
// stays until the last pin is released, when it is removed. LevelDB never
// reuses a file number within a process, so a deferred name is not
// created again meanwhile. Thread-safe.
class FilePinEnv final : public leveldb::EnvWrapper {
 public:
  explicit FilePinEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}

  leveldb::Status RemoveFile(const std::string& name) override;

  void Pin();
  // Removes the deferred files when the last pin goes (errors ignored, as
  // LevelDB ignores them: the next Open's cleanup retries).
  void Unpin();

  // Files whose removal is deferred now.
  size_t TEST_Deferred();

 private:
  Mutex mu_;
  int pins_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_set<std::string> deferred_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_FILE_PIN_ENV_H_
