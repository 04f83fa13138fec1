// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "leveldb/db.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <type_traits>

#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "hq/status.h"
#include "leveldb/env.h"
#include "leveldb/helpers/memenv.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::Child;
using test::CountKeys;
using test::DbFixture;
using test::Impl;
using test::NoBackgroundSweeps;
using test::ScanAll;
using test::Storage;
using test::TempDir;
using test::ValueOrDie;

TEST_CASE("open creates, reopen keeps queues and their options") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(test::StorageName(storage));
  DbFixture f(storage);
  QueueOptions o;
  o.partitions = 12;
  o.priorities = 3;
  o.ttl = absl::Hours(6);
  o.layout = Layout::kTopic;
  o.max_payload_bytes = 4096;
  Queue* q = ValueOrDie(f.db()->CreateQueue("frontier", o));
  CHECK(q->name() == "frontier");
  const absl::Time created = q->info().created;
  CHECK(created == f.clock().Now());
  HQ_REQUIRE_OK(q->Put({.payload = "hello"}).status());

  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("frontier"));
  const QueueInfo info = q->info();
  CHECK(info.name == "frontier");
  CHECK(info.options.partitions == 12);
  CHECK(info.options.priorities == 3);
  CHECK(info.options.ttl == absl::Hours(6));
  CHECK(info.options.layout == Layout::kTopic);
  CHECK(info.options.max_payload_bytes == 4096);
  CHECK(info.created == created);
  const auto all = ScanAll(q);
  REQUIRE(all.size() == 1);
  CHECK(all[0].payload == "hello");
}

TEST_CASE("create_if_missing and error_if_exists") {
  TempDir dir;
  Options o;
  o.create_if_missing = false;
  auto missing = Db::Open(dir.Sub("none"), o);
  CHECK(absl::IsNotFound(missing.status()));
  CHECK(absl::StrContains(missing.status().message(), dir.Sub("none")));

  { auto db = ValueOrDie(Db::Open(dir.Sub("db"))); }
  o.create_if_missing = true;
  o.error_if_exists = true;
  CHECK(absl::IsAlreadyExists(Db::Open(dir.Sub("db"), o).status()));
  // The failed opens did not leave the directory locked.
  auto again = ValueOrDie(Db::Open(dir.Sub("db")));
}

TEST_CASE("a second Db on the same directory in one process is refused") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(test::StorageName(storage));
  DbFixture f(storage);
  auto second = Db::Open(f.path(), f.options());
  REQUIRE(absl::IsFailedPrecondition(second.status()));
  CHECK(absl::StrContains(second.status().message(), f.path()));
  // Same directory spelled differently.
  if (storage == Storage::kDisk) {
    auto dotted = Db::Open(f.path() + "/./", f.options());
    CHECK(absl::IsFailedPrecondition(dotted.status()));
  }
  // The first is unharmed, and once closed the directory opens again.
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  HQ_REQUIRE_OK(q->Put({.payload = "x"}).status());
  f.Close();
  auto reopened = ValueOrDie(Db::Open(f.path(), f.options()));
  CHECK(test::ScanAll(ValueOrDie(reopened->OpenQueue("q"))).size() == 1);
}

TEST_CASE("a second process on the same directory is refused") {
  TempDir dir;
  const std::string path = dir.Sub("db");
  SECTION("the other process holds it") {
    Child holder({"hold", path});
    REQUIRE(holder.ReadLine() == "OK");
    auto db = Db::Open(path);
    REQUIRE(absl::IsFailedPrecondition(db.status()));
    CHECK(GetErrorDetail(db.status()) == ErrorDetail::kDbLocked);
    CHECK(absl::StrContains(db.status().message(), path));
    CHECK(absl::StrContains(db.status().message(), "another process"));
    holder.CloseStdin();
    holder.Wait();
    ValueOrDie(Db::Open(path));  // Free again once the holder exited.
  }
  SECTION("this process holds it") {
    auto db = ValueOrDie(Db::Open(path));
    Child other({"hold", path});
    const std::string line = other.ReadLine();
    CHECK(absl::StartsWith(line, "ERROR FAILED_PRECONDITION"));
    CHECK(absl::StrContains(line, path));
  }
}

// The public handles are owned by the Db (or a unique_ptr) and never
// copied: a copy would share the engine's state behind a second object.
template <typename T>
constexpr bool kNoCopy =
    !std::is_copy_constructible_v<T> && !std::is_copy_assignable_v<T>;
static_assert(kNoCopy<Db> && kNoCopy<Queue> && kNoCopy<ConsumerGroup> &&
              kNoCopy<Subscription> && kNoCopy<Scanner> &&
              kNoCopy<LeaseManager> && kNoCopy<Clock> &&
              kNoCopy<SimulatedClock>);

