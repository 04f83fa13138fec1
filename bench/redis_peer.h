// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The Redis Streams peer of hq_bench: a redis-server the bench starts itself
// on a free loopback port, and a minimal pipelining RESP2 client for it. No
// client library: the protocol (https://redis.io/docs/reference/protocol-
// spec/) is small, and the bench needs only commands and their replies.

#ifndef HQ_BENCH_REDIS_PEER_H_
#define HQ_BENCH_REDIS_PEER_H_

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace hq::bench {

// A redis-server child process, stopped (SIGTERM, then SIGKILL after 10 s)
// and reaped when destroyed.
class RedisServer {
 public:
  // How the server persists writes, to match hq's PutOptions::sync:
  // false: appendonly with appendfsync no (every write reaches the OS, as a
  // LevelDB log write without fsync does); true: appendfsync always.
  // Errors: NotFound if no redis-server is installed (searched on PATH, then
  // /usr/bin and /usr/sbin); Unavailable if it did not answer PING within
  // 10 s (its log is dir/redis.log).
  static absl::StatusOr<std::unique_ptr<RedisServer>> Start(
      const std::string& dir, bool fsync_always);

  // The redis-server binary Start would run, or "" if none is installed.
  static std::string FindBinary();

  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const { return port_; }
  const std::string& version() const { return version_; }

 private:
  RedisServer(pid_t pid, int port) : pid_(pid), port_(port) {}

  const pid_t pid_;
  const int port_;
  std::string version_;
};

// One RESP2 reply.
struct RespValue {
  enum class Type { kString, kError, kInteger, kNil, kArray };
  Type type = Type::kNil;
  std::string str;  // kString (simple or bulk), kError.
  int64_t integer = 0;
  std::vector<RespValue> array;
};

// A connection to 127.0.0.1:port. Commands are buffered by Append and sent
// together by Flush, which reads one reply per command: a pipeline, one
// round trip for the lot. Not thread-safe.
class RedisClient {
 public:
  // Errors: Unavailable if the connection fails.
  static absl::StatusOr<std::unique_ptr<RedisClient>> Connect(int port);
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Buffers one command.
  void Append(const std::vector<std::string_view>& args);

  // Sends the buffered commands and reads their replies into `*replies`
  // (cleared first). A reply of type kError is returned as a reply, not as
  // an error. Errors: Unavailable (connection lost), Internal (a reply that
  // is not RESP2).
  absl::Status Flush(std::vector<RespValue>* replies);

  // One command, one reply; a kError reply becomes an Internal error.
  absl::StatusOr<RespValue> Command(const std::vector<std::string_view>& args);

 private:
  explicit RedisClient(int fd) : fd_(fd) {}
  absl::Status Fill();  // Reads more bytes into in_.
  absl::StatusOr<std::string_view> ReadLine();
  absl::Status ReadReply(RespValue* v);

  const int fd_;
  std::string out_;     // Buffered commands.
  size_t pending_ = 0;  // Commands in out_.
  std::string in_;      // Bytes read, not yet parsed, from in_pos_.
  size_t in_pos_ = 0;
};

}  // namespace hq::bench

#endif  // HQ_BENCH_REDIS_PEER_H_
