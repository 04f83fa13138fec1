// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// ReadFleetStatus (hq/fleet.h): a fleet's state read from the nodes
// lib/fleet/ownership.h lays out under /hq-fleet/<fleet> (decoded with
// lib/fleet/assignment.h) and, with NATS, from the stream
// (Handoff::ReadState). Reads only: no node, stream or consumer is made.

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "hq/fleet.h"
#include "lib/fleet/assignment.h"
#include "lib/fleet/clients.h"
#include "lib/fleet/handoff.h"
#include "lib/fleet/zk.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq::fleet {
namespace {

absl::Status CheckOptions(const FleetStatusOptions& o) {
  if (o.zookeeper.empty()) {
    return absl::InvalidArgumentError(
        "fleet status: no ZooKeeper connect string");
  }
  if (!ValidFleetName(o.fleet)) {
    return absl::InvalidArgumentError(
        absl::StrCat("fleet status: fleet \"", o.fleet,
                     "\" is not a fleet name (1..64 of [A-Za-z0-9_-])"));
  }
  if (!o.nats.empty() && SplitNatsUrls(o.nats).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fleet status: no NATS URL in \"", o.nats, "\""));
  }
  if (o.timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "fleet status: the timeout must be above 0");
  }
  return absl::OkStatus();
}

// The partition count of the config node ("partitions=N\n").
absl::StatusOr<uint32_t> ParseConfig(std::string_view data,
                                     const std::string& path) {
  uint32_t n = 0;
  if (!data.starts_with("partitions=") || !data.ends_with("\n") ||
      !absl::SimpleAtoi(Av(data.substr(11, data.size() - 12)), &n) || n < 1 ||
      n > 65536) {
    return absl::DataLossError(absl::StrCat("fleet status: ", path, " holds \"",
                                            Av(data.substr(0, 40)),
                                            "\", not partitions=N"));
  }
  return n;
}

// A member node's "pid=<pid>\nhost=<name>\n"; other lines are ignored.
void ParseMember(std::string_view data, FleetStatus::Member* m) {
  for (absl::string_view line : absl::StrSplit(Av(data), '\n')) {
    if (absl::StartsWith(line, "pid=")) {
      int64_t pid = 0;
      if (absl::SimpleAtoi(line.substr(4), &pid)) m->pid = pid;
    } else if (absl::StartsWith(line, "host=")) {
      m->host = std::string(line.substr(5));
    }
  }
}

// The children of `path`; none if it does not exist.
absl::StatusOr<std::vector<std::string>> ChildrenOf(ZkSession& zk,
                                                    const std::string& path) {
  absl::StatusOr<std::vector<std::string>> c = zk.Children(path, false);
  if (absl::IsNotFound(c.status())) return std::vector<std::string>{};
  return c;
}

