// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq fleet: one crawl frontier run by N agents (processes, on one machine
// or many). A separate library (libhq_fleet, pkg-config hq-fleet), built
// where the ZooKeeper and NATS C clients are installed; hq itself keeps no
// network layer.
//
//   hq::fleet::AgentOptions o;
//   o.agent_id = "crawler-3";
//   o.db_path = "/var/lib/crawl/frontier";
//   o.zookeeper = "zk1:2181,zk2:2181,zk3:2181";
//   o.nats = "nats://n1:4222,nats://n2:4222,nats://n3:4222";
//   auto agent = hq::fleet::Agent::Open(o);       // StatusOr
//   (*agent)->Put({.url = "https://example.org/"});
//   auto tasks = (*agent)->Claim({.max = 16});
//   for (auto& t : *tasks) { Fetch(t); (*agent)->PutBatch(discovered); }
//   (*agent)->Complete(*tasks);
//
// Sites and partitions. A URL's site is its host's registered domain
// (SiteOf; AgentOptions::site_of overrides it). Sites map to a fixed number
// of virtual partitions (AgentOptions::partitions) by a hash of the site
// (PartitionOf). Each partition has at most one owner at a time, recorded
// in ZooKeeper with an epoch that grows at every change of owner. Only the
// owner hands out a partition's URLs, so per-site pacing holds across the
// fleet.
//
// The path of a URL. Put publishes it to its partition's subject on NATS
// JetStream (file storage, replicated), with the URL's dedup key as the
// message id, and returns once JetStream acknowledged it: from then on it
// survives the death of any agent. The owner of the partition stores it in
// its hq Db and only then acknowledges it to JetStream. So a URL discovered
// while fetching a task must be Put before that task is Completed.
//
// Fencing. An agent hands out a partition's tasks only while it holds a
// lease on its ownership: renewed by reading the assignment from ZooKeeper
// (after a sync) every ownership_lease / 3, and valid for ownership_lease
// after the send time of the last read that showed it the owner. A new
// owner starts handing out a moved partition only ownership_lease (and the
// pacing interval) after it first saw the move. An agent paused past its
// session (SIGSTOP, a long GC, a partitioned network) therefore never hands
// out a URL of a partition it has lost, whatever its threads believed. Each
// Task says until when its fetch may start (FleetTask::valid_until).
//
// Failures (doc/fleet.md has the full table):
//   - an agent killed and restarted within `grace` resumes from its own
//     Db; its tasks in flight are delivered again;
//   - an agent gone past `grace` loses its partitions to live agents, which
//     rebuild them from the partition's stream less the URLs published as
//     completed;
//   - ZooKeeper unreachable: agents stop handing out work when their leases
//     run out, and lose nothing.

#ifndef HQ_FLEET_H_
#define HQ_FLEET_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hq/export.h"
#include "hq/group.h"

namespace hq::fleet {

// The registered domain of a URL's host, lower-cased: the last two labels
// ("www.example.org" -> "example.org"), or three under a common two-level
// public suffix ("a.b.co.uk" -> "b.co.uk"); an IP address or a one-label
// host is its own site. InvalidArgument for a URL without a host.
HQ_EXPORT absl::StatusOr<std::string> SiteOf(std::string_view url);

// The virtual partition of a site: XXH3_64bits of the site, modulo
// `partitions`. REQUIRES: partitions > 0.
HQ_EXPORT uint32_t PartitionOf(std::string_view site, uint32_t partitions);

struct AgentOptions {
  // Unique in the fleet, 1..64 of [A-Za-z0-9_.-]. An agent that restarts
  // keeps its id (and its Db) to keep its partitions.
  std::string agent_id;

  // The fleet's name, 1..64 of [A-Za-z0-9_-]: the ZooKeeper root
  // /hq-fleet/<fleet> and the JetStream stream HQF_<fleet>.
  std::string fleet = "default";

  // The agent's own hq Db (created if missing). One agent per Db.
  std::string db_path;

  // ZooKeeper's connect string ("host:port,host:port") and NATS server
  // URLs ("nats://host:port,nats://host:port").
  std::string zookeeper;
  std::string nats;

