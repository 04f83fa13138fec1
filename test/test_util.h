// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Shared test helpers: temporary directories, the in-memory Env, and a
// fixture that opens, reopens and closes a Db on either.

#ifndef HQ_TEST_TEST_UTIL_H_
#define HQ_TEST_TEST_UTIL_H_

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "catch2/catch.hpp"
#include "hq/hq.h"
#include "leveldb/env.h"
#include "leveldb/helpers/memenv.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"

// Sanitized builds run several times slower (ThreadSanitizer most): tests
// that scale their work down to stay within meson's timeouts read these.
#if defined(__has_feature)
#define HQ_TEST_HAS_FEATURE(x) __has_feature(x)
#else
#define HQ_TEST_HAS_FEATURE(x) 0
#endif

namespace hq::test {

#if defined(__SANITIZE_THREAD__) || HQ_TEST_HAS_FEATURE(thread_sanitizer)
inline constexpr bool kThreadSanitizer = true;
#else
inline constexpr bool kThreadSanitizer = false;
#endif
#if defined(__SANITIZE_ADDRESS__) || HQ_TEST_HAS_FEATURE(address_sanitizer)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// Fails the current test with the status' message unless it is OK.
#define HQ_REQUIRE_OK(expr)              \
  do {                                   \
    const ::absl::Status hq_s_ = (expr); \
    INFO(hq_s_.ToString());              \
    REQUIRE(hq_s_.ok());                 \
  } while (0)

// Returns the value of a StatusOr, failing the test if it is not OK.
template <typename T>
T ValueOrDie(absl::StatusOr<T> v) {
  INFO(v.status().ToString());
  REQUIRE(v.ok());
  return std::move(v).value();
}

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/hq_test_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    REQUIRE(mkdtemp(buf.data()) != nullptr);
    path_ = buf.data();
  }
  // Removed with what it holds, unless HQ_TEST_KEEP_DIRS is set (to keep a
  // failed run's files for reading): then its path is printed instead.
  ~TempDir() {
    const char* keep = std::getenv("HQ_TEST_KEEP_DIRS");
    if (keep != nullptr && *keep != '\0') {
      std::fprintf(stderr, "kept %s (HQ_TEST_KEEP_DIRS)\n", path_.c_str());
      return;
    }
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A random seed for this run: Catch's --rng-seed if given, else a fixed one,
// mixed with `salt` so that threads and cases draw different streams.
inline uint64_t Seed(uint64_t salt) {
  const uint64_t base = Catch::rngSeed() != 0 ? Catch::rngSeed() : 20260101;
  return base * 1000003 + salt;
}

// The engine behind a Db, for white-box checks (TEST_ hooks, LevelDB).
inline DbImpl* Impl(Db* db) { return static_cast<DbImpl*>(db); }

// Options without the janitor's background work: TTL sweeps and live
// status publications (their timers are leases, and work on the janitor
// thread would race a test's own checks).
inline Options NoBackgroundSweeps() {
  Options o;
  o.ttl_sweep_interval = absl::ZeroDuration();
  o.status_interval = absl::ZeroDuration();
  return o;
}

// Where a test Db lives: a real directory or the in-memory Env.
enum class Storage { kDisk, kMemory };

inline const char* StorageName(Storage s) {
  return s == Storage::kDisk ? "disk" : "memory";
}

// Owns the storage (directory or in-memory Env), a simulated clock and the
// open Db; Reopen() closes and opens it again on the same storage.
class DbFixture {
 public:
  explicit DbFixture(Storage storage = Storage::kDisk, Options options = {})
      : storage_(storage), options_(options) {
    if (storage_ == Storage::kMemory) {
      // A caller-supplied Env (a wrapper around its own in-memory Env) wins.
      if (options_.env == nullptr) {
        env_.reset(leveldb::NewMemEnv(leveldb::Env::Default()));
        options_.env = env_.get();
      }
      path_ = "/hq-mem/db";
    } else {
      path_ = dir_.Sub("db");
    }
    if (options_.clock == nullptr) options_.clock = &clock_;
    Reopen();
  }

  Db* db() { return db_.get(); }
  SimulatedClock& clock() { return clock_; }
  const Options& options() const { return options_; }
  const std::string& path() const { return path_; }

  void Close() { db_.reset(); }
  void Reopen() {
    db_.reset();
    db_ = ValueOrDie(Db::Open(path_, options_));
  }

 private:
  Storage storage_;
  TempDir dir_;
  std::unique_ptr<leveldb::Env> env_;
  SimulatedClock clock_;
  Options options_;
  std::string path_;
  std::unique_ptr<Db> db_;
};

// Number of LevelDB keys of `db` that start with `prefix`.
inline size_t CountKeys(Db* db, const std::string& prefix) {
  std::unique_ptr<leveldb::Iterator> it(
      Impl(db)->leveldb()->NewIterator(leveldb::ReadOptions()));
  size_t n = 0;
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    ++n;
  }
  return n;
}

