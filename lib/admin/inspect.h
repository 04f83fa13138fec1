// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Read-only inspection of a queue and Db::CompactAll: what the hq tool's
// `ls`, `stat` and `compact` show and do. The contracts are those of the
// calls they implement (hq/queue.h, hq/db.h), for the queue or Db given.

#ifndef HQ_LIB_ADMIN_INSPECT_H_
#define HQ_LIB_ADMIN_INSPECT_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"
#include "hq/db.h"
#include "hq/queue.h"
#include "hq/subscription.h"

namespace hq {

class DbImpl;
class QueueImpl;

// Queue::ApproximateBytes, Queue::Stats, Queue::InspectGroup and
// Queue::InspectSubscription of `q`.
absl::StatusOr<uint64_t> QueueBytes(QueueImpl* q);
absl::StatusOr<QueueStats> QueueStatsOf(QueueImpl* q);
absl::StatusOr<GroupInfo> InspectGroupOf(QueueImpl* q, std::string_view name);
absl::StatusOr<SubscriptionStats> InspectSubscriptionOf(QueueImpl* q,
                                                        std::string_view name);
// Db::CompactAll of `db`. Only it writes: its TTL sweep deletes expired
// messages before the compaction.
absl::StatusOr<SweepStats> CompactAllOf(DbImpl* db,
                                        const ProgressCallback& progress);
// Db::Verify of `db` (lib/admin/verify.cc).
absl::StatusOr<VerifyReport> VerifyDb(DbImpl* db,
                                      const ProgressCallback& progress);
// Db::Backup of `db` (lib/admin/backup.cc).
absl::StatusOr<BackupReport> BackupDb(DbImpl* db, const std::string& dest,
                                      const ProgressCallback& progress);

}  // namespace hq

#endif  // HQ_LIB_ADMIN_INSPECT_H_
