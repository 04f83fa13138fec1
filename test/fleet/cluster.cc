// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "test/fleet/cluster.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "lib/fleet/clients.h"
#include "lib/util/status_macros.h"
#include "nats/nats.h"
#include "zookeeper/zookeeper.h"

namespace hq::test {
namespace {

constexpr int kMaxNodes = 9;
// How often the waits look again (and check that the node still runs).
constexpr absl::Duration kPoll = absl::Milliseconds(100);
// Timeouts of single requests inside the waits: a loaded machine answers
// slowly, and the wait's own deadline bounds the whole.
constexpr int kRequestTimeoutMs = 5000;
constexpr char kReadyZnode[] = "/hq-cluster-ready";
constexpr char kReadyStream[] = "HQ_CLUSTER_READY";
constexpr char kReadySubject[] = "hq.cluster.ready";
// Debian's ZooKeeper server jar (libzookeeper-java, which the zookeeper
// package pulls in): its manifest's Class-Path names its dependencies but
// no SLF4J binding, so log4j 1.2's binding comes with it. (The wildcard
// /usr/share/java/* would bring every binding Debian has, nop and simple
// among them, and SLF4J would pick one.)
const char* const kZooKeeperJars[] = {"/usr/share/java/zookeeper.jar",
                                      "/usr/share/java/slf4j-log4j12.jar",
                                      "/usr/share/java/log4j-1.2.jar"};

std::string ErrnoText(const std::string& what) {
  return absl::StrCat(what, ": ", std::strerror(errno));
}

// The executable `name` on PATH (and in /usr/sbin, /sbin), or "".
std::string FindProgram(const std::string& name) {
  const char* env = std::getenv("PATH");
  std::string path = env != nullptr ? env : "/usr/local/bin:/usr/bin:/bin";
  path += ":/usr/sbin:/sbin";
  std::stringstream dirs(path);
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// The jars of kZooKeeperJars that are missing.
std::vector<std::string> MissingJars() {
  std::vector<std::string> missing;
  for (const char* jar : kZooKeeperJars) {
    if (access(jar, R_OK) != 0) missing.push_back(jar);
  }
  return missing;
}

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) return absl::InternalError(ErrnoText("cannot write " + path));
  return absl::OkStatus();
}

std::string ReadTail(const std::string& path, size_t bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "(no log)";
  const std::streamoff size = in.tellg();
  const std::streamoff start =
      size > static_cast<std::streamoff>(bytes) ? size - bytes : 0;
  in.seekg(start);
  std::string text(static_cast<size_t>(size - start), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  if (start > 0) {
    const size_t nl = text.find('\n');
    if (nl != std::string::npos) text.erase(0, nl + 1);
  }
  return text;
}

// `n` distinct ports that were free on 127.0.0.1: all bound to port 0 at
// once (so the kernel gives distinct ones), then released.
absl::StatusOr<std::vector<int>> FreePorts(int n) {
  std::vector<int> fds;
  std::vector<int> ports;
  absl::Status status;
  for (int k = 0; k < n && status.ok(); ++k) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status = absl::InternalError(ErrnoText("socket"));
      break;
    }
    fds.push_back(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof(addr);
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      status = absl::InternalError(ErrnoText("bind 127.0.0.1:0"));
      break;
    }
    ports.push_back(ntohs(addr.sin_port));
  }
  for (int fd : fds) close(fd);
  if (!status.ok()) return status;
  return ports;
}

// A TCP request to 127.0.0.1:port (a ZooKeeper four-letter word): sends
// `request` and returns everything the server sends until it closes.
absl::StatusOr<std::string> TcpRequest(int port, const std::string& request) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(ErrnoText("socket"));
  timeval tv{.tv_sec = 2, .tv_usec = 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  std::string answer;
  absl::Status status;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    status = absl::UnavailableError(
        ErrnoText(absl::StrCat("connect 127.0.0.1:", port)));
  } else if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
             static_cast<ssize_t>(request.size())) {
    status = absl::UnavailableError(ErrnoText("send"));
  } else {
    char buf[4096];
    for (;;) {
      const ssize_t got = recv(fd, buf, sizeof(buf), 0);
      if (got > 0) {
        answer.append(buf, static_cast<size_t>(got));
      } else if (got == 0) {
        break;
      } else if (errno != EINTR) {
        status = absl::UnavailableError(ErrnoText("recv"));
        break;
      }
    }
  }
  close(fd);
  if (!status.ok()) return status;
  return answer;
}

