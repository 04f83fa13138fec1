// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq_bench's admin workloads: opening (reopen, recover), backup, the TTL
// sweep (ttl), scale in topics (many_topics) and the rowkey-layout lab
// (layout_lab). See the top of hq_bench.cc for what each measures.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/layout_lab.h"
#include "bench/registry.h"
#include "bench/workload.h"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/iterator.h"
#include "leveldb/write_batch.h"
#include "lib/engine/db_impl.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"
#include "lib/util/sync.h"

namespace hq::bench {
namespace {

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Reopen(Context& c, Histogram*) {
  HQ_RETURN_IF_ERROR(c.ReopenHq());  // Untimed: log -> tables.
  c.CloseHq();
  const int64_t heap_before = HeapKb();
  const SteadyClock::time_point start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(c.hq_db, Db::Open(c.hq_path, c.hq_options));
  const double seconds = MicrosSince(start) / 1e6;
  std::printf("reopen heap_kb : %lld\n",
              static_cast<long long>(HeapKb() - heap_before));
  HQ_ASSIGN_OR_RETURN(c.queue, c.hq_db->OpenQueue(kQueueName));
  return Result{seconds, 1, 0};
}

// Three Db::Backup calls of the open hq Db, timed; prints `name` with the
// times, their median and the sizes.
absl::Status TimedBackups(Context& c, const std::string& name) {
  std::vector<double> ms;
  BackupReport report;
  for (int i = 0; i < 3; ++i) {
    const std::string dest = absl::StrCat(c.root, "/", name, "-", i);
    std::error_code ec;
    std::filesystem::remove_all(dest, ec);
    const SteadyClock::time_point start = SteadyClock::now();
    HQ_ASSIGN_OR_RETURN(report, c.hq_db->Backup(dest));
    ms.push_back(MicrosSince(start) / 1e3);
    std::filesystem::remove_all(dest, ec);
  }
  std::vector<double> sorted = ms;
  std::sort(sorted.begin(), sorted.end());
  std::printf(
      "%s : %.1f %.1f %.1f ms; median %.1f ms; %lld tables (%lld linked), "
      "%.1f MB of tables, %.1f MB copied\n",
      name.c_str(), ms[0], ms[1], ms[2], sorted[1],
      static_cast<long long>(report.tables),
      static_cast<long long>(report.tables_linked),
      static_cast<double>(report.table_bytes) / 1048576.0,
      static_cast<double>(report.bytes_copied) / 1048576.0);
  std::fflush(stdout);
  return absl::OkStatus();
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> BackupWorkload(Context& c,
                                                              Histogram*) {
  HQ_RETURN_IF_ERROR(c.ReopenHq());
  HQ_RETURN_IF_ERROR(TimedBackups(c, "backup_linked"));
  // An Env that is not leveldb::Env::Default(): Backup copies.
  class PassThroughEnv final : public leveldb::EnvWrapper {
   public:
    PassThroughEnv() : leveldb::EnvWrapper(leveldb::Env::Default()) {}
  };
  PassThroughEnv env;
  c.CloseHq();
  Options options = c.hq_options;
  options.env = &env;
  HQ_ASSIGN_OR_RETURN(c.hq_db, Db::Open(c.hq_path, options));
  const absl::Status s = TimedBackups(c, "backup_copied");
  c.CloseHq();
  HQ_RETURN_IF_ERROR(s);
  HQ_RETURN_IF_ERROR(c.ReopenHq());
  return Result{};
}

// Runs this binary with --recover_child=path, reads its "READY <messages>"
// line, kills it with SIGKILL and returns <messages>.
absl::StatusOr<int64_t> RunRecoverChild(Context& c, const std::string& path) {
  int out[2];
  if (pipe(out) != 0) return absl::InternalError("pipe() failed");
  const std::string self = std::filesystem::read_symlink("/proc/self/exe");
  const std::vector<std::string> args = {
      self, absl::StrCat("--recover_child=", path),
      absl::StrCat("--write_buffer_bytes=", c.hq_options.write_buffer_bytes),
      absl::StrCat("--value_size=", c.config.value_size)};
  std::vector<char*> argv;
  for (const std::string& a : args) {
    argv.push_back(const_cast<char*>(a.c_str()));
  }
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork() failed");
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    close(out[0]);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  std::string said;
  char buf[256];
  ssize_t n;
  while (said.find('\n') == std::string::npos &&
         (n = read(out[0], buf, sizeof(buf))) > 0) {
    said.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  int64_t written = 0;
  if (!absl::SimpleAtoi(
          absl::StripAsciiWhitespace(absl::StripPrefix(said, "READY ")),
          &written) ||
      written <= 0) {
    return absl::InternalError(
        absl::StrCat("the recover child said '", said, "'"));
  }
  return written;
}

// Counts the messages of `q`.
absl::StatusOr<int64_t> CountMessages(Queue* q) {
  int64_t read = 0;
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Scanner> sc, q->NewScanner({}));
  while (sc->Next()) ++read;
  HQ_RETURN_IF_ERROR(sc->status());
  return read;
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Recover(Context& c, Histogram*) {
  const std::string path = c.root + "/recover";
  HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
  HQ_ASSIGN_OR_RETURN(const int64_t written, RunRecoverChild(c, path));
  const double log_mb = static_cast<double>(DirectoryBytes(path)) / 1048576.0;
  const SteadyClock::time_point start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, c.hq_options));
  const double seconds = MicrosSince(start) / 1e6;
  HQ_ASSIGN_OR_RETURN(Queue * q, db->OpenQueue(kQueueName));
  HQ_ASSIGN_OR_RETURN(const int64_t read, CountMessages(q));
  if (read != written) {
    return absl::DataLossError(absl::StrFormat(
        "after the kill, %d of %d messages are there", read, written));
  }
  std::printf("recover : %.1f MB of log with %lld messages\n", log_mb,
              static_cast<long long>(written));
  return Result{seconds, 1, 0};
}

double DirectoryMb(const std::string& dir) {
  return static_cast<double>(DirectoryBytes(dir)) / 1048576.0;
}

// Messages [begin, end) of the source, for PutBatch.
std::vector<Message> SourceMessages(const Context& c, int64_t begin,
                                    int64_t end) {
  std::vector<Message> batch;
  for (int64_t i = begin; i < end; ++i) batch.push_back(c.source.message(i));
  return batch;
}

// ttl's hq half: --num messages that expire, 1000 that do not, the sweep
// (ttl_sweep, ttl disk_mb) and a scan of what is left
// (ttl_scan_after_sweep, returned).
absl::StatusOr<Result> TtlSweep(Context& c, int64_t live) {
  const int64_t num = c.config.num;
  const std::string dir = c.root + "/ttl";
  SimulatedClock clock;
  Options o = c.hq_options;
  o.clock = &clock;
  o.ttl_sweep_interval = absl::ZeroDuration();
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(dir, o));
  QueueOptions qo = c.queue_options;
  qo.ttl = absl::Hours(1);
  HQ_ASSIGN_OR_RETURN(Queue * q, db->CreateQueue("ttl", qo));
  const double mb_empty = DirectoryMb(dir);
  for (int64_t i = 0; i < num; i += 1000) {
    HQ_RETURN_IF_ERROR(
        q->PutBatch(SourceMessages(c, i, std::min(num, i + 1000)), nullptr));
    clock.Advance(absl::Milliseconds(1));
  }
  static_cast<DbImpl*>(db.get())->leveldb()->CompactRange(nullptr, nullptr);
  const double mb_full = DirectoryMb(dir);
  clock.Advance(absl::Hours(2));
  HQ_RETURN_IF_ERROR(q->PutBatch(SourceMessages(c, 0, live), nullptr));
  SteadyClock::time_point start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(SweepStats stats, db->CompactExpired());
  const double sweep_s = MicrosSince(start) / 1e6;
  if (stats.deleted != num) {
    return absl::InternalError(absl::StrFormat(
        "the sweep deleted %d messages, expected %d", stats.deleted, num));
  }
  PrintLine("ttl_sweep", c.Payloads(sweep_s, num));
  std::printf("ttl disk_mb : empty %.1f; full %.1f; after sweep %.1f\n",
              mb_empty, mb_full, DirectoryMb(dir));
  start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(const int64_t read, CountMessages(q));
  const Result after{MicrosSince(start) / 1e6, read, 0};
  if (read != live) return absl::InternalError("ttl scan lost messages");
  PrintLine("ttl_scan_after_sweep", after);
  return after;
}

// ttl's raw LevelDB half: the same number of keys written then deleted (as
// a naive TTL would), not compacted, and the live keys after them; times
// reading from the start (ttl_scan_leveldb_tombstones, returned).
absl::StatusOr<Result> TtlTombstones(Context& c, int64_t live) {
  const int64_t num = c.config.num;
  RawDb raw;
  leveldb::DB* rdb = nullptr;
  HQ_RETURN_IF_ERROR(
      FromLevelDb(leveldb::DB::Open(LevelDbOptions(c.hq_options, &raw),
                                    c.root + "/ttl-leveldb", &rdb),
                  "opening the raw ttl database"));
  raw.db.reset(rdb);
  const std::string value(static_cast<size_t>(c.config.value_size), 'v');
  auto key = [](int64_t i) {
    std::string k;
    LayoutCodec::AppendMessageId(&k, MessageId{static_cast<uint64_t>(i), 0});
    return k;
  };
  for (int64_t i = 0; i < num + live; i += 1000) {
    leveldb::WriteBatch b;
    for (int64_t j = i; j < std::min(num + live, i + 1000); ++j) {
      b.Put(key(j), value);
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(rdb->Write({}, &b), "raw write"));
  }
  rdb->CompactRange(nullptr, nullptr);
  for (int64_t i = 0; i < num; i += 1000) {
    leveldb::WriteBatch b;
    for (int64_t j = i; j < std::min(num, i + 1000); ++j) b.Delete(key(j));
    HQ_RETURN_IF_ERROR(FromLevelDb(rdb->Write({}, &b), "raw delete"));
  }
  const SteadyClock::time_point start = SteadyClock::now();
  int64_t read = 0;
  {
    std::unique_ptr<leveldb::Iterator> it(rdb->NewIterator({}));
    for (it->SeekToFirst(); it->Valid(); it->Next()) ++read;
  }
  const Result tomb{MicrosSince(start) / 1e6, read, 0};
  PrintLine("ttl_scan_leveldb_tombstones", tomb);
  return tomb;
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Ttl(Context& c, Histogram*) {
  constexpr int64_t kLive = 1000;
  HQ_ASSIGN_OR_RETURN(const Result after, TtlSweep(c, kLive));
  HQ_ASSIGN_OR_RETURN(const Result tomb, TtlTombstones(c, kLive));
  std::printf("ratio ttl_scan_after_sweep/leveldb_tombstones : %.2f\n",
              after.msgs_per_sec() / tomb.msgs_per_sec());
  return Result{};
}

// many_topics' put: --num messages, message i in topic u<i % topics>, the
// layout choosing partitions, --batch per call.
absl::StatusOr<Result> ManyTopicsPut(Context& c, Queue* q) {
  const int64_t num = c.config.num;
  const int64_t topics = c.config.many_topics;
  const int64_t batch = c.config.batch;
  const size_t width = static_cast<size_t>(std::min(batch, num));
  std::vector<Message> messages(width);
  std::vector<std::string> names(width);
  const SteadyClock::time_point start = SteadyClock::now();
  for (int64_t i = 0; i < num; i += batch) {
    const int64_t n = std::min(batch, num - i);
    for (int64_t j = 0; j < n; ++j) {
      const size_t k = static_cast<size_t>(j);
      names[k].clear();
      absl::StrAppend(&names[k], "u", (i + j) % topics);
      messages[k].topic = names[k];
      messages[k].payload = c.source.payload(i + j);
      messages[k].priority = c.source.priority(i + j);
    }
    if (batch == 1) {
      HQ_RETURN_IF_ERROR(q->Put(messages[0]).status());
    } else {
      HQ_RETURN_IF_ERROR(q->PutBatch(
          std::span<const Message>(messages.data(), static_cast<size_t>(n)),
          nullptr));
    }
  }
  return c.Payloads(MicrosSince(start) / 1e6, num);
}

// Claims and completes batches of `batch` from `group` (waiting up to 20 ms
// for work) until a claim that began after `put_done` was set comes back
// empty: the queue is drained. Adds the tasks completed to `*consumed`.
absl::Status ClaimUntilDrained(ConsumerGroup* group, uint32_t batch,
                               const std::atomic<bool>& put_done,
                               int64_t* consumed) {
  const ClaimOptions co{.max = batch, .wait = absl::Milliseconds(20)};
  for (;;) {
    const bool last = put_done.load(std::memory_order_acquire);
    HQ_ASSIGN_OR_RETURN(std::vector<Task> tasks, group->Claim(co));
    if (tasks.empty()) {
      if (last) return absl::OkStatus();
      continue;
    }
    HQ_RETURN_IF_ERROR(group->Complete(tasks));
    *consumed += static_cast<int64_t>(tasks.size());
  }
}

// many_topics' put into a fresh queue of `layout` that has consumer group
// "g" from the start, so that every batch of the topic layout writes its
// lane index record (without a consumer the write path writes none: a
// consumer created later walks the lanes). With `claim`, one consumer of
// the group claims and completes batches of --claim_batch on its own
// thread meanwhile, as a crawler runs: `put` is the producer's time to its
// last acknowledged write, `through` the time until the consumer has
// completed every message (it fails unless the consumer completed --num).
// Without, the group stays idle and `through` is empty. With `deleted`
// (and not `claim`), the group claims once (writing its lane index
// position) and is deleted before the put: the queue has no consumer left.
struct PutWithGroup {
  Result put;
  Result through;
};

absl::StatusOr<PutWithGroup> ManyTopicsPutWithGroup(Context& c, Layout layout,
                                                    bool claim,
                                                    bool deleted = false) {
  const std::string path = absl::StrCat(c.root, "/many-with-group-",
                                        std::string(LayoutName(layout)));
  HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
  QueueOptions qo = c.queue_options;
  qo.layout = layout;
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, c.hq_options));
  HQ_ASSIGN_OR_RETURN(Queue * q, db->CreateQueue("many", qo));
  HQ_ASSIGN_OR_RETURN(ConsumerGroup * group, q->Group("g"));
  if (deleted) {
    HQ_RETURN_IF_ERROR(group->Claim({.max = 1}).status());
    HQ_RETURN_IF_ERROR(q->DeleteGroup("g"));
  }
  std::atomic<bool> put_done{false};
  absl::Status consumer_status;
  int64_t consumed = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  std::thread consumer;
  if (claim) {
    consumer = std::thread([&] {
      consumer_status =
          ClaimUntilDrained(group, c.config.claim_batch, put_done, &consumed);
    });
  }
  absl::StatusOr<Result> put = ManyTopicsPut(c, q);
  put_done.store(true, std::memory_order_release);
  PutWithGroup out;
  if (claim) {
    consumer.join();
    out.through = c.Payloads(MicrosSince(start) / 1e6, consumed);
  }
  HQ_RETURN_IF_ERROR(put.status());
  out.put = *put;
  HQ_RETURN_IF_ERROR(consumer_status);
  if (claim && consumed != c.config.num) {
    return absl::DataLossError(
        absl::StrFormat("%s layout: the consumer completed %d of %d messages",
                        LayoutName(layout), consumed, c.config.num));
  }
  db.reset();
  HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
  return out;
}

