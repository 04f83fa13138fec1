// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The hq subcommands that look after a database as a whole: compact,
// verify, repair and backup.

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "tools/command.h"
#include "tools/flags.h"
#include "tools/live_view.h"
#include "tools/progress.h"

namespace hq::tool {

// ------------------------------------------------------ compact, verify

ExitCode Compact(const Args& args) {
  HQ_TRY(Need(args, 0, "compact"));
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  HQ_ASSIGN_OR_RETURN(const SweepStats st,
                      db->CompactAll(TerminalProgress("compact")));
  if (absl::GetFlag(FLAGS_json)) {
    Json j;
    j.BeginObject().Key("queues_with_ttl").Int(st.queues);
    j.Key("lanes").Int(st.lanes).Key("expired_deleted").Int(st.deleted);
    j.Key("keys_examined").Int(st.examined);
    j.Key("lane_index_trimmed").Int(st.hints_trimmed).EndObject();
    PrintJson(j);
  } else {
    std::printf(
        "TTL sweep: %lld expired messages deleted (%lld queues with a TTL, "
        "%lld lanes); %lld lane index records trimmed; database compacted\n",
        static_cast<long long>(st.deleted), static_cast<long long>(st.queues),
        static_cast<long long>(st.lanes),
        static_cast<long long>(st.hints_trimmed));
  }
  return kExitOk;
}

ExitCode Verify(const Args& args) {
  HQ_TRY(Need(args, 0, "verify"));
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  HQ_ASSIGN_OR_RETURN(const VerifyReport r,
                      db->Verify(TerminalProgress("verify")));
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
      Table t({"FILE", "KEY", "PROBLEM"});
      for (const VerifyProblem& p : r.problems) {
        t.Add({p.file.empty() ? "-" : p.file,
               p.key_hex.empty() ? "-" : p.key_hex, Cell(p.description)});
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

// ------------------------------------------------------------- repair

namespace {

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

// The damage Db::Repair found, and the logs it cut.
void PrintDamage(const std::string& path, const RepairReport& r) {
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
}

// What LevelDB's RepairDB did: the files it moved to lost/, its log.
void PrintLevelDbRepair(const std::string& path, const RepairReport& r) {
  if (!r.moved_to_lost.empty()) {
    std::printf("\nLevelDB's repair moved into %s/lost/: %s\n", path.c_str(),
                absl::StrJoin(r.moved_to_lost, ", ").c_str());
  }
  if (r.leveldb_log.empty()) return;
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

// The hq records changed. Changes with the same problem (the records of a
// queue moved aside) on one line: the first key and how many.
void PrintChanges(const RepairReport& r) {
  if (r.changes.empty()) return;
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
                static_cast<long long>(r.change_count -
                                       static_cast<int64_t>(r.changes.size())));
  }
}

// The messages per queue and the keys, before and after.
void PrintCounts(const RepairReport& r) {
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
}

void PrintRepairText(const std::string& path, const RepairReport& r) {
  for (const std::string& p : r.removed_partial_copies) {
    std::printf(
        "removed %s: an unfinished copy aside, left by a repair killed while "
        "it copied (before it changed anything)\n",
        p.c_str());
  }
  if (r.nothing_to_repair) {
    std::printf(
        "nothing to repair: %s verifies clean (%lld messages, %lld keys); "
        "nothing was changed\n",
        path.c_str(), static_cast<long long>(r.messages_after),
        static_cast<long long>(r.keys_after));
    return;
  }
  std::printf("copied %s aside to %s (%s) before changing anything\n",
              path.c_str(), r.copied_to.c_str(),
              HumanBytes(r.copied_bytes).c_str());
  PrintDamage(path, r);
  PrintLevelDbRepair(path, r);
  PrintChanges(r);
  if (r.moved_aside > 0) {
    std::printf(
        "\n%lld records moved aside, keys and values unchanged, into the "
        "LevelDB database %s\n",
        static_cast<long long>(r.moved_aside), r.moved_aside_to.c_str());
  }
  PrintCounts(r);
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
  j.Key("nothing_to_repair").Bool(r.nothing_to_repair);
  j.Key("removed_partial_copies").BeginArray();
  for (const std::string& p : r.removed_partial_copies) j.String(p);
  j.EndArray();
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

// `hq repair [DIR]` and `hq backup [DIR] DEST` also take the database as
// their first argument (Db::Open's refusal of a damaged directory says
// "run `hq repair DIR`"); it must then agree with --db, which it sets.
// Returns the other arguments.
Result<std::vector<std::string>> TakeDbArgument(std::vector<std::string> args,
                                                size_t rest,
                                                const char* synopsis) {
  if (args.size() != rest && args.size() != rest + 1) {
    return Usage(absl::StrCat(
        args.size() < rest ? "missing arguments" : "too many arguments",
        ": hq ", synopsis));
  }
  if (args.size() == rest + 1) {
    const std::string flag = absl::GetFlag(FLAGS_db);
    if (!flag.empty() && flag != args[0]) {
      return Usage(absl::StrCat("the database is given twice: --db=", flag,
                                " and ", args[0]));
    }
    absl::SetFlag(&FLAGS_db, args[0]);
    args.erase(args.begin());
  }
  return args;
}

}  // namespace

ExitCode RepairCommand(const Args& args) {
  HQ_TRY(TakeDbArgument(args, 0, "repair [DIR]"));
  HQ_ASSIGN_OR_RETURN(const std::string path, DbPath());
  HQ_ASSIGN_OR_RETURN(const RepairReport r,
                      Db::Repair(path, {}, TerminalProgress("repair")));
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

// ------------------------------------------------------------- backup

namespace {

// A backup made, and the copy opened.
struct Backup {
  BackupReport report;
  std::string method = "in_process";
  pid_t owner = 0;  // With method "live_copy": the process that has the Db.
  RecoveryReport recovery;             // What opening the copy replayed.
  std::optional<VerifyReport> verify;  // With --verify.
};

// Copies the database at `path`, which process `owner` has open, into
// `dest` from outside (tools/live_view.h): Db::Backup runs inside the
// process that has the Db open.
Result<void> CopyFromOutside(const std::string& path, const std::string& dest,
                             pid_t owner, Backup& b) {
  b.owner = owner;
  b.method = "live_copy";
  HQ_ASSIGN_OR_RETURN(const LiveCopyStats st, CopyLiveInto(path, dest));
  b.report.path = dest;
  b.report.bytes_copied = st.copied_bytes;
  b.report.as_of = st.taken;
  b.report.took = st.took;
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
  return {};
}

// Opens a finished backup (which settles its logs) and, with --verify,
// verifies it.
Result<void> SettleBackup(const std::string& dest, Backup& b) {
  Options options;
  options.create_if_missing = false;
  options.ttl_sweep_interval = absl::ZeroDuration();
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(dest, options));
  b.recovery = db->recovery();
  if (!absl::GetFlag(FLAGS_verify)) return {};
  HQ_ASSIGN_OR_RETURN(b.verify, db->Verify(TerminalProgress("backup")));
  return {};
}

void BackupJson(const std::string& path, const Backup& b) {
  const BackupReport& r = b.report;
  Json j;
  j.BeginObject().Key("db").String(path).Key("backup").BeginObject();
  j.Key("path").String(r.path).Key("method").String(b.method);
  if (b.owner > 0) j.Key("owner_pid").Int(b.owner);
  j.Key("tables").Int(r.tables).Key("tables_linked").Int(r.tables_linked);
  j.Key("table_bytes").Uint(r.table_bytes).Key("logs").Int(r.logs);
  j.Key("bytes_copied").Uint(r.bytes_copied);
  j.Key("as_of").String(TimeText(r.as_of));
  j.Key("took_ms").Int(absl::ToInt64Milliseconds(r.took));
  j.Key("log_bytes_dropped_at_open").BeginArray();
  for (const RecoveryReport::Dropped& d : b.recovery.dropped) {
    j.Uint(d.bytes);
  }
  j.EndArray().EndObject();
  if (b.verify) {
    const VerifyReport& v = *b.verify;
    j.Key("verify").BeginObject().Key("ok").Bool(v.ok());
    j.Key("keys").Int(v.keys).Key("messages").Int(v.messages);
    j.Key("problem_count").Int(v.problem_count).EndObject();
  }
  j.EndObject();
  PrintJson(j);
}

void PrintBackupText(const std::string& path, const std::string& dest,
                     const Backup& b) {
  const BackupReport& r = b.report;
  if (b.method == "in_process") {
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
        path.c_str(), static_cast<int>(b.owner), dest.c_str(),
        HumanBytes(r.bytes_copied).c_str(), TimeText(r.as_of).c_str(),
        absl::FormatDuration(r.took).c_str());
  }
  for (const RecoveryReport::Dropped& d : b.recovery.dropped) {
    std::printf("opening the copy cut %s at %llu (%s)\n", d.file.c_str(),
                static_cast<unsigned long long>(d.offset), d.damage.c_str());
  }
  if (b.verify) {
    const VerifyReport& v = *b.verify;
    std::printf("verify: %lld keys, %lld messages: %s\n",
                static_cast<long long>(v.keys),
                static_cast<long long>(v.messages),
                v.ok() ? "no problems"
                       : absl::StrCat(v.problem_count, " problems").c_str());
  }
}

}  // namespace

ExitCode BackupCommand(const Args& args) {
  HQ_ASSIGN_OR_RETURN(const std::vector<std::string> rest,
                      TakeDbArgument(args, 1, "backup [DIR] DEST"));
  HQ_ASSIGN_OR_RETURN(const std::string path, DbPath());
  const std::string dest = rest[0];
  HQ_TRY(CheckIsDb(path));
  Backup b;
  if (absl::StatusOr<pid_t> o = LockOwner(path); o.ok() && *o > 0) {
    HQ_TRY(CopyFromOutside(path, dest, *o, b));
  } else {
    HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
    HQ_ASSIGN_OR_RETURN(b.report, db->Backup(dest, TerminalProgress("backup")));
  }
  HQ_TRY(SettleBackup(dest, b));
  if (absl::GetFlag(FLAGS_json)) {
    BackupJson(path, b);
  } else {
    PrintBackupText(path, dest, b);
  }
  return !b.verify || b.verify->ok() ? kExitOk : kExitProblems;
}

}  // namespace hq::tool
