// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// cluster_server: a FleetCluster (test/fleet/cluster.h) as a program, for
// tests in other languages (python/tests' fleet tests). It starts the
// servers on 127.0.0.1, prints one JSON line on stdout and flushes it:
//
//   {"zookeeper": "127.0.0.1:P,...", "nats": "nats://127.0.0.1:P,...",
//    "dir": "/tmp/..."}
//
// then runs until its stdin reaches EOF (the test closed the pipe, or died)
// or it gets SIGTERM or SIGINT, and stops the cluster: every node is
// SIGKILLed and reaped, the directory removed. The nodes also die with it
// when it is SIGKILLed (PR_SET_PDEATHSIG, cluster.cc).
//
// Exit status: 0 after a stop; 77 with a line "SKIP: <what is missing>" on
// stdout where java, ZooKeeper's jars or nats-server are missing; 1 with
// the error on stderr when the cluster did not start; 2 for bad flags.
//
// Usage: cluster_server [--zookeeper_nodes=1] [--nats_nodes=1]
//                       [--zookeeper_tick_ms=200] [--start_timeout_s=90]

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/time.h"
#include "test/fleet/cluster.h"

ABSL_FLAG(int, zookeeper_nodes, 1, "ZooKeeper servers, 0..9");
ABSL_FLAG(int, nats_nodes, 1, "nats-servers with JetStream, 0..9");
ABSL_FLAG(int, zookeeper_tick_ms, 200, "ZooKeeper's tickTime, 10..10000 ms");
ABSL_FLAG(int, start_timeout_s, 90, "How long to wait for the servers");

namespace {

volatile std::sig_atomic_t g_stop = 0;

void OnSignal(int) { g_stop = 1; }

// s as a JSON string literal.
std::string Json(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Returns when stdin reaches EOF (or fails) or a signal asked to stop.
void WaitForStop() {
  char buf[256];
  while (!g_stop) {
    pollfd p{.fd = 0, .events = POLLIN, .revents = 0};
    const int n = poll(&p, 1, 200);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (n == 0) continue;
    const ssize_t r = read(0, buf, sizeof buf);
    if (r == 0 || (r < 0 && errno != EINTR && errno != EAGAIN)) return;
  }
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  struct sigaction sa = {};
  sa.sa_handler = OnSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  std::string why;
  if (!hq::test::FleetCluster::Available(&why)) {
    std::printf("SKIP: %s\n", why.c_str());
    std::fflush(stdout);
    return 77;
  }
  hq::test::ClusterOptions o;
  o.zookeeper_nodes = absl::GetFlag(FLAGS_zookeeper_nodes);
  o.nats_nodes = absl::GetFlag(FLAGS_nats_nodes);
  o.zookeeper_tick = absl::Milliseconds(absl::GetFlag(FLAGS_zookeeper_tick_ms));
  o.start_timeout = absl::Seconds(absl::GetFlag(FLAGS_start_timeout_s));
  // Started from the main thread, which lives as long as the nodes (see
  // cluster.h, Lifetime).
  auto cluster = hq::test::FleetCluster::Start(o);
  if (!cluster.ok()) {
    std::fprintf(stderr, "cluster_server: %s\n",
                 cluster.status().ToString().c_str());
    return cluster.status().code() == absl::StatusCode::kInvalidArgument ? 2
                                                                         : 1;
  }
  const std::string line =
      "{\"zookeeper\": " + Json((*cluster)->zookeeper_connect()) +
      ", \"nats\": " + Json((*cluster)->nats_urls()) +
      ", \"dir\": " + Json((*cluster)->dir()) + "}\n";
  std::fputs(line.c_str(), stdout);
  std::fflush(stdout);
  WaitForStop();
  cluster->reset();  // Kills and reaps the nodes, removes the directory.
  return 0;
}
