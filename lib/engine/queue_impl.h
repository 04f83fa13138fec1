// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#ifndef HQ_LIB_ENGINE_QUEUE_IMPL_H_
#define HQ_LIB_ENGINE_QUEUE_IMPL_H_

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/optimization.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hq/queue.h"
#include "leveldb/iterator.h"
#include "lib/format/live_status.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/sync.h"

namespace hq {

class DbImpl;
class GroupImpl;
class SubscriptionImpl;

// Told by the write path which lanes it wrote (consumer groups and
// subscriptions of the queue). Must not block or take the caller's locks.
class LaneListener {
 public:
  virtual void NoteLaneWritten(std::string_view lane_prefix) = 0;

 protected:
  ~LaneListener() = default;
};

// The queue's core (writes, lanes, listeners) is lib/engine/queue_impl.cc;
// its consume side (groups, subscriptions, scanners, and the constructor
// and destructor, which need their complete types) is
// lib/consume/queue_consume.cc.
class QueueImpl final : public Queue {
 public:
  QueueImpl(DbImpl* db, std::string name, const format::QueueRecord& record);
  ~QueueImpl() override;

  const std::string& name() const override { return name_; }
  const QueueOptions& options() const override { return record_.options; }
  QueueInfo info() const override;

  absl::StatusOr<PutResult> Put(const Message& message,
                                const PutOptions& options) override;
  absl::Status PutBatch(std::span<const Message> messages,
                        std::vector<PutResult>* results,
                        const PutOptions& options) override;
  absl::StatusOr<std::unique_ptr<Scanner>> NewScanner(
      const ScanOptions& options) override;
  absl::StatusOr<ConsumerGroup*> Group(std::string_view name,
                                       const GroupOptions& options) override;
  absl::StatusOr<std::vector<std::string>> ListGroups() override;
  // lib/consume/group_delete.cc.
  absl::Status DeleteGroup(std::string_view name,
                           const DeleteGroupOptions& options) override;
  absl::StatusOr<Subscription*> Subscribe(const SubscribeOptions& options,
                                          MessageListener* listener) override;
  absl::Status Unsubscribe(std::string_view name) override;
  absl::Status DeleteSubscription(std::string_view name) override;
  absl::StatusOr<std::vector<std::string>> ListSubscriptions() override;
  // Inspection (lib/admin/inspect.cc).
  absl::StatusOr<uint64_t> ApproximateBytes() override;
  absl::StatusOr<QueueStats> Stats() override;
  absl::StatusOr<GroupInfo> InspectGroup(std::string_view name) override;
  // The value of the group or subscription record at `key`; NotFound names
  // the queue, `kind` ("consumer group", "subscription") and `name`.
  absl::StatusOr<std::string> ReadNamedRecord(const std::string& key,
                                              std::string_view kind,
                                              std::string_view name);
  absl::StatusOr<SubscriptionStats> InspectSubscription(
      std::string_view name) override;

  // Stops every subscription of the queue and writes its checkpoints (at
  // the Db's close).
  void StopSubscriptions();
  // Appends the live status of the groups loaded and the subscriptions live
  // in this process (lib/admin/status_publish.cc); rates left at zero. If
  // `loaded_at` is not null, appends each group's load time to it.
  void CollectLiveStatus(LiveStatus* out, std::vector<absl::Time>* loaded_at)
      ABSL_LOCKS_EXCLUDED(status_mu_);

  // One lane of the queue, as WalkLanes gives it.
  struct LaneEntry {
    std::string_view prefix;  // The message lane prefix.
    uint32_t partition = 0;
    int priority = 0;
    std::string_view topic;  // Topic layout only.
    // The record keyed `record_prefix` + lane_rest, if there is one.
    const std::string_view* record = nullptr;
  };
  // Walks the queue's lanes in order (lane_walk.h: one pass, not filling
  // the block cache), joined with the per-lane records whose keys are
  // `record_prefix` followed by the lane_rest (group cursors, subscription
  // checkpoints; both sorted by lane_rest). Empty `record_prefix`: no join.
  absl::Status WalkLanes(
      std::string_view record_prefix,
      const std::function<absl::Status(const LaneEntry&)>& fn);
  // The id of the last message of the lane `prefix` into `*last`; false if
  // the lane holds none.
  static absl::StatusOr<bool> LastLaneMessage(leveldb::Iterator* it,
                                              std::string_view prefix,
                                              MessageId* last);
  // Whether the lane `prefix` has a message with id >= `from`.
  static absl::StatusOr<bool> LaneHasMessageFrom(leveldb::Iterator* it,
                                                 std::string_view prefix,
                                                 MessageId from);

  // Tells the queue's loaded groups and subscriptions which lanes `messages`
  // (written, with `results`) went to. Called by the write pipeline after each
  // write, while the write still counts as a call in flight.
  void NoteWritten(std::span<const Message> messages, const PutResult* results);
  // Wakes the blocked claims of the queue's groups.
  void WakeWaiters();
  bool has_listeners() const {
    return has_listeners_.load(std::memory_order_acquire);
  }