TEST_CASE("an error's detail: set, read, replaced, and none by default") {
  const absl::Status plain = absl::FailedPreconditionError("x");
  CHECK(GetErrorDetail(plain) == ErrorDetail::kNone);
  CHECK(GetErrorDetail(absl::OkStatus()) == ErrorDetail::kNone);
  const absl::Status locked = WithErrorDetail(plain, ErrorDetail::kDbLocked);
  CHECK(locked.code() == plain.code());
  CHECK(locked.message() == plain.message());
  CHECK(GetErrorDetail(locked) == ErrorDetail::kDbLocked);
  CHECK(GetErrorDetail(WithErrorDetail(locked, ErrorDetail::kDropDurable)) ==
        ErrorDetail::kDropDurable);
  CHECK(GetErrorDetail(WithErrorDetail(locked, ErrorDetail::kNone)) ==
        ErrorDetail::kNone);
  CHECK(WithErrorDetail(absl::OkStatus(), ErrorDetail::kDbLocked).ok());
  CHECK(std::string(ErrorDetailName(ErrorDetail::kDbLocked)) == "DB_LOCKED");
  // A detail from a later version reads as none.
  absl::Status later = plain;
  later.SetPayload(kErrorDetailUrl, absl::Cord("99"));
  CHECK(GetErrorDetail(later) == ErrorDetail::kNone);
  // A held directory within this process is no other process's lock.
  TempDir dir;
  auto db = ValueOrDie(Db::Open(dir.Sub("db")));
  const absl::Status again = Db::Open(dir.Sub("db")).status();
  CHECK(absl::IsFailedPrecondition(again));
  CHECK(GetErrorDetail(again) == ErrorDetail::kNone);
}

TEST_CASE("a LevelDB directory that is not an hq Db is refused untouched") {
  TempDir dir;
  {
    leveldb::Options lo;
    lo.create_if_missing = true;
    leveldb::DB* raw;
    REQUIRE(leveldb::DB::Open(lo, dir.Sub("other"), &raw).ok());
    REQUIRE(raw->Put(leveldb::WriteOptions(), "user-key", "v").ok());
    delete raw;
  }
  auto db = Db::Open(dir.Sub("other"));
  CHECK(absl::IsFailedPrecondition(db.status()));
  leveldb::DB* raw;
  REQUIRE(leveldb::DB::Open(leveldb::Options(), dir.Sub("other"), &raw).ok());
  std::string v;
  CHECK(raw->Get(leveldb::ReadOptions(), format::MetaKey("format"), &v)
            .IsNotFound());
  CHECK(raw->Get(leveldb::ReadOptions(), "user-key", &v).ok());
  delete raw;
}

TEST_CASE("catalog: create, open, list, drop") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(test::StorageName(storage));
  DbFixture f(storage);
  Db* db = f.db();
  CHECK(ValueOrDie(db->ListQueues()).empty());
  Queue* b = ValueOrDie(db->CreateQueue("b", {}));
  Queue* a = ValueOrDie(db->CreateQueue("a", {.partitions = 3}));
  ValueOrDie(db->CreateQueue("c.1", {}));
  CHECK(ValueOrDie(db->ListQueues()) ==
        std::vector<std::string>{"a", "b", "c.1"});
  CHECK(ValueOrDie(db->OpenQueue("a")) == a);
  CHECK(ValueOrDie(db->OpenQueue("b")) == b);
  CHECK(absl::IsAlreadyExists(db->CreateQueue("a", {}).status()));
  CHECK(absl::IsNotFound(db->OpenQueue("zz").status()));
  CHECK(absl::IsNotFound(db->DropQueue("zz")));

  for (int i = 0; i < 100; ++i) {
    HQ_REQUIRE_OK(a->Put({.payload = "m", .partition = i % 3u}).status());
  }
  const uint32_t a_id = static_cast<QueueImpl*>(a)->id();
  // 100 messages and nothing else: no lane fence, no lane directory entry
  // (format.md).
  CHECK(CountKeys(db, format::MessagePrefix(a_id)) == 100);
  CHECK(CountKeys(db, format::LaneDirPrefix(a_id)) == 0);

  HQ_REQUIRE_OK(db->DropQueue("a"));
  // The handle stays valid and says the queue is gone.
  CHECK(absl::IsNotFound(a->Put({.payload = "late"}).status()));
  CHECK(absl::IsNotFound(a->NewScanner({}).status()));
  CHECK(absl::IsNotFound(db->OpenQueue("a").status()));
  CHECK(ValueOrDie(db->ListQueues()) == std::vector<std::string>{"b", "c.1"});
  // Its messages and id reservations are deleted.
  CHECK(CountKeys(db, format::MessagePrefix(a_id)) == 0);
  CHECK(CountKeys(db, format::ReservePrefix(a_id)) == 0);
  CHECK(CountKeys(db, format::LaneDirPrefix(a_id)) == 0);
  CHECK(CountKeys(db, format::DropPrefix()) == 0);

  // A new queue of the same name starts empty, with its own options.
  Queue* a2 = ValueOrDie(db->CreateQueue("a", {.partitions = 5}));
  CHECK(a2 != a);
  CHECK(a2->options().partitions == 5);
  CHECK(ScanAll(a2).empty());

  f.Reopen();
  CHECK(ValueOrDie(f.db()->ListQueues()) ==
        std::vector<std::string>{"a", "b", "c.1"});
  CHECK(ValueOrDie(f.db()->OpenQueue("a"))->options().partitions == 5);
}