// A ZooKeeper client session for the readiness checks. The C client
// connects and reconnects by itself; Connected() says whether it has a
// session now.
class ZooKeeperSession {
 public:
  explicit ZooKeeperSession(const std::string& hosts) {
    zh_ = zookeeper_init2(hosts.c_str(), &ZooKeeperSession::Watch,
                          kRequestTimeoutMs, nullptr, this, 0,
                          &ZooKeeperSession::DropLog);
  }
  ~ZooKeeperSession() {
    if (zh_ != nullptr) zookeeper_close(zh_);
  }
  ZooKeeperSession(const ZooKeeperSession&) = delete;
  ZooKeeperSession& operator=(const ZooKeeperSession&) = delete;

  zhandle_t* handle() const { return zh_; }
  bool Connected() { return state_.load() == ZOO_CONNECTED_STATE; }

 private:
  static void Watch(zhandle_t*, int type, int state, const char*,
                    void* context) {
    if (type != ZOO_SESSION_EVENT) return;
    static_cast<ZooKeeperSession*>(context)->state_.store(state);
  }
  // The client's own log (connection refused while a node starts...): the
  // waits report what they saw, with the node's log.
  static void DropLog(const char*) {}

  zhandle_t* zh_ = nullptr;
  // Written by the client's event thread (a plain atomic: TSan cannot see
  // absl::Mutex in Debian's uninstrumented libabsl, lib/util/sync.h).
  std::atomic<int> state_{0};
};

// A NATS connection and its JetStream context.
class NatsSession {
 public:
  ~NatsSession() {
    if (js_ != nullptr) jsCtx_Destroy(js_);
    if (nc_ != nullptr) natsConnection_Destroy(nc_);
  }

  // Connects to `urls` (comma-separated), without reconnecting.
  static absl::StatusOr<std::unique_ptr<NatsSession>> Connect(
      const std::string& urls) {
    natsOptions* opts = nullptr;
    natsStatus s = natsOptions_Create(&opts);
    if (s == NATS_OK) s = fleet::SetNatsServers(opts, urls);
    if (s == NATS_OK) s = natsOptions_SetTimeout(opts, kRequestTimeoutMs);
    if (s == NATS_OK) s = natsOptions_SetAllowReconnect(opts, false);
    auto session = std::make_unique<NatsSession>();
    if (s == NATS_OK) s = natsConnection_Connect(&session->nc_, opts);
    if (opts != nullptr) natsOptions_Destroy(opts);
    if (s != NATS_OK) return fleet::NatsStatus(s, "connect to " + urls);
    jsOptions jo;
    s = jsOptions_Init(&jo);
    jo.Wait = kRequestTimeoutMs;
    if (s == NATS_OK)
      s = natsConnection_JetStream(&session->js_, session->nc_, &jo);
    if (s != NATS_OK) return fleet::NatsStatus(s, "JetStream context");
    return session;
  }

  jsCtx* js() const { return js_; }

 private:
  natsConnection* nc_ = nullptr;
  jsCtx* js_ = nullptr;
};

}  // namespace

bool FleetCluster::Available(std::string* why) {
  std::vector<std::string> missing;
  if (FindProgram("java").empty()) {
    missing.push_back("java is not on PATH (Debian: zookeeper pulls in a JRE)");
  }
  if (const std::vector<std::string> jars = MissingJars(); !jars.empty()) {
    missing.push_back(absl::StrCat(
        "ZooKeeper's jars are missing: ", absl::StrJoin(jars, ", "),
        " (Debian: zookeeper)"));
  }
  if (FindProgram("nats-server").empty()) {
    missing.push_back("nats-server is not on PATH (Debian: nats-server)");
  }
  if (why != nullptr) *why = absl::StrJoin(missing, "; ");
  return missing.empty();
}

