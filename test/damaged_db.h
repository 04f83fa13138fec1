// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A Db directory on disk or in the in-memory Env, and the file operations
// the damage tests (corruption_test, repair_test) apply to it: read, write,
// flip, zero, truncate, remove.

#ifndef HQ_TEST_DAMAGED_DB_H_
#define HQ_TEST_DAMAGED_DB_H_

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "catch2/catch.hpp"
#include "hq/hq.h"
#include "leveldb/env.h"
#include "leveldb/helpers/memenv.h"
#include "lib/engine/log_recovery.h"
#include "test/test_util.h"

namespace hq::test {

class DbDir {
 public:
  explicit DbDir(Storage storage) : storage_(storage) {
    if (storage_ == Storage::kMemory) {
      mem_env_.reset(leveldb::NewMemEnv(leveldb::Env::Default()));
      env_ = mem_env_.get();
      path_ = "/hq-mem/db";
    } else {
      env_ = leveldb::Env::Default();
      path_ = dir_.Sub("db");
    }
  }

  // Options that open the Db here, without background TTL sweeps.
  Options options() const {
    Options o = NoBackgroundSweeps();
    o.env = storage_ == Storage::kMemory ? env_ : nullptr;
    return o;
  }
  const std::string& path() const { return path_; }
  leveldb::Env* env() { return env_; }

  // The directory's entries whose names end with `suffix` ("" for all),
  // sorted; subdirectories (dropped/, lost/) included.
  std::vector<std::string> Files(const std::string& suffix = "") {
    std::vector<std::string> names, out;
    REQUIRE(env_->GetChildren(path_, &names).ok());
    for (const std::string& n : names) {
      if (n == "." || n == "..") continue;
      if (n.ends_with(suffix)) out.push_back(n);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // As Files, but only the files directly in the directory.
  std::vector<std::string> TopFiles(const std::string& suffix = "") {
    std::vector<std::string> out;
    for (const std::string& n : Files(suffix)) {
      if (n.find('/') != std::string::npos) continue;
      if (storage_ == Storage::kDisk &&
          std::filesystem::is_directory(path_ + "/" + n)) {
        continue;
      }
      out.push_back(n);
    }
    return out;
  }

  // The largest file ending with `suffix`.
  std::string Largest(const std::string& suffix) {
    std::string best;
    uint64_t best_size = 0;
    for (const std::string& n : TopFiles(suffix)) {
      if (Size(n) >= best_size) best = n, best_size = Size(n);
    }
    REQUIRE(!best.empty());
    return best;
  }

  // The MANIFEST that CURRENT names.
  std::string Manifest() {
    const std::string name = CurrentManifest(env_, path_);
    REQUIRE(!name.empty());
    return name;
  }

  uint64_t Size(const std::string& name) {
    uint64_t size = 0;
    REQUIRE(env_->GetFileSize(path_ + "/" + name, &size).ok());
    return size;
  }
  bool Exists(const std::string& name) {
    return env_->FileExists(path_ + "/" + name);
  }
  // The file `name` of this directory, or of `dir` if given.
  std::string Read(const std::string& name, const std::string& dir = "") {
    std::string data;
    REQUIRE(leveldb::ReadFileToString(
                env_, (dir.empty() ? path_ : dir) + "/" + name, &data)
                .ok());
    return data;
  }
  void Write(const std::string& name, const std::string& data) {
    REQUIRE(leveldb::WriteStringToFile(env_, data, path_ + "/" + name).ok());
  }
  void Remove(const std::string& name) {
    REQUIRE(env_->RemoveFile(path_ + "/" + name).ok());
  }
  // Applies `f` to `n` bytes of `name` from `offset` (clamped to the file).
  void Modify(const std::string& name, uint64_t offset, size_t n,
              const std::function<char(char)>& f) {
    std::string data = Read(name);
    REQUIRE(offset < data.size());
    for (size_t i = offset; i < data.size() && i < offset + n; ++i) {
      data[i] = f(data[i]);
    }
    Write(name, data);
  }
  void Flip(const std::string& name, uint64_t offset, size_t n = 1) {
    Modify(name, offset, n, [](char c) { return static_cast<char>(c ^ 0x5a); });
  }
  void Zero(const std::string& name, uint64_t offset, size_t n) {
    Modify(name, offset, n, [](char) { return '\0'; });
  }
  void Truncate(const std::string& name, uint64_t size) {
    Write(name, Read(name).substr(0, size));
  }

 private:
  const Storage storage_;
  TempDir dir_;
  std::unique_ptr<leveldb::Env> mem_env_;
  leveldb::Env* env_ = nullptr;
  std::string path_;
};

}  // namespace hq::test

#endif  // HQ_TEST_DAMAGED_DB_H_
