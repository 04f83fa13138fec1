// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq: inspect and operate an hq database from the shell.
//
//   hq [--db=DIR] [--json] SUBCOMMAND [ARGS] [FLAGS]
//
// The database is --db, or $HQ_DB. Subcommands:
//   ls                   queues: partitions, priorities, layout, TTL, size
//   stat QUEUE           partitions (first/last id, count, bytes), consumer
//                        groups (cursors, backlog, in flight, dead) and
//                        subscriptions (checkpoints, lag)
//   create QUEUE         creates a queue (--num_partitions, --num_priorities,
//                        --ttl, --layout)
//   put QUEUE [FILE...]  one message per line of stdin, or per FILE
//                        (--topic, --key, --partition, --priority, --delay)
//   scan QUEUE           messages (--partitions, --topics, --from, --to,
//                        --since, --until, --limit, --follow)
//   groups [QUEUE]       consumer groups and their figures
//   dead QUEUE GROUP     dead letters of a group (--requeue puts them back)
//   compact              TTL sweep, then a full LevelDB compaction
//   verify               checks every key and record (Db::Verify)
//   repair [DIR]         Db::Repair: copies the directory aside, rebuilds it,
//                        mends hq's records; prints what changed and was lost
//   backup [DIR] DEST    a consistent copy (Db::Backup; from outside if
//                        another process holds the database)
//   help [SUBCOMMAND]    this list, or one subcommand's flags
//
// Every flag is checked against the subcommand (a flag it does not take is a
// usage error, as is a value out of range), before anything is opened.
// Output: aligned tables, or with --json one JSON document on stdout
// (scan --follow --json: one JSON object per line). Exit codes: 0 done;
// 1 the operation failed (no database, no such queue, storage error);
// 2 usage error; 3 the database is damaged (verify found problems, or a
// read or Open failed with DataLoss); 4 the database is open in
// another process (hq embeds the engine: one process opens a Db at a
// time; --lock_wait retries).

#include "hq/hq.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/live_view.h"
#include "tools/output.h"
#include "tools/stop_signals.h"

ABSL_FLAG(std::string, db, "", "The database directory (default: $HQ_DB).");
ABSL_FLAG(bool, json, false, "Print one JSON document instead of tables.");
ABSL_FLAG(absl::Duration, lock_wait, absl::ZeroDuration(),
          "If another process has the database open, retry this long.");
// put
ABSL_FLAG(std::string, topic, "", "put: the messages' topic.");
ABSL_FLAG(std::string, key, "", "put: the messages' partitioning key.");
ABSL_FLAG(int32_t, partition, -1,
          "put: the messages' partition (default: by key, topic or "
          "round-robin).");
ABSL_FLAG(int32_t, priority, 0, "put: the messages' priority.");
ABSL_FLAG(absl::Duration, delay, absl::ZeroDuration(),
          "put: delayed delivery to consumer groups.");
ABSL_FLAG(std::string, dedup_key, "",
          "put: the message's dedup key (one message only): if a live "
          "message of the queue has it, nothing is written.");
// scan
ABSL_FLAG(std::string, partitions, "",
          "scan: comma-separated partitions (default: all).");
ABSL_FLAG(std::string, topics, "",
          "scan: comma-separated topics (default: all).");
ABSL_FLAG(std::string, from, "", "scan: first id (ms-seq, or ms), inclusive.");
ABSL_FLAG(std::string, to, "", "scan: end id (ms-seq, or ms), exclusive.");
ABSL_FLAG(std::string, since, "",
          "scan: messages written at or after this time (RFC 3339, or a "
          "duration such as 10m meaning that long ago).");
ABSL_FLAG(std::string, until, "",
          "scan: messages written before this time (as --since).");
ABSL_FLAG(int64_t, limit, 0,
          "scan, dead: at most this many messages (0: no limit).");
ABSL_FLAG(bool, follow, false,
          "scan: after the existing messages, wait for new ones until "
          "SIGINT/SIGTERM (or --follow_for). Releases the database between "
          "polls, so it sees what other processes write while it is closed.");
ABSL_FLAG(absl::Duration, follow_for, absl::ZeroDuration(),
          "scan --follow: stop after this long (0: until a signal).");
ABSL_FLAG(absl::Duration, poll, absl::Milliseconds(200),
          "scan --follow: how often to look for new messages.");
ABSL_FLAG(int32_t, width, 80,
          "Tables: cut payloads, keys and topics to this many characters "
          "(0: no limit).");
ABSL_FLAG(bool, lane_order, false,
          "scan: lane by lane instead of merged in id order.");
// stat
ABSL_FLAG(int32_t, lanes, 0,
          "stat: also list the cursors and checkpoints of at most this many "
          "lanes per group or subscription (0: none, only the summary per "
          "partition; at most 100000).");
// dead
ABSL_FLAG(bool, requeue, false,
          "dead: put the dead letters back into the group's queue.");
// create
ABSL_FLAG(int32_t, num_partitions, 1, "create: partitions (1..65535).");
ABSL_FLAG(int32_t, num_priorities, 1, "create: priority levels (1..256).");
ABSL_FLAG(absl::Duration, ttl, absl::InfiniteDuration(),
          "create: message time to live (default: forever).");
ABSL_FLAG(std::string, layout, "time", "create: rowkey layout, time or topic.");
// backup
ABSL_FLAG(bool, verify, false,
          "backup: then open the backup and verify it (exit 3 if it finds "
          "problems).");
ABSL_FLAG(bool, version, false, "Print the version of hq and exit.");

namespace hq::tool {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitProblems = 3;
constexpr int kExitLocked = 4;

constexpr char kUsage[] =
    "usage: hq [--db=DIR] [--json] SUBCOMMAND [ARGS] [FLAGS]\n"
    "\n"
    "The database is --db=DIR, or $HQ_DB. Subcommands:\n"
    "  ls                   queues: partitions, priorities, layout, TTL, size\n"
    "  stat QUEUE           partitions, consumer groups, subscriptions\n"
    "  create QUEUE         create a queue [--num_partitions=N "
    "--num_priorities=N\n"
    "                       --ttl=DURATION --layout=time|topic]\n"
    "  put QUEUE [FILE...]  one message per stdin line, or per FILE\n"
    "                       [--topic=T --key=K --partition=P --priority=N\n"
    "                       --delay=DURATION]\n"
    "  scan QUEUE           messages [--partitions=0,1 --topics=a,b "
    "--from=ID\n"
    "                       --to=ID --since=TIME --until=TIME --limit=N\n"
    "                       --lane_order --follow --follow_for=DURATION]\n"
    "  groups [QUEUE]       consumer groups: backlog, in flight, dead letters\n"
    "  dead QUEUE GROUP     dead letters of a group [--requeue --limit=N]\n"
    "  compact              TTL sweep, then a full compaction\n"
    "  verify               check every block, key and record; exit 3 on\n"
    "                       problems\n"
    "  repair [DIR]         repair a damaged database (copies it aside "
    "first);\n"
    "                       exit 3 if it does not verify clean after\n"
    "  backup [DIR] DEST    consistent copy of a database, also of one in "
    "use\n"
    "                       [--verify]\n"
    "  help [SUBCOMMAND]    this text, or a subcommand's flags (as\n"
    "                       hq SUBCOMMAND --help)\n"
    "\n"
    "Common flags: --json (one JSON document), --lock_wait=DURATION (retry\n"
    "while another process has the database open), --width=N (table cell\n"
    "width), --version. With --json, a failure is also a JSON object\n"
    "{\"error\":{...}} on stdout. Exit codes: 0 ok, 1 error, 2 usage, 3 "
    "damage\n"
    "(verify found problems, or a read found damage), 4 database in use by\n"
    "another process. What Open's recovery dropped from a damaged log is\n"
    "printed as a warning on stderr.\n";

// A failure with its exit code. Thrown only within this file (by the
// subcommands and their helpers) and caught in main, which prints it: the
// tool's way to leave from deep inside a subcommand with the right code.
struct Failure {
  int code;
  std::string message;
  // For --json's error object: the status code behind the failure, and
  // numbers a script acts on (put's "stored", the lock owner's "pid").
  absl::StatusCode status = absl::StatusCode::kUnknown;
  std::vector<std::pair<std::string, int64_t>> details = {};
};

Failure Usage(std::string message) {
  return {kExitUsage, std::move(message), absl::StatusCode::kInvalidArgument};
}

Failure FromStatus(const absl::Status& s) {
  if (absl::IsFailedPrecondition(s) &&
      absl::StrContains(s.message(), "in use by another process")) {
    Failure f{kExitLocked, std::string(s.message()), s.code()};
    // LevelDB's lock error names no process: LOCK's record lock does.
    std::string db = absl::GetFlag(FLAGS_db);
    if (db.empty() && std::getenv("HQ_DB") != nullptr)
      db = std::getenv("HQ_DB");
    if (absl::StatusOr<pid_t> pid = LockOwner(db); pid.ok() && *pid > 0) {
      f.message = absl::StrCat(f.message, "; its LOCK is held by pid ", *pid);
      f.details.push_back({"owner_pid", *pid});
    }
    return f;
  }
  if (absl::IsDataLoss(s)) {
    return {kExitProblems, std::string(s.message()), s.code()};
  }
  return {kExitError, std::string(s.message()), s.code()};
}

#define HQ_TRY(expr)                                          \
  do {                                                        \
    const ::absl::Status hq_try_ = (expr);                    \
    if (!hq_try_.ok()) throw ::hq::tool::FromStatus(hq_try_); \
  } while (0)

template <typename T>
T Must(absl::StatusOr<T> v) {
  if (!v.ok()) throw FromStatus(v.status());
  return std::move(v).value();
}

std::string Sv(absl::string_view s) { return std::string(s.data(), s.size()); }

std::string TimeText(absl::Time t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", t, absl::UTCTimeZone());
}

std::string FormatTtl(absl::Duration ttl) {
  return ttl == absl::InfiniteDuration() ? "-" : absl::FormatDuration(ttl);
}

std::string Cell(std::string_view bytes) {
  return Printable(
      bytes, static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_width))));
}