absl::StatusOr<std::unique_ptr<FleetCluster>> FleetCluster::Start(
    const ClusterOptions& options) {
  if (options.zookeeper_nodes < 0 || options.zookeeper_nodes > kMaxNodes ||
      options.nats_nodes < 0 || options.nats_nodes > kMaxNodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FleetCluster: zookeeper_nodes and nats_nodes must be 0..", kMaxNodes,
        ", not ", options.zookeeper_nodes, " and ", options.nats_nodes));
  }
  if (options.zookeeper_tick < absl::Milliseconds(10) ||
      options.zookeeper_tick > absl::Seconds(10)) {
    return absl::InvalidArgumentError(
        absl::StrCat("FleetCluster: zookeeper_tick must be 10ms..10s, not ",
                     absl::FormatDuration(options.zookeeper_tick)));
  }
  if (options.start_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "FleetCluster: start_timeout must be more than 0");
  }
  if (options.zookeeper_heap_mb < 16 || options.zookeeper_heap_mb > 4096) {
    return absl::InvalidArgumentError(
        absl::StrCat("FleetCluster: zookeeper_heap_mb must be 16..4096, not ",
                     options.zookeeper_heap_mb));
  }
  std::unique_ptr<FleetCluster> cluster(new FleetCluster(options));
  HQ_RETURN_IF_ERROR(cluster->Prepare());
  const absl::Time deadline = absl::Now() + options.start_timeout;
  for (Node& node : cluster->zookeeper_) {
    HQ_RETURN_IF_ERROR(cluster->Spawn(&node));
  }
  for (Node& node : cluster->nats_) {
    HQ_RETURN_IF_ERROR(cluster->Spawn(&node));
  }
  // NATS starts in well under a second, the JVMs in seconds: its checks
  // come first.
  for (int i = 0; i < options.nats_nodes; ++i) {
    HQ_RETURN_IF_ERROR(cluster->WaitNatsServes(i, deadline));
  }
  if (options.nats_nodes > 0) {
    HQ_RETURN_IF_ERROR(cluster->WaitNatsStream(deadline));
  }
  for (int i = 0; i < options.zookeeper_nodes; ++i) {
    HQ_RETURN_IF_ERROR(cluster->WaitZooKeeperServes(i, deadline));
  }
  if (options.zookeeper_nodes > 0) {
    HQ_RETURN_IF_ERROR(cluster->WaitZooKeeperWrites(deadline));
  }
  return cluster;
}

FleetCluster::~FleetCluster() {
  for (Node& node : zookeeper_) Kill(&node).IgnoreError();
  for (Node& node : nats_) Kill(&node).IgnoreError();
  if (!dir_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
}

absl::Status FleetCluster::Prepare() {
  const bool need_java = options_.zookeeper_nodes > 0;
  const bool need_nats = options_.nats_nodes > 0;
  if (need_java) {
    java_ = FindProgram("java");
    if (java_.empty() || !MissingJars().empty()) {
      std::string why;
      Available(&why);
      return absl::FailedPreconditionError("FleetCluster: " + why);
    }
  }
  if (need_nats) {
    nats_server_ = FindProgram("nats-server");
    if (nats_server_.empty()) {
      return absl::FailedPreconditionError(
          "FleetCluster: nats-server is not on PATH (Debian: nats-server)");
    }
  }
  const char* base = std::getenv("TMPDIR");
  std::string tmpl =
      std::string(base != nullptr && *base != '\0' ? base : "/tmp") +
      "/hq_fleet_cluster_XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    return absl::InternalError(ErrnoText("mkdtemp " + tmpl));
  }
  dir_ = tmpl;

  const int z = options_.zookeeper_nodes;
  const int n = options_.nats_nodes;
  HQ_ASSIGN_OR_RETURN(std::vector<int> ports, FreePorts(3 * z + 2 * n));
  size_t next = 0;
  zookeeper_.resize(static_cast<size_t>(z));
  for (int i = 0; i < z; ++i) {
    Node& node = zookeeper_[static_cast<size_t>(i)];
    node.name = absl::StrCat("zookeeper node ", i);
    node.dir = absl::StrCat(dir_, "/zookeeper", i);
    node.client_port = ports[next++];
    node.peer_port = ports[next++];
    node.election_port = ports[next++];
  }
  nats_.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    Node& node = nats_[static_cast<size_t>(i)];
    node.name = absl::StrCat("nats-server ", i);
    node.dir = absl::StrCat(dir_, "/nats", i);
    node.client_port = ports[next++];
    node.peer_port = ports[next++];
  }
  for (int i = 0; i < z; ++i) HQ_RETURN_IF_ERROR(WriteZooKeeperConfig(i));
  for (int i = 0; i < n; ++i) HQ_RETURN_IF_ERROR(WriteNatsConfig(i));
  return absl::OkStatus();
}

