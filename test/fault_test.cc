// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Storage faults and closing under load: what a user relies on when the
// disk misbehaves or the Db is destroyed while writes are in flight. The
// faults come from test/fault_env.h, over the in-memory Env and over a real
// directory: failing writes and syncs, a full disk, and power cuts that drop
// what was not synced. The contract checked is db.h's: the failing call
// returns Internal, every later write FailedPrecondition ("reopen"), reads
// go on, nothing acknowledged is lost, and after a reopen the Db works and
// Db::Verify finds nothing wrong.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "lib/consume/lane_source.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "test/fault_env.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::DbFixture;
using test::ScanAll;
using test::Storage;
using test::TempDir;
using test::ValueOrDie;

// Wraps the log file LevelDB writes: can fail the next Append, or block the
// next Sync until released.
class LogFaultEnv : public leveldb::EnvWrapper {
 public:
  explicit LogFaultEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}

  leveldb::Status NewWritableFile(const std::string& name,
                                  leveldb::WritableFile** result) override {
    leveldb::Status s = target()->NewWritableFile(name, result);
    if (s.ok() && name.ends_with(".log")) *result = new File(*result, this);
    return s;
  }

  std::atomic<bool> fail_next_append{false};
  std::atomic<bool> block_next_sync{false};
  std::atomic<bool> blocked{false};  // A Sync is blocked now.

  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    released_ = true;
    cv_.notify_all();
  }

 private:
  class File : public leveldb::WritableFile {
   public:
    File(leveldb::WritableFile* f, LogFaultEnv* env) : f_(f), env_(env) {}
    ~File() override { delete f_; }
    leveldb::Status Append(const leveldb::Slice& d) override {
      if (env_->fail_next_append.exchange(false)) {
        return leveldb::Status::IOError("injected append failure");
      }
      return f_->Append(d);
    }
    leveldb::Status Close() override { return f_->Close(); }
    leveldb::Status Flush() override { return f_->Flush(); }
    leveldb::Status Sync() override {
      if (env_->block_next_sync.exchange(false)) {
        std::unique_lock<std::mutex> l(env_->mu_);
        env_->blocked = true;
        env_->cv_.wait(l, [this] { return env_->released_; });
        env_->blocked = false;
      }
      return f_->Sync();
    }

   private:
    leveldb::WritableFile* f_;
    LogFaultEnv* env_;
  };

  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
};

// Review of issue 2: after a failed log append LevelDB 1.23 may lose later
// records on recovery, so hq must refuse writes rather than acknowledge
// writes that a reopen would drop (and reuse their ids).
TEST_CASE("issue2: after a failed write, writes are refused until reopen") {
  TempDir dir;
  LogFaultEnv env(leveldb::Env::Default());
  SimulatedClock clock;
  Options o;
  o.env = &env;
  o.clock = &clock;
  std::vector<PutResult> acked;
  {
    auto db = ValueOrDie(Db::Open(dir.Sub("db"), o));
    Queue* q = ValueOrDie(db->CreateQueue("q", {}));
    for (int i = 0; i < 10; ++i) {
      clock.Advance(absl::Milliseconds(1));
      acked.push_back(ValueOrDie(q->Put({.payload = "before"})));
    }
    env.fail_next_append = true;
    const absl::Status failed = q->Put({.payload = "fails"}).status();
    CHECK(absl::IsInternal(failed));
    for (int i = 0; i < 100; ++i) {
      clock.Advance(absl::Milliseconds(1));
      const absl::Status s = q->Put({.payload = "after"}).status();
      REQUIRE(absl::IsFailedPrecondition(s));
      CHECK(absl::StrContains(s.message(), "reopen"));
    }
    CHECK(absl::IsFailedPrecondition(db->CreateQueue("other", {}).status()));
    std::vector<Message> batch(3);
    CHECK(absl::IsFailedPrecondition(q->PutBatch(batch, nullptr)));
    // Reads still work.
    CHECK(ScanAll(q).size() == 10);
  }
  auto db = ValueOrDie(Db::Open(dir.Sub("db"), o));
  Queue* q = ValueOrDie(db->OpenQueue("q"));
  const auto all = ScanAll(q);
  REQUIRE(all.size() == acked.size());
  for (size_t i = 0; i < acked.size(); ++i) CHECK(all[i].id == acked[i].id);
  const PutResult next = ValueOrDie(q->Put({.payload = "reopened"}));
  CHECK(acked.back().id < next.id);
}

// A Db in a temporary directory over a LogFaultEnv.
struct LogFaultDb {
  TempDir dir;
  LogFaultEnv env{leveldb::Env::Default()};
  Options options;
  std::unique_ptr<Db> db;

  LogFaultDb() {
    options.env = &env;
    db = ValueOrDie(Db::Open(dir.Sub("db"), options));
  }
  DbImpl* impl() { return static_cast<DbImpl*>(db.get()); }
};

// Review of issue 2: the leader releases write_mu_ inside LevelDB's Write;
// destroying the Db then must wait for it and for the writers queued behind
// it, not free the pipeline under them.
TEST_CASE("issue2: destroying the Db waits for writes in flight") {
  LogFaultDb f;
  LogFaultEnv& env = f.env;
  std::unique_ptr<Db>& db = f.db;
  DbImpl* impl = f.impl();
  Queue* q = ValueOrDie(db->CreateQueue("q", {}));
  HQ_REQUIRE_OK(q->Put({.payload = "warm"}).status());

  env.block_next_sync = true;
  absl::Status leader_status, follower_status;
  std::thread leader([&] {
    leader_status = q->Put({.payload = "leader"}, {.sync = true}).status();
  });
  while (!env.blocked) std::this_thread::yield();
  std::thread follower(
      [&] { follower_status = q->Put({.payload = "follower"}).status(); });
  while (impl->TEST_QueuedWriters() < 2) std::this_thread::yield();
  std::thread closer([&] { db.reset(); });
  while (!impl->TEST_Closing()) std::this_thread::yield();
  env.Release();
  leader.join();
  follower.join();
  closer.join();
  HQ_REQUIRE_OK(leader_status);
  HQ_REQUIRE_OK(follower_status);

  auto reopened = ValueOrDie(Db::Open(f.dir.Sub("db"), f.options));
  const auto all = ScanAll(ValueOrDie(reopened->OpenQueue("q")));
  REQUIRE(all.size() == 3);
  CHECK(all[1].payload == "leader");
  CHECK(all[2].payload == "follower");
}

// Puts a message (topic "t") to `q` and loads `source` in one write batch,
// in that order: both queue behind a leader of `other` blocked in its sync.
// Returns the put's result.
PutResult PutThenLoadInOneBatch(LogFaultDb& f, Queue* other, Queue* q,
                                LaneSource* source) {
  DbImpl* impl = f.impl();
  f.env.block_next_sync = true;
  std::thread leader(
      [&] { (void)other->Put({.payload = "leader"}, {.sync = true}); });
  while (!f.env.blocked) std::this_thread::yield();
  absl::StatusOr<PutResult> put;
  absl::Status load_status;
  std::thread putter([&] { put = q->Put({.topic = "t", .payload = "m"}); });
  while (impl->TEST_QueuedWriters() < 2) std::this_thread::yield();
  std::thread loader([&] { load_status = source->Load(); });
  while (impl->TEST_QueuedWriters() < 3) std::this_thread::yield();
  f.env.Release();
  leader.join();
  putter.join();
  loader.join();
  HQ_REQUIRE_OK(put.status());
  HQ_REQUIRE_OK(load_status);
  return *put;
}

