// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A thin wrapper over one ZooKeeper C client session (zookeeper_mt): RAII,
// absl::Status for return codes, watches delivered as one callback. The
// client library owns connection, reconnection and the session; this class
// owns nothing else.

#ifndef HQ_LIB_FLEET_ZK_H_
#define HQ_LIB_FLEET_ZK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

typedef struct _zhandle zhandle_t;

namespace hq::fleet {

struct ZkNode {
  std::string data;
  int32_t version = 0;
  int64_t ephemeral_owner = 0;  // The session id of an ephemeral node's owner.
};

class ZkSession {
 public:
  // Called from the client's event thread on every watch and session event.
  // Must not block or call back into the session.
  using EventFn = std::function<void()>;

  // Opens a session to `hosts` ("h:p,h:p") and waits until it is connected.
  // Unavailable when no server answered within `connect_deadline`.
  static absl::StatusOr<std::unique_ptr<ZkSession>> Connect(
      const std::string& hosts, absl::Duration session_timeout,
      absl::Duration connect_deadline, EventFn on_event);

  ~ZkSession();  // Closes the session: its ephemeral nodes go at once.
  ZkSession(const ZkSession&) = delete;
  ZkSession& operator=(const ZkSession&) = delete;

  // The server expired the session: nothing on it works any more.
  bool expired() const;
  int64_t session_id() const;
  absl::Duration negotiated_timeout() const;

  // Every call maps the client's return code as lib/fleet/clients.h does:
  // ZNONODE NotFound, ZNODEEXISTS AlreadyExists, ZBADVERSION Aborted,
  // connection loss, timeouts and an expired session Unavailable.
  // `flags`: 0, ZOO_EPHEMERAL, ZOO_SEQUENCE or both. Returns the path made.
  absl::StatusOr<std::string> Create(const std::string& path,
                                     std::string_view data, int flags);
  // Creates `path` and its parents as persistent nodes if missing.
  absl::Status EnsurePath(const std::string& path);
  // `watch`: the EventFn fires once when the node changes or goes.
  absl::StatusOr<ZkNode> Get(const std::string& path, bool watch);
  // Whether `path` exists; if so *node (if not null) gets its version and
  // ephemeral owner, and no data.
  absl::StatusOr<bool> Exists(const std::string& path, ZkNode* node);
  absl::StatusOr<std::vector<std::string>> Children(const std::string& path,
                                                    bool watch);
  absl::Status Delete(const std::string& path, int32_t version = -1);
  // Waits (up to `deadline`) until the server this session reads from has
  // every write committed before the call (zoo_async's sync).
  absl::Status Sync(const std::string& path, absl::Duration deadline);
  // One transaction: `check_path` still exists (any version), and `path`
  // has `version`; then sets `path` to `data`. Aborted when either check
  // failed; nothing is written then.
  absl::Status CheckAndSet(const std::string& check_path,
                           const std::string& path, std::string_view data,
                           int32_t version);

 private:
  ZkSession() = default;
  static void Watcher(zhandle_t* zh, int type, int state, const char* path,
                      void* ctx);

  zhandle_t* zh_ = nullptr;
  EventFn on_event_;
};

}  // namespace hq::fleet

#endif  // HQ_LIB_FLEET_ZK_H_