  // Virtual partitions, fixed for the life of the fleet: the first agent
  // records it and later agents with another value fail with
  // FailedPrecondition. 1..65536.
  uint32_t partitions = 1024;

  // ZooKeeper session timeout (the server bounds it by its tickTime).
  absl::Duration session_timeout = absl::Seconds(10);

  // How long the partitions of an agent whose session ended stay its own,
  // so that a restart resumes from its Db instead of a rebuild elsewhere.
  absl::Duration grace = absl::Seconds(30);

  // The ownership lease (above). Must be below session_timeout.
  absl::Duration ownership_lease = absl::Seconds(5);

  // JetStream: the stream's replicas (1 for a single server) and the
  // window in which it drops a second message with the same id.
  int replicas = 3;
  absl::Duration duplicate_window = absl::Minutes(2);

  // Per-site pacing (hq/group.h) applied by each partition's owner.
  TopicPacing pacing;

  // Task lease and delivery attempts, as GroupOptions.
  absl::Duration task_lease = absl::Seconds(30);
  uint32_t max_attempts = 10;

  // Override of SiteOf (for instance, one site per host). Must be the same
  // function in every agent of the fleet.
  std::function<absl::StatusOr<std::string>(std::string_view url)> site_of;
};

// A URL to crawl.
struct Url {
  std::string url;
  std::string payload;  // Carried to the task as is (depth, referrer...).
  int priority = 0;     // As Message::priority: 0..7, higher first.
};

// A claimed URL.
struct FleetTask {
  Task task;               // task.key is the URL, task.topic its site.
  uint32_t partition = 0;  // The virtual partition.
  uint64_t epoch = 0;      // The ownership epoch it was claimed under.
  // Start the fetch before this time or not at all (Release the task):
  // after it the partition may have moved.
  absl::Time valid_until;
};

struct AgentStats {
  struct Partition {
    uint32_t partition = 0;
    uint64_t epoch = 0;
    bool serving = false;  // Lease valid and takeover delay over.
    uint64_t backlog = 0;  // As GroupStats::backlog.
    uint64_t in_flight = 0;
    uint64_t handoff_lag = 0;  // Messages in its stream not yet stored.
  };
  std::vector<Partition> owned;
  uint64_t published = 0;   // URLs published by this agent.
  uint64_t received = 0;    // URLs stored from the streams.
  uint64_t duplicates = 0;  // Of those, dropped as already stored.
  uint64_t completions_published = 0;
  bool coordinator = false;
};

// Thread safety: every method may be called from several threads at once;
// the destructor REQUIRES that no call is in progress.
class HQ_EXPORT Agent {
 public:
  // Joins the fleet: opens the Db, ZooKeeper's session and member node,
  // the NATS connection and stream. Waits up to two session timeouts for
  // the member node of this id's previous process (killed, its session not
  // yet expired) to go.
  // Errors: InvalidArgument (options), AlreadyExists (another live agent
  // holds this id), FailedPrecondition (partition count differs from the
  // fleet's), Unavailable (ZooKeeper or NATS unreachable), and Db::Open's.
  static absl::StatusOr<std::unique_ptr<Agent>> Open(
      const AgentOptions& options);

  Agent() = default;
  // Closes the agent: completions not yet published are published (if
  // NATS answers), the ZooKeeper session ends, and the partitions stay this
  // agent's for `grace`, so that a restart with the same id and Db resumes
  // them. Call Leave first to hand them over at once.
  virtual ~Agent() = default;
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  // Routes each URL to its partition's stream and returns once JetStream
  // acknowledged every one. The URL's dedup key is its text: a URL Put
  // twice is stored once. InvalidArgument for a URL without a site,
  // Unavailable when NATS does not acknowledge (then some may have been
  // published: Put again, duplicates are dropped).
  virtual absl::Status Put(const Url& url) = 0;
  virtual absl::Status PutBatch(std::span<const Url> urls) = 0;

  // Claims up to options.max tasks of the partitions this agent serves,
  // with group.h's semantics (leases, pacing, redelivery). ClaimOptions'
  // topics and partitions are not supported (InvalidArgument).
  virtual absl::StatusOr<std::vector<FleetTask>> Claim(
      const ClaimOptions& options) = 0;