// The largest subscription checkpoint stored for queue `q` (for a queue
// with a single lane: its checkpoint); Min() if none, nullopt if a record
// does not decode. No Catch assertions: callable from listener threads.
inline std::optional<MessageId> StoredCheckpoint(Db* db, Queue* q) {
  const std::string prefix = format::QueuePrefix(
      format::kCheckpointTag, static_cast<QueueImpl*>(q)->id());
  std::unique_ptr<leveldb::Iterator> it(
      Impl(db)->leveldb()->NewIterator(leveldb::ReadOptions()));
  MessageId best = MessageId::Min();
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
       it->Next()) {
    MessageId id;
    if (!format::DecodeCheckpoint(
            std::string_view(it->value().data(), it->value().size()), &id)) {
      return std::nullopt;
    }
    best = std::max(best, id);
  }
  return best;
}

// Compacts all of `db`, then waits until LevelDB has no size compaction
// due (level 0 under its trigger, every level under its byte limit), so
// that a background compaction cannot start in a test's measured window.
// CompactRange alone can leave a level over its limit (it compacts into the
// deepest level holding files, which may be level 1), and the compaction
// that then follows rewrites that level at a time of LevelDB's choosing.
inline void CompactAllAndSettle(leveldb::DB* db) {
  db->CompactRange(nullptr, nullptr);
  const absl::Time give_up = absl::Now() + absl::Seconds(120);
  for (;;) {
    // "--- level N ---" headers, then one " number:bytes[...]" per file.
    std::string tables;
    REQUIRE(db->GetProperty("leveldb.sstables", &tables));
    std::vector<uint64_t> bytes(8, 0), files(8, 0);
    std::istringstream in(tables);
    std::string line;
    int level = -1;
    while (std::getline(in, line)) {
      int l;
      unsigned long long number, size;
      if (std::sscanf(line.c_str(), "--- level %d ---", &l) == 1) {
        level = l;
      } else if (level >= 0 && level < 8 &&
                 std::sscanf(line.c_str(), " %llu:%llu[", &number, &size) ==
                     2) {
        bytes[level] += size;
        ++files[level];
      }
    }
    // LevelDB 1.23's triggers: 4 files in level 0, 10 MiB in level 1, and
    // ten times more in each level after.
    bool due = files[0] >= 4;
    double limit = 10.0 * 1048576;
    for (int l = 1; l < 7; ++l, limit *= 10) {
      if (static_cast<double>(bytes[l]) >= limit) due = true;
    }
    if (!due) return;
    INFO(tables);
    REQUIRE(absl::Now() < give_up);  // A liveness bound, not a timing test.
    absl::SleepFor(absl::Milliseconds(10));
  }
}

// Reads every message a scanner yields (failing the test on error).
struct ScannedMessage {
  MessageId id;
  uint32_t partition;
  int priority;
  std::string topic, key, payload;
  bool operator==(const ScannedMessage&) const = default;
};

inline std::vector<ScannedMessage> ScanAll(Queue* q,
                                           const ScanOptions& o = {}) {
  auto scanner = ValueOrDie(q->NewScanner(o));
  std::vector<ScannedMessage> out;
  while (scanner->Next()) {
    const MessageView& m = scanner->message();
    out.push_back({m.id, m.partition, m.priority, std::string(m.topic),
                   std::string(m.key), std::string(m.payload)});
  }
  HQ_REQUIRE_OK(scanner->status());
  return out;
}

