// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/fleet/clients.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "zookeeper/zookeeper.h"

namespace hq::fleet {
namespace {

absl::StatusCode ZooKeeperCode(int rc) {
  switch (rc) {
    case ZOK:
      return absl::StatusCode::kOk;
    case ZNONODE:
    case ZNOWATCHER:
      return absl::StatusCode::kNotFound;
    case ZNODEEXISTS:
      return absl::StatusCode::kAlreadyExists;
    case ZBADVERSION:
      return absl::StatusCode::kAborted;
    case ZNOTEMPTY:
    case ZNOCHILDRENFOREPHEMERALS:
    case ZEPHEMERALONLOCALSESSION:
    case ZRECONFIGDISABLED:
    case ZINVALIDSTATE:
    case ZCLOSING:
      return absl::StatusCode::kFailedPrecondition;
    case ZCONNECTIONLOSS:
    case ZOPERATIONTIMEOUT:
    case ZSESSIONEXPIRED:
    case ZSESSIONMOVED:
    case ZNEWCONFIGNOQUORUM:
    case ZRECONFIGINPROGRESS:
    case ZTHROTTLEDOP:
      return absl::StatusCode::kUnavailable;
    case ZBADARGUMENTS:
    case ZINVALIDACL:
    case ZINVALIDCALLBACK:
      return absl::StatusCode::kInvalidArgument;
    case ZNOAUTH:
      return absl::StatusCode::kPermissionDenied;
    case ZAUTHFAILED:
      return absl::StatusCode::kUnauthenticated;
    case ZUNIMPLEMENTED:
      return absl::StatusCode::kUnimplemented;
    case ZSYSTEMERROR:
    case ZRUNTIMEINCONSISTENCY:
    case ZDATAINCONSISTENCY:
    case ZMARSHALLINGERROR:
    case ZAPIERROR:
      return absl::StatusCode::kInternal;
    default:
      return absl::StatusCode::kUnknown;
  }
}

absl::StatusCode NatsCode(natsStatus s) {
  switch (s) {
    case NATS_OK:
      return absl::StatusCode::kOk;
    case NATS_TIMEOUT:
      return absl::StatusCode::kDeadlineExceeded;
    case NATS_IO_ERROR:
    case NATS_CONNECTION_CLOSED:
    case NATS_NO_SERVER:
    case NATS_STALE_CONNECTION:
    case NATS_CONNECTION_DISCONNECTED:
    case NATS_NOT_YET_CONNECTED:
    case NATS_DRAINING:
    case NATS_NO_RESPONDERS:
    case NATS_MISSED_HEARTBEAT:
      return absl::StatusCode::kUnavailable;
    case NATS_NOT_FOUND:
      return absl::StatusCode::kNotFound;
    case NATS_ADDRESS_MISSING:
    case NATS_INVALID_SUBJECT:
    case NATS_INVALID_ARG:
    case NATS_INVALID_SUBSCRIPTION:
    case NATS_INVALID_TIMEOUT:
    case NATS_INVALID_QUEUE_NAME:
    case NATS_MAX_PAYLOAD:
      return absl::StatusCode::kInvalidArgument;
    case NATS_ILLEGAL_STATE:
    case NATS_NOT_PERMITTED:
    case NATS_MISMATCH:
    case NATS_NOT_INITIALIZED:
    case NATS_SECURE_CONNECTION_WANTED:
    case NATS_SECURE_CONNECTION_REQUIRED:
    case NATS_NO_SERVER_SUPPORT:
      return absl::StatusCode::kFailedPrecondition;
    case NATS_CONNECTION_AUTH_FAILED:
      return absl::StatusCode::kUnauthenticated;
    case NATS_NO_MEMORY:
    case NATS_SLOW_CONSUMER:
    case NATS_MAX_DELIVERED_MSGS:
    case NATS_INSUFFICIENT_BUFFER:
      return absl::StatusCode::kResourceExhausted;
    case NATS_PROTOCOL_ERROR:
    case NATS_LINE_TOO_LONG:
    case NATS_SYS_ERROR:
    case NATS_FAILED_TO_INITIALIZE:
    case NATS_SSL_ERROR:
      return absl::StatusCode::kInternal;
    default:
      return absl::StatusCode::kUnknown;
  }
}

// The JetStream errors whose code says more than the client's status.
absl::StatusCode JetStreamCode(jsErrCode e, absl::StatusCode otherwise) {
  switch (e) {
    case JSStreamNotFoundErr:
    case JSConsumerNotFoundErr:
    case JSNoMessageFoundErr:
      return absl::StatusCode::kNotFound;
    case JSStreamNameExistErr:
      return absl::StatusCode::kAlreadyExists;
    case JSStreamWrongLastSequenceErr:
    case JSStreamWrongLastMsgIDErr:
      return absl::StatusCode::kAborted;
    case JSInsufficientResourcesErr:
    case JSAccountResourcesExceededErr:
    case JSStorageResourcesExceededErr:
    case JSMemoryResourcesExceededErr:
      return absl::StatusCode::kResourceExhausted;
    case JSClusterNoPeersErr:
    case JSClusterNotAvailErr:
    case JSClusterNotLeaderErr:
    case JSStreamOfflineErr:
      return absl::StatusCode::kUnavailable;
    case JSNotEnabledErr:
    case JSNotEnabledForAccountErr:
      return absl::StatusCode::kFailedPrecondition;
    default:
      return otherwise;
  }
}

}  // namespace

absl::Status ZooKeeperStatus(int rc, std::string_view what) {
  if (rc == ZOK) return absl::OkStatus();
  const char* text = zerror(rc);
  return absl::Status(
      ZooKeeperCode(rc),
      absl::StrCat(absl::string_view(what.data(), what.size()), ": ZooKeeper: ",
                   text != nullptr ? text : "unknown error", " (", rc, ")"));
}

absl::Status NatsStatus(natsStatus s, std::string_view what,
                        jsErrCode js_error) {
  if (s == NATS_OK) return absl::OkStatus();
  natsStatus last = NATS_OK;
  const char* last_text = nats_GetLastError(&last);
  std::string text = natsStatus_GetText(s);
  if (last == s && last_text != nullptr && *last_text != '\0') {
    text = last_text;
  }
  std::string message =
      absl::StrCat(absl::string_view(what.data(), what.size()),
                   ": NATS: ", text, " (", static_cast<int>(s));
  if (js_error != 0)
    absl::StrAppend(&message, ", JetStream error ", static_cast<int>(js_error));
  absl::StrAppend(&message, ")");
  return absl::Status(JetStreamCode(js_error, NatsCode(s)), message);
}

std::vector<std::string> SplitNatsUrls(std::string_view urls) {
  std::vector<std::string> out;
  for (absl::string_view part :
       absl::StrSplit(absl::string_view(urls.data(), urls.size()), ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (!part.empty()) out.emplace_back(part);
  }
  return out;
}

natsStatus SetNatsServers(natsOptions* options, std::string_view urls) {
  const std::vector<std::string> list = SplitNatsUrls(urls);
  if (list.empty()) return NATS_INVALID_ARG;
  std::vector<const char*> servers;
  for (const std::string& url : list) servers.push_back(url.c_str());
  return natsOptions_SetServers(options, servers.data(),
                                static_cast<int>(servers.size()));
}

bool ValidFleetName(std::string_view fleet) {
  if (fleet.empty() || fleet.size() > 64) return false;
  for (char c : fleet) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace hq::fleet