std::string Count(uint64_t n, bool exact) {
  return exact ? std::to_string(n) : absl::StrCat(">=", n);
}

// ------------------------------------------------------------ live view

// Set by Main: the subcommand only reads, so a database that another process
// holds is read from a LiveCopy (tools/live_view.h) instead of failing.
bool g_read_only = false;

// The copy read instead of the database, if any; destroyed at exit, after
// every Db (they live in the subcommands).
std::optional<LiveCopy> g_live_copy;
pid_t g_live_owner = 0;

// The "view" member of every JSON document: how old the data is.
std::string ViewJson() {
  if (!g_live_copy) return "";
  Json j;
  j.BeginObject().Key("kind").String("live_copy");
  j.Key("owner_pid").Int(g_live_owner);
  j.Key("taken").String(TimeText(g_live_copy->taken()));
  j.Key("age_ms").Int(
      absl::ToInt64Milliseconds(absl::Now() - g_live_copy->taken()));
  j.Key("took_ms").Int(absl::ToInt64Milliseconds(g_live_copy->took()));
  j.Key("in_flight_visible").Bool(false).EndObject();
  return j.str();
}

// Prints a JSON document; on a live copy, with a first member "view".
void PrintJson(const Json& j) {
  const std::string view = ViewJson();
  const std::string& doc = j.str();
  if (view.empty() || doc.size() < 2 || doc[0] != '{') {
    std::printf("%s\n", doc.c_str());
  } else {
    std::printf("{\"view\":%s%s%s\n", view.c_str(), doc == "{}" ? "" : ",",
                doc.c_str() + 1);
  }
}

// ---------------------------------------------------------------- opening

std::string DbPath() {
  std::string path = absl::GetFlag(FLAGS_db);
  if (path.empty()) {
    const char* env = std::getenv("HQ_DB");
    if (env != nullptr) path = env;
  }
  if (path.empty()) {
    throw Usage("no database given: pass --db=DIR or set HQ_DB");
  }
  return path;
}

// True if `path` holds any of LevelDB's files but CURRENT: a MANIFEST, a
// table or a log.
bool HoldsDbFiles(const std::string& path) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(path, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("MANIFEST-") || name.ends_with(".ldb") ||
        name.ends_with(".sst") || name.ends_with(".log")) {
      return true;
    }
  }
  return false;
}

// Fails unless `path` holds a database (a CURRENT file) that this user can
// read; never throws std::filesystem's exceptions. A directory that lost
// its CURRENT but holds a Db's other files is left to Db::Open, which
// refuses it with DataLoss and says what to run.
void CheckIsDb(const std::string& path) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path + "/CURRENT", ec);
  if (ec) {
    throw Failure{kExitError,
                  absl::StrCat("cannot read ", path, ": ", ec.message()),
                  absl::StatusCode::kPermissionDenied};
  }
  if (!exists && !HoldsDbFiles(path)) {
    throw Failure{kExitError, absl::StrCat("no hq database at ", path),
                  absl::StatusCode::kNotFound};
  }
}

// Says on stderr what Open's recovery dropped from damaged logs.
void WarnRecovery(const RecoveryReport& r, const std::string& path) {
  for (const RecoveryReport::Dropped& d : r.dropped) {
    std::fprintf(
        stderr,
        "hq: warning: %s: recovery dropped %llu bytes of %s from offset %llu "
        "(%s)%s; kept in %s/%s\n",
        path.c_str(), static_cast<unsigned long long>(d.bytes), d.file.c_str(),
        static_cast<unsigned long long>(d.offset), d.damage.c_str(),
        d.torn_tail
            ? ", a torn tail: no intact record lost"
            : absl::StrCat(", ", d.records, " intact records among them")
                  .c_str(),
        path.c_str(), d.saved_as.c_str());
  }
}

// Opens a copy of the database at `path`, which another process holds, and
// says so on stderr (in JSON: PrintJson's "view").
std::unique_ptr<Db> OpenLiveCopy(const std::string& path, Options options) {
  absl::StatusOr<pid_t> owner = LockOwner(path);
  g_live_owner = owner.ok() ? *owner : 0;
  g_live_copy.emplace(Must(LiveCopy::Take(path)));
  options.create_if_missing = false;
  std::unique_ptr<Db> db = Must(Db::Open(g_live_copy->path(), options));
  WarnRecovery(db->recovery(), path);
  if (!absl::GetFlag(FLAGS_json)) {
    std::fprintf(stderr,
                 "hq: live view: %s is open in process %d; this is a copy "
                 "taken at %s (%s to take): what a restart would recover, "
                 "so tasks in flight there count as REDELIVERY here, not "
                 "IN_FLIGHT\n",
                 path.c_str(), static_cast<int>(g_live_owner),
                 TimeText(g_live_copy->taken()).c_str(),
                 absl::FormatDuration(g_live_copy->took()).c_str());
  }
  return db;
}

// Db::Open, but only if no process holds the database's lock: LevelDB's
// open rotates the info log (LOG to LOG.old) before it tries the lock, which
// would take the owner's LOG away. A process that takes the lock between
// the check and the open still gets LevelDB's lock error.
absl::StatusOr<std::unique_ptr<Db>> OpenUnlessHeld(const std::string& path,
                                                   const Options& options) {
  if (absl::StatusOr<pid_t> owner = LockOwner(path); owner.ok() && *owner > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "hq database directory '", path, "' is in use by another process"));
  }
  return Db::Open(path, options);
}

// Opens the Db (never creating one unless `create`), retrying while
// another process holds it for up to --lock_wait.
std::unique_ptr<Db> OpenDb(bool create = false) {
  const std::string path = DbPath();
  Options options;
  options.create_if_missing = create;
  options.ttl_sweep_interval = absl::ZeroDuration();  // compact sweeps.
  // LevelDB creates the directory even when it then finds no database.
  if (!create) CheckIsDb(path);
  const absl::Time give_up = absl::Now() + absl::GetFlag(FLAGS_lock_wait);
  while (true) {
    absl::StatusOr<std::unique_ptr<Db>> db = OpenUnlessHeld(path, options);
    if (db.ok()) {
      WarnRecovery((*db)->recovery(), path);
      return std::move(db).value();
    }
    if (absl::IsNotFound(db.status())) {
      throw Failure{kExitError, absl::StrCat("no hq database at ", path),
                    absl::StatusCode::kNotFound};
    }
    Failure f = FromStatus(db.status());
    if (f.code == kExitLocked && absl::Now() >= give_up && g_read_only) {
      return OpenLiveCopy(path, options);
    }
    if (f.code != kExitLocked || absl::Now() >= give_up) throw f;
    // SIGINT or SIGTERM (scan --follow keeps them for a clean stop) ends
    // the wait with the lock's failure.
    if (SleepUnlessStopped(absl::Milliseconds(50))) throw f;
  }
}

Queue* OpenQueue(Db* db, const std::string& name) {
  return Must(db->OpenQueue(name));
}

// --------------------------------------------------------- flag parsing

std::vector<uint32_t> ParsePartitions(const std::string& text) {
  std::vector<uint32_t> out;
  if (text.empty()) return out;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    uint32_t p;
    if (!absl::SimpleAtoi(part, &p)) {
      throw Usage(absl::StrCat("--partitions: '", Sv(part),
                               "' is not a partition number"));
    }
    out.push_back(p);
  }
  return out;
}

std::vector<std::string> ParseTopics(const std::string& text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  for (absl::string_view t : absl::StrSplit(text, ',')) out.push_back(Sv(t));
  return out;
}

MessageId ParseId(const char* flag, const std::string& text) {
  if (std::optional<MessageId> id = MessageId::Parse(text)) return *id;
  uint64_t ms;
  if (absl::SimpleAtoi(text, &ms) && ms <= MessageId::kMaxMs) {
    return MessageId{ms, 0};
  }
  throw Usage(absl::StrCat("--", flag, ": '", text,
                           "' is not a message id (ms-seq, or ms)"));
}

absl::Time ParseTime(const char* flag, const std::string& text) {
  absl::Time t;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, text, &t, &err)) return t;
  absl::Duration ago;
  if (absl::ParseDuration(text, &ago) && ago >= absl::ZeroDuration()) {
    return absl::Now() - ago;
  }
  throw Usage(absl::StrCat("--", flag, ": '", text,
                           "' is neither an RFC 3339 time "
                           "(2026-01-01T12:00:00Z) nor a duration (10m)"));
}

void Need(const std::vector<std::string>& args, size_t n,
          const char* synopsis) {
  if (args.size() != n) {
    throw Usage(absl::StrCat(
        args.size() < n ? "missing arguments" : "too many arguments", ": hq ",
        synopsis));
  }
}

// ------------------------------------------------------------------- ls

