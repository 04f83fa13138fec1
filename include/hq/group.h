// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Consumer groups: competing consumers that claim a queue's messages as
// tasks under a lease and complete them (the TableStore crawler queue).
//
//   hq::ConsumerGroup* g = *queue->Group("fetchers");
//   auto tasks = g->Claim({.max = 100});          // StatusOr
//   for (const hq::Task& t : *tasks) Fetch(t.payload);
//   g->Complete(*tasks);                          // one write for all
//
// Every message in the group's scope (its topic filter) is completed once
// or dead-lettered. A task is handed out again only after its lease expired,
// it was released, or the process stopped while it was in flight: delivery
// is at least once, so make the work idempotent.
//
// Cursors. Per group and lane (layout.h) the group keeps a scan cursor (the
// next id to read: every message below it was handed out or is outside the
// group's scope) and a completion cursor (every message below it is
// completed, dead-lettered or out of scope). Both only move forward. A task
// that takes long holds back only the completion cursor: claims go on past
// it. Between the two cursors the group records one small record per task
// that is in flight, waiting to be delivered again, or completed out of
// order, so its bookkeeping is proportional to the tasks in flight, not to
// the queue.
//
// Ordered groups (GroupOptions::ordered; Kafka's partition assignment,
// Hedwig's topic owner). Every Claim names its consumer
// (ClaimOptions::consumer). Each partition is owned by one live consumer at
// a time, and a consumer receives only tasks of the partitions it owns.
// Within a lane (layout.h: a partition and priority, and a topic in the
// topic layout) messages are handed out strictly in id order: the next one
// only once the one before is completed or dead-lettered; a task waiting
// to be delivered again (lease expired, released, delayed) holds back the
// messages behind it in its lane. At most one task per partition is in
// flight. Across the lanes of a partition, higher priorities go first.
//
// A consumer joins at its first Claim and stays live while it calls:
// Claim (also while blocked in a wait), and Complete, Release and Extend
// of the tasks handed to it renew its ownership lease
// (GroupOptions::ownership_lease). A consumer that stops calling for that
// long, or calls Leave, loses its partitions. Partitions are spread evenly
// over the live consumers (at most one apart), moving as few as possible,
// whenever one joins or leaves. A partition that changes owner while a task
// of it is in flight goes on only after that task is completed, or its
// lease expires and it is delivered again to the new owner: no task is lost
// or overtaken. Ownership lives in memory: after a restart consumers join
// again. Ownership and the one-task-per-partition rule bind the consumers
// of one process (hq is embedded; one process opens a Db).

#ifndef HQ_GROUP_H_
#define HQ_GROUP_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hq/export.h"
#include "hq/message.h"

namespace hq {

// Per-topic pacing (politeness), as a crawler keeps per site: a topic's
// tasks are handed out only while fewer than `max_in_flight` of them are in
// flight, and no sooner than `interval` after the topic's previous hand-out
// (by claim time, on the Db's clock). A claim skips a topic that is not due
// and serves the others meanwhile; a waiting claim wakes when one comes due.
// It applies to new messages and redeliveries alike, in every layout and in
// ordered groups (where a topic that is not due holds back its lane). With
// the `time` layout a claim reads past the messages of topics not due, on
// every call, as for ClaimOptions::topics, but at most 1000 of them per
// partition and priority: the messages of due topics further on wait for
// a later claim. Prefer the `topic` layout, where a topic not due costs
// one lookup. Likewise a claim passes over at most 1000 due redeliveries of
// topics not due, per priority.
//
// A topic's own pacing is read when the topic is handed out; a damaged
// record (hq verify names it) fails that claim with DataLoss and stops the
// group, as any damaged group record does: reopen, then SetTopicPacing or
// ClearTopicPacing the topic (or run hq repair).
//
// After a restart no task is in flight; the time of the group's latest
// paced hand-out is stored with each claim, and every topic is due no
// sooner than that time plus its interval (so the interval holds across a
// restart; a restart quicker than the interval waits out the rest).
//
// Intervals are measured on the Db's clock (Options::clock). A clock that
// steps back does not shorten an interval already running; an interval
// the clock has once shown over is over, even if the clock then steps back
// (a topic idle past its interval keeps no state: "idle topics cost
// nothing").
struct TopicPacing {
  // At most this many tasks of one topic in flight. 0: no limit.
  // Limits: 0..1000000.
  uint32_t max_in_flight = 0;
  // At least this long between two hand-outs of one topic, kept to the
  // millisecond. Zero: none. Limits: 0..720h.
  absl::Duration interval = absl::ZeroDuration();

