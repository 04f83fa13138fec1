// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// What the hq tool's subcommands share: how they fail (Failure, Result and
// the exit codes main maps them to), opening the database, and the
// formatting of times, cells and JSON documents. The subcommands live in
// tools/cmd_*.cc, main and the subcommand table in tools/hq.cc.

#ifndef HQ_TOOLS_COMMAND_H_
#define HQ_TOOLS_COMMAND_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "hq/hq.h"
#include "lib/format/live_status.h"
#include "tools/output.h"

namespace hq::tool {

// ----------------------------------------------------------- exit codes

constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitProblems = 3;
constexpr int kExitLocked = 4;

// A failure with its exit code: what a subcommand, or a step of one,
// returns instead of its result; main prints it (Report in tools/hq.cc).
struct Failure {
  int code;
  std::string message;
  // For --json's error object: the status code behind the failure, and
  // numbers a script acts on (put's "stored", the lock owner's "pid").
  absl::StatusCode status = absl::StatusCode::kUnknown;
  std::vector<std::pair<std::string, int64_t>> details = {};
};

// A usage error (exit 2).
Failure Usage(std::string message);

// The failure for a status of the hq API: exit 4 if another process holds
// the database (naming it if its LOCK does), 3 for DataLoss, else 1.
Failure FromStatus(const absl::Status& s);

// A T, or the Failure that ends the subcommand.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit, as StatusOr.
  Result(Failure f) : v_(std::move(f)) {}    // NOLINT
  bool ok() const { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  T* operator->() { return &value(); }
  Failure&& failure() && { return std::get<1>(std::move(v_)); }

 private:
  std::variant<T, Failure> v_;
};

// A step with no value: ok, or the Failure that ends the subcommand.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Failure f) : f_(std::move(f)) {}  // NOLINT: implicit, as Status.
  bool ok() const { return !f_.has_value(); }
  Failure&& failure() && { return *std::move(f_); }

 private:
  std::optional<Failure> f_;
};

// What a subcommand returns: its exit code (kExitOk, or kExitProblems when
// verify or repair finds damage) once it has printed its result.
using ExitCode = Result<int>;

// Results of the hq API as Results (FromStatus's failure).
inline Result<void> AsResult(const absl::Status& s) {
  if (s.ok()) return {};
  return FromStatus(s);
}
template <typename T>
Result<T> AsResult(absl::StatusOr<T> v) {
  if (!v.ok()) return FromStatus(v.status());
  return std::move(v).value();
}
template <typename T>
Result<T> AsResult(Result<T> r) {
  return r;
}

#define HQ_TOOL_CONCAT_INNER_(a, b) a##b
#define HQ_TOOL_CONCAT_(a, b) HQ_TOOL_CONCAT_INNER_(a, b)

// HQ_TRY(expr): expr is an absl::Status, an absl::StatusOr or a Result; if
// it failed, returns its Failure from the calling function.
#define HQ_TRY(expr)                                        \
  do {                                                      \
    auto hq_try_ = ::hq::tool::AsResult(expr);              \
    if (!hq_try_.ok()) return std::move(hq_try_).failure(); \
  } while (0)

// HQ_ASSIGN_OR_RETURN(lhs, expr): expr is an absl::StatusOr<T> or a
// Result<T>; assigns its value to lhs (a declaration or a variable), or
// returns its Failure from the calling function.
#define HQ_ASSIGN_OR_RETURN(lhs, expr) \
  HQ_ASSIGN_OR_RETURN_IMPL_(HQ_TOOL_CONCAT_(hq_result_, __LINE__), lhs, expr)
#define HQ_ASSIGN_OR_RETURN_IMPL_(result, lhs, expr)    \
  auto result = ::hq::tool::AsResult(expr);             \
  if (!result.ok()) return std::move(result).failure(); \
  lhs = std::move(result).value()

// -------------------------------------------------------------- listing