int Ls(const std::vector<std::string>& args) {
  Need(args, 0, "ls");
  std::unique_ptr<Db> db = OpenDb();
  const std::vector<std::string> names = Must(db->ListQueues());
  Json j;
  j.BeginObject().Key("db").String(db->path()).Key("queues").BeginArray();
  Table t({"QUEUE", "PARTITIONS", "PRIORITIES", "LAYOUT", "TTL", "GROUPS",
           "SUBSCRIPTIONS", "SIZE", "CREATED"});
  for (const std::string& name : names) {
    Queue* q = OpenQueue(db.get(), name);
    const QueueInfo info = q->info();
    const uint64_t bytes = Must(q->ApproximateBytes());
    const size_t groups = Must(q->ListGroups()).size();
    const size_t subs = Must(q->ListSubscriptions()).size();
    const QueueOptions& o = info.options;
    t.Add({Cell(name), std::to_string(o.partitions),
           std::to_string(o.priorities), std::string(LayoutName(o.layout)),
           FormatTtl(o.ttl), std::to_string(groups), std::to_string(subs),
           HumanBytes(bytes), TimeText(info.created)});
    j.BeginObject().Bytes("name", name);
    j.Key("partitions").Uint(o.partitions);
    j.Key("priorities").Int(o.priorities);
    j.Key("layout").String(LayoutName(o.layout));
    j.Key("ttl_ms");
    if (o.ttl == absl::InfiniteDuration()) {
      j.Null();
    } else {
      j.Int(absl::ToInt64Milliseconds(o.ttl));
    }
    j.Key("max_payload_bytes").Uint(o.max_payload_bytes);
    j.Key("groups").Uint(groups).Key("subscriptions").Uint(subs);
    j.Key("approximate_bytes").Uint(bytes);
    j.Key("created").String(TimeText(info.created));
    j.EndObject();
  }
  j.EndArray().EndObject();
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(j);
  } else if (names.empty()) {
    std::printf("no queues in %s\n", db->path().c_str());
  } else {
    t.Print(stdout);
  }
  return kExitOk;
}

// --------------------------------------------------------------- groups

// Loads the existing group `name` with the options it was created with.
ConsumerGroup* LoadGroup(Queue* q, const GroupInfo& info) {
  return Must(
      q->Group(info.name, {.topics = info.topics, .ordered = info.ordered}));
}

void GroupJson(Json& j, const GroupInfo& info, const GroupStats& st) {
  j.Key("name").String(info.name).Key("ordered").Bool(info.ordered);
  j.Key("topics").BeginArray();
  for (const std::string& topic : info.topics) {
    if (IsUtf8(topic)) j.String(topic);
  }
  j.EndArray();
  j.Key("backlog").Uint(st.backlog).Key("backlog_exact").Bool(st.backlog_exact);
  j.Key("in_flight").Uint(st.in_flight).Key("redelivery").Uint(st.redelivery);
  j.Key("delayed").Uint(st.delayed).Key("dead_letters").Uint(st.dead_letters);
  j.Key("oldest_in_flight_ms")
      .Int(absl::ToInt64Milliseconds(st.oldest_in_flight));
  j.Key("max_cursor_lag_ms").Int(absl::ToInt64Milliseconds(st.max_cursor_lag));
  j.Key("dead_letter_queue").String(info.dead_letter_queue);
}

std::vector<std::string> GroupRow(const std::string& queue,
                                  const GroupInfo& info, const GroupStats& st) {
  std::vector<std::string> topics;
  for (const std::string& t : info.topics) topics.push_back(Cell(t));
  return {Cell(queue),
          Cell(info.name),
          info.ordered ? "yes" : "no",
          topics.empty() ? "*" : absl::StrJoin(topics, ","),
          Count(st.backlog, st.backlog_exact),
          std::to_string(st.in_flight),
          std::to_string(st.redelivery),
          std::to_string(st.delayed),
          std::to_string(st.dead_letters),
          absl::FormatDuration(st.max_cursor_lag)};
}

const std::vector<std::string> kGroupHeader = {
    "QUEUE",     "GROUP",      "ORDERED", "TOPICS", "BACKLOG",
    "IN_FLIGHT", "REDELIVERY", "DELAYED", "DEAD",   "CURSOR_LAG"};

int Groups(const std::vector<std::string>& args) {
  if (args.size() > 1) throw Usage("too many arguments: hq groups [QUEUE]");
  std::unique_ptr<Db> db = OpenDb();
  std::vector<std::string> queues =
      args.empty() ? Must(db->ListQueues()) : args;
  Table t(kGroupHeader);
  Json j;
  j.BeginObject().Key("groups").BeginArray();
  for (const std::string& name : queues) {
    Queue* q = OpenQueue(db.get(), name);
    for (const std::string& g : Must(q->ListGroups())) {
      const GroupInfo info = Must(q->InspectGroup(g));
      const GroupStats st = Must(LoadGroup(q, info)->Stats());
      t.Add(GroupRow(name, info, st));
      j.BeginObject().Key("queue").String(name);
      GroupJson(j, info, st);
      j.EndObject();
    }
  }
  j.EndArray().EndObject();
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(j);
  } else if (t.empty()) {
    std::printf("no consumer groups\n");
  } else {
    t.Print(stdout);
  }
  return kExitOk;
}

// ----------------------------------------------------------------- stat

int Stat(const std::vector<std::string>& args) {
  Need(args, 1, "stat QUEUE");
  const bool json = absl::GetFlag(FLAGS_json);
  // Lanes can be millions (a topic per site): listed only on request.
  const size_t max_lanes = static_cast<size_t>(absl::GetFlag(FLAGS_lanes));
  std::unique_ptr<Db> db = OpenDb();
  Queue* q = OpenQueue(db.get(), args[0]);
  const QueueInfo info = q->info();
  const QueueOptions& o = info.options;
  const QueueStats qs = Must(q->Stats());
  Json j;
  j.BeginObject().Key("queue").BeginObject().Bytes("name", info.name);
  j.Key("partitions").Uint(o.partitions).Key("priorities").Int(o.priorities);
  j.Key("layout").String(LayoutName(o.layout)).Key("ttl_ms");
  if (o.ttl == absl::InfiniteDuration()) {
    j.Null();
  } else {
    j.Int(absl::ToInt64Milliseconds(o.ttl));
  }
  j.Key("max_payload_bytes").Uint(o.max_payload_bytes);
  j.Key("created").String(TimeText(info.created));
  j.Key("approximate_bytes").Uint(qs.approximate_bytes).EndObject();
  if (!json) {
    std::printf(
        "queue %s: %u partitions, %d priorities, %s layout, TTL %s, max "
        "payload %u B, created %s, %s\n\n",
        Cell(info.name).c_str(), o.partitions, o.priorities,
        std::string(LayoutName(o.layout)).c_str(), FormatTtl(o.ttl).c_str(),
        o.max_payload_bytes, TimeText(info.created).c_str(),
        HumanBytes(qs.approximate_bytes).c_str());
  }
  Table pt({"PARTITION", "LANES", "FIRST", "FIRST_TIME", "LAST", "LAST_TIME",
            "MESSAGES", "SIZE"});
  j.Key("partitions").BeginArray();
  for (const PartitionStats& p : qs.partitions) {
    const bool any = p.messages > 0;
    pt.Add(
        {std::to_string(p.partition), std::to_string(p.lanes),
         any ? p.first.ToString() : "-", any ? TimeText(p.first.time()) : "-",
         any ? p.last.ToString() : "-", any ? TimeText(p.last.time()) : "-",
         Count(p.messages, p.messages_exact), HumanBytes(p.approximate_bytes)});
    j.BeginObject().Key("partition").Uint(p.partition);
    j.Key("lanes").Uint(p.lanes);
    j.Key("first");
    any ? j.String(p.first.ToString()) : j.Null();
    j.Key("last");
    any ? j.String(p.last.ToString()) : j.Null();
    j.Key("messages").Uint(p.messages);
    j.Key("messages_exact").Bool(p.messages_exact);
    j.Key("approximate_bytes").Uint(p.approximate_bytes);
    if (any) {
      j.Key("first_time").String(TimeText(p.first.time()));
      j.Key("last_time").String(TimeText(p.last.time()));
    }
    j.EndObject();
  }
  j.EndArray();
  if (!json) pt.Print(stdout);

  // Consumer groups: a row each, their cursors summarised per partition
  // (the lowest completion cursor, the highest scan cursor), and with
  // --lanes=N the cursors of at most N lanes.
  Table gt(kGroupHeader);
  Table gpt({"GROUP", "PARTITION", "LANES", "MIN_COMPLETION", "MAX_SCAN"});
  Table ct({"GROUP", "PARTITION", "PRIORITY", "TOPIC", "SCAN", "COMPLETION"});
  size_t cursors_left_out = 0;
  j.Key("groups").BeginArray();
  for (const std::string& g : Must(q->ListGroups())) {
    const GroupInfo gi = Must(q->InspectGroup(g));
    const GroupStats st = Must(LoadGroup(q, gi)->Stats());
    gt.Add(GroupRow(info.name, gi, st));
    j.BeginObject();
    GroupJson(j, gi, st);
    struct Summary {
      uint64_t lanes = 0;
      MessageId min_completion = MessageId::Max(), max_scan;
    };
    std::map<uint32_t, Summary> by_partition;
    for (const GroupInfo::LaneCursor& c : gi.cursors) {
      Summary& sum = by_partition[c.partition];
      ++sum.lanes;
      sum.min_completion = std::min(sum.min_completion, c.completion);
      sum.max_scan = std::max(sum.max_scan, c.scan);
    }
    j.Key("partitions").BeginArray();
    for (const auto& [partition, sum] : by_partition) {
      gpt.Add({Cell(g), std::to_string(partition), std::to_string(sum.lanes),
               sum.min_completion.ToString(), sum.max_scan.ToString()});
      j.BeginObject().Key("partition").Uint(partition);
      j.Key("lanes").Uint(sum.lanes);
      j.Key("min_completion").String(sum.min_completion.ToString());
      j.Key("max_scan").String(sum.max_scan.ToString()).EndObject();
    }
    j.EndArray();
    if (max_lanes > 0) {
      j.Key("cursors").BeginArray();
      for (size_t i = 0; i < gi.cursors.size(); ++i) {
        const GroupInfo::LaneCursor& c = gi.cursors[i];
        if (i >= max_lanes) {
          ++cursors_left_out;
          continue;
        }
        ct.Add({Cell(g), std::to_string(c.partition),
                std::to_string(c.priority), Cell(c.topic), c.scan.ToString(),
                c.completion.ToString()});
        j.BeginObject().Key("partition").Uint(c.partition);
        j.Key("priority").Int(c.priority).Bytes("topic", c.topic);
        j.Key("scan").String(c.scan.ToString());
        j.Key("completion").String(c.completion.ToString()).EndObject();
      }
      j.EndArray();
    }
    j.EndObject();
  }
  j.EndArray();
  if (!json) {
    std::printf("\n");
    if (gt.empty()) {
      std::printf("no consumer groups\n");
    } else {
      gt.Print(stdout);
      if (!gpt.empty()) {
        std::printf("\n");
        gpt.Print(stdout);
      }
      if (!ct.empty()) {
        std::printf("\n");
        ct.Print(stdout);
      }
      if (cursors_left_out > 0) {
        std::printf("(%zu more lanes' cursors not listed: --lanes=N)\n",
                    cursors_left_out);
      }
    }
  }

  // Subscriptions: a row each, checkpoints summarised per partition (the
  // lowest), and with --lanes=N the checkpoints of at most N lanes.
  Table st({"SUBSCRIPTION", "LANES", "LAG"});
  Table spt({"SUBSCRIPTION", "PARTITION", "LANES", "MIN_CHECKPOINT"});
  Table cpt({"SUBSCRIPTION", "PARTITION", "PRIORITY", "TOPIC", "CHECKPOINT"});
  size_t checkpoints_left_out = 0;
  j.Key("subscriptions").BeginArray();
  for (const std::string& s : Must(q->ListSubscriptions())) {
    const SubscriptionStats ss = Must(q->InspectSubscription(s));
    st.Add({Cell(s), std::to_string(ss.lanes.size()),
            Count(ss.lag, ss.lag_exact)});
    j.BeginObject().Bytes("name", s);
    j.Key("lag").Uint(ss.lag).Key("lag_exact").Bool(ss.lag_exact);
    std::map<uint32_t, std::pair<uint64_t, MessageId>> by_partition;
    for (const LaneCheckpoint& c : ss.lanes) {
      auto [it, added] =
          by_partition.try_emplace(c.partition, 0, MessageId::Max());
      ++it->second.first;
      it->second.second = std::min(it->second.second, c.written);
    }
    j.Key("partitions").BeginArray();
    for (const auto& [partition, sum] : by_partition) {
      spt.Add({Cell(s), std::to_string(partition), std::to_string(sum.first),
               sum.second.ToString()});
      j.BeginObject().Key("partition").Uint(partition);
      j.Key("lanes").Uint(sum.first);
      j.Key("min_checkpoint").String(sum.second.ToString()).EndObject();
    }
    j.EndArray();
    if (max_lanes > 0) {
      j.Key("checkpoints").BeginArray();
      for (size_t i = 0; i < ss.lanes.size(); ++i) {
        const LaneCheckpoint& c = ss.lanes[i];
        if (i >= max_lanes) {
          ++checkpoints_left_out;
          continue;
        }
        cpt.Add({Cell(s), std::to_string(c.partition),
                 std::to_string(c.priority), Cell(c.topic),
                 c.written.ToString()});
        j.BeginObject().Key("partition").Uint(c.partition);
        j.Key("priority").Int(c.priority).Bytes("topic", c.topic);
        j.Key("checkpoint").String(c.written.ToString()).EndObject();
      }
      j.EndArray();
    }
    j.EndObject();
  }
  j.EndArray().EndObject();
  if (json) {
    PrintJson(j);
  } else {
    std::printf("\n");
    if (st.empty()) {
      std::printf("no subscriptions\n");
    } else {
      st.Print(stdout);
      if (!spt.empty()) {
        std::printf("\n");
        spt.Print(stdout);
      }
      if (!cpt.empty()) {
        std::printf("\n");
        cpt.Print(stdout);
      }
      if (checkpoints_left_out > 0) {
        std::printf("(%zu more lanes' checkpoints not listed: --lanes=N)\n",
                    checkpoints_left_out);
      }
    }
  }
  return kExitOk;
}