// zoo.cfg, the myid file and log4j's configuration (INFO, to the log file).
absl::Status FleetCluster::WriteZooKeeperConfig(int i) {
  Node& node = zookeeper_[static_cast<size_t>(i)];
  const std::string data = node.dir + "/data";
  std::error_code ec;
  std::filesystem::create_directories(data, ec);
  if (ec)
    return absl::InternalError("cannot create " + data + ": " + ec.message());
  const int64_t tick = absl::ToInt64Milliseconds(options_.zookeeper_tick);
  std::string cfg = absl::StrCat(
      "tickTime=", tick,
      "\n"
      "initLimit=100\n"
      "syncLimit=50\n"
      "minSessionTimeout=",
      2 * tick,
      "\n"
      "maxSessionTimeout=60000\n"
      "dataDir=",
      data,
      "\n"
      "clientPort=",
      node.client_port,
      "\n"
      "clientPortAddress=127.0.0.1\n"
      "admin.enableServer=false\n"
      "4lw.commands.whitelist=srvr\n"
      // A SIGKILL loses nothing the page cache holds; only a machine crash
      // would need the fsyncs, which a loaded machine makes slow.
      "forceSync=no\n"
      // Transaction logs grow in 1 MiB steps, not 64 MiB.
      "preAllocSize=1024\n");
  if (zookeeper_.size() > 1) {
    for (size_t k = 0; k < zookeeper_.size(); ++k) {
      absl::StrAppend(&cfg, "server.", k + 1,
                      "=127.0.0.1:", zookeeper_[k].peer_port, ":",
                      zookeeper_[k].election_port, "\n");
    }
  }
  HQ_RETURN_IF_ERROR(WriteFile(node.dir + "/zoo.cfg", cfg));
  HQ_RETURN_IF_ERROR(WriteFile(data + "/myid", absl::StrCat(i + 1, "\n")));
  HQ_RETURN_IF_ERROR(
      WriteFile(node.dir + "/log4j.properties",
                "log4j.rootLogger=INFO, OUT\n"
                "log4j.appender.OUT=org.apache.log4j.ConsoleAppender\n"
                "log4j.appender.OUT.layout=org.apache.log4j.PatternLayout\n"
                "log4j.appender.OUT.layout.ConversionPattern="
                "%d{HH:mm:ss,SSS} %-5p [%t] %c{1}: %m%n\n"));
  node.log_path = node.dir + "/zookeeper.log";
  node.argv = {
      java_, absl::StrCat("-Xmx", options_.zookeeper_heap_mb, "m"), "-Xms16m",
      // One GC thread and the quick compiler only: the JVM starts
      // sooner and competes less on a loaded machine.
      "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
      "-Djava.net.preferIPv4Stack=true", "-Djava.io.tmpdir=" + node.dir,
      "-Dzookeeper.admin.enableServer=false",
      "-Dlog4j.configuration=file:" + node.dir + "/log4j.properties", "-cp",
      absl::StrJoin(kZooKeeperJars, ":"),
      "org.apache.zookeeper.server.quorum.QuorumPeerMain",
      node.dir + "/zoo.cfg"};
  return absl::OkStatus();
}

