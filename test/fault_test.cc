// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Storage faults and closing under load: what a user relies on when the
// disk misbehaves or the Db is destroyed while writes are in flight.

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "absl/strings/match.h"
#include "lib/db_impl.h"
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

// Review of issue 2: the leader releases write_mu_ inside LevelDB's Write;
// destroying the Db then must wait for it and for the writers queued behind
// it, not free the pipeline under them.
TEST_CASE("issue2: destroying the Db waits for writes in flight") {
  TempDir dir;
  LogFaultEnv env(leveldb::Env::Default());
  Options o;
  o.env = &env;
  auto db = ValueOrDie(Db::Open(dir.Sub("db"), o));
  auto* impl = static_cast<DbImpl*>(db.get());
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

  auto reopened = ValueOrDie(Db::Open(dir.Sub("db"), o));
  const auto all = ScanAll(ValueOrDie(reopened->OpenQueue("q")));
  REQUIRE(all.size() == 3);
  CHECK(all[1].payload == "leader");
  CHECK(all[2].payload == "follower");
}

}  // namespace
}  // namespace hq
