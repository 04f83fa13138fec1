// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Open: the engine's Db (lib/engine/db_impl.h) with what the folders
// above it implement (lib/engine/db_extensions.h): each queue's consumers
// (lib/consume/queue_consumers.h) and the inspection and maintenance calls
// of this folder.

#include <memory>
#include <string>
#include <string_view>

#include "hq/db.h"
#include "lib/admin/inspect.h"
#include "lib/consume/queue_consumers.h"
#include "lib/engine/db_extensions.h"
#include "lib/engine/db_impl.h"

namespace hq {
namespace {

// Stateless: one serves every Db.
class Extensions final : public DbExtensions {
 public:
  std::unique_ptr<QueueConsumers> NewConsumers(DbImpl* db,
                                               QueueImpl* queue) override {
    return NewQueueConsumers(db, queue);
  }
  absl::StatusOr<uint64_t> ApproximateBytes(QueueImpl* queue) override {
    return QueueBytes(queue);
  }
  absl::StatusOr<QueueStats> Stats(QueueImpl* queue) override {
    return QueueStatsOf(queue);
  }
  absl::StatusOr<GroupInfo> InspectGroup(QueueImpl* queue,
                                         std::string_view name) override {
    return InspectGroupOf(queue, name);
  }
  absl::StatusOr<SubscriptionStats> InspectSubscription(
      QueueImpl* queue, std::string_view name) override {
    return InspectSubscriptionOf(queue, name);
  }
  absl::StatusOr<SweepStats> CompactAll(
      DbImpl* db, const ProgressCallback& progress) override {
    return CompactAllOf(db, progress);
  }
  absl::StatusOr<VerifyReport> Verify(
      DbImpl* db, const ProgressCallback& progress) override {
    return VerifyDb(db, progress);
  }
  absl::StatusOr<BackupReport> Backup(
      DbImpl* db, const std::string& dest,
      const ProgressCallback& progress) override {
    return BackupDb(db, dest, progress);
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<Db>> Db::Open(const std::string& path,
                                             const Options& options) {
  static Extensions* const extensions = new Extensions();
  return DbImpl::Open(path, options, extensions);
}

}  // namespace hq
