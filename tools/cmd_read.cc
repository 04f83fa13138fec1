// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The hq subcommands that describe a database: ls (the queues), stat (one
// queue: partitions, consumer groups, subscriptions) and groups.

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tools/command.h"
#include "tools/flags.h"

namespace hq::tool {
namespace {

void TtlJson(Json& j, absl::Duration ttl) {
  if (ttl == absl::InfiniteDuration()) {
    j.Null();
  } else {
    j.Int(absl::ToInt64Milliseconds(ttl));
  }
}

// Prints a, and with a blank line before it b, unless b is empty.
void PrintTables(const Table& a, const Table& b) {
  a.Print(stdout);
  if (!b.empty()) {
    std::printf("\n");
    b.Print(stdout);
  }
}

}  // namespace

// ------------------------------------------------------------------- ls

ExitCode Ls(const Args& args) {
  HQ_TRY(Need(args, 0, "ls"));
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  HQ_ASSIGN_OR_RETURN(const std::vector<std::string> names, db->ListQueues());
  Json j;
  j.BeginObject().Key("db").String(db->path()).Key("queues").BeginArray();
  Table t({"QUEUE", "PARTITIONS", "PRIORITIES", "LAYOUT", "TTL", "GROUPS",
           "SUBSCRIPTIONS", "SIZE", "CREATED"});
  for (const std::string& name : names) {
    HQ_ASSIGN_OR_RETURN(Queue * q, OpenQueue(db.get(), name));
    const QueueInfo info = q->info();
    HQ_ASSIGN_OR_RETURN(const uint64_t bytes, q->ApproximateBytes());
    HQ_ASSIGN_OR_RETURN(const std::vector<std::string> group_names,
                        q->ListGroups());
    HQ_ASSIGN_OR_RETURN(const std::vector<std::string> sub_names,
                        q->ListSubscriptions());
    const size_t groups = group_names.size();
    const size_t subs = sub_names.size();
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
    TtlJson(j, o.ttl);
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

namespace {

// GroupOptions::Start as the JSON output names it.
const char* StartName(GroupOptions::Start start) {
  switch (start) {
    case GroupOptions::Start::kEarliest:
      return "earliest";
    case GroupOptions::Start::kLatest:
      return "latest";
    case GroupOptions::Start::kId:
      return "id";
    case GroupOptions::Start::kTime:
      return "time";
  }
  return "unknown";
}

// The owner's own figures of a group, on a live view with its status.
void LiveJson(Json& j, const LiveGroupStatus* live) {
  if (live == nullptr) return;
  j.Key("live").BeginObject();
  j.Key("claimed_per_s").Double(live->claimed_per_s);
  j.Key("completed_per_s").Double(live->completed_per_s);
  j.Key("claimed_total").Uint(live->claimed_total);
  j.Key("completed_total").Uint(live->completed_total);
  j.Key("oldest_in_flight_ms")
      .Int(absl::ToInt64Milliseconds(live->stats.oldest_in_flight));
  j.Key("paced_topics").Uint(live->stats.paced_topics);
  j.EndObject();
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
  j.Key("start").String(StartName(info.start)).Key("start_ids").BeginArray();
  for (const MessageId& id : info.start_ids) j.String(id.ToString());
  j.EndArray();
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

// A group of `q` as it is now: how it was created, and its figures (on a
// live view, the owner's own if it has the group loaded: `live`).
struct GroupNow {
  GroupInfo info;
  GroupStats stats;
  const LiveGroupStatus* live = nullptr;
};

Result<GroupNow> InspectGroup(Queue* q, const std::string& name) {
  GroupNow g;
  HQ_ASSIGN_OR_RETURN(g.info, q->InspectGroup(name));
  g.live = LiveGroup(q->name(), name);
  if (g.live != nullptr) {
    g.stats = g.live->stats;
    return g;
  }
  HQ_ASSIGN_OR_RETURN(ConsumerGroup * group, LoadGroup(q, g.info));
  HQ_ASSIGN_OR_RETURN(g.stats, group->Stats());
  return g;
}

}  // namespace

namespace {

// A rate of the live view as a table cell: "-" without one.
std::string RateCell(const LiveGroupStatus* live, double rate) {
  return live == nullptr ? "-" : absl::StrFormat("%.1f", rate);
}

// One consumer as hq groups --consumers shows it.
struct ConsumerRow {
  std::string name;
  uint64_t in_flight = 0;
  absl::Time last_claim = absl::InfinitePast();  // Of its tasks in flight.
  std::vector<uint32_t> partitions;
  bool owns = false;  // A live consumer of an ordered group.
};

// The consumers of a group: the live ones of an ordered group (with their
// partitions), and every consumer named by a task in flight, with its tasks
// and its latest claim among them.
std::vector<ConsumerRow> CollectConsumers(
    const std::vector<ConsumerInfo>& live,
    const std::vector<PendingTask>& pending) {
  std::map<std::string, ConsumerRow> by_name;
  for (const ConsumerInfo& c : live) {
    ConsumerRow& row = by_name[c.name];
    row.name = c.name;
    row.partitions = c.partitions;
    row.owns = true;
  }
  for (const PendingTask& p : pending) {
    if (p.state != PendingTask::State::kInFlight || p.consumer.empty())
      continue;
    ConsumerRow& row = by_name[p.consumer];
    row.name = p.consumer;
    ++row.in_flight;
    row.last_claim = std::max(row.last_claim, p.since);
  }
  std::vector<ConsumerRow> out;
  for (auto& [name, row] : by_name) out.push_back(std::move(row));
  return out;
}

// hq groups --consumers: a row per consumer, a JSON object per group.
ExitCode GroupConsumers(Db* db, const std::vector<std::string>& queues) {
  Table t({"QUEUE", "GROUP", "CONSUMER", "IN_FLIGHT", "IDLE", "PARTITIONS",
           "SOURCE"});
  Json j;
  j.BeginObject().Key("groups").BeginArray();
  size_t groups = 0;
  for (const std::string& name : queues) {
    HQ_ASSIGN_OR_RETURN(Queue * q, OpenQueue(db, name));
    HQ_ASSIGN_OR_RETURN(const std::vector<std::string> names, q->ListGroups());
    for (const std::string& g : names) {
      ++groups;
      HQ_ASSIGN_OR_RETURN(const GroupInfo info, q->InspectGroup(g));
      std::vector<ConsumerRow> rows;
      absl::Time now;
      bool complete = true;
      const LiveGroupStatus* live = LiveGroup(q->name(), g);
      if (live != nullptr) {
        rows = CollectConsumers(live->consumers, live->pending);
        complete = live->pending_complete;
        now = LiveStatusWritten();  // Idle as of the status, on its clock.
      } else {
        HQ_ASSIGN_OR_RETURN(ConsumerGroup * group, LoadGroup(q, info));
        HQ_ASSIGN_OR_RETURN(const std::vector<ConsumerInfo> consumers,
                            group->Consumers());
        HQ_ASSIGN_OR_RETURN(const std::vector<PendingTask> pending,
                            group->ListPending(kLiveStatusPending));
        complete = pending.size() < kLiveStatusPending;
        rows = CollectConsumers(consumers, pending);
        now = absl::Now();
      }
      const char* source = live != nullptr ? "live" : "stored";
      j.BeginObject().Key("queue").String(name).Key("group").String(g);
      j.Key("ordered").Bool(info.ordered).Key("source").String(source);
      j.Key("in_flight_complete").Bool(complete);
      j.Key("consumers").BeginArray();
      for (const ConsumerRow& c : rows) {
        std::vector<std::string> parts;
        for (uint32_t p : c.partitions) parts.push_back(std::to_string(p));
        const bool idle_known = c.last_claim != absl::InfinitePast();
        const absl::Duration idle =
            idle_known ? std::max(absl::ZeroDuration(), now - c.last_claim)
                       : absl::ZeroDuration();
        t.Add({Cell(name), Cell(g), Cell(c.name), std::to_string(c.in_flight),
               idle_known ? absl::FormatDuration(
                                absl::Trunc(idle, absl::Milliseconds(1)))
                          : "-",
               info.ordered
                   ? (parts.empty() ? "none" : absl::StrJoin(parts, ","))
                   : "-",
               source});
        j.BeginObject().Bytes("name", c.name);
        j.Key("in_flight").Uint(c.in_flight).Key("idle_ms");
        idle_known ? j.Int(absl::ToInt64Milliseconds(idle)) : j.Null();
        j.Key("live").Bool(c.owns);
        if (info.ordered) {
          j.Key("partitions").BeginArray();
          for (uint32_t p : c.partitions) j.Uint(p);
          j.EndArray();
        }
        j.EndObject();
      }
      j.EndArray().EndObject();
    }
  }
  j.EndArray().EndObject();
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(j);
  } else if (groups == 0) {
    std::printf("no consumer groups\n");
  } else if (t.empty()) {
    std::printf("no consumers\n");
  } else {
    t.Print(stdout);
  }
  if (!absl::GetFlag(FLAGS_json) && groups > 0) {
    std::fprintf(stderr,
                 "hq: SOURCE live: the owner's live status (idle: since the "
                 "consumer's latest claim among its tasks in flight); "
                 "stored: the group as a restart would load it, with no "
                 "consumer live and no task in flight\n");
  }
  return kExitOk;
}

}  // namespace

bool IsGroupsDelete(const Args& args) {
  return args.size() > 1 && args[0] == "delete";
}

namespace {

// hq groups delete QUEUE GROUP.
ExitCode GroupsDelete(const Args& args) {
  if (args.size() != 3) {
    return Usage("hq groups delete QUEUE GROUP takes two arguments");
  }
  if (absl::GetFlag(FLAGS_consumers)) {
    return Usage("--consumers does not go with hq groups delete");
  }
  const DeleteGroupOptions o{
      .force = absl::GetFlag(FLAGS_force),
      .keep_dead_letters = absl::GetFlag(FLAGS_keep_dead_letters)};
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  HQ_ASSIGN_OR_RETURN(Queue * q, OpenQueue(db.get(), args[1]));
  const std::string dead = absl::StrCat(q->name(), ".dead.", args[2]);
  HQ_TRY(q->DeleteGroup(args[2], o));
  if (absl::GetFlag(FLAGS_json)) {
    Json j;
    j.BeginObject().Key("deleted").BeginObject();
    j.Key("queue").String(q->name()).Key("group").String(args[2]);
    j.Key("dead_letter_queue").String(dead);
    j.Key("dead_letters_kept").Bool(o.keep_dead_letters);
    j.EndObject().EndObject();
    PrintJson(j);
  } else {
    std::printf(
        "deleted group %s of %s%s\n", args[2].c_str(), q->name().c_str(),
        o.keep_dead_letters
            ? absl::StrCat(" (its dead letters stay in ", dead, ")").c_str()
            : "");
  }
  return kExitOk;
}

}  // namespace

ExitCode Groups(const Args& args) {
  if (IsGroupsDelete(args)) return GroupsDelete(args);
  if (absl::GetFlag(FLAGS_force) || absl::GetFlag(FLAGS_keep_dead_letters)) {
    return Usage(
        "--force and --keep_dead_letters go with hq groups delete QUEUE GROUP");
  }
  if (args.size() > 1) {
    return Usage(
        "too many arguments: hq groups [QUEUE] or hq groups delete QUEUE "
        "GROUP");
  }
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  std::vector<std::string> queues = args;
  if (args.empty()) {
    HQ_ASSIGN_OR_RETURN(queues, db->ListQueues());
  }
  if (absl::GetFlag(FLAGS_consumers)) return GroupConsumers(db.get(), queues);
  std::vector<std::string> header = kGroupHeader;
  header.push_back("CLAIMED/S");
  header.push_back("COMPLETED/S");
  Table t(header);
  Json j;
  j.BeginObject().Key("groups").BeginArray();
  for (const std::string& name : queues) {
    HQ_ASSIGN_OR_RETURN(Queue * q, OpenQueue(db.get(), name));
    HQ_ASSIGN_OR_RETURN(const std::vector<std::string> groups, q->ListGroups());
    for (const std::string& g : groups) {
      HQ_ASSIGN_OR_RETURN(const GroupNow now, InspectGroup(q, g));
      std::vector<std::string> row = GroupRow(name, now.info, now.stats);
      row.push_back(RateCell(now.live, now.live ? now.live->claimed_per_s : 0));
      row.push_back(
          RateCell(now.live, now.live ? now.live->completed_per_s : 0));
      t.Add(row);
      j.BeginObject().Key("queue").String(name);
      GroupJson(j, now.info, now.stats);
      LiveJson(j, now.live);
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

namespace {

// The queue's options and size: a line of text, the JSON "queue" member.
void StatQueue(const QueueInfo& info, const QueueStats& qs, bool json,
               Json& j) {
  const QueueOptions& o = info.options;
  j.Key("queue").BeginObject().Bytes("name", info.name);
  j.Key("partitions").Uint(o.partitions).Key("priorities").Int(o.priorities);
  j.Key("layout").String(LayoutName(o.layout)).Key("ttl_ms");
  TtlJson(j, o.ttl);
  j.Key("max_payload_bytes").Uint(o.max_payload_bytes);
  j.Key("created").String(TimeText(info.created));
  j.Key("approximate_bytes").Uint(qs.approximate_bytes).EndObject();
  if (json) return;
  std::printf(
      "queue %s: %u partitions, %d priorities, %s layout, TTL %s, max "
      "payload %u B, created %s, %s\n\n",
      Cell(info.name).c_str(), o.partitions, o.priorities,
      std::string(LayoutName(o.layout)).c_str(), FormatTtl(o.ttl).c_str(),
      o.max_payload_bytes, TimeText(info.created).c_str(),
      HumanBytes(qs.approximate_bytes).c_str());
}

// A row and a JSON object per partition: first and last id, messages.
void StatPartitions(const QueueStats& qs, bool json, Json& j) {
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
}

// The tables of stat's consumer groups: a row each, their cursors
// summarised per partition (the lowest completion cursor, the highest scan
// cursor), and with --lanes=N the cursors of at most N lanes.
struct GroupTables {
  Table groups{kGroupHeader};
  Table partitions{
      {"GROUP", "PARTITION", "LANES", "MIN_COMPLETION", "MAX_SCAN"}};
  Table cursors{
      {"GROUP", "PARTITION", "PRIORITY", "TOPIC", "SCAN", "COMPLETION"}};
  size_t cursors_left_out = 0;
};

void GroupPartitions(const GroupInfo& gi, GroupTables& out, Json& j) {
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
    out.partitions.Add(
        {Cell(gi.name), std::to_string(partition), std::to_string(sum.lanes),
         sum.min_completion.ToString(), sum.max_scan.ToString()});
    j.BeginObject().Key("partition").Uint(partition);
    j.Key("lanes").Uint(sum.lanes);
    j.Key("min_completion").String(sum.min_completion.ToString());
    j.Key("max_scan").String(sum.max_scan.ToString()).EndObject();
  }
  j.EndArray();
}

void GroupCursors(const GroupInfo& gi, size_t max_lanes, GroupTables& out,
                  Json& j) {
  j.Key("cursors").BeginArray();
  for (size_t i = 0; i < gi.cursors.size(); ++i) {
    const GroupInfo::LaneCursor& c = gi.cursors[i];
    if (i >= max_lanes) {
      ++out.cursors_left_out;
      continue;
    }
    out.cursors.Add({Cell(gi.name), std::to_string(c.partition),
                     std::to_string(c.priority), Cell(c.topic),
                     c.scan.ToString(), c.completion.ToString()});
    j.BeginObject().Key("partition").Uint(c.partition);
    j.Key("priority").Int(c.priority).Bytes("topic", c.topic);
    j.Key("scan").String(c.scan.ToString());
    j.Key("completion").String(c.completion.ToString()).EndObject();
  }
  j.EndArray();
}

void PrintGroupTables(const GroupTables& t) {
  std::printf("\n");
  if (t.groups.empty()) {
    std::printf("no consumer groups\n");
    return;
  }
  PrintTables(t.groups, t.partitions);
  if (!t.cursors.empty()) {
    std::printf("\n");
    t.cursors.Print(stdout);
  }
  if (t.cursors_left_out > 0) {
    std::printf("(%zu more lanes' cursors not listed: --lanes=N)\n",
                t.cursors_left_out);
  }
}

Result<void> StatGroups(Queue* q, size_t max_lanes, bool json, Json& j) {
  const std::string queue = q->info().name;
  GroupTables out;
  j.Key("groups").BeginArray();
  HQ_ASSIGN_OR_RETURN(const std::vector<std::string> groups, q->ListGroups());
  for (const std::string& g : groups) {
    HQ_ASSIGN_OR_RETURN(const GroupNow now, InspectGroup(q, g));
    out.groups.Add(GroupRow(queue, now.info, now.stats));
    j.BeginObject();
    GroupJson(j, now.info, now.stats);
    LiveJson(j, now.live);
    GroupPartitions(now.info, out, j);
    if (max_lanes > 0) GroupCursors(now.info, max_lanes, out, j);
    j.EndObject();
  }
  j.EndArray();
  if (!json) PrintGroupTables(out);
  return {};
}

// The tables of stat's subscriptions: a row each, checkpoints summarised
// per partition (the lowest), and with --lanes=N the checkpoints of at
// most N lanes.
struct SubscriptionTables {
  Table subscriptions{{"SUBSCRIPTION", "LANES", "LAG"}};
  Table partitions{{"SUBSCRIPTION", "PARTITION", "LANES", "MIN_CHECKPOINT"}};
  Table checkpoints{
      {"SUBSCRIPTION", "PARTITION", "PRIORITY", "TOPIC", "CHECKPOINT"}};
  size_t checkpoints_left_out = 0;
};

void SubscriptionPartitions(const std::string& s, const SubscriptionStats& ss,
                            SubscriptionTables& out, Json& j) {
  std::map<uint32_t, std::pair<uint64_t, MessageId>> by_partition;
  for (const LaneCheckpoint& c : ss.lanes) {
    auto [it, added] =
        by_partition.try_emplace(c.partition, 0, MessageId::Max());
    ++it->second.first;
    it->second.second = std::min(it->second.second, c.written);
  }
  j.Key("partitions").BeginArray();
  for (const auto& [partition, sum] : by_partition) {
    out.partitions.Add({Cell(s), std::to_string(partition),
                        std::to_string(sum.first), sum.second.ToString()});
    j.BeginObject().Key("partition").Uint(partition);
    j.Key("lanes").Uint(sum.first);
    j.Key("min_checkpoint").String(sum.second.ToString()).EndObject();
  }
  j.EndArray();
}

void SubscriptionCheckpoints(const std::string& s, const SubscriptionStats& ss,
                             size_t max_lanes, SubscriptionTables& out,
                             Json& j) {
  j.Key("checkpoints").BeginArray();
  for (size_t i = 0; i < ss.lanes.size(); ++i) {
    const LaneCheckpoint& c = ss.lanes[i];
    if (i >= max_lanes) {
      ++out.checkpoints_left_out;
      continue;
    }
    out.checkpoints.Add({Cell(s), std::to_string(c.partition),
                         std::to_string(c.priority), Cell(c.topic),
                         c.written.ToString()});
    j.BeginObject().Key("partition").Uint(c.partition);
    j.Key("priority").Int(c.priority).Bytes("topic", c.topic);
    j.Key("checkpoint").String(c.written.ToString()).EndObject();
  }
  j.EndArray();
}

void PrintSubscriptionTables(const SubscriptionTables& t) {
  std::printf("\n");
  if (t.subscriptions.empty()) {
    std::printf("no subscriptions\n");
    return;
  }
  PrintTables(t.subscriptions, t.partitions);
  if (!t.checkpoints.empty()) {
    std::printf("\n");
    t.checkpoints.Print(stdout);
  }
  if (t.checkpoints_left_out > 0) {
    std::printf("(%zu more lanes' checkpoints not listed: --lanes=N)\n",
                t.checkpoints_left_out);
  }
}

Result<void> StatSubscriptions(Queue* q, size_t max_lanes, bool json, Json& j) {
  SubscriptionTables out;
  j.Key("subscriptions").BeginArray();
  HQ_ASSIGN_OR_RETURN(const std::vector<std::string> subs,
                      q->ListSubscriptions());
  for (const std::string& s : subs) {
    HQ_ASSIGN_OR_RETURN(SubscriptionStats ss, q->InspectSubscription(s));
    // On a live view, the owner's lag (from its checkpoints in memory).
    const LiveSubscriptionStatus* live = LiveSubscription(q->name(), s);
    if (live != nullptr) {
      ss.lag = live->lag;
      ss.lag_exact = live->lag_exact;
    }
    out.subscriptions.Add({Cell(s), std::to_string(ss.lanes.size()),
                           Count(ss.lag, ss.lag_exact)});
    j.BeginObject().Bytes("name", s);
    j.Key("lag").Uint(ss.lag).Key("lag_exact").Bool(ss.lag_exact);
    if (live != nullptr) {
      j.Key("live").BeginObject().Key("delivered").Uint(live->delivered);
      j.Key("failed_attempts").Uint(live->failed_attempts);
      j.Key("buffered").Uint(live->buffered);
      j.Key("listeners").Uint(live->listeners);
      j.Key("resident_lanes").Uint(live->resident_lanes);
      j.Key("active_lanes").Uint(live->active_lanes).EndObject();
    }
    SubscriptionPartitions(s, ss, out, j);
    if (max_lanes > 0) SubscriptionCheckpoints(s, ss, max_lanes, out, j);
    j.EndObject();
  }
  j.EndArray();
  if (!json) PrintSubscriptionTables(out);
  return {};
}

}  // namespace

ExitCode Stat(const Args& args) {
  HQ_TRY(Need(args, 1, "stat QUEUE"));
  const bool json = absl::GetFlag(FLAGS_json);
  // Lanes can be millions (a topic per site): listed only on request.
  const size_t max_lanes = static_cast<size_t>(absl::GetFlag(FLAGS_lanes));
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, OpenDb());
  HQ_ASSIGN_OR_RETURN(Queue * q, OpenQueue(db.get(), args[0]));
  HQ_ASSIGN_OR_RETURN(const QueueStats qs, q->Stats());
  Json j;
  j.BeginObject();
  StatQueue(q->info(), qs, json, j);
  StatPartitions(qs, json, j);
  HQ_TRY(StatGroups(q, max_lanes, json, j));
  HQ_TRY(StatSubscriptions(q, max_lanes, json, j));
  j.EndObject();
  if (json) PrintJson(j);
  return kExitOk;
}

}  // namespace hq::tool