absl::Status FleetCluster::WriteNatsConfig(int i) {
  Node& node = nats_[static_cast<size_t>(i)];
  std::error_code ec;
  std::filesystem::create_directories(node.dir + "/jetstream", ec);
  if (ec) {
    return absl::InternalError("cannot create " + node.dir + ": " +
                               ec.message());
  }
  std::string conf = absl::StrCat(
      "server_name: ", nats_server_name(i), "\n",
      "listen: 127.0.0.1:", node.client_port, "\n", "logtime: true\n",
      "jetstream {\n", "  store_dir: \"", node.dir, "/jetstream\"\n",
      "  max_memory_store: 64MB\n", "  max_file_store: 1GB\n", "}\n");
  if (nats_.size() > 1) {
    absl::StrAppend(&conf,
                    "cluster {\n"
                    "  name: hq-test\n"
                    "  listen: 127.0.0.1:",
                    node.peer_port,
                    "\n"
                    // Clients keep to the URLs they were given.
                    "  no_advertise: true\n"
                    "  routes: [\n");
    for (size_t k = 0; k < nats_.size(); ++k) {
      if (static_cast<int>(k) == i) continue;
      absl::StrAppend(&conf, "    nats-route://127.0.0.1:", nats_[k].peer_port,
                      "\n");
    }
    absl::StrAppend(&conf, "  ]\n}\n");
  }
  HQ_RETURN_IF_ERROR(WriteFile(node.dir + "/nats.conf", conf));
  node.log_path = node.dir + "/nats.log";
  node.argv = {nats_server_, "-c", node.dir + "/nats.conf"};
  return absl::OkStatus();
}

absl::Status FleetCluster::Spawn(Node* node) {
  // Everything the child needs is made before fork: between fork and exec
  // it calls only async-signal-safe functions.
  std::vector<char*> argv;
  for (std::string& a : node->argv) argv.push_back(a.data());
  argv.push_back(nullptr);
  {
    std::ofstream log(node->log_path, std::ios::app);
    log << "=== " << absl::FormatTime(absl::Now()) << " starting:";
    for (const std::string& a : node->argv) log << " " << a;
    log << "\n";
  }
  const int log_fd = open(node->log_path.c_str(),
                          O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (log_fd < 0)
    return absl::InternalError(ErrnoText("open " + node->log_path));
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0) {
    close(log_fd);
    return absl::InternalError(ErrnoText("open /dev/null"));
  }
  const char* dir = node->dir.c_str();
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // SIGKILL when the starting thread ends (the test process dies); and
    // if it already did, do not start at all.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    if (dup2(null_fd, 0) < 0 || dup2(log_fd, 1) < 0 || dup2(log_fd, 2) < 0) {
      _exit(127);
    }
    // No descriptor of the test (sockets, files) leaks into the server.
    syscall(SYS_close_range, 3U, ~0U, 0U);
    if (chdir(dir) != 0) _exit(127);
    execv(argv[0], argv.data());
    _exit(127);
  }
  const int fork_errno = errno;
  close(log_fd);
  close(null_fd);
  if (pid < 0) {
    errno = fork_errno;
    return absl::InternalError(ErrnoText("fork for " + node->name));
  }
  node->pid = pid;
  return absl::OkStatus();
}

absl::Status FleetCluster::Kill(Node* node) {
  if (node->pid <= 0) {
    return absl::FailedPreconditionError(node->name + " is not running");
  }
  kill(node->pid, SIGKILL);
  int status = 0;
  while (waitpid(node->pid, &status, 0) < 0 && errno == EINTR) {
  }
  node->pid = -1;
  return absl::OkStatus();
}

bool FleetCluster::Running(Node* node) {
  if (node->pid <= 0) return false;
  int status = 0;
  const pid_t r = waitpid(node->pid, &status, WNOHANG);
  if (r == 0) return true;
  node->pid = -1;
  std::ofstream log(node->log_path, std::ios::app);
  if (r > 0) {
    if (WIFEXITED(status)) {
      log << "=== exited with status " << WEXITSTATUS(status) << "\n";
    } else if (WIFSIGNALED(status)) {
      log << "=== killed by signal " << WTERMSIG(status) << "\n";
    }
  }
  return false;
}

