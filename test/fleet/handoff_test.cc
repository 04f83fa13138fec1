// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// lib/fleet/handoff.h against a real 3-node NATS JetStream cluster
// (test/fleet/cluster.h): publish and fetch in order, duplicates dropped by
// message id, redelivery of what was not acked at the same epoch, a new
// epoch starting over and removing the old consumer, completions, malformed
// messages reported with their sequence, and a cluster that loses one
// server and then all of them. Every wait has a generous deadline; nothing
// is timed.

#include "lib/fleet/handoff.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "lib/fleet/records.h"
#include "nats/nats.h"
#include "test/fleet/cluster.h"

namespace hq::fleet {
namespace {

using hq::test::ClusterOptions;
using hq::test::FleetCluster;

// Long enough for a loaded 2-core machine; never expected to be reached.
constexpr absl::Duration kPatience = absl::Seconds(90);

// One 3-node cluster for the cases that do not kill servers (each uses its
// own fleet, so its own stream).
FleetCluster& SharedCluster() {
  absl::Status why;
  FleetCluster* cluster =
      test::SharedCluster({.zookeeper_nodes = 0, .nats_nodes = 3}, &why);
  if (cluster == nullptr) FAIL("cannot start the cluster: " << why);
  return *cluster;
}

HandoffOptions Options(const FleetCluster& cluster, std::string fleet) {
  HandoffOptions o;
  o.urls = absl::StrSplit(cluster.nats_urls(), ',');
  o.fleet = std::move(fleet);
  o.partitions = 8;
  o.replicas = 3;
  o.connect_timeout = kPatience;
  o.request_timeout = absl::Seconds(10);
  o.publish_timeout = kPatience;
  return o;
}

std::unique_ptr<Handoff> Connect(const HandoffOptions& o) {
  auto h = Handoff::Connect(o);
  REQUIRE(h.status() == absl::OkStatus());
  return std::move(*h);
}

std::vector<Url> MakeUrls(const std::string& prefix, int n) {
  std::vector<Url> urls;
  for (int i = 0; i < n; ++i) {
    urls.push_back({.url = absl::StrCat("https://", prefix, ".example/", i),
                    .payload = absl::StrCat("depth=", i % 5),
                    .priority = i % 8});
  }
  return urls;
}

std::vector<Outgoing> ToOutgoing(uint32_t partition,
                                 const std::vector<Url>& urls) {
  std::vector<Outgoing> out;
  for (const Url& u : urls) {
    out.push_back({.partition = partition,
                   .url = u.url,
                   .priority = u.priority,
                   .payload = u.payload});
  }
  return out;
}

std::vector<uint64_t> Sequences(const std::vector<FeedRecord>& records) {
  std::vector<uint64_t> seqs;
  for (const FeedRecord& r : records) seqs.push_back(r.sequence);
  return seqs;
}

// Fetches until `n` records came (or the deadline); fails on a malformed
// one. Transient errors (a leader moving) are retried.
std::vector<FeedRecord> FetchN(PartitionFeed& feed, size_t n) {
  std::vector<FeedRecord> got;
  const absl::Time deadline = absl::Now() + kPatience;
  while (got.size() < n && absl::Now() < deadline) {
    auto r = feed.Fetch(static_cast<int>(std::min<size_t>(n - got.size(), 500)),
                        absl::Seconds(1));
    if (!r.ok()) {
      INFO(r.status());
      REQUIRE(absl::IsUnavailable(r.status()));
      absl::SleepFor(absl::Milliseconds(100));
      continue;
    }
    REQUIRE(r->malformed.empty());
    for (FeedRecord& rec : r->records) got.push_back(std::move(rec));
  }
  REQUIRE(got.size() == n);
  return got;
}

// Publishes until JetStream acknowledged all (Publish itself retries for
// publish_timeout; a cluster losing a server may need another call).
PublishResult PublishAll(Handoff& h, std::span<const Outgoing> out) {
  const absl::Time deadline = absl::Now() + kPatience;
  while (true) {
    PublishResult r;
    absl::Status s = h.Publish(out, &r);
    if (s.ok()) {
      CHECK(r.acknowledged == out.size());
      return r;
    }
    INFO(s);
    REQUIRE((absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)));
    REQUIRE(absl::Now() < deadline);
  }
}

TEST_CASE(
    "a published batch comes back through the partition's feed, in order") {
  auto h = Connect(Options(SharedCluster(), "order"));
  CHECK(h->stream() == "HQF_order");
  CHECK(h->UrlSubject(3) == "hqf.order.u.3");
  CHECK(h->CompletionSubject(3) == "hqf.order.d.3");
  const auto urls = MakeUrls("order", 250);
  const auto other = MakeUrls("elsewhere", 20);
  PublishResult r = PublishAll(*h, ToOutgoing(3, urls));
  CHECK(r.acknowledged == 250);
  CHECK(r.duplicates == 0);
  PublishAll(*h, ToOutgoing(5, other));

  auto feed = h->OpenPartition(3, 1);
  REQUIRE(feed.status() == absl::OkStatus());
  CHECK((*feed)->consumer() == "u3e1");
  auto lag = (*feed)->Lag();
  REQUIRE(lag.ok());
  CHECK(*lag == 250);

  auto got = FetchN(**feed, 250);
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("record " << i);
    CHECK(got[i].url.url == urls[i].url);
    CHECK(got[i].url.payload == urls[i].payload);
    CHECK(got[i].url.priority == urls[i].priority);
    CHECK(got[i].deliveries == 1);
    if (i > 0) CHECK(got[i].sequence > got[i - 1].sequence);
  }
  REQUIRE((*feed)->Ack(Sequences(got)).ok());
  // Acking again: not held any more.
  CHECK(absl::IsNotFound((*feed)->Ack(Sequences(got))));
  const absl::Time deadline = absl::Now() + kPatience;
  while (absl::Now() < deadline) {
    lag = (*feed)->Lag();
    REQUIRE(lag.ok());
    if (*lag == 0) break;
    absl::SleepFor(absl::Milliseconds(100));
  }
  CHECK(*lag == 0);
  auto more = (*feed)->Fetch(10, absl::Milliseconds(500));
  REQUIRE(more.ok());
  CHECK(more->records.empty());
}

