// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The tasks of a consumer group that wait to be handed out again (after a
// lease expiry, a Release, or a restart that interrupted them) or for the
// first time (a delayed message, Message::not_before): per priority, in
// due-time order, ties in the order they began to wait. A waiting task is
// still in its lane's `tasks` (GroupLane); this is the index claims read
// to find what is due.
//
// Not thread-safe: its group calls it under the group's lock
// (GroupImpl::mu_). A lane stays in memory while a task of it waits.

#ifndef HQ_LIB_CONSUME_REDELIVERIES_H_
#define HQ_LIB_CONSUME_REDELIVERIES_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <vector>

#include "absl/time/time.h"
#include "hq/message.h"
#include "lib/consume/group_lane.h"
#include "lib/format/format.h"

namespace hq {

// A waiting task's place among its priority's redeliveries.
struct GroupWaitKey {
  absl::Time due;
  uint64_t seq;
  GroupLane* lane;
  MessageId id;
  bool operator<(const GroupWaitKey& o) const {
    return due != o.due ? due < o.due : seq < o.seq;
  }
};

class Redeliveries {
 public:
  using Set = std::set<GroupWaitKey>;

  // For a queue of `priorities` priorities. REQUIRES: before any Add.
  void SetPriorities(int priorities) { by_priority_.resize(priorities); }

  // Task `id` (`rec`) of `lane` waits until `due`: rec becomes waiting,
  // not released, with `due` as its since and a new place (wait_seq).
  // REQUIRES: rec does not wait already.
  void Add(GroupLane* lane, MessageId id, GroupTask* rec, absl::Time due) {
    rec->state = format::TaskState::kWaiting;
    rec->released = false;
    rec->since = due;
    rec->wait_seq = next_seq_++;
    by_priority_[lane->priority].insert(
        GroupWaitKey{due, rec->wait_seq, lane, id});
    ++size_;
  }
  // Task `id` (`rec`) of `lane` stops waiting (its state is the caller's).
  // REQUIRES: it waits (Add), with rec->since and rec->wait_seq as Add set
  // them.
  void Remove(GroupLane* lane, MessageId id, const GroupTask& rec) {
    by_priority_[lane->priority].erase(
        GroupWaitKey{rec.since, rec.wait_seq, lane, id});
    --size_;
  }
  // The tasks waiting at `priority`, earliest due first.
  const Set& at(int priority) const { return by_priority_[priority]; }
  // Takes the task at `it` of at(priority) out; returns the next.
  Set::const_iterator Erase(int priority, Set::const_iterator it) {
    --size_;
    return by_priority_[priority].erase(it);
  }
  // Tasks waiting, of every priority.
  uint64_t size() const { return size_; }
  // The earliest due time after `now` of any task (InfiniteFuture: none).
  absl::Time NextDueAfter(absl::Time now) const {
    absl::Time next = absl::InfiniteFuture();
    for (const Set& s : by_priority_) {
      auto w = s.upper_bound(GroupWaitKey{now, UINT64_MAX, nullptr, {}});
      if (w != s.end()) next = std::min(next, w->due);
    }
    return next;
  }

 private:
  std::vector<Set> by_priority_;
  uint64_t next_seq_ = 0;
  uint64_t size_ = 0;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_REDELIVERIES_H_
