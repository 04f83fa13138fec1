// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// FleetCluster: the fleet tests' ZooKeeper ensemble and NATS JetStream
// cluster, real servers started as child processes on 127.0.0.1.
//
//   std::string why;
//   if (!FleetCluster::Available(&why)) { ...skip, saying why... }
//   auto cluster = FleetCluster::Start({});         // StatusOr
//   options.zookeeper = (*cluster)->zookeeper_connect();
//   options.nats = (*cluster)->nats_urls();
//   (*cluster)->KillZooKeeper(0);                   // SIGKILL, reaped
//   (*cluster)->StartZooKeeper(0);                  // same ports and data
//
// Every server listens on 127.0.0.1 only (client, quorum, election, route
// ports; ZooKeeper's admin server and NATS's monitoring port are off), on
// ports found free by binding port 0, and keeps its files in a fresh
// temporary directory under $TMPDIR (default /tmp), removed with the
// fixture. A node's output goes to its log file there; errors about a node
// name it and end with the tail of its log. ZooKeeper does not fsync
// (forceSync=no): a SIGKILLed node loses nothing the kernel holds, which is
// all a test kills.
//
// ZooKeeper runs as `java ... QuorumPeerMain zoo.cfg` (Debian's zookeeper
// package: its jars and the JRE it pulls in), NATS as `nats-server -c
// nats.conf` (Debian's nats-server 2.9). Either may be left out
// (ClusterOptions).
//
// Lifetime: the destructor SIGKILLs and reaps every node and removes the
// directory. A node also dies when the test process does (SIGKILL
// included): each child asks the kernel (PR_SET_PDEATHSIG) for SIGKILL when
// the thread that started it ends, so call Start and the Start* methods
// from a thread that outlives the nodes (a test's main thread). A
// SIGKILLed test process leaves its temporary directory behind.
//
// Thread safety: none; one thread uses a FleetCluster.

#ifndef HQ_TEST_FLEET_CLUSTER_H_
#define HQ_TEST_FLEET_CLUSTER_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace hq::test {

struct ClusterOptions {
  // ZooKeeper servers: 0 (none), 1 (standalone) to 9 (an ensemble; 3 keeps
  // a quorum with one node down).
  int zookeeper_nodes = 3;

  // nats-servers with JetStream: 0 (none), 1 (no cluster) to 9 (a cluster:
  // a stream of replicas = nats_nodes is created to check it).
  int nats_nodes = 3;

  // ZooKeeper's tickTime, 10 ms to 10 s. Sessions may last from 2 ticks
  // (minSessionTimeout) to 60 s; a follower has 100 ticks to join the
  // leader (initLimit) and 50 to keep up (syncLimit).
  absl::Duration zookeeper_tick = absl::Milliseconds(200);

  // How long Start, StartZooKeeper and StartNats wait for the nodes to
  // serve (more than 0): JVMs start slowly on a loaded machine.
  absl::Duration start_timeout = absl::Seconds(90);

  // The maximum heap of each ZooKeeper JVM (java -Xmx), in MiB, 16 to
  // 4096.
  int zookeeper_heap_mb = 96;
};

class FleetCluster {
 public:
  // True if java and nats-server are installed (on PATH, or in /usr/sbin
  // where Debian puts nats-server) and ZooKeeper's jars are where Debian's
  // zookeeper package puts them (/usr/share/java); else false, and *why
  // (if not null) says what is missing and which Debian package has it.
  // Checks files only: quick, and it starts nothing.
  static bool Available(std::string* why);

  // Starts the nodes and waits, up to options.start_timeout in all, until
  // every ZooKeeper node serves a client session on its own (so the
  // ensemble has a leader) and a write commits, and every nats-server
  // answers a JetStream request on its own (so JetStream has a meta
  // leader) and the cluster accepts a stream of replicas = nats_nodes and a
  // message published to it (the stream is then deleted).
  // Errors: InvalidArgument (options out of range), FailedPrecondition
  // (Available() is false), DeadlineExceeded (a node did not become ready:
  // the message names it and ends with its log's tail), Internal (a node
  // exited, same message, or the system refused a port, directory or
  // process). On error every node started is killed.
  static absl::StatusOr<std::unique_ptr<FleetCluster>> Start(
      const ClusterOptions& options);

  // SIGKILLs and reaps every node; removes the directory.
  ~FleetCluster();
  FleetCluster(const FleetCluster&) = delete;
  FleetCluster& operator=(const FleetCluster&) = delete;

