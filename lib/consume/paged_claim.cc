// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/paged_claim.h"

#include <algorithm>
#include <string>
#include <utility>

#include "lib/consume/lane_turn.h"
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

PagedClaim::PagedClaim(GroupImpl* group, GroupClaimPass* p)
    : group_(group),
      p_(p),
      budget_(std::max<size_t>(kMinPageIn, kPageInPerTask * p->o.max)),
      // A claim with a filter may find the working set full of lanes it
      // cannot take: it may page in up to its budget more (bounded, as the
      // budget).
      slack_(Filtered(*p) ? budget_ : 0) {}

absl::Status PagedClaim::Collect(GroupImpl* group, GroupClaimPass* p) {
  PagedClaim c(group, p);
  c.group_->mu_.AssertHeld();  // As `group`'s: for the analysis.
  const int priorities = group->queue_->options().priorities;
  for (int prio = priorities - 1; prio >= 0 && p->out.size() < p->o.max;
       --prio) {
    HQ_RETURN_IF_ERROR(c.CollectPriority(prio));
  }
  for (int prio = 0; prio < priorities && c.budget_ == 0; ++prio) {
    p->more = p->more || group->source()->pending(prio);
  }
  return absl::OkStatus();
}

bool PagedClaim::Filtered(const GroupClaimPass& p) {
  // An ordered group's claim takes only the lanes of its consumer's idle
  // partitions.
  return p.consumer != nullptr || !p.o.partitions.empty() ||
         !p.o.topics.empty();
}

size_t PagedClaim::Shortfall(const std::deque<Lane*>& dq, size_t remaining) {
  if (p_->consumer == nullptr) {
    const size_t usable = Filtered(*p_) ? static_cast<size_t>(std::count_if(
                                              dq.begin(), dq.end(), p_->match))
                                        : dq.size();
    return usable < remaining ? remaining - usable : 0;
  }
  // Ordered: one task per idle partition of the consumer, from lanes of
  // any partitions.
  size_t idle;
  const size_t hungry = Hungry(dq, &idle).size();
  return hungry == 0 ? 0 : std::max(hungry, kOrderedPageIn);
}

absl::Status PagedClaim::CollectRecovered(int prio) {
  if (recovered_ == 0) return absl::OkStatus();
  recovered_ = 0;
  return group_->CollectDue(prio, p_);
}

absl::Status PagedClaim::CollectPriority(int prio) {
  LaneSource* const source = group_->source();
  // Tasks due for redelivery go first.
  HQ_RETURN_IF_ERROR(group_->CollectDue(prio, p_));
  // Then new messages. While lanes wait in the source (or in
  // `requeued`), a lane gives one task a turn.
  Round r{.prio = prio, .dq = &group_->active_[prio]};
  // Lanes of this priority that made room for higher ones: as requeued.
  for (Lane* lane : p_->made_room) {
    if (lane->priority == prio) r.requeued.push_back(lane);
  }
  std::deque<Lane*>& dq = *r.dq;
  while (p_->out.size() < p_->o.max) {
    const size_t wanted = Shortfall(dq, p_->o.max - p_->out.size());
    size_t taken = 0;
    if (wanted > 0) {
      HQ_ASSIGN_OR_RETURN(taken, PageIn(prio, wanted));
    }
    if (recovered_ > 0) {
      // Tasks the lanes just paged in had in flight when the process
      // stopped: due now, before new messages.
      HQ_RETURN_IF_ERROR(CollectRecovered(prio));
      if (p_->out.size() == p_->o.max) break;
    }
    if (p_->consumer != nullptr && taken > 0) {
      // Ordered: a round only once some idle partition can be served.
      size_t idle;
      if (Hungry(dq, &idle).size() == idle && idle > 0) continue;
    }
    if (!source->pending(prio)) ReactivateRequeued(&r);
    if (dq.empty()) {
      if (taken > 0) continue;  // All drained or out of scope: more.
      break;
    }
    const size_t n = dq.size();
    HQ_ASSIGN_OR_RETURN(const bool progress, TakeRound(&r));
    // Nothing handed out: go on only if the pass drained lanes and so
    // made room for lanes still waiting (in the source or requeued).
    if (!progress && taken == 0 &&
        !(dq.size() < n &&
          ((budget_ > 0 && source->pending(prio)) || !r.requeued_dq.empty()))) {
      break;
    }
  }
  // Tasks found interrupted by a restart in the lanes just paged in.
  return CollectRecovered(prio);
}