// Where ManyTopicsRawPut writes a lane index record per batch: nowhere, at
// hq's key (its own tag, before the message keys), or after every message
// key of the queue (a partition number no message has).
// kHqShared: at hq's key, each lane written as the length of the prefix it
// shares with the one before and the rest (what a smaller index would
// cost).
enum class RawIndex { kNone, kHq, kAfterMessages, kHqShared };

// many_topics' put into a fresh raw LevelDB (`raw`, left open) with the
// topic layout's keys and values (one queue, partition 0), and with `index`
// also one lane index record per batch naming its lanes (kHq: as hq
// writes): LevelDB's cost of what hq stores, without hq.
absl::StatusOr<Result> ManyTopicsRawPut(Context& c, RawIndex index,
                                        RawDb* raw) {
  const int64_t num = c.config.num;
  const int64_t topics = c.config.many_topics;
  const int64_t batch = c.config.batch;
  const std::string path = c.root + "/many-leveldb";
  HQ_RETURN_IF_ERROR(OpenFreshRawDb(c.hq_options, path, raw));
  const LayoutCodec& codec = LayoutCodec::For(Layout::kTopic);
  const uint64_t base_ms =
      static_cast<uint64_t>(absl::ToUnixMillis(absl::Now()));
  std::string key, value, topic, lanes, previous;
  uint64_t seq = 1;
  leveldb::WriteBatch b;
  const SteadyClock::time_point start = SteadyClock::now();
  for (int64_t i = 0; i < num; i += batch) {
    b.Clear();
    lanes.clear();
    previous.clear();
    for (int64_t j = i; j < std::min(num, i + batch); ++j) {
      topic.clear();
      absl::StrAppend(&topic, "u", j % topics);
      key.clear();
      const size_t lane = codec.AppendMessageKey(
          &key, 1, 0, 0, topic,
          MessageId{base_ms + static_cast<uint64_t>(j >> 16),
                    static_cast<uint16_t>(j & 0xffff)});
      if (index == RawIndex::kHqShared) {
        const std::string_view rest = std::string_view(key).substr(5, lane - 5);
        size_t shared = 0;
        while (shared < rest.size() && shared < previous.size() &&
               rest[shared] == previous[shared]) {
          ++shared;
        }
        coding::PutVarint32(&lanes, static_cast<uint32_t>(shared));
        coding::PutLengthPrefixed(&lanes, rest.substr(shared));
        previous.assign(rest);
      } else if (index != RawIndex::kNone) {
        format::AppendHintLane(&lanes, key.substr(0, lane));
      }
      value.clear();
      format::AppendMessageValue(&value, "", c.source.payload(j));
      b.Put(key, value);
    }
    if (index == RawIndex::kHq || index == RawIndex::kHqShared) {
      b.Put(format::ListHintKey(1, 0, seq++), lanes);
    } else if (index == RawIndex::kAfterMessages) {
      key = format::MessagePrefix(1);
      coding::PutFixed16(&key, 0xffff);
      coding::PutFixed64(&key, seq++);
      b.Put(key, lanes);
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(raw->db->Write(leveldb::WriteOptions(), &b),
                                   "writing to raw LevelDB"));
  }
  return c.Payloads(MicrosSince(start) / 1e6, num);
}

