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
#include "lib/engine/db_extensions.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/sync.h"

namespace hq {

class DbImpl;

// Told by the write path which lanes it wrote (consumer groups and
// subscriptions of the queue). Must not block or take the caller's locks.
class LaneListener {
 public:
  virtual void NoteLaneWritten(std::string_view lane_prefix) = 0;

 protected:
  ~LaneListener() = default;
};

// The queue's core: writes, lanes, listeners. Its consumers (groups,
// subscriptions, scanners) are a QueueConsumers that the Db's extensions
// make (lib/engine/db_extensions.h), and its inspection calls go to those
// extensions: both are implemented above the engine.
class QueueImpl final : public Queue {
 public:
  // `db` outlives it; its consumers are made here, by db->extensions().
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
  absl::Status DeleteGroup(std::string_view name,
                           const DeleteGroupOptions& options) override;
  absl::StatusOr<Subscription*> Subscribe(const SubscribeOptions& options,
                                          MessageListener* listener) override;
  absl::Status Unsubscribe(std::string_view name) override;
  absl::Status DeleteSubscription(std::string_view name) override;
  absl::StatusOr<std::vector<std::string>> ListSubscriptions() override;
  // Inspection (DbExtensions).
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

  // The queue's consumers (constant after construction).
  QueueConsumers* consumers() const { return consumers_.get(); }
  DbImpl* db() const { return db_; }

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

  // The end (the id after the last message) of each lane in `scope`.
  absl::StatusOr<std::vector<std::pair<std::string, MessageId>>> LaneEnds(
      const format::SubRecord& scope);
  // The write path tells `l` the lanes it writes, from now until
  // RemoveListener(l) returns.
  void AddListener(LaneListener* l) ABSL_LOCKS_EXCLUDED(listeners_mu_);
  void RemoveListener(LaneListener* l) ABSL_LOCKS_EXCLUDED(listeners_mu_);

 private:
  absl::StatusOr<std::vector<std::string>> ListNames(char tag,
                                                     std::string_view what);
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

  // Held only while the write path notes lanes, and by AddListener and
  // RemoveListener; taken after the consumers' own locks.
  Mutex listeners_mu_;
  std::vector<LaneListener*> listeners_ ABSL_GUARDED_BY(listeners_mu_);
  std::atomic<bool> has_listeners_{false};

  // Last: destroyed first, while the rest of the queue is whole.
  std::unique_ptr<QueueConsumers> consumers_;
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_QUEUE_IMPL_H_