void PagedClaim::ReactivateRequeued(Round* r) {
  for (Lane* lane : r->requeued) r->requeued_dq.push_back(lane);
  r->requeued.clear();
  while (!r->requeued_dq.empty() &&
         group_->lanes_.active() < group_->MaxActive() + slack_) {
    Lane* lane = r->requeued_dq.front();
    r->requeued_dq.pop_front();
    if (lane->active) continue;  // Taken from the source again.
    // Ordered: lanes of its partition may wait parked; its hint covers it.
    if (group_->record_.ordered &&
        !group_->parked_.empty(lane->partition, lane->priority)) {
      continue;
    }
    group_->Activate(lane);
  }
}

absl::StatusOr<bool> PagedClaim::TakeRound(Round* r) {
  LaneSource* const source = group_->source();
  std::deque<Lane*>& dq = *r->dq;
  const bool behind = source->pending(r->prio) || !r->requeued_dq.empty();
  const size_t n = dq.size();
  bool progress = false;
  // Ordered: lanes that could not have their turn (their partition busy or
  // another consumer's, or a task of theirs pending) keep their places
  // ahead of those that had one.
  std::vector<Lane*> skipped;
  for (size_t k = 0; k < n && p_->out.size() < p_->o.max; ++k) {
    Lane* lane = dq.front();
    dq.pop_front();
    if (p_->consumer != nullptr && (!p_->match(lane) || Pending(*lane))) {
      skipped.push_back(lane);
      continue;
    }
    if (!p_->match(lane)) {
      dq.push_back(lane);
      continue;
    }
    HQ_ASSIGN_OR_RETURN(const bool paced_out,
                        group_->PacedOut(lane->topic, p_->now));
    if (paced_out) {
      // Not due: behind the lanes waiting, if any, and not back in this
      // claim (its hint is read by a later one).
      std::vector<Lane*> later;
      group_->Touch(lane, &p_->touched);  // Resting or forgotten after.
      Requeue(lane,
              source->pending(r->prio) || !r->requeued_dq.empty() ||
                  !r->requeued.empty(),
              &later);
      continue;
    }
    // Ordered: the lane's partition may have lanes waiting parked.
    const bool parked_behind =
        p_->consumer != nullptr &&
        !group_->parked_.empty(lane->partition, lane->priority);
    const size_t left = p_->o.max - p_->out.size();
    // An ordered lane hands out one task at a time.
    const size_t want =
        behind || p_->consumer != nullptr ? 1 : (left + (n - k) - 1) / (n - k);
    const size_t before = p_->out.size();
    group_->Touch(lane, &p_->touched);
    HQ_ASSIGN_OR_RETURN(bool drained,
                        LaneTurn::Take(group_, lane, want, {}, p_));
    if (p_->out.size() > before) progress = true;
    if (drained) {
      group_->lanes_.Leave(lane);
    } else {
      Requeue(lane,
              parked_behind || source->pending(r->prio) ||
                  !r->requeued_dq.empty() || !r->requeued.empty(),
              &r->requeued);
    }
  }
  dq.insert(dq.begin(), skipped.begin(), skipped.end());
  return progress;
}

void PagedClaim::Requeue(Lane* lane, bool behind,
                         std::vector<Lane*>* requeued) {
  if (behind) {
    // Behind the lanes waiting on disk: a new hint, written with this
    // call's batch, which lets go of the position the lane held.
    group_->lanes_.Leave(lane);
    group_->LetGoHold(lane);
    group_->rehint_.push_back(lane->prefix);  // One per batch.
    lane->behind = true;
    requeued->push_back(lane);
  } else {
    group_->active_[lane->priority].push_back(lane);
  }
}

absl::StatusOr<size_t> PagedClaim::PageIn(int priority, size_t n) {
  auto& lanes = group_->lanes_;
  size_t taken = 0;
  const size_t max = group_->MaxActive() + slack_;
  if (p_->consumer != nullptr) {
    // Ordered: lanes the claim cannot take make room, and the parked lanes
    // of its hungry partitions come first.
    ParkUnusable(std::min(n, budget_), max);
    size_t idle;
    for (const uint32_t partition : Hungry(group_->active_[priority], &idle)) {
      if (taken == n || budget_ == 0 || lanes.active() >= max) break;
      HQ_ASSIGN_OR_RETURN(const bool found, Unpark(partition, priority));
      if (found) {
        ++taken;
        --budget_;
      }
    }
    n -= taken;
  }
  // Higher priorities first: lower ones make room.
  if (group_->source()->pending(priority)) {
    MakeRoom(priority, std::min(n, budget_), max);
  }
  const size_t room = lanes.active() < max ? max - lanes.active() : 0;
  n = std::min({n, room, budget_});
  if (n == 0) return taken;
  size_t got = 0;
  const absl::Status s = lanes.Page(
      priority, n, p_->it,
      [&](LaneSource::Taken* t)
          ABSL_NO_THREAD_SAFETY_ANALYSIS { return Admit(t); },
      &got);
  budget_ -= got;
  HQ_RETURN_IF_ERROR(s);
  return taken + got;
}