// many_topics' claim floor: raw LevelDB over the messages ManyTopicsRawPut
// left (one per topic when --num equals --many_topics), doing the least a
// consumer with durable state must: it reads each message once and copies
// it out as a task, records each claim of --claim_batch tasks (for a
// restart: what was handed out), then completes them in one write. With
// `cursors` 2 (hq's topic layout today) the claim writes each topic's
// cursor (its window) and the completion writes it again; with 1 the claim
// writes one record naming its tasks, which the completion deletes as it
// writes one cursor per topic (the least for a cursor per topic, as
// TableStore and hq keep); with 0 the completion writes one position
// record instead (a consumer whose drained topics need no record). hq's
// time layout writes two records per claim.
absl::StatusOr<Result> ManyTopicsRawClaim(Context& c, leveldb::DB* db,
                                          int cursors) {
  struct RawTask {
    std::string topic, key, payload;
    MessageId id;
  };
  const size_t want = c.config.claim_batch;
  const std::string messages = format::MessagePrefix(1);
  const std::string records = format::GroupRecordPrefix(format::kCursorTag, 1,
                                                        /*group_id=*/1);
  std::unique_ptr<leveldb::Iterator> it(db->NewIterator({}));
  std::vector<RawTask> tasks;
  std::string claim_key, cursor_key, lanes;
  leveldb::WriteBatch b;
  int64_t claimed = 0;
  uint64_t seq = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  it->Seek(messages);
  while (it->Valid() && View(it->key()).starts_with(messages)) {
    tasks.clear();
    lanes.clear();
    for (; tasks.size() < want && it->Valid() &&
           View(it->key()).starts_with(messages);
         it->Next()) {
      const std::string_view key = View(it->key());
      const std::string_view lane =
          key.substr(0, key.size() - LayoutCodec::kMessageIdSize);
      std::string_view k, payload;
      uint64_t not_before_ms;
      if (!format::DecodeMessageValue(View(it->value()), &k, &payload,
                                      &not_before_ms)) {
        return absl::DataLossError("raw LevelDB: malformed message");
      }
      RawTask& t = tasks.emplace_back();
      t.topic.assign(lane.substr(messages.size()));
      t.key.assign(k);
      t.payload.assign(payload);
      t.id = LayoutCodec::DecodeMessageId(key.data() + lane.size());
      format::AppendHintLane(&lanes, lane);
    }
    auto put_cursors = [&] {
      for (const RawTask& t : tasks) {
        cursor_key = records;
        cursor_key.append(t.topic);
        b.Put(cursor_key, format::EncodeCursor({t.id.Next(), t.id.Next()}));
      }
    };
    claim_key = records;
    coding::PutFixed64(&claim_key, ++seq);
    b.Clear();
    if (cursors == 2) {
      put_cursors();
    } else {
      b.Put(claim_key, lanes);
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(db->Write({}, &b), "claiming"));
    b.Clear();
    if (cursors == 2) {
      put_cursors();
    } else {
      b.Delete(claim_key);
      if (cursors == 1) {
        put_cursors();
      } else {
        b.Put(records, claim_key);
      }
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(db->Write({}, &b), "completing"));
    claimed += static_cast<int64_t>(tasks.size());
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading raw LevelDB"));
  if (claimed != c.config.num) {
    return absl::DataLossError(absl::StrFormat(
        "raw LevelDB: claimed %d of %d messages", claimed, c.config.num));
  }
  return c.Payloads(MicrosSince(start) / 1e6, claimed);
}

// Whole-topic reads of random topics of `q`: up to 1000 of them, or as
// many as 5 s allow (one op = one topic).
absl::StatusOr<Result> ManyTopicsRead(Context& c, Queue* q) {
  const int64_t num = c.config.num;
  const int64_t topics = c.config.many_topics;
  std::mt19937_64 rng(7);
  int64_t reads = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  while (reads < 1000 && MicrosSince(start) < 5e6) {
    const int64_t t =
        static_cast<int64_t>(rng() % static_cast<uint64_t>(topics));
    ScanOptions so;
    so.topics = {absl::StrCat("u", t)};
    HQ_ASSIGN_OR_RETURN(std::unique_ptr<Scanner> sc, q->NewScanner(so));
    int64_t got = 0;
    while (sc->Next()) ++got;
    HQ_RETURN_IF_ERROR(sc->status());
    const int64_t want = num / topics + (t < num % topics ? 1 : 0);
    if (got != want) {
      return absl::DataLossError(
          absl::StrFormat("topic u%d: read %d messages, put %d", t, got, want));
    }
    ++reads;
  }
  return Result{MicrosSince(start) / 1e6, reads, 0};
}

// Counts a subscription's deliveries; Wait returns once `n` came.
class CountingListener : public MessageListener {
 public:
  absl::Status OnMessage(const MessageView&) override {
    MutexLock l(&mu_);
    if (got_ == 0) first_ = SteadyClock::now();
    if (++got_ == want_) cv_.SignalAll();
    return absl::OkStatus();
  }
  // When the first delivery came. REQUIRES: one came (Wait returned true).
  SteadyClock::time_point first() {
    MutexLock l(&mu_);
    return first_;
  }
  // False if no delivery came for a minute (a liveness bound).
  bool Wait(int64_t n) {
    MutexLock l(&mu_);
    want_ = n;
    int64_t last = got_;
    while (got_ < n) {
      if (cv_.WaitWithTimeout(&mu_, absl::Minutes(1))) {
        if (got_ == last) return false;
        last = got_;
      }
    }
    return true;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  int64_t got_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t want_ ABSL_GUARDED_BY(mu_) = -1;
  SteadyClock::time_point first_ ABSL_GUARDED_BY(mu_);
};

// LevelDB's part of the heap: its memtables and block cache
// ("leveldb.approximate-memory-usage"), in KiB; 0 if it does not say.
int64_t LevelDbKb(Db* db) {
  std::string v;
  uint64_t bytes = 0;
  if (!static_cast<DbImpl*>(db)->leveldb()->GetProperty(
          "leveldb.approximate-memory-usage", &v) ||
      !absl::SimpleAtoi(v, &bytes)) {
    return 0;
  }
  return static_cast<int64_t>(bytes / 1024);
}

// many_topics' subscription: a new one, created after the reopen, delivers
// every message (the topic layout's walks the lanes, as one
// created over existing data does). Prints its load (the Subscribe call)
// delivery lines, and the time from Subscribe to the first delivery.
absl::StatusOr<Result> ManyTopicsSubscribe(
    Context& c, Queue* q, const std::function<std::string(const char*)>& line) {
  CountingListener listener;
  SteadyClock::time_point start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(Subscription * sub,
                      q->Subscribe({.name = "s"}, &listener));
  PrintLine(line("sub_load"), Result{MicrosSince(start) / 1e6, 1, 0});
  if (!listener.Wait(c.config.num)) {
    return absl::DeadlineExceededError(
        "the subscription delivered nothing for a minute");
  }
  const Result r = c.Payloads(MicrosSince(start) / 1e6, c.config.num);
  PrintLine(
      line("sub_first"),
      Result{std::chrono::duration<double>(listener.first() - start).count(), 1,
             0});
  // A delivery counts once its listener has returned: the last one may
  // still be on its way (a liveness bound of a minute).
  const SteadyClock::time_point waited = SteadyClock::now();
  for (;;) {
    HQ_ASSIGN_OR_RETURN(const SubscriptionStats st, sub->Stats());
    if (st.delivered == static_cast<uint64_t>(c.config.num)) break;
    if (st.delivered > static_cast<uint64_t>(c.config.num) ||
        MicrosSince(waited) > 60e6) {
      return absl::DataLossError(absl::StrFormat(
          "the subscription delivered %d of %d", st.delivered, c.config.num));
    }
    absl::SleepFor(absl::Milliseconds(1));
  }
  PrintLine(line("subscribe"), r);
  return r;
}

// many_topics for one layout, in a fresh Db: prints its lines and adds
// its put, read and claim Results to `results` (keyed "put<layout>", ...).
absl::Status ManyTopicsLayout(
    Context& c, Layout layout,
    absl::flat_hash_map<std::string, Result>& results) {
  const std::string ln(LayoutName(layout));
  const std::function<std::string(const char*)> line = [&ln](const char* what) {
    return absl::StrCat("many_topics_", what, "[", ln, "]");
  };
  const std::string path = c.root + "/many-" + ln;
  HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
  const int64_t heap_before = HeapKb();
  QueueOptions qo = c.queue_options;
  qo.layout = layout;
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, c.hq_options));
  HQ_ASSIGN_OR_RETURN(Queue * q, db->CreateQueue("many", qo));
  HQ_ASSIGN_OR_RETURN(const Result put, ManyTopicsPut(c, q));
  PrintLine(line("put"), put);
  results[absl::StrCat("put", ln)] = put;
  const int64_t heap_put = HeapKb() - heap_before;
  WaitForCompactions(static_cast<DbImpl*>(db.get())->leveldb());

  // Reopen: Db::Open, then the first Group call (the time layout's reads
  // the lanes; the topic layout's only the group's records).
  db.reset();
  SteadyClock::time_point start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(db, Db::Open(path, c.hq_options));
  PrintLine(line("reopen"), Result{MicrosSince(start) / 1e6, 1, 0});
  HQ_ASSIGN_OR_RETURN(q, db->OpenQueue("many"));
  start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(ConsumerGroup * group, q->Group("g"));
  PrintLine(line("group_load"), Result{MicrosSince(start) / 1e6, 1, 0});
  const int64_t heap_load = HeapKb() - heap_before;

  // The first Claim after the reopen (one op).
  start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(std::vector<Task> first,
                      group->Claim({.max = c.config.claim_batch}));
  PrintLine(line("first_claim"), Result{MicrosSince(start) / 1e6, 1, 0});
  const int64_t heap_first = HeapKb() - heap_before;
  const int64_t leveldb_first = LevelDbKb(db.get());
  HQ_RETURN_IF_ERROR(group->Complete(first));

  HQ_ASSIGN_OR_RETURN(const Result read, ManyTopicsRead(c, q));
  PrintLine(line("read_topic"), read);
  results[absl::StrCat("read", ln)] = read;

  if (!c.config.many_topics_drain) {
    std::printf(
        "many_topics heap_kb[%s] : after put %lld; after group load "
        "%lld; after first claim %lld\n",
        ln.c_str(), static_cast<long long>(heap_put),
        static_cast<long long>(heap_load), static_cast<long long>(heap_first));
    std::fflush(stdout);
    return absl::OkStatus();
  }
  // Claim across all topics.
  start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(int64_t claimed, c.Drain(group));
  claimed += static_cast<int64_t>(first.size());
  const Result claim = c.Payloads(MicrosSince(start) / 1e6, claimed);
  if (claimed != c.config.num) {
    return absl::DataLossError(
        absl::StrFormat("claimed %d of %d messages", claimed, c.config.num));
  }
  PrintLine(line("claim"), claim);
  results[absl::StrCat("claim", ln)] = claim;
  const int64_t heap_claim = HeapKb() - heap_before;
  const int64_t leveldb_claim = LevelDbKb(db.get());

  HQ_ASSIGN_OR_RETURN(const Result sub, ManyTopicsSubscribe(c, q, line));
  results[absl::StrCat("subscribe", ln)] = sub;
  std::printf(
      "many_topics heap_kb[%s] : after put %lld; after group load %lld; "
      "after first claim %lld; after claim %lld; after subscribe %lld\n",
      ln.c_str(), static_cast<long long>(heap_put),
      static_cast<long long>(heap_load), static_cast<long long>(heap_first),
      static_cast<long long>(heap_claim),
      static_cast<long long>(HeapKb() - heap_before));
  std::printf(
      "many_topics leveldb_kb[%s] : after first claim %lld; after claim "
      "%lld; after subscribe %lld\n",
      ln.c_str(), static_cast<long long>(leveldb_first),
      static_cast<long long>(leveldb_claim),
      static_cast<long long>(LevelDbKb(db.get())));
  std::fflush(stdout);
  return absl::OkStatus();
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ManyTopics(Context& c,
                                                          Histogram*) {
  absl::flat_hash_map<std::string, Result> results;
  for (const Layout layout : {Layout::kTopic, Layout::kTime}) {
    HQ_RETURN_IF_ERROR(ManyTopicsLayout(c, layout, results));
  }
  // The topic layout's rate over the time layout's, per line measured.
  auto PrintLayoutRatios = [&results] {
    for (const char* what : {"put", "read", "claim", "subscribe"}) {
      if (results[absl::StrCat(what, "topic")].messages == 0) continue;
      PrintRatio(absl::StrCat("many_topics_", what,
                              std::string_view(what) == "read" ? "_topic" : "",
                              "[topic]/[time]"),
                 results[absl::StrCat(what, "topic")],
                 results[absl::StrCat(what, "time")]);
    }
  };
  if (!c.config.many_topics_extras) {
    PrintLayoutRatios();
    return Result{};
  }
  HQ_ASSIGN_OR_RETURN(const PutWithGroup idle,
                      ManyTopicsPutWithGroup(c, Layout::kTopic, false));
  const Result put_grouped = idle.put;
  PrintLine("many_topics_put[topic_with_group]", put_grouped);
  HQ_ASSIGN_OR_RETURN(const PutWithGroup gone,
                      ManyTopicsPutWithGroup(c, Layout::kTopic, false, true));
  PrintLine("many_topics_put[topic_group_deleted]", gone.put);
  absl::flat_hash_map<Layout, PutWithGroup> claiming;
  for (const Layout layout : {Layout::kTopic, Layout::kTime}) {
    HQ_ASSIGN_OR_RETURN(claiming[layout],
                        ManyTopicsPutWithGroup(c, layout, true));
    const std::string ln(LayoutName(layout));
    PrintLine(absl::StrCat("many_topics_put[", ln, "_while_claiming]"),
              claiming[layout].put);
    PrintLine(absl::StrCat("many_topics_through[", ln, "_while_claiming]"),
              claiming[layout].through);
  }
  // Raw LevelDB with the topic layout's records, in this order.
  RawDb raw;
  absl::flat_hash_map<RawIndex, Result> raw_puts;
  for (const auto& [index, name] :
       {std::pair<RawIndex, const char*>{RawIndex::kAfterMessages,
                                         "leveldb_topic_keys_index_after"},
        {RawIndex::kHqShared, "leveldb_topic_keys_index_shared"},
        {RawIndex::kNone, "leveldb_topic_keys"},
        {RawIndex::kHq, "leveldb_topic_keys_index"}}) {
    HQ_ASSIGN_OR_RETURN(raw_puts[index], ManyTopicsRawPut(c, index, &raw));
    PrintLine(absl::StrCat("many_topics_put[", name, "]"), raw_puts[index]);
  }
  const Result& raw_after = raw_puts[RawIndex::kAfterMessages];
  const Result& raw_shared = raw_puts[RawIndex::kHqShared];
  const Result& raw_put = raw_puts[RawIndex::kNone];
  const Result& raw_index = raw_puts[RawIndex::kHq];
  Result floor_two, floor_topic, floor_claim;
  if (c.config.many_topics_drain) {
    WaitForCompactions(raw.db.get());
    HQ_ASSIGN_OR_RETURN(floor_two, ManyTopicsRawClaim(c, raw.db.get(), 2));
    PrintLine("many_topics_claim[leveldb_two_cursors_per_topic]", floor_two);
    HQ_ASSIGN_OR_RETURN(floor_topic, ManyTopicsRawClaim(c, raw.db.get(), 1));
    PrintLine("many_topics_claim[leveldb_cursor_per_topic]", floor_topic);
    HQ_ASSIGN_OR_RETURN(floor_claim, ManyTopicsRawClaim(c, raw.db.get(), 0));
    PrintLine("many_topics_claim[leveldb_record_per_claim]", floor_claim);
  }
  raw.db.reset();
  const std::string raw_path = c.root + "/many-leveldb";
  HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(raw_path, {}), raw_path));
  PrintLayoutRatios();
  PrintRatio("many_topics_put[topic_with_group]/[time]", put_grouped,
             results["puttime"]);
  PrintRatio("many_topics_put[topic_group_deleted]/[time]", gone.put,
             results["puttime"]);
  PrintRatio("many_topics_put[topic_group_deleted]/[topic]", gone.put,
             results["puttopic"]);
  PrintRatio("many_topics_put[topic_while_claiming]/[time_while_claiming]",
             claiming[Layout::kTopic].put, claiming[Layout::kTime].put);
  PrintRatio("many_topics_through[topic_while_claiming]/[time_while_claiming]",
             claiming[Layout::kTopic].through, claiming[Layout::kTime].through);
  PrintRatio("many_topics_put[topic]/[leveldb_topic_keys]", results["puttopic"],
             raw_put);
  PrintRatio("many_topics_put[topic]/[leveldb_topic_keys_index]",
             results["puttopic"], raw_index);
  // The floors against the time layout: what the topic layout could reach
  // with its records (a put that writes the lane index; claims that write
  // a cursor per topic, or a record per claim), were hq's cost nothing.
  PrintRatio("many_topics_put[leveldb_topic_keys_index]/[time]", raw_index,
             results["puttime"]);
  PrintRatio("many_topics_put[leveldb_topic_keys_index_after]/[time]",
             raw_after, results["puttime"]);
  PrintRatio("many_topics_put[leveldb_topic_keys_index_shared]/[time]",
             raw_shared, results["puttime"]);
  if (floor_topic.messages != 0) {
    PrintRatio("many_topics_claim[topic]/[leveldb_two_cursors_per_topic]",
               results["claimtopic"], floor_two);
    for (const auto& [name, floor] : {std::pair<const char*, const Result*>{
                                          "two_cursors_per_topic", &floor_two},
                                      {"cursor_per_topic", &floor_topic},
                                      {"record_per_claim", &floor_claim}}) {
      PrintRatio(absl::StrCat("many_topics_claim[leveldb_", name, "]/[time]"),
                 *floor, results["claimtime"]);
    }
  }
  return Result{};
}

