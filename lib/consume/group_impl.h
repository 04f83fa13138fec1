// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The consumer group engine (hq/group.h).
//
// In memory a group holds only lanes with work or records: a lane whose
// scan cursor is at its end and that has no task records is written back
// (its cursor record) and forgotten.
//
// Groups of topic layout queues are *paged*: the lanes with new messages
// come from a LaneSource (the queue's lane activity index, read from the
// group's own durable position, and a walk of the lanes written before the
// group existed) into a working set of at most
// GroupOptions::max_active_lanes lanes, as a claim wants them (PagedClaim,
// paged_claim.h). Load reads only the group's task records and its source
// position: nothing per topic.
//
// Groups of time layout queues (partitions x priorities lanes) get work
// from the write path: Queue::Put notes the lanes it wrote
// (NoteLaneWritten, a set under a small mutex of its own, never the group's
// lock), and the next call of the group takes them. At load one pass over
// the queue's lanes (lib/engine/lane_walk.h), joined with the group's cursor
// records, finds the lanes with messages past their scan cursor.
//
// A task lives in its lane's `tasks` map from the moment it is handed out
// until the completion cursor passes it. In-flight tasks hold a lease in the
// Db's LeaseManager, one per claim shared by its tasks (an extended task
// gets one of its own); its expiry action moves them to the redelivery set
// (writing nothing: after a crash, every in-flight record is claimable
// again anyway). Every change is made in memory and then written as one
// batch; if that write fails the group refuses every later call (the Db
// itself refuses writes until it is reopened, see db.h).

#ifndef HQ_LIB_CONSUME_GROUP_IMPL_H_
#define HQ_LIB_CONSUME_GROUP_IMPL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "hq/group.h"
#include "hq/lease.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "lib/consume/claim_records.h"
#include "lib/consume/claim_wakeup.h"
#include "lib/consume/dead_letter_queue.h"
#include "lib/consume/group_claim_pass.h"
#include "lib/consume/group_cursors.h"
#include "lib/consume/group_lane.h"
#include "lib/consume/group_records.h"
#include "lib/consume/lane_set.h"
#include "lib/consume/lane_source.h"
#include "lib/consume/lease_shares.h"
#include "lib/consume/ordered_consumers.h"
#include "lib/consume/pace_records.h"
#include "lib/consume/pacer.h"
#include "lib/consume/parked_lanes.h"
#include "lib/consume/read_ahead.h"
#include "lib/consume/redeliveries.h"
#include "lib/consume/resting_lanes.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "lib/util/sync.h"