TEST_CASE("a URL published twice is stored once") {
  auto h = Connect(Options(SharedCluster(), "dup"));
  auto urls = MakeUrls("dup", 10);
  urls.push_back(urls[3]);  // Twice in one batch.
  PublishResult r = PublishAll(*h, ToOutgoing(2, urls));
  CHECK(r.acknowledged == 11);
  CHECK(r.duplicates == 1);
  // Again, in a later batch, and from a second connection.
  auto h2 = Connect(Options(SharedCluster(), "dup"));
  r = PublishAll(*h2, ToOutgoing(2, {urls[0], urls[9]}));
  CHECK(r.duplicates == 2);

  auto feed = h->OpenPartition(2, 1);
  REQUIRE(feed.ok());
  auto got = FetchN(**feed, 10);
  std::set<std::string> seen;
  for (const auto& rec : got) seen.insert(rec.url.url);
  CHECK(seen.size() == 10);
  auto more = (*feed)->Fetch(10, absl::Seconds(1));
  REQUIRE(more.ok());
  CHECK(more->records.empty());
}

TEST_CASE("a feed reopened at its epoch gets again what was not acked") {
  HandoffOptions o = Options(SharedCluster(), "redeliver");
  o.ack_wait = absl::Seconds(2);
  auto h = Connect(o);
  const auto urls = MakeUrls("redeliver", 10);
  PublishAll(*h, ToOutgoing(1, urls));

  std::set<std::string> acked, unacked;
  {
    auto feed = h->OpenPartition(1, 4);
    REQUIRE(feed.ok());
    auto got = FetchN(**feed, 10);
    std::vector<uint64_t> to_ack;
    for (size_t i = 0; i < got.size(); ++i) {
      if (i % 2 == 0) {
        to_ack.push_back(got[i].sequence);
        acked.insert(got[i].url.url);
      } else {
        unacked.insert(got[i].url.url);
      }
    }
    REQUIRE((*feed)->Ack(to_ack).ok());
  }  // Closed with 5 records held, as by an agent that died.

  auto feed = h->OpenPartition(1, 4);
  REQUIRE(feed.ok());
  std::set<std::string> again;
  const absl::Time deadline = absl::Now() + kPatience;
  while (again.size() < unacked.size() && absl::Now() < deadline) {
    auto r = (*feed)->Fetch(10, absl::Seconds(1));
    REQUIRE(r.ok());
    for (const FeedRecord& rec : r->records) {
      INFO(rec.url.url);
      CHECK(acked.count(rec.url.url) == 0);
      CHECK(rec.deliveries >= 2);
      again.insert(rec.url.url);
      REQUIRE((*feed)->Ack(std::vector<uint64_t>{rec.sequence}).ok());
    }
  }
  CHECK(again == unacked);
  // Everything is acked now: nothing comes back, even after ack_wait.
  auto r = (*feed)->Fetch(10, 3 * o.ack_wait);
  REQUIRE(r.ok());
  CHECK(r->records.empty());
}

