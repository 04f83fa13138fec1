// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// What the hq tool's subcommands share (tools/command.h): failures, the
// formatting of times and cells, the live view and opening the database.

#include "tools/command.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "tools/flags.h"
#include "tools/live_view.h"
#include "tools/stop_signals.h"

namespace hq::tool {

Failure Usage(std::string message) {
  return {kExitUsage, std::move(message), absl::StatusCode::kInvalidArgument};
}

Failure FromStatus(const absl::Status& s) {
  if (GetErrorDetail(s) == ErrorDetail::kDbLocked) {
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

// ----------------------------------------------------------- formatting

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

namespace {

bool g_read_only = false;

// The copy read instead of the database, if any; destroyed at exit, after
// every Db (they live in the subcommands).
std::optional<LiveCopy> g_live_copy;
pid_t g_live_owner = 0;
// The owner's live status, if it publishes one (read with the copy).
std::optional<LiveStatus> g_live_status;

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
  j.Key("in_flight_visible").Bool(g_live_status.has_value());
  if (g_live_status) {
    j.Key("status").BeginObject();
    j.Key("written").String(TimeText(g_live_status->written));
    j.Key("age_ms").Int(
        absl::ToInt64Milliseconds(absl::Now() - g_live_status->written));
    j.Key("interval_ms")
        .Int(absl::ToInt64Milliseconds(g_live_status->interval));
    j.EndObject();
  }
  j.EndObject();
  return j.str();
}

// The live status file of `path` if its publisher is `owner`; nullopt if
// there is none, it is another process's (stale), or it does not decode
// (said on stderr: the view then shows the copy alone).
std::optional<LiveStatus> ReadLiveStatus(const std::string& path, pid_t owner) {
  std::string data;
  if (!ReadFile(path + "/" + kLiveStatusFile, &data)) {
    if (errno != ENOENT) {
      std::fprintf(stderr, "hq: warning: %s/%s: %s\n", path.c_str(),
                   kLiveStatusFile, std::strerror(errno));
    }
    return std::nullopt;
  }
  absl::StatusOr<LiveStatus> s = DecodeLiveStatus(data);
  if (!s.ok()) {
    std::fprintf(stderr, "hq: warning: %s/%s: %s\n", path.c_str(),
                 kLiveStatusFile, std::string(s.status().message()).c_str());
    return std::nullopt;
  }
  if (owner == 0 || s->pid != owner) return std::nullopt;
  return *std::move(s);
}

}  // namespace

void SetReadOnly(bool read_only) { g_read_only = read_only; }

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

const LiveGroupStatus* LiveGroup(std::string_view queue,
                                 std::string_view group) {
  return g_live_status ? g_live_status->FindGroup(queue, group) : nullptr;
}

absl::Time LiveStatusWritten() {
  return g_live_status ? g_live_status->written : absl::InfinitePast();
}

const LiveSubscriptionStatus* LiveSubscription(std::string_view queue,
                                               std::string_view name) {
  return g_live_status ? g_live_status->FindSubscription(queue, name) : nullptr;
}

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

Result<std::string> DbPath() {
  std::string path = absl::GetFlag(FLAGS_db);
  if (path.empty()) {
    const char* env = std::getenv("HQ_DB");
    if (env != nullptr) path = env;
  }
  if (path.empty()) {
    return Usage("no database given: pass --db=DIR or set HQ_DB");
  }
  return path;
}

namespace {

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
Result<std::unique_ptr<Db>> OpenLiveCopy(const std::string& path,
                                         Options options) {
  absl::StatusOr<pid_t> owner = LockOwner(path);
  g_live_owner = owner.ok() ? *owner : 0;
  HQ_ASSIGN_OR_RETURN(LiveCopy copy, LiveCopy::Take(path));
  g_live_copy.emplace(std::move(copy));
  g_live_status = ReadLiveStatus(path, g_live_owner);
  options.create_if_missing = false;
  options.status_interval = absl::ZeroDuration();  // The copy publishes none.
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db,
                      Db::Open(g_live_copy->path(), options));
  WarnRecovery(db->recovery(), path);
  if (!absl::GetFlag(FLAGS_json)) {
    std::fprintf(stderr,
                 "hq: live view: %s is open in process %d; this is a copy "
                 "taken at %s (%s to take): what a restart would recover, "
                 "so tasks in flight there count as REDELIVERY here, not "
                 "IN_FLIGHT",
                 path.c_str(), static_cast<int>(g_live_owner),
                 TimeText(g_live_copy->taken()).c_str(),
                 absl::FormatDuration(g_live_copy->took()).c_str());
    if (g_live_status) {
      std::fprintf(
          stderr,
          "; except for the %zu groups loaded in process %d, shown with its "
          "own figures (tasks in flight, leases, rates) as of %s, %s ago",
          g_live_status->groups.size(), static_cast<int>(g_live_owner),
          TimeText(g_live_status->written).c_str(),
          absl::FormatDuration(absl::Trunc(absl::Now() - g_live_status->written,
                                           absl::Milliseconds(1)))
              .c_str());
    }
    std::fprintf(stderr, "\n");
  }
  return db;
}

}  // namespace

// Uses std::filesystem's error codes, not its exceptions. A directory that lost
// its CURRENT but holds a Db's other files is left to Db::Open, which refuses
// it with DataLoss and says what to run.
Result<void> CheckIsDb(const std::string& path) {
  std::error_code ec;
  const bool exists = std::filesystem::exists(path + "/CURRENT", ec);
  if (ec) {
    return Failure{kExitError,
                   absl::StrCat("cannot read ", path, ": ", ec.message()),
                   absl::StatusCode::kPermissionDenied};
  }
  if (!exists && !HoldsDbFiles(path)) {
    return Failure{kExitError, absl::StrCat("no hq database at ", path),
                   absl::StatusCode::kNotFound};
  }
  return {};
}

// A Db another process holds is not even opened. A process that takes the
// lock between the check and the open still gets the lock error.
absl::StatusOr<std::unique_ptr<Db>> OpenUnlessHeld(const std::string& path,
                                                   const Options& options) {
  if (absl::StatusOr<pid_t> owner = LockOwner(path); owner.ok() && *owner > 0) {
    return WithErrorDetail(
        absl::FailedPreconditionError(absl::StrCat(
            "hq database directory '", path, "' is in use by another process")),
        ErrorDetail::kDbLocked);
  }
  return Db::Open(path, options);
}

Result<std::unique_ptr<Db>> OpenDb(bool create) {
  HQ_ASSIGN_OR_RETURN(const std::string path, DbPath());
  Options options;
  options.create_if_missing = create;
  options.ttl_sweep_interval = absl::ZeroDuration();  // compact sweeps.
  // LevelDB creates the directory even when it then finds no database.
  if (!create) HQ_TRY(CheckIsDb(path));
  const absl::Time give_up = absl::Now() + absl::GetFlag(FLAGS_lock_wait);
  while (true) {
    absl::StatusOr<std::unique_ptr<Db>> db = OpenUnlessHeld(path, options);
    if (db.ok()) {
      WarnRecovery((*db)->recovery(), path);
      return std::move(db).value();
    }
    // A creating Open's NotFound says what is missing (a parent directory).
    if (absl::IsNotFound(db.status()) && !create) {
      return Failure{kExitError, absl::StrCat("no hq database at ", path),
                     absl::StatusCode::kNotFound};
    }
    Failure f = FromStatus(db.status());
    if (f.code == kExitLocked && absl::Now() >= give_up && g_read_only) {
      return OpenLiveCopy(path, options);
    }
    if (f.code != kExitLocked || absl::Now() >= give_up) return f;
    // SIGINT or SIGTERM (scan --follow keeps them for a clean stop) ends
    // the wait with the lock's failure.
    if (SleepUnlessStopped(absl::Milliseconds(50))) return f;
  }
}

Result<Queue*> OpenQueue(Db* db, const std::string& name) {
  return AsResult(db->OpenQueue(name));
}

Result<ConsumerGroup*> LoadGroup(Queue* q, const GroupInfo& info) {
  return AsResult(
      q->Group(info.name, {.topics = info.topics, .ordered = info.ordered}));
}

Result<void> Need(const std::vector<std::string>& args, size_t n,
                  const char* synopsis) {
  if (args.size() != n) {
    return Usage(absl::StrCat(
        args.size() < n ? "missing arguments" : "too many arguments", ": hq ",
        synopsis));
  }
  return {};
}

}  // namespace hq::tool