// Issue 17: a topic layout queue's messages get no hint until the queue has
// a consumer; a consumer's source record written in the batch of messages
// appended before it (without hints, and not yet stored) must walk them.
TEST_CASE(
    "issue17: a source record sharing a batch with unhinted messages walks "
    "them") {
  LogFaultDb f;
  DbImpl* impl = f.impl();
  Queue* other = ValueOrDie(f.db->CreateQueue("other", {}));
  Queue* q = ValueOrDie(f.db->CreateQueue("q", {.layout = Layout::kTopic}));
  HQ_REQUIRE_OK(other->Put({.payload = "warm"}).status());
  LaneSource source(impl, static_cast<QueueImpl*>(q), /*consumer_id=*/77);
  PutThenLoadInOneBatch(f, other, q, &source);

  std::string v;
  REQUIRE(
      impl->leveldb()
          ->Get({}, format::SourceKey(static_cast<QueueImpl*>(q)->id(), 77), &v)
          .ok());
  format::SourceValue position;
  REQUIRE(format::DecodeSource(v, &position));
  REQUIRE(position.priorities.size() == 1);
  CHECK(position.priorities[0].walking);  // The message has no hint.
}

// Walk floors: a source record written without a walk (the store holds no
// message of the queue) holds no floors, since every lane then counts as
// passed; a message of its batch appended before it, hinted because the
// queue has another consumer, would lie below them and be skipped.
TEST_CASE(
    "issue17: a source record sharing a batch with hinted messages of an "
    "empty queue puts no lane past them") {
  LogFaultDb f;
  DbImpl* impl = f.impl();
  Queue* other = ValueOrDie(f.db->CreateQueue("other", {}));
  Queue* q = ValueOrDie(f.db->CreateQueue("q", {.layout = Layout::kTopic}));
  QueueImpl* qi = static_cast<QueueImpl*>(q);
  HQ_REQUIRE_OK(other->Put({.payload = "warm"}).status());
  LaneSource first(impl, qi, /*consumer_id=*/76);
  HQ_REQUIRE_OK(first.Load());  // From now on q's messages get hints.
  LaneSource source(impl, qi, /*consumer_id=*/77);
  const PutResult put = PutThenLoadInOneBatch(f, other, q, &source);

  std::string lane;
  LayoutCodec::For(Layout::kTopic)
      .AppendLanePrefix(&lane, qi->id(), put.partition, 0, "t");
  MessageId floor;
  if (source.Floor(lane, put.partition, 0, &floor)) {
    CHECK(!(put.id < floor));  // Never below: it would be skipped.
  }
}

// ---------------------------------------------------------------------------
// Fault injection through FaultEnv.

// Issue 9: a consumer group or subscription whose write failed kept the
// write's code (Internal) for every later call, where db.h and group.h
// promise FailedPrecondition ("reopen") until the Db is reopened.
TEST_CASE(
    "issue9: after a failed group or checkpoint write, calls fail with "
    "FailedPrecondition") {
  test::FaultEnv env(leveldb::Env::Default());
  TempDir dir;
  SimulatedClock clock;
  Options o = test::NoBackgroundSweeps();
  o.env = &env;
  o.clock = &clock;
  auto db = ValueOrDie(Db::Open(dir.Sub("db"), o));
  Queue* q = ValueOrDie(db->CreateQueue("q", {}));
  HQ_REQUIRE_OK(q->Put({.payload = "m"}).status());
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  env.FailWrites(test::kLogFile, 1);
  CHECK(absl::IsInternal(g->Claim({}).status()));
  const absl::Status again = g->Claim({}).status();
  INFO(again.ToString());
  CHECK(absl::IsFailedPrecondition(again));
  CHECK(absl::StrContains(again.message(), "reopen"));
}

using test::Fault;
using test::FaultEnv;
using test::FileKind;
using test::StorageName;

// Prints how many faults this program injected, per kind, at exit.
struct InjectedReport {
  ~InjectedReport() {
    std::printf("fault_test: faults injected:");
    for (Fault f :
         {Fault::kWrite, Fault::kSync, Fault::kNoSpace, Fault::kCrash}) {
      std::printf(" %s=%lld", test::FaultName(f),
                  static_cast<long long>(FaultEnv::TotalInjected(f)));
    }
    std::printf("\n");
  }
} injected_report;

// Between hq and a FaultEnv: once armed, LevelDB's creation of a table
// file (a memtable flush or a compaction) waits until released, so that the
// log of a switched memtable stays needed.
class TableLatchEnv : public leveldb::EnvWrapper {
 public:
  explicit TableLatchEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}

  void Arm() {
    std::lock_guard<std::mutex> l(mu_);
    armed_ = true;
  }
  void Release() {
    std::lock_guard<std::mutex> l(mu_);
    armed_ = false;
    cv_.notify_all();
  }

  leveldb::Status NewWritableFile(const std::string& name,
                                  leveldb::WritableFile** result) override {
    if (test::FileKindOf(name) == test::kTableFile) {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [this] { return !armed_; });
    }
    return target()->NewWritableFile(name, result);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool armed_ = false;
};

// A Db on a FaultEnv over the in-memory Env or a real directory, with a
// simulated clock and no background sweeps. Table creation can be held
// (latch()); destroying the FaultDb releases it and any held log sync.
class FaultDb {
 public:
  explicit FaultDb(Storage storage,
                   Options options = test::NoBackgroundSweeps(),
                   FaultEnv::Options env_options = {})
      : mem_(storage == Storage::kMemory
                 ? leveldb::NewMemEnv(leveldb::Env::Default())
                 : nullptr),
        env_(mem_ ? mem_.get() : leveldb::Env::Default(), env_options),
        latch_(&env_),
        path_(storage == Storage::kMemory ? "/hq-mem/db" : dir_.Sub("db")) {
    options_ = options;
    options_.env = &latch_;
    options_.clock = &clock_;
    Reopen();
  }

  ~FaultDb() {
    latch_.Release();
    if (db_) impl()->TEST_LogSyncEnv()->TEST_HoldSyncs(false);
  }

  Db* db() { return db_.get(); }
  DbImpl* impl() { return static_cast<DbImpl*>(db_.get()); }
  FaultEnv& env() { return env_; }
  TableLatchEnv& latch() { return latch_; }
  // Destroys the Db (a clean close).
  void Close() { db_.reset(); }
  SimulatedClock& clock() { return clock_; }
  Options& options() { return options_; }