TEST_CASE("a feed at a later epoch starts over and removes older consumers") {
  auto h = Connect(Options(SharedCluster(), "epochs"));
  const auto urls = MakeUrls("epochs", 20);
  PublishAll(*h, ToOutgoing(6, urls));
  auto old_feed = h->OpenPartition(6, 1);
  REQUIRE(old_feed.ok());
  auto got = FetchN(**old_feed, 20);
  REQUIRE((*old_feed)->Ack(Sequences(got)).ok());
  // Another partition's consumer is not touched.
  auto neighbour = h->OpenPartition(7, 1);
  REQUIRE(neighbour.ok());

  auto feed = h->OpenPartition(6, 2);
  REQUIRE(feed.ok());
  auto all = FetchN(**feed, 20);
  for (size_t i = 0; i < all.size(); ++i) {
    CHECK(all[i].url.url == urls[i].url);
    CHECK(all[i].deliveries == 1);
  }
  // The epoch-1 consumer is gone, and cannot come back.
  CHECK(absl::IsNotFound((*old_feed)->Lag().status()));
  CHECK(absl::IsFailedPrecondition(h->OpenPartition(6, 1).status()));
  CHECK((*neighbour)->Lag().ok());
}

TEST_CASE("completions round-trip as URL hashes") {
  auto h = Connect(Options(SharedCluster(), "done"));
  auto empty = h->ReadCompletions(4);
  REQUIRE(empty.status() == absl::OkStatus());
  CHECK(empty->empty());

  std::vector<std::string> first = {"https://a.example/1",
                                    "https://a.example/2"};
  std::vector<std::string> second = {"https://a.example/2",
                                     "https://b.example/"};
  // More than one batch's worth.
  std::vector<std::string> many;
  for (size_t i = 0; i < kMaxCompletionsPerBatch + 10; ++i) {
    many.push_back(absl::StrCat("https://many.example/", i));
  }
  REQUIRE(h->PublishCompletions(4, first).ok());
  REQUIRE(h->PublishCompletions(4, second).ok());
  REQUIRE(h->PublishCompletions(4, many).ok());
  REQUIRE(h->PublishCompletions(
               5, std::vector<std::string>{"https://other.example/"})
              .ok());

  auto done = h->ReadCompletions(4);
  REQUIRE(done.status() == absl::OkStatus());
  CHECK(done->size() == 3 + many.size());
  for (const auto& u : first) CHECK(done->contains(UrlHash(u)));
  for (const auto& u : second) CHECK(done->contains(UrlHash(u)));
  for (const auto& u : many) REQUIRE(done->contains(UrlHash(u)));
  CHECK(!done->contains(UrlHash("https://other.example/")));
  CHECK(absl::IsInvalidArgument(h->ReadCompletions(8).status()));

  // Several partitions in one call; each lands in its own subject.
  const std::vector<std::string> six = {"https://six.example/"};
  const std::vector<std::string> seven = {"https://seven.example/a",
                                          "https://seven.example/b"};
  const Handoff::Completed both[] = {{.partition = 6, .urls = six},
                                     {.partition = 7, .urls = seven}};
  REQUIRE(h->PublishCompletions(both).ok());
  auto done6 = h->ReadCompletions(6);
  auto done7 = h->ReadCompletions(7);
  REQUIRE(done6.ok());
  REQUIRE(done7.ok());
  CHECK(*done6 == absl::flat_hash_set<uint64_t>{UrlHash(six[0])});
  CHECK(*done7 ==
        absl::flat_hash_set<uint64_t>{UrlHash(seven[0]), UrlHash(seven[1])});
  const Handoff::Completed bad[] = {{.partition = 6, .urls = six},
                                    {.partition = 8, .urls = six}};
  CHECK(absl::IsInvalidArgument(h->PublishCompletions(bad)));
}