absl::Status PagedClaim::Admit(LaneSource::Taken* t) {
  // Runs under the group's lock, which the caller of Admit holds.
  HQ_ASSIGN_OR_RETURN(
      Lane * lane,
      group_->lanes_.Admit(
          t,
          [&](uint32_t /*partition*/, std::string_view topic) {
            return group_->records_.InScope(topic);
          },
          [&](std::string prefix)
              ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::StatusOr<Lane*> {
                HQ_ASSIGN_OR_RETURN(
                    Lane * lane, group_->ReadInLane(std::move(prefix), p_->now,
                                                    p_->it, &recovered_));
                HQ_ASSIGN_OR_RETURN(lane->park_record,
                                    group_->parked_.Read(lane->prefix));
                return lane;
              }));
  if (lane == nullptr) return absl::OkStatus();  // Out of scope.
  if (!lane->active) {
    lane->parked_out = false;
    group_->Activate(lane);
  }
  return absl::OkStatus();
}

void PagedClaim::MakeRoom(int priority, size_t n, size_t max) {
  auto& lanes = group_->lanes_;
  for (int q = 0; q < priority && lanes.active() + n > max; ++q) {
    std::deque<Lane*>& dq = group_->active_[q];
    while (!dq.empty() && lanes.active() + n > max) {
      // The lane that would have had its turn last: behind the lanes of
      // its priority waiting on disk (a new hint).
      Lane* lane = dq.back();
      dq.pop_back();
      Evict(lane);
    }
  }
}

void PagedClaim::Evict(Lane* lane) {
  group_->lanes_.Leave(lane);
  group_->LetGoHold(lane);
  group_->rehint_.push_back(lane->prefix);
  lane->behind = true;
  // Resting or forgotten at the commit if idle.
  group_->Touch(lane, &p_->touched);
  p_->made_room.push_back(lane);
}

std::vector<uint32_t> PagedClaim::Hungry(const std::deque<Lane*>& dq,
                                         size_t* idle) {
  const auto& parts = group_->consumers_.parts();
  *idle = 0;
  std::vector<bool> served(parts.size(), false);
  for (const Lane* lane : dq) {
    if (p_->match(lane) && !Pending(*lane)) {
      served[lane->partition] = true;
    }
  }
  const std::vector<uint32_t>& filter = p_->o.partitions;
  std::vector<uint32_t> out;
  for (const uint32_t pid : p_->consumer->partitions) {
    if (parts[pid].in_flight > 0 ||
        !(filter.empty() ||
          std::find(filter.begin(), filter.end(), pid) != filter.end())) {
      continue;
    }
    ++*idle;
    if (!served[pid]) out.push_back(pid);
  }
  return out;
}

void PagedClaim::ParkUnusable(size_t n, size_t max) {
  auto& lanes = group_->lanes_;
  for (std::deque<Lane*>& dq : group_->active_) {
    if (lanes.active() + n <= max) return;
    std::deque<Lane*> keep;
    for (Lane* lane : dq) {
      if (lanes.active() + n > max && (!p_->match(lane) || Pending(*lane))) {
        Park(lane);
      } else {
        keep.push_back(lane);
      }
    }
    dq.swap(keep);
  }
}

void PagedClaim::Park(Lane* lane) {
  group_->lanes_.Leave(lane);
  // The record, written with the claim, takes over from the source
  // position the lane held.
  group_->LetGoHold(lane);
  lane->parked_out = true;
  group_->parked_.Park(lane->prefix, lane->partition, lane->priority,
                       /*put=*/!lane->park_record, &p_->batch);
  lane->park_record = true;
  // Forgotten at the commit if no task.
  group_->Touch(lane, &p_->touched);
}

absl::StatusOr<bool> PagedClaim::Unpark(uint32_t partition, int priority) {
  if (group_->parked_.empty(partition, priority)) return false;
  bool found = false;
  // Runs under the group's lock, which the caller of Unpark holds.
  HQ_RETURN_IF_ERROR(group_->parked_.Next(
      partition, priority, p_->it,
      [&](std::string prefix)
          ABSL_NO_THREAD_SAFETY_ANALYSIS -> absl::StatusOr<bool> {
            Lane* lane = group_->lanes_.Find(prefix);
            if (lane != nullptr && !lane->parked_out) {
              // In the working set (from the source since it was parked),
              // or drained by this claim: its record goes when it is
              // released.
              lane->park_record = true;
              return false;
            }
            if (lane == nullptr) {
              HQ_ASSIGN_OR_RETURN(
                  lane, group_->ReadInLane(std::move(prefix), p_->now, p_->it,
                                           &recovered_));
            }
            lane->park_record = true;
            lane->parked_out = false;
            group_->Activate(lane);
            found = true;
            return true;
          }));
  return found;
}

}  // namespace hq
