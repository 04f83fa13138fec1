// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// FleetCluster (test/fleet/cluster.h): the ensemble and the JetStream
// cluster it starts serve what the fleet needs (znodes; a replicated
// stream with duplicate detection and a durable pull consumer), go on
// serving with one ZooKeeper node and one nats-server killed, take the
// killed nodes back, and are gone with the fixture. The clients are the
// fleet's own: the ZooKeeper C client and nats.c.

#include "test/fleet/cluster.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "catch2/catch.hpp"
#include "lib/fleet/clients.h"
#include "nats/nats.h"
#include "zookeeper/zookeeper.h"

namespace hq::test {
namespace {

using fleet::NatsStatus;
using fleet::ZooKeeperStatus;

// Deadlines for a loaded machine: what the servers must do eventually, not
// quickly.
constexpr absl::Duration kDeadline = absl::Seconds(60);

#define REQUIRE_OK(expr)                 \
  do {                                   \
    const ::absl::Status hq_s_ = (expr); \
    INFO(hq_s_.ToString());              \
    REQUIRE(hq_s_.ok());                 \
  } while (0)

// Calls `attempt` until it returns OK or `timeout` has passed; returns its
// last status.
absl::Status Eventually(absl::Duration timeout,
                        const std::function<absl::Status()>& attempt) {
  const absl::Time deadline = absl::Now() + timeout;
  for (;;) {
    absl::Status s = attempt();
    if (s.ok() || absl::Now() > deadline) return s;
    absl::SleepFor(absl::Milliseconds(200));
  }
}

// A ZooKeeper client session (10 s timeout) on `hosts`.
class Zk {
 public:
  explicit Zk(const std::string& hosts) {
    // The client's log (connection attempts) is dropped: the checks say
    // what failed.
    zh_ = zookeeper_init2(hosts.c_str(), &Zk::Watch, 10000, nullptr, this, 0,
                          [](const char*) {});
  }
  ~Zk() {
    if (zh_ != nullptr) zookeeper_close(zh_);
  }
  Zk(const Zk&) = delete;
  Zk& operator=(const Zk&) = delete;

  zhandle_t* get() const { return zh_; }

