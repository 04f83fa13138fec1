// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A named, partitioned, persistent message queue inside a Db.

#ifndef HQ_QUEUE_H_
#define HQ_QUEUE_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "hq/export.h"
#include "hq/group.h"
#include "hq/message.h"
#include "hq/options.h"
#include "hq/scanner.h"
#include "hq/subscription.h"

namespace hq {

// The fixed description of a queue, as stored in the catalog.
struct QueueInfo {
  std::string name;
  QueueOptions options;
  // When the queue was created, by the Db's clock.
  absl::Time created;
};

// One partition of a queue, as Queue::Stats reports it.
struct PartitionStats {
  uint32_t partition = 0;
  // Lanes (layout.h) of the partition that hold a key: a message, or the
  // head a TTL sweep leaves in a lane it emptied.
  uint64_t lanes = 0;
  // The smallest and the largest id of a live message (not past the TTL),
  // over the partition's lanes; meaningful only if messages > 0.
  MessageId first;
  MessageId last;
  // Live messages, counted key by key up to 100000 per partition: past it
  // messages_exact is false and messages is a lower bound.
  uint64_t messages = 0;
  bool messages_exact = true;
  // LevelDB's estimate of the disk space of the partition's keys (see
  // Queue::ApproximateBytes).
  uint64_t approximate_bytes = 0;
};

// What Queue::Stats reports.
struct QueueStats {
  std::vector<PartitionStats> partitions;  // By partition, all of them.
  uint64_t approximate_bytes = 0;          // The sum over the partitions.
};

// A consumer group as stored (Queue::InspectGroup), whether or not it is
// loaded in this process.
struct GroupInfo {
  std::string name;
  // Fixed at creation (GroupOptions).
  std::vector<std::string> topics;  // Sorted; empty: every topic.
  bool ordered = false;
  // Where the group started (GroupOptions::start), and the first id it
  // hands out in each partition: one id for every partition, or (kLatest)
  // one per partition, the id after the last message stored at creation.
  // Empty for kEarliest.
  GroupOptions::Start start = GroupOptions::Start::kEarliest;
  std::vector<MessageId> start_ids;
  // "<queue>.dead.<group>" (ConsumerGroup::dead_letter_queue).
  std::string dead_letter_queue;
  // One stored cursor pair per lane the group has read (group.h: every
  // message below `scan` was handed out, every message below `completion`
  // is done), in lane order: partition, priority from the highest, topic.
  // In the topic layout, a lane whose first messages handed out are still
  // open may show its cursors as they were before that claim (the claim
  // wrote them in a claim record, doc/format.md), and a lane that the walk
  // of a group created over existing data passed with every message below
  // its walk floor done has no stored cursor and is not listed
  // (doc/format.md, "Walk floors").
  struct LaneCursor {
    uint32_t partition = 0;
    int priority = 0;
    std::string topic;  // Topic layout only.
    MessageId scan;
    MessageId completion;
  };
  std::vector<LaneCursor> cursors;
};

// A queue. Obtained from Db::CreateQueue or Db::OpenQueue and owned by the
// Db: valid until the Db is destroyed, also after DropQueue (every call on a
// dropped queue then fails with NotFound).
//
// Thread safety: all methods may be called concurrently from any threads.
class HQ_EXPORT Queue {
 public:
  Queue() = default;
  virtual ~Queue() = default;
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  virtual const std::string& name() const = 0;
  virtual const QueueOptions& options() const = 0;
  virtual QueueInfo info() const = 0;

  // Writes one message and returns where it went. The MessageId is assigned
  // by the engine (see message.h). Errors:
  //   InvalidArgument: partition or priority out of range, topic or key over
  //                    1024 bytes, payload over max_payload_bytes;
  //   NotFound:        the queue was dropped;
  //   ResourceExhausted: the partition has used every MessageId (only with
  //                    a clock near year 10889);
  //   FailedPrecondition: the Db is closing, or refuses writes after an
  //                    earlier write failed (see db.h);
  //   Internal / DataLoss: the storage failed; nothing was acknowledged.
  // On error nothing is acknowledged.
  virtual absl::StatusOr<PutResult> Put(const Message& message,
                                        const PutOptions& options = {}) = 0;