TEST_CASE("a drop interrupted by a crash is finished by the next Open") {
  DbFixture f(Storage::kDisk);
  Queue* q = ValueOrDie(f.db()->CreateQueue("victim", {.partitions = 2}));
  for (int i = 0; i < 500; ++i) {
    HQ_REQUIRE_OK(q->Put({.payload = "payload"}).status());
  }
  const uint32_t id = static_cast<QueueImpl*>(q)->id();
  // Do what DropQueue's first, atomic step does, then "crash".
  leveldb::WriteBatch b;
  b.Delete(format::CatalogKey("victim"));
  b.Put(format::DropKey(id), "");
  REQUIRE(Impl(f.db())->leveldb()->Write(leveldb::WriteOptions(), &b).ok());
  REQUIRE(CountKeys(f.db(), format::MessagePrefix(id)) == 500);
  f.Reopen();
  CHECK(CountKeys(f.db(), format::MessagePrefix(id)) == 0);
  CHECK(CountKeys(f.db(), format::LaneDirPrefix(id)) == 0);
  CHECK(CountKeys(f.db(), format::DropPrefix()) == 0);
  CHECK(absl::IsNotFound(f.db()->OpenQueue("victim").status()));
}

// LevelDB's estimate of the table bytes holding keys that start with
// `prefix`.
uint64_t TableBytes(Db* db, const std::string& prefix) {
  const std::string end = coding::PrefixSuccessor(prefix);
  const leveldb::Range range(prefix, end);
  uint64_t bytes = 0;
  Impl(db)->leveldb()->GetApproximateSizes(&range, 1, &bytes);
  return bytes;
}

TEST_CASE("DropQueue returns at once; the janitor returns the disk space") {
  // The janitor runs (the clock never fires its timers): compacting the
  // dropped range is its work, not the caller's.
  DbFixture f(Storage::kDisk, Options{.ttl_sweep_batch = 1000});
  Queue* q = ValueOrDie(f.db()->CreateQueue("big", {}));
  Queue* small = ValueOrDie(f.db()->CreateQueue("small", {}));
  // Random bytes: LevelDB's compression would shrink repeated ones.
  std::mt19937_64 rng(test::Seed(1));
  std::string payload(1000, ' ');
  for (int i = 0; i < 5000; ++i) {
    for (char& c : payload) c = static_cast<char>(rng());
    HQ_REQUIRE_OK(q->Put({.payload = payload}).status());
  }
  for (int i = 0; i < 10; ++i) {
    HQ_REQUIRE_OK(small->Put({.payload = payload}).status());
  }
  const uint32_t id = static_cast<QueueImpl*>(q)->id();
  test::CompactAllAndSettle(Impl(f.db())->leveldb());
  const uint64_t before = TableBytes(f.db(), format::MessagePrefix(id));
  REQUIRE(before > 4000000);

  HQ_REQUIRE_OK(f.db()->DropQueue("small"));  // Too small to compact.
  HQ_REQUIRE_OK(f.db()->DropQueue("big"));
  CHECK(CountKeys(f.db(), format::MessagePrefix(id)) == 0);
  const absl::Time deadline = absl::Now() + absl::Seconds(120);
  while (Impl(f.db())->TEST_ReclaimedRanges() < 1 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  // One range: the big queue's messages. Its other ranges (reservations,
  // lane directory) and the small queue are left to LevelDB.
  REQUIRE(Impl(f.db())->TEST_ReclaimedRanges() == 1);
  CHECK(TableBytes(f.db(), format::MessagePrefix(id)) < before / 100);
}

TEST_CASE("Open loads nothing per queue") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(test::StorageName(storage));
  DbFixture f(storage);
  for (int i = 0; i < 3000; ++i) {
    ValueOrDie(f.db()->CreateQueue(absl::StrCat("q", i), {}));
  }
  CHECK(Impl(f.db())->TEST_CachedQueueCount() == 3000);
  f.Reopen();
  CHECK(Impl(f.db())->TEST_CachedQueueCount() == 0);
  Queue* q = ValueOrDie(f.db()->OpenQueue("q2718"));
  CHECK(q->name() == "q2718");
  CHECK(Impl(f.db())->TEST_CachedQueueCount() == 1);
  CHECK(ValueOrDie(f.db()->ListQueues()).size() == 3000);
  CHECK(Impl(f.db())->TEST_CachedQueueCount() == 1);
}