  bool operator==(const TopicPacing&) const = default;
};

// Options of Queue::Group.
struct GroupOptions {
  // ---- Fixed when the group is created (a later Group() call that gives
  // different values gets InvalidArgument).

  // The group's scope: only messages with one of these topics are handed
  // out; the others count as completed. Empty: every topic. Duplicates are
  // ignored. Limits: at most 1024 topics of at most 1024 bytes each.
  std::vector<std::string> topics;

  // Ordered delivery with partition ownership (see the top of this file).
  // Default: false.
  bool ordered = false;

  // Where a new group starts: the messages below its start in each
  // partition count as completed. Unlike `topics` and `ordered`, a later
  // Group() call with another start is not an error: the start is taken
  // only when the group is created (as Redis's XGROUP CREATE, Kafka's
  // auto.offset.reset), and InspectGroup reports it.
  enum class Start : uint8_t {
    kEarliest = 0,  // The oldest message still stored (the default).
    kLatest = 1,    // Only messages written after the group was created.
    kId = 2,        // At start_id (inclusive) in every partition.
    kTime = 3,      // At the first message with id time >= start_time.
  };
  Start start = Start::kEarliest;
  MessageId start_id;
  absl::Time start_time;

  // ---- Taken from each Group() call (not persisted; the latest call in a
  // process wins).

  // The lease of a claimed task when ClaimOptions::lease is zero.
  // Default: 30 s. Limits: 1 ms..720 h.
  absl::Duration lease = absl::Seconds(30);

  // A task handed out this many times without being completed (its lease
  // expired, it was released, or the process stopped while it was in
  // flight) is dead-lettered instead of being delivered again.
  // Default: 10. Limits: 1..1000000.
  uint32_t max_attempts = 10;

  // Delay before a task whose lease expired is delivered again, after
  // attempt n: min(backoff_cap, backoff_base * 2^(n-1)), then multiplied by
  // a random factor in [1 - backoff_jitter, 1 + backoff_jitter].
  // Defaults: 1 s, 5 min, 0.2. Limits: base and cap 0..720 h with
  // base <= cap; jitter 0..1.
  absl::Duration backoff_base = absl::Seconds(1);
  absl::Duration backoff_cap = absl::Minutes(5);
  double backoff_jitter = 0.2;

  // Ordered groups: a consumer that makes no call for this long loses its
  // partitions to the live consumers. Default: 10 s. Limits: 1 ms..720 h.
  absl::Duration ownership_lease = absl::Seconds(10);

  // Every topic's pacing, unless ConsumerGroup::SetTopicPacing set one of
  // its own. Default: none (no limit, no interval).
  TopicPacing pacing;

  // ---- Performance (taken from each Group() call).