// Fills a topic layout queue with the lanes a consumer created after them
// walks: 300 of one message (topic "s<i>", payload "s<i>/0", priority
// i % 2) and 20 of three (topic "m<i>", payloads "m<i>/<k>", priority 0).
// Returns the payloads written.
inline std::multiset<std::string> PutWalkedLanes(Queue* q) {
  std::multiset<std::string> put;
  auto put_one = [&](const std::string& topic, int priority,
                     const std::string& payload) {
    HQ_REQUIRE_OK(
        q->Put({.topic = topic, .payload = payload, .priority = priority})
            .status());
    put.insert(payload);
  };
  for (int i = 0; i < 300; ++i) {
    put_one(absl::StrCat("s", i), i % 2, absl::StrCat("s", i, "/0"));
  }
  for (int i = 0; i < 20; ++i) {
    for (int k = 0; k < 3; ++k) {
      put_one(absl::StrCat("m", i), 0, absl::StrCat("m", i, "/", k));
    }
  }
  return put;
}

// An Env that counts fsyncs of written files and reads of table files:
// observable proxies for durability and for how much a read touches.
class CountingEnv : public leveldb::EnvWrapper {
 public:
  explicit CountingEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}

  leveldb::Status NewWritableFile(const std::string& name,
                                  leveldb::WritableFile** result) override {
    leveldb::Status s = target()->NewWritableFile(name, result);
    if (s.ok()) {
      *result = new Writable(
          *result, &syncs, name.ends_with(".ldb") ? &table_bytes : &log_bytes);
    }
    return s;
  }
  leveldb::Status NewRandomAccessFile(
      const std::string& name, leveldb::RandomAccessFile** result) override {
    leveldb::Status s = target()->NewRandomAccessFile(name, result);
    if (s.ok()) *result = new RandomAccess(*result, this);
    return s;
  }

  std::atomic<int64_t> syncs{0};
  // Reads of table files by any thread (LevelDB's compactions too), and by
  // the thread that made this Env: what a test's own scans cost, whatever
  // compaction LevelDB runs meanwhile.
  std::atomic<int64_t> reads{0};
  std::atomic<int64_t> own_reads{0};
  std::atomic<int64_t> table_bytes{0};  // Appended to .ldb files.
  std::atomic<int64_t> log_bytes{0};    // Appended to other files (log...).

 private:
  class Writable : public leveldb::WritableFile {
   public:
    Writable(leveldb::WritableFile* f, std::atomic<int64_t>* n,
             std::atomic<int64_t>* bytes)
        : f_(f), n_(n), bytes_(bytes) {}
    ~Writable() override { delete f_; }
    leveldb::Status Append(const leveldb::Slice& d) override {
      *bytes_ += static_cast<int64_t>(d.size());
      return f_->Append(d);
    }
    leveldb::Status Close() override { return f_->Close(); }
    leveldb::Status Flush() override { return f_->Flush(); }
    leveldb::Status Sync() override {
      ++*n_;
      return f_->Sync();
    }

   private:
    leveldb::WritableFile* f_;
    std::atomic<int64_t>* n_;
    std::atomic<int64_t>* bytes_;
  };
  class RandomAccess : public leveldb::RandomAccessFile {
   public:
    RandomAccess(leveldb::RandomAccessFile* f, CountingEnv* env)
        : f_(f), env_(env) {}
    ~RandomAccess() override { delete f_; }
    leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                         char* scratch) const override {
      ++env_->reads;
      if (std::this_thread::get_id() == env_->owner_) ++env_->own_reads;
      return f_->Read(offset, n, result, scratch);
    }

   private:
    leveldb::RandomAccessFile* f_;
    CountingEnv* env_;
  };
  const std::thread::id owner_ = std::this_thread::get_id();
};

// The path in environment variable `name` (set by test/meson.build).
inline std::string PathFromEnv(const char* name) {
  const char* path = std::getenv(name);
  INFO("environment variable " << name);
  REQUIRE(path != nullptr);
  return path;
}

// How long a test waits for a child's next line or for its exit before it
// kills the child and fails. A liveness bound, not a timing test: generous
// enough for sanitized builds on a loaded machine.
inline constexpr absl::Duration kChildDeadline = absl::Seconds(60);

