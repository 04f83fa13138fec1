// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The fault-injecting Env (test/fault_env.h) itself, on the in-memory Env
// and on a real directory: the fault tests are only as good as it is.

#include "test/fault_env.h"

#include <memory>
#include <string>

#include "catch2/catch.hpp"
#include "leveldb/env.h"
#include "leveldb/helpers/memenv.h"
#include "test/test_util.h"

namespace hq::test {
namespace {

// A base Env and a directory on it.
struct Base {
  explicit Base(Storage storage) {
    if (storage == Storage::kMemory) {
      mem.reset(leveldb::NewMemEnv(leveldb::Env::Default()));
      env = mem.get();
      dir = "/fault-env-test";
      REQUIRE(env->CreateDir(dir).ok());
    } else {
      env = leveldb::Env::Default();
      dir = tmp.path();
    }
  }
  std::string Path(const std::string& name) const { return dir + "/" + name; }

  TempDir tmp;
  std::unique_ptr<leveldb::Env> mem;
  leveldb::Env* env = nullptr;
  std::string dir;
};

std::unique_ptr<leveldb::WritableFile> Create(leveldb::Env* env,
                                              const std::string& path) {
  leveldb::WritableFile* f = nullptr;
  const leveldb::Status s = env->NewWritableFile(path, &f);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return std::unique_ptr<leveldb::WritableFile>(f);
}

// The contents of `path`, or "<missing>".
std::string Contents(leveldb::Env* env, const std::string& path) {
  if (!env->FileExists(path)) return "<missing>";
  std::string data;
  const leveldb::Status s = leveldb::ReadFileToString(env, path, &data);
  INFO(s.ToString());
  REQUIRE(s.ok());
  return data;
}

TEST_CASE("FaultEnv: file kinds follow LevelDB's names") {
  CHECK(FileKindOf("/d/000012.log") == kLogFile);
  CHECK(FileKindOf("/d/000012.ldb") == kTableFile);
  CHECK(FileKindOf("/d/000012.sst") == kTableFile);
  CHECK(FileKindOf("/d/MANIFEST-000003") == kManifestFile);
  CHECK(FileKindOf("/d/CURRENT") == kCurrentFile);
  CHECK(FileKindOf("/d/000003.dbtmp") == kCurrentFile);
  CHECK(FileKindOf("/d/LOCK") == kOtherFile);
  CHECK(FileKindOf("000012.log") == kLogFile);
}

TEST_CASE("FaultEnv: a crash keeps synced bytes and durable entries only") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  INFO(StorageName(storage));
  Base base(storage);
  FaultEnv env(base.env);

  // Synced, then more appended: cut back to the synced part.
  auto a = Create(&env, base.Path("000001.log"));
  REQUIRE(a->Append("synced").ok());
  REQUIRE(a->Sync().ok());
  REQUIRE(a->Append("+lost").ok());
  REQUIRE(a->Close().ok());
  // Never synced, entry never durable: removed.
  auto b = Create(&env, base.Path("000002.ldb"));
  REQUIRE(b->Append("never synced").ok());
  REQUIRE(b->Close().ok());
  // Written before this Env saw it: kept as it is.
  {
    auto c = Create(base.env, base.Path("old.txt"));
    REQUIRE(c->Append("outside").ok());
    REQUIRE(c->Close().ok());
  }
  // Synced, then renamed (as LevelDB makes CURRENT): kept under the new name.
  auto d = Create(&env, base.Path("000003.dbtmp"));
  REQUIRE(d->Append("MANIFEST-000004\n").ok());
  REQUIRE(d->Sync().ok());
  REQUIRE(d->Close().ok());
  REQUIRE(env.RenameFile(base.Path("000003.dbtmp"), base.Path("CURRENT")).ok());

  FaultEnv::CrashStats stats;
  REQUIRE(env.SimulateCrash(&stats).ok());
  CHECK(Contents(base.env, base.Path("000001.log")) == "synced");
  CHECK(Contents(base.env, base.Path("000002.ldb")) == "<missing>");
  CHECK(Contents(base.env, base.Path("old.txt")) == "outside");
  CHECK(Contents(base.env, base.Path("CURRENT")) == "MANIFEST-000004\n");
  CHECK(stats.files_removed == 1);
  CHECK(stats.files_truncated == 1);
  CHECK(stats.bytes_dropped == 5 + 12);
  CHECK(env.injected(Fault::kCrash) == 1);
}

TEST_CASE("FaultEnv: a MANIFEST sync makes the directory's entries durable") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  const bool strict = GENERATE(false, true);
  INFO(StorageName(storage) << (strict ? " strict" : ""));
  Base base(storage);
  FaultEnv env(base.env, {.strict_directories = strict});

