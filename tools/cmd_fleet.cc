// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq fleet status: a fleet's state (hq/fleet.h, ReadFleetStatus) as text
// or one JSON document. Built only with the fleet library (-Dfleet);
// tools/cmd_fleet_off.cc stands in for it otherwise.

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "hq/fleet.h"
#include "tools/command.h"
#include "tools/flags.h"

namespace hq::tool {
namespace {

using fleet::FleetStatus;

// --partitions: "all", or a comma-separated list of partitions below
// `count`; empty: none.
Result<std::vector<uint32_t>> ListedPartitions(const std::string& text,
                                               uint32_t count) {
  std::vector<uint32_t> out;
  if (text.empty()) return out;
  if (text == "all") {
    for (uint32_t p = 0; p < count; ++p) out.push_back(p);
    return out;
  }
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    uint32_t p;
    if (!absl::SimpleAtoi(part, &p)) {
      return Usage(absl::StrCat("--partitions: '", Sv(part),
                                "' is not a partition number (or all)"));
    }
    if (p >= count) {
      return Usage(absl::StrCat("--partitions: the fleet has partitions 0..",
                                count - 1, ", not ", p));
    }
    out.push_back(p);
  }
  return out;
}

// The whole status, every partition included.
void PrintStatusJson(const FleetStatus& s) {
  Json j;
  j.BeginObject().Key("fleet").String(s.fleet);
  j.Key("partitions").Uint(s.partitions);
  j.Key("coordinator");
  s.coordinator.empty() ? j.Null() : j.String(s.coordinator);
  j.Key("unowned").Uint(s.unowned);
  j.Key("members").BeginArray();
  for (const FleetStatus::Member& m : s.members) {
    j.BeginObject().Key("agent_id").String(m.agent_id);
    j.Key("live").Bool(m.live).Key("left").Bool(m.left);
    j.Key("coordinator").Bool(m.coordinator);
    j.Key("pid").Int(m.pid).Bytes("host", m.host);
    j.Key("partitions").Uint(m.partitions);
    j.EndObject();
  }
  j.EndArray().Key("by_partition").BeginArray();
  for (uint32_t p = 0; p < s.by_partition.size(); ++p) {
    const FleetStatus::Partition& x = s.by_partition[p];
    j.BeginObject().Key("partition").Uint(p).Key("owner");
    x.owner.empty() ? j.Null() : j.String(x.owner);
    j.Key("epoch").Uint(x.epoch).Key("lag");
    s.handoff ? j.Uint(x.lag) : j.Null();
    j.EndObject();
  }
  j.EndArray().Key("handoff");
  if (s.handoff) {
    j.BeginObject().Key("lag").Uint(s.lag);
    j.Key("stream_messages").Uint(s.stream_messages);
    j.Key("stream_bytes").Uint(s.stream_bytes);
    j.EndObject();
  } else {
    j.Null();
  }
  j.EndObject();
  PrintJson(j);
}

const char* State(const FleetStatus::Member& m) {
  if (m.live) return "live";
  return m.left ? "left" : "gone";
}

void PrintStatusText(const FleetStatus& s,
                     const std::vector<uint32_t>& listed) {
  std::printf("fleet: %s\n", s.fleet.c_str());
  std::printf("partitions: %u\n", s.partitions);
  std::printf("unowned: %u\n", s.unowned);
  std::printf("coordinator: %s\n",
              s.coordinator.empty() ? "-" : s.coordinator.c_str());
  if (s.handoff) {
    std::printf("lag: %llu\n", static_cast<unsigned long long>(s.lag));
    std::printf("stream: %llu messages, %s\n",
                static_cast<unsigned long long>(s.stream_messages),
                HumanBytes(s.stream_bytes).c_str());
  }
  std::printf("\n");
  Table members({"AGENT", "STATE", "PARTITIONS", "COORDINATOR", "PID", "HOST"});
  for (const FleetStatus::Member& m : s.members) {
    members.Add({m.agent_id, State(m), std::to_string(m.partitions),
                 m.coordinator ? "*" : "",
                 m.pid == 0 ? "-" : std::to_string(m.pid),
                 m.host.empty() ? "-" : Cell(m.host)});
  }
  if (members.empty()) {
    std::printf("no members\n");
  } else {
    members.Print(stdout);
  }
  if (listed.empty()) return;
  std::printf("\n");
  Table parts({"PARTITION", "OWNER", "EPOCH", "LAG"});
  for (uint32_t p : listed) {
    const FleetStatus::Partition& x = s.by_partition[p];
    parts.Add({std::to_string(p), x.owner.empty() ? "-" : x.owner,
               std::to_string(x.epoch),
               s.handoff ? std::to_string(x.lag) : "-"});
  }
  parts.Print(stdout);
}

}  // namespace

ExitCode Fleet(const Args& args) {
  if (args.empty() || args[0] != "status") {
    return Usage(args.empty() ? "missing arguments: hq fleet status"
                              : absl::StrCat("unknown fleet subcommand '",
                                             args[0], "': hq fleet status"));
  }
  if (args.size() > 1) {
    return Usage("too many arguments: hq fleet status takes none");
  }
  fleet::FleetStatusOptions o;
  o.zookeeper = absl::GetFlag(FLAGS_zookeeper);
  o.fleet = absl::GetFlag(FLAGS_fleet);
  o.nats = absl::GetFlag(FLAGS_nats);
  o.timeout = absl::GetFlag(FLAGS_timeout);
  if (o.zookeeper.empty()) {
    return Usage("hq fleet status needs --zookeeper=HOST:PORT,...");
  }
  // The list's syntax is checked before anything is read, its range after.
  HQ_TRY(ListedPartitions(absl::GetFlag(FLAGS_partitions), 65536));
  absl::StatusOr<FleetStatus> s = fleet::ReadFleetStatus(o);
  // Options ReadFleetStatus refuses came from the command line.
  if (absl::IsInvalidArgument(s.status())) {
    return Usage(std::string(s.status().message()));
  }
  HQ_TRY(s.status());
  HQ_ASSIGN_OR_RETURN(
      const std::vector<uint32_t> listed,
      ListedPartitions(absl::GetFlag(FLAGS_partitions), s->partitions));
  if (absl::GetFlag(FLAGS_json)) {
    PrintStatusJson(*s);
  } else {
    PrintStatusText(*s, listed);
  }
  return kExitOk;
}

}  // namespace hq::tool
