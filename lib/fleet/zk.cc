// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/fleet/zk.h"

#include <zookeeper/zookeeper.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/fleet/clients.h"
#include "lib/util/strings.h"
#include "lib/util/sync.h"

namespace hq::fleet {
namespace {

absl::Status FromZk(int rc, std::string_view what, std::string_view path) {
  return ZooKeeperStatus(rc,
                         absl::StrCat("ZooKeeper ", Av(what), " ", Av(path)));
}

// The client's own log lines go nowhere unless HQ_FLEET_ZK_LOG is set (to
// anything): a test that kills servers would otherwise fill stderr.
void ZkLog(const char* message) {
  static const bool kShow = std::getenv("HQ_FLEET_ZK_LOG") != nullptr;
  if (kShow) std::fprintf(stderr, "zookeeper: %s\n", message);
}

struct SyncWait {
  Mutex mu;
  CondVar cv;
  bool done ABSL_GUARDED_BY(mu) = false;
  int rc ABSL_GUARDED_BY(mu) = ZOK;
};

void SyncDone(int rc, const char* /*value*/, const void* data) {
  auto* holder =
      static_cast<std::shared_ptr<SyncWait>*>(const_cast<void*>(data));
  {
    MutexLock l(&(*holder)->mu);
    (*holder)->done = true;
    (*holder)->rc = rc;
    (*holder)->cv.SignalAll();
  }
  delete holder;
}

}  // namespace

void ZkSession::Watcher(zhandle_t* /*zh*/, int /*type*/, int /*state*/,
                        const char* /*path*/, void* ctx) {
  auto* self = static_cast<ZkSession*>(ctx);
  if (self != nullptr && self->on_event_) self->on_event_();
}

absl::StatusOr<std::unique_ptr<ZkSession>> ZkSession::Connect(
    const std::string& hosts, absl::Duration session_timeout,
    absl::Duration connect_deadline, EventFn on_event) {
  std::unique_ptr<ZkSession> s(new ZkSession);
  s->on_event_ = std::move(on_event);
  zoo_set_debug_level(ZOO_LOG_LEVEL_WARN);
  s->zh_ = zookeeper_init2(
      hosts.c_str(), &ZkSession::Watcher,
      static_cast<int>(absl::ToInt64Milliseconds(session_timeout)), nullptr,
      s.get(), 0, &ZkLog);
  if (s->zh_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("ZooKeeper: cannot start a client for \"", hosts, "\""));
  }
  const absl::Time end = absl::Now() + connect_deadline;
  while (zoo_state(s->zh_) != ZOO_CONNECTED_STATE) {
    if (absl::Now() > end || zoo_state(s->zh_) == ZOO_EXPIRED_SESSION_STATE) {
      return absl::UnavailableError(absl::StrCat(
          "ZooKeeper: no server of \"", hosts, "\" answered within ",
          absl::FormatDuration(connect_deadline)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return s;
}

ZkSession::~ZkSession() {
  if (zh_ != nullptr) zookeeper_close(zh_);
}

bool ZkSession::expired() const {
  return zoo_state(zh_) == ZOO_EXPIRED_SESSION_STATE;
}

int64_t ZkSession::session_id() const { return zoo_client_id(zh_)->client_id; }

absl::Duration ZkSession::negotiated_timeout() const {
  return absl::Milliseconds(zoo_recv_timeout(zh_));
}

absl::StatusOr<std::string> ZkSession::Create(const std::string& path,
                                              std::string_view data,
                                              int flags) {
  std::string made(path.size() + 32, '\0');
  int rc = zoo_create(zh_, path.c_str(), data.data(),
                      static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE,
                      flags, made.data(), static_cast<int>(made.size()));
  if (rc != ZOK) return FromZk(rc, "create", path);
  made.resize(made.find('\0'));
  return made;
}

absl::Status ZkSession::EnsurePath(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string prefix = path.substr(0, slash);
    absl::StatusOr<std::string> made = Create(prefix, "", 0);
    if (!made.ok() && !absl::IsAlreadyExists(made.status())) {
      return made.status();
    }
    if (slash == std::string::npos) return absl::OkStatus();
  }
}

absl::StatusOr<ZkNode> ZkSession::Get(const std::string& path, bool watch) {
  // One read into a buffer that fits the records hq keeps; a larger node is
  // read again into a buffer of its size (it may grow meanwhile: again).
  std::string buf(64 * 1024, '\0');
  for (;;) {
    int len = static_cast<int>(buf.size());
    struct Stat stat;
    int rc = watch ? zoo_wget(zh_, path.c_str(), &ZkSession::Watcher, this,
                              buf.data(), &len, &stat)
                   : zoo_get(zh_, path.c_str(), 0, buf.data(), &len, &stat);
    if (rc != ZOK) return FromZk(rc, "get", path);
    if (stat.dataLength > static_cast<int32_t>(buf.size())) {
      buf.resize(static_cast<size_t>(stat.dataLength));
      continue;
    }
    buf.resize(len < 0 ? 0 : static_cast<size_t>(len));
    return ZkNode{.data = std::move(buf),
                  .version = stat.version,
                  .ephemeral_owner = stat.ephemeralOwner};
  }
}

absl::StatusOr<bool> ZkSession::Exists(const std::string& path, ZkNode* node) {
  struct Stat stat;
  int rc = zoo_exists(zh_, path.c_str(), 0, &stat);
  if (rc == ZNONODE) return false;
  if (rc != ZOK) return FromZk(rc, "exists", path);
  if (node != nullptr) {
    node->data.clear();
    node->version = stat.version;
    node->ephemeral_owner = stat.ephemeralOwner;
  }
  return true;
}

absl::StatusOr<std::vector<std::string>> ZkSession::Children(
    const std::string& path, bool watch) {
  struct String_vector names = {0, nullptr};
  int rc = watch ? zoo_wget_children(zh_, path.c_str(), &ZkSession::Watcher,
                                     this, &names)
                 : zoo_get_children(zh_, path.c_str(), 0, &names);
  if (rc != ZOK) return FromZk(rc, "children of", path);
  std::vector<std::string> out(names.data, names.data + names.count);
  deallocate_String_vector(&names);
  return out;
}

absl::Status ZkSession::Delete(const std::string& path, int32_t version) {
  return FromZk(zoo_delete(zh_, path.c_str(), version), "delete", path);
}

absl::Status ZkSession::Sync(const std::string& path, absl::Duration deadline) {
  auto wait = std::make_shared<SyncWait>();
  auto* holder = new std::shared_ptr<SyncWait>(wait);
  int rc = zoo_async(zh_, path.c_str(), &SyncDone, holder);
  if (rc != ZOK) {
    delete holder;
    return FromZk(rc, "sync", path);
  }
  const absl::Time end = absl::Now() + deadline;
  MutexLock l(&wait->mu);
  while (!wait->done) {
    const absl::Duration left = end - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::UnavailableError(
          absl::StrCat("ZooKeeper sync ", path, ": no answer within ",
                       absl::FormatDuration(deadline)));
    }
    wait->cv.WaitWithTimeout(&wait->mu, left);
  }
  return FromZk(wait->rc, "sync", path);
}

absl::Status ZkSession::CheckAndSet(const std::string& check_path,
                                    const std::string& path,
                                    std::string_view data, int32_t version) {
  zoo_op_t ops[2];
  zoo_op_result_t results[2];
  struct Stat stat;
  zoo_check_op_init(&ops[0], check_path.c_str(), -1);
  zoo_set_op_init(&ops[1], path.c_str(), data.data(),
                  static_cast<int>(data.size()), version, &stat);
  int rc = zoo_multi(zh_, 2, ops, results);
  if (rc == ZNONODE || rc == ZBADVERSION) {
    return absl::AbortedError(
        absl::StrCat("ZooKeeper: ", check_path, " is gone or ", path,
                     " changed meanwhile (", zerror(rc), ")"));
  }
  return FromZk(rc, "multi on", path);
}

}  // namespace hq::fleet
