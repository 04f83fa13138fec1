// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The subscription engine (hq/subscription.h).
//
// A subscription is a DeliveryPool job. Each run (RunSlice) takes the lanes
// with new messages (time layout: the lanes the write path noted; topic
// layout: lanes paged in from a LaneSource while fewer than
// max_active_lanes are active, doc/massive_topics.md), reads new messages of
// its active lanes into the per-lane buffers while the total stays under the
// buffer limits (the MessageScanner half), then calls the listeners for up to
// kMessagesPerSlice buffered messages, lane by lane (the MessageSender
// half), outside the subscription's lock, and writes the checkpoints when
// checkpoint_messages deliveries have piled up or the checkpoint timer
// fired. A lane whose listener failed waits for its retry time (a timer
// schedules the job again). Only lanes with work, buffered messages or
// checkpoints not yet written are held in memory (a LaneSet, which notes and
// pages them in). A paged lane holds its source's position back until its
// checkpoint at its end, or a new hint for it, is written with the
// position.
//
// A lane the walk saw hold one message, paged in while no lane is in the
// working set, with no checkpoint record and nothing expired, is a Single,
// not a Lane: no map entry, no buffer of its own. Its message waits in
// singles_ (delivered in walk order), then its hold waits in
// passed_singles_ until the next checkpoint write lets it go, exactly as
// the Lane's hold would (and its checkpoint is written, or implied by its
// floor, as the Lane's would be). A Single becomes a Lane when its
// listener refuses it, or when a hint names a lane of its priority
// (Promote): so a prefix is never a Single and a Lane at once.
//
// Threads: RunSlice runs on one pool thread at a time. The lane buffers are
// changed under mu_, and only by the running slice, which also reads the
// front message of a buffer outside mu_ while it calls the listeners.

#ifndef HQ_LIB_CONSUME_SUBSCRIPTION_IMPL_H_
#define HQ_LIB_CONSUME_SUBSCRIPTION_IMPL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "hq/lease.h"
#include "hq/subscription.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "lib/consume/lane_notes.h"
#include "lib/consume/lane_set.h"
#include "lib/consume/lane_source.h"
#include "lib/consume/record_ceiling.h"
#include "lib/engine/delivery_pool.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "lib/util/sync.h"
#include "lib/util/vector_fifo.h"