  // Opens the Db again (closing it first), returning Open's status.
  absl::Status TryOpen() {
    db_.reset();
    auto db = Db::Open(path_, options_);
    if (!db.ok()) return db.status();
    db_ = std::move(db).value();
    return absl::OkStatus();
  }
  void Reopen() { HQ_REQUIRE_OK(TryOpen()); }
  // A power cut: the Db is destroyed with nothing it writes meanwhile
  // becoming durable, and the files lose what was not synced (`loss`).
  FaultEnv::CrashStats Crash(
      FaultEnv::Loss loss = FaultEnv::Loss::kUnsyncedTail) {
    env_.PowerCut();
    db_.reset();
    FaultEnv::CrashStats stats;
    const leveldb::Status s = env_.SimulateCrash(&stats, loss);
    INFO(s.ToString());
    REQUIRE(s.ok());
    return stats;
  }
  FaultEnv::CrashStats CrashAndReopen(
      FaultEnv::Loss loss = FaultEnv::Loss::kUnsyncedTail) {
    FaultEnv::CrashStats stats = Crash(loss);
    Reopen();
    return stats;
  }
  // After a power cut if `crash`, else a clean close.
  void Restart(bool crash) {
    if (crash) {
      CrashAndReopen();
    } else {
      Reopen();
    }
  }
  // Removes what `recovery` saved under dropped/ (each a problem for
  // Verify until then), after checking it is there.
  void ClearDropped(const RecoveryReport& recovery) {
    for (const RecoveryReport::Dropped& d : recovery.dropped) {
      const std::string file = path_ + "/" + d.saved_as;
      INFO(file);
      REQUIRE(env_.FileExists(file));
      REQUIRE(env_.RemoveFile(file).ok());
    }
  }
  void RequireVerified() {
    const VerifyReport report = ValueOrDie(db_->Verify());
    for (const VerifyProblem& p : report.problems) {
      UNSCOPED_INFO(p.key_hex << ": " << p.description);
    }
    REQUIRE(report.ok());
  }

 private:
  TempDir dir_;
  std::unique_ptr<leveldb::Env> mem_;
  FaultEnv env_;
  TableLatchEnv latch_;
  SimulatedClock clock_;
  Options options_;
  const std::string path_;
  std::unique_ptr<Db> db_;  // Destroyed before the Envs.
};

// A message's place: (partition, id).
using Place = std::pair<uint32_t, MessageId>;

std::map<Place, std::string> Stored(Queue* q) {
  std::map<Place, std::string> out;
  for (const auto& m : ScanAll(q)) out[{m.partition, m.id}] = m.payload;
  return out;
}