// --------------------------------------------------------------- create

int Create(const std::vector<std::string>& args) {
  Need(args, 1, "create QUEUE");
  std::optional<Layout> layout = ParseLayout(absl::GetFlag(FLAGS_layout));
  if (!layout) {
    throw Usage(absl::StrCat("--layout: '", absl::GetFlag(FLAGS_layout),
                             "' is not a layout (time or topic)"));
  }
  const int32_t partitions = absl::GetFlag(FLAGS_num_partitions);
  if (partitions < 1) throw Usage("--num_partitions must be 1..65535");
  std::unique_ptr<Db> db = OpenDb(/*create=*/true);
  Queue* q = Must(db->CreateQueue(
      args[0], {.partitions = static_cast<uint32_t>(partitions),
                .priorities = absl::GetFlag(FLAGS_num_priorities),
                .ttl = absl::GetFlag(FLAGS_ttl),
                .layout = *layout}));
  if (absl::GetFlag(FLAGS_json)) {
    Json j;
    j.BeginObject().Key("created").String(q->name()).EndObject();
    PrintJson(j);
  } else {
    std::printf("created queue %s\n", q->name().c_str());
  }
  return kExitOk;
}

// ------------------------------------------------------------------ put

// Reads the whole file; false with errno set if it cannot (a directory
// gives EISDIR).
bool ReadFile(const std::string& path, std::string* out) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    errno = EISDIR;
    return false;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  if (in.bad()) {
    errno = EIO;
    return false;
  }
  return true;
}

// Messages go in batches of this many, each written atomically (PutBatch).
constexpr size_t kPutBatch = 1000;

int Put(const std::vector<std::string>& args) {
  if (args.empty()) throw Usage("missing arguments: hq put QUEUE [FILE...]");
  const int32_t partition = absl::GetFlag(FLAGS_partition);
  const absl::Duration delay = absl::GetFlag(FLAGS_delay);
  const std::string dedup_key = absl::GetFlag(FLAGS_dedup_key);
  const bool from_files = args.size() > 1;
  // Read everything first: a bad file changes nothing.
  std::vector<std::string> payloads;
  if (from_files) {
    for (size_t i = 1; i < args.size(); ++i) {
      std::string data;
      if (!ReadFile(args[i], &data)) {
        throw Failure{kExitError, absl::StrCat("cannot read '", args[i],
                                               "': ", std::strerror(errno))};
      }
      payloads.push_back(std::move(data));
    }
  } else {
    std::string line;
    while (std::getline(std::cin, line)) payloads.push_back(line);
  }
  if (!dedup_key.empty() && payloads.size() != 1) {
    throw Usage(absl::StrCat("--dedup_key names one message; the input has ",
                             payloads.size()));
  }
  std::unique_ptr<Db> db = OpenDb();
  Queue* q = OpenQueue(db.get(), args[0]);
  const std::string topic = absl::GetFlag(FLAGS_topic);
  const std::string key = absl::GetFlag(FLAGS_key);
  std::vector<PutResult> results;
  for (size_t start = 0; start < payloads.size(); start += kPutBatch) {
    const size_t end = std::min(payloads.size(), start + kPutBatch);
    std::vector<Message> batch;
    for (size_t i = start; i < end; ++i) {
      Message m{.topic = topic,
                .payload = payloads[i],
                .key = key,
                .dedup_key = dedup_key};
      if (partition >= 0) m.partition = static_cast<uint32_t>(partition);
      m.priority = absl::GetFlag(FLAGS_priority);
      m.delay = delay;
      batch.push_back(m);
    }
    std::vector<PutResult> part;
    // The last batch is synced, and with it everything before.
    const absl::Status st =
        q->PutBatch(batch, &part, {.sync = end == payloads.size()});
    if (!st.ok()) {
      // Batches are atomic: exactly the first `start` messages are stored.
      Failure f = FromStatus(st);
      const std::string unit = from_files ? "file" : "line";
      f.message =
          start == 0
              ? absl::StrCat(f.message, " (no message was stored)")
              : absl::StrCat(
                    f.message, " (stored the first ", start, " of ",
                    payloads.size(), " messages, ", unit, "s 1..", start,
                    "; nothing after them: resume with ", unit, " ", start + 1,
                    from_files ? absl::StrCat(", '", args[start + 1], "'")
                               : absl::StrCat(", as tail -n +", start + 1),
                    ")");
      f.details.push_back({"stored", static_cast<int64_t>(start)});
      f.details.push_back({"total", static_cast<int64_t>(payloads.size())});
      throw f;
    }
    results.insert(results.end(), part.begin(), part.end());
  }
  size_t duplicates = 0;
  for (const PutResult& r : results) duplicates += r.duplicate ? 1 : 0;
  if (absl::GetFlag(FLAGS_json)) {
    Json j;
    j.BeginObject().Key("queue").String(q->name()).Key("results").BeginArray();
    for (const PutResult& r : results) {
      j.BeginObject().Key("partition").Uint(r.partition);
      j.Key("id").String(r.id.ToString());
      if (r.duplicate) j.Key("duplicate").Bool(true);
      j.EndObject();
    }
    j.EndArray().EndObject();
    PrintJson(j);
  } else if (duplicates > 0 && results.size() == 1) {
    std::printf(
        "not written: a live message of %s has dedup key '%s': "
        "partition %u id %s\n",
        q->name().c_str(), Cell(dedup_key).c_str(), results[0].partition,
        results[0].id.ToString().c_str());
  } else {
    std::printf("put %zu message%s to %s\n", results.size(),
                results.size() == 1 ? "" : "s", q->name().c_str());
  }
  return kExitOk;
}

// ----------------------------------------------------------------- scan

void MessageJson(Json& j, const MessageView& m) {
  j.BeginObject().Key("partition").Uint(m.partition);
  j.Key("priority").Int(m.priority).Key("id").String(m.id.ToString());
  j.Key("time").String(TimeText(m.id.time()));
  j.Bytes("topic", m.topic).Bytes("key", m.key).Bytes("payload", m.payload);
  if (!m.dedup_key.empty()) j.Bytes("dedup_key", m.dedup_key);
  if (m.not_before != absl::InfinitePast()) {
    j.Key("not_before").String(TimeText(m.not_before));
  }
  j.EndObject();
}