  uint32_t id() const { return record_.id; }

  // Messages with ids below this have outlived the queue's TTL at `now`
  // (Min() without a TTL).
  MessageId TtlCutoff(absl::Time now) const;
  // The greatest cutoff a TTL sweep of this queue used (Min if none since
  // Open): messages below it may be deleted even if the clock stepped back
  // below it since. A sweep notes its cutoff before it deletes.
  MessageId swept_cutoff() const;
  void NoteSwept(MessageId cutoff);
  const LayoutCodec& codec() const { return codec_; }

  // Set once, by DropQueue, inside the write pipeline.
  void MarkDropped() { dropped_.store(true); }
  bool dropped() const { return dropped_.load(); }
  absl::Status DroppedError() const;

 private:
  absl::StatusOr<std::vector<std::string>> ListNames(char tag,
                                                     std::string_view what);
  // The end (the id after the last message) of each lane in `scope`.
  absl::StatusOr<std::vector<std::pair<std::string, MessageId>>> LaneEnds(
      const format::SubRecord& scope);
  // Sets the start of a new group's `record` from `options`.
  absl::Status SetGroupStart(const GroupOptions& options,
                             format::GroupRecord* record);
  // Writes the record (and, to start at the latest, the checkpoints) of a
  // new subscription: `want` with its start from `options` and a new id.
  absl::StatusOr<format::SubRecord> CreateSubRecord(
      const SubscribeOptions& options, format::SubRecord want,
      const std::string& key);
  // OK or InvalidArgument naming message `index` (-1: a single Put).
  absl::Status Validate(const Message& m, int64_t index) const {
    if (ABSL_PREDICT_TRUE(Plain(m))) return absl::OkStatus();
    return ValidateFields(m, index);
  }
  // True for the common message, which Validate passes: no delay or
  // not_before, every field in range. Inline: it runs for every message.
  bool Plain(const Message& m) const {
    const QueueOptions& o = record_.options;
    return m.payload.size() <= o.max_payload_bytes &&
           m.topic.size() <= format::kMaxTopicBytes &&
           m.dedup_key.size() <= format::kMaxKeyBytes &&
           m.key.size() <= format::kMaxKeyBytes &&
           (!m.partition.has_value() || *m.partition < o.partitions) &&
           m.delay == absl::ZeroDuration() &&
           m.not_before == absl::InfinitePast() && m.priority >= 0 &&
           m.priority < o.priorities;
  }
  // Validate's checks one by one, each with its message.
  absl::Status ValidateFields(const Message& m, int64_t index) const;
  uint32_t ChoosePartition(const Message& m);
  bool Sync(const PutOptions& o) const;

  DbImpl* const db_;
  const std::string name_;
  const format::QueueRecord record_;
  const LayoutCodec& codec_;
  std::atomic<uint32_t> round_robin_{0};
  std::atomic<bool> dropped_{false};
  std::atomic<uint64_t> swept_cutoff_{0};  // ms << 16 | seq.

  // Groups loaded in this process. groups_mu_ is held while a group loads;
  // listeners_mu_ only while the write path notes lanes.
  Mutex groups_mu_ ABSL_ACQUIRED_BEFORE(listeners_mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<GroupImpl>> groups_
      ABSL_GUARDED_BY(groups_mu_);
  // Groups being deleted (Group() fails with NotFound meanwhile), and the
  // deleted ones that were loaded: kept so that their handles stay valid.
  absl::flat_hash_set<std::string> deleting_groups_ ABSL_GUARDED_BY(groups_mu_);
  std::vector<std::unique_ptr<GroupImpl>> deleted_groups_
      ABSL_GUARDED_BY(groups_mu_);
  // Subscriptions live in this process. subs_mu_ is held while one is
  // created or loaded, not while one stops.
  Mutex subs_mu_ ABSL_ACQUIRED_BEFORE(listeners_mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<SubscriptionImpl>> subs_
      ABSL_GUARDED_BY(subs_mu_);
  // Held by CollectLiveStatus while it uses this queue's subscriptions, and
  // by Unsubscribe to destroy one: a subscription it reads stays alive.
  Mutex status_mu_ ABSL_ACQUIRED_BEFORE(subs_mu_);
  // Being unsubscribed (Subscribe with these names fails meanwhile).
  absl::flat_hash_set<std::string> unsubscribing_ ABSL_GUARDED_BY(subs_mu_);

  void AddListener(LaneListener* l) ABSL_LOCKS_EXCLUDED(listeners_mu_);
  void RemoveListener(LaneListener* l) ABSL_LOCKS_EXCLUDED(listeners_mu_);
  Mutex listeners_mu_;
  std::vector<LaneListener*> listeners_ ABSL_GUARDED_BY(listeners_mu_);
  std::atomic<bool> has_listeners_{false};
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_QUEUE_IMPL_H_
