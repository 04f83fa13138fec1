// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Backup: a copy taken while writers go on opens, verifies clean and
// holds, for every writer, a prefix of what it wrote that contains all it
// had acknowledged when Backup was called. Also the MANIFEST reader it
// relies on (lib/format/manifest.h), the Env that defers deletions while a
// backup runs (lib/engine/file_pin_env.h) and Backup's errors.

#include <sys/stat.h>

#include <atomic>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "catch2/catch.hpp"
#include "hq/hq.h"
#include "leveldb/env.h"
#include "lib/engine/file_pin_env.h"
#include "lib/format/manifest.h"
#include "test/test_util.h"

namespace hq::test {
namespace {

// A payload of `n` bytes that does not compress (tables keep its size).
std::string Noise(uint64_t seed, size_t n) {
  std::string out;
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  while (out.size() < n) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out.push_back(static_cast<char>('a' + x % 26));
  }
  return out;
}

// The partitions' writers: writer w puts "w:seq" into partition w, one
// message at a time, counting what was acknowledged.
class Writers {
 public:
  Writers(Queue* q, int n) : acked_(n) {
    for (int w = 0; w < n; ++w) {
      threads_.emplace_back([this, q, w] {
        const std::string pad(150, 'x');
        for (int64_t seq = 0; !stop_.load(); ++seq) {
          absl::StatusOr<PutResult> id =
              q->Put({.payload = absl::StrCat(w, ":", seq, ":", pad),
                      .partition = static_cast<uint32_t>(w)});
          if (!id.ok()) {
            failed_.store(true);
            return;
          }
          acked_[w].store(seq + 1);
        }
      });
    }
  }
  ~Writers() { Stop(); }
  void Stop() {
    stop_.store(true);
    for (std::thread& t : threads_) {
      if (t.joinable()) t.join();
    }
  }
  int64_t acked(int w) const { return acked_[w].load(); }
  bool failed() const { return failed_.load(); }

 private:
  std::vector<std::atomic<int64_t>> acked_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  std::vector<std::thread> threads_;
};

// The sequence numbers of writer `w`'s messages in the backup, which must
// be 0, 1, 2, ...: returns how many.
int64_t PrefixLength(Queue* q, int w) {
  const std::vector<ScannedMessage> got =
      ScanAll(q, {.partitions = {static_cast<uint32_t>(w)}});
  int64_t expect = 0;
  for (const ScannedMessage& m : got) {
    const std::vector<std::string> parts = absl::StrSplit(m.payload, ':');
    REQUIRE(parts.size() == 3);
    int64_t writer = -1, seq = -1;
    REQUIRE(absl::SimpleAtoi(parts[0], &writer));
    REQUIRE(absl::SimpleAtoi(parts[1], &seq));
    INFO("writer " << w << ", message " << expect);
    REQUIRE(writer == w);
    REQUIRE(seq == expect);  // No hole, no reordering.
    ++expect;
  }
  return expect;
}

TEST_CASE("issue15: a backup taken under concurrent writes is a prefix") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(StorageName(storage));
  Options options = NoBackgroundSweeps();
  // Small write buffers: memtable switches, flushes and compactions happen
  // while the backups are taken.
  options.write_buffer_bytes = 64 << 10;
  options.clock = Clock::Default();
  DbFixture f(storage, options);
  TempDir backups;
  constexpr int kWriters = 4;
  Queue* q = ValueOrDie(f.db()->CreateQueue("w", {.partitions = kWriters}));
  Writers writers(q, kWriters);
  std::vector<std::string> dests;
  std::vector<std::vector<int64_t>> acked_before;
  for (int round = 0; round < 4; ++round) {
    // Let the writers write (and LevelDB flush) between backups.
    const absl::Time until = absl::Now() + absl::Milliseconds(150);
    while (absl::Now() < until && !writers.failed()) {
      absl::SleepFor(absl::Milliseconds(5));
    }
    std::vector<int64_t> before;
    for (int w = 0; w < kWriters; ++w) before.push_back(writers.acked(w));
    const std::string dest = storage == Storage::kMemory
                                 ? absl::StrCat("/hq-mem/backup", round)
                                 : backups.Sub(absl::StrCat("b", round));
    const BackupReport r = ValueOrDie(f.db()->Backup(dest));
    CHECK(r.path == dest);
    CHECK(r.tables > 0);
    CHECK(r.logs >= 1);
    if (storage == Storage::kDisk) {
      CHECK(r.tables_linked == r.tables);  // Same file system.
    } else {
      CHECK(r.tables_linked == 0);
      CHECK(r.bytes_copied >= r.table_bytes);
    }
    dests.push_back(dest);
    acked_before.push_back(before);
  }
  writers.Stop();
  REQUIRE_FALSE(writers.failed());

