// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/file_pin_env.h"

#include <string_view>

#include "lib/format/manifest.h"

namespace hq {
namespace {

std::string_view BaseName(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

}  // namespace

leveldb::Status FilePinEnv::RemoveFile(const std::string& name) {
  const std::string_view base = BaseName(name);
  uint64_t number;
  if (manifest::ParseTableName(base, &number) ||
      manifest::ParseLogName(base, &number) ||
      manifest::ParseManifestName(base, &number)) {
    MutexLock l(&mu_);
    if (pins_ > 0) {
      deferred_.insert(name);
      return leveldb::Status::OK();
    }
  }
  return target()->RemoveFile(name);
}

void FilePinEnv::Pin() {
  MutexLock l(&mu_);
  ++pins_;
}

void FilePinEnv::Unpin() {
  absl::flat_hash_set<std::string> remove;
  {
    MutexLock l(&mu_);
    if (--pins_ > 0) return;
    remove.swap(deferred_);
  }
  for (const std::string& name : remove) target()->RemoveFile(name);
}

size_t FilePinEnv::TEST_Deferred() {
  MutexLock l(&mu_);
  return deferred_.size();
}

}  // namespace hq