std::vector<std::string> MessageRow(const MessageView& m) {
  return {std::to_string(m.partition),
          std::to_string(m.priority),
          m.id.ToString(),
          TimeText(m.id.time()),
          Cell(m.topic),
          Cell(m.key),
          m.dedup_key.empty() ? "-" : Cell(m.dedup_key),
          Cell(m.payload)};
}

const std::vector<std::string> kMessageHeader = {"PARTITION", "PRIORITY", "ID",
                                                 "TIME",      "TOPIC",    "KEY",
                                                 "DEDUP_KEY", "PAYLOAD"};

int Scan(const std::vector<std::string>& args) {
  Need(args, 1, "scan QUEUE");
  const bool json = absl::GetFlag(FLAGS_json);
  const bool follow = absl::GetFlag(FLAGS_follow);
  const int64_t limit = absl::GetFlag(FLAGS_limit);
  if (limit < 0) throw Usage("--limit must be >= 0");
  ScanOptions base;
  base.partitions = ParsePartitions(absl::GetFlag(FLAGS_partitions));
  base.topics = ParseTopics(absl::GetFlag(FLAGS_topics));
  base.order = absl::GetFlag(FLAGS_lane_order) ? ScanOptions::Order::kLane
                                               : ScanOptions::Order::kMerged;
  if (!absl::GetFlag(FLAGS_from).empty()) {
    base.from = ParseId("from", absl::GetFlag(FLAGS_from));
  }
  if (!absl::GetFlag(FLAGS_to).empty()) {
    base.to = ParseId("to", absl::GetFlag(FLAGS_to));
  }
  if (!absl::GetFlag(FLAGS_since).empty()) {
    base.from = std::max(base.from, MessageId::AtTime(ParseTime(
                                        "since", absl::GetFlag(FLAGS_since))));
  }
  if (!absl::GetFlag(FLAGS_until).empty()) {
    base.to = std::min(base.to, MessageId::AtTime(ParseTime(
                                    "until", absl::GetFlag(FLAGS_until))));
  }
  if (base.to < base.from) throw Usage("the range is empty: --to < --from");
  if (follow && (base.to != MessageId::Max() || limit > 0)) {
    throw Usage("--follow cannot be combined with --to, --until or --limit");
  }
  std::unique_ptr<Db> db = OpenDb();
  Queue* q = OpenQueue(db.get(), args[0]);
  const std::string name = q->name();
  const uint32_t partitions = q->options().partitions;
  for (uint32_t p : base.partitions) {
    if (p >= partitions) {
      throw Usage(
          absl::StrFormat("--partitions: queue %s has partitions "
                          "0..%d; %d is out of range",
                          name, partitions - 1, p));
    }
  }
  // The next id to show per partition (--follow).
  std::vector<MessageId> next(partitions, base.from);
  Table t(kMessageHeader);
  Json j;
  if (!follow) j.BeginObject().Key("messages").BeginArray();
  int64_t shown = 0;
  auto emit = [&](const MessageView& m) {
    next[m.partition] = std::max(next[m.partition], m.id.Next());
    ++shown;
    if (follow) {
      if (json) {
        Json line;
        MessageJson(line, m);
        PrintJson(line);
      } else {
        // No alignment across polls: one tab-free line per message.
        std::printf("%s\n", absl::StrJoin(MessageRow(m), "  ").c_str());
      }
      std::fflush(stdout);
    } else if (json) {
      MessageJson(j, m);
    } else {
      t.Add(MessageRow(m));
    }
  };
  {
    std::unique_ptr<Scanner> s = Must(q->NewScanner(base));
    while ((limit == 0 || shown < limit) && s->Next()) emit(s->message());
    HQ_TRY(s->status());
  }
  if (!follow) {
    j.EndArray().EndObject();
    if (json) {
      PrintJson(j);
    } else if (t.empty()) {
      std::printf("no messages\n");
    } else {
      t.Print(stdout);
    }
    return kExitOk;
  }
  // Follow: the database is released between polls, so other processes
  // can open it meanwhile (it is locked while open).
  if (!json) {
    std::printf("-- following %s (Ctrl-C to stop) --\n", name.c_str());
    std::fflush(stdout);
  }
  const absl::Duration follow_for = absl::GetFlag(FLAGS_follow_for);
  const absl::Time end = follow_for > absl::ZeroDuration()
                             ? absl::Now() + follow_for
                             : absl::InfiniteFuture();
  const absl::Duration poll =
      std::max(absl::GetFlag(FLAGS_poll), absl::Milliseconds(1));
  db.reset();
  std::vector<uint32_t> scope = base.partitions;
  if (scope.empty()) {
    for (uint32_t p = 0; p < partitions; ++p) scope.push_back(p);
  }
  while (absl::Now() < end) {
    if (SleepUnlessStopped(std::min(poll, end - absl::Now()))) break;
    Options options;
    options.create_if_missing = false;
    options.ttl_sweep_interval = absl::ZeroDuration();
    absl::StatusOr<std::unique_ptr<Db>> opened =
        OpenUnlessHeld(DbPath(), options);
    if (!opened.ok()) {
      const Failure f = FromStatus(opened.status());
      if (f.code == kExitLocked) continue;  // Someone is writing: later.
      throw f;
    }
    q = Must((*opened)->OpenQueue(name));
    for (uint32_t p : scope) {
      ScanOptions o = base;
      o.partitions = {p};
      o.from = next[p];
      o.order = ScanOptions::Order::kMerged;
      std::unique_ptr<Scanner> s = Must(q->NewScanner(o));
      while (s->Next()) emit(s->message());
      HQ_TRY(s->status());
    }
  }
  return kExitOk;
}

// ----------------------------------------------------------------- dead

const char* ReasonName(DeadLetterReason r) {
  switch (r) {
    case DeadLetterReason::kLeaseExpired:
      return "lease_expired";
    case DeadLetterReason::kReleased:
      return "released";
    case DeadLetterReason::kInterrupted:
      return "interrupted";
  }
  return "unknown";
}

int Dead(const std::vector<std::string>& args) {
  Need(args, 2, "dead QUEUE GROUP");
  const int64_t limit = absl::GetFlag(FLAGS_limit);
  if (limit < 0) throw Usage("--limit must be >= 0");
  const bool requeue = absl::GetFlag(FLAGS_requeue);
  std::unique_ptr<Db> db = OpenDb();
  Queue* q = OpenQueue(db.get(), args[0]);
  const GroupInfo info = Must(q->InspectGroup(args[1]));
  ConsumerGroup* g = LoadGroup(q, info);
  Table t({"PARTITION", "ID", "ORIGINAL", "PRIORITY", "ATTEMPTS", "REASON",
           "DEAD_AT", "TOPIC", "KEY", "PAYLOAD"});
  Json j;
  j.BeginObject().Key("queue").String(q->name()).Key("group").String(info.name);
  j.Key("dead_letter_queue").String(info.dead_letter_queue);
  j.Key("dead_letters").BeginArray();
  Json requeued;
  requeued.BeginArray();
  int64_t n = 0;
  std::optional<DeadLetter> after;
  while (limit == 0 || n < limit) {
    const size_t want =
        limit == 0 ? 1000
                   : static_cast<size_t>(std::min<int64_t>(1000, limit - n));
    // Requeued letters leave the list: page from the start then.
    const std::vector<DeadLetter> page =
        Must(g->ListDeadLetters(want, after && !requeue ? &*after : nullptr));
    if (page.empty()) break;
    for (const DeadLetter& d : page) {
      t.Add({std::to_string(d.partition), d.id.ToString(),
             absl::StrCat(d.original_partition, "/", d.original_id.ToString()),
             std::to_string(d.priority), std::to_string(d.attempts),
             ReasonName(d.reason), TimeText(d.dead_at), Cell(d.topic),
             Cell(d.key), Cell(d.payload)});
      j.BeginObject().Key("partition").Uint(d.partition);
      j.Key("id").String(d.id.ToString());
      j.Key("original_partition").Uint(d.original_partition);
      j.Key("original_id").String(d.original_id.ToString());
      j.Key("priority").Int(d.priority).Key("attempts").Uint(d.attempts);
      j.Key("reason").String(ReasonName(d.reason));
      j.Key("dead_at").String(TimeText(d.dead_at));
      j.Bytes("topic", d.topic).Bytes("key", d.key).Bytes("payload", d.payload);
      j.EndObject();
    }
    n += static_cast<int64_t>(page.size());
    after = page.back();
    if (requeue) {
      std::vector<PutResult> results;
      HQ_TRY(g->Requeue(page, &results));
      for (const PutResult& r : results) {
        requeued.BeginObject().Key("partition").Uint(r.partition);
        requeued.Key("id").String(r.id.ToString()).EndObject();
      }
    }
  }
  requeued.EndArray();
  j.EndArray();
  if (requeue) j.Key("requeued").Uint(static_cast<uint64_t>(n));
  j.EndObject();
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(j);
    return kExitOk;
  }
  if (t.empty()) {
    std::printf("no dead letters in group %s of %s\n", info.name.c_str(),
                q->name().c_str());
    return kExitOk;
  }
  t.Print(stdout);
  if (requeue) {
    std::printf("requeued %lld dead letter%s to %s\n",
                static_cast<long long>(n), n == 1 ? "" : "s",
                q->name().c_str());
  }
  return kExitOk;
}

// ------------------------------------------------------ compact, verify

