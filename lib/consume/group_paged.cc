// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): paged groups, whose lanes with new
// messages come from a LaneSource into a bounded working set: PageIn,
// Admit, Requeue, MaybeRelease and the claim pass CollectPaged.

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/consume/group_impl.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"

namespace hq {
namespace {

// A claim takes at most max(kMinPageIn, kPageInPerTask * max) lanes from
// the source, so that stale hints or a directory walk over drained lanes
// do not hold the group's lock for long (the claim then goes on after
// releasing it).
constexpr size_t kMinPageIn = 256;
constexpr size_t kPageInPerTask = 4;
// An ordered claim with a partition wanting work pages in at least this
// many lanes at a time: the lanes of the index are of all partitions, and
// each step looks at every active lane.
constexpr size_t kOrderedPageIn = 64;

}  // namespace

absl::Status GroupImpl::Admit(LaneSource::Taken* t, ClaimPass* p) {
  // Run under mu_, which the caller of Admit holds.
  HQ_ASSIGN_OR_RETURN(
      Lane * lane,
      lanes_.Admit(
          t,
          [&](uint32_t /*partition*/, std::string_view topic) {
            return records_.InScope(topic);
          },
          [&](std::string prefix)
              ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::StatusOr<Lane*> {
                HQ_ASSIGN_OR_RETURN(
                    Lane * lane, ReadInLane(std::move(prefix), p->now, p->it));
                HQ_ASSIGN_OR_RETURN(lane->park_record,
                                    parked_.Read(lane->prefix));
                return lane;
              }));
  if (lane == nullptr) return absl::OkStatus();  // Out of scope.
  if (!lane->active) {
    lane->parked_out = false;
    Activate(lane);
  }
  return absl::OkStatus();
}

absl::StatusOr<GroupImpl::Lane*> GroupImpl::ReadInLane(std::string prefix,
                                                       absl::Time now,
                                                       leveldb::Iterator* it) {
  HQ_ASSIGN_OR_RETURN(Lane * lane, NewLane(std::move(prefix), nullptr));
  if (lane->done < lane->scan) {
    // Handed out before a restart and not completed: only a lane not in
    // memory since then can have such a window.
    HQ_RETURN_IF_ERROR(LoadWindow(lane, queue_->TtlCutoff(now), it));
    recovered_since_ += recovered_.size();
    Recover(now);
  }
  return lane;
}

void GroupImpl::MakeRoom(int priority, size_t n, size_t max, ClaimPass* p) {
  for (int q = 0; q < priority && lanes_.active() + n > max; ++q) {
    std::deque<Lane*>& dq = active_[q];
    while (!dq.empty() && lanes_.active() + n > max) {
      // The lane that would have had its turn last: behind the lanes of
      // its priority waiting on disk (a new hint).
      Lane* lane = dq.back();
      dq.pop_back();
      Evict(lane, p);
    }
  }
}

void GroupImpl::Evict(Lane* lane, ClaimPass* p) {
  lanes_.Leave(lane);
  LetGoHold(lane);
  rehint_.push_back(lane->prefix);
  lane->behind = true;
  Touch(lane, &p->touched);  // Resting or forgotten at the commit if idle.
  p->made_room.push_back(lane);
}

absl::Status GroupImpl::PageIn(int priority, size_t n, size_t slack,
                               size_t* budget, ClaimPass* p, size_t* taken) {
  *taken = 0;
  const size_t max = MaxActive() + slack;
  if (p->consumer != nullptr) {
    // Ordered: lanes the claim cannot take make room, and the parked lanes
    // of its hungry partitions come first.
    ParkUnusable(std::min(n, *budget), max, p);
    size_t idle;
    for (const uint32_t partition : Hungry(active_[priority], *p, &idle)) {
      if (*taken == n || *budget == 0 || lanes_.active() >= max) break;
      bool found;
      HQ_RETURN_IF_ERROR(Unpark(partition, priority, p, &found));
      if (found) {
        ++*taken;
        --*budget;
      }
    }
    n -= *taken;
  }
  // Higher priorities first: lower ones make room.
  if (source()->pending(priority)) {
    MakeRoom(priority, std::min(n, *budget), max, p);
  }
  const size_t room = lanes_.active() < max ? max - lanes_.active() : 0;
  n = std::min({n, room, *budget});
  if (n == 0) return absl::OkStatus();
  size_t got = 0;
  const absl::Status s = lanes_.Page(
      priority, n, p->it,
      [&](LaneSource::Taken* t)
          ABSL_NO_THREAD_SAFETY_ANALYSIS { return Admit(t, p); },
      &got);
  *budget -= got;
  *taken += got;
  return s;
}

void GroupImpl::Requeue(Lane* lane, bool behind, std::vector<Lane*>* requeued) {
  if (behind) {
    // Behind the lanes waiting on disk: a new hint, written with this
    // call's batch, which lets go of the position the lane held.
    lanes_.Leave(lane);
    LetGoHold(lane);
    rehint_.push_back(lane->prefix);  // The leader writes one per batch.
    lane->behind = true;
    requeued->push_back(lane);
  } else {
    active_[lane->priority].push_back(lane);
  }
}

bool GroupImpl::TasksPersisted(const Lane& lane) {
  for (const auto& [id, rec] : lane.tasks) {
    if (!rec.persisted) return false;
  }
  return true;
}

void GroupImpl::MaybeRelease(Lane* lane, leveldb::WriteBatch* batch) {
  // A first hand-out has no record: after a restart only the cursor window,
  // found through the held position or park record, says it was in flight.
  if (lane->active || !TasksPersisted(*lane)) return;
  LetGoHold(lane);
  if (lane->park_record && !lane->parked_out) {
    parked_.Delete(lane->prefix, batch);
    lane->park_record = false;
  }
}

// The state of CollectPagedPriority's rounds over one priority.
struct GroupImpl::PagedRound {
  int prio;
  std::deque<Lane*>* dq;  // active_[prio].
  // Lanes this claim hinted again, in turn order: when the source has
  // nothing more (as this claim sees it), their turn comes again.
  std::deque<Lane*> requeued_dq;
  std::vector<Lane*> requeued;
};

bool GroupImpl::Filtered(const ClaimPass& p) {
  // An ordered group's claim takes only the lanes of its consumer's idle
  // partitions.
  return p.consumer != nullptr || !p.o.partitions.empty() ||
         !p.o.topics.empty();
}

size_t GroupImpl::Shortfall(const std::deque<Lane*>& dq, size_t remaining,
                            const ClaimPass& p) {
  if (p.consumer == nullptr) {
    const size_t usable =
        Filtered(p)
            ? static_cast<size_t>(std::count_if(dq.begin(), dq.end(), p.match))
            : dq.size();
    return usable < remaining ? remaining - usable : 0;
  }
  // Ordered: one task per idle partition of the consumer, from lanes of
  // any partitions.
  size_t idle;
  const size_t hungry = Hungry(dq, p, &idle).size();
  return hungry == 0 ? 0 : std::max(hungry, kOrderedPageIn);
}

absl::Status GroupImpl::CollectPaged(ClaimPass* p) {
  const int priorities = queue_->options().priorities;
  size_t budget = std::max<size_t>(kMinPageIn, kPageInPerTask * p->o.max);
  // A claim with a filter may find the working set full of lanes it cannot
  // take: it may page in up to its budget more (bounded, as the budget).
  const size_t slack = Filtered(*p) ? budget : 0;
  for (int prio = priorities - 1; prio >= 0 && p->out.size() < p->o.max;
       --prio) {
    HQ_RETURN_IF_ERROR(CollectPagedPriority(prio, slack, &budget, p));
  }
  for (int prio = 0; prio < priorities && budget == 0; ++prio) {
    p->more = p->more || source()->pending(prio);
  }
  return absl::OkStatus();
}

absl::Status GroupImpl::CollectPagedPriority(int prio, size_t slack,
                                             size_t* budget, ClaimPass* p) {
  // Tasks due for redelivery go first.
  HQ_RETURN_IF_ERROR(CollectDue(prio, p));
  // Then new messages. While lanes wait in the source (or in
  // `requeued`), a lane gives one task a turn.
  PagedRound r{.prio = prio, .dq = &active_[prio]};
  // Lanes of this priority that made room for higher ones: as requeued.
  for (Lane* lane : p->made_room) {
    if (lane->priority == prio) r.requeued.push_back(lane);
  }
  std::deque<Lane*>& dq = *r.dq;
  while (p->out.size() < p->o.max) {
    const size_t wanted = Shortfall(dq, p->o.max - p->out.size(), *p);
    size_t taken = 0;
    if (wanted > 0) {
      HQ_RETURN_IF_ERROR(PageIn(prio, wanted, slack, budget, p, &taken));
    }
    if (recovered_since_ > 0) {
      // Tasks the lanes just paged in had in flight when the process
      // stopped: due now, before new messages.
      recovered_since_ = 0;
      HQ_RETURN_IF_ERROR(CollectDue(prio, p));
      if (p->out.size() == p->o.max) break;
    }
    if (p->consumer != nullptr && taken > 0) {
      // Ordered: a round only once some idle partition can be served.
      size_t idle;
      if (Hungry(dq, *p, &idle).size() == idle && idle > 0) continue;
    }
    if (!source()->pending(prio)) ReactivateRequeued(&r, slack);
    if (dq.empty()) {
      if (taken > 0) continue;  // All drained or out of scope: more.
      break;
    }
    const size_t n = dq.size();
    HQ_ASSIGN_OR_RETURN(const bool progress, TakeRound(&r, p));
    // Nothing handed out: go on only if the pass drained lanes and so
    // made room for lanes still waiting (in the source or requeued).
    if (!progress && taken == 0 &&
        !(dq.size() < n && ((*budget > 0 && source()->pending(prio)) ||
                            !r.requeued_dq.empty()))) {
      break;
    }
  }
  // Tasks found interrupted by a restart in the lanes just paged in.
  if (recovered_since_ > 0) {
    recovered_since_ = 0;
    HQ_RETURN_IF_ERROR(CollectDue(prio, p));
  }
  return absl::OkStatus();
}

void GroupImpl::ReactivateRequeued(PagedRound* r, size_t slack) {
  for (Lane* lane : r->requeued) r->requeued_dq.push_back(lane);
  r->requeued.clear();
  while (!r->requeued_dq.empty() && lanes_.active() < MaxActive() + slack) {
    Lane* lane = r->requeued_dq.front();
    r->requeued_dq.pop_front();
    if (lane->active) continue;  // Taken from the source again.
    // Ordered: lanes of its partition may wait parked; its hint covers it.
    if (record_.ordered && !parked_.empty(lane->partition, lane->priority)) {
      continue;
    }
    Activate(lane);
  }
}

absl::StatusOr<bool> GroupImpl::TakeRound(PagedRound* r, ClaimPass* p) {
  std::deque<Lane*>& dq = *r->dq;
  const bool behind = source()->pending(r->prio) || !r->requeued_dq.empty();
  const size_t n = dq.size();
  bool progress = false;
  // Ordered: lanes that could not have their turn (their partition busy or
  // another consumer's, or a task of theirs pending) keep their places
  // ahead of those that had one.
  std::vector<Lane*> skipped;
  for (size_t k = 0; k < n && p->out.size() < p->o.max; ++k) {
    Lane* lane = dq.front();
    dq.pop_front();
    if (p->consumer != nullptr && (!p->match(lane) || Pending(*lane))) {
      skipped.push_back(lane);
      continue;
    }
    if (!p->match(lane)) {
      dq.push_back(lane);
      continue;
    }
    HQ_ASSIGN_OR_RETURN(const bool paced_out, PacedOut(lane->topic, p->now));
    if (paced_out) {
      // Not due: behind the lanes waiting, if any, and not back in this
      // claim (its hint is read by a later one).
      std::vector<Lane*> later;
      Touch(lane, &p->touched);  // Resting or forgotten after the write.
      Requeue(lane,
              source()->pending(r->prio) || !r->requeued_dq.empty() ||
                  !r->requeued.empty(),
              &later);
      continue;
    }
    // Ordered: the lane's partition may have lanes waiting parked.
    const bool parked_behind = p->consumer != nullptr &&
                               !parked_.empty(lane->partition, lane->priority);
    const size_t left = p->o.max - p->out.size();
    // An ordered lane hands out one task at a time.
    const size_t want =
        behind || p->consumer != nullptr ? 1 : (left + (n - k) - 1) / (n - k);
    const size_t before = p->out.size();
    Touch(lane, &p->touched);
    HQ_ASSIGN_OR_RETURN(bool drained, ReadLane(lane, want, {}, p));
    if (p->out.size() > before) progress = true;
    if (drained) {
      lanes_.Leave(lane);
    } else {
      Requeue(lane,
              parked_behind || source()->pending(r->prio) ||
                  !r->requeued_dq.empty() || !r->requeued.empty(),
              &r->requeued);
    }
  }
  dq.insert(dq.begin(), skipped.begin(), skipped.end());
  return progress;
}

}  // namespace hq
