// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// fleet_handoff_bench: the cost of handing URLs over through NATS JetStream
// (lib/fleet/handoff.h), in the shape of db_bench. Built with the fleet
// (-Dfleet) only. Without --nats it starts a 3-node JetStream cluster on
// 127.0.0.1 with the tests' fixture (test/fleet/cluster.h; needs
// nats-server) and stops it at the end.
//
// Workloads, run in the order given by --benchmarks; each prints one line:
//
//   publish_B   Handoff::Publish of --num URLs (~60-byte URLs, --value_size
//               bytes of payload) in calls of B URLs each (B from
//               --batches), spread over --partitions partitions, into a
//               fresh stream of --replicas replicas. A call returns once
//               JetStream acknowledged every URL of it. Line: URLs/s and
//               micros per URL.
//   latency     From publish to fetchable: --latency_batches calls of
//               Publish of --latency_batch URLs each to one partition,
//               --latency_gap apart, while another thread Fetches that
//               partition's feed (and acks). Per URL: the time from the
//               start of the Publish call that carried it to the return of
//               the Fetch that delivered it. Line: p50, p99 and max.
//
//   ninja -C BUILD bench/fleet_handoff_bench
//   BUILD/bench/fleet_handoff_bench --benchmarks=publish_100,latency

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "lib/fleet/handoff.h"
#include "test/fleet/cluster.h"

ABSL_FLAG(std::string, benchmarks, "publish_100,publish_1000,latency",
          "Comma-separated workloads: publish_<batch>, latency.");
ABSL_FLAG(std::string, nats, "",
          "NATS URLs (nats://host:port,...); empty: start a local cluster.");
ABSL_FLAG(int32_t, nats_nodes, 3, "Nodes of the local cluster.");
ABSL_FLAG(int32_t, replicas, 3, "Replicas of the stream.");
ABSL_FLAG(int64_t, num, 20000, "URLs per publish workload.");
ABSL_FLAG(int32_t, value_size, 16, "Payload bytes per URL.");
ABSL_FLAG(int32_t, partitions, 64, "Partitions the URLs are spread over.");
ABSL_FLAG(int32_t, latency_batch, 100, "URLs per Publish in `latency`.");
ABSL_FLAG(int32_t, latency_batches, 100, "Publish calls in `latency`.");
ABSL_FLAG(absl::Duration, latency_gap, absl::Milliseconds(20),
          "Pause between the Publish calls of `latency`.");