// The name of the consumer behind `sub`, from its server.
std::string ConsumerOf(natsSubscription* sub) {
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  if (natsSubscription_GetConsumerInfo(&ci, sub, nullptr, &jerr) != NATS_OK) {
    return "";
  }
  std::string name = ci->Name;
  jsConsumerInfo_Destroy(ci);
  return name;
}

TEST_CASE("a completion read whose reader stalls resumes where it stopped") {
  FleetCluster& cluster = SharedCluster();
  HandoffOptions o = Options(cluster, "stall");
  // Shorter than nats.c takes to notice an ordered consumer gone (missed
  // heartbeats): only a replaced reader finishes in time.
  o.request_timeout = absl::Seconds(6);
  o.read_stall = absl::Milliseconds(300);
  auto h = Connect(o);
  // Full batches, 12 MiB in all: more than nats-server 2.9 pushes to an
  // ordered consumer ahead of its flow control (about 5 MiB), so that the
  // reader still waits for messages when its consumer goes.
  constexpr int kMessages = 24;
  std::vector<uint64_t> hashes;
  for (int i = 0; i < kMessages; ++i) {
    std::vector<std::string> batch;
    for (size_t j = 0; j < kMaxCompletionsPerBatch; ++j) {
      batch.push_back(absl::StrCat("https://stall.example/", i, "/", j));
      hashes.push_back(UrlHash(batch.back()));
    }
    REQUIRE(h->PublishCompletions(3, batch).ok());
  }

  // A second connection deletes the reader's consumer on the server after
  // its second message: the subscription then waits for messages that
  // never come, as when the server holding it dies.
  natsConnection* nc = nullptr;
  REQUIRE(natsConnection_ConnectTo(&nc, cluster.nats_urls().c_str()) ==
          NATS_OK);
  jsCtx* js = nullptr;
  REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
  std::string deleted, last;
  uint64_t calls = 0, final_read = 0;
  h->TEST_SetReadHook([&](natsSubscription* sub, uint64_t read) {
    ++calls;
    final_read = read;
    if (read == 2) {
      deleted = ConsumerOf(sub);
      jsErrCode jerr = static_cast<jsErrCode>(0);
      CHECK(js_DeleteConsumer(js, "HQF_stall",  // The stream of fleet "stall".
                              deleted.c_str(), nullptr, &jerr) == NATS_OK);
    }
    if (read == kMessages) last = ConsumerOf(sub);
  });
  auto done = h->ReadCompletions(3);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  REQUIRE(done.status() == absl::OkStatus());
  CHECK(!deleted.empty());
  CHECK(!last.empty());
  CHECK(last != deleted);
  CHECK(calls == kMessages);  // Nothing counted twice.
  CHECK(final_read == kMessages);
  REQUIRE(done->size() == hashes.size());
  size_t missing = 0;
  for (uint64_t x : hashes) missing += done->contains(x) ? 0 : 1;
  CHECK(missing == 0);
}

