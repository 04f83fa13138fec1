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
//   groups [QUEUE]       consumer groups and their figures (--consumers:
//                        each group's consumers)
//   groups delete QUEUE GROUP
//                        deletes a group (--force, --keep_dead_letters)
//   dead QUEUE GROUP     dead letters of a group (--requeue puts them back)
//   pending QUEUE GROUP  a group's pending tasks one by one (--limit,
//                        --after)
//   pacing QUEUE GROUP [TOPIC]
//                        a topic's pacing override: read, set
//                        (--max_in_flight, --interval) or --clear; without
//                        TOPIC the overrides (--limit, --after)
//   compact              TTL sweep, then a full LevelDB compaction
//   verify               checks every key and record (Db::Verify)
//   repair [DIR]         Db::Repair: copies the directory aside, rebuilds it,
//                        mends hq's records; prints what changed and was lost
//   backup [DIR] DEST    a consistent copy (Db::Backup; from outside if
//                        another process holds the database)
//   fleet status         a fleet's members, owners and hand-off lag
//                        (--zookeeper, --fleet, --nats, --partitions;
//                        built with the fleet library only)
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
//
// This file has main, the flags and the subcommand table; the subcommands
// are in tools/cmd_*.cc, what they share in tools/command.h.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "tools/command.h"
#include "tools/flags.h"
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
          "scan: comma-separated partitions (default: all). fleet status: "
          "also list these partitions (comma-separated, or all) with their "
          "owner, epoch and lag.");
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
          "scan, dead, pending, pacing: at most this many messages, tasks "
          "or topics (0: no limit).");
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
// pending, pacing
ABSL_FLAG(std::string, after, "",
          "pending, pacing: list from after this item: the next_after of "
          "the previous page (default: from the start).");
// pacing
ABSL_FLAG(int64_t, max_in_flight, -1,
          "pacing: set the topic's limit of tasks in flight (0..1000000, 0: "
          "none; default: unchanged, or 0 for a new override).");
ABSL_FLAG(absl::Duration, interval, absl::InfiniteDuration(),
          "pacing: set the topic's interval between hand-outs (0..720h, to "
          "the millisecond; default: unchanged, or 0 for a new override).");
ABSL_FLAG(bool, clear, false,
          "pacing: remove the topic's override (the group's pacing applies "
          "again).");
// groups
ABSL_FLAG(bool, consumers, false,
          "groups: list each group's consumers (tasks in flight, idle time, "
          "partitions) instead of the groups.");
ABSL_FLAG(bool, force, false,
          "groups delete: delete the group even while tasks it handed out "
          "are in flight.");
ABSL_FLAG(bool, keep_dead_letters, false,
          "groups delete: keep the group's dead-letter queue "
          "(QUEUE.dead.GROUP) as an ordinary queue instead of dropping it.");
// fleet
ABSL_FLAG(std::string, zookeeper, "",
          "fleet: ZooKeeper's connect string (host:port,host:port), as the "
          "agents' AgentOptions::zookeeper. Required.");
ABSL_FLAG(std::string, fleet, "default",
          "fleet: the fleet's name (AgentOptions::fleet).");
ABSL_FLAG(std::string, nats, "",
          "fleet: NATS server URLs (nats://host:port,...): also read the "
          "hand-off, each partition's lag and the stream's size.");
ABSL_FLAG(absl::Duration, timeout, absl::Seconds(10),
          "fleet: the longest wait for ZooKeeper, and for NATS, to answer.");
ABSL_FLAG(bool, version, false, "Print the version of hq and exit.");

