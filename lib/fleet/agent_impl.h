// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The fleet Agent (hq/fleet.h): an hq Db holding the frontier of the
// partitions this agent owns (lib/fleet/ownership.h), fed from their
// JetStream subjects (lib/fleet/handoff.h).
//
// In the Db, partition p owned at epoch e is the queue "p<ppppp>.e<e>"
// (topic layout: topic = site, key = URL, dedup key = URL) with one group,
// "fetch". Acquiring p at epoch e keeps that queue if it exists (a restart
// within the grace period) and otherwise drops every queue of p and
// rebuilds it from the stream, less the URLs published as completed.
//
// Threads: the ingest thread follows the ownership view (acquiring and
// releasing partitions) and moves records from the partition feeds into
// the queues, acking them once stored; the flush thread publishes
// completions every kCompletionFlush. Claim, Complete and the rest run on
// the caller's threads.

#ifndef HQ_LIB_FLEET_AGENT_IMPL_H_
#define HQ_LIB_FLEET_AGENT_IMPL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hq/db.h"
#include "hq/fleet.h"
#include "hq/queue.h"
#include "lib/fleet/handoff.h"
#include "lib/fleet/ownership.h"
#include "lib/util/sync.h"

namespace hq::fleet {

inline constexpr absl::Duration kCompletionFlush = absl::Milliseconds(100);

class AgentImpl : public Agent {
 public:
  static absl::StatusOr<std::unique_ptr<Agent>> Open(
      const AgentOptions& options);
  ~AgentImpl() override;

  absl::Status Put(const Url& url) override;
  absl::Status PutBatch(std::span<const Url> urls) override;
  absl::StatusOr<std::vector<FleetTask>> Claim(
      const ClaimOptions& options) override;
  absl::Status Complete(std::span<const FleetTask> tasks) override;
  absl::Status Release(const FleetTask& task,
                       absl::Duration retry_after) override;
  absl::Status Reject(const FleetTask& task) override;
  absl::Status Extend(FleetTask* task, absl::Duration lease) override;
  absl::StatusOr<AgentStats> Stats() override;
  absl::Status Leave() override;

 private:
  // One owned partition at one epoch.
  struct Partition {
    uint32_t partition = 0;
    uint64_t epoch = 0;
    Queue* queue = nullptr;
    ConsumerGroup* group = nullptr;
    std::unique_ptr<PartitionFeed> feed;
    // UrlHash of the URLs published as completed when it was rebuilt.
    absl::flat_hash_set<uint64_t> completed;
  };

  explicit AgentImpl(const AgentOptions& options);
  absl::Status Init();
  absl::StatusOr<std::string> SiteFor(std::string_view url) const;

  void IngestLoop();
  // Opens or rebuilds partition p at `epoch`; `queues` is the Db's list of
  // queues (Db::ListQueues), taken before this round of acquisitions.
  absl::StatusOr<std::shared_ptr<Partition>> Acquire(
      uint32_t p, uint64_t epoch, const std::vector<std::string>& queues);
  // Moves one batch from p's feed into its queue; returns records stored.
  absl::StatusOr<size_t> Pump(Partition& part);
  void FlushLoop();
  // Waits up to `d` unless stop_ is set; returns stop_.
  bool WaitStop(absl::Duration d);
  absl::Status FlushCompletions();

  // The partition of a task if this agent still holds it at the task's
  // epoch; null if it moved.
  std::shared_ptr<Partition> Held(const FleetTask& task) const;
  absl::Status CheckOpen() const;

  const AgentOptions options_;
  std::unique_ptr<Db> db_;
  std::unique_ptr<Ownership> ownership_;
  std::unique_ptr<Handoff> handoff_;

  mutable Mutex mu_;
  CondVar stop_cv_;  // Signalled when stop_ or left_ is set.
  absl::flat_hash_map<uint32_t, std::shared_ptr<Partition>> partitions_
      ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool left_ ABSL_GUARDED_BY(mu_) = false;
  size_t next_claim_ ABSL_GUARDED_BY(mu_) = 0;

  Mutex done_mu_;
  // URLs completed, per partition, not yet published.
  absl::flat_hash_map<uint32_t, std::vector<std::string>> done_
      ABSL_GUARDED_BY(done_mu_);

  std::atomic<uint64_t> published_{0}, received_{0}, duplicates_{0},
      completions_published_{0};
  std::thread ingest_, flusher_;
};

}  // namespace hq::fleet

#endif  // HQ_LIB_FLEET_AGENT_IMPL_H_
