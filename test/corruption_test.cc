// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Damaged files, in the shape of LevelDB's db/corruption_test.cc: a Db is
// built with messages in its tables and in its log, closed, damaged one way,
// and opened again. For every kind of damage the test states which call
// fails and how, that no call answers short with OK, and that no file is
// deleted.

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "leveldb/env.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::Storage;
using test::StorageName;
using test::TempDir;
using test::ValueOrDie;

// A Db directory on disk or in the in-memory Env, holding one queue "q"
// with kInTables messages flushed into table files and kInLog more that
// are only in the write-ahead log.
class DamagedDb {
 public:
  static constexpr int kInTables = 3000;
  static constexpr int kInLog = 600;

  explicit DamagedDb(Storage storage) : storage_(storage) {
    if (storage_ == Storage::kMemory) {
      mem_env_.reset(leveldb::NewMemEnv(leveldb::Env::Default()));
      env_ = mem_env_.get();
      path_ = "/hq-mem/db";
    } else {
      env_ = leveldb::Env::Default();
      path_ = dir_.Sub("db");
    }
  }

  Options options() const {
    Options o = test::NoBackgroundSweeps();
    o.env = storage_ == Storage::kMemory ? env_ : nullptr;
    return o;
  }
  const std::string& path() const { return path_; }
  leveldb::Env* env() { return env_; }

  // Writes the messages and closes the Db.
  void Build() {
    auto db = ValueOrDie(Db::Open(path_, options()));
    Queue* q = ValueOrDie(db->CreateQueue("q", QueueOptions{.partitions = 2}));
    for (int i = 0; i < kInTables + kInLog; ++i) {
      if (i == kInTables) REQUIRE(db->CompactAll().ok());
      HQ_REQUIRE_OK(q->Put(Message{.topic = absl::StrCat("t", i % 7),
                                   .payload = Payload(i)})
                        .status());
    }
  }

  static std::string Payload(int i) {
    return absl::StrCat("message-", i, "-", std::string(80, 'x'));
  }

  // The Db's files whose names end with `suffix` ("" for all), sorted.
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

  // The largest file ending with `suffix`.
  std::string Largest(const std::string& suffix) {
    std::string best;
    uint64_t best_size = 0;
    for (const std::string& n : Files(suffix)) {
      if (Size(n) >= best_size) best = n, best_size = Size(n);
    }
    REQUIRE(!best.empty());
    return best;
  }

  // The MANIFEST that CURRENT names.
  std::string Manifest() {
    std::string current = Read("CURRENT");
    REQUIRE(current.ends_with("\n"));
    current.pop_back();
    return current;
  }

  uint64_t Size(const std::string& name) {
    uint64_t size = 0;
    REQUIRE(env_->GetFileSize(path_ + "/" + name, &size).ok());
    return size;
  }
  std::string Read(const std::string& name) {
    std::string data;
    REQUIRE(leveldb::ReadFileToString(env_, path_ + "/" + name, &data).ok());
    return data;
  }
  void Write(const std::string& name, const std::string& data) {
    REQUIRE(leveldb::WriteStringToFile(env_, data, path_ + "/" + name).ok());
  }
  void Remove(const std::string& name) {
    REQUIRE(env_->RemoveFile(path_ + "/" + name).ok());
  }

  // Files LevelDB's own bookkeeping may rewrite or remove at any Open.
  static bool Bookkeeping(const std::string& n) {
    return n == "LOCK" || n == "LOG" || n == "LOG.old";
  }
  // Every other file: what a damaged Db must keep.
  std::set<std::string> Kept() {
    std::set<std::string> out;
    for (const std::string& n : Files()) {
      if (!Bookkeeping(n)) out.insert(n);
    }
    return out;
  }

 private:
  const Storage storage_;
  TempDir dir_;
  std::unique_ptr<leveldb::Env> mem_env_;
  leveldb::Env* env_ = nullptr;
  std::string path_;
};

// Every file of `before` is still there.
void RequireNothingDeleted(const std::set<std::string>& before, DamagedDb& d) {
  const std::set<std::string> after = d.Kept();
  for (const std::string& n : before) {
    INFO("file " << n);
    CHECK(after.count(n) == 1);
  }
}

TEST_CASE("a missing CURRENT: Open refuses with DataLoss and deletes nothing") {
  for (Storage storage : {Storage::kDisk, Storage::kMemory}) {
    DYNAMIC_SECTION(StorageName(storage)) {
      DamagedDb d(storage);
      d.Build();
      d.Remove("CURRENT");
      const std::set<std::string> before = d.Kept();
      for (bool create : {true, false}) {
        Options o = d.options();
        o.create_if_missing = create;
        auto db = Db::Open(d.path(), o);
        INFO(db.status().ToString());
        CHECK(absl::IsDataLoss(db.status()));
        CHECK(absl::StrContains(db.status().message(), "no CURRENT"));
        CHECK(absl::StrContains(db.status().message(), "hq repair"));
        CHECK(absl::StrContains(db.status().message(), "MANIFEST-"));
      }
      RequireNothingDeleted(before, d);
      CHECK(d.Files("CURRENT").empty());
    }
  }
}

// An Env that fails to create CURRENT's temporary file, as a kill between
// LevelDB's two steps of creating a Db would: MANIFEST-000001 is written,
// CURRENT never is.
class NoCurrentEnv : public leveldb::EnvWrapper {
 public:
  explicit NoCurrentEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}
  leveldb::Status NewWritableFile(const std::string& name,
                                  leveldb::WritableFile** result) override {
    if (name.ends_with(".dbtmp")) {
      return leveldb::Status::IOError(name, "killed (test)");
    }
    return target()->NewWritableFile(name, result);
  }
};

TEST_CASE("a creation killed before CURRENT was written is created again") {
  for (Storage storage : {Storage::kDisk, Storage::kMemory}) {
    DYNAMIC_SECTION(StorageName(storage)) {
      DamagedDb d(storage);
      NoCurrentEnv killed(d.env());
      Options o = d.options();
      o.env = &killed;
      CHECK(!Db::Open(d.path(), o).ok());
      REQUIRE(d.Files("MANIFEST-000001").size() == 1);
      REQUIRE(d.Files("CURRENT").empty());

      auto db = ValueOrDie(Db::Open(d.path(), d.options()));
      CHECK(ValueOrDie(db->ListQueues()).empty());
      HQ_REQUIRE_OK(db->CreateQueue("q", QueueOptions{}).status());
    }
  }
}

TEST_CASE("a MANIFEST-000001 that names tables is no unfinished creation") {
  // The same names as a killed creation, but the MANIFEST holds a table:
  // hq refuses rather than let LevelDB write a new one over it.
  for (Storage storage : {Storage::kDisk, Storage::kMemory}) {
    DYNAMIC_SECTION(StorageName(storage)) {
      DamagedDb d(storage);
      d.Build();
      const std::string manifest = d.Read(d.Manifest());
      for (const std::string& n : d.Files()) {
        if (!DamagedDb::Bookkeeping(n)) d.Remove(n);
      }
      d.Write("MANIFEST-000001", manifest);
      auto db = Db::Open(d.path(), d.options());
      INFO(db.status().ToString());
      CHECK(absl::IsDataLoss(db.status()));
      CHECK(d.Read("MANIFEST-000001") == manifest);
    }
  }
}

}  // namespace
}  // namespace hq