  // Groups of topic layout queues: at most this many lanes with new
  // messages are kept in memory (about 500 bytes each, so the default is
  // about 64 MiB), whatever the number of topics. The others wait in the
  // queue's lane activity index, on disk, and take their turn in the same
  // round-robin order (a lane that had its turn and still has messages
  // goes to the back, behind the lanes waiting on disk; in an unordered
  // group it stays in memory, within this cap, while it waits for its
  // turn). Lanes with
  // tasks in flight or waiting to be delivered again stay in memory
  // besides, bounded by the tasks, and an unordered group's lanes with
  // more messages keep the next few read ahead (at most 16 MiB of heap a
  // group). A claim that may take only some lanes (a
  // partition or topic filter; any claim of an ordered group, which takes
  // one lane per idle partition of its consumer) may page in up to
  // max(256, 4 x ClaimOptions::max) lanes over this cap, so that lanes it
  // cannot take do not hide those it can. Default: 131072. Limits:
  // 1..2^24.
  size_t max_active_lanes = 131072;
};

// Options of Queue::DeleteGroup.
struct DeleteGroupOptions {
  // Delete the group even while tasks it handed out in this process are in
  // flight (under a lease): their holders' later Complete, Release,
  // Reject and Extend fail with NotFound. false: FailedPrecondition while
  // any is. Tasks that were in flight when an earlier process stopped are
  // held by no one and never block a delete. Default: false.
  bool force = false;
  // Keep the group's dead-letter queue ("<queue>.dead.<group>") as an
  // ordinary queue, with its messages, instead of dropping it. While it
  // exists, creating a group of the same name fails with AlreadyExists
  // (Queue::Group): drop or drain it first. Default: false.
  bool keep_dead_letters = false;
};

// Options of ConsumerGroup::Claim.
struct ClaimOptions {
  // Hand out at most this many tasks. Default: 1. Limits: 1..10000.
  uint32_t max = 1;

  // The tasks' lease. Zero: GroupOptions::lease. Limits: 0 or 1 ms..720 h.
  absl::Duration lease = absl::ZeroDuration();

  // Only tasks with one of these topics (within the group's scope). Empty:
  // all. With the `topic` layout this selects lanes and costs nothing; with
  // the `time` layout the claim reads past the messages of other topics
  // that no claim took yet, on every call, so prefer the topic layout for
  // per-topic claims. Limits: topics of at most 1024 bytes; an ordered
  // group takes a topic filter only with the `topic` layout (in the `time`
  // layout it would hand out messages out of order).
  std::vector<std::string> topics;

  // Only tasks of these partitions. Empty: all. Each < the queue's
  // partitions.
  std::vector<uint32_t> partitions;

  // When nothing is claimable, wait up to this long (by the Db's clock) for
  // something to claim: a message written, a lease expiring, a released
  // task coming due. The claim sleeps until one of them happens (woken by
  // the write path and the lease thread; it never polls), then claims.
  // Zero: return at once. Limits: 0..720h.
  absl::Duration wait = absl::ZeroDuration();