TEST_CASE("Publish, Fetch and Ack may be called from several threads") {
  auto h = Connect(Options(SharedCluster(), "threads"));
  auto feed = h->OpenPartition(3, 1);
  REQUIRE(feed.ok());
  constexpr int kThreads = 4;
  constexpr int kBatches = 5;
  constexpr int kPerBatch = 50;
  std::atomic<int> failures{0};
  std::vector<std::thread> publishers;
  for (int t = 0; t < kThreads; ++t) {
    publishers.emplace_back([&, t] {
      for (int b = 0; b < kBatches; ++b) {
        const auto urls = MakeUrls(absl::StrCat("t", t, "b", b), kPerBatch);
        PublishResult r;
        if (!h->Publish(ToOutgoing(3, urls), &r).ok() ||
            r.acknowledged != kPerBatch) {
          ++failures;
        }
      }
    });
  }
  // Two fetching threads share the feed and ack what they get.
  std::mutex mu;
  std::set<std::string> seen;
  std::atomic<bool> stop{false};
  std::vector<std::thread> fetchers;
  for (int f = 0; f < 2; ++f) {
    fetchers.emplace_back([&] {
      const absl::Time deadline = absl::Now() + kPatience;
      while (!stop.load() && absl::Now() < deadline) {
        auto r = (*feed)->Fetch(100, absl::Milliseconds(500));
        if (!r.ok()) continue;
        std::vector<uint64_t> seqs;
        {
          std::lock_guard<std::mutex> l(mu);
          for (const auto& rec : r->records) {
            seen.insert(rec.url.url);
            seqs.push_back(rec.sequence);
          }
          if (seen.size() == kThreads * kBatches * kPerBatch) stop = true;
        }
        if (!(*feed)->Ack(seqs).ok()) ++failures;
      }
    });
  }
  for (auto& t : publishers) t.join();
  for (auto& t : fetchers) t.join();
  CHECK(failures.load() == 0);
  CHECK(seen.size() == kThreads * kBatches * kPerBatch);
}

// Publishes raw bytes to `subject`, as a broken or foreign client would;
// returns the stream sequence.
uint64_t PublishRaw(const FleetCluster& cluster, const std::string& subject,
                    const std::string& data) {
  natsConnection* nc = nullptr;
  REQUIRE(natsConnection_ConnectTo(&nc, cluster.nats_urls().c_str()) ==
          NATS_OK);
  jsCtx* js = nullptr;
  REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
  jsPubAck* pa = nullptr;
  natsStatus s = js_Publish(&pa, js, subject.c_str(), data.data(),
                            static_cast<int>(data.size()), nullptr, nullptr);
  const uint64_t seq = pa != nullptr ? pa->Sequence : 0;
  jsPubAck_Destroy(pa);
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  REQUIRE(s == NATS_OK);
  return seq;
}

