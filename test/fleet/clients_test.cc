// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// lib/fleet/clients.h: the C clients' return codes as canonical Status
// codes (what callers act on), with messages that name the operation; NATS
// server lists split as the fleet's options give them.

#include "lib/fleet/clients.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "catch2/catch.hpp"
#include "nats/nats.h"
#include "zookeeper/zookeeper.h"

namespace hq::fleet {
namespace {

using absl::StatusCode;

TEST_CASE("ZooKeeperStatus: codes callers act on", "[fleet]") {
  CHECK(ZooKeeperStatus(ZOK, "create /a").ok());
  const struct {
    int rc;
    StatusCode code;
  } cases[] = {
      {ZNONODE, StatusCode::kNotFound},
      {ZNODEEXISTS, StatusCode::kAlreadyExists},
      {ZBADVERSION, StatusCode::kAborted},
      {ZNOTEMPTY, StatusCode::kFailedPrecondition},
      {ZCONNECTIONLOSS, StatusCode::kUnavailable},
      {ZOPERATIONTIMEOUT, StatusCode::kUnavailable},
      {ZSESSIONEXPIRED, StatusCode::kUnavailable},
      {ZBADARGUMENTS, StatusCode::kInvalidArgument},
      {ZNOAUTH, StatusCode::kPermissionDenied},
      {ZMARSHALLINGERROR, StatusCode::kInternal},
      {-12345, StatusCode::kUnknown},
  };
  for (const auto& c : cases) {
    const absl::Status s = ZooKeeperStatus(c.rc, "create /hq-fleet/x");
    INFO(s.ToString());
    CHECK(s.code() == c.code);
    CHECK(std::string(s.message())
              .starts_with("create /hq-fleet/x: ZooKeeper: "));
    CHECK(std::string(s.message()).ends_with("(" + std::to_string(c.rc) + ")"));
  }
}

TEST_CASE("NatsStatus: codes callers act on; JetStream's code wins",
          "[fleet]") {
  CHECK(NatsStatus(NATS_OK, "publish").ok());
  const struct {
    natsStatus s;
    jsErrCode js;
    StatusCode code;
  } cases[] = {
      {NATS_TIMEOUT, jsErrCode(0), StatusCode::kDeadlineExceeded},
      {NATS_NO_SERVER, jsErrCode(0), StatusCode::kUnavailable},
      {NATS_CONNECTION_CLOSED, jsErrCode(0), StatusCode::kUnavailable},
      {NATS_NO_RESPONDERS, jsErrCode(0), StatusCode::kUnavailable},
      {NATS_INVALID_ARG, jsErrCode(0), StatusCode::kInvalidArgument},
      {NATS_NOT_FOUND, jsErrCode(0), StatusCode::kNotFound},
      {NATS_ILLEGAL_STATE, jsErrCode(0), StatusCode::kFailedPrecondition},
      {NATS_NO_MEMORY, jsErrCode(0), StatusCode::kResourceExhausted},
      {NATS_ERR, JSStreamNotFoundErr, StatusCode::kNotFound},
      {NATS_ERR, JSConsumerNotFoundErr, StatusCode::kNotFound},
      {NATS_ERR, JSStreamNameExistErr, StatusCode::kAlreadyExists},
      {NATS_ERR, JSStreamWrongLastSequenceErr, StatusCode::kAborted},
      {NATS_ERR, JSInsufficientResourcesErr, StatusCode::kResourceExhausted},
      {NATS_ERR, JSClusterNotAvailErr, StatusCode::kUnavailable},
      {NATS_ERR, JSNotEnabledErr, StatusCode::kFailedPrecondition},
      {NATS_ERR, jsErrCode(0), StatusCode::kUnknown},
  };
  for (const auto& c : cases) {
    const absl::Status s = NatsStatus(c.s, "add stream HQF_x", c.js);
    INFO(s.ToString());
    CHECK(s.code() == c.code);
    CHECK(std::string(s.message()).starts_with("add stream HQF_x: NATS: "));
    if (c.js != 0) {
      CHECK(std::string(s.message())
                .find("JetStream error " + std::to_string(static_cast<int>(
                                               c.js))) != std::string::npos);
    }
  }
}

TEST_CASE("SplitNatsUrls and SetNatsServers take a comma-separated list",
          "[fleet]") {
  CHECK(SplitNatsUrls("nats://a:1") == std::vector<std::string>{"nats://a:1"});
  CHECK(SplitNatsUrls(" nats://a:1 , nats://b:2,,") ==
        std::vector<std::string>{"nats://a:1", "nats://b:2"});
  CHECK(SplitNatsUrls(" , ").empty());

  natsOptions* opts = nullptr;
  REQUIRE(natsOptions_Create(&opts) == NATS_OK);
  CHECK(SetNatsServers(opts, "nats://127.0.0.1:1,nats://127.0.0.1:2") ==
        NATS_OK);
  CHECK(SetNatsServers(opts, "") == NATS_INVALID_ARG);
  natsOptions_Destroy(opts);
}

}  // namespace
}  // namespace hq::fleet