  // Ordered groups: the calling consumer's name (required, 1..256 bytes).
  // The claim joins the consumer to the group or renews its ownership, and
  // hands out only tasks of the partitions it owns. Ignored by other
  // groups.
  std::string consumer;
};

// A claimed message. Plain data: copy it, keep it, pass it back to
// Complete, Release or Extend of the group that handed it out.
struct Task {
  uint32_t partition = 0;
  int priority = 0;
  MessageId id;
  std::string topic;
  std::string key;
  std::string payload;
  // 1 the first time the message is handed out, +1 each time after (also
  // across restarts). Identifies this delivery: once the task is handed out
  // again, a Task with an older attempt can no longer be completed.
  uint32_t attempt = 0;
  // When the lease ends (by the Db's clock), unless extended.
  absl::Time lease_deadline;
  // The message's delayed-delivery time (InfinitePast() if none).
  absl::Time not_before = absl::InfinitePast();
  // Ordered groups: the consumer it was handed to (ClaimOptions::consumer).
  // Complete, Release and Extend of the task renew that consumer's
  // ownership lease (whoever calls them).
  std::string consumer;
};

// Why a task was dead-lettered. DO NOT CHANGE the values (persisted).
enum class DeadLetterReason : uint8_t {
  kLeaseExpired = 1,  // Its last lease expired.
  kReleased = 2,      // Its last holder released it.
  kInterrupted = 3,   // The process stopped while it was in flight.
  kRejected = 4,      // Its holder rejected it (ConsumerGroup::Reject).
};

// A dead-lettered message, as ListDeadLetters returns it.
struct DeadLetter {
  // Where it is in the dead-letter queue (dead_letter_queue()).
  uint32_t partition = 0;
  MessageId id;
  // The message as it was in the group's queue.
  uint32_t original_partition = 0;
  MessageId original_id;
  int priority = 0;
  std::string topic;
  std::string key;
  std::string payload;
  // Times it was handed out, and why it was given up.
  uint32_t attempts = 0;
  DeadLetterReason reason = DeadLetterReason::kLeaseExpired;
  absl::Time dead_at;
};

// A task of a group that is not done (Redis's XPENDING entry), as
// ListPending returns it.
struct PendingTask {
  enum class State : uint8_t {
    kInFlight,    // Handed out, under a lease.
    kRedelivery,  // Waiting to be handed out again (released, lease
                  // expired, or interrupted by a restart).
    kDelayed,     // Waiting to be handed out for the first time
                  // (Message::delay or not_before in the future).
  };
  uint32_t partition = 0;
  int priority = 0;
  std::string topic;
  MessageId id;
  // Times it was handed out (0: delayed, never yet).
  uint32_t attempt = 0;
  State state = State::kInFlight;
  // In flight: when it was claimed. Otherwise: when it is due (a due time
  // in the past: it goes to the next claim).
  absl::Time since;
  // In flight: its lease deadline. InfinitePast otherwise.
  absl::Time lease_deadline = absl::InfinitePast();
  // Ordered groups, in flight: the consumer it was handed to. Empty
  // otherwise.
  std::string consumer;
};

struct GroupStats {
  // Messages in scope not yet handed out, counted key by key. The count
  // stops at 100000: backlog_exact = false then says backlog is a lower
  // bound. With the `time` layout and a topic filter, the count also reads
  // past the messages of other topics. An unordered group of a `topic`
  // layout queue counts its active lanes and at most 1024 lanes waiting on
  // disk (a lane resting in memory counts if its turn is among those); if
  // others may have messages, backlog_exact is false. The count is of one
  // moment (a snapshot) and runs without the group's lock: claims and
  // completions go on while Stats counts.
  uint64_t backlog = 0;
  bool backlog_exact = true;
  // Tasks under a lease.
  uint64_t in_flight = 0;
  // Tasks waiting to be delivered again (released, lease expired, or
  // interrupted by a restart), due or not.
  uint64_t redelivery = 0;
  // Messages read past by the scan cursor whose not-before time has not
  // come yet (delayed delivery).
  uint64_t delayed = 0;
  // Messages in the dead-letter queue (and tasks about to go there).
  uint64_t dead_letters = 0;
  // Now minus the claim time of the oldest task in flight; zero if none.
  absl::Duration oldest_in_flight = absl::ZeroDuration();
  // Over all lanes with work: the largest gap between the completion
  // cursor and the scan cursor, in id time (how far a slow task holds the
  // completion cursor back), and the number of task records between them.
  absl::Duration max_cursor_lag = absl::ZeroDuration();
  uint64_t window_records = 0;
  // Lanes the group holds in memory: those with work or records.
  uint64_t lanes = 0;
  // Topics with pacing state in memory: a task in flight, or handed out
  // within their interval (with pacing on).
  uint64_t paced_topics = 0;
  // Ordered groups: live consumers.
  uint64_t consumers = 0;
};

// A live consumer of an ordered group, as Consumers returns it.
struct ConsumerInfo {
  std::string name;
  std::vector<uint32_t> partitions;  // Owned, ascending.
  // Ownership ends then unless renewed (a consumer blocked in a waiting
  // claim is renewed then; while its expiry is being processed, now).
  absl::Time lease_deadline;
};

// A durable, named consumer group of one queue. Obtained from Queue::Group;
// owned by the Db: valid until the Db is destroyed (after the queue is
// dropped or the group deleted by Queue::DeleteGroup, every call fails with
// NotFound; a group created again under the name is another object).
//
// Crash safety. Claim, Complete, Release and dead-lettering each write one
// LevelDB batch (with Options::sync_writes). After a crash or a reopen,
// every task that was in flight is claimable again at once (its attempt one
// higher, or dead-lettered if it had used max_attempts); completed tasks
// stay completed; cursors are where they were written. Lease expiries and
// Extend are not written: after a restart a task whose lease had expired
// waits no backoff. Released tasks keep their retry time across restarts.
//
// Storage failures. A call whose write fails returns Internal (or DataLoss)
// and the group stops: its in-memory state may be ahead of the disk, so
// every later call on it returns FailedPrecondition ("reopen the Db"),
// naming the first error, until the Db is reopened (db.h). Nothing written
// before is lost; the failed call's write may or may not have happened.
//
// Thread safety: all methods may be called concurrently from any threads.
// Calls on one group are serialized (claims read under the group's lock, so
// competing consumers never receive the same task).
class HQ_EXPORT ConsumerGroup {
 public:
  ConsumerGroup() = default;
  virtual ~ConsumerGroup() = default;
  ConsumerGroup(const ConsumerGroup&) = delete;
  ConsumerGroup& operator=(const ConsumerGroup&) = delete;