TEST_CASE("a malformed message is reported with its sequence, never dropped") {
  FleetCluster& cluster = SharedCluster();
  HandoffOptions o = Options(cluster, "bad");
  o.ack_wait = absl::Seconds(2);
  auto h = Connect(o);
  const auto urls = MakeUrls("bad", 2);
  PublishAll(*h, ToOutgoing(0, {urls[0]}));
  std::string record;
  REQUIRE(EncodeUrlRecord(urls[1], &record).ok());
  record[0] = 9;  // An unknown version.
  const uint64_t bad_seq = PublishRaw(cluster, "hqf.bad.u.0", record);
  PublishAll(*h, ToOutgoing(0, {urls[1]}));

  auto feed = h->OpenPartition(0, 1);
  REQUIRE(feed.ok());
  std::vector<FeedRecord> good;
  std::vector<MalformedRecord> bad;
  const absl::Time deadline = absl::Now() + kPatience;
  while ((good.size() < 2 || bad.empty()) && absl::Now() < deadline) {
    auto r = (*feed)->Fetch(10, absl::Seconds(1));
    REQUIRE(r.ok());
    for (auto& x : r->records) good.push_back(std::move(x));
    for (auto& x : r->malformed) bad.push_back(std::move(x));
  }
  REQUIRE(good.size() == 2);
  CHECK(good[0].url.url == urls[0].url);
  CHECK(good[1].url.url == urls[1].url);
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].sequence == bad_seq);
  CHECK(absl::IsDataLoss(bad[0].status));
  CHECK(absl::StrContains(bad[0].status.message(),
                          absl::StrCat("sequence ", bad_seq)));
  REQUIRE((*feed)->Ack(Sequences(good)).ok());
  // Not acked: it counts in the lag and comes back after ack_wait.
  auto lag = (*feed)->Lag();
  REQUIRE(lag.ok());
  CHECK(*lag == 1);
  bool back = false;
  while (!back && absl::Now() < deadline) {
    auto r = (*feed)->Fetch(10, absl::Seconds(1));
    REQUIRE(r.ok());
    // A good record comes back only if its ack wait ran out before its Ack
    // (a loaded machine): at least once. Acked again, it stays away.
    for (const FeedRecord& again : r->records) {
      CHECK((again.url.url == urls[0].url || again.url.url == urls[1].url));
      CHECK(again.deliveries > 1);
    }
    REQUIRE((*feed)->Ack(Sequences(r->records)).ok());
    back = !r->malformed.empty() && r->malformed[0].sequence == bad_seq;
  }
  CHECK(back);
  // Term'ed, it is gone for good.
  REQUIRE((*feed)->Term(std::vector<uint64_t>{bad_seq}).ok());
  auto r = (*feed)->Fetch(10, 3 * o.ack_wait);
  REQUIRE(r.ok());
  CHECK(r->malformed.empty());

  // A malformed completion batch fails the read, naming its sequence.
  const uint64_t bad_done = PublishRaw(cluster, "hqf.bad.d.0", "\x01\x05xx");
  auto done = h->ReadCompletions(0);
  CHECK(absl::IsDataLoss(done.status()));
  CHECK(absl::StrContains(done.status().message(),
                          absl::StrCat("sequence ", bad_done)));
}

TEST_CASE("Connect refuses a stream of other replicas and bad options") {
  auto h = Connect(Options(SharedCluster(), "shape"));
  HandoffOptions o = Options(SharedCluster(), "shape");
  o.replicas = 1;
  CHECK(absl::IsFailedPrecondition(Handoff::Connect(o).status()));
  o = Options(SharedCluster(), "bad.name");
  CHECK(absl::IsInvalidArgument(Handoff::Connect(o).status()));
  o = Options(SharedCluster(), "shape");
  o.urls.clear();
  CHECK(absl::IsInvalidArgument(Handoff::Connect(o).status()));
  // Bad input to Publish: nothing is sent.
  std::vector<Outgoing> bad = {{.partition = 8, .url = "https://x/"}};
  CHECK(absl::IsInvalidArgument(h->Publish(bad)));
  bad = {{.partition = 1, .url = ""}};
  CHECK(absl::IsInvalidArgument(h->Publish(bad)));
  bad = {{.partition = 1, .url = "https://x/", .priority = 9}};
  CHECK(absl::IsInvalidArgument(h->Publish(bad)));
  CHECK(absl::IsInvalidArgument(h->OpenPartition(8, 1).status()));
}

// Waits (up to kPatience) until `stream` has a leader and every replica is
// current: a server started again may still be catching up, and killing
// another one then would leave the stream without a quorum.
void WaitStreamCurrent(const FleetCluster& cluster, const char* stream) {
  natsConnection* nc = nullptr;
  REQUIRE(natsConnection_ConnectTo(&nc, cluster.nats_urls().c_str()) ==
          NATS_OK);
  jsCtx* js = nullptr;
  REQUIRE(natsConnection_JetStream(&js, nc, nullptr) == NATS_OK);
  const absl::Time deadline = absl::Now() + kPatience;
  bool current = false;
  while (!current && absl::Now() < deadline) {
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    if (js_GetStreamInfo(&si, js, stream, nullptr, &jerr) == NATS_OK) {
      const jsClusterInfo* c = si->Cluster;
      current = c != nullptr && c->Leader != nullptr && c->ReplicasLen == 2;
      for (int i = 0; current && i < c->ReplicasLen; ++i) {
        current = c->Replicas[i]->Current && !c->Replicas[i]->Offline;
      }
      jsStreamInfo_Destroy(si);
    }
    if (!current) absl::SleepFor(absl::Milliseconds(200));
  }
  jsCtx_Destroy(js);
  natsConnection_Destroy(nc);
  REQUIRE(current);
}