  // As ConsumerGroup's. Complete also publishes the URLs as completed, so
  // that a rebuild elsewhere does not hand them out again. A task whose
  // partition has moved is published as completed and otherwise ignored.
  virtual absl::Status Complete(std::span<const FleetTask> tasks) = 0;
  virtual absl::Status Release(const FleetTask& task,
                               absl::Duration retry_after) = 0;
  virtual absl::Status Reject(const FleetTask& task) = 0;
  virtual absl::Status Extend(FleetTask* task, absl::Duration lease) = 0;

  virtual absl::StatusOr<AgentStats> Stats() = 0;

  // Leaves the fleet at once: publishes the completions not yet published
  // and marks this agent as gone, so its partitions move without the grace
  // period. Later calls fail with FailedPrecondition; the Db stays open
  // until the Agent is destroyed.
  virtual absl::Status Leave() = 0;
};

// ---------------------------------------------------------------- status

// What ReadFleetStatus reads.
struct FleetStatusOptions {
  // ZooKeeper's connect string ("host:port,host:port"), as the agents'.
  // Required.
  std::string zookeeper;

  // The fleet's name, as AgentOptions::fleet.
  std::string fleet = "default";

  // NATS server URLs, as AgentOptions::nats. Empty (the default): the
  // hand-off figures (FleetStatus::handoff) are not read.
  std::string nats;

  // The longest wait for each service (ZooKeeper, then NATS) to connect,
  // and for each of its requests. More than 0.
  absl::Duration timeout = absl::Seconds(10);
};

// A fleet's state as ZooKeeper (and NATS, if asked) showed it: each node
// and the stream read once, in turn, not one atomic snapshot.
struct FleetStatus {
  struct Member {
    std::string agent_id;
    // A process of this agent holds a ZooKeeper session (its member node
    // exists). An agent that is not live but still owns partitions is in
    // its grace period, or gone and not yet noticed by the coordinator.
    bool live = false;
    bool left = false;         // It called Agent::Leave (left/<id> exists).
    bool coordinator = false;  // It writes the assignment.
    // What the live process wrote in its member node: its process id and
    // host name (0 and "" when not live, or not written).
    int64_t pid = 0;
    std::string host;
    uint32_t partitions = 0;  // Partitions it owns in the assignment.
  };
  struct Partition {
    std::string owner;  // The agent id; empty when no agent owns it.
    uint64_t epoch = 0;
    // With NATS: the messages of its stream subject hqf.<fleet>.u.<p> not
    // yet acknowledged by the consumer of the current owner at `epoch`
    // (every message of it while that consumer does not exist: the owner
    // has not opened it yet, or no agent owns the partition). 0 without
    // NATS.
    uint64_t lag = 0;
  };

  std::string fleet;
  uint32_t partitions = 0;  // The fleet's partition count.
  // Every live agent, every agent that owns a partition, every agent that
  // left and still owns one; ordered by agent id.
  std::vector<Member> members;
  // by_partition[p]: partition p's owner, epoch and lag; partitions entries.
  std::vector<Partition> by_partition;
  uint32_t unowned = 0;     // Partitions with no owner.
  std::string coordinator;  // Its agent id; empty while none is elected.

  // The hand-off (FleetStatusOptions::nats given): whether it was read, the
  // sum of the partitions' lag, and the stream HQF_<fleet>'s messages (URLs
  // and completion batches, kept forever) and bytes.
  bool handoff = false;
  uint64_t lag = 0;
  uint64_t stream_messages = 0;
  uint64_t stream_bytes = 0;
};

// Reads a fleet's state; it writes nothing, to ZooKeeper or to NATS.
// Errors: InvalidArgument (options: no zookeeper, a fleet name that is not
// 1..64 of [A-Za-z0-9_-], a nats list with no URL, timeout not above 0),
// NotFound (no fleet of that name: no /hq-fleet/<fleet>/config node, or
// with nats no stream HQF_<fleet>), Unavailable (ZooKeeper or NATS did not
// answer within the timeout), DataLoss (the config or assignment node
// holds a record that does not parse, or the assignment's partition count
// is not the fleet's).
HQ_EXPORT absl::StatusOr<FleetStatus> ReadFleetStatus(
    const FleetStatusOptions& options);

}  // namespace hq::fleet

#endif  // HQ_FLEET_H_