  for (size_t i = 0; i < dests.size(); ++i) {
    INFO("backup " << i);
    Options o = f.options();
    o.create_if_missing = false;
    auto backup = ValueOrDie(Db::Open(dests[i], o));
    CHECK(backup->recovery().dropped.empty());  // Cut at a record's end.
    const VerifyReport v = ValueOrDie(backup->Verify());
    for (const VerifyProblem& p : v.problems) {
      UNSCOPED_INFO(p.key_hex << ": " << p.description);
    }
    CHECK(v.ok());
    Queue* bq = ValueOrDie(backup->OpenQueue("w"));
    for (int w = 0; w < kWriters; ++w) {
      const int64_t n = PrefixLength(bq, w);
      INFO("writer " << w << ": " << n << " in the backup, "
                     << acked_before[i][w] << " acknowledged before it");
      CHECK(n >= acked_before[i][w]);
      CHECK(n <= writers.acked(w));
    }
    // The copy is a Db of its own: it takes writes.
    ValueOrDie(bq->Put({.payload = "after"}));
  }
  // The live Db is unharmed.
  const VerifyReport v = ValueOrDie(f.db()->Verify());
  CHECK(v.ok());
  for (int w = 0; w < kWriters; ++w) {
    CHECK(PrefixLength(q, w) == writers.acked(w));
  }
}

TEST_CASE("issue15: Backup links the tables and leaves the live Db alone") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  for (int i = 0; i < 2000; ++i) {
    ValueOrDie(q->Put({.payload = Noise(i, 100)}));
    if (i == 1800) ValueOrDie(f.db()->CompactAll());
  }
  std::set<std::string> live_before;
  for (const auto& e : std::filesystem::directory_iterator(f.path())) {
    live_before.insert(e.path().filename().string());
  }
  TempDir dir;
  const std::string dest = dir.Sub("copy");
  const BackupReport r = ValueOrDie(f.db()->Backup(dest));
  CHECK(r.tables >= 1);
  CHECK(r.tables_linked == r.tables);
  CHECK(r.bytes_copied < r.table_bytes);  // The log and MANIFEST only.
  CHECK(r.took >= absl::ZeroDuration());
  for (const auto& e : std::filesystem::directory_iterator(dest)) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".ldb")) continue;
    struct stat a, b;
    REQUIRE(stat(e.path().c_str(), &a) == 0);
    REQUIRE(stat((f.path() + "/" + name).c_str(), &b) == 0);
    CHECK(a.st_ino == b.st_ino);  // A hard link, not a copy.
  }
  std::set<std::string> live_after;
  for (const auto& e : std::filesystem::directory_iterator(f.path())) {
    live_after.insert(e.path().filename().string());
  }
  CHECK(live_after == live_before);  // Nothing added or deleted.
  f.Close();
  auto copy = ValueOrDie(Db::Open(dest, {.create_if_missing = false}));
  CHECK(ScanAll(ValueOrDie(copy->OpenQueue("q"))).size() == 2000);
  CHECK(ValueOrDie(copy->Verify()).ok());
}