  // Writes `messages` atomically: all of them or none. On success, if
  // `results` is not null it holds one PutResult per message, in order.
  // Messages of one partition get increasing ids in the order given.
  // Errors as for Put; an invalid message fails the whole batch, and the
  // status names its index. An empty batch is OK and writes nothing.
  virtual absl::Status PutBatch(std::span<const Message> messages,
                                std::vector<PutResult>* results,
                                const PutOptions& options = {}) = 0;

  // Opens a scanner over a snapshot of the queue taken now. It seeks
  // straight to each lane's `from` key; it never walks a lane from its start.
  // Messages older than the queue's TTL (by id time, at this call) are not
  // returned: the scan starts at max(from, the TTL cutoff).
  // Errors: InvalidArgument for a partition out of range, a topic over 1024
  // bytes, from > to, or an id whose ms is above MessageId::kMaxMs; NotFound
  // if the queue was dropped; FailedPrecondition if the Db is closing;
  // ResourceExhausted past Options::max_open_scanners.
  virtual absl::StatusOr<std::unique_ptr<Scanner>> NewScanner(
      const ScanOptions& options) = 0;

  // The consumer group `name` (group.h), created on first use: a new group
  // starts at the queue's oldest message. Later calls, also after a reopen,
  // return the same group; the options they give for leases, attempts and
  // backoff replace the earlier ones, while its topic filter is fixed at
  // creation. The first call in a process loads the group's records (its
  // tasks in flight) and looks up which lanes have work: one pass over the
  // queue's lanes (an unordered group of a topic layout queue reads no
  // per-lane state: group.h, max_active_lanes).
  // Names follow the rules of queue names (1..128 bytes of [A-Za-z0-9._-],
  // starting with a letter or digit), and "<queue>.dead.<group>" (the
  // dead-letter queue) must be a valid queue name too.
  // Errors: InvalidArgument (name or options; a topic filter different from
  // the one the group was created with); AlreadyExists (creating a group
  // whose dead-letter queue name is taken by another queue); NotFound (the
  // queue was dropped); FailedPrecondition (the Db is closing).
  virtual absl::StatusOr<ConsumerGroup*> Group(
      std::string_view name, const GroupOptions& options = {}) = 0;

  // The names of the queue's groups, in byte order.
  virtual absl::StatusOr<std::vector<std::string>> ListGroups() = 0;

  // Deletes the consumer group `name` and all its state: cursors, task
  // records, topic pacing, its position in the lane activity index, claim
  // and park records, its dead letters' records and (unless
  // options.keep_dead_letters) its dead-letter queue. A later Group(name)
  // creates a new group, which starts afresh from GroupOptions::start.
  //
  // It first writes, in one synced batch, a tombstone with the removal of
  // the group's record: from then on ListGroups and InspectGroup no longer
  // see the group, its ConsumerGroup handle fails every call with NotFound
  // and Group(name) fails with NotFound until the delete has finished.
  // Then it deletes the records in batches of 1000 keys (the time of a
  // delete grows with the records, not with the queue's messages). If the
  // process dies part-way, the next Db::Open finishes the delete before it
  // returns.
  //
  // Concurrent calls. The delete takes the group's lock: a claim in
  // progress finishes first (a Claim that began before the delete may
  // still return the tasks it handed out before), claims waiting
  // (ClaimOptions::wait) return NotFound, and every call that begins after
  // the tombstone fails with NotFound. Other groups are not affected.
  //
  // When the queue is left with no consumer group and no subscription,
  // its writes stop adding to the lane activity index (doc/format.md), and
  // the next sweep trims the index.
  //
  // Errors: InvalidArgument (not a valid group name); NotFound (no such
  // group, or it is being deleted, or the queue was dropped);
  // FailedPrecondition (tasks of the group are in flight in this process
  // and not options.force; the Db is closing or refuses writes after a
  // failed one); Internal (storage). An error with ErrorDetail::kDropDurable
  // (hq/status.h) means the tombstone is written (the group is gone) but
  // deleting its records failed: the next Open finishes it.
  virtual absl::Status DeleteGroup(std::string_view name,
                                   const DeleteGroupOptions& options = {}) = 0;

