// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "bench/redis_peer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "lib/util/status_macros.h"

namespace hq::bench {
namespace {

// A port the kernel says is free on 127.0.0.1 now (a race with other
// processes is possible and then shows as Start's Unavailable).
absl::StatusOr<int> FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    return absl::InternalError("cannot find a free loopback port");
  }
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

std::string RedisServer::FindBinary() {
  std::vector<std::string> dirs;
  if (const char* path = std::getenv("PATH"); path != nullptr) {
    for (absl::string_view d : absl::StrSplit(path, ':', absl::SkipEmpty())) {
      dirs.emplace_back(d);
    }
  }
  dirs.push_back("/usr/bin");
  dirs.push_back("/usr/sbin");
  for (const std::string& d : dirs) {
    const std::string candidate = d + "/redis-server";
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

absl::StatusOr<std::unique_ptr<RedisServer>> RedisServer::Start(
    const std::string& dir, bool fsync_always) {
  const std::string binary = FindBinary();
  if (binary.empty()) {
    return absl::NotFoundError(
        "redis-server is not installed (Debian: apt-get install "
        "redis-server)");
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot create ", dir, ": ", ec.message()));
  }
  HQ_ASSIGN_OR_RETURN(const int port, FreeLoopbackPort());
  const std::string port_s = absl::StrCat(port);
  const std::string log = dir + "/redis.log";
  std::vector<std::string> args = {binary,
                                   "--port",
                                   port_s,
                                   "--bind",
                                   "127.0.0.1",
                                   "--protected-mode",
                                   "yes",
                                   "--dir",
                                   dir,
                                   "--logfile",
                                   log,
                                   "--daemonize",
                                   "no",
                                   "--save",
                                   "",
                                   "--appendonly",
                                   "yes",
                                   "--appendfsync",
                                   fsync_always ? "always" : "no"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) return absl::InternalError("fork() failed");
  if (pid == 0) {
    // The child: quiet, in its own process group (a Ctrl-C of the bench
    // reaches the bench, whose destructor stops the server), and ended if
    // the bench dies without stopping it.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    const int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDOUT_FILENO);
    }
    execv(argv[0], argv.data());
    _exit(127);
  }
  std::unique_ptr<RedisServer> server(new RedisServer(pid, port));
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < give_up) {
    absl::StatusOr<std::unique_ptr<RedisClient>> c = RedisClient::Connect(port);
    if (c.ok()) {
      absl::StatusOr<RespValue> pong = (*c)->Command({"PING"});
      if (pong.ok() && pong->str == "PONG") {
        absl::StatusOr<RespValue> info = (*c)->Command({"INFO", "server"});
        if (info.ok()) {
          for (absl::string_view line : absl::StrSplit(info->str, "\r\n")) {
            if (absl::ConsumePrefix(&line, "redis_version:")) {
              server->version_ = std::string(line);
            }
          }
        }
        return server;
      }
    }
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      return absl::UnavailableError(absl::StrCat(
          "redis-server exited at start (status ", status, "); see ", log));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::UnavailableError(absl::StrCat(
      "redis-server did not answer on port ", port, " in 10 s; see ", log));
}

RedisServer::~RedisServer() {
  kill(pid_, SIGTERM);
  for (int i = 0; i < 1000; ++i) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
}

absl::StatusOr<std::unique_ptr<RedisClient>> RedisClient::Connect(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::UnavailableError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrCat("connect 127.0.0.1:", port, ": ", std::strerror(err)));
  }
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return std::unique_ptr<RedisClient>(new RedisClient(fd));
}

RedisClient::~RedisClient() { close(fd_); }

void RedisClient::Append(const std::vector<std::string_view>& args) {
  absl::StrAppend(&out_, "*", args.size(), "\r\n");
  for (std::string_view a : args) {
    absl::StrAppend(&out_, "$", a.size(), "\r\n");
    out_.append(a.data(), a.size());
    out_.append("\r\n");
  }
  ++pending_;
}