absl::StatusOr<Result> LayoutLab(Context& c, Histogram*) {
  HQ_RETURN_IF_ERROR(RunLayoutLab(c.config.lab, c.hq_options, c.root));
  return Result{};
}

}  // namespace

int RecoverChild(const std::string& dir, const Config& config) {
  Options o;
  if (config.write_buffer_bytes != -1) {
    o.write_buffer_bytes = static_cast<size_t>(config.write_buffer_bytes);
  }
  absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(dir, o);
  if (!db.ok()) return 1;
  absl::StatusOr<Queue*> q = (*db)->CreateQueue(
      kQueueName, {.max_payload_bytes = std::max<uint32_t>(
                       QueueOptions().max_payload_bytes,
                       static_cast<uint32_t>(config.value_size))});
  if (!q.ok()) return 1;
  const std::string payload(config.value_size, 'r');
  std::vector<Message> batch(100, Message{.payload = payload});
  int64_t written = 0;
  // Each message costs about its payload and 40 bytes of key, value framing
  // and log record in the memtable.
  const size_t per = config.value_size + 40;
  while ((static_cast<size_t>(written) + 100) * per <
         o.write_buffer_bytes * 9 / 10) {
    if (!(*q)->PutBatch(batch, nullptr).ok()) return 1;
    written += 100;
  }
  std::printf("READY %lld\n", static_cast<long long>(written));
  std::fflush(stdout);
  pause();
  return 0;
}