// Records what a subscription delivers; the test thread waits for counts.
class Recorder : public MessageListener {
 public:
  absl::Status OnMessage(const MessageView& m) override {
    std::lock_guard<std::mutex> l(mu_);
    got_.push_back({m.partition, m.id});
    cv_.notify_all();
    return absl::OkStatus();
  }
  // Waits until `n` messages arrived (60 s: a liveness bound).
  void WaitFor(size_t n) {
    std::unique_lock<std::mutex> l(mu_);
    const bool arrived = cv_.wait_for(l, std::chrono::seconds(60),
                                      [&] { return got_.size() >= n; });
    REQUIRE(arrived);
  }
  std::vector<Place> got() {
    std::lock_guard<std::mutex> l(mu_);
    return got_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Place> got_;
};

void RequireRefusesWrites(const absl::Status& s) {
  INFO(s.ToString());
  REQUIRE(absl::IsFailedPrecondition(s));
  CHECK(absl::StrContains(s.message(), "reopen"));
}

enum class Op {
  kPut,
  kPutBatch,
  kCreateQueue,
  kClaim,
  kComplete,
  kCheckpoint,
  kSweep
};
const char* OpName(Op op) {
  switch (op) {
    case Op::kPut:
      return "Put";
    case Op::kPutBatch:
      return "PutBatch";
    case Op::kCreateQueue:
      return "CreateQueue";
    case Op::kClaim:
      return "Claim";
    case Op::kComplete:
      return "Complete";
    case Op::kCheckpoint:
      return "Checkpoint";
    case Op::kSweep:
      return "CompactExpired";
  }
  return "?";
}

// The log files of `f`, by name: the newest last.
std::vector<FaultEnv::FileInfo> Logs(FaultDb& f) {
  std::vector<FaultEnv::FileInfo> out;
  for (const auto& file : f.env().Files()) {
    if (file.kind == test::kLogFile) out.push_back(file);
  }
  return out;
}

// Issue 9: LevelDB 1.23 closes a full log without syncing it when it
// switches to a new one, and flushes that log's memtable in the background.
// A sync=true Put into the new log before the flush finished survived a
// power cut while unsynced Puts before it, in the old log, were lost: a
// hole in the lane. hq keeps every log LevelDB closes, and a sync write
// syncs it first (lib/engine/log_sync_env.h). (The table fault keeps the
// old log's memtable from ever being flushed, so the old log stays, as it
// does while a slow flush runs.)
TEST_CASE(
    "issue9: a log LevelDB switches away from is synced, so a power cut leaves "
    "no hole") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  INFO(StorageName(storage));
  Options o = test::NoBackgroundSweeps();
  o.write_buffer_bytes = 64 << 10;
  FaultDb f(storage, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  f.env().FailWrites(test::kTableFile, FaultEnv::kForever);
  std::vector<MessageId> acked;
  while (Logs(f).size() < 2) {
    REQUIRE(acked.size() < 10000);
    acked.push_back(
        ValueOrDie(q->Put({.payload = std::string(500, 'u')}, {.sync = false}))
            .id);
  }
  // The old log is synced by the next sync write (issue 18), or here.
  REQUIRE(
      static_cast<DbImpl*>(f.db())->TEST_LogSyncEnv()->SyncClosedLogs().ok());
  const auto files = Logs(f);
  for (size_t i = 0; i + 1 < files.size(); ++i) {
    INFO(files[i].name);
    CHECK(files[i].synced == files[i].size);
    CHECK(files[i].size > 0);
  }
  // End to end: a sync Put into the new log (if the failed flush has not
  // stopped writes yet), a power cut: what is left has no hole.
  auto last = q->Put({.payload = "synced"}, {.sync = true});
  if (last.ok()) acked.push_back(last->id);
  f.Crash();
  f.env().ClearFaults();
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const auto stored = ScanAll(q);
  REQUIRE(stored.size() <= acked.size());
  for (size_t i = 0; i < stored.size(); ++i) CHECK(stored[i].id == acked[i]);
  if (last.ok()) CHECK(stored.size() == acked.size());
  f.RequireVerified();
}

// Issue 18: LevelDB's switch to a new log does not sync the old one on the
// writer's thread; hq syncs it at the next sync write, unless LevelDB
// removed it first (lib/engine/log_sync_env.h). Here that sync is held,
// and the memtable flush with it (so the old log stays needed), while puts
// go on in the new log.

// Puts non-sync messages until LevelDB switched to a second log; returns
// their ids. The puts must not wait for a held sync of the old log.
std::vector<MessageId> PutUntilSwitch(FaultDb& f, Queue* q) {
  std::vector<MessageId> ids;
  auto newest = [&f] {
    const auto logs = Logs(f);
    return logs.empty() ? std::string() : logs.back().name;
  };
  const std::string before = newest();
  while (newest() == before) {
    REQUIRE(ids.size() < 10000);
    ids.push_back(
        ValueOrDie(q->Put({.payload = std::string(500, 'u')}, {.sync = false}))
            .id);
  }
  return ids;
}

constexpr auto kDeadline = std::chrono::seconds(60);

TEST_CASE(
    "issue18: a sync put right after a switch waits for the old log's "
    "sync; a power cut leaves a prefix with every sync put") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  // Whether the held sync is released (and the sync put acknowledged)
  // before the power cut, or the power fails while the put waits.
  const bool released = GENERATE(true, false);
  INFO(StorageName(storage)
       << (released ? ", sync released" : ", power cut while held"));
  std::future<absl::StatusOr<PutResult>> sync_put;  // Outlives f.
  Options o = test::NoBackgroundSweeps();
  o.write_buffer_bytes = 64 << 10;
  FaultDb f(storage, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  LogSyncEnv* logs = f.impl()->TEST_LogSyncEnv();
  // Every put in commit order; acked_sync: 1 + the last acknowledged
  // sync put's index.
  std::vector<MessageId> all;
  all.push_back(ValueOrDie(q->Put({.payload = "first"}, {.sync = true})).id);
  size_t acked_sync = 1;

  f.latch().Arm();
  logs->TEST_HoldSyncs(true);
  for (MessageId id : PutUntilSwitch(f, q)) all.push_back(id);
  REQUIRE(logs->TEST_Await(1, 0, absl::Seconds(60)));
  const auto files = Logs(f);
  REQUIRE(files.size() >= 2);
  const FaultEnv::FileInfo old_log = files[files.size() - 2];
  INFO(old_log.name);
  CHECK(old_log.synced < old_log.size);  // Its sync is held.
  // Non-sync puts into the new log do not wait.
  for (int i = 0; i < 5; ++i) {
    all.push_back(ValueOrDie(q->Put({.payload = "after"}, {.sync = false})).id);
  }
  sync_put = std::async(std::launch::async, [q] {
    return q->Put({.payload = "synced"}, {.sync = true});
  });
  // The sync put waits for the old log's sync.
  REQUIRE(logs->TEST_Await(1, 1, absl::Seconds(60)));
  CHECK(sync_put.wait_for(std::chrono::seconds(0)) !=
        std::future_status::ready);
  if (released) {
    logs->TEST_HoldSyncs(false);
    REQUIRE(sync_put.wait_for(kDeadline) == std::future_status::ready);
    all.push_back(ValueOrDie(sync_put.get()).id);
    acked_sync = all.size();
    for (int i = 0; i < 5; ++i) {
      all.push_back(
          ValueOrDie(q->Put({.payload = "tail"}, {.sync = false})).id);
    }
    f.env().PowerCut();
  } else {
    f.env().PowerCut();  // What the put's sync does from now is lost.
    logs->TEST_HoldSyncs(false);
    REQUIRE(sync_put.wait_for(kDeadline) == std::future_status::ready);
    const auto r = sync_put.get();
    if (r.ok()) all.push_back(r->id);  // Not acknowledged before the cut.
  }
  f.latch().Release();
  f.CrashAndReopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const auto stored = ScanAll(q);
  INFO(stored.size() << " of " << all.size() << " stored, " << acked_sync
                     << " acknowledged up to the last sync put");
  REQUIRE(stored.size() <= all.size());
  CHECK(stored.size() >= acked_sync);
  for (size_t i = 0; i < stored.size(); ++i) CHECK(stored[i].id == all[i]);
  f.RequireVerified();
}

TEST_CASE("issue18: a failed sync of an old log refuses later writes") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  INFO(StorageName(storage));
  Options o = test::NoBackgroundSweeps();
  o.write_buffer_bytes = 64 << 10;
  FaultDb f(storage, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  LogSyncEnv* logs = f.impl()->TEST_LogSyncEnv();
  f.latch().Arm();  // The old log stays needed: LevelDB cannot remove it.
  logs->TEST_HoldSyncs(true);
  std::vector<MessageId> acked = PutUntilSwitch(f, q);
  // Non-sync puts make no log sync: the next one is the held one.
  f.env().FailSyncs(test::kLogFile, 1);
  logs->TEST_HoldSyncs(false);
  const leveldb::Status bg = logs->SyncClosedLogs();
  INFO(bg.ToString());
  REQUIRE(!bg.ok());
  CHECK(f.env().injected(Fault::kSync) == 1);
  // The write that meets the error fails with it, the later ones are
  // refused until reopen; sync or not.
  const absl::Status failed =
      q->Put({.payload = "x"}, {.sync = false}).status();
  INFO(failed.ToString());
  CHECK(absl::IsInternal(failed));
  CHECK(absl::StrContains(failed.message(), "could not be synced"));
  RequireRefusesWrites(q->Put({.payload = "y"}, {.sync = false}).status());
  RequireRefusesWrites(q->Put({.payload = "z"}, {.sync = true}).status());
  CHECK(ScanAll(q).size() == acked.size());  // Reads go on.
  f.latch().Release();
  f.env().ClearFaults();
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const auto stored = ScanAll(q);
  REQUIRE(stored.size() == acked.size());
  for (size_t i = 0; i < stored.size(); ++i) CHECK(stored[i].id == acked[i]);
  acked.push_back(ValueOrDie(q->Put({.payload = "again"}, {.sync = true})).id);
  f.RequireVerified();
}

// What the deferred sync leaves open: until the old log is synced, a
// power cut may keep pages of the new log that the operating system wrote
// early while the end of the old log is lost. Recovery must not replay the
// new log after the old one's lost end: that would be a hole. Here both
// logs are made durable, then the old log loses its last record.
TEST_CASE(
    "issue18: an old log cut short before a later log's records is a hole, "
    "and recovery keeps the prefix") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  const bool absolute = GENERATE(false, true);
  INFO(StorageName(storage) << (absolute ? ", absolute consistency" : ""));
  Options o = test::NoBackgroundSweeps();
  o.write_buffer_bytes = 64 << 10;
  FaultDb f(storage, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  std::vector<MessageId> all;
  all.push_back(ValueOrDie(q->Put({.payload = "first"}, {.sync = true})).id);
  f.latch().Arm();  // The old log stays needed.
  for (MessageId id : PutUntilSwitch(f, q)) all.push_back(id);
  for (int i = 0; i < 5; ++i) {
    all.push_back(ValueOrDie(q->Put({.payload = "after"}, {.sync = false})).id);
  }
  all.push_back(ValueOrDie(q->Put({.payload = "synced"}, {.sync = true})).id);
  const auto files = Logs(f);
  REQUIRE(files.size() >= 2);
  const FaultEnv::FileInfo old_log = files[files.size() - 2];
  INFO(old_log.name);
  REQUIRE(old_log.synced == old_log.size);
  f.env().PowerCut();
  f.latch().Release();
  f.Crash();
  // The old log loses the end of its last record (each is over 500 bytes).
  std::string data;
  REQUIRE(leveldb::ReadFileToString(&f.env(), old_log.name, &data).ok());
  REQUIRE(data.size() > 300);
  data.resize(data.size() - 300);
  REQUIRE(leveldb::WriteStringToFile(&f.env(), data, old_log.name).ok());

  if (absolute) {
    f.options().recovery = Options::Recovery::kAbsoluteConsistency;
    const absl::Status s = f.TryOpen();
    INFO(s.ToString());
    CHECK(absl::IsDataLoss(s));
    std::string after;
    REQUIRE(leveldb::ReadFileToString(&f.env(), old_log.name, &after).ok());
    CHECK(after == data);  // Nothing changed.
    f.options().recovery = Options::Recovery::kPointInTime;
  }
  f.Reopen();
  const RecoveryReport& recovery = f.db()->recovery();
  REQUIRE(recovery.dropped.size() >= 2);
  CHECK(old_log.name.ends_with(recovery.dropped[0].file));
  CHECK(absl::StrContains(recovery.dropped[0].damage, "cut short"));
  CHECK_FALSE(recovery.lost_nothing_intact());  // The new log's records.
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const auto stored = ScanAll(q);
  INFO(stored.size() << " of " << all.size() << " stored");
  REQUIRE(stored.size() < all.size() - 6);  // The new log's puts are gone.
  for (size_t i = 0; i < stored.size(); ++i) CHECK(stored[i].id == all[i]);
  f.ClearDropped(recovery);
  f.RequireVerified();
}

TEST_CASE("issue18: closing the Db syncs an old log that is still needed") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  INFO(StorageName(storage));
  std::future<void> close;  // Outlives f.
  Options o = test::NoBackgroundSweeps();
  o.write_buffer_bytes = 64 << 10;
  FaultDb f(storage, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  LogSyncEnv* logs = f.impl()->TEST_LogSyncEnv();
  f.latch().Arm();  // The old log stays needed.
  logs->TEST_HoldSyncs(true);
  const std::vector<MessageId> acked = PutUntilSwitch(f, q);
  REQUIRE(logs->TEST_Await(1, 0, absl::Seconds(60)));
  // The close's own sync write (it lowers id reservations) waits for the
  // held sync.
  close = std::async(std::launch::async, [&f] { f.Close(); });
  REQUIRE(logs->TEST_Await(1, 1, absl::Seconds(60)));
  CHECK(close.wait_for(std::chrono::seconds(0)) != std::future_status::ready);
  logs->TEST_HoldSyncs(false);
  f.latch().Release();
  REQUIRE(close.wait_for(kDeadline) == std::future_status::ready);
  close.get();
  // Every log is synced, so even the non-sync puts survive a power cut.
  for (const auto& file : Logs(f)) {
    INFO(file.name);
    CHECK(file.synced == file.size);
  }
  f.CrashAndReopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const auto stored = ScanAll(q);
  REQUIRE(stored.size() == acked.size());
  for (size_t i = 0; i < stored.size(); ++i) CHECK(stored[i].id == acked[i]);
}

// The common case costs nothing: with only non-sync writes an old log is
// never synced. LevelDB removes it once its memtable is in a synced table,
// and what was written into it survives a power cut from that table. Every
// log sync fails here, so a single one would stop writes.
TEST_CASE(
    "issue18: non-sync writers never sync an old log; flushed, it is removed "
    "unsynced and its writes survive a power cut") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  INFO(StorageName(storage));
  Options o = test::NoBackgroundSweeps();
  o.write_buffer_bytes = 64 << 10;
  FaultDb f(storage, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  LogSyncEnv* logs = f.impl()->TEST_LogSyncEnv();
  f.env().FailSyncs(test::kLogFile, FaultEnv::kForever);
  std::vector<MessageId> acked;
  std::vector<std::string> old_logs;
  for (int i = 0; i < 3; ++i) {
    old_logs.push_back(Logs(f).back().name);
    for (MessageId id : PutUntilSwitch(f, q)) acked.push_back(id);
  }
  // Flushes every memtable; LevelDB then removes every log but the newest.
  f.impl()->leveldb()->CompactRange(nullptr, nullptr);
  CHECK(f.env().injected(Fault::kSync) == 0);
  CHECK(logs->TEST_PendingSyncs() == 0);
  const auto files = Logs(f);
  REQUIRE(files.size() == 1);
  for (const std::string& name : old_logs) CHECK(name != files[0].name);
  CHECK(files[0].synced == 0);
  // Writes go on: no sync failed.
  HQ_REQUIRE_OK(q->Put({.payload = "after"}, {.sync = false}).status());
  f.env().ClearFaults();
  f.CrashAndReopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const auto stored = ScanAll(q);
  INFO(stored.size() << " of " << acked.size() << " flushed puts stored");
  REQUIRE(stored.size() >= acked.size());
  for (size_t i = 0; i < acked.size(); ++i) CHECK(stored[i].id == acked[i]);
  f.RequireVerified();
}

// The same storage write, as each public call makes it, failing on the log
// (every hq write goes through LevelDB's log): the failing call returns
// Internal, every later write FailedPrecondition until reopen, reads and
// Verify work meanwhile; after the fault clears and the Db is reopened
// (cleanly, or after a power cut) everything acknowledged is there, held
// tasks come back, completed ones do not, and the call works again.
TEST_CASE(
    "fault: a failed log write fails the call, then writes wait for reopen") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  const Op op = GENERATE(Op::kPut, Op::kPutBatch, Op::kCreateQueue, Op::kClaim,
                         Op::kComplete, Op::kCheckpoint, Op::kSweep);
  const Fault fault = GENERATE(Fault::kWrite, Fault::kSync, Fault::kNoSpace);
  const int times = GENERATE(1, FaultEnv::kForever);
  const bool crash = GENERATE(false, true);
  if (fault == Fault::kNoSpace && times == 1) return;  // Space stays full.
  INFO(StorageName(storage)
       << " " << OpName(op) << " " << test::FaultName(fault)
       << (times == 1 ? " once" : " forever")
       << (crash ? " then power cut" : " then reopen"));