  // Starts delivering the queue's messages to `listener` (not owned; it
  // must outlive the subscription: until Unsubscribe or the Db's
  // destruction) under the durable subscription options.name (see
  // subscription.h). A new subscription starts at options.start; an
  // existing one (created earlier, in this process or before a restart)
  // resumes from its checkpoints. Calling Subscribe again with the name of
  // a live subscription adds `listener` after its listeners. Errors:
  // InvalidArgument (options, a null listener or one already added, or
  // partitions or topics different from those the subscription was
  // created with); NotFound (the queue was dropped); FailedPrecondition
  // (the Db is closing, or the name is being unsubscribed).
  virtual absl::StatusOr<Subscription*> Subscribe(
      const SubscribeOptions& options, MessageListener* listener) = 0;

  // Stops the subscription `name` if it is live (waiting for a listener
  // call in progress to return) and deletes its state: a later Subscribe
  // with the name starts anew. As DeleteGroup, it writes a tombstone in
  // place of the subscription's record (one synced write), then deletes
  // its checkpoints and lane index position in batches of 1000 keys; a
  // delete a crash interrupted is finished by the next Db::Open. A `topic`
  // layout queue left with no consumer stops writing its lane activity
  // index. Errors: InvalidArgument (not a valid subscription name);
  // NotFound (no such subscription); FailedPrecondition (called from a
  // listener of that subscription, which would wait for itself, or while
  // another Unsubscribe of it runs); Internal (storage; with
  // ErrorDetail::kDropDurable once the tombstone is written: the next Open
  // finishes the delete).
  virtual absl::Status Unsubscribe(std::string_view name) = 0;
  // The same as Unsubscribe (named as DeleteGroup is).
  virtual absl::Status DeleteSubscription(std::string_view name) = 0;

  // The names of the queue's subscriptions (live or not), in byte order.
  virtual absl::StatusOr<std::vector<std::string>> ListSubscriptions() = 0;

  // ---- Inspection (the hq tool's `ls` and `stat`). None of these writes.

  // LevelDB's estimate of the disk space used by the queue's messages:
  // from table file metadata, O(log of the number of files), no key read.
  // Data still in LevelDB's memtable (written since the last flush or
  // Open) is not counted, and deleted messages count until a compaction
  // drops them. Errors: NotFound (dropped), FailedPrecondition (closing).
  virtual absl::StatusOr<uint64_t> ApproximateBytes() = 0;

  // Per partition: lanes, first and last live id, message count (counted
  // key by key, up to 100000 per partition) and approximate bytes. Walks
  // the lanes (a seek or a few steps each), two seeks per lane and the
  // counted keys.
  // Errors: NotFound (dropped), FailedPrecondition (closing), DataLoss
  // (a malformed record), Internal (storage).
  virtual absl::StatusOr<QueueStats> Stats() = 0;

  // The group `name` as stored: its fixed options and its cursors, without
  // loading it (Group() loads it). Reads the group's cursor records.
  // Errors: InvalidArgument (bad name), NotFound (no such group, or the
  // queue was dropped), DataLoss (a malformed record).
  virtual absl::StatusOr<GroupInfo> InspectGroup(std::string_view name) = 0;

  // The subscription `name` as stored, without subscribing: `lanes` holds
  // the written checkpoints (next == written) of every lane that has one,
  // a record or, in a topic layout queue, its walk's floor (a lane the
  // subscription's walk passed at its floor has no record), `lag` counts
  // the messages in scope past them (lanes without a checkpoint from the
  // subscription's start), up to 100000 as in SubscriptionStats; the other
  // fields are 0. Time and memory grow with the lanes.
  // For a subscription live in this process, its unwritten progress is
  // not seen: Subscription::Stats() has it. Errors: InvalidArgument (bad
  // name), NotFound (no such subscription, or the queue was dropped),
  // DataLoss (a malformed record).
  virtual absl::StatusOr<SubscriptionStats> InspectSubscription(
      std::string_view name) = 0;
};

}  // namespace hq

#endif  // HQ_QUEUE_H_