absl::Status FleetCluster::NodeError(absl::StatusCode code, const Node& node,
                                     const std::string& what) const {
  return absl::Status(
      code, absl::StrCat(node.name, ": ", what, "; the end of ", node.log_path,
                         ":\n", ReadTail(node.log_path, 3000)));
}

absl::Status FleetCluster::CheckIndex(const std::vector<Node>& nodes, int i,
                                      const char* what) const {
  if (i < 0 || static_cast<size_t>(i) >= nodes.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FleetCluster: no ", what, " ", i, " (there are ", nodes.size(), ")"));
  }
  return absl::OkStatus();
}

absl::Status FleetCluster::WaitZooKeeperServes(int i, absl::Time deadline) {
  Node& node = zookeeper_[static_cast<size_t>(i)];
  ZooKeeperSession session(zookeeper_connect(i));
  if (session.handle() == nullptr) {
    return absl::InternalError(
        ErrnoText("zookeeper_init " + zookeeper_connect(i)));
  }
  std::string last = "no session yet";
  for (;;) {
    if (!Running(&node)) {
      return NodeError(absl::StatusCode::kInternal, node,
                       "exited before it served a client (" + last + ")");
    }
    if (session.Connected()) {
      Stat stat;
      const int rc = zoo_exists(session.handle(), "/", 0, &stat);
      if (rc == ZOK) return absl::OkStatus();
      last = fleet::ZooKeeperStatus(rc, "exists /").ToString();
    }
    if (absl::Now() > deadline) {
      return NodeError(
          absl::StatusCode::kDeadlineExceeded, node,
          "served no client session within the deadline (" + last + ")");
    }
    absl::SleepFor(kPoll);
  }
}

absl::Status FleetCluster::WaitZooKeeperWrites(absl::Time deadline) {
  ZooKeeperSession session(zookeeper_connect());
  if (session.handle() == nullptr) {
    return absl::InternalError(
        ErrnoText("zookeeper_init " + zookeeper_connect()));
  }
  std::string last = "no session yet";
  for (;;) {
    if (session.Connected()) {
      int rc = zoo_create(session.handle(), kReadyZnode, "", 0,
                          &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL, nullptr, 0);
      if (rc == ZOK || rc == ZNODEEXISTS) {
        rc = zoo_delete(session.handle(), kReadyZnode, -1);
        if (rc == ZOK || rc == ZNONODE) return absl::OkStatus();
      }
      last = fleet::ZooKeeperStatus(rc, "create and delete a znode").ToString();
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "ZooKeeper ensemble ", zookeeper_connect(),
          ": no write committed within the deadline (", last, ")"));
    }
    absl::SleepFor(kPoll);
  }
}

absl::Status FleetCluster::WaitNatsServes(int i, absl::Time deadline) {
  Node& node = nats_[static_cast<size_t>(i)];
  std::unique_ptr<NatsSession> session;
  std::string last = "not connected yet";
  for (;;) {
    if (!Running(&node)) {
      return NodeError(absl::StatusCode::kInternal, node,
                       "exited before it served JetStream (" + last + ")");
    }
    if (session == nullptr) {
      auto connected = NatsSession::Connect(nats_url(i));
      if (connected.ok()) {
        session = std::move(*connected);
      } else {
        last = connected.status().ToString();
      }
    }
    if (session != nullptr) {
      jsAccountInfo* info = nullptr;
      jsErrCode jerr = static_cast<jsErrCode>(0);
      const natsStatus s =
          js_GetAccountInfo(&info, session->js(), nullptr, &jerr);
      if (info != nullptr) jsAccountInfo_Destroy(info);
      if (s == NATS_OK) return absl::OkStatus();
      last = fleet::NatsStatus(s, "JetStream account info", jerr).ToString();
      // A connection the server closed is made again.
      if (s == NATS_CONNECTION_CLOSED) session.reset();
    }
    if (absl::Now() > deadline) {
      return NodeError(
          absl::StatusCode::kDeadlineExceeded, node,
          "did not serve JetStream within the deadline (" + last + ")");
    }
    absl::SleepFor(kPoll);
  }
}