void AddAdminWorkloads(std::vector<Workload>* out) {
  out->push_back({.name = "reopen",
                  .description = "Db::Open of the hq Db after an untimed "
                                 "close and open; reopen heap_kb",
                  .run = Reopen,
                  .needs = Workload::Needs::kHqDb,
                  .unmet = "'reopen' reopens the hq Db: list put or "
                           "create_queues before it in --benchmarks"});
  out->push_back({.name = "backup",
                  .description = "Db::Backup of put's Db, tables linked, "
                                 "then copied",
                  .run = BackupWorkload,
                  .needs = Workload::Needs::kHqDb,
                  .unmet = "'backup' backs up the hq Db: list put before it "
                           "in --benchmarks"});
  out->push_back({.name = "recover",
                  .description = "Db::Open replaying the log of a child "
                                 "killed with SIGKILL",
                  .run = Recover});
  out->push_back({.name = "ttl",
                  .description = "Db::CompactExpired of --num expired "
                                 "messages; scans after it",
                  .run = Ttl});
  out->push_back({.name = "many_topics",
                  .description = "put, reopen, group load, topic reads and "
                                 "claims over --many_topics topics, per layout",
                  .run = ManyTopics});
  out->push_back({.name = "layout_lab",
                  .description = "the rowkey-layout lab (bench/layout_lab.h)",
                  .run = LayoutLab});
}

}  // namespace hq::bench
