// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The consumers of one queue (lib/engine/db_extensions.h): its consumer
// groups, subscriptions and scanners, made, woken, stopped and deleted
// here. The queue (lib/engine/queue_impl.h) owns it and forwards Queue's
// consume calls to it.

#ifndef HQ_LIB_CONSUME_QUEUE_CONSUMERS_H_
#define HQ_LIB_CONSUME_QUEUE_CONSUMERS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "lib/engine/db_extensions.h"
#include "lib/format/format.h"
#include "lib/util/sync.h"

namespace hq {

class DbImpl;
class GroupImpl;
class QueueImpl;
class SubscriptionImpl;

// The factory Db::Open installs (DbExtensions::NewConsumers).
std::unique_ptr<QueueConsumers> NewQueueConsumers(DbImpl* db, QueueImpl* queue);

// Thread-safe.
class QueueConsumersImpl final : public QueueConsumers {
 public:
  // `db` and `queue` outlive it.
  QueueConsumersImpl(DbImpl* db, QueueImpl* queue);
  ~QueueConsumersImpl() override;

  absl::StatusOr<std::unique_ptr<Scanner>> NewScanner(
      const ScanOptions& options) override;
  absl::StatusOr<ConsumerGroup*> Group(std::string_view name,
                                       const GroupOptions& options) override;
  // The group's handle is stopped under its lock, a tombstone replaces its
  // record in one synced write, and the engine deletes its records in
  // batches (lib/engine/consumer_delete.cc).
  absl::Status DeleteGroup(std::string_view name,
                           const DeleteGroupOptions& options) override;
  absl::StatusOr<Subscription*> Subscribe(const SubscribeOptions& options,
                                          MessageListener* listener) override;
  absl::Status Unsubscribe(std::string_view name) override;
  void WakeWaiters() override;
  void StopSubscriptions() override;
  // Takes status_mu_, then subs_mu_.
  void CollectLiveStatus(LiveStatus* out,
                         std::vector<absl::Time>* loaded_at) override;

 private:
  // Sets the start of a new group's `record` from `options`.
  absl::Status SetGroupStart(const GroupOptions& options,
                             format::GroupRecord* record);
  // Writes the record (and, to start at the latest, the checkpoints) of a
  // new subscription: `want` with its start from `options` and a new id.
  absl::StatusOr<format::SubRecord> CreateSubRecord(
      const SubscribeOptions& options, format::SubRecord want,
      const std::string& key);

  DbImpl* const db_;
  QueueImpl* const queue_;

  // Groups loaded in this process. groups_mu_ is held while a group loads
  // (which takes the queue's listener lock).
  Mutex groups_mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<GroupImpl>> groups_
      ABSL_GUARDED_BY(groups_mu_);
  // Groups being deleted (Group() fails with NotFound meanwhile), and the
  // deleted ones that were loaded: kept so that their handles stay valid.
  absl::flat_hash_set<std::string> deleting_groups_ ABSL_GUARDED_BY(groups_mu_);
  std::vector<std::unique_ptr<GroupImpl>> deleted_groups_
      ABSL_GUARDED_BY(groups_mu_);
  // Subscriptions live in this process. subs_mu_ is held while one is
  // created or loaded (which takes the queue's listener lock), not while
  // one stops.
  Mutex subs_mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<SubscriptionImpl>> subs_
      ABSL_GUARDED_BY(subs_mu_);
  // Held by CollectLiveStatus while it uses this queue's subscriptions, and
  // by Unsubscribe to destroy one: a subscription it reads stays alive.
  Mutex status_mu_ ABSL_ACQUIRED_BEFORE(subs_mu_);
  // Being unsubscribed (Subscribe with these names fails meanwhile).
  absl::flat_hash_set<std::string> unsubscribing_ ABSL_GUARDED_BY(subs_mu_);
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_QUEUE_CONSUMERS_H_