absl::Status FleetCluster::WaitNatsStream(absl::Time deadline) {
  std::unique_ptr<NatsSession> session;
  std::string last = "not connected yet";
  bool created = false;
  for (;;) {
    if (session == nullptr) {
      auto connected = NatsSession::Connect(nats_urls());
      if (connected.ok()) {
        session = std::move(*connected);
      } else {
        last = connected.status().ToString();
      }
    }
    if (session != nullptr && !created) {
      jsStreamConfig cfg;
      jsStreamConfig_Init(&cfg);
      const char* subjects[] = {kReadySubject};
      cfg.Name = kReadyStream;
      cfg.Subjects = subjects;
      cfg.SubjectsLen = 1;
      cfg.Storage = js_FileStorage;
      cfg.Replicas = static_cast<int64_t>(nats_.size());
      jsStreamInfo* info = nullptr;
      jsErrCode jerr = static_cast<jsErrCode>(0);
      const natsStatus s =
          js_AddStream(&info, session->js(), &cfg, nullptr, &jerr);
      if (info != nullptr) jsStreamInfo_Destroy(info);
      if (s == NATS_OK || jerr == JSStreamNameExistErr) {
        created = true;
      } else {
        last = fleet::NatsStatus(s,
                                 "create a stream of replicas " +
                                     std::to_string(nats_.size()),
                                 jerr)
                   .ToString();
      }
    }
    if (created) {
      jsPubAck* ack = nullptr;
      jsErrCode jerr = static_cast<jsErrCode>(0);
      const natsStatus s = js_Publish(&ack, session->js(), kReadySubject,
                                      "ready", 5, nullptr, &jerr);
      if (ack != nullptr) jsPubAck_Destroy(ack);
      if (s == NATS_OK) {
        jerr = static_cast<jsErrCode>(0);
        const natsStatus d =
            js_DeleteStream(session->js(), kReadyStream, nullptr, &jerr);
        if (d == NATS_OK || jerr == JSStreamNotFoundErr)
          return absl::OkStatus();
        last = fleet::NatsStatus(d, "delete the stream", jerr).ToString();
      } else {
        last = fleet::NatsStatus(s, "publish to a stream", jerr).ToString();
      }
    }
    for (Node& node : nats_) {
      if (!Running(&node)) {
        return NodeError(
            absl::StatusCode::kInternal, node,
            "exited before the cluster served a stream (" + last + ")");
      }
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("NATS cluster ", nats_urls(),
                       ": no replicated stream within the deadline (", last,
                       "); the end of ", nats_[0].log_path, ":\n",
                       ReadTail(nats_[0].log_path, 3000)));
    }
    absl::SleepFor(kPoll);
  }
}

std::string FleetCluster::zookeeper_connect() const {
  std::vector<std::string> hosts;
  for (const Node& node : zookeeper_) {
    hosts.push_back(absl::StrCat("127.0.0.1:", node.client_port));
  }
  return absl::StrJoin(hosts, ",");
}

std::string FleetCluster::zookeeper_connect(int i) const {
  if (i < 0 || static_cast<size_t>(i) >= zookeeper_.size()) return "";
  return absl::StrCat("127.0.0.1:",
                      zookeeper_[static_cast<size_t>(i)].client_port);
}

std::string FleetCluster::nats_urls() const {
  std::vector<std::string> urls;
  for (const Node& node : nats_) {
    urls.push_back(absl::StrCat("nats://127.0.0.1:", node.client_port));
  }
  return absl::StrJoin(urls, ",");
}

std::string FleetCluster::nats_url(int i) const {
  if (i < 0 || static_cast<size_t>(i) >= nats_.size()) return "";
  return absl::StrCat("nats://127.0.0.1:",
                      nats_[static_cast<size_t>(i)].client_port);
}

std::string FleetCluster::nats_server_name(int i) {
  return absl::StrCat("hq-nats-", i);
}

int FleetCluster::nats_index(const std::string& server_name) const {
  for (size_t k = 0; k < nats_.size(); ++k) {
    if (nats_server_name(static_cast<int>(k)) == server_name) {
      return static_cast<int>(k);
    }
  }
  return -1;
}