  virtual const std::string& name() const = 0;

  // Hands out up to options.max tasks, each under a lease: first, priority
  // by priority from the highest, tasks due for redelivery (oldest due
  // first), then new messages of that priority, taken round-robin across
  // the lanes (partitions, and topics in the topic layout) that have any.
  // Returns an empty vector when nothing is claimable now (or, with
  // options.wait, by the end of the wait). Messages older than the queue's
  // TTL are skipped. One write per call (and one more
  // when tasks are due for the dead-letter queue).
  // Errors: InvalidArgument (options out of range; an ordered group's claim
  // without a consumer, or with a topic filter in the time layout);
  // NotFound (the queue was
  // dropped, also during a wait); FailedPrecondition (the Db is closing,
  // also during a wait: destroying the Db wakes every waiting claim; or an
  // earlier write failed); Internal/DataLoss (storage).
  virtual absl::StatusOr<std::vector<Task>> Claim(
      const ClaimOptions& options) = 0;

  // Complete, Release, Reject and Extend know a task by its partition,
  // priority, topic, id and attempt (and its consumer in an ordered group);
  // they read nothing else of it (a dead letter's key and payload are read
  // from the queue, never from the Task).
  //
  // Completes tasks: they are never handed out again. All or nothing: if
  // any task is not held (its lease expired and it was handed out again, it
  // was completed or released, it comes from another group), the call
  // returns FailedPrecondition naming it and changes nothing. A task whose
  // lease expired but which was not handed out again can still be
  // completed. Duplicates in `tasks` are InvalidArgument. One write.
  virtual absl::Status Complete(std::span<const Task> tasks) = 0;

  // Gives a held task back, to be delivered again after `retry_after` (0:
  // at once), or dead-lettered if it has used max_attempts. Errors:
  // FailedPrecondition if not held or its lease expired; InvalidArgument
  // for a negative or infinite delay. One write.
  virtual absl::Status Release(const Task& task,
                               absl::Duration retry_after) = 0;

  // Dead-letters a held task at once, whatever its attempts (reason
  // kRejected): for a task its consumer knows will never succeed (AMQP's
  // reject without requeue). Errors: FailedPrecondition if not held or its
  // lease expired. One write (the dead letter and the task's removal, in
  // one batch).
  virtual absl::Status Reject(const Task& task) = 0;

  // Moves a held task's lease deadline to `lease` from now and updates
  // task->lease_deadline. Errors: FailedPrecondition if not held or its
  // lease already expired; InvalidArgument for a lease outside 1 ms..720 h.
  // Writes nothing.
  virtual absl::Status Extend(Task* task, absl::Duration lease) = 0;

  virtual absl::StatusOr<GroupStats> Stats() = 0;

