// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The live status file: what the process that has a Db open sees of its
// consumer groups and subscriptions, published every
// Options::status_interval (hq/options.h) as the file kLiveStatusFile of
// the Db's directory, for the hq tool to read while that process holds the
// Db (doc/format.md, "Live status file").
//
// The file is written whole beside its final name and renamed over it, so
// a reader sees one complete publication or the one before; it is not
// synced (it describes memory, and a crash makes it stale, which its pid and
// time say). Decode checks its magic, version, checksum and every field.

#ifndef HQ_LIB_FORMAT_LIVE_STATUS_H_
#define HQ_LIB_FORMAT_LIVE_STATUS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hq/export.h"
#include "hq/group.h"
#include "hq/subscription.h"

namespace hq {

inline constexpr char kLiveStatusFile[] = "hq-status";
// Pending tasks published per group, at most (ListPending's first page).
inline constexpr size_t kLiveStatusPending = 1000;
// Consumers published per ordered group, at most.
inline constexpr size_t kLiveStatusConsumers = 10000;

struct LiveGroupStatus {
  std::string queue;
  std::string name;
  GroupStats stats;
  // Tasks handed out and completed per second since the last publication
  // of the status timer, or since the group's load if it came later.
  double claimed_per_s = 0;
  double completed_per_s = 0;
  // Tasks handed out and completed since the group was loaded.
  uint64_t claimed_total = 0;
  uint64_t completed_total = 0;
  // ListPending's first kLiveStatusPending tasks; `pending_complete` says
  // whether that is all of them.
  std::vector<PendingTask> pending;
  bool pending_complete = true;
  // Ordered groups: the live consumers (ConsumerGroup::Consumers), at most
  // kLiveStatusConsumers. Empty for other groups.
  std::vector<ConsumerInfo> consumers;
};

struct LiveSubscriptionStatus {
  std::string queue;
  std::string name;
  uint64_t lag = 0;
  bool lag_exact = true;
  uint64_t delivered = 0;
  uint64_t failed_attempts = 0;
  uint64_t buffered = 0;
  uint32_t listeners = 0;
  // Lanes in memory, and of them those in the working set (the owner's
  // SubscriptionStats::resident_lanes and active_lanes).
  uint64_t resident_lanes = 0;
  uint64_t active_lanes = 0;
};

// Exported from a shared libhq for the hq tool, which reads the file (no
// installed header declares it: it is not part of hq's API).
struct HQ_EXPORT LiveStatus {
  int64_t pid = 0;          // The publishing process.
  absl::Time written;       // By the Db's clock.
  absl::Duration interval;  // Options::status_interval.
  std::vector<LiveGroupStatus> groups;
  std::vector<LiveSubscriptionStatus> subscriptions;

  // The group `name` of `queue`, or null.
  const LiveGroupStatus* FindGroup(std::string_view queue,
                                   std::string_view name) const;
  const LiveSubscriptionStatus* FindSubscription(std::string_view queue,
                                                 std::string_view name) const;
};

std::string EncodeLiveStatus(const LiveStatus& s);
// DataLoss naming what is wrong, for a file that is not a whole status of
// a version this code reads.
// Exported for the hq tool, as LiveStatus is.
HQ_EXPORT absl::StatusOr<LiveStatus> DecodeLiveStatus(std::string_view data);

}  // namespace hq

#endif  // HQ_LIB_FORMAT_LIVE_STATUS_H_