absl::Status FleetCluster::KillZooKeeper(int i) {
  HQ_RETURN_IF_ERROR(CheckIndex(zookeeper_, i, "zookeeper node"));
  Node& node = zookeeper_[static_cast<size_t>(i)];
  if (!Running(&node)) {
    return absl::FailedPreconditionError(node.name + " is not running");
  }
  return Kill(&node);
}

absl::Status FleetCluster::StartZooKeeper(int i) {
  HQ_RETURN_IF_ERROR(CheckIndex(zookeeper_, i, "zookeeper node"));
  Node& node = zookeeper_[static_cast<size_t>(i)];
  if (Running(&node)) {
    return absl::FailedPreconditionError(node.name + " is running");
  }
  HQ_RETURN_IF_ERROR(Spawn(&node));
  return WaitZooKeeperServes(i, absl::Now() + options_.start_timeout);
}

absl::Status FleetCluster::StartStoppedZooKeeper() {
  std::vector<int> started;
  for (size_t i = 0; i < zookeeper_.size(); ++i) {
    if (Running(&zookeeper_[i])) continue;
    HQ_RETURN_IF_ERROR(Spawn(&zookeeper_[i]));
    started.push_back(static_cast<int>(i));
  }
  const absl::Time deadline = absl::Now() + options_.start_timeout;
  for (int i : started) HQ_RETURN_IF_ERROR(WaitZooKeeperServes(i, deadline));
  return absl::OkStatus();
}

absl::StatusOr<int> FleetCluster::ZooKeeperLeader() const {
  std::string answers;
  for (size_t k = 0; k < zookeeper_.size(); ++k) {
    const Node& node = zookeeper_[k];
    if (node.pid <= 0) continue;
    auto answer = TcpRequest(node.client_port, "srvr");
    if (!answer.ok()) continue;
    if (answer->find("Mode: leader") != std::string::npos ||
        answer->find("Mode: standalone") != std::string::npos) {
      return static_cast<int>(k);
    }
  }
  return absl::UnavailableError("FleetCluster: no ZooKeeper node leads now");
}

absl::Status FleetCluster::KillNats(int i) {
  HQ_RETURN_IF_ERROR(CheckIndex(nats_, i, "nats-server"));
  Node& node = nats_[static_cast<size_t>(i)];
  if (!Running(&node)) {
    return absl::FailedPreconditionError(node.name + " is not running");
  }
  return Kill(&node);
}

absl::Status FleetCluster::StartNats(int i) {
  HQ_RETURN_IF_ERROR(CheckIndex(nats_, i, "nats-server"));
  Node& node = nats_[static_cast<size_t>(i)];
  if (Running(&node)) {
    return absl::FailedPreconditionError(node.name + " is running");
  }
  HQ_RETURN_IF_ERROR(Spawn(&node));
  return WaitNatsServes(i, absl::Now() + options_.start_timeout);
}

bool FleetCluster::zookeeper_running(int i) {
  if (!CheckIndex(zookeeper_, i, "zookeeper node").ok()) return false;
  return Running(&zookeeper_[static_cast<size_t>(i)]);
}

bool FleetCluster::nats_running(int i) {
  if (!CheckIndex(nats_, i, "nats-server").ok()) return false;
  return Running(&nats_[static_cast<size_t>(i)]);
}

std::string FleetCluster::zookeeper_log(int i, size_t bytes) const {
  if (!CheckIndex(zookeeper_, i, "zookeeper node").ok()) return "";
  return ReadTail(zookeeper_[static_cast<size_t>(i)].log_path, bytes);
}

std::string FleetCluster::nats_log(int i, size_t bytes) const {
  if (!CheckIndex(nats_, i, "nats-server").ok()) return "";
  return ReadTail(nats_[static_cast<size_t>(i)].log_path, bytes);
}

FleetCluster* SharedCluster(const ClusterOptions& options,
                            absl::Status* status) {
  // Destroyed at exit, which stops the nodes and removes the directory.
  static absl::StatusOr<std::unique_ptr<FleetCluster>> cluster =
      FleetCluster::Start(options);
  if (!cluster.ok()) {
    if (status != nullptr) *status = cluster.status();
    return nullptr;
  }
  return cluster->get();
}

}  // namespace hq::test