absl::Status RedisClient::Flush(std::vector<RespValue>* replies) {
  replies->clear();
  size_t sent = 0;
  while (sent < out_.size()) {
    const ssize_t n =
        send(fd_, out_.data() + sent, out_.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      return absl::UnavailableError(
          absl::StrCat("redis send: ", std::strerror(errno)));
    }
    sent += static_cast<size_t>(n);
  }
  out_.clear();
  const size_t expected = pending_;
  pending_ = 0;
  replies->resize(expected);
  for (RespValue& v : *replies) HQ_RETURN_IF_ERROR(ReadReply(&v));
  return absl::OkStatus();
}

absl::StatusOr<RespValue> RedisClient::Command(
    const std::vector<std::string_view>& args) {
  Append(args);
  std::vector<RespValue> replies;
  HQ_RETURN_IF_ERROR(Flush(&replies));
  if (replies[0].type == RespValue::Type::kError) {
    return absl::InternalError(absl::StrCat("redis: ", replies[0].str));
  }
  return std::move(replies[0]);
}

absl::Status RedisClient::Fill() {
  if (in_pos_ > 0 && in_pos_ == in_.size()) {
    in_.clear();
    in_pos_ = 0;
  } else if (in_pos_ > (size_t{1} << 20)) {
    in_.erase(0, in_pos_);
    in_pos_ = 0;
  }
  char buf[64 * 1024];
  for (;;) {
    const ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      return absl::UnavailableError(
          absl::StrCat("redis recv: ", std::strerror(errno)));
    }
    if (n == 0) return absl::UnavailableError("redis closed the connection");
    in_.append(buf, static_cast<size_t>(n));
    return absl::OkStatus();
  }
}

absl::StatusOr<std::string_view> RedisClient::ReadLine() {
  for (;;) {
    const size_t end = in_.find("\r\n", in_pos_);
    if (end != std::string::npos) {
      std::string_view line(in_.data() + in_pos_, end - in_pos_);
      in_pos_ = end + 2;
      return line;
    }
    HQ_RETURN_IF_ERROR(Fill());
  }
}

absl::Status RedisClient::ReadReply(RespValue* v) {
  HQ_ASSIGN_OR_RETURN(std::string_view line, ReadLine());
  if (line.empty()) return absl::InternalError("redis: empty reply line");
  const char kind = line[0];
  const absl::string_view rest(line.data() + 1, line.size() - 1);
  switch (kind) {
    case '+':
      v->type = RespValue::Type::kString;
      v->str = std::string(rest);
      return absl::OkStatus();
    case '-':
      v->type = RespValue::Type::kError;
      v->str = std::string(rest);
      return absl::OkStatus();
    case ':':
      v->type = RespValue::Type::kInteger;
      if (!absl::SimpleAtoi(rest, &v->integer)) break;
      return absl::OkStatus();
    case '$': {
      int64_t len = 0;
      if (!absl::SimpleAtoi(rest, &len) || len < -1) break;
      if (len == -1) {
        v->type = RespValue::Type::kNil;
        return absl::OkStatus();
      }
      const size_t need = static_cast<size_t>(len) + 2;
      while (in_.size() - in_pos_ < need) HQ_RETURN_IF_ERROR(Fill());
      v->type = RespValue::Type::kString;
      v->str.assign(in_, in_pos_, static_cast<size_t>(len));
      in_pos_ += need;
      return absl::OkStatus();
    }
    case '*': {
      int64_t len = 0;
      if (!absl::SimpleAtoi(rest, &len) || len < -1) break;
      if (len == -1) {
        v->type = RespValue::Type::kNil;
        return absl::OkStatus();
      }
      v->type = RespValue::Type::kArray;
      v->array.resize(static_cast<size_t>(len));
      for (RespValue& e : v->array) HQ_RETURN_IF_ERROR(ReadReply(&e));
      return absl::OkStatus();
    }
    default:
      break;
  }
  return absl::InternalError(
      absl::StrCat("redis: not a RESP2 reply: '", rest, "'"));
}

}  // namespace hq::bench