  Options o = test::NoBackgroundSweeps();
  o.sync_writes = true;
  FaultDb f(storage, o);
  Recorder recorder;  // Outlives the Db's subscriptions (declared after f).
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  Queue* t = ValueOrDie(f.db()->CreateQueue("t", {.ttl = absl::Seconds(1)}));
  std::map<Place, std::string> acked;
  for (int i = 0; i < 10; ++i) {
    const std::string payload = absl::StrCat("m", i);
    const PutResult r = ValueOrDie(q->Put({.payload = payload}));
    acked[{r.partition, r.id}] = payload;
  }
  for (int i = 0; i < 5; ++i) {
    HQ_REQUIRE_OK(t->Put({.payload = "expires"}).status());
  }
  f.clock().Advance(absl::Seconds(2));  // t's messages expire.
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  std::vector<Task> held = ValueOrDie(g->Claim({.max = 5}));
  REQUIRE(held.size() == 5);
  HQ_REQUIRE_OK(g->Complete(std::span(held).first(2)));
  std::set<Place> completed;
  for (int i = 0; i < 2; ++i) completed.insert({held[i].partition, held[i].id});
  held.erase(held.begin(), held.begin() + 2);
  Subscription* sub = nullptr;
  if (op == Op::kCheckpoint) {
    sub = ValueOrDie(q->Subscribe({.name = "s"}, &recorder));
    recorder.WaitFor(5);  // At least 4 fully delivered: a dirty checkpoint.
  }