TEST_CASE("with one nats-server killed, publish and fetch go on") {
  auto cluster = FleetCluster::Start({.zookeeper_nodes = 0, .nats_nodes = 3});
  REQUIRE(cluster.status() == absl::OkStatus());
  auto h = Connect(Options(**cluster, "onedown"));
  const auto before = MakeUrls("before", 100);
  PublishAll(*h, ToOutgoing(1, before));
  auto feed = h->OpenPartition(1, 1);
  REQUIRE(feed.ok());
  auto got = FetchN(**feed, 50);
  REQUIRE((*feed)->Ack(Sequences(got)).ok());

  // Each server in turn is the one that dies (the client is connected to
  // one of them, the stream and consumer leaders live on some).
  for (int dead = 0; dead < 3; ++dead) {
    INFO("nats-server " << dead << " killed");
    REQUIRE((*cluster)->KillNats(dead).ok());
    const auto urls = MakeUrls(absl::StrCat("during", dead), 100);
    PublishAll(*h, ToOutgoing(1, urls));
    // This round's URLs, and the first time also the 50 not yet fetched.
    std::set<std::string> need;
    for (const auto& u : urls) need.insert(u.url);
    if (dead == 0) {
      for (size_t i = 50; i < before.size(); ++i) need.insert(before[i].url);
    }
    const absl::Time deadline = absl::Now() + kPatience;
    while (!need.empty() && absl::Now() < deadline) {
      auto r = (*feed)->Fetch(200, absl::Seconds(1));
      if (!r.ok()) {
        INFO(r.status());
        CHECK(absl::IsUnavailable(r.status()));
        absl::SleepFor(absl::Milliseconds(200));
        continue;
      }
      std::vector<uint64_t> seqs;
      for (const auto& rec : r->records) {
        need.erase(rec.url.url);
        seqs.push_back(rec.sequence);
      }
      // An ack lost to the failure only means a redelivery.
      (void)(*feed)->Ack(seqs);
    }
    CHECK(need.empty());
    REQUIRE((*cluster)->StartNats(dead).ok());
    WaitStreamCurrent(**cluster, "HQF_onedown");
  }
}

TEST_CASE("with every nats-server killed, Publish fails within its deadline") {
  auto cluster = FleetCluster::Start({.zookeeper_nodes = 0, .nats_nodes = 3});
  REQUIRE(cluster.status() == absl::OkStatus());
  HandoffOptions o = Options(**cluster, "alldown");
  o.publish_timeout = absl::Seconds(5);
  o.request_timeout = absl::Seconds(2);
  auto h = Connect(o);
  const auto urls = MakeUrls("alldown", 100);
  PublishAll(*h, ToOutgoing(2, urls));
  auto feed = h->OpenPartition(2, 1);
  REQUIRE(feed.ok());
  for (int i = 0; i < 3; ++i) REQUIRE((*cluster)->KillNats(i).ok());

  PublishResult r;
  const absl::Time start = absl::Now();
  absl::Status s = h->Publish(ToOutgoing(2, MakeUrls("lost", 100)), &r);
  INFO(s);
  CHECK((absl::IsUnavailable(s) || absl::IsDeadlineExceeded(s)));
  CHECK(absl::StrContains(s.message(), "not acknowledged"));
  CHECK(r.acknowledged == 0);
  // It returned: the bound is generous, only a hang would break it.
  CHECK(absl::Now() - start < o.publish_timeout + absl::Seconds(60));
  CHECK(!(*feed)->Fetch(10, absl::Seconds(1)).ok());
  CHECK(!(*feed)->Lag().ok());
  // A new connection gives up after connect_timeout.
  o.connect_timeout = absl::Seconds(2);
  CHECK(absl::IsUnavailable(Handoff::Connect(o).status()));
  CHECK(!h->PublishCompletions(2, std::vector<std::string>{"https://x/"}).ok());
}

}  // namespace
}  // namespace hq::fleet