int Compact(const std::vector<std::string>& args) {
  Need(args, 0, "compact");
  std::unique_ptr<Db> db = OpenDb();
  const SweepStats st = Must(db->CompactAll());
  if (absl::GetFlag(FLAGS_json)) {
    Json j;
    j.BeginObject().Key("queues_with_ttl").Int(st.queues);
    j.Key("lanes").Int(st.lanes).Key("expired_deleted").Int(st.deleted);
    j.Key("keys_examined").Int(st.examined).EndObject();
    PrintJson(j);
  } else {
    std::printf(
        "TTL sweep: %lld expired messages deleted (%lld queues with a TTL, "
        "%lld lanes); database compacted\n",
        static_cast<long long>(st.deleted), static_cast<long long>(st.queues),
        static_cast<long long>(st.lanes));
  }
  return kExitOk;
}

int Verify(const std::vector<std::string>& args) {
  Need(args, 0, "verify");
  std::unique_ptr<Db> db = OpenDb();
  const VerifyReport r = Must(db->Verify());
  if (absl::GetFlag(FLAGS_json)) {
    Json j;
    j.BeginObject().Key("ok").Bool(r.ok()).Key("keys").Int(r.keys);
    j.Key("queues").Int(r.queues).Key("messages").Int(r.messages);
    j.Key("problem_count").Int(r.problem_count).Key("problems").BeginArray();
    for (const VerifyProblem& p : r.problems) {
      j.BeginObject().Key("key_hex").String(p.key_hex);
      j.Key("description").String(p.description);
      j.Key("file").String(p.file).EndObject();
    }
    j.EndArray().Key("tables").Int(r.tables).Key("blocks").Int(r.blocks);
    j.Key("dropped").BeginArray();
    for (const std::string& f : r.dropped) j.String(f);
    j.EndArray().EndObject();
    PrintJson(j);
  } else {
    if (!r.problems.empty()) {
      Table t({"KEY", "PROBLEM"});
      for (const VerifyProblem& p : r.problems) {
        t.Add({p.key_hex, Cell(p.description)});
      }
      t.Print(stdout);
    }
    std::printf(
        "%lld keys, %lld queues, %lld messages, %lld tables "
        "(%lld blocks): %s\n",
        static_cast<long long>(r.keys), static_cast<long long>(r.queues),
        static_cast<long long>(r.messages), static_cast<long long>(r.tables),
        static_cast<long long>(r.blocks),
        r.ok() ? "no problems"
               : absl::StrCat(r.problem_count, " problem",
                              r.problem_count == 1 ? "" : "s")
                     .c_str());
  }
  return r.ok() ? kExitOk : kExitProblems;
}

// ------------------------------------------------------- repair, backup

// `hq repair [DIR]` and `hq backup [DIR] DEST` also take the database as
// their first argument (Db::Open's refusal of a damaged directory says
// "run `hq repair DIR`"); it must then agree with --db, which it sets.
std::vector<std::string> TakeDbArgument(std::vector<std::string> args,
                                        size_t rest, const char* synopsis) {
  if (args.size() != rest && args.size() != rest + 1) {
    throw Usage(absl::StrCat(
        args.size() < rest ? "missing arguments" : "too many arguments",
        ": hq ", synopsis));
  }
  if (args.size() == rest + 1) {
    const std::string flag = absl::GetFlag(FLAGS_db);
    if (!flag.empty() && flag != args[0]) {
      throw Usage(absl::StrCat("the database is given twice: --db=", flag,
                               " and ", args[0]));
    }
    absl::SetFlag(&FLAGS_db, args[0]);
    args.erase(args.begin());
  }
  return args;
}

const char* ActionName(RepairReport::Change::Action a) {
  switch (a) {
    case RepairReport::Change::Action::kRewritten:
      return "rewritten";
    case RepairReport::Change::Action::kAdded:
      return "added";
    case RepairReport::Change::Action::kMovedAside:
      return "moved aside";
  }
  return "?";
}

void PrintRepairText(const std::string& path, const RepairReport& r) {
  std::printf("copied %s aside to %s (%s) before changing anything\n",
              path.c_str(), r.copied_to.c_str(),
              HumanBytes(r.copied_bytes).c_str());
  if (!r.damage.empty()) {
    std::printf("\ndamage found in the files as they were:\n");
    Table t({"FILE", "DAMAGE", "KEYS LOST"});
    for (const RepairReport::Damage& d : r.damage) {
      t.Add({d.file, Cell(d.what), d.lost_keys.empty() ? "-" : d.lost_keys});
    }
    t.Print(stdout);
  }
  if (!r.logs.dropped.empty()) {
    std::printf("\nlogs cut at their first damaged record (kept in %s/):\n",
                (path + "/dropped").c_str());
    Table t({"LOG", "OFFSET", "BYTES", "INTACT_RECORDS", "DAMAGE", "SAVED_AS"});
    for (const RecoveryReport::Dropped& d : r.logs.dropped) {
      t.Add({d.file, std::to_string(d.offset), std::to_string(d.bytes),
             d.torn_tail ? "0 (torn tail)" : std::to_string(d.records),
             Cell(d.damage), d.saved_as});
    }
    t.Print(stdout);
  }
  if (!r.moved_to_lost.empty()) {
    std::printf("\nLevelDB's repair moved into %s/lost/: %s\n", path.c_str(),
                absl::StrJoin(r.moved_to_lost, ", ").c_str());
  }
  if (!r.leveldb_log.empty()) {
    // A line per intact table is noise on a big Db: counted, not listed
    // (--json has every line).
    std::printf("\nLevelDB's repair log:\n");
    int64_t intact = 0;
    for (const std::string& line : r.leveldb_log) {
      if (absl::StartsWith(line, "Table #") &&
          absl::EndsWith(line, " entries OK")) {
        ++intact;
        continue;
      }
      std::printf("  %s\n", line.c_str());
    }
    if (intact > 0) {
      std::printf("  (%lld tables read intact, not listed)\n",
                  static_cast<long long>(intact));
    }
  }
  if (!r.changes.empty()) {
    // Changes with the same problem (the records of a queue moved aside)
    // on one line: the first key and how many.
    std::printf("\nhq records changed:\n");
    Table t({"KEY", "COUNT", "ACTION", "PROBLEM"});
    std::vector<std::pair<const RepairReport::Change*, int64_t>> groups;
    std::map<std::pair<int, std::string>, size_t> index;
    for (const RepairReport::Change& c : r.changes) {
      auto [it, added] = index.try_emplace(
          std::make_pair(static_cast<int>(c.action), c.problem), groups.size());
      if (added) groups.push_back({&c, 0});
      ++groups[it->second].second;
    }
    for (const auto& [c, n] : groups) {
      t.Add({Cell(c->key_hex) + (n > 1 ? " ..." : ""), std::to_string(n),
             ActionName(c->action), Cell(c->problem)});
    }
    t.Print(stdout);
    if (r.change_count > static_cast<int64_t>(r.changes.size())) {
      std::printf("(%lld more not listed)\n",
                  static_cast<long long>(
                      r.change_count - static_cast<int64_t>(r.changes.size())));
    }
  }
  if (r.moved_aside > 0) {
    std::printf(
        "\n%lld records moved aside, keys and values unchanged, into the "
        "LevelDB database %s\n",
        static_cast<long long>(r.moved_aside), r.moved_aside_to.c_str());
  }
  std::printf("\n");
  Table t({"QUEUE", "MESSAGES_BEFORE", "MESSAGES_AFTER"});
  for (const RepairReport::QueueCount& q : r.queues) {
    t.Add({Cell(q.queue), std::to_string(q.messages_before),
           std::to_string(q.messages_after)});
  }
  t.Add({"(all)", std::to_string(r.messages_before),
         std::to_string(r.messages_after)});
  t.Print(stdout);
  std::printf("keys: %lld before, %lld after\n",
              static_cast<long long>(r.keys_before),
              static_cast<long long>(r.keys_after));
  if (!r.verify.ok()) {
    std::printf("\nverify after the repair:\n");
    Table v({"KEY", "PROBLEM"});
    for (const VerifyProblem& p : r.verify.problems) {
      v.Add({p.key_hex, Cell(p.description)});
    }
    v.Print(stdout);
  }
  std::printf("\nrepaired %s: %s; %s\n", path.c_str(),
              r.clean() ? "verifies clean"
                        : absl::StrCat("verify still finds ",
                                       r.verify.problem_count, " problems")
                              .c_str(),
              r.lost_nothing() ? "nothing lost"
                               : "see above for what was lost or moved");
}

void RepairJson(Json& j, const RepairReport& r) {
  j.Key("copied_to").String(r.copied_to);
  j.Key("copied_bytes").Uint(r.copied_bytes);
  j.Key("damage").BeginArray();
  for (const RepairReport::Damage& d : r.damage) {
    j.BeginObject().Key("file").String(d.file);
    j.Key("what").String(IsUtf8(d.what) ? d.what : "(not UTF-8)");
    j.Key("lost_keys").String(d.lost_keys).EndObject();
  }
  j.EndArray().Key("logs_cut").BeginArray();
  for (const RecoveryReport::Dropped& d : r.logs.dropped) {
    j.BeginObject().Key("file").String(d.file).Key("offset").Uint(d.offset);
    j.Key("bytes").Uint(d.bytes).Key("damage").String(d.damage);
    j.Key("intact_records").Int(d.records).Key("torn_tail").Bool(d.torn_tail);
    j.Key("saved_as").String(d.saved_as).EndObject();
  }
  j.EndArray().Key("moved_to_lost").BeginArray();
  for (const std::string& f : r.moved_to_lost) j.String(f);
  j.EndArray().Key("leveldb_log").BeginArray();
  for (const std::string& l : r.leveldb_log) {
    j.String(IsUtf8(l) ? l : "(not UTF-8)");
  }
  j.EndArray().Key("changes").BeginArray();
  for (const RepairReport::Change& c : r.changes) {
    j.BeginObject().Key("key_hex").String(c.key_hex);
    j.Key("action").String(ActionName(c.action));
    j.Key("problem").String(IsUtf8(c.problem) ? c.problem : "(not UTF-8)");
    j.EndObject();
  }
  j.EndArray().Key("change_count").Int(r.change_count);
  j.Key("moved_aside").Int(r.moved_aside);
  j.Key("moved_aside_to").String(r.moved_aside_to);
  j.Key("queues").BeginArray();
  for (const RepairReport::QueueCount& q : r.queues) {
    j.BeginObject().Bytes("name", q.queue);
    j.Key("messages_before").Int(q.messages_before);
    j.Key("messages_after").Int(q.messages_after).EndObject();
  }
  j.EndArray().Key("keys_before").Int(r.keys_before);
  j.Key("keys_after").Int(r.keys_after);
  j.Key("messages_before").Int(r.messages_before);
  j.Key("messages_after").Int(r.messages_after);
  j.Key("clean").Bool(r.clean()).Key("lost_nothing").Bool(r.lost_nothing());
  j.Key("verify_problems").BeginArray();
  for (const VerifyProblem& p : r.verify.problems) {
    j.BeginObject().Key("key_hex").String(p.key_hex);
    j.Key("description").String(p.description).EndObject();
  }
  j.EndArray();
}

