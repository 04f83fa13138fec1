// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): Complete, Release, Reject and Extend of
// held tasks.

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/consume/consume_options.h"
#include "lib/consume/group_impl.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

std::string TaskName(const Task& t) {
  return absl::StrFormat("task %d/%s (attempt %d)", t.partition,
                         t.id.ToString(), t.attempt);
}

}  // namespace

absl::Status GroupImpl::FindHeld(const Task& t, bool allow_expired, Lane** lane,
                                 Rec** rec) {
  const QueueOptions& qo = queue_->options();
  if (t.partition >= qo.partitions || t.priority < 0 ||
      t.priority >= qo.priorities || t.topic.size() > format::kMaxTopicBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(TaskName(t), " is not a task of queue '", queue_->name(),
                     "' (partition, priority or topic out of range)"));
  }
  std::string& prefix = prefix_scratch_;  // No allocation per task.
  prefix.clear();
  queue_->codec().AppendLanePrefix(&prefix, queue_->id(), t.partition,
                                   t.priority, t.topic);
  auto not_held = [&](std::string_view why) {
    return absl::FailedPreconditionError(absl::StrCat(
        TaskName(t), " is not held in group '", name_, "': ", Av(why)));
  };
  *lane = lanes_.Find(prefix);
  if (*lane == nullptr || t.attempt == 0) {
    return not_held("it was completed, or never handed out");
  }
  auto it = (*lane)->tasks.find(t.id);
  if (it == (*lane)->tasks.end()) {
    return not_held("it was completed, or never handed out");
  }
  *rec = &it->second;
  if ((*rec)->attempts != t.attempt) {
    return not_held(absl::StrFormat(
        "its lease expired and it was handed out again (attempt %d)",
        (*rec)->attempts));
  }
  switch ((*rec)->state) {
    case format::TaskState::kDone:
      return not_held("it was completed");
    case format::TaskState::kWaiting:
      if ((*rec)->dying) return not_held("it was dead-lettered");
      if ((*rec)->released) return not_held("it was released");
      if (!allow_expired) return not_held("its lease expired");
      break;
    case format::TaskState::kInFlight:
      break;
  }
  return absl::OkStatus();
}

absl::Status GroupImpl::Complete(std::span<const Task> tasks) {
  if (tasks.empty()) return absl::OkStatus();
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  std::vector<LeaseId> cancel;
  {
    MutexLock l(&mu_);
    HQ_RETURN_IF_ERROR(Usable());
    std::vector<std::pair<Lane*, Rec*>> held(tasks.size());
    absl::flat_hash_set<const Rec*> seen;
    for (size_t i = 0; i < tasks.size(); ++i) {
      HQ_RETURN_IF_ERROR(FindHeld(tasks[i], /*allow_expired=*/true,
                                  &held[i].first, &held[i].second));
      if (!seen.insert(held[i].second).second) {
        return absl::InvalidArgumentError(
            absl::StrCat(TaskName(tasks[i]), " appears twice"));
      }
    }
    std::vector<Lane*> touched;
    std::vector<std::pair<Lane*, MessageId>> done;
    leveldb::WriteBatch batch;
    for (size_t i = 0; i < tasks.size(); ++i) {
      auto [lane, rec] = held[i];
      if (rec->state == format::TaskState::kWaiting) {
        waiting_.Remove(lane, tasks[i].id, *rec);
      } else {
        EndInFlight(lane, rec);
        if (const LeaseId lease = LeaveShare(rec); lease != 0) {
          cancel.push_back(lease);
        }
      }
      rec->state = format::TaskState::kDone;
      done.emplace_back(lane, tasks[i].id);
      Touch(lane, &touched);
      if (record_.ordered) {
        consumers_.KeepAlive(tasks[i].consumer, options_.ownership_lease);
      }
    }
    // In order, the completion cursor passes them: only the cursor record
    // is written. Completed out of order, each gets a record.
    for (Lane* lane : touched) Settle(lane, &batch);
    PutDone(done, &batch);
    HQ_RETURN_IF_ERROR(Write(batch));
    Committed(&touched);
  }
  completed_total_.fetch_add(tasks.size(), std::memory_order_relaxed);
  // Outside the lock: Cancel waits for an expiry action that is running,
  // and that action takes the lock (it then finds the task completed).
  for (LeaseId id : cancel) (void)db_->leases()->Cancel(id);
  // Ordered groups: the lanes after these tasks are free to go on.
  if (record_.ordered && wakeup_.has_waiters()) wakeup_.Wake();
  return absl::OkStatus();
}