  switch (fault) {
    case Fault::kWrite:
      f.env().FailWrites(test::kLogFile, times);
      break;
    case Fault::kSync:
      f.env().FailSyncs(test::kLogFile, times);
      break;
    case Fault::kNoSpace:
      f.env().LimitSpace(3, test::kLogFile);  // A torn record header.
      break;
    case Fault::kCrash:
      break;
  }
  // Runs the operation; `again` for the call after the failure.
  std::vector<Message> batch(3, Message{.payload = "batch"});
  auto run = [&](bool again) -> absl::Status {
    switch (op) {
      case Op::kPut:
        return q->Put({.payload = "failed"}).status();
      case Op::kPutBatch:
        return q->PutBatch(batch, nullptr);
      case Op::kCreateQueue:
        return f.db()->CreateQueue(again ? "other2" : "other", {}).status();
      case Op::kClaim:
        return g->Claim({.max = 3}).status();
      case Op::kComplete:
        return g->Complete(held);
      case Op::kCheckpoint:
        return sub->Checkpoint();
      case Op::kSweep:
        return f.db()->CompactExpired().status();
    }
    return absl::UnknownError("?");
  };

  const absl::Status failed = run(false);
  if (op == Op::kSweep && fault == Fault::kSync) {
    // A sweep writes without sync (its progress is redone after a crash):
    // a sync fault does not touch it.
    HQ_REQUIRE_OK(failed);
    f.env().ClearFaults();
    return;
  }
  {
    INFO(failed.ToString());
    REQUIRE(absl::IsInternal(failed));
  }
  // Every later write is refused, this call and the others.
  RequireRefusesWrites(run(true));
  RequireRefusesWrites(q->Put({.payload = "refused"}).status());
  RequireRefusesWrites(f.db()->CreateQueue("refused", {}).status());
  // Reads go on, and the stored data is sound.
  const std::map<Place, std::string> readable = Stored(q);
  for (const auto& [place, payload] : acked) {
    INFO(place.second.ToString());
    CHECK(readable.count(place) == 1);
  }
  f.RequireVerified();

  if (times == FaultEnv::kForever) {
    // Still failing after a reopen: the next write fails again, the same
    // way.
    f.Reopen();
    q = ValueOrDie(f.db()->OpenQueue("q"));
    const absl::Status again = q->Put({.payload = "failed"}).status();
    INFO(again.ToString());
    CHECK(absl::IsInternal(again));
  }
  f.env().ClearFaults();
  f.Restart(crash);

  // Nothing acknowledged is lost; the failed call wrote all or nothing.
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const std::map<Place, std::string> stored = Stored(q);
  for (const auto& [place, payload] : acked) {
    INFO(place.second.ToString());
    REQUIRE(stored.count(place) == 1);
    CHECK(stored.at(place) == payload);
  }
  // A failed write may have reached the log (a failed sync leaves its
  // record there): then it is replayed, whole.
  size_t extra_batch = 0, extra_put = 0;
  for (const auto& [place, payload] : stored) {
    if (acked.count(place) != 0) continue;
    if (payload == "batch") {
      ++extra_batch;
    } else {
      CHECK(payload == "failed");
      ++extra_put;
    }
  }
  CHECK((extra_batch == 0 || extra_batch == batch.size()));
  CHECK(extra_put <=
        (op == Op::kPut ? 1u : 0u) + (times == FaultEnv::kForever ? 1u : 0u));
  // Completed tasks stay completed; every other message is claimable,
  // the held ones (and any from a failed claim) with a later attempt.
  g = ValueOrDie(q->Group("g"));
  const std::vector<Task> claimed = ValueOrDie(g->Claim({.max = 100}));
  std::set<Place> claimable;
  for (const Task& task : claimed) {
    claimable.insert({task.partition, task.id});
    CHECK(completed.count({task.partition, task.id}) == 0);
  }
  for (const auto& [place, payload] : stored) {
    if (completed.count(place) != 0 || claimable.count(place) != 0) continue;
    // Only the targets of a failed Complete may have been completed (its
    // record reached the log, and the reopen replayed it).
    bool target = false;
    for (const Task& h : held) target |= (Place{h.partition, h.id} == place);
    INFO(place.second.ToString() << " is neither completed nor claimable");
    CHECK((op == Op::kComplete && target));
  }
  for (const Task& task : claimed) {
    for (const Task& h : held) {
      if (h.partition == task.partition && h.id == task.id) {
        CHECK(task.attempt >= 2);
      }
    }
  }
  f.RequireVerified();

  // The call works again.
  switch (op) {
    case Op::kPut:
    case Op::kPutBatch:
      HQ_REQUIRE_OK(run(true));
      break;
    case Op::kCreateQueue:
      HQ_REQUIRE_OK(run(true));
      CHECK(f.db()->OpenQueue("other2").ok());
      break;
    case Op::kClaim:
      HQ_REQUIRE_OK(q->Put({.payload = "new"}).status());
      CHECK(ValueOrDie(g->Claim({.max = 3})).size() == 1);
      break;
    case Op::kComplete:
      HQ_REQUIRE_OK(g->Complete(claimed));
      CHECK(ValueOrDie(g->Claim({.max = 100})).empty());
      break;
    case Op::kCheckpoint: {
      // (The failed checkpoint may have reached the log and cover every
      // message: give the subscription one more.)
      HQ_REQUIRE_OK(q->Put({.payload = "new"}).status());
      Recorder again;
      Subscription* s = ValueOrDie(q->Subscribe({.name = "s"}, &again));
      again.WaitFor(1);
      HQ_REQUIRE_OK(s->Checkpoint());
      HQ_REQUIRE_OK(q->Unsubscribe("s"));
      break;
    }
    case Op::kSweep: {
      const SweepStats st = ValueOrDie(f.db()->CompactExpired());
      CHECK(st.queues == 1);
      break;
    }
  }
  f.RequireVerified();
}