TEST_CASE("issue15: a compaction during Backup deletes nothing it copies") {
  // Between Backup's read of the MANIFEST and its links, a compaction
  // replaces every table the MANIFEST named: their deletion waits until
  // Backup is done, so the copy gets them; then they go.
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(StorageName(storage));
  Options options = NoBackgroundSweeps();
  options.write_buffer_bytes = 64 << 10;
  DbFixture f(storage, options);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  for (int i = 0; i < 3000; ++i) {
    ValueOrDie(q->Put({.payload = Noise(i, 200)}));
  }
  leveldb::Env* env =
      f.options().env ? f.options().env : leveldb::Env::Default();
  auto tables = [&](const std::string& dir) {
    std::vector<std::string> children;
    std::set<std::string> out;
    REQUIRE(env->GetChildren(dir, &children).ok());
    for (const std::string& c : children) {
      if (c.ends_with(".ldb")) out.insert(c);
    }
    return out;
  };
  std::set<std::string> during;
  Impl(f.db())->TEST_SetBackupHook([&] {
    Impl(f.db())->leveldb()->CompactRange(nullptr, nullptr);
    during = tables(f.path());  // The new tables, and the old ones kept.
  });
  TempDir dir;
  const std::string dest =
      storage == Storage::kMemory ? "/hq-mem/copy" : dir.Sub("copy");
  const BackupReport r = ValueOrDie(f.db()->Backup(dest));
  Impl(f.db())->TEST_SetBackupHook(nullptr);
  REQUIRE_FALSE(during.empty());
  // Tables the copy needed were replaced by the compaction, and deleted
  // only once Backup was done.
  const std::set<std::string> copied = tables(dest), after = tables(f.path());
  CHECK(static_cast<int64_t>(copied.size()) == r.tables);
  int64_t deleted_after = 0;
  for (const std::string& t : copied) {
    CHECK(during.contains(t));
    if (!after.contains(t)) ++deleted_after;
  }
  CHECK(deleted_after > 0);
  Options o = f.options();
  o.create_if_missing = false;
  auto copy = ValueOrDie(Db::Open(dest, o));
  CHECK(ValueOrDie(copy->Verify()).ok());
  CHECK(ScanAll(ValueOrDie(copy->OpenQueue("q"))).size() == 3000);
}

TEST_CASE("issue15: Backup refuses a destination it cannot use") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  ValueOrDie(f.db()->CreateQueue("q", {}));
  TempDir dir;
  auto code = [&](const std::string& dest) {
    return f.db()->Backup(dest).status().code();
  };
  CHECK(code("") == absl::StatusCode::kInvalidArgument);
  CHECK(code(f.path()) == absl::StatusCode::kInvalidArgument);
  CHECK(code(f.path() + "/inside") == absl::StatusCode::kInvalidArgument);
  CHECK(code(dir.Sub("no/such/parent")) == absl::StatusCode::kNotFound);
  REQUIRE(
      leveldb::WriteStringToFile(leveldb::Env::Default(), "x", dir.Sub("file"))
          .ok());
  CHECK(code(dir.Sub("file")) == absl::StatusCode::kAlreadyExists);
  std::filesystem::create_directory(dir.Sub("full"));
  REQUIRE(leveldb::WriteStringToFile(leveldb::Env::Default(), "x",
                                     dir.Sub("full/x"))
              .ok());
  CHECK(code(dir.Sub("full")) == absl::StatusCode::kAlreadyExists);
  // An empty directory is fine, and nothing failed left anything behind.
  std::filesystem::create_directory(dir.Sub("empty"));
  HQ_REQUIRE_OK(f.db()->Backup(dir.Sub("empty")).status());
  CHECK(std::filesystem::exists(dir.Sub("empty/CURRENT")));
  CHECK_FALSE(std::filesystem::exists(dir.Sub("no")));
  CHECK(f.db()->Backup(dir.Sub("empty")).status().code() ==
        absl::StatusCode::kAlreadyExists);
  // The backup of the backup's Db works too (a Db opened from a backup).
  f.Close();
  auto copy = ValueOrDie(Db::Open(dir.Sub("empty"), {}));
  HQ_REQUIRE_OK(copy->Backup(dir.Sub("second")).status());
}