  // ZooKeeper's connect string, every node: "127.0.0.1:P1,127.0.0.1:P2,...";
  // one node's: "127.0.0.1:P". Empty without ZooKeeper (or no node i).
  std::string zookeeper_connect() const;
  std::string zookeeper_connect(int i) const;

  // NATS URLs, every node: "nats://127.0.0.1:P1,nats://127.0.0.1:P2,...";
  // one node's: "nats://127.0.0.1:P". Empty without NATS (or no node i).
  // nats.c takes a list through natsOptions_SetServers, not in one URL
  // (lib/fleet/clients.h: SetNatsServers).
  std::string nats_urls() const;
  std::string nats_url(int i) const;

  // The server_name of nats-server i ("hq-nats-<i>"), as JetStream's
  // cluster information (a stream's leader and replicas) names it, and
  // back: the node of a server_name, -1 for a name no node has.
  static std::string nats_server_name(int i);
  int nats_index(const std::string& server_name) const;

  // SIGKILLs ZooKeeper node i (0-based) and reaps it. InvalidArgument for
  // no such node, FailedPrecondition if it is not running.
  absl::Status KillZooKeeper(int i);

  // Starts ZooKeeper node i again, on its ports and with its data, and
  // waits up to start_timeout until it serves a client session on its own
  // (it has joined a leader: with a quorum of the others running, it
  // does). Errors as Start's; FailedPrecondition if it is running.
  absl::Status StartZooKeeper(int i);

  // Starts every ZooKeeper node not running, all at once (a quorum may
  // need several: after all were killed, one alone never serves), and
  // waits up to start_timeout until each serves. Errors as StartZooKeeper.
  absl::Status StartStoppedZooKeeper();

  // The ZooKeeper node that is the leader now (Mode: leader, or standalone,
  // in its `srvr` answer); Unavailable while no running node says so (an
  // election).
  absl::StatusOr<int> ZooKeeperLeader() const;

  // As KillZooKeeper and StartZooKeeper, for nats-server i: it restarts on
  // its ports with its JetStream store, and StartNats waits until it
  // answers a JetStream request on its own (it has routes to a cluster with
  // a meta leader).
  absl::Status KillNats(int i);
  absl::Status StartNats(int i);

  // Whether node i runs (started and not killed; a node that exited on its
  // own is reaped here and reported as not running).
  bool zookeeper_running(int i);
  bool nats_running(int i);

  // The temporary directory holding every node's files and logs.
  const std::string& dir() const { return dir_; }

  // The tail of node i's log (at most `bytes`).
  std::string zookeeper_log(int i, size_t bytes = 4096) const;
  std::string nats_log(int i, size_t bytes = 4096) const;

 private:
  struct Node {
    std::string name;  // "zookeeper node 1", for messages.
    std::string dir;
    std::string log_path;
    std::vector<std::string> argv;
    int client_port = 0;
    int peer_port = 0;      // ZooKeeper quorum; NATS cluster routes.
    int election_port = 0;  // ZooKeeper only.
    pid_t pid = -1;
  };

  explicit FleetCluster(const ClusterOptions& options) : options_(options) {}

  absl::Status Prepare();
  absl::Status WriteZooKeeperConfig(int i);
  absl::Status WriteNatsConfig(int i);
  absl::Status Spawn(Node* node);
  absl::Status Kill(Node* node);
  bool Running(Node* node);
  absl::Status NodeError(absl::StatusCode code, const Node& node,
                         const std::string& what) const;
  absl::Status WaitZooKeeperServes(int i, absl::Time deadline);
  absl::Status WaitZooKeeperWrites(absl::Time deadline);
  absl::Status WaitNatsServes(int i, absl::Time deadline);
  absl::Status WaitNatsStream(absl::Time deadline);
  absl::Status CheckIndex(const std::vector<Node>& nodes, int i,
                          const char* what) const;

  ClusterOptions options_;
  std::string dir_;
  std::string java_;
  std::string nats_server_;
  std::vector<Node> zookeeper_;
  std::vector<Node> nats_;
};

// The one cluster of a test program: the first call starts it with
// `options` (call it from the main thread, see Lifetime) and it is stopped
// at exit; later calls return it, whatever their options. When it could
// not start, every call returns null and sets *status (if not null).
FleetCluster* SharedCluster(const ClusterOptions& options,
                            absl::Status* status);

}  // namespace hq::test

#endif  // HQ_TEST_FLEET_CLUSTER_H_