// Review of issue 2: the catalog stores unsigned ms; a clock before 1970
// (a SimulatedClock allows it) must not make the queue unreadable.
TEST_CASE("issue2: a queue created with the clock before 1970 reopens") {
  DbFixture f(Storage::kMemory);
  f.clock().Set(absl::FromUnixSeconds(-86400));
  Queue* q = ValueOrDie(f.db()->CreateQueue("old", {}));
  CHECK(q->info().created == absl::UnixEpoch());
  HQ_REQUIRE_OK(q->Put({.payload = "keep me"}).status());
  f.clock().Set(absl::FromUnixSeconds(1767225600));
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("old"));
  CHECK(ScanAll(q).size() == 1);
  CHECK(absl::IsAlreadyExists(f.db()->CreateQueue("old", {}).status()));
  HQ_REQUIRE_OK(f.db()->DropQueue("old"));
}

// Review of issue 2: "lock" in the user's path must not turn any I/O error
// into "in use by another process".
TEST_CASE("issue2: an I/O error is not taken for a held lock") {
  TempDir dir;
  for (const std::string name : {"plainfile", "blockfile", "clock"}) {
    INFO(name);
    const std::string file = dir.Sub(name);
    std::fclose(std::fopen(file.c_str(), "w"));
    const absl::Status s = Db::Open(file + "/db").status();
    CHECK(absl::IsInternal(s));  // Not a directory.
    CHECK_FALSE(absl::StrContains(s.message(), "another process"));
  }
}

// An Env whose LockFile fails as LevelDB's POSIX Env does when LOCK cannot
// be opened for writing (a read-only directory, for anyone but root).
class ReadOnlyLockEnv : public leveldb::EnvWrapper {
 public:
  using leveldb::EnvWrapper::EnvWrapper;
  leveldb::Status LockFile(const std::string& name,
                           leveldb::FileLock** lock) override {
    *lock = nullptr;
    return leveldb::Status::IOError(name, std::strerror(EACCES));
  }
};

TEST_CASE("issue 38: a LOCK that cannot be opened is PermissionDenied") {
  std::unique_ptr<leveldb::Env> mem(
      leveldb::NewMemEnv(leveldb::Env::Default()));
  Options o = NoBackgroundSweeps();
  o.env = mem.get();
  {
    auto db = ValueOrDie(Db::Open("/db", o));
    ValueOrDie(db->CreateQueue("q", {}));
  }
  ReadOnlyLockEnv read_only(mem.get());
  o.env = &read_only;
  // An existing Db (hq locks it to check its logs), a new one (LevelDB's
  // Open locks it), and Repair.
  for (const absl::Status& s :
       {Db::Open("/db", o).status(), Db::Open("/new", o).status(),
        Db::Repair("/db", o).status()}) {
    INFO(s.ToString());
    CHECK(absl::IsPermissionDenied(s));
    CHECK(GetErrorDetail(s) == ErrorDetail::kNone);
    CHECK(absl::StrContains(s.message(), "/LOCK"));
    CHECK(absl::StrContains(s.message(), "EACCES"));
    CHECK_FALSE(absl::StrContains(s.message(), "another process"));
  }
  // The Db is as it was.
  o.env = mem.get();
  auto db = ValueOrDie(Db::Open("/db", o));
  CHECK(ValueOrDie(db->ListQueues()) == std::vector<std::string>{"q"});
}

TEST_CASE("issue 38: creating a Db under a missing parent names the parent") {
  TempDir dir;
  const std::string path = dir.Sub("a/b/db");
  const absl::Status s = Db::Open(path).status();
  INFO(s.ToString());
  CHECK(absl::IsNotFound(s));
  CHECK(absl::StrContains(
      s.message(), "parent directory '" + dir.Sub("a/b") + "' does not exist"));
  CHECK_FALSE(std::filesystem::exists(dir.Sub("a")));
}

}  // namespace
}  // namespace hq