// Waits up to `deadline` for process `pid` to exit and returns its wait
// status. If it has not exited by then, kills it with SIGKILL, reaps it and
// fails the test with a message naming `what` (the command).
inline int WaitForExit(pid_t pid, const std::string& what,
                       absl::Duration deadline = kChildDeadline) {
  const absl::Time give_up = absl::Now() + deadline;
  int status = 0;
  for (;;) {
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    REQUIRE((r == 0 || errno == EINTR));
    if (absl::Now() >= give_up) break;
    absl::SleepFor(absl::Milliseconds(2));
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  FAIL("child process `" << what << "` did not exit within "
                         << absl::FormatDuration(deadline)
                         << "; killed it with SIGKILL");
  return status;
}

// A child process (test/hq_test_helper, found through $HQ_TEST_HELPER, or
// another program) with pipes to its stdin and stdout. Every wait on it has
// a deadline (kChildDeadline by default): a child that hangs is killed and
// the test fails naming its command, instead of hanging until meson's
// timeout.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args)
      : Child(PathFromEnv("HQ_TEST_HELPER"), args) {}
  Child(const std::string& program, const std::vector<std::string>& args) {
    command_ = program;
    for (const std::string& a : args) command_ += " " + a;
    int in[2], out[2];
    REQUIRE(pipe2(in, O_CLOEXEC) == 0);
    REQUIRE(pipe2(out, O_CLOEXEC) == 0);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(in[0], 0);  // dup2 clears O_CLOEXEC on the copies.
      dup2(out[1], 1);
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(program.c_str()));
      for (const std::string& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(program.c_str(), argv.data());
      _exit(127);
    }
    close(in[0]);
    close(out[1]);
    stdin_fd_ = in[1];
    out_fd_ = out[0];
  }
  ~Child() {
    CloseStdin();
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);  // SIGKILL cannot be ignored.
    }
    if (out_fd_ >= 0) close(out_fd_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  // The child's command line, for messages.
  const std::string& command() const { return command_; }
  // Its process id; -1 once it was waited for.
  pid_t pid() const { return pid_; }

  // The next line of the child's stdout without the newline; at EOF, what
  // is left of a last unterminated line ("" if none). A line that does not
  // come within `deadline` fails the test (the child is killed).
  std::string ReadLine(absl::Duration deadline = kChildDeadline) {
    const absl::Time give_up = absl::Now() + deadline;
    for (;;) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        return line;
      }
      if (eof_) return std::exchange(buffer_, std::string());
      const absl::Duration left = give_up - absl::Now();
      pollfd p{.fd = out_fd_, .events = POLLIN, .revents = 0};
      const int r =
          left <= absl::ZeroDuration()
              ? 0
              : poll(&p, 1,
                     static_cast<int>(absl::ToInt64Milliseconds(left)) + 1);
      if (r < 0 && errno == EINTR) continue;
      REQUIRE(r >= 0);
      if (r == 0) {
        Kill();
        FAIL("child process `" << command_ << "` wrote no line within "
                               << absl::FormatDuration(deadline)
                               << "; killed it with SIGKILL");
      }
      char chunk[4096];
      const ssize_t n = read(out_fd_, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;
      REQUIRE(n >= 0);
      if (n == 0) eof_ = true;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  void CloseStdin() {
    if (stdin_fd_ >= 0) close(stdin_fd_);
    stdin_fd_ = -1;
  }
  void Kill() {
    if (pid_ > 0) kill(pid_, SIGKILL);
  }
  // Sends `sig`, waits for the child to exit and returns its exit code
  // (128 + the signal's number if a signal ended it).
  int Stop(int sig, absl::Duration deadline = kChildDeadline) {
    if (pid_ > 0) kill(pid_, sig);
    const int status = Wait(deadline);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  // Waits for the child to exit; returns its wait status. A child that has
  // not exited within `deadline` is killed and fails the test.
  int Wait(absl::Duration deadline = kChildDeadline) {
    if (pid_ <= 0) return 0;
    const pid_t pid = std::exchange(pid_, -1);
    return WaitForExit(pid, command_, deadline);
  }

 private:
  std::string command_;
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int out_fd_ = -1;
  std::string buffer_;  // Read from the child, not yet returned.
  bool eof_ = false;
};

}  // namespace hq::test

#endif  // HQ_TEST_TEST_UTIL_H_