int RepairCommand(const std::vector<std::string>& args) {
  TakeDbArgument(args, 0, "repair [DIR]");
  const std::string path = DbPath();
  const RepairReport r = Must(Db::Repair(path));
  if (absl::GetFlag(FLAGS_json)) {
    Json j;
    j.BeginObject().Key("db").String(path);
    RepairJson(j, r);
    j.EndObject();
    PrintJson(j);
  } else {
    PrintRepairText(path, r);
  }
  return r.clean() ? kExitOk : kExitProblems;
}

// Opens a finished backup (which settles its logs) and, with --verify,
// verifies it. Returns the verify report if asked for.
std::optional<VerifyReport> SettleBackup(const std::string& dest,
                                         RecoveryReport* recovery) {
  Options options;
  options.create_if_missing = false;
  options.ttl_sweep_interval = absl::ZeroDuration();
  std::unique_ptr<Db> db = Must(Db::Open(dest, options));
  *recovery = db->recovery();
  if (!absl::GetFlag(FLAGS_verify)) return std::nullopt;
  return Must(db->Verify());
}

int BackupCommand(const std::vector<std::string>& args) {
  const std::vector<std::string> rest =
      TakeDbArgument(args, 1, "backup [DIR] DEST");
  const std::string path = DbPath(), dest = rest[0];
  CheckIsDb(path);
  BackupReport r;
  std::string method = "in_process";
  pid_t owner = 0;
  RecoveryReport recovery;
  if (absl::StatusOr<pid_t> o = LockOwner(path); o.ok() && *o > 0) {
    // Db::Backup runs inside the process that has the Db open; from here
    // only a copy from outside is possible (tools/live_view.h).
    owner = *o;
    method = "live_copy";
    const LiveCopyStats st = Must(CopyLiveInto(path, dest));
    r.path = dest;
    r.bytes_copied = st.copied_bytes;
    r.as_of = st.taken;
    r.took = st.took;
    if (!absl::GetFlag(FLAGS_json)) {
      std::fprintf(
          stderr,
          "hq: %s is open in process %d: copied from outside (%d attempt%s), "
          "as a kill -9 of it now would leave it; tasks in flight there are "
          "due for redelivery in the copy. For a copy that cannot fail "
          "under constant compaction, call Db::Backup in that process.\n",
          path.c_str(), static_cast<int>(owner), st.attempts,
          st.attempts == 1 ? "" : "s");
    }
  } else {
    std::unique_ptr<Db> db = OpenDb();
    r = Must(db->Backup(dest));
  }
  const std::optional<VerifyReport> v = SettleBackup(dest, &recovery);
  if (absl::GetFlag(FLAGS_json)) {
    Json j;
    j.BeginObject().Key("db").String(path).Key("backup").BeginObject();
    j.Key("path").String(r.path).Key("method").String(method);
    if (owner > 0) j.Key("owner_pid").Int(owner);
    j.Key("tables").Int(r.tables).Key("tables_linked").Int(r.tables_linked);
    j.Key("table_bytes").Uint(r.table_bytes).Key("logs").Int(r.logs);
    j.Key("bytes_copied").Uint(r.bytes_copied);
    j.Key("as_of").String(TimeText(r.as_of));
    j.Key("took_ms").Int(absl::ToInt64Milliseconds(r.took));
    j.Key("log_bytes_dropped_at_open").BeginArray();
    for (const RecoveryReport::Dropped& d : recovery.dropped) {
      j.Uint(d.bytes);
    }
    j.EndArray().EndObject();
    if (v) {
      j.Key("verify").BeginObject().Key("ok").Bool(v->ok());
      j.Key("keys").Int(v->keys).Key("messages").Int(v->messages);
      j.Key("problem_count").Int(v->problem_count).EndObject();
    }
    j.EndObject();
    PrintJson(j);
  } else {
    if (method == "in_process") {
      std::printf(
          "backup of %s in %s: %lld tables (%lld linked, %s), %lld logs, %s "
          "copied; as of %s; took %s\n",
          path.c_str(), dest.c_str(), static_cast<long long>(r.tables),
          static_cast<long long>(r.tables_linked),
          HumanBytes(r.table_bytes).c_str(), static_cast<long long>(r.logs),
          HumanBytes(r.bytes_copied).c_str(), TimeText(r.as_of).c_str(),
          absl::FormatDuration(r.took).c_str());
    } else {
      std::printf(
          "backup of %s (open in process %d) in %s: %s copied, the tables "
          "linked where possible; as of %s; took %s\n",
          path.c_str(), static_cast<int>(owner), dest.c_str(),
          HumanBytes(r.bytes_copied).c_str(), TimeText(r.as_of).c_str(),
          absl::FormatDuration(r.took).c_str());
    }
    for (const RecoveryReport::Dropped& d : recovery.dropped) {
      std::printf("opening the copy cut %s at %llu (%s)\n", d.file.c_str(),
                  static_cast<unsigned long long>(d.offset), d.damage.c_str());
    }
    if (v) {
      std::printf(
          "verify: %lld keys, %lld messages: %s\n",
          static_cast<long long>(v->keys), static_cast<long long>(v->messages),
          v->ok() ? "no problems"
                  : absl::StrCat(v->problem_count, " problems").c_str());
    }
  }
  return !v || v->ok() ? kExitOk : kExitProblems;
}

// ----------------------------------------------------------------- main

// The flags every subcommand takes.
constexpr std::string_view kCommonFlags[] = {"db", "json", "lock_wait",
                                             "width"};

struct Subcommand {
  const char* name;
  const char* synopsis;  // After "hq ".
  const char* summary;
  std::vector<std::string_view> flags;  // Besides kCommonFlags.
  int (*run)(const std::vector<std::string>&);
};

const std::vector<Subcommand>& Subcommands() {
  static const std::vector<Subcommand> kAll = {
      {"ls",
       "ls",
       "Lists the queues: partitions, priorities, layout, TTL, size.",
       {},
       Ls},
      {"stat",
       "stat QUEUE",
       "A queue's partitions (first and last id and time, messages, size), "
       "its consumer groups (backlog, in flight, dead letters, cursor lag; "
       "cursors per partition) and subscriptions (lag; checkpoints per "
       "partition). --lanes=N also lists N lanes' cursors and checkpoints.",
       {"lanes"},
       Stat},
      {"create",
       "create QUEUE",
       "Creates a queue (and the database if needed).",
       {"num_partitions", "num_priorities", "ttl", "layout"},
       Create},
      {"put",
       "put QUEUE [FILE...]",
       "Writes one message per line of stdin, or per FILE, in atomic batches "
       "of 1000. If a batch fails, the error says how many messages were "
       "stored and where to resume.",
       {"topic", "key", "partition", "priority", "delay", "dedup_key"},
       Put},
      {"scan",
       "scan QUEUE",
       "Prints messages, merged in id order across partitions.",
       {"partitions", "topics", "from", "to", "since", "until", "limit",
        "follow", "follow_for", "poll", "lane_order"},
       Scan},
      {"groups",
       "groups [QUEUE]",
       "Lists consumer groups: backlog, in flight, redelivery, dead letters.",
       {},
       Groups},
      {"dead",
       "dead QUEUE GROUP",
       "Lists a group's dead letters; --requeue puts them back.",
       {"limit", "requeue"},
       Dead},
      {"compact",
       "compact",
       "TTL sweep, then a full LevelDB compaction.",
       {},
       Compact},
      {"verify",
       "verify",
       "Checks every table block's checksum, every key and record, and "
       "lists what recovery dropped from damaged logs; exit 3 if it finds "
       "problems.",
       {},
       Verify},
      {"repair",
       "repair [DIR]",
       "Repairs a damaged database (Db::Repair), which no process may have "
       "open (exit 4 if one does): copies the directory aside "
       "(DIR.before-repair-TIME), cuts damaged logs to their intact prefix, "
       "runs LevelDB's RepairDB, then mends hq's own records until Verify "
       "is clean, moving what it cannot mend into DIR/lost/hq-records-TIME "
       "(a LevelDB database). Prints the damage found, what LevelDB moved "
       "to lost/, every record changed and the messages per queue before "
       "and after. Exit 3 if the result still does not verify clean. DIR "
       "is the database, as --db.",
       {},
       RepairCommand},
      {"backup",
       "backup [DIR] DEST",
       "Writes a consistent copy of the database into DEST (which must not "
       "exist, or be empty): a prefix of the writes that opens and verifies "
       "clean, its table files hard-linked where the file system allows. "
       "If no process has the database open, hq opens it and calls "
       "Db::Backup. If another process has it open, hq cannot run code in "
       "that process: it copies the files from outside, as a kill -9 of the "
       "owner at that moment would leave them (every write it made, synced "
       "or not; its tasks in flight due for redelivery), retrying when the "
       "owner's compactions change the files under it, and gives up after "
       "10 attempts; a process that must be able to back up under any load "
       "calls Db::Backup itself. Then opens the copy once (which replays "
       "its logs), and with --verify verifies it (exit 3 on problems). DIR "
       "is the database, as --db.",
       {"verify"},
       BackupCommand},
  };
  return kAll;
}