// Power cuts while writing with and without sync, across memtable flushes
// and log switches (a small write buffer): every Put acknowledged with
// sync=true survives; what survives of the others is, per partition, a
// prefix of what was acknowledged, without holes (DESIGN.md: a lane never
// shows id N+1 without id N); new ids go on above every stored one.
// With Loss::kMiddlePageOfLogs the power cut loses a page in the middle of
// the log's unsynced part and keeps the pages after it: a hole, which
// recovery cuts at, so what survives is still a prefix.
TEST_CASE("fault: power cuts keep sync puts and a prefix of the others") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  const FaultEnv::Loss loss = GENERATE(FaultEnv::Loss::kUnsyncedTail,
                                       FaultEnv::Loss::kMiddlePageOfLogs);
  const bool middle = loss == FaultEnv::Loss::kMiddlePageOfLogs;
  INFO(StorageName(storage) << (middle ? ", a middle page lost" : ""));
  Options o = test::NoBackgroundSweeps();
  o.write_buffer_bytes = 64 << 10;
  FaultDb f(storage, o);
  constexpr uint32_t kPartitions = 3;
  ValueOrDie(f.db()->CreateQueue("q", {.partitions = kPartitions}));
  std::mt19937_64 rng(test::Seed(7));
  // Acknowledged puts in commit order: place, payload, sync.
  struct Acked {
    Place place;
    std::string payload;
    bool sync;
  };
  std::vector<Acked> acked;
  int64_t lost_total = 0, reused_ids = 0, pages_lost = 0, holes = 0;
  for (int round = 0; round < 4; ++round) {
    Queue* q = ValueOrDie(f.db()->OpenQueue("q"));
    const int n = 300 + static_cast<int>(rng() % 300);
    for (int i = 0; i < n; ++i) {
      f.clock().Advance(absl::Microseconds(rng() % 2000));
      // A middle page needs an unsynced part of a few pages: no sync in
      // the last 100 puts.
      const bool sync = rng() % 8 == 0 && !(middle && i >= n - 100);
      const std::string payload =
          absl::StrCat(round, "/", i, "/", std::string(rng() % 400, 'x'));
      const uint32_t partition = static_cast<uint32_t>(rng() % kPartitions);
      const PutResult r = ValueOrDie(
          q->Put({.payload = payload, .partition = partition}, {.sync = sync}));
      acked.push_back({{r.partition, r.id}, payload, sync});
    }
    pages_lost += f.CrashAndReopen(loss).pages_lost;
    const RecoveryReport& recovery = f.db()->recovery();
    holes += !recovery.lost_nothing_intact();
    q = ValueOrDie(f.db()->OpenQueue("q"));
    const std::map<Place, std::string> stored = Stored(q);
    // Per partition: the stored messages are the first k acknowledged.
    std::map<uint32_t, std::vector<const Acked*>> by_partition;
    for (const Acked& a : acked) by_partition[a.place.first].push_back(&a);
    size_t last_sync = 0;  // 1 + index of the last sync put, in acked.
    for (size_t i = 0; i < acked.size(); ++i) {
      if (acked[i].sync) last_sync = i + 1;
    }
    size_t matched = 0;
    for (const auto& [partition, list] : by_partition) {
      size_t k = 0;
      while (k < list.size() && stored.count(list[k]->place) != 0) {
        INFO(list[k]->place.second.ToString());
        CHECK(stored.at(list[k]->place) == list[k]->payload);
        ++k;
      }
      matched += k;
      for (size_t j = k; j < list.size(); ++j) {
        INFO("partition " << partition << ": message " << j << " of "
                          << list.size() << " survived after a lost one");
        CHECK(stored.count(list[j]->place) == 0);
        CHECK(!list[j]->sync);
      }
    }
    CHECK(matched == stored.size());  // Nothing unacknowledged.
    for (size_t i = 0; i < last_sync; ++i) {
      INFO("acknowledged put " << i << " before a sync put");
      CHECK(stored.count(acked[i].place) == 1);
    }
    // Forget what was lost; new ids must pass every stored one.
    std::map<uint32_t, MessageId> last_stored;
    std::set<Place> lost;
    std::vector<Acked> kept;
    for (const Acked& a : acked) {
      if (stored.count(a.place) != 0) {
        kept.push_back(a);
        last_stored[a.place.first] =
            std::max(last_stored[a.place.first], a.place.second);
      } else {
        lost.insert(a.place);
      }
    }
    lost_total += static_cast<int64_t>(lost.size());
    acked = std::move(kept);
    for (uint32_t p = 0; p < kPartitions; ++p) {
      const PutResult r =
          ValueOrDie(q->Put({.payload = "probe", .partition = p}));
      CHECK(last_stored[p] < r.id);
      reused_ids += lost.count({p, r.id});
      acked.push_back({{r.partition, r.id}, "probe", false});
    }
    if (middle) f.ClearDropped(recovery);  // Else Verify lists them.
    f.RequireVerified();
  }
  if (middle) {
    CHECK(pages_lost > 0);
    CHECK(holes > 0);  // Some recovery cut intact records after one.
  } else {
    CHECK(pages_lost == 0);
    CHECK(holes == 0);
  }
  std::printf(
      "fault_test: power cuts (%s%s): %lld unsynced puts lost, %lld lost "
      "ids given again to new messages, %lld recoveries cut a hole\n",
      StorageName(storage), middle ? ", middle pages" : "",
      static_cast<long long>(lost_total), static_cast<long long>(reused_ids),
      static_cast<long long>(holes));
}

// A consumer group across a power cut, with sync writes: a Complete that
// returned OK stays completed, claimed tasks not completed come back with
// their next attempt, messages never claimed are still there. Without sync
// writes: whatever was lost, no message is lost to the group (each is
// claimable again or was completed).
TEST_CASE("fault: consumer group state survives a power cut") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  const bool sync = GENERATE(true, false);
  INFO(StorageName(storage) << (sync ? " sync" : " no sync"));
  Options o = test::NoBackgroundSweeps();
  o.sync_writes = sync;
  FaultDb f(storage, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  std::set<Place> all;
  for (int i = 0; i < 30; ++i) {
    const PutResult r =
        ValueOrDie(q->Put({.payload = absl::StrCat("m", i)}, {.sync = true}));
    all.insert({r.partition, r.id});
  }
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  std::set<Place> completed, held;
  const std::vector<Task> a = ValueOrDie(g->Claim({.max = 10}));
  HQ_REQUIRE_OK(g->Complete(std::span(a).first(5)));
  const std::vector<Task> b = ValueOrDie(g->Claim({.max = 10}));
  HQ_REQUIRE_OK(g->Complete(b));
  for (size_t i = 0; i < a.size(); ++i) {
    (i < 5 ? completed : held).insert({a[i].partition, a[i].id});
  }
  for (const Task& task : b) completed.insert({task.partition, task.id});
  REQUIRE(completed.size() == 15);

  f.CrashAndReopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  g = ValueOrDie(q->Group("g"));
  const std::vector<Task> after = ValueOrDie(g->Claim({.max = 100}));
  std::set<Place> claimable;
  for (const Task& task : after) {
    const Place p{task.partition, task.id};
    CHECK(claimable.insert(p).second);  // Handed out once.
    CHECK(all.count(p) == 1);
    // Without sync the claim itself may be lost: then it is attempt 1.
    if (held.count(p) != 0) CHECK(task.attempt == (sync ? 2u : task.attempt));
    if (sync) {
      INFO(p.second.ToString() << " was completed before the power cut");
      CHECK(completed.count(p) == 0);
    }
  }
  for (const Place& p : all) {
    INFO(p.second.ToString() << " is neither completed nor claimable");
    CHECK((claimable.count(p) != 0 || completed.count(p) != 0));
  }
  if (sync) CHECK(claimable.size() == 15);
  HQ_REQUIRE_OK(g->Complete(after));
  CHECK(ValueOrDie(g->Claim({.max = 100})).empty());
  f.RequireVerified();
}

// A subscription across a power cut: after a Checkpoint that returned OK
// (sync writes), delivery resumes exactly there: nothing below it again,
// nothing skipped.
TEST_CASE("fault: a subscription resumes from its synced checkpoint") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  INFO(StorageName(storage));
  Options o = test::NoBackgroundSweeps();
  o.sync_writes = true;
  FaultDb f(storage, o);
  Recorder first, second;
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  std::vector<Place> all;
  for (int i = 0; i < 20; ++i) {
    const PutResult r = ValueOrDie(q->Put({.payload = absl::StrCat(i)}));
    all.push_back({r.partition, r.id});
  }
  Subscription* s = ValueOrDie(q->Subscribe({.name = "s"}, &first));
  first.WaitFor(20);
  // Wait until all 20 count as delivered, then checkpoint them.
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (ValueOrDie(s->Stats()).delivered < 20) {
    REQUIRE(absl::Now() < give_up);  // A liveness bound.
    std::this_thread::yield();
  }
  HQ_REQUIRE_OK(s->Checkpoint());
  std::vector<Place> more;
  for (int i = 0; i < 5; ++i) {
    const PutResult r =
        ValueOrDie(q->Put({.payload = absl::StrCat("more", i)}));
    more.push_back({r.partition, r.id});
  }
  first.WaitFor(25);  // Delivered, not checkpointed.
  f.CrashAndReopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  ValueOrDie(q->Subscribe({.name = "s"}, &second));
  second.WaitFor(5);
  CHECK(second.got() == more);
  f.RequireVerified();
}