namespace hq {

class DbImpl;

class SubscriptionImpl final : public Subscription,
                               public LaneListener,
                               public DeliveryPool::Job,
                               public LaneSetHooks {
 public:
  SubscriptionImpl(DbImpl* db, QueueImpl* queue, std::string name,
                   const format::SubRecord& record,
                   const SubscribeOptions& options, MessageListener* listener);
  ~SubscriptionImpl();

  // Finds the lanes with messages past their checkpoints: time layout, one
  // pass over the queue's lanes; topic layout, reads the source
  // position (nothing per topic). Called once, before Start.
  absl::Status Load();
  // Starts delivery.
  void Start();
  // Stops delivery: when it returns no listener call is running or will
  // run. Then, if `checkpoint`, writes the checkpoints.
  absl::Status Stop(bool checkpoint);

  const format::SubRecord& record() const { return record_; }
  // Adds a listener (called after the earlier ones) and takes the per-call
  // options. InvalidArgument if `listener` is already one of them.
  absl::Status AddListener(MessageListener* listener,
                           const SubscribeOptions& options);

  // Subscription.
  const std::string& name() const override { return name_; }
  absl::StatusOr<SubscriptionStats> Stats() override { return Stats(true); }
  // Stats, with `lanes` filled only if `with_lanes`: without, it reads no
  // checkpoint record of a lane not in memory (a time layout's idle
  // lanes), as the live status file needs. Either way it is bounded by the
  // lanes in memory and the source's peek, not by the topics. It holds the
  // subscription's lock only to copy the state in memory and peek at the
  // source; the checkpoints and the lag are read after, on a snapshot.
  absl::StatusOr<SubscriptionStats> Stats(bool with_lanes);
  absl::Status Checkpoint() override;

  // LaneListener.
  void NoteLaneWritten(std::string_view lane_prefix) override;

  // DeliveryPool::Job.
  bool RunSlice() override;

  static constexpr size_t kMessagesPerSlice = 256;

  // Besides LaneSetHooks: lane turns that read the lane (seeked it).
  uint64_t TEST_LaneReads() ABSL_LOCKS_EXCLUDED(mu_);
  // Chunks of singles' values held (freed once their singles are
  // delivered).
  size_t TEST_ValueChunks() ABSL_LOCKS_EXCLUDED(mu_);
  // Sets a function that each read pass calls, under the subscription's
  // lock, once its iterator is made (nullptr: none).
  void TEST_SetPassHook(std::function<void()> hook) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  struct Buffered {
    MessageId id;
    std::string topic;  // Time layout only: a topic layout's is the lane's.
    std::string key, payload;
    absl::Time not_before;
  };
  // LaneBase::active: in active_ (LaneSet::Enter).
  struct Lane : LaneBase {
    MessageId read;  // The next id to read into buf.
    // The checkpoint as last written, or implied by the walk's floor...
    MessageId written;
    bool written_exists = false;  // ...if one was.
    bool record = false;          // A checkpoint record is on disk.
    // A message was delivered since the checkpoint was last written.
    bool delivered = false;
    bool touched = false;  // In touched_.
    // Paged: its last turn read it to its end (cleared by Activate).
    bool at_end = false;
    VectorFifo<Buffered> buf;
    bool ready = false;  // In ready_: buf is not empty.
    size_t resume = 0;   // The listener to call next for buf.front().
    uint32_t failures = 0;
    // Waiting for a retry: buf holds only the head (counted in blocked_),
    // and the lane is not in active_ (reread: it goes back after the head).
    bool blocked = false;
    bool reread = false;
    // Paged: it left the active lanes with messages to read (it needs a
    // new hint when it leaves memory).
    bool rehint = false;
    absl::Time retry_at = absl::InfinitePast();
    // The checkpoint: every message below it was delivered (or skipped).
    MessageId next() const { return buf.empty() ? read : buf.front().id; }
  };

  // The stored values of singles paged in by one pass, kept until each of
  // them is delivered or became a Lane.
  struct ValueChunk {
    std::string data;
    size_t live = 0;  // Singles whose value is here.
  };
  // A one-message walked lane not in lanes_ (see the file comment).
  struct Single {
    std::string prefix;
    size_t topic_at = 0;  // Its topic: prefix.substr(topic_at).
    uint32_t partition = 0;
    int priority = 0;
    LaneSource::Hold hold;
    bool floored = false;  // Lane::written_exists: its start is its floor.
    MessageId start;       // Its checkpoint when it was paged in.
    MessageId id;          // Its message.
    // Where the message's stored value is, until it is delivered:
    // data.substr(at, size) of `chunk`, or of values_ while `chunk` is
    // null (in the pass that paged it in).
    ValueChunk* chunk = nullptr;
    size_t at = 0;
    size_t size = 0;
    size_t payload_size = 0;
    std::string_view topic() const {
      return std::string_view(prefix).substr(topic_at);
    }
  };

  bool InScope(uint32_t partition, std::string_view topic) const;
  // The checkpoint of the lane `prefix` (of `partition` and `priority`) if
  // it has no record: its floor if the source's position (as last loaded
  // or written) passed it (*floored set), else the subscription's start
  // (doc/format.md, "Walk floors").
  MessageId Absent(std::string_view prefix, uint32_t partition, int priority,
                   bool* floored) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Paged: whether the floor may imply the checkpoint of `lane`, which has
  // no record: it is idle, its last turn read it to its end, and its
  // checkpoint is at or below its floor. Its record is then written only
  // if the batch's position does not pass it (WriteCheckpoints).
  bool FloorMayCover(const Lane& lane) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Paged: whether the floor of `partition` (as last loaded or written)
  // is at or past `checkpoint` (and past the subscription's start).
  bool FloorAtOrPast(uint32_t partition, MessageId checkpoint) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<Lane*> GetLane(std::string_view prefix,
                                const MessageId* checkpoint = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Activate(Lane* lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status TakeNotes() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool paged() const ABSL_NO_THREAD_SAFETY_ANALYSIS { return lanes_.paged(); }
  // The source, constant after construction (null if not paged).
  LaneSource* source() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return lanes_.source();
  }
  size_t MaxActive() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return lanes_.max_active();
  }
  // Paged: takes lanes from the source, highest priority first, while
  // fewer than MaxActive are active and the buffers are not full (at most
  // kPageInBudget a call, and no more than the buffers have room for
  // messages).
  absl::Status PageIn(leveldb::Iterator* it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Admits the lane of `t`. While the working set is empty and the buffers
  // have room, a lane the walk saw hold one message (not waiting for a
  // retry) has its turn at once: that message is buffered, as Fill would
  // buffer it, and the lane does not join the working set.
  absl::Status Admit(LaneSource::Taken* t, leveldb::Iterator* it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Admit's light path: if `t` is a walked lane of one message that can be
  // a Single (see the file comment), makes it one (or lets its hold go if
  // its message is behind its checkpoint) and sets *done.
  absl::Status AdmitSingle(LaneSource::Taken* t, bool* done)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes every Single of `priority` (waiting or passed) a Lane in lanes_,
  // in the state a Lane in its place would have. Waiting ones join ready_.
  absl::Status Promote(int priority) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The stored value of `single`'s message (not yet delivered).
  std::string_view ValueOf(const Single& single) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // `single` no longer needs its value: a chunk left with none is freed
  // once the chunks before it are.
  void DropValue(Single* single) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // At a pass's end: the values it appended become a chunk of the
  // singles it paged in.
  void SealValues() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // DataLoss for the malformed stored value of message `id`.
  absl::Status MalformedMessage(MessageId id) const;
  // Makes `single` a Lane in lanes_, in the state a Lane in its place
  // would have; `delivered`: its message was (else it is buffered).
  absl::StatusOr<Lane*> LaneOf(Single* single, bool delivered)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls the listeners for singles_ from the front (at most `budget`);
  // returns how many were delivered. A refused one becomes a Lane waiting
  // for its retry. REQUIRES: called by the running slice.
  size_t DeliverSingles(size_t budget,
                        const std::vector<MessageListener*>& listeners,
                        bool* checkpoint_due) ABSL_LOCKS_EXCLUDED(mu_);
  // The listener `refused` refused the head of `lane`'s buffer: the lane
  // waits for a retry (Deliver).
  void Refused(Lane* lane, size_t refused) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts one delivery; true once checkpoint_messages are not written.
  bool Delivered() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A turn of `lane`, not waiting for a retry, with the pass's iterator
  // `it`: expired messages skipped; the message the walk kept for it
  // buffered if it has one (LaneSet::TakeWalked: all a read would find),
  // else its messages read (ReadTurn); then EndTurn.
  absl::Status Turn(Lane* lane, leveldb::Iterator* it, bool behind)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a turn that read `lane` (drained: to its end): the lane leaves
  // the working set if it is drained or `behind`, becomes ready if it has
  // messages buffered, and is forgotten or touched (Fill).
  void EndTurn(Lane* lane, bool drained, bool behind)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lane `prefix`, not in memory, read in (its checkpoint is
  // `checkpoint`, or read if null).
  absl::StatusOr<Lane*> ReadIn(std::string prefix,
                               const MessageId* checkpoint = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Paged: the source may have lanes not yet taken...
  bool SourcePending() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ...and they wait for a place among the active lanes...
  bool SourceWaiting() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ...or the next slice can page them in (or the write path noted a
  // write the next slice is to look for).
  bool SourceHasMore() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Adds to st->lag the messages of the lane from `from` in scope (up to
  // the limit of the count).
  absl::Status CountLag(std::string_view lane_prefix, MessageId from,
                        leveldb::Iterator* it, SubscriptionStats* st) const;
  // What Stats reads after letting go of the lock: lanes whose lag to
  // count from a position, and lanes waiting in the source whose
  // checkpoint to read first (with their partition, priority and topic).
  // `exact`: no more lanes wait than were peeked.
  struct StatsPlan {
    std::vector<std::pair<std::string, MessageId>> count;
    std::vector<std::pair<std::string, LaneCheckpoint>> stored;
    bool exact = true;
  };
  // Paged: plans the lag of up to kPeekLanes lanes waiting in the source.
  absl::Status PlanWaiting(MessageId cutoff, leveldb::Iterator* it,
                           StatsPlan* plan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Counts the lag of plan.stored from their checkpoints read with `ro`.
  absl::Status CountStored(const StatsPlan& plan, MessageId cutoff,
                           const leveldb::ReadOptions& ro,
                           leveldb::Iterator* it, SubscriptionStats* st) const;
  // Adds to st->lanes the checkpoint of every lane not in `in_memory`, read
  // with `ro` (one per record: O(lanes with one)).
  absl::Status AddStoredLanes(const absl::flat_hash_set<std::string>& in_memory,
                              const leveldb::ReadOptions& ro,
                              SubscriptionStats* st) const;
  // Whether `lane` can leave memory once its checkpoint is written.
  static bool Idle(const Lane& lane);
  bool Full() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Reads new messages into the buffers while there is room.
  absl::Status Fill() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // One turn of `lane` in Fill: reads its messages from lane->read with
  // `it` into its buffer, a bounded number; sets `drained` if it read to
  // the lane's end.
  absl::Status ReadTurn(Lane* lane, leveldb::Iterator* it, bool* drained)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Decodes the stored value `value` of message `id` into *b (its topic
  // left empty); DataLoss if it is malformed.
  absl::Status Decode(MessageId id, std::string_view value, Buffered* b) const;
  // Adds the message `id` of `lane` (stored value `value`) to its buffer.
  absl::Status Buffer(Lane* lane, MessageId id, std::string_view topic,
                      std::string_view value)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Dirty(const Lane& lane) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the checkpoints that moved; forgets idle lanes. Looks at every
  // lane in memory if `all`, else at the lanes touched since the last call
  // (those that delivered, failed or left the working set: what a lane
  // must do to become idle, or to have delivered what its checkpoint
  // covers).
  absl::Status WriteCheckpoints(bool all = false)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Notes `lane` for the next WriteCheckpoints (once).
  void Touch(Lane* lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Calls the listeners for buffered messages of `lane` (at most `budget`).
  // Returns how many were delivered; stops, setting *checkpoint_due, once
  // checkpoint_messages deliveries are not checkpointed. REQUIRES: called by
  // the running slice.
  size_t Deliver(Lane* lane, size_t budget,
                 const std::vector<MessageListener*>& listeners,
                 bool* checkpoint_due) ABSL_LOCKS_EXCLUDED(mu_);
  // A timer on the Db's clock that schedules this job (and, if
  // `checkpoint`, makes it write the checkpoints).
  void ArmTimer(absl::Duration after, bool checkpoint)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Fail(absl::Status s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::string CheckpointKey(std::string_view lane_prefix) const;

  DbImpl* const db_;
  QueueImpl* const queue_;
  DeliveryPool* const pool_;
  const std::string name_;
  const format::SubRecord record_;
  std::vector<bool> partition_set_;  // Empty: all.
  absl::flat_hash_set<std::string> topic_set_;

  Mutex mu_;
  SubscribeOptions options_ ABSL_GUARDED_BY(mu_);
  std::vector<MessageListener*> listeners_ ABSL_GUARDED_BY(mu_);
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  // The lanes in memory; paged from a LaneSource in the topic layout.
  LaneSet<Lane> lanes_ ABSL_GUARDED_BY(mu_);
  std::deque<Lane*> active_ ABSL_GUARDED_BY(mu_);
  std::deque<Lane*> ready_ ABSL_GUARDED_BY(mu_);
  // Singles whose message waits (changed only by the running slice, which
  // reads the front's message outside mu_), and those delivered, whose
  // holds and checkpoints WriteCheckpoints takes.
  VectorFifo<Single> singles_ ABSL_GUARDED_BY(mu_);
  std::vector<Single> passed_singles_ ABSL_GUARDED_BY(mu_);
  // Singles (waiting or passed) per priority: Promote has nothing to do
  // for a priority without any.
  std::vector<size_t> singles_of_ ABSL_GUARDED_BY(mu_);
  // The values of the singles the pass in progress paged in, then their
  // chunks, oldest first (a chunk's address is stable: the running slice
  // reads a chunk's data outside mu_ while it calls the listeners).
  std::string values_ ABSL_GUARDED_BY(mu_);
  std::deque<ValueChunk> chunks_ ABSL_GUARDED_BY(mu_);
  // Lanes WriteCheckpoints looks at next (Touch), each once.
  std::vector<Lane*> touched_ ABSL_GUARDED_BY(mu_);
  uint64_t buffered_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t buffered_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t delivered_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t failed_ ABSL_GUARDED_BY(mu_) = 0;
  // Deliveries since the checkpoints were last written.
  uint64_t since_checkpoint_ ABSL_GUARDED_BY(mu_) = 0;
  bool checkpoint_due_ ABSL_GUARDED_BY(mu_) = false;
  bool checkpoint_timer_ ABSL_GUARDED_BY(mu_) = false;
  // A lane that left the active ones with messages to read has nothing
  // buffered: WriteCheckpoints gives it a new hint.
  bool rotated_idle_ ABSL_GUARDED_BY(mu_) = false;
  // Paged: the greatest key of the subscription's checkpoint records (read
  // at Load, raised by WriteCheckpoints, which alone writes them once it
  // exists): a lane above it has no checkpoint to read.
  RecordCeiling checkpoint_ceiling_ ABSL_GUARDED_BY(mu_);
  // Lanes waiting for a retry, and their head messages' payload bytes.
  uint64_t blocked_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t blocked_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool started_ ABSL_GUARDED_BY(mu_) = false;  // Start was called.
  // Fill's TTL cutoff: messages below it are skipped.
  MessageId cutoff_ ABSL_GUARDED_BY(mu_);
  uint64_t test_lane_reads_ ABSL_GUARDED_BY(mu_) = 0;  // TEST_LaneReads.
  std::function<void()> test_pass_hook_ ABSL_GUARDED_BY(mu_);
  // Live timers (cancelled by Stop).
  absl::flat_hash_set<LeaseId> timers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_SUBSCRIPTION_IMPL_H_