const Subcommand* FindSubcommand(std::string_view name) {
  for (const Subcommand& c : Subcommands()) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

// `hq SUBCOMMAND --help` and `hq help SUBCOMMAND`.
void PrintSubcommandHelp(const Subcommand& c) {
  std::printf("usage: hq [--db=DIR] [--json] %s [FLAGS]\n\n%s\n\nFlags:\n",
              c.synopsis, c.summary);
  std::vector<std::string_view> flags(c.flags);
  flags.insert(flags.end(), std::begin(kCommonFlags), std::end(kCommonFlags));
  for (std::string_view name : flags) {
    const absl::CommandLineFlag* f =
        absl::FindCommandLineFlag(absl::string_view(name.data(), name.size()));
    std::printf("  --%s (default: %s)\n      %s\n", Sv(f->Name()).c_str(),
                f->DefaultValue().c_str(), f->Help().c_str());
  }
}

void PrintHelpJson() {
  Json j;
  j.BeginObject().Key("usage").String(kUsage).Key("subcommands").BeginArray();
  for (const Subcommand& c : Subcommands()) {
    j.BeginObject().Key("name").String(c.name);
    j.Key("synopsis").String(c.synopsis).Key("summary").String(c.summary);
    j.Key("flags").BeginArray();
    for (std::string_view f : c.flags) j.String(f);
    j.EndArray().EndObject();
  }
  j.EndArray().Key("common_flags").BeginArray();
  for (std::string_view f : kCommonFlags) j.String(f);
  j.EndArray().EndObject();
  PrintJson(j);
}

// What CheckFlags found on the command line.
struct CommandLine {
  bool help = false;
  std::vector<std::string> flags;  // Names, as given (without "no").
  std::vector<std::string> positional;
};

// Checks argv's flags before absl parses them, so that an unknown flag or
// a bad value is a usage error (exit 2) with the usage line, not absl's
// exit 1.
CommandLine CheckFlags(int argc, char** argv) {
  CommandLine cl;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--") {
      for (++i; i < argc; ++i) cl.positional.push_back(argv[i]);
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      cl.positional.push_back(std::string(arg));
      continue;
    }
    arg.remove_prefix(arg[1] == '-' ? 2 : 1);
    const size_t eq = arg.find('=');
    const std::string name(arg.substr(0, eq));
    if (name == "help" || name == "h" || name == "helpfull") {
      cl.help = true;
      continue;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    bool negated = false;
    if (flag == nullptr && absl::StartsWith(name, "no")) {
      flag = absl::FindCommandLineFlag(name.substr(2));
      negated = flag != nullptr && flag->IsOfType<bool>();
      if (!negated) flag = nullptr;
    }
    if (flag == nullptr) throw Usage(absl::StrCat("unknown flag --", name));
    cl.flags.push_back(Sv(flag->Name()));
    std::string value;
    if (eq != std::string_view::npos) {
      if (negated) throw Usage(absl::StrCat("--", name, " takes no value"));
      value = std::string(arg.substr(eq + 1));
    } else if (flag->IsOfType<bool>()) {
      value = negated ? "false" : "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      throw Usage(absl::StrCat("--", name, " needs a value"));
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      throw Usage(absl::StrCat("--", name, "=", value, ": ", error));
    }
  }
  return cl;
}

// Every flag given must be one `c` takes, and within its range: a usage
// error (exit 2) otherwise, before anything is opened.
void ValidateFlags(const Subcommand& c, const std::vector<std::string>& given) {
  for (const std::string& name : given) {
    if (name == "version") continue;
    if (std::find(std::begin(kCommonFlags), std::end(kCommonFlags), name) ==
            std::end(kCommonFlags) &&
        std::find(c.flags.begin(), c.flags.end(), name) == c.flags.end()) {
      throw Usage(absl::StrCat("--", name, " does not apply to hq ", c.name,
                               " (hq ", c.name, " --help lists its flags)"));
    }
  }
  auto at_least = [](const char* name, absl::Duration d, absl::Duration min) {
    if (d < min) {
      throw Usage(
          absl::StrCat("--", name, "=", absl::FormatDuration(d), ": must be ",
                       min == absl::ZeroDuration()
                           ? ">= 0"
                           : absl::StrCat(">= ", absl::FormatDuration(min))));
    }
  };
  auto in_range = [](const char* name, int64_t v, int64_t lo, int64_t hi) {
    if (v < lo || v > hi) {
      throw Usage(absl::StrCat("--", name, "=", v, ": must be ", lo, "..", hi));
    }
  };
  at_least("lock_wait", absl::GetFlag(FLAGS_lock_wait), absl::ZeroDuration());
  at_least("follow_for", absl::GetFlag(FLAGS_follow_for), absl::ZeroDuration());
  at_least("poll", absl::GetFlag(FLAGS_poll), absl::Milliseconds(1));
  at_least("delay", absl::GetFlag(FLAGS_delay), absl::ZeroDuration());
  at_least("ttl", absl::GetFlag(FLAGS_ttl), absl::Milliseconds(1));
  in_range("width", absl::GetFlag(FLAGS_width), 0, INT32_MAX);
  in_range("lanes", absl::GetFlag(FLAGS_lanes), 0, 100000);
  in_range("limit", absl::GetFlag(FLAGS_limit), 0, INT64_MAX);
  in_range("partition", absl::GetFlag(FLAGS_partition), -1, 65534);
  in_range("priority", absl::GetFlag(FLAGS_priority), 0, 255);
  in_range("num_partitions", absl::GetFlag(FLAGS_num_partitions), 1, 65535);
  in_range("num_priorities", absl::GetFlag(FLAGS_num_priorities), 1, 256);
}

int Main(int argc, char** argv) {
  const CommandLine cl = CheckFlags(argc, argv);
  const bool json = absl::GetFlag(FLAGS_json);
  if (absl::GetFlag(FLAGS_version)) {
    if (json) {
      Json j;
      j.BeginObject().Key("version").String(HQ_VERSION).EndObject();
      PrintJson(j);
    } else {
      std::printf("hq %s\n", HQ_VERSION);
    }
    return kExitOk;
  }
  // hq --help, hq help: the list; hq SUB --help, hq help SUB: SUB's flags.
  const bool help_cmd = !cl.positional.empty() && cl.positional[0] == "help";
  if (cl.help || help_cmd) {
    const size_t at = help_cmd ? 1 : 0;
    if (cl.positional.size() > at) {
      const Subcommand* c = FindSubcommand(cl.positional[at]);
      if (c == nullptr) {
        throw Usage(
            absl::StrCat("unknown subcommand '", cl.positional[at], "'"));
      }
      PrintSubcommandHelp(*c);
    } else if (json) {
      PrintHelpJson();
    } else {
      std::fputs(kUsage, stdout);
    }
    return kExitOk;
  }
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() < 2) throw Usage("no subcommand");
  const std::string cmd = rest[1];
  const std::vector<std::string> args(rest.begin() + 2, rest.end());
  const Subcommand* c = FindSubcommand(cmd);
  if (c == nullptr) throw Usage(absl::StrCat("unknown subcommand '", cmd, "'"));
  ValidateFlags(*c, cl.flags);
  g_read_only = cmd == "ls" || cmd == "stat" || cmd == "groups" ||
                cmd == "verify" ||
                (cmd == "scan" && !absl::GetFlag(FLAGS_follow)) ||
                (cmd == "dead" && !absl::GetFlag(FLAGS_requeue));
  // scan --follow stops cleanly on SIGINT or SIGTERM (exit 0); every other
  // subcommand ends at once, by the signal's default action.
  if (!(cmd == "scan" && absl::GetFlag(FLAGS_follow))) UnblockStopSignals();
  return c->run(args);
}

// True if argv asks for --json (checked again here: a failure may come
// before or while absl parses the flags).
bool WantsJson(int argc, char** argv) {
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") break;
    if (a == "--json" || a == "-json" || a == "--json=true") json = true;
    if (a == "--nojson" || a == "--json=false") json = false;
  }
  return json;
}

// Prints a failure: to stderr, and with --json also as one JSON document on
// stdout: {"error":{"exit_code":N,"code":"NOT_FOUND","message":"...",...}}.
int Report(const Failure& f, bool json) {
  std::fflush(stdout);
  std::fprintf(stderr, "hq: %s\n", f.message.c_str());
  if (f.code == kExitUsage) {
    std::fprintf(stderr,
                 "usage: hq [--db=DIR] [--json] SUBCOMMAND [ARGS] [FLAGS] "
                 "(hq help lists the subcommands)\n");
  }
  if (json) {
    Json j;
    j.BeginObject().Key("error").BeginObject();
    j.Key("exit_code").Int(f.code);
    j.Key("code").String(absl::StatusCodeToString(f.status));
    j.Key("message").String(IsUtf8(f.message) ? f.message : "(not UTF-8)");
    for (const auto& [key, value] : f.details) j.Key(key).Int(value);
    j.EndObject().EndObject();
    PrintJson(j);
  }
  return f.code;
}

}  // namespace
}  // namespace hq::tool

int main(int argc, char** argv) {
  hq::tool::BlockStopSignals();
  const bool json = hq::tool::WantsJson(argc, argv);
  try {
    return hq::tool::Main(argc, argv);
  } catch (const hq::tool::Failure& f) {
    return hq::tool::Report(f, json);
  } catch (const std::exception& e) {  // std::filesystem, std::bad_alloc.
    return hq::tool::Report({hq::tool::kExitError, e.what()}, json);
  }
}