  auto log = Create(&env, base.Path("000005.log"));
  REQUIRE(log->Append("unsynced").ok());
  auto synced_log = Create(&env, base.Path("000006.log"));
  REQUIRE(synced_log->Append("synced").ok());
  REQUIRE(synced_log->Sync().ok());
  auto manifest = Create(&env, base.Path("MANIFEST-000007"));
  REQUIRE(manifest->Append("edit").ok());
  REQUIRE(manifest->Sync().ok());
  // Created after the directory sync and synced itself.
  auto late = Create(&env, base.Path("000008.log"));
  REQUIRE(late->Append("late").ok());
  REQUIRE(late->Sync().ok());
  for (auto* f : {log.get(), synced_log.get(), manifest.get(), late.get()}) {
    REQUIRE(f->Close().ok());
  }
  REQUIRE(env.SimulateCrash().ok());
  // The entry survives (the directory was synced), the data does not.
  CHECK(Contents(base.env, base.Path("000005.log")) == "");
  CHECK(Contents(base.env, base.Path("000006.log")) == "synced");
  CHECK(Contents(base.env, base.Path("MANIFEST-000007")) == "edit");
  // A synced file in an unsynced directory: kept unless strict.
  CHECK(Contents(base.env, base.Path("000008.log")) ==
        (strict ? "<missing>" : "late"));
}

TEST_CASE("FaultEnv: after PowerCut nothing becomes durable") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  INFO(StorageName(storage));
  Base base(storage);
  FaultEnv env(base.env);
  auto f = Create(&env, base.Path("000001.log"));
  REQUIRE(f->Append("before").ok());
  REQUIRE(f->Sync().ok());
  env.PowerCut();
  REQUIRE(f->Append("after").ok());
  REQUIRE(f->Sync().ok());  // The process does not notice.
  auto g = Create(&env, base.Path("MANIFEST-000002"));
  REQUIRE(g->Append("x").ok());
  REQUIRE(g->Sync().ok());
  REQUIRE(f->Close().ok());
  REQUIRE(g->Close().ok());
  CHECK(Contents(base.env, base.Path("000001.log")) == "beforeafter");
  // Removing and renaming change nothing on a machine without power.
  REQUIRE(env.RenameFile(base.Path("000001.log"), base.Path("x.log")).ok());
  REQUIRE(env.RemoveFile(base.Path("000001.log")).ok());
  REQUIRE(env.SimulateCrash().ok());
  CHECK(Contents(base.env, base.Path("000001.log")) == "before");
  CHECK(Contents(base.env, base.Path("x.log")) == "<missing>");
  CHECK(Contents(base.env, base.Path("MANIFEST-000002")) == "<missing>");

  // Power is back: syncs count again.
  auto h = Create(&env, base.Path("000003.log"));
  REQUIRE(h->Append("back").ok());
  REQUIRE(h->Sync().ok());
  REQUIRE(h->Close().ok());
  REQUIRE(env.SimulateCrash().ok());
  CHECK(Contents(base.env, base.Path("000003.log")) == "back");
}

TEST_CASE("FaultEnv: write and sync faults by file kind, once or forever") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  INFO(StorageName(storage));
  Base base(storage);
  FaultEnv env(base.env);
  auto log = Create(&env, base.Path("000001.log"));
  auto table = Create(&env, base.Path("000002.ldb"));

  env.FailWrites(kTableFile, 1);
  CHECK(log->Append("a").ok());  // Another kind: unaffected.
  const leveldb::Status failed = table->Append("b");
  CHECK(failed.IsIOError());
  CHECK(table->Append("c").ok());  // Once only.

  env.FailWrites(kLogFile | kTableFile, FaultEnv::kForever);
  for (int i = 0; i < 3; ++i) {
    CHECK(log->Append("x").IsIOError());
    CHECK(table->Append("x").IsIOError());
  }
  env.ClearFaults();
  CHECK(log->Append("d").ok());
  CHECK(env.injected(Fault::kWrite) == 7);

  env.FailSyncs(kLogFile, 2);
  CHECK(table->Sync().ok());
  CHECK(log->Sync().IsIOError());
  CHECK(log->Sync().IsIOError());
  CHECK(log->Sync().ok());
  CHECK(env.injected(Fault::kSync) == 2);
  REQUIRE(log->Close().ok());
  REQUIRE(table->Close().ok());
  // Failed appends wrote nothing.
  CHECK(Contents(base.env, base.Path("000001.log")) == "ad");
  CHECK(Contents(base.env, base.Path("000002.ldb")) == "c");
}

TEST_CASE("FaultEnv: no space writes what fits, then fails like ENOSPC") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  INFO(StorageName(storage));
  Base base(storage);
  FaultEnv env(base.env);
  auto f = Create(&env, base.Path("000001.log"));
  env.LimitSpace(10);
  CHECK(f->Append("123456").ok());
  const leveldb::Status full = f->Append("7890abc");
  INFO(full.ToString());
  CHECK(full.IsIOError());
  CHECK(full.ToString().find("No space left on device") != std::string::npos);
  CHECK(env.space_left() == 0);
  CHECK(f->Append("z").IsIOError());
  CHECK(env.injected(Fault::kNoSpace) == 2);
  env.LimitSpace(100);  // Space freed.
  CHECK(f->Append("!").ok());
  REQUIRE(f->Close().ok());
  CHECK(Contents(base.env, base.Path("000001.log")) == "1234567890!");
  CHECK(env.bytes_written(kLogFile) == 11);
}

}  // namespace
}  // namespace hq::test