// What ZooKeeper holds of the fleet: everything but the hand-off.
absl::StatusOr<FleetStatus> ReadOwnership(const FleetStatusOptions& o) {
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<ZkSession> zk,
                      ZkSession::Connect(o.zookeeper, o.timeout, o.timeout,
                                         ZkSession::EventFn()));
  const std::string root = absl::StrCat("/hq-fleet/", o.fleet);
  FleetStatus st;
  st.fleet = o.fleet;

  const std::string config_path = root + "/config";
  absl::StatusOr<ZkNode> config = zk->Get(config_path, false);
  if (absl::IsNotFound(config.status())) {
    return absl::NotFoundError(
        absl::StrCat("fleet status: no fleet \"", o.fleet, "\" on ZooKeeper ",
                     o.zookeeper, " (no ", config_path, ")"));
  }
  HQ_RETURN_IF_ERROR(config.status());
  HQ_ASSIGN_OR_RETURN(st.partitions, ParseConfig(config->data, config_path));

  // The first agent writes the assignment just after the config.
  Assignment a = EmptyAssignment(st.partitions);
  const std::string assignment_path = root + "/assignment";
  absl::StatusOr<ZkNode> node = zk->Get(assignment_path, false);
  if (node.ok()) {
    absl::StatusOr<Assignment> decoded = DecodeAssignment(node->data);
    if (!decoded.ok()) {
      return absl::DataLossError(absl::StrCat(
          "fleet status: ", assignment_path, ": ", decoded.status().message()));
    }
    a = *std::move(decoded);
    if (a.partitions() != st.partitions) {
      return absl::DataLossError(absl::StrCat(
          "fleet status: ", assignment_path, " has ", a.partitions(),
          " partitions, ", config_path, " says ", st.partitions));
    }
  } else if (!absl::IsNotFound(node.status())) {
    return node.status();
  }

  // Every agent named anywhere, by id.
  std::map<std::string, FleetStatus::Member> members;
  auto member = [&](const std::string& id) -> FleetStatus::Member& {
    FleetStatus::Member& m = members[id];
    m.agent_id = id;
    return m;
  };
  st.by_partition.resize(st.partitions);
  for (uint32_t p = 0; p < st.partitions; ++p) {
    st.by_partition[p].owner = a.owners[p];
    st.by_partition[p].epoch = a.epochs[p];
    if (a.owners[p].empty()) {
      ++st.unowned;
    } else {
      ++member(a.owners[p]).partitions;
    }
  }
  HQ_ASSIGN_OR_RETURN(std::vector<std::string> live,
                      ChildrenOf(*zk, root + "/members"));
  for (const std::string& id : live) {
    absl::StatusOr<ZkNode> m = zk->Get(root + "/members/" + id, false);
    if (absl::IsNotFound(m.status())) continue;  // Gone since the listing.
    HQ_RETURN_IF_ERROR(m.status());
    FleetStatus::Member& x = member(id);
    x.live = true;
    ParseMember(m->data, &x);
  }
  HQ_ASSIGN_OR_RETURN(std::vector<std::string> left,
                      ChildrenOf(*zk, root + "/left"));
  for (const std::string& id : left) member(id).left = true;

  // The coordinator: the agent of the lowest election node still there.
  HQ_ASSIGN_OR_RETURN(std::vector<std::string> election,
                      ChildrenOf(*zk, root + "/election"));
  std::sort(election.begin(), election.end());
  for (const std::string& e : election) {
    absl::StatusOr<ZkNode> n = zk->Get(root + "/election/" + e, false);
    if (absl::IsNotFound(n.status())) continue;
    HQ_RETURN_IF_ERROR(n.status());
    st.coordinator = n->data;
    member(n->data).coordinator = true;
    break;
  }
  for (auto& [id, m] : members) st.members.push_back(std::move(m));
  return st;
}

}  // namespace

absl::StatusOr<FleetStatus> ReadFleetStatus(const FleetStatusOptions& options) {
  HQ_RETURN_IF_ERROR(CheckOptions(options));
  HQ_ASSIGN_OR_RETURN(FleetStatus st, ReadOwnership(options));
  if (options.nats.empty()) return st;

  HandoffOptions h;
  h.urls = SplitNatsUrls(options.nats);
  h.fleet = options.fleet;
  h.partitions = st.partitions;
  h.connect_timeout = options.timeout;
  h.request_timeout = options.timeout;
  h.create_stream = false;
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Handoff> handoff, Handoff::Connect(h));
  std::vector<uint64_t> epochs;
  epochs.reserve(st.partitions);
  for (const FleetStatus::Partition& p : st.by_partition) {
    epochs.push_back(p.epoch);
  }
  HQ_ASSIGN_OR_RETURN(StreamState state, handoff->ReadState(epochs));
  st.handoff = true;
  st.stream_messages = state.messages;
  st.stream_bytes = state.bytes;
  for (uint32_t p = 0; p < st.partitions; ++p) {
    st.by_partition[p].lag = state.lag[p];
    st.lag += state.lag[p];
  }
  return st;
}

}  // namespace hq::fleet