namespace hq::tool {
namespace {

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
    "  groups [QUEUE]       consumer groups: backlog, in flight, dead "
    "letters,\n"
    "                       rates [--consumers]; groups delete QUEUE "
    "GROUP\n"
    "                       deletes a group and all its state [--force\n"
    "                       --keep_dead_letters]\n"
    "  dead QUEUE GROUP     dead letters of a group [--requeue --limit=N]\n"
    "  pending QUEUE GROUP  a group's pending tasks one by one [--limit=N\n"
    "                       --after=CURSOR]\n"
    "  pacing QUEUE GROUP [TOPIC]\n"
    "                       a topic's pacing override: read it, set it\n"
    "                       [--max_in_flight=N --interval=DURATION] or\n"
    "                       --clear it; without TOPIC, list the overrides\n"
    "                       [--limit=N --after=TOPIC]\n"
    "  compact              TTL sweep, then a full compaction\n"
    "  verify               check every block, key and record; exit 3 on\n"
    "                       problems\n"
    "  repair [DIR]         repair a damaged database (copies it aside "
    "first);\n"
    "                       exit 3 if it does not verify clean after\n"
    "  backup [DIR] DEST    consistent copy of a database, also of one in "
    "use\n"
    "                       [--verify]\n"
    "  fleet status         a fleet's members, partition owners and "
    "hand-off lag\n"
    "                       [--zookeeper=HOSTS --fleet=NAME --nats=URLS\n"
    "                       --partitions=all|LIST --timeout=DURATION]\n"
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

// ----------------------------------------------------- the subcommands

// The flags every subcommand takes.
constexpr std::string_view kCommonFlags[] = {"db", "json", "lock_wait",
                                             "width"};

struct Subcommand {
  const char* name;
  const char* synopsis;  // After "hq ".
  const char* summary;
  std::vector<std::string_view> flags;  // Besides kCommonFlags.
  ExitCode (*run)(const Args&);
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
       "groups delete QUEUE GROUP | groups [QUEUE]",
       "Lists consumer groups: backlog, in flight, redelivery, dead letters, "
       "cursor lag, and on a live view the owner's claim and completion "
       "rates. --consumers lists each group's consumers instead: tasks in "
       "flight, idle time (since its latest claim among them), and for "
       "ordered groups the partitions it owns; from the owner's live status "
       "if another process holds the database and has the group loaded, "
       "else from the stored state (where no consumer is live: the "
       "consumers of the tasks a restart would redeliver); the SOURCE "
       "column (\"source\" in JSON) says which. "
       "groups delete QUEUE GROUP deletes the group (Queue::DeleteGroup): "
       "its cursors, tasks, pacing, dead letters and dead-letter queue "
       "(--keep_dead_letters keeps that queue). It needs the database to "
       "itself (exit 4 if another process holds it), so no task of the "
       "group is in flight then; --force is DeleteGroupOptions::force.",
       {"consumers", "force", "keep_dead_letters"},
       Groups},
      {"dead",
       "dead QUEUE GROUP",
       "Lists a group's dead letters; --requeue puts them back.",
       {"limit", "requeue"},
       Dead},
      {"pending",
       "pending QUEUE GROUP",
       "Lists a group's pending tasks one by one (Redis's XPENDING): "
       "partition, priority, topic, id, state (in_flight, redelivery, "
       "delayed), attempt, claimed or due at, lease deadline, consumer. A "
       "group loaded by this tool (or read from a live copy) sees what a "
       "restart would: tasks in flight are listed as redelivery. Pages: "
       "--limit=N lists N; when more follow, hq prints the cursor of the "
       "last one (on stderr; next_after in JSON, null at the end), and "
       "--after=CURSOR lists from the task after it.",
       {"limit", "after"},
       Pending},
      {"pacing",
       "pacing QUEUE GROUP [TOPIC]",
       "A group's per-topic pacing overrides (ConsumerGroup::"
       "SetTopicPacing): with TOPIC and no other flag, prints its override "
       "(or that it follows the group's pacing); --max_in_flight=N and/or "
       "--interval=DURATION set it, durably (a flag not given keeps the "
       "override's value, 0 for a new one); --clear removes it. Without "
       "TOPIC, lists the overrides in byte order of topic: --limit=N of "
       "them after --after=TOPIC; when more follow, hq prints the topic to "
       "continue after (on stderr; next_after in JSON, null at the end). "
       "Setting and clearing write: exit 4 if another process holds the "
       "database.",
       {"max_in_flight", "interval", "clear", "limit", "after"},
       Pacing},
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
      {"fleet",
       "fleet status --zookeeper=HOSTS",
       "A fleet's state (hq/fleet.h, ReadFleetStatus), read from ZooKeeper "
       "and with --nats=URLS from NATS JetStream; writes nothing. Prints "
       "the fleet's partition count, its members (live, left, or gone and "
       "still owning partitions) with the partitions each owns, its "
       "process id and host, and which is the coordinator, the number of "
       "partitions no agent owns, and with --nats the total hand-off lag "
       "(URLs published to a partition and not yet stored by its current "
       "owner) and the stream's size. --partitions=all (or a list, "
       "0,5,9) also lists those partitions: owner, epoch, lag. --json "
       "prints all of it, every partition included. Exit 1 if the fleet "
       "does not exist or a service does not answer within --timeout, 3 if "
       "its assignment record does not parse. Built with the fleet only "
       "(Debian: libzookeeper-mt-dev libnats-dev); otherwise it says so "
       "(exit 2).",
       {"zookeeper", "fleet", "nats", "partitions", "timeout"},
       Fleet},
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
Result<CommandLine> CheckFlags(int argc, char** argv) {
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
    if (flag == nullptr) return Usage(absl::StrCat("unknown flag --", name));
    cl.flags.push_back(Sv(flag->Name()));
    std::string value;
    if (eq != std::string_view::npos) {
      if (negated) return Usage(absl::StrCat("--", name, " takes no value"));
      value = std::string(arg.substr(eq + 1));
    } else if (flag->IsOfType<bool>()) {
      value = negated ? "false" : "true";
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return Usage(absl::StrCat("--", name, " needs a value"));
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) {
      return Usage(absl::StrCat("--", name, "=", value, ": ", error));
    }
  }
  return cl;
}

// Every flag given must be one `c` takes: a usage error (exit 2)
// otherwise, before anything is opened.
Result<void> CheckFlagsApply(const Subcommand& c,
                             const std::vector<std::string>& given) {
  for (const std::string& name : given) {
    if (name == "version") continue;
    if (std::find(std::begin(kCommonFlags), std::end(kCommonFlags), name) ==
            std::end(kCommonFlags) &&
        std::find(c.flags.begin(), c.flags.end(), name) == c.flags.end()) {
      return Usage(absl::StrCat("--", name, " does not apply to hq ", c.name,
                                " (hq ", c.name, " --help lists its flags)"));
    }
  }
  return {};
}

Result<void> AtLeast(const char* name, absl::Duration d, absl::Duration min) {
  if (d < min) {
    return Usage(
        absl::StrCat("--", name, "=", absl::FormatDuration(d), ": must be ",
                     min == absl::ZeroDuration()
                         ? ">= 0"
                         : absl::StrCat(">= ", absl::FormatDuration(min))));
  }
  return {};
}

Result<void> InRange(const char* name, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return Usage(absl::StrCat("--", name, "=", v, ": must be ", lo, "..", hi));
  }
  return {};
}

