// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#ifndef HQ_LIB_QUEUE_IMPL_H_
#define HQ_LIB_QUEUE_IMPL_H_

#include <atomic>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "hq/queue.h"
#include "lib/format.h"
#include "lib/layout_codec.h"
#include "lib/sync.h"

namespace hq {

class DbImpl;
class GroupImpl;

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

  // Tells the queue's loaded groups which lanes `messages` (written, with
  // `results`) went to. Called by the write pipeline after each write,
  // while the write still counts as a call in flight.
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
  const LayoutCodec& codec() const { return codec_; }

  // Set once, by DropQueue, inside the write pipeline.
  void MarkDropped() { dropped_.store(true); }
  bool dropped() const { return dropped_.load(); }
  absl::Status DroppedError() const;

 private:
  // OK or InvalidArgument naming message `index` (-1: a single Put).
  absl::Status Validate(const Message& m, int64_t index) const;
  uint32_t ChoosePartition(const Message& m);
  bool Sync(const PutOptions& o) const;

  DbImpl* const db_;
  const std::string name_;
  const format::QueueRecord record_;
  const LayoutCodec& codec_;
  std::atomic<uint32_t> round_robin_{0};
  std::atomic<bool> dropped_{false};

  // Groups loaded in this process. groups_mu_ is held while a group loads;
  // listeners_mu_ only while the write path notes lanes.
  Mutex groups_mu_ ABSL_ACQUIRED_BEFORE(listeners_mu_);
  absl::flat_hash_map<std::string, std::unique_ptr<GroupImpl>> groups_
      ABSL_GUARDED_BY(groups_mu_);
  Mutex listeners_mu_;
  std::vector<GroupImpl*> listeners_ ABSL_GUARDED_BY(listeners_mu_);
  std::atomic<bool> has_listeners_{false};
};

}  // namespace hq

#endif  // HQ_LIB_QUEUE_IMPL_H_