TEST_CASE("issue15: FilePinEnv defers deleting LevelDB's files while pinned") {
  std::unique_ptr<leveldb::Env> mem(
      leveldb::NewMemEnv(leveldb::Env::Default()));
  FilePinEnv env(mem.get());
  for (const char* name :
       {"/d/000005.ldb", "/d/000006.log", "/d/MANIFEST-000002", "/d/LOG.old"}) {
    REQUIRE(leveldb::WriteStringToFile(&env, "x", name).ok());
  }
  env.Pin();
  env.Pin();
  CHECK(env.RemoveFile("/d/000005.ldb").ok());
  CHECK(env.RemoveFile("/d/000006.log").ok());
  CHECK(env.RemoveFile("/d/MANIFEST-000002").ok());
  CHECK(env.RemoveFile("/d/LOG.old").ok());  // Not LevelDB's data: now.
  CHECK(env.TEST_Deferred() == 3);
  CHECK(env.FileExists("/d/000005.ldb"));
  CHECK(env.FileExists("/d/000006.log"));
  CHECK(env.FileExists("/d/MANIFEST-000002"));
  CHECK_FALSE(env.FileExists("/d/LOG.old"));
  env.Unpin();
  CHECK(env.FileExists("/d/000005.ldb"));  // One pin is left.
  env.Unpin();
  CHECK(env.TEST_Deferred() == 0);
  CHECK_FALSE(env.FileExists("/d/000005.ldb"));
  CHECK_FALSE(env.FileExists("/d/000006.log"));
  CHECK_FALSE(env.FileExists("/d/MANIFEST-000002"));
}

TEST_CASE("issue15: the MANIFEST reader names the live tables") {
  Options options = NoBackgroundSweeps();
  options.write_buffer_bytes = 64 << 10;
  DbFixture f(Storage::kDisk, options);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 3}));
  for (int i = 0; i < 20000; ++i) {
    ValueOrDie(q->Put({.payload = Noise(i, 200)}));
  }
  CompactAllAndSettle(Impl(f.db())->leveldb());
  std::string current, data;
  leveldb::Env* env = leveldb::Env::Default();
  REQUIRE(leveldb::ReadFileToString(env, f.path() + "/CURRENT", &current).ok());
  current.pop_back();
  REQUIRE(leveldb::ReadFileToString(env, f.path() + "/" + current, &data).ok());
  manifest::State state;
  std::string error;
  REQUIRE(manifest::Read(data, &state, &error));
  CHECK(state.intact_end == data.size());
  std::set<uint64_t> on_disk, named;
  std::vector<std::string> children;
  REQUIRE(env->GetChildren(f.path(), &children).ok());
  uint64_t n, max_number = 0;
  for (const std::string& c : children) {
    if (manifest::ParseTableName(c, &n)) on_disk.insert(n);
    if (manifest::ParseTableName(c, &n) || manifest::ParseLogName(c, &n) ||
        manifest::ParseManifestName(c, &n)) {
      max_number = std::max(max_number, n);
    }
  }
  for (const auto& [number, t] : state.tables) {
    named.insert(number);
    CHECK(t.smallest <= t.largest);
    uint64_t size = 0;
    REQUIRE(env->GetFileSize(
                   f.path() + "/" + absl::StrFormat("%06d.ldb", number), &size)
                .ok());
    CHECK(size == t.bytes);
  }
  CHECK(named == on_disk);
  CHECK(named.size() > 1);
  CHECK(state.next_file_number > max_number);
  CHECK(state.log_number > 0);

  // A last edit cut short is not damage: the state before it.
  for (size_t cut = data.size() - 1; cut > data.size() - 20; --cut) {
    manifest::State prefix;
    REQUIRE(
        manifest::Read(std::string_view(data).substr(0, cut), &prefix, &error));
    CHECK(prefix.edits == state.edits - 1);
    CHECK(prefix.intact_end < cut);
  }
  // A flipped byte before the last edit is (in the first record's payload:
  // a byte half way could fall in the last edit, which compaction can make
  // longer than all the others, and read as cut short).
  REQUIRE(state.edits > 1);
  std::string bad = data;
  bad[10] ^= 0x40;
  manifest::State ignored;
  CHECK_FALSE(manifest::Read(bad, &ignored, &error));
  CHECK_FALSE(error.empty());
  CHECK_FALSE(manifest::Read("", &ignored, &error));
  CHECK_FALSE(manifest::Read(std::string(500, 'g'), &ignored, &error));
}

}  // namespace
}  // namespace hq::test
