// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#ifndef HQ_LIB_QUEUE_IMPL_H_
#define HQ_LIB_QUEUE_IMPL_H_

#include <atomic>
#include <string>

#include "hq/queue.h"
#include "lib/format.h"
#include "lib/layout_codec.h"

namespace hq {

class DbImpl;

class QueueImpl final : public Queue {
 public:
  QueueImpl(DbImpl* db, std::string name, const format::QueueRecord& record);

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
};

}  // namespace hq

#endif  // HQ_LIB_QUEUE_IMPL_H_