namespace hq::fleet {
namespace {

int run_id = 0;

// A fresh fleet (so a fresh stream) per workload.
std::unique_ptr<Handoff> Open(const std::vector<std::string>& urls) {
  HandoffOptions o;
  o.urls = urls;
  o.fleet = absl::StrCat("bench", getpid(), "_", run_id++);
  o.partitions = static_cast<uint32_t>(absl::GetFlag(FLAGS_partitions));
  o.replicas = absl::GetFlag(FLAGS_replicas);
  o.connect_timeout = absl::Seconds(60);
  auto h = Handoff::Connect(o);
  if (!h.ok()) {
    std::fprintf(stderr, "connect: %s\n", h.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(*h);
}

struct Batch {
  std::vector<std::string> urls;
  std::string payload;
  std::vector<Outgoing> out;
};

Batch MakeBatch(int64_t first, int64_t n, uint32_t partition_or_all) {
  Batch b;
  b.payload.assign(absl::GetFlag(FLAGS_value_size), 'p');
  const uint32_t partitions = absl::GetFlag(FLAGS_partitions);
  for (int64_t i = first; i < first + n; ++i) {
    b.urls.push_back(absl::StrCat("https://www.site", i % 10007,
                                  ".example.org/section/page-", i, ".html"));
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t p = partition_or_all != UINT32_MAX
                           ? partition_or_all
                           : static_cast<uint32_t>((first + i) % partitions);
    b.out.push_back({.partition = p,
                     .url = b.urls[i],
                     .priority = static_cast<int>(i % 8),
                     .payload = b.payload});
  }
  return b;
}

void Publish(const std::vector<std::string>& nats, int64_t batch) {
  auto h = Open(nats);
  const int64_t num = absl::GetFlag(FLAGS_num);
  std::vector<Batch> batches;
  for (int64_t at = 0; at < num; at += batch) {
    batches.push_back(MakeBatch(at, std::min(batch, num - at), UINT32_MAX));
  }
  const absl::Time start = absl::Now();
  for (const Batch& b : batches) {
    absl::Status s = h->Publish(b.out);
    if (!s.ok()) {
      std::fprintf(stderr, "publish: %s\n", s.ToString().c_str());
      std::exit(1);
    }
  }
  const double secs = absl::ToDoubleSeconds(absl::Now() - start);
  std::printf("publish_%-6lld : %9.3f micros/URL; %9.0f URLs/s (%lld URLs)\n",
              static_cast<long long>(batch), secs * 1e6 / num, num / secs,
              static_cast<long long>(num));
}

void Latency(const std::vector<std::string>& nats) {
  auto h = Open(nats);
  const int batch = absl::GetFlag(FLAGS_latency_batch);
  const int batches = absl::GetFlag(FLAGS_latency_batches);
  auto feed = h->OpenPartition(0, 1);
  if (!feed.ok()) {
    std::fprintf(stderr, "open: %s\n", feed.status().ToString().c_str());
    std::exit(1);
  }
  absl::Mutex mu;
  absl::flat_hash_map<std::string, absl::Time> sent;  // URL -> Publish start.
  std::vector<double> micros;
  const size_t want = static_cast<size_t>(batch) * batches;
  std::atomic<bool> stop{false};
  std::thread consumer([&] {
    size_t got = 0;
    while (got < want && !stop.load()) {
      auto r = (*feed)->Fetch(1000, absl::Milliseconds(200));
      const absl::Time now = absl::Now();
      if (!r.ok()) continue;
      std::vector<uint64_t> seqs;
      {
        absl::MutexLock l(&mu);
        for (const FeedRecord& rec : r->records) {
          seqs.push_back(rec.sequence);
          auto it = sent.find(rec.url.url);
          if (it == sent.end() || rec.deliveries != 1) continue;
          micros.push_back(absl::ToDoubleMicroseconds(now - it->second));
          ++got;
        }
      }
      (void)(*feed)->Ack(seqs);
    }
  });
  for (int i = 0; i < batches; ++i) {
    Batch b = MakeBatch(int64_t{i} * batch, batch, 0);
    const absl::Time start = absl::Now();
    {
      absl::MutexLock l(&mu);
      for (const std::string& u : b.urls) sent[u] = start;
    }
    absl::Status s = h->Publish(b.out);
    if (!s.ok()) {
      std::fprintf(stderr, "publish: %s\n", s.ToString().c_str());
      stop = true;
      break;
    }
    absl::SleepFor(absl::GetFlag(FLAGS_latency_gap));
  }
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    {
      absl::MutexLock l(&mu);
      if (micros.size() >= want) break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  stop = true;
  consumer.join();
  std::sort(micros.begin(), micros.end());
  if (micros.empty()) {
    std::printf("latency        : no URL fetched\n");
    return;
  }
  auto at = [&](double q) {
    return micros[std::min(micros.size() - 1,
                           static_cast<size_t>(q * micros.size()))] /
           1000.0;
  };
  std::printf(
      "latency        : p50 %7.2f ms; p99 %7.2f ms; max %7.2f ms "
      "(%zu URLs, Publish of %d, publish start to Fetch return)\n",
      at(0.5), at(0.99), micros.back() / 1000.0, micros.size(), batch);
}

}  // namespace
}  // namespace hq::fleet

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::unique_ptr<hq::test::FleetCluster> cluster;
  std::vector<std::string> nats;
  if (absl::GetFlag(FLAGS_nats).empty()) {
    std::string why;
    if (!hq::test::FleetCluster::Available(&why)) {
      std::fprintf(stderr, "no local cluster: %s\n", why.c_str());
      return 1;
    }
    auto c = hq::test::FleetCluster::Start(
        {.zookeeper_nodes = 0, .nats_nodes = absl::GetFlag(FLAGS_nats_nodes)});
    if (!c.ok()) {
      std::fprintf(stderr, "cluster: %s\n", c.status().ToString().c_str());
      return 1;
    }
    cluster = std::move(*c);
    nats = absl::StrSplit(cluster->nats_urls(), ',');
  } else {
    nats = absl::StrSplit(absl::GetFlag(FLAGS_nats), ',');
  }
  std::printf("nats:       %zu servers (%s), stream replicas %d\n", nats.size(),
              cluster ? "local, started by the bench" : "given",
              absl::GetFlag(FLAGS_replicas));
  std::printf(
      "urls:       %lld per publish workload, payload %d bytes, "
      "%d partitions\n",
      static_cast<long long>(absl::GetFlag(FLAGS_num)),
      absl::GetFlag(FLAGS_value_size), absl::GetFlag(FLAGS_partitions));
  std::printf("------------------------------------------------\n");
  for (absl::string_view name :
       absl::StrSplit(absl::GetFlag(FLAGS_benchmarks), ',')) {
    int64_t batch = 0;
    if (absl::ConsumePrefix(&name, "publish_") &&
        absl::SimpleAtoi(name, &batch) && batch > 0) {
      hq::fleet::Publish(nats, batch);
    } else if (name == "latency") {
      hq::fleet::Latency(nats);
    } else {
      std::fprintf(stderr, "unknown benchmark '%s'\n",
                   std::string(name).c_str());
      return 1;
    }
    std::fflush(stdout);
  }
  return 0;
}
