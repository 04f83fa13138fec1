// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Small helpers around the ZooKeeper and NATS C clients.
//
// Their return codes as absl::Status, with canonical codes a caller acts on
// (absl/status/status.h):
//   Unavailable         the service did not answer or the connection was
//                       lost (a retry may succeed: the operation may or may
//                       not have happened)
//   DeadlineExceeded    NATS: no answer within the request's timeout
//   NotFound            no such znode, stream or consumer
//   AlreadyExists       the znode or stream exists
//   Aborted             a conditional write lost (ZooKeeper's bad version,
//                       JetStream's wrong last sequence)
//   FailedPrecondition  the state forbids it (a non-empty znode, a handle
//                       or connection closed, JetStream not enabled)
//   InvalidArgument     a bad path, subject or argument
//   ResourceExhausted   out of memory, or JetStream out of resources
//   PermissionDenied / Unauthenticated, Internal, Unimplemented, Unknown
// The message is "<what>: <client's text> (<code>)", so that it names the
// operation; callers decide on the code, never on the text.

#ifndef HQ_LIB_FLEET_CLIENTS_H_
#define HQ_LIB_FLEET_CLIENTS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "nats/nats.h"

namespace hq::fleet {

// A ZooKeeper C client return code (ZOK, ZNONODE, ...; zookeeper.h's
// ZOO_ERRORS) as a Status. OK for ZOK.
absl::Status ZooKeeperStatus(int rc, std::string_view what);

// A NATS C client status, and for JetStream calls the server's error code
// (jsErrCode, 0 when there is none), as a Status; the text is the client's
// last error of this thread when it has one (nats_GetLastError). OK for
// NATS_OK.
absl::Status NatsStatus(natsStatus s, std::string_view what,
                        jsErrCode js_error = static_cast<jsErrCode>(0));

// The URLs of a comma-separated list ("nats://h1:4222,nats://h2:4222";
// blanks around the commas are dropped), and the same given to the client's
// options (natsOptions_SetServers: nats.c takes no list in one URL).
// NATS_INVALID_ARG for a list with no URL.
std::vector<std::string> SplitNatsUrls(std::string_view urls);
natsStatus SetNatsServers(natsOptions* options, std::string_view urls);

// Whether `fleet` is a valid fleet name: 1..64 of [A-Za-z0-9_-]
// (AgentOptions::fleet; it names a znode and a JetStream stream).
bool ValidFleetName(std::string_view fleet);

}  // namespace hq::fleet

#endif  // HQ_LIB_FLEET_CLIENTS_H_