  // Lists the group's pending tasks one by one (in flight, waiting for
  // redelivery, or delayed), at most `max` (1..10000), in the order of
  // their keys: partition, priority from the highest, topic (the `topic`
  // layout), id; starting after `after` (null: from the start; its
  // partition, priority, topic and id place it). The same tasks that
  // Stats() counts in in_flight, redelivery and delayed, as this process
  // sees them: after a restart, tasks that were in flight are listed as
  // redelivery. One exception, as in Stats(): an unordered group of a
  // `topic` layout queue lists the tasks a restart interrupted in lanes
  // not yet back in memory only from the lanes Stats() peeks at (at most
  // 1024). Reads the topics of a `time` layout queue's tasks (a read per
  // task listed). Errors: InvalidArgument (max out of range, `after` with
  // a partition or priority out of range); NotFound (the queue was
  // dropped); FailedPrecondition (the Db is closing, or an earlier write
  // failed); DataLoss (storage).
  virtual absl::StatusOr<std::vector<PendingTask>> ListPending(
      size_t max, const PendingTask* after = nullptr) = 0;

  // Sets `topic`'s own pacing, in place of GroupOptions::pacing (a site's
  // Crawl-delay), durably: it holds across restarts until cleared. Takes
  // effect at the topic's next hand-out. Errors: InvalidArgument (a topic
  // over 1024 bytes, a pacing out of range). One write.
  virtual absl::Status SetTopicPacing(std::string_view topic,
                                      const TopicPacing& pacing) = 0;
  // The pacing SetTopicPacing set for `topic`; nullopt if none (the topic
  // follows GroupOptions::pacing). DataLoss for a damaged record.
  virtual absl::StatusOr<std::optional<TopicPacing>> GetTopicPacing(
      std::string_view topic) = 0;
  // Removes `topic`'s own pacing (none: OK). One write.
  virtual absl::Status ClearTopicPacing(std::string_view topic) = 0;
  // The topics with a pacing of their own (SetTopicPacing) and their
  // pacing, at most `max` (1..10000), in byte order of the topic, starting
  // after `after` (null: from the start). Errors: InvalidArgument (max out
  // of range); NotFound (the queue was dropped); FailedPrecondition (the
  // Db is closing); DataLoss (a damaged record, or storage).
  virtual absl::StatusOr<std::vector<std::pair<std::string, TopicPacing>>>
  ListTopicPacing(size_t max, const std::string* after = nullptr) = 0;

  // Ordered groups: the live consumers and their partitions, by name.
  // Empty for other groups.
  virtual absl::StatusOr<std::vector<ConsumerInfo>> Consumers() = 0;

  // Ordered groups: `consumer` leaves now, its partitions going to the
  // other live consumers (tasks it holds stay held until completed or
  // expired). Its claims in progress (waiting) return at once, empty; a
  // later Claim naming it joins it again. Errors: NotFound if
  // it is not a live consumer; FailedPrecondition if the group is not
  // ordered.
  virtual absl::Status Leave(std::string_view consumer) = 0;

  // The dead-letter queue: an ordinary queue named
  // "<queue>.dead.<group>", created at the first dead letter with the
  // queue's partitions, priorities and layout and no TTL. Any scanner can
  // read it; each message keeps its topic, key, payload, partition and
  // priority. Dropping the group's queue drops it too; dropping it alone
  // forgets the group's dead letters.
  virtual std::string dead_letter_queue() const = 0;

  // Lists dead letters in (partition, id) order of the dead-letter queue,
  // at most `max` (1..10000), starting after `after` (null: from the start).
  virtual absl::StatusOr<std::vector<DeadLetter>> ListDeadLetters(
      size_t max, const DeadLetter* after = nullptr) = 0;

  // Puts dead letters back into the group's queue as new messages (new ids,
  // original topic, key, partition and priority) and removes them from the
  // dead-letter queue, in one atomic write. `results`, if not null, gets
  // the new ids in order. Errors: NotFound naming the first one that is not
  // (or no longer) a dead letter of this group; nothing is changed then.
  virtual absl::Status Requeue(std::span<const DeadLetter> letters,
                               std::vector<PutResult>* results) = 0;
};

}  // namespace hq

#endif  // HQ_GROUP_H_