// Lists up to `limit` items (0: all) a page of at most 1000 at a time:
// `list(want, after)` returns the next page (an absl::StatusOr of a
// vector) after `after` (null: from the start), and `take(page)` (a
// Result<void>) takes each page in. Stops at an empty page. Returns how
// many items were listed.
template <typename T, typename List, typename Take>
Result<int64_t> ListPages(int64_t limit, List list, Take take) {
  int64_t n = 0;
  std::optional<T> after;
  while (limit == 0 || n < limit) {
    const size_t want =
        limit == 0 ? 1000
                   : static_cast<size_t>(std::min<int64_t>(1000, limit - n));
    HQ_ASSIGN_OR_RETURN(const std::vector<T> page,
                        list(want, after ? &*after : nullptr));
    if (page.empty()) break;
    HQ_TRY(take(page));
    n += static_cast<int64_t>(page.size());
    after = page.back();
  }
  return n;
}

// ----------------------------------------------------------- formatting

std::string Sv(absl::string_view s);
// 2026-01-01T12:00:00.000Z
std::string TimeText(absl::Time t);
// "-" for no TTL.
std::string FormatTtl(absl::Duration ttl);
// Bytes as a table cell, cut to --width.
std::string Cell(std::string_view bytes);
// n, or ">=n" if it is a lower bound.
std::string Count(uint64_t n, bool exact);

// Prints a JSON document; on a live copy, with a first member "view".
void PrintJson(const Json& j);

// On a live copy whose owner publishes its live status (Options::
// status_interval): the owner's figures for group `group` of `queue`, if
// it has the group loaded; null otherwise.
const LiveGroupStatus* LiveGroup(std::string_view queue,
                                 std::string_view group);
// When the owner wrote that status, by its clock; InfinitePast without one.
absl::Time LiveStatusWritten();
// The same for subscription `name` of `queue`, if it is live there.
const LiveSubscriptionStatus* LiveSubscription(std::string_view queue,
                                               std::string_view name);

// -------------------------------------------------------------- opening

// Reads the whole file; false with errno set if it cannot (a directory
// gives EISDIR).
bool ReadFile(const std::string& path, std::string* out);

// Set by main: the subcommand only reads, so a database that another
// process holds is read from a LiveCopy (tools/live_view.h) instead of
// failing.
void SetReadOnly(bool read_only);

// --db, or $HQ_DB.
Result<std::string> DbPath();

// Fails unless `path` holds a database (a CURRENT file, or LevelDB's other
// files) that this user can read.
Result<void> CheckIsDb(const std::string& path);

// Db::Open, but only if no process holds the database's lock.
absl::StatusOr<std::unique_ptr<Db>> OpenUnlessHeld(const std::string& path,
                                                   const Options& options);

// Opens the Db (never creating one unless `create`), retrying while
// another process holds it for up to --lock_wait.
Result<std::unique_ptr<Db>> OpenDb(bool create = false);

Result<Queue*> OpenQueue(Db* db, const std::string& name);

// Loads the existing group `info.name` with the options it was created
// with.
Result<ConsumerGroup*> LoadGroup(Queue* q, const GroupInfo& info);

// A usage error unless `args` has `n` arguments.
Result<void> Need(const std::vector<std::string>& args, size_t n,
                  const char* synopsis);

// ---------------------------------------------------------- subcommands

using Args = std::vector<std::string>;

// tools/cmd_read.cc
ExitCode Ls(const Args& args);
ExitCode Stat(const Args& args);
ExitCode Groups(const Args& args);
// Whether `args` (after "groups") ask for hq groups delete: the word
// "delete" and more arguments (hq groups delete, alone, lists the groups of
// a queue named "delete").
bool IsGroupsDelete(const Args& args);
// tools/cmd_scan.cc
ExitCode Scan(const Args& args);
// tools/cmd_write.cc
ExitCode Create(const Args& args);
ExitCode Put(const Args& args);
// tools/cmd_dead.cc
ExitCode Dead(const Args& args);
// tools/cmd_pending.cc
ExitCode Pending(const Args& args);
// tools/cmd_pacing.cc
ExitCode Pacing(const Args& args);
// tools/cmd_admin.cc
ExitCode Compact(const Args& args);
ExitCode Verify(const Args& args);
ExitCode RepairCommand(const Args& args);
ExitCode BackupCommand(const Args& args);
// tools/cmd_fleet.cc (built with the fleet library), else
// tools/cmd_fleet_off.cc
ExitCode Fleet(const Args& args);

}  // namespace hq::tool

#endif  // HQ_TOOLS_COMMAND_H_