// Every flag given must be one `c` takes, and within its range: a usage
// error (exit 2) otherwise, before anything is opened.
Result<void> ValidateFlags(const Subcommand& c,
                           const std::vector<std::string>& given) {
  HQ_TRY(CheckFlagsApply(c, given));
  const absl::Duration zero = absl::ZeroDuration();
  HQ_TRY(AtLeast("lock_wait", absl::GetFlag(FLAGS_lock_wait), zero));
  HQ_TRY(AtLeast("follow_for", absl::GetFlag(FLAGS_follow_for), zero));
  HQ_TRY(AtLeast("poll", absl::GetFlag(FLAGS_poll), absl::Milliseconds(1)));
  HQ_TRY(AtLeast("delay", absl::GetFlag(FLAGS_delay), zero));
  HQ_TRY(AtLeast("ttl", absl::GetFlag(FLAGS_ttl), absl::Milliseconds(1)));
  HQ_TRY(
      AtLeast("timeout", absl::GetFlag(FLAGS_timeout), absl::Milliseconds(1)));
  HQ_TRY(InRange("width", absl::GetFlag(FLAGS_width), 0, INT32_MAX));
  HQ_TRY(InRange("lanes", absl::GetFlag(FLAGS_lanes), 0, 100000));
  HQ_TRY(InRange("limit", absl::GetFlag(FLAGS_limit), 0, INT64_MAX));
  if (std::find(given.begin(), given.end(), "max_in_flight") != given.end()) {
    HQ_TRY(InRange("max_in_flight", absl::GetFlag(FLAGS_max_in_flight), 0,
                   1000000));
  }
  if (std::find(given.begin(), given.end(), "interval") != given.end()) {
    HQ_TRY(AtLeast("interval", absl::GetFlag(FLAGS_interval), zero));
    if (absl::GetFlag(FLAGS_interval) > absl::Hours(720)) {
      return Usage(absl::StrCat(
          "--interval=", absl::FormatDuration(absl::GetFlag(FLAGS_interval)),
          ": must be <= 720h"));
    }
  }
  HQ_TRY(InRange("partition", absl::GetFlag(FLAGS_partition), -1, 65534));
  HQ_TRY(InRange("priority", absl::GetFlag(FLAGS_priority), 0, 255));
  HQ_TRY(
      InRange("num_partitions", absl::GetFlag(FLAGS_num_partitions), 1, 65535));
  HQ_TRY(
      InRange("num_priorities", absl::GetFlag(FLAGS_num_priorities), 1, 256));
  return {};
}

