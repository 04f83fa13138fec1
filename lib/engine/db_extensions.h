// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// What the folders above the engine add to a Db and its queues, behind
// interfaces the engine declares: each queue's consumers (lib/consume:
// groups, subscriptions, scanners) and the inspection and maintenance
// calls (lib/admin). Db::Open (lib/admin/db_open.cc) installs them, so
// that lib/engine includes nothing of the folders above it.

#ifndef HQ_LIB_ENGINE_DB_EXTENSIONS_H_
#define HQ_LIB_ENGINE_DB_EXTENSIONS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hq/db.h"
#include "hq/group.h"
#include "hq/queue.h"
#include "hq/scanner.h"
#include "hq/subscription.h"
#include "lib/format/live_status.h"

namespace hq {

class DbImpl;
class QueueImpl;

// The consumers of one queue: QueueImpl forwards Queue's consume calls to
// it (their contracts are in hq/queue.h). Thread-safe. Destroyed with its
// queue, when the Db is destroyed (after StopSubscriptions).
class QueueConsumers {
 public:
  virtual ~QueueConsumers() = default;

  virtual absl::StatusOr<std::unique_ptr<Scanner>> NewScanner(
      const ScanOptions& options) = 0;
  virtual absl::StatusOr<ConsumerGroup*> Group(std::string_view name,
                                               const GroupOptions& options) = 0;
  virtual absl::Status DeleteGroup(std::string_view name,
                                   const DeleteGroupOptions& options) = 0;
  virtual absl::StatusOr<Subscription*> Subscribe(
      const SubscribeOptions& options, MessageListener* listener) = 0;
  virtual absl::Status Unsubscribe(std::string_view name) = 0;

  // Wakes the blocked claims of the queue's groups (they return if the Db
  // is closing, the queue was dropped or the group deleted).
  virtual void WakeWaiters() = 0;
  // Stops every subscription of the queue and writes its checkpoints (at
  // the Db's close); the Subscription pointers stay valid.
  virtual void StopSubscriptions() = 0;
  // Appends the live status of the groups loaded and the subscriptions
  // live in this process; rates left at zero. If `loaded_at` is not null,
  // appends each group's load time to it.
  virtual void CollectLiveStatus(LiveStatus* out,
                                 std::vector<absl::Time>* loaded_at) = 0;
};

// The calls of Db and Queue that the engine does not implement (their
// contracts are in hq/db.h and hq/queue.h), and the factory of each
// queue's consumers. Thread-safe; outlives every Db it is installed in.
class DbExtensions {
 public:
  // The consumers of `queue` of `db`, created with the queue.
  virtual std::unique_ptr<QueueConsumers> NewConsumers(DbImpl* db,
                                                       QueueImpl* queue) = 0;

  // Queue inspection.
  virtual absl::StatusOr<uint64_t> ApproximateBytes(QueueImpl* queue) = 0;
  virtual absl::StatusOr<QueueStats> Stats(QueueImpl* queue) = 0;
  virtual absl::StatusOr<GroupInfo> InspectGroup(QueueImpl* queue,
                                                 std::string_view name) = 0;
  virtual absl::StatusOr<SubscriptionStats> InspectSubscription(
      QueueImpl* queue, std::string_view name) = 0;

  // Db maintenance.
  virtual absl::StatusOr<SweepStats> CompactAll(
      DbImpl* db, const ProgressCallback& progress) = 0;
  virtual absl::StatusOr<VerifyReport> Verify(
      DbImpl* db, const ProgressCallback& progress) = 0;
  virtual absl::StatusOr<BackupReport> Backup(
      DbImpl* db, const std::string& dest,
      const ProgressCallback& progress) = 0;

 protected:
  ~DbExtensions() = default;
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_DB_EXTENSIONS_H_