  // OK once the session is connected, within kDeadline.
  absl::Status WaitConnected() {
    if (zh_ == nullptr) return absl::InternalError("zookeeper_init failed");
    const absl::Time end = absl::Now() + kDeadline;
    while (state_.load() != ZOO_CONNECTED_STATE) {
      if (absl::Now() > end) {
        return absl::DeadlineExceededError(
            absl::StrCat("no ZooKeeper session, state ", state_.load()));
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    return absl::OkStatus();
  }

  absl::Status Create(const std::string& path, const std::string& data) {
    const int rc = zoo_create(zh_, path.c_str(), data.data(),
                              static_cast<int>(data.size()),
                              &ZOO_OPEN_ACL_UNSAFE, ZOO_PERSISTENT, nullptr, 0);
    return ZooKeeperStatus(rc, "create " + path);
  }

  absl::StatusOr<std::string> Get(const std::string& path) {
    std::string buf(1024, '\0');
    int len = static_cast<int>(buf.size());
    Stat stat;
    const int rc = zoo_get(zh_, path.c_str(), 0, buf.data(), &len, &stat);
    if (rc != ZOK) return ZooKeeperStatus(rc, "get " + path);
    buf.resize(len < 0 ? 0 : static_cast<size_t>(len));
    return buf;
  }

 private:
  static void Watch(zhandle_t*, int type, int state, const char*, void* ctx) {
    if (type != ZOO_SESSION_EVENT) return;
    static_cast<Zk*>(ctx)->state_.store(state);
  }

  zhandle_t* zh_ = nullptr;
  std::atomic<int> state_{0};  // Written by the client's event thread.
};

// A NATS connection that reconnects (to any of its URLs) and its JetStream
// context.
class Nats {
 public:
  explicit Nats(const std::string& urls) {
    natsOptions* opts = nullptr;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = fleet::SetNatsServers(opts, urls);
    if (s == NATS_OK) s = natsOptions_SetTimeout(opts, 5000);
    if (s == NATS_OK) s = natsOptions_SetMaxReconnect(opts, -1);
    if (s == NATS_OK) s = natsOptions_SetReconnectWait(opts, 100);
    if (s == NATS_OK) s = natsConnection_Connect(&nc_, opts);
    natsOptions_Destroy(opts);
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = 5000;
    if (s == NATS_OK) s = natsConnection_JetStream(&js_, nc_, &jo);
    status_ = NatsStatus(s, "connect to " + urls);
  }
  ~Nats() {
    if (js_ != nullptr) jsCtx_Destroy(js_);
    if (nc_ != nullptr) natsConnection_Destroy(nc_);
  }
  Nats(const Nats&) = delete;
  Nats& operator=(const Nats&) = delete;

  const absl::Status& status() const { return status_; }
  jsCtx* js() const { return js_; }

  // Adds a stream `name` of `replicas` on file storage, taking the subjects
  // "<prefix>.>", with a 2-minute duplicate window; AlreadyExists if a
  // stream of that name exists.
  absl::Status AddStream(const std::string& name, const std::string& prefix,
                         int replicas) {
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    const std::string subject = prefix + ".>";
    const char* subjects[] = {subject.c_str()};
    cfg.Name = name.c_str();
    cfg.Subjects = subjects;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = replicas;
    cfg.Duplicates = absl::ToInt64Nanoseconds(absl::Minutes(2));
    jsStreamInfo* info = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_AddStream(&info, js_, &cfg, nullptr, &jerr);
    if (info != nullptr) jsStreamInfo_Destroy(info);
    return NatsStatus(s, "add stream " + name, jerr);
  }

  // Publishes with a message id; *duplicate says whether JetStream
  // reported it as a duplicate of an earlier message with that id.
  absl::Status Publish(const std::string& subject, const std::string& data,
                       const std::string& id, bool* duplicate) {
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = id.c_str();
    po.MaxWait = 5000;
    jsPubAck* ack = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = js_Publish(&ack, js_, subject.c_str(), data.data(),
                                    static_cast<int>(data.size()), &po, &jerr);
    if (ack != nullptr) {
      *duplicate = ack->Duplicate;
      jsPubAck_Destroy(ack);
    }
    return NatsStatus(s, "publish " + id, jerr);
  }

 private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
  absl::Status status_;
};

// Fetches from a pull subscription until `want` payloads arrived or
// `timeout` passed; acknowledges each one (and waits for the ack's
// confirmation). Returns the payloads in order.
std::vector<std::string> FetchAndAck(natsSubscription* sub, size_t want,
                                     absl::Duration timeout) {
  std::vector<std::string> got;
  const absl::Time deadline = absl::Now() + timeout;
  while (got.size() < want && absl::Now() < deadline) {
    natsMsgList list{};
    jsErrCode jerr = static_cast<jsErrCode>(0);
    const natsStatus s = natsSubscription_Fetch(
        &list, sub, static_cast<int>(want - got.size()), 2000, &jerr);
    if (s == NATS_OK) {
      for (int k = 0; k < list.Count; ++k) {
        natsMsg* m = list.Msgs[k];
        got.emplace_back(natsMsg_GetData(m),
                         static_cast<size_t>(natsMsg_GetDataLength(m)));
        // A lost ack is redelivered; the checks allow for that.
        natsMsg_AckSync(m, nullptr, nullptr);
      }
      natsMsgList_Destroy(&list);
    } else {
      absl::SleepFor(absl::Milliseconds(100));
    }
  }
  return got;
}

// The stream's leader (a server name) and whether every replica is current.
absl::Status StreamLeader(jsCtx* js, const std::string& stream,
                          std::string* leader, bool* all_current,
                          uint64_t* messages) {
  jsStreamInfo* info = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  const natsStatus s =
      js_GetStreamInfo(&info, js, stream.c_str(), nullptr, &jerr);
  if (s != NATS_OK) return NatsStatus(s, "stream info " + stream, jerr);
  absl::Status status;
  if (info->Cluster == nullptr || info->Cluster->Leader == nullptr) {
    status = absl::UnavailableError("the stream has no leader now");
  } else {
    *leader = info->Cluster->Leader;
    *all_current = true;
    for (int k = 0; k < info->Cluster->ReplicasLen; ++k) {
      const jsPeerInfo* peer = info->Cluster->Replicas[k];
      if (!peer->Current || peer->Offline) *all_current = false;
    }
    *messages = info->State.Msgs;
  }
  jsStreamInfo_Destroy(info);
  return status;
}

bool PortRefuses(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool refused =
      connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0;
  close(fd);
  return refused;
}

// The ports of a connect string or URL list ("127.0.0.1:P,..." or
// "nats://127.0.0.1:P,...").
std::vector<int> Ports(const std::string& list) {
  std::vector<int> ports;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    const size_t colon = part.rfind(':');
    ports.push_back(std::stoi(std::string(part.substr(colon + 1))));
  }
  return ports;
}

TEST_CASE("FleetCluster: bad options are refused before anything starts",
          "[fleet]") {
  for (ClusterOptions o :
       {ClusterOptions{.zookeeper_nodes = -1},
        ClusterOptions{.zookeeper_nodes = 10}, ClusterOptions{.nats_nodes = -1},
        ClusterOptions{.nats_nodes = 10},
        ClusterOptions{.zookeeper_tick = absl::ZeroDuration()},
        ClusterOptions{.start_timeout = absl::ZeroDuration()},
        ClusterOptions{.zookeeper_heap_mb = 8}}) {
    auto cluster = FleetCluster::Start(o);
    INFO(cluster.status().ToString());
    CHECK(cluster.status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE(
    "FleetCluster: with no nodes, nothing runs and the addresses are empty",
    "[fleet]") {
  auto cluster = FleetCluster::Start({.zookeeper_nodes = 0, .nats_nodes = 0});
  REQUIRE_OK(cluster.status());
  CHECK((*cluster)->zookeeper_connect().empty());
  CHECK((*cluster)->nats_urls().empty());
  CHECK((*cluster)->KillZooKeeper(0).code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK((*cluster)->StartNats(0).code() == absl::StatusCode::kInvalidArgument);
  const std::string dir = (*cluster)->dir();
  CHECK(std::filesystem::is_directory(dir));
  cluster->reset();
  CHECK(!std::filesystem::exists(dir));
}

TEST_CASE(
    "FleetCluster: a node not ready by the deadline is named with its log, "
    "and nothing is left behind",
    "[fleet]") {
  // No server answers within a millisecond of its start.
  auto cluster = FleetCluster::Start({.zookeeper_nodes = 1,
                                      .nats_nodes = 1,
                                      .start_timeout = absl::Milliseconds(1)});
  INFO(cluster.status().ToString());
  REQUIRE(cluster.status().code() == absl::StatusCode::kDeadlineExceeded);
  const std::string message(cluster.status().message());
  // Whichever node the deadline caught first is named, with its log's tail:
  // at least the line the fixture writes at each start.
  const bool nats = message.starts_with("nats-server 0: ");
  CHECK((nats || message.starts_with("zookeeper node 0: ")));
  CHECK(message.find(nats ? "nats.log:\n=== " : "zookeeper.log:\n=== ") !=
        std::string::npos);
  CHECK(message.find("starting: ") != std::string::npos);
  const size_t at = message.find("/hq_fleet_cluster_");
  REQUIRE(at != std::string::npos);
  const size_t slash = message.find('/', at + 1);
  const size_t begin = message.rfind(' ', at) + 1;
  const std::string dir = message.substr(begin, slash - begin);
  CHECK(!std::filesystem::exists(dir));
}

TEST_CASE(
    "FleetCluster: one node each (ZooKeeper standalone, NATS without a "
    "cluster) serves and restarts",
    "[fleet]") {
  auto started = FleetCluster::Start({.zookeeper_nodes = 1, .nats_nodes = 1});
  REQUIRE_OK(started.status());
  std::unique_ptr<FleetCluster> cluster = std::move(*started);
  CHECK(cluster->zookeeper_connect() == cluster->zookeeper_connect(0));
  CHECK(cluster->nats_urls() == cluster->nats_url(0));
  auto leader = cluster->ZooKeeperLeader();
  REQUIRE_OK(leader.status());
  CHECK(*leader == 0);
  {
    Zk zk(cluster->zookeeper_connect());
    REQUIRE_OK(zk.WaitConnected());
    REQUIRE_OK(zk.Create("/one", "1"));
  }
  REQUIRE_OK(cluster->KillZooKeeper(0));
  CHECK(cluster->ZooKeeperLeader().status().code() ==
        absl::StatusCode::kUnavailable);
  REQUIRE_OK(cluster->StartZooKeeper(0));
  {
    Zk zk(cluster->zookeeper_connect());
    REQUIRE_OK(zk.WaitConnected());
    auto data = zk.Get("/one");
    REQUIRE_OK(data.status());
    CHECK(*data == "1");
  }

  // A stream of one replica keeps its message across a restart.
  {
    Nats nats(cluster->nats_urls());
    REQUIRE_OK(nats.status());
    REQUIRE_OK(nats.AddStream("ONE", "one", 1));
    bool duplicate = true;
    REQUIRE_OK(nats.Publish("one.a", "kept", "k1", &duplicate));
    CHECK(!duplicate);
  }
  REQUIRE_OK(cluster->KillNats(0));
  REQUIRE_OK(cluster->StartNats(0));
  {
    Nats nats(cluster->nats_urls());
    REQUIRE_OK(nats.status());
    REQUIRE_OK(Eventually(kDeadline, [&]() -> absl::Status {
      jsStreamInfo* info = nullptr;
      jsErrCode jerr = static_cast<jsErrCode>(0);
      const natsStatus s =
          js_GetStreamInfo(&info, nats.js(), "ONE", nullptr, &jerr);
      if (s != NATS_OK) return NatsStatus(s, "stream info ONE", jerr);
      const uint64_t msgs = info->State.Msgs;
      jsStreamInfo_Destroy(info);
      return msgs == 1 ? absl::OkStatus()
                       : absl::DataLossError(absl::StrCat(msgs, " messages"));
    }));
  }
}

TEST_CASE(
    "FleetCluster: 3 ZooKeeper nodes and 3 nats-servers serve znodes and a "
    "replicated stream, also with one of each killed, and stop with the "
    "fixture",
    "[fleet]") {
  const absl::Time t0 = absl::Now();
  auto started = FleetCluster::Start({});
  REQUIRE_OK(started.status());
  std::unique_ptr<FleetCluster> cluster = std::move(*started);
  std::printf("FleetCluster::Start (3 ZooKeeper, 3 NATS) took %s\n",
              absl::FormatDuration(absl::Now() - t0).c_str());
  std::fflush(stdout);

  const std::string zk_connect = cluster->zookeeper_connect();
  const std::string nats_urls = cluster->nats_urls();
  REQUIRE(Ports(zk_connect).size() == 3);
  REQUIRE(Ports(nats_urls).size() == 3);
  CHECK(zk_connect.starts_with("127.0.0.1:"));
  CHECK(nats_urls.starts_with("nats://127.0.0.1:"));
  CHECK(cluster->zookeeper_connect(1) ==
        absl::StrCat("127.0.0.1:", Ports(zk_connect)[1]));
  CHECK(cluster->nats_url(2) ==
        absl::StrCat("nats://127.0.0.1:", Ports(nats_urls)[2]));

  // ZooKeeper: a znode written and read back.
  {
    Zk zk(zk_connect);
    REQUIRE_OK(zk.WaitConnected());
    REQUIRE_OK(zk.Create("/hq-test", "hello"));
    auto data = zk.Get("/hq-test");
    REQUIRE_OK(data.status());
    CHECK(*data == "hello");
  }

  // JetStream: a stream of 3 replicas on file storage; a message id
  // published twice is stored once; a durable pull consumer reads it.
  Nats nats(nats_urls);
  REQUIRE_OK(nats.status());
  REQUIRE_OK(Eventually(kDeadline, [&] {
    absl::Status status = nats.AddStream("T", "t", 3);
    return absl::IsAlreadyExists(status) ? absl::OkStatus() : status;
  }));
  bool duplicate = true;
  REQUIRE_OK(nats.Publish("t.a", "one", "m1", &duplicate));
  CHECK(!duplicate);
  REQUIRE_OK(nats.Publish("t.a", "one again", "m1", &duplicate));
  CHECK(duplicate);
  REQUIRE_OK(nats.Publish("t.b", "two", "m2", &duplicate));
  CHECK(!duplicate);

  natsSubscription* sub = nullptr;
  {
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Config.AckPolicy = js_AckExplicit;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    REQUIRE_OK(NatsStatus(
        js_PullSubscribe(&sub, nats.js(), "t.>", "c1", nullptr, &so, &jerr),
        "pull subscribe c1", jerr));
  }
  std::unique_ptr<natsSubscription, void (*)(natsSubscription*)> sub_owner(
      sub, natsSubscription_Destroy);
  CHECK(FetchAndAck(sub, 2, kDeadline) ==
        std::vector<std::string>{"one", "two"});

  // Bad indexes and states.
  {
    CHECK(cluster->KillZooKeeper(3).code() ==
          absl::StatusCode::kInvalidArgument);
    CHECK(cluster->KillNats(-1).code() == absl::StatusCode::kInvalidArgument);
    CHECK(cluster->StartZooKeeper(0).code() ==
          absl::StatusCode::kFailedPrecondition);
    CHECK(cluster->StartNats(1).code() ==
          absl::StatusCode::kFailedPrecondition);
    CHECK(cluster->zookeeper_connect(3).empty());
    CHECK(cluster->nats_url(3).empty());
    CHECK(cluster->nats_index(FleetCluster::nats_server_name(2)) == 2);
    CHECK(cluster->nats_index("elsewhere") == -1);
  }

  // One ZooKeeper node and one nats-server killed: both still serve.
  {
    // The ZooKeeper leader and the stream's leader: the hardest node each
    // to lose.
    int zk_leader = -1;
    REQUIRE_OK(Eventually(kDeadline, [&]() -> absl::Status {
      auto leader = cluster->ZooKeeperLeader();
      if (leader.ok()) zk_leader = *leader;
      return leader.status();
    }));
    std::string stream_leader;
    bool all_current = false;
    uint64_t messages = 0;
    REQUIRE_OK(Eventually(kDeadline, [&] {
      return StreamLeader(nats.js(), "T", &stream_leader, &all_current,
                          &messages);
    }));
    const int nats_leader = cluster->nats_index(stream_leader);
    REQUIRE(nats_leader >= 0);

    const absl::Time killed = absl::Now();
    REQUIRE_OK(cluster->KillZooKeeper(zk_leader));
    REQUIRE_OK(cluster->KillNats(nats_leader));
    CHECK(!cluster->zookeeper_running(zk_leader));
    CHECK(!cluster->nats_running(nats_leader));
    CHECK(PortRefuses(Ports(zk_connect)[static_cast<size_t>(zk_leader)]));
    CHECK(PortRefuses(Ports(nats_urls)[static_cast<size_t>(nats_leader)]));
    CHECK(cluster->KillNats(nats_leader).code() ==
          absl::StatusCode::kFailedPrecondition);

    {
      Zk zk(zk_connect);
      REQUIRE_OK(zk.WaitConnected());
      REQUIRE_OK(Eventually(kDeadline, [&] {
        absl::Status s = zk.Create("/hq-test/after-kill", "still");
        return absl::IsAlreadyExists(s) ? absl::OkStatus() : s;
      }));
      auto data = zk.Get("/hq-test");
      REQUIRE_OK(data.status());
      CHECK(*data == "hello");
    }
    // A retry after a lost acknowledgement is reported as a duplicate: the
    // id makes the publish idempotent.
    REQUIRE_OK(Eventually(kDeadline, [&] {
      return nats.Publish("t.c", "three", "m3", &duplicate);
    }));
    std::vector<std::string> after = FetchAndAck(sub, 1, kDeadline);
    // Messages acknowledged before the kill may come again (at least
    // once), never anything else.
    CHECK(std::set<std::string>(after.begin(), after.end()).count("three") ==
          1);
    for (const std::string& m : after) {
      CHECK((m == "one" || m == "two" || m == "three"));
    }
    std::printf("with a node of each killed, both served again after %s\n",
                absl::FormatDuration(absl::Now() - killed).c_str());

    // Both nodes back, on their ports and with their data.
    const absl::Time restart = absl::Now();
    REQUIRE_OK(cluster->StartZooKeeper(zk_leader));
    REQUIRE_OK(cluster->StartNats(nats_leader));
    std::printf("StartZooKeeper and StartNats took %s\n",
                absl::FormatDuration(absl::Now() - restart).c_str());
    CHECK(cluster->zookeeper_running(zk_leader));
    CHECK(cluster->nats_running(nats_leader));
    {
      Zk alone(cluster->zookeeper_connect(zk_leader));
      REQUIRE_OK(alone.WaitConnected());
      REQUIRE_OK(Eventually(kDeadline, [&]() -> absl::Status {
        auto data = alone.Get("/hq-test/after-kill");
        if (!data.ok()) return data.status();
        return *data == "still" ? absl::OkStatus()
                                : absl::DataLossError("wrong data " + *data);
      }));
    }
    {
      Nats alone(cluster->nats_url(nats_leader));
      REQUIRE_OK(alone.status());
      // The restarted server catches up: every replica current, and the
      // stream holds each message id once.
      REQUIRE_OK(Eventually(kDeadline, [&]() -> absl::Status {
        absl::Status s = StreamLeader(alone.js(), "T", &stream_leader,
                                      &all_current, &messages);
        if (!s.ok()) return s;
        if (!all_current) return absl::UnavailableError("a replica lags");
        return absl::OkStatus();
      }));
      CHECK(messages == 3);
    }
  }

  // The fixture's end: every server killed, its ports closed, its
  // directory gone.
  const std::string dir = cluster->dir();
  REQUIRE(std::filesystem::is_directory(dir));
  sub_owner.reset();
  cluster.reset();
  CHECK(!std::filesystem::exists(dir));
  for (int port : Ports(zk_connect)) CHECK(PortRefuses(port));
  for (int port : Ports(nats_urls)) CHECK(PortRefuses(port));
}

}  // namespace
}  // namespace hq::test