absl::Status GroupImpl::LetGo(
    const Task& task, absl::FunctionRef<absl::Status(Lane*, Rec*)> next) {
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  LeaseId cancel = 0;
  absl::Status s;
  {
    MutexLock l(&mu_);
    HQ_RETURN_IF_ERROR(Usable());
    Lane* lane;
    Rec* rec;
    HQ_RETURN_IF_ERROR(FindHeld(task, /*allow_expired=*/false, &lane, &rec));
    EndInFlight(lane, rec);
    if (record_.ordered) {
      consumers_.KeepAlive(task.consumer, options_.ownership_lease);
    }
    cancel = LeaveShare(rec);
    s = next(lane, rec);
  }
  if (cancel != 0) (void)db_->leases()->Cancel(cancel);
  // A redelivery to take; for ordered groups, the lane after it free.
  if (s.ok() && wakeup_.has_waiters()) wakeup_.Wake();
  return s;
}

absl::Status GroupImpl::Release(const Task& task, absl::Duration retry_after) {
  if (retry_after < absl::ZeroDuration() ||
      retry_after == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Release: retry_after is ", absl::FormatDuration(retry_after),
        "; it must be finite and not negative"));
  }
  // Runs under mu_, which LetGo holds.
  return LetGo(task, [&](Lane* lane, Rec* rec) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (rec->attempts >= options_.max_attempts) {
      MarkDying(lane, task.id, rec, DeadLetterReason::kReleased);
      return FlushDying();
    }
    waiting_.Add(lane, task.id, rec, db_->clock()->Now() + retry_after);
    rec->released = true;
    leveldb::WriteBatch batch;
    PutTask(lane, task.id, rec, &batch);
    return Write(batch);
  });
}

absl::Status GroupImpl::Reject(const Task& task) {
  // Runs under mu_, which LetGo holds.
  return LetGo(task, [&](Lane* lane, Rec* rec) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    MarkDying(lane, task.id, rec, DeadLetterReason::kRejected);
    return FlushDying();
  });
}

absl::Status GroupImpl::Extend(Task* task, absl::Duration lease) {
  if (lease < absl::Milliseconds(1) || lease > kMaxLease) {
    return absl::InvalidArgumentError(
        absl::StrCat("Extend: lease is ", absl::FormatDuration(lease),
                     "; it must be in 1ms..720h"));
  }
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  Lane* lane;
  Rec* rec;
  HQ_RETURN_IF_ERROR(FindHeld(*task, /*allow_expired=*/false, &lane, &rec));
  if (record_.ordered) {
    consumers_.KeepAlive(task->consumer, options_.ownership_lease);
  }
  // The task gets a share of its own (unless it is alone in its share).
  const LeaseShares::Share* share = shares_.Find(rec->share);
  absl::Status s = share == nullptr
                       ? absl::FailedPreconditionError("no lease")
                       : db_->leases()->Deadline(share->lease).status();
  if (s.ok() && share->live == 1) {
    s = db_->leases()->Renew(share->lease, lease);
  } else if (s.ok()) {
    const uint64_t old = rec->share;
    const uint32_t old_at = rec->share_at;
    handed_.clear();
    handed_.push_back({.lane = lane, .id = task->id, .rec = rec});
    s = ShareLease(lease);
    handed_.clear();
    // Not the last of its old share (it had more live): nothing to cancel.
    if (s.ok()) (void)shares_.Leave(old, old_at);
  }
  if (!s.ok()) {
    // The expiry won the race; its action is waiting for our lock.
    return absl::FailedPreconditionError(
        absl::StrCat(TaskName(*task), " is not held in group '", name_,
                     "': its lease expired"));
  }
  rec->deadline = db_->clock()->Now() + lease;
  task->lease_deadline = rec->deadline;
  return absl::OkStatus();
}

}  // namespace hq