// --------------------------------------------------------------- main

void PrintVersion(bool json) {
  if (json) {
    Json j;
    j.BeginObject().Key("version").String(HQ_VERSION).EndObject();
    PrintJson(j);
  } else {
    std::printf("hq %s\n", HQ_VERSION);
  }
}

// hq --help, hq help: the list; hq SUB --help, hq help SUB: SUB's flags.
Result<void> PrintHelp(const CommandLine& cl, bool help_cmd, bool json) {
  const size_t at = help_cmd ? 1 : 0;
  if (cl.positional.size() > at) {
    const Subcommand* c = FindSubcommand(cl.positional[at]);
    if (c == nullptr) {
      return Usage(
          absl::StrCat("unknown subcommand '", cl.positional[at], "'"));
    }
    PrintSubcommandHelp(*c);
  } else if (json) {
    PrintHelpJson();
  } else {
    std::fputs(kUsage, stdout);
  }
  return {};
}

// Whether subcommand `cmd` only reads, so that a database another process
// holds can be read from a live copy.
bool ReadsOnly(const std::string& cmd, const std::vector<std::string>& args) {
  return cmd == "ls" || cmd == "stat" ||
         (cmd == "groups" && !IsGroupsDelete(args)) || cmd == "verify" ||
         (cmd == "scan" && !absl::GetFlag(FLAGS_follow)) || cmd == "pending" ||
         (cmd == "dead" && !absl::GetFlag(FLAGS_requeue)) ||
         (cmd == "pacing" && !absl::GetFlag(FLAGS_clear) &&
          absl::GetFlag(FLAGS_max_in_flight) < 0 &&
          absl::GetFlag(FLAGS_interval) == absl::InfiniteDuration());
}

ExitCode Main(int argc, char** argv) {
  HQ_ASSIGN_OR_RETURN(const CommandLine cl, CheckFlags(argc, argv));
  const bool json = absl::GetFlag(FLAGS_json);
  if (absl::GetFlag(FLAGS_version)) {
    PrintVersion(json);
    return kExitOk;
  }
  const bool help_cmd = !cl.positional.empty() && cl.positional[0] == "help";
  if (cl.help || help_cmd) {
    HQ_TRY(PrintHelp(cl, help_cmd, json));
    return kExitOk;
  }
  std::vector<char*> rest = absl::ParseCommandLine(argc, argv);
  if (rest.size() < 2) return Usage("no subcommand");
  const std::string cmd = rest[1];
  const std::vector<std::string> args(rest.begin() + 2, rest.end());
  const Subcommand* c = FindSubcommand(cmd);
  if (c == nullptr) {
    return Usage(absl::StrCat("unknown subcommand '", cmd, "'"));
  }
  HQ_TRY(ValidateFlags(*c, cl.flags));
  SetReadOnly(ReadsOnly(cmd, args));
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
    hq::tool::ExitCode code = hq::tool::Main(argc, argv);
    if (code.ok()) return *code;
    return hq::tool::Report(std::move(code).failure(), json);
  } catch (const std::exception& e) {  // std::filesystem, std::bad_alloc.
    return hq::tool::Report({hq::tool::kExitError, e.what()}, json);
  }
}