namespace hq {

class DbImpl;
class LaneTurn;
class PagedClaim;

class GroupImpl final : public ConsumerGroup,
                        public LaneListener,
                        public LaneSetHooks {
 public:
  GroupImpl(DbImpl* db, QueueImpl* queue, std::string name,
            const format::GroupRecord& record, const GroupOptions& options);
  ~GroupImpl() override;

  // Reads the group's records and finds the lanes with work. Called once,
  // before the group is returned to anyone.
  absl::Status Load();

  const std::string& name() const override { return name_; }
  absl::StatusOr<std::vector<Task>> Claim(const ClaimOptions& options) override;
  absl::Status Complete(std::span<const Task> tasks) override;
  absl::Status Release(const Task& task, absl::Duration retry_after) override;
  absl::Status Reject(const Task& task) override;
  absl::Status Extend(Task* task, absl::Duration lease) override;
  absl::StatusOr<GroupStats> Stats() override;
  absl::StatusOr<std::vector<PendingTask>> ListPending(
      size_t max, const PendingTask* after) override;
  absl::StatusOr<std::vector<ConsumerInfo>> Consumers() override;
  absl::Status Leave(std::string_view consumer) override;
  absl::Status SetTopicPacing(std::string_view topic,
                              const TopicPacing& pacing) override;
  absl::StatusOr<std::optional<TopicPacing>> GetTopicPacing(
      std::string_view topic) override;
  absl::Status ClearTopicPacing(std::string_view topic) override;
  absl::StatusOr<std::vector<std::pair<std::string, TopicPacing>>>
  ListTopicPacing(size_t max, const std::string* after) override;
  std::string dead_letter_queue() const override;
  absl::StatusOr<std::vector<DeadLetter>> ListDeadLetters(
      size_t max, const DeadLetter* after) override;
  absl::Status Requeue(std::span<const DeadLetter> letters,
                       std::vector<PutResult>* results) override;

  const format::GroupRecord& record() const { return record_; }
  void SetOptions(const GroupOptions& options);
  // From the write path: `lane_prefix` (a message lane prefix) was written.
  void NoteLaneWritten(std::string_view lane_prefix) override;
  // Wakes blocked claims (they return if the Db is closing, the queue
  // was dropped or the group deleted).
  void WakeWaiters();
  // Queue::DeleteGroup: under the group's lock (no call of the group runs),
  // fails with FailedPrecondition if tasks are in flight and not `force`,
  // else runs `write` (the tombstone) and, if it succeeded, marks the group
  // deleted: every later call fails with NotFound. NotFound if the queue
  // was dropped or the group deleted already.
  absl::Status BeginDelete(bool force, absl::FunctionRef<absl::Status()> write)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Tasks handed out and completed since the group was loaded.
  uint64_t claimed_total() const { return claimed_total_.load(); }
  uint64_t completed_total() const { return completed_total_.load(); }
  // When the group was loaded, by the Db's clock.
  absl::Time loaded_at() const { return loaded_at_; }
  // Claims in a wait, and of them those asleep.
  int TEST_Waiters() const { return wakeup_.waiters(); }
  int TEST_Sleepers() const { return wakeup_.sleepers(); }
  // Besides LaneSetHooks. Since load: cursor records read, and seeks of lanes
  // for new messages. Bytes of messages read ahead now.
  uint64_t TEST_CursorReads() ABSL_LOCKS_EXCLUDED(mu_);
  uint64_t TEST_LaneSeeks() ABSL_LOCKS_EXCLUDED(mu_);
  size_t TEST_ReadAheadBytes() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  // A paged group's claim (paged_claim.h) works on its working set; a
  // lane's turn in a claim (lane_turn.h) on the lane and its tasks.
  friend class LaneTurn;
  friend class PagedClaim;

  // Paged groups: Stats and ListPending look at most at this many lanes
  // waiting in the source.
  static constexpr size_t kPeekLanes = 1024;
  // The bytes of messages a group's lanes keep read ahead, in all
  // (ReadAhead; documented with GroupOptions::max_active_lanes).
  static constexpr size_t kReadAheadBytes = size_t{16} << 20;

  // Unix ms of `t`, 0 before the epoch.
  static uint64_t ToMs(absl::Time t);

  using Lane = GroupLane;
  using Rec = GroupTask;
  using Consumer = OrderedConsumers::Consumer;
  using Part = OrderedConsumers::Part;
  // One claim attempt. Sets `next_due` to the earliest redelivery due after
  // now (InfiniteFuture if none).
  // Sets `left` if the (ordered) consumer left since the Claim call began
  // (OrderedConsumers::LeftSince `leaves_before`). Sets `more`
  // if a paged group stopped at its budget with lanes left to examine.
  absl::StatusOr<std::vector<Task>> ClaimOnce(
      const ClaimOptions& o, const std::vector<bool>& partitions,
      uint64_t leaves_before, absl::Time* next_due, bool* left, bool* more)
      ABSL_LOCKS_EXCLUDED(mu_);
  // ClaimOnce until it has o.max tasks, or the group has examined every
  // lane it may take (a paged group's ClaimOnce stops at a budget of lanes,
  // so that it does not hold the lock for long).
  absl::StatusOr<std::vector<Task>> ClaimChunks(
      const ClaimOptions& o, const std::vector<bool>& partitions,
      uint64_t leaves_before, absl::Time* next_due, bool* left)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Checks a claim's options against the group and its queue; returns its
  // partition filter (partitions[p]: p may be claimed; empty: all).
  absl::StatusOr<std::vector<bool>> CheckClaim(const ClaimOptions& o) const;
  // Sleeps until wakeup_ moves past `seen`, or the Db's clock
  // reaches `wake_at` (a timer on it wakes the claim).
  absl::Status SleepUntilWoken(uint64_t seen, absl::Time wake_at)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Usable() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // NotFound if the queue was dropped or the group deleted; else OK.
  absl::Status Gone() const;
  // Records `s` as the group's sticky error if it is a write failure.
  absl::Status Fail(absl::Status s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status LoadRecords() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status DiscoverLanes() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lane with prefix `prefix`, created (its cursor read, or taken from
  // `cursor`) if not in memory.
  absl::StatusOr<Lane*> GetLane(std::string_view prefix,
                                const format::CursorValue* cursor = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // GetLane for a lane not in memory, which keeps `prefix`.
  absl::StatusOr<Lane*> NewLane(std::string prefix,
                                const format::CursorValue* cursor)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Activate(Lane* lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Every lane list that Activate fills.
  template <typename F>
  void ForEachActive(F f) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  using ClaimPass = GroupClaimPass;
  // Collects the tasks of an unordered or an ordered claim.
  absl::Status CollectUnordered(ClaimPass* p)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CollectOrdered(Consumer* consumer,
                              const std::vector<bool>& partitions, ClaimPass* p)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Paged groups.
  bool paged() const ABSL_NO_THREAD_SAFETY_ANALYSIS { return lanes_.paged(); }
  // The source, constant after construction (null if not paged).
  LaneSource* source() const ABSL_NO_THREAD_SAFETY_ANALYSIS {
    return lanes_.source();
  }
  size_t MaxActive() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return lanes_.max_active();
  }
  // Paged groups: reads the lane `prefix` (not in memory) into memory; the
  // tasks a restart interrupted in it are due at `now`, and added to
  // `*recovered`.
  absl::StatusOr<Lane*> ReadInLane(std::string prefix, absl::Time now,
                                   leveldb::Iterator* it, size_t* recovered)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Lets go of the source position `lane` holds, and deletes its park
  // record (in `batch`) unless it is parked out, if it needs neither any
  // more: it is drained or hinted again, and its open tasks all have
  // records.
  void MaybeRelease(Lane* lane, leveldb::WriteBatch* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // ListPending (pending_list.h): the lanes to list from, in key order from
  // `start` (a lane prefix): in memory with tasks, and (paged groups)
  // lanes peeked in the source that are not in memory (null).
  absl::StatusOr<std::map<std::string, const Lane*>> PendingLanes(
      const std::string& start, leveldb::Iterator* it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Stats (group_backlog.h counts the backlog): the counts kept in memory.
  void CountTasks(absl::Time now, GroupStats* st)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves the tasks LoadWindow found interrupted to the redeliveries, due
  // at `now`, in id order.
  void Recover(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Hands out the due redeliveries of `priority` that p->match accepts.
  absl::Status CollectDue(int priority, ClaimPass* p)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ordered groups: the expiry action of consumer `name`'s ownership lease
  // of generation `gen` (OrderedConsumers::Expired).
  void OnConsumerExpired(const std::string& name, uint64_t gen)
      ABSL_LOCKS_EXCLUDED(mu_);
  // The task `rec` of `lane` stops being in flight.
  void EndInFlight(Lane* lane, Rec* rec) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Pacing (group_pacing.cc). Whether a task of `topic` is held back at
  // `now` by its topic's pacing (false when pacing is off).
  absl::StatusOr<bool> PacedOut(std::string_view topic, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes the lanes noted by the write path.
  absl::Status TakeNotes() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Marks `rec` in flight (attempt + 1) and appends its record unless this
  // is its first attempt and `covered` (the scan cursor moves past it).
  // Notes it in handed_.
  void HandOut(Lane* lane, MessageId id, Rec* rec, absl::Time now,
               absl::Duration lease, bool covered, Task* t,
               leveldb::WriteBatch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PutTask(Lane* lane, MessageId id, Rec* rec, leveldb::WriteBatch* batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After Settle: appends a "completed" record for each of `done` that the
  // completion cursor did not pass.
  void PutDone(const std::vector<std::pair<Lane*, MessageId>>& done,
               leveldb::WriteBatch* batch) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // At load: the ids between a lane's completion and scan cursors without a
  // record were in flight for the first time.
  absl::Status LoadWindow(Lane* lane, MessageId cutoff, leveldb::Iterator* it)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Queues `rec` for the dead-letter queue (written by FlushDying).
  void MarkDying(Lane* lane, MessageId id, Rec* rec, DeadLetterReason reason)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // At load: `rec` was in flight when the process stopped.
  void Interrupted(Lane* lane, MessageId id, Rec* rec)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  using ClaimLog = ClaimRecords::Log;
  // Erases completed records at the head of the lane, moves the completion
  // cursor and appends the changed cursor record; or, if `log` is not null
  // and the lane handed out a first message in this call, an entry of
  // `log` in its place.
  void Settle(Lane* lane, leveldb::WriteBatch* batch, ClaimLog* log = nullptr)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Forgets the idle `lane`.
  void Forget(Lane* lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After a successful write: cursors as written; idle lanes forgotten,
  // or resting if they went behind (RestingLanes).
  void Committed(std::vector<Lane*>* touched)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Touch(Lane* lane, std::vector<Lane*>* touched)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status Write(const leveldb::WriteBatch& batch)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes the dying tasks to the dead-letter queue.
  absl::Status FlushDying() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // If there are dead records but no dead-letter queue (a user dropped
  // it), deletes the records.
  absl::Status ForgetDeadIfQueueGone() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Release and Reject: takes the held `task` out of flight (its lease
  // cancelled after, its ordered consumer kept alive); `next`, called under
  // mu_, decides what becomes of it and writes that. Wakes waiting claims
  // if it succeeded.
  absl::Status LetGo(const Task& task,
                     absl::FunctionRef<absl::Status(Lane*, Rec*)> next)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Finds the held task `t`: its lane and record, or FailedPrecondition.
  absl::Status FindHeld(const Task& t, bool allow_expired, Lane** lane,
                        Rec** rec) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Duration Backoff(uint32_t attempts) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Leases (lib/consume/lease_shares.h).
  // Creates one share, with a lease of `lease`, over the tasks handed_
  // names.
  absl::Status ShareLease(absl::Duration lease)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Takes `rec` (in flight) out of its share; returns the share's lease,
  // to cancel outside the lock, if that left it empty, else 0.
  LeaseId LeaveShare(Rec* rec) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The lease of share `share` expired: its tasks still in flight wait to
  // be delivered again (or die, at max_attempts).
  void OnLeaseExpired(uint64_t share) ABSL_LOCKS_EXCLUDED(mu_);

  // Releases the source position `lane` holds, if any (Lane::let_go).
  void LetGoHold(Lane* lane) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // Constant after construction.
  DbImpl* const db_;
  QueueImpl* const queue_;
  const std::string name_;
  const format::GroupRecord record_;
  const GroupRecords records_;
  const PaceRecords pace_records_;
  const DeadLetterQueue dead_queue_;

  // Where blocked claims wait.
  ClaimWakeup wakeup_;
  // Set once, by BeginDelete, under mu_.
  std::atomic<bool> deleted_{false};
  std::atomic<uint64_t> claimed_total_{0};
  std::atomic<uint64_t> completed_total_{0};
  const absl::Time loaded_at_;

  Mutex mu_;
  GroupOptions options_ ABSL_GUARDED_BY(mu_);
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  // The bytes the lanes read ahead (Lane::ahead); before lanes_, whose
  // lanes give theirs back when destroyed.
  ReadAhead::Budget ahead_budget_ ABSL_GUARDED_BY(mu_){
      .limit = kReadAheadBytes};
  // The lanes in memory; paged groups (topic layout) page them from a
  // LaneSource.
  LaneSet<Lane> lanes_ ABSL_GUARDED_BY(mu_);
  // The tasks the claim in progress handed out, in its order (HandOut).
  struct Handed {
    Lane* lane;
    MessageId id;
    Rec* rec;
  };
  std::vector<Handed> handed_ ABSL_GUARDED_BY(mu_);
  LeaseShares shares_ ABSL_GUARDED_BY(mu_);
  // Per priority: lanes that may have new messages, in round-robin order.
  std::vector<std::deque<Lane*>> active_ ABSL_GUARDED_BY(mu_);
  // Tasks waiting to be delivered again, or delayed.
  Redeliveries waiting_ ABSL_GUARDED_BY(mu_);
  // Tasks to dead-letter at the next call (their lease expired on the lease
  // thread, or they were interrupted by a restart).
  std::vector<std::pair<Lane*, MessageId>> dying_ ABSL_GUARDED_BY(mu_);
  // During Load: tasks that were in flight when the process stopped.
  std::vector<std::pair<Lane*, MessageId>> recovered_ ABSL_GUARDED_BY(mu_);
  uint64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t dead_count_ ABSL_GUARDED_BY(mu_) = 0;
  std::mt19937_64 rng_ ABSL_GUARDED_BY(mu_);
  Pacer pacer_ ABSL_GUARDED_BY(mu_);
  // Unordered paged groups: idle lanes that went behind.
  RestingLanes resting_ ABSL_GUARDED_BY(mu_);
  // Lanes to hint again in the next write.
  std::vector<std::string> rehint_ ABSL_GUARDED_BY(mu_);
  // Ordered paged groups: the park records.
  ParkedLanes parked_ ABSL_GUARDED_BY(mu_);
  // The lanes' cursor records.
  GroupCursors cursors_ ABSL_GUARDED_BY(mu_);
  // Paged groups: the claim records.
  ClaimRecords claims_ ABSL_GUARDED_BY(mu_);
  std::string prefix_scratch_ ABSL_GUARDED_BY(mu_);    // FindHeld's lane.
  uint64_t test_lane_seeks_ ABSL_GUARDED_BY(mu_) = 0;  // TEST_LaneSeeks.

  // Ordered groups: the live consumers and the partitions.
  OrderedConsumers consumers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_GROUP_IMPL_H_
