// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// What handoff.cc and handoff_read.cc share: the connection of a Handoff
// and its feeds, and the consumer names. Internal to lib/fleet.

#ifndef HQ_LIB_FLEET_HANDOFF_SHARED_H_
#define HQ_LIB_FLEET_HANDOFF_SHARED_H_

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "lib/fleet/handoff.h"
#include "nats/nats.h"

namespace hq::fleet {

// A duration as nats.c's milliseconds, at least 1 (0 means no wait).
inline int64_t Millis(absl::Duration d) {
  return std::max<int64_t>(1, absl::ToInt64Milliseconds(d));
}

// Parses a consumer name u<p>e<epoch>; false for any other name.
bool ParseConsumerName(std::string_view name, uint32_t* p, uint64_t* epoch);

inline std::string ConsumerName(uint32_t p, uint64_t epoch) {
  return absl::StrCat("u", p, "e", epoch);
}

// Records of a consumer's subject not yet acked: not delivered, and
// delivered and waiting for an ack.
inline uint64_t Unacked(const jsConsumerInfo& ci) {
  return ci.NumPending +
         static_cast<uint64_t>(std::max<int64_t>(0, ci.NumAckPending));
}

// The connection and the JetStream context for management calls, shared by
// the Handoff and its feeds: the last one to go closes the connection.
struct PartitionFeed::Shared {
  HandoffOptions options;
  std::string stream;
  natsConnection* nc = nullptr;
  jsCtx* js = nullptr;  // Thread-safe for API calls (not async publish).

  ~Shared() {
    if (js != nullptr) jsCtx_Destroy(js);
    if (nc != nullptr) {
      natsConnection_Close(nc);
      natsConnection_Destroy(nc);
    }
  }

  jsOptions ApiOptions() const {
    jsOptions o;
    jsOptions_Init(&o);
    o.Wait = Millis(options.request_timeout);
    return o;
  }

  bool Connected() const {
    return natsConnection_Status(nc) == NATS_CONN_STATUS_CONNECTED;
  }
};

}  // namespace hq::fleet

#endif  // HQ_LIB_FLEET_HANDOFF_SHARED_H_