// A full disk in the middle of a PutBatch: the batch fails (Internal,
// saying so), writes are refused, and once space is freed and the Db
// reopened the batch is all there or not at all, what was acknowledged is
// intact, and writing goes on.
TEST_CASE("fault: no space during a PutBatch, then free space and go on") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  const bool crash = GENERATE(false, true);
  INFO(StorageName(storage) << (crash ? " power cut" : " reopen"));
  Options o = test::NoBackgroundSweeps();
  o.sync_writes = true;
  FaultDb f(storage, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 4}));
  std::map<Place, std::string> acked;
  auto put_batch = [&](int n, const std::string& prefix) {
    std::vector<std::string> payloads;
    for (int i = 0; i < n; ++i) {
      payloads.push_back(absl::StrCat(prefix, i, std::string(300, 'p')));
    }
    std::vector<Message> batch;
    for (const std::string& p : payloads) batch.push_back({.payload = p});
    std::vector<PutResult> results;
    absl::Status s = q->PutBatch(batch, &results);
    if (s.ok()) {
      for (size_t i = 0; i < results.size(); ++i) {
        acked[{results[i].partition, results[i].id}] = payloads[i];
      }
    }
    return s;
  };
  HQ_REQUIRE_OK(put_batch(20, "a"));
  // Room for about half of the next batch.
  f.env().LimitSpace(20 * 310 / 2, test::kAllFiles);
  const absl::Status full = put_batch(20, "b");
  {
    INFO(full.ToString());
    REQUIRE(absl::IsInternal(full));
    CHECK(absl::StrContains(full.message(), "No space left on device"));
  }
  CHECK(f.env().space_left() == 0);
  RequireRefusesWrites(put_batch(1, "c"));
  f.RequireVerified();
  // Space freed.
  f.env().ClearFaults();
  f.Restart(crash);
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const std::map<Place, std::string> stored = Stored(q);
  CHECK(stored == acked);  // The torn batch is not there at all.
  HQ_REQUIRE_OK(put_batch(20, "d"));
  CHECK(Stored(q) == acked);
  f.RequireVerified();
}

// Files LevelDB writes when the Db opens (a table from the log it
// recovers, a new MANIFEST, CURRENT): when writing one fails, Open reports
// an error, and once the fault is gone (after a power cut too) the Db
// opens with everything in it.
TEST_CASE(
    "fault: Open fails cleanly when a table, MANIFEST or CURRENT write fails") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  const FileKind kind =
      GENERATE(test::kTableFile, test::kManifestFile, test::kCurrentFile);
  const Fault fault = GENERATE(Fault::kWrite, Fault::kSync, Fault::kNoSpace);
  const bool crash = GENERATE(false, true);
  INFO(StorageName(storage) << " kind " << kind << " " << test::FaultName(fault)
                            << (crash ? " power cut" : ""));
  Options o = test::NoBackgroundSweeps();
  o.sync_writes = true;
  FaultDb f(storage, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  std::map<Place, std::string> acked;
  for (int i = 0; i < 10; ++i) {
    const std::string payload = absl::StrCat("m", i);
    const PutResult r = ValueOrDie(q->Put({.payload = payload}));
    acked[{r.partition, r.id}] = payload;
  }
  // The log holds the messages: the next Open writes them to a table.
  const int64_t before = f.env().injected(fault);
  switch (fault) {
    case Fault::kWrite:
      f.env().FailWrites(kind, FaultEnv::kForever);
      break;
    case Fault::kSync:
      f.env().FailSyncs(kind, FaultEnv::kForever);
      break;
    default:
      f.env().LimitSpace(0, kind);
      break;
  }
  const absl::Status s = f.TryOpen();
  {
    INFO(s.ToString());
    CHECK(absl::IsInternal(s));
  }
  CHECK(f.env().injected(fault) > before);
  CHECK(f.db() == nullptr);
  f.env().ClearFaults();
  if (crash) f.Crash();
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  CHECK(Stored(q) == acked);
  f.RequireVerified();
  HQ_REQUIRE_OK(q->Put({.payload = "after"}).status());
}

// A table write failing in a background compaction (a memtable flush):
// LevelDB stops, the Put that meets it fails with Internal, later ones
// with FailedPrecondition; while the fault lasts the Db does not open
// again (it must write the log it recovers to a table); after it, every
// acknowledged message is there.
TEST_CASE("fault: a failed compaction stops writes; data intact after reopen") {
  const Storage storage = GENERATE(Storage::kMemory, Storage::kDisk);
  const bool crash = GENERATE(false, true);
  INFO(StorageName(storage) << (crash ? " power cut" : ""));
  Options o = test::NoBackgroundSweeps();
  o.write_buffer_bytes = 64 << 10;
  FaultDb f(storage, o);
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2}));
  std::map<Place, std::string> acked;
  std::set<Place> synced;
  f.env().FailWrites(test::kTableFile, FaultEnv::kForever);
  absl::Status failed;
  for (int i = 0; i < 20000 && failed.ok(); ++i) {
    const std::string payload = absl::StrCat(i, std::string(500, 'c'));
    // Every 10th put synced: those must survive a power cut too.
    auto r = q->Put({.payload = payload}, {.sync = i % 10 == 0});
    if (r.ok()) {
      acked[{r->partition, r->id}] = payload;
      if (i % 10 == 0) synced.insert({r->partition, r->id});
    } else {
      failed = r.status();
    }
  }
  {
    INFO(failed.ToString());
    REQUIRE(absl::IsInternal(failed));
  }
  RequireRefusesWrites(q->Put({.payload = "refused"}).status());
  CHECK(f.env().injected(Fault::kWrite) >= 1);
  if (crash) f.Crash();
  const absl::Status reopen = f.TryOpen();
  {
    INFO(reopen.ToString());
    CHECK(absl::IsInternal(reopen));
  }
  f.env().ClearFaults();
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const std::map<Place, std::string> stored = Stored(q);
  for (const auto& [place, payload] : stored) {
    INFO(place.second.ToString());
    REQUIRE(acked.count(place) == 1);
    CHECK(acked.at(place) == payload);
  }
  if (!crash) {
    CHECK(stored.size() == acked.size());
  } else {
    // Per partition a prefix, holding at least every synced put.
    std::map<uint32_t, bool> gap;
    for (const auto& [place, payload] : acked) {
      const bool here = stored.count(place) != 0;
      INFO(place.second.ToString());
      if (!here) gap[place.first] = true;
      if (here) CHECK(!gap[place.first]);
      if (synced.count(place) != 0) CHECK(here);
    }
  }
  f.RequireVerified();
  HQ_REQUIRE_OK(q->Put({.payload = "after"}).status());
}

}  // namespace
}  // namespace hq
