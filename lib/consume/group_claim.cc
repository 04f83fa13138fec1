// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): Claim and the passes that collect tasks
// for it (CollectDue, CollectUnordered, CollectOrdered; a lane's turn:
// lane_turn.h; a paged group's: paged_claim.h), ClaimOnce, and lease expiry.

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/consume/consume_options.h"
#include "lib/consume/group_impl.h"
#include "lib/consume/lane_turn.h"
#include "lib/consume/paged_claim.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

constexpr size_t kMaxConsumerBytes = 256;

}  // namespace

absl::StatusOr<std::vector<Task>> GroupImpl::Claim(const ClaimOptions& o) {
  HQ_ASSIGN_OR_RETURN(const std::vector<bool> partitions, CheckClaim(o));
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  // Ordered groups: while this call runs, its consumer stays live; and the
  // call notes how many times the consumer left before it began, so that
  // only a Leave during the call ends it.
  struct Claiming {
    GroupImpl* g;
    const std::string* name;
    uint64_t leaves_before = 0;
    Claiming(GroupImpl* g, const std::string* name) : g(g), name(name) {
      if (name == nullptr) return;
      MutexLock l(&g->mu_);
      leaves_before = g->consumers_.BeginClaim(*name);
    }
    ~Claiming() {
      if (name == nullptr) return;
      MutexLock l(&g->mu_);
      g->consumers_.EndClaim(*name);
    }
  } claiming(this, record_.ordered ? &o.consumer : nullptr);
  if (o.wait == absl::ZeroDuration()) {
    absl::Time next_due;
    bool left;
    return ClaimChunks(o, partitions, claiming.leaves_before, &next_due, &left);
  }
  const absl::Time deadline = db_->clock()->Now() + o.wait;
  wakeup_.Enter();
  struct Leave {
    ClaimWakeup* w;
    ~Leave() { w->Exit(); }
  } leave{&wakeup_};
  for (;;) {
    const uint64_t seen = wakeup_.seq();
    absl::Time next_due;
    bool left;
    HQ_ASSIGN_OR_RETURN(
        std::vector<Task> out,
        ClaimChunks(o, partitions, claiming.leaves_before, &next_due, &left));
    const absl::Time now = db_->clock()->Now();
    if (!out.empty() || now >= deadline || left) return out;
    if (db_->IsClosing()) return db_->ClosingError();
    HQ_RETURN_IF_ERROR(Gone());
    // Sleep until a write notes a lane, a lease expires, a task is released,
    // the Db closes, or (timers on the Db's clock) the earliest redelivery
    // falls due or the wait ends. No polling.
    // At an absolute time: the clock may have moved since it was read (a
    // time already passed fires at once).
    HQ_RETURN_IF_ERROR(SleepUntilWoken(seen, std::min(deadline, next_due)));
  }
}

absl::StatusOr<std::vector<bool>> GroupImpl::CheckClaim(
    const ClaimOptions& o) const {
  const QueueOptions& qo = queue_->options();
  HQ_RETURN_IF_ERROR(ValidateClaimOptions(o, qo.partitions));
  if (record_.ordered) {
    if (o.consumer.empty() || o.consumer.size() > kMaxConsumerBytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "group '%s' is ordered: ClaimOptions::consumer must name the "
          "consumer (1..%d bytes; it has %d)",
          name_, kMaxConsumerBytes, o.consumer.size()));
    }
    if (!o.topics.empty() && !queue_->codec().lane_has_topic()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "group '", name_,
          "' is ordered and its queue has the time layout: a claim cannot "
          "filter by topic (it would hand out messages out of order)"));
    }
  }
  std::vector<bool> partitions;
  if (!o.partitions.empty()) {
    partitions.assign(qo.partitions, false);
    for (uint32_t p : o.partitions) partitions[p] = true;
  }
  return partitions;
}

absl::Status GroupImpl::SleepUntilWoken(uint64_t seen, absl::Time wake_at) {
  absl::StatusOr<LeaseId> timer =
      db_->lease_impl()->CreateAt(wake_at, [this] { wakeup_.Wake(); });
  if (!timer.ok()) return timer.status();
  wakeup_.WaitPast(seen);
  (void)db_->leases()->Cancel(*timer);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Task>> GroupImpl::ClaimChunks(
    const ClaimOptions& o, const std::vector<bool>& partitions,
    uint64_t leaves_before, absl::Time* next_due, bool* left) {
  std::vector<Task> out;
  ClaimOptions rest = o;
  for (;;) {
    rest.max = o.max - static_cast<uint32_t>(out.size());
    bool more;
    absl::StatusOr<std::vector<Task>> got =
        ClaimOnce(rest, partitions, leaves_before, next_due, left, &more);
    // Tasks handed out by an earlier chunk are the caller's: a later
    // failure shows at the next call.
    if (!got.ok()) return out.empty() ? got : std::move(out);
    if (out.empty()) {
      out = *std::move(got);
    } else {
      out.insert(out.end(), std::make_move_iterator(got->begin()),
                 std::make_move_iterator(got->end()));
    }
    if (out.size() == o.max || !more || *left) return out;
  }
}

absl::Status GroupImpl::CollectDue(int priority, ClaimPass* p) {
  const bool has_topic = queue_->codec().lane_has_topic();
  const Redeliveries::Set& ws = waiting_.at(priority);
  size_t paced_skips = 0;
  for (auto w = ws.begin();
       w != ws.end() && w->due <= p->now && p->out.size() < p->o.max;) {
    Lane* lane = w->lane;
    const MessageId id = w->id;
    if (!p->match(lane)) {
      ++w;
      continue;
    }
    if (has_topic && pacer_.on()) {
      HQ_ASSIGN_OR_RETURN(const bool paced_out, PacedOut(lane->topic, p->now));
      if (paced_out) {
        // Bounded, as in a lane turn: a claim does not walk every due task of
        // topics held back.
        if (++paced_skips == LaneTurn::kMaxPacedSkips) break;
        ++w;
        continue;
      }
    }
    Rec* rec = &lane->tasks.find(id)->second;
    Task t;
    absl::StatusOr<bool> found =
        id < p->cutoff ? false
                       : LaneTurn::ReadMessage(*queue_, *lane, id, p->it, &t);
    if (!found.ok()) return found.status();
    if (!has_topic && !p->o.topics.empty() && *found &&
        std::find(p->o.topics.begin(), p->o.topics.end(), t.topic) ==
            p->o.topics.end()) {
      ++w;
      continue;
    }
    if (!has_topic && *found && pacer_.on()) {
      HQ_ASSIGN_OR_RETURN(const bool paced_out, PacedOut(t.topic, p->now));
      if (paced_out) {
        if (++paced_skips == LaneTurn::kMaxPacedSkips) break;
        ++w;
        continue;
      }
    }
    w = waiting_.Erase(priority, w);
    Touch(lane, &p->touched);
    if (!*found) {
      // Past the TTL: nothing left to deliver.
      rec->state = format::TaskState::kDone;
      p->gone.emplace_back(lane, id);
      continue;
    }
    HandOut(lane, id, rec, p->now, p->lease, /*covered=*/false, &t, &p->batch);
    p->out.push_back(std::move(t));
  }
  return absl::OkStatus();
}

absl::Status GroupImpl::CollectUnordered(ClaimPass* p) {
  const bool has_topic = queue_->codec().lane_has_topic();
  const int priorities = queue_->options().priorities;
  for (int prio = priorities - 1; prio >= 0 && p->out.size() < p->o.max;
       --prio) {
    // Tasks due for redelivery go first.
    HQ_RETURN_IF_ERROR(CollectDue(prio, p));
    // Then new messages, round-robin over the lanes that have any.
    std::deque<Lane*>& dq = active_[prio];
    while (p->out.size() < p->o.max && !dq.empty()) {
      const size_t n = dq.size();
      bool progress = false;
      for (size_t k = 0; k < n && p->out.size() < p->o.max; ++k) {
        Lane* lane = dq.front();
        dq.pop_front();
        if (!p->match(lane)) {
          dq.push_back(lane);
          continue;
        }
        const size_t remaining = p->o.max - p->out.size();
        const size_t want = (remaining + (n - k) - 1) / (n - k);
        const size_t before = p->out.size();
        Touch(lane, &p->touched);
        HQ_ASSIGN_OR_RETURN(
            bool drained,
            LaneTurn::Take(this, lane, want,
                           has_topic ? std::vector<std::string>() : p->o.topics,
                           p));
        if (p->out.size() > before) progress = true;
        if (drained) {
          lanes_.Leave(lane);
        } else {
          dq.push_back(lane);
        }
      }
      if (!progress) break;
    }
  }
  return absl::OkStatus();
}

absl::Status GroupImpl::CollectOrdered(Consumer* consumer,
                                       const std::vector<bool>& partitions,
                                       ClaimPass* p) {
  // `match` accepts only lanes of the consumer's partitions with no task in
  // flight. A waiting task is its lane's head (a lane has at most one task
  // not completed), so due redeliveries go first as in CollectUnordered;
  // then each idle partition gives the head of one lane without a pending
  // task. Partitions take turns across calls.
  const std::vector<uint32_t>& owned = consumer->partitions;
  const int priorities = queue_->options().priorities;
  for (int prio = priorities - 1; prio >= 0 && p->out.size() < p->o.max;
       --prio) {
    HQ_RETURN_IF_ERROR(CollectDue(prio, p));
    for (size_t k = 0; k < owned.size() && p->out.size() < p->o.max; ++k) {
      const uint32_t pid = owned[(consumer->next + k) % owned.size()];
      Part& part = consumers_.parts()[pid];
      if (part.in_flight > 0 || part.active.empty() ||
          (!partitions.empty() && !partitions[pid])) {
        continue;
      }
      std::deque<Lane*>& dq = part.active[prio];
      for (size_t j = 0, n = dq.size(); j < n && part.in_flight == 0; ++j) {
        Lane* lane = dq.front();
        dq.pop_front();
        if (Pending(*lane) || !p->match(lane)) {
          dq.push_back(lane);
          continue;
        }
        Touch(lane, &p->touched);
        HQ_ASSIGN_OR_RETURN(bool drained, LaneTurn::Take(this, lane, 1, {}, p));
        if (drained) {
          lanes_.Leave(lane);
        } else {
          dq.push_back(lane);
        }
      }
    }
  }
  if (!owned.empty()) consumer->next = (consumer->next + 1) % owned.size();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Task>> GroupImpl::ClaimOnce(
    const ClaimOptions& o, const std::vector<bool>& partitions,
    uint64_t leaves_before, absl::Time* next_due, bool* left, bool* more) {
  MutexLock l(&mu_);
  *left = false;
  *more = false;
  *next_due = absl::InfiniteFuture();
  if (record_.ordered && consumers_.LeftSince(o.consumer, leaves_before)) {
    *left = true;
    return std::vector<Task>();
  }
  HQ_RETURN_IF_ERROR(Usable());
  handed_.clear();
  if (paged()) {
    lanes_.TakePagedNotes();
  } else {
    HQ_RETURN_IF_ERROR(Fail(TakeNotes()));
  }
  HQ_RETURN_IF_ERROR(FlushDying());
  const absl::Time now = db_->clock()->Now();
  pacer_.Prune(now);
  const absl::Time paced_before = pacer_.latest();
  const absl::Duration lease =
      o.lease == absl::ZeroDuration() ? options_.lease : o.lease;

  const bool has_topic = queue_->codec().lane_has_topic();
  Consumer* consumer = nullptr;
  if (record_.ordered) {
    HQ_ASSIGN_OR_RETURN(consumer,
                        consumers_.Join(o.consumer, options_.ownership_lease));
  }
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  ClaimPass p{.o = o,
              .now = now,
              .cutoff = queue_->TtlCutoff(now),
              .lease = lease,
              .it = it.get()};
  lanes_.BeginPass();
  p.out.reserve(std::min<size_t>(o.max, 1024));
  // Called by the claim's steps, under mu_.
  p.match = [&](const Lane* lane) ABSL_NO_THREAD_SAFETY_ANALYSIS {
    if (!partitions.empty() && !partitions[lane->partition]) return false;
    if (consumer != nullptr) {
      const Part& part = consumers_.parts()[lane->partition];
      if (part.owner != consumer || part.in_flight > 0) return false;
    }
    return !has_topic || o.topics.empty() ||
           std::find(o.topics.begin(), o.topics.end(), lane->topic) !=
               o.topics.end();
  };

  p.consumer = consumer;
  absl::Status s = paged() ? PagedClaim::Collect(this, &p)
                   : consumer != nullptr
                       ? CollectOrdered(consumer, partitions, &p)
                       : CollectUnordered(&p);
  lanes_.EndPass();
  if (!s.ok()) return Fail(s);
  *more = p.more;
  pace_records_.PutClock(pacer_.latest(), paced_before, &p.batch);
  // First hand-outs: their lanes' cursors go into one claim record.
  ClaimRecords::Log log = claims_.Begin();
  for (Lane* lane : p.touched) Settle(lane, &p.batch, paged() ? &log : nullptr);
  claims_.Put(log, &p.batch);
  PutDone(p.gone, &p.batch);
  HQ_RETURN_IF_ERROR(Write(p.batch));
  // Leases start once the claim is on disk.
  if (!p.out.empty()) {
    if (handed_.size() != p.out.size()) {
      return Fail(absl::InternalError(absl::StrFormat(
          "consumer group '%s': a claim handed out %d tasks and returns %d",
          name_, handed_.size(), p.out.size())));
    }
    HQ_RETURN_IF_ERROR(ShareLease(lease));
    if (consumer != nullptr) {
      for (size_t i = 0; i < p.out.size(); ++i) {
        p.out[i].consumer = handed_[i].rec->consumer = consumer->name;
      }
    }
  }
  Committed(&p.touched);
  pacer_.Prune(now);  // What this claim looked at and did not hand out.
  // The first tasks handed out are published at once (live status).
  if (claimed_total_.fetch_add(p.out.size(), std::memory_order_relaxed) == 0 &&
      !p.out.empty()) {
    db_->PublishStatusSoon();
  }
  // The earliest redelivery still in the future (for a waiting claim),
  // including delayed messages this claim just read past.
  *next_due = std::min(*next_due, waiting_.NextDueAfter(now));
  // And the earliest end of a topic's pacing interval.
  *next_due = std::min(*next_due, pacer_.NextDue(now));
  return std::move(p.out);
}

absl::Status GroupImpl::ShareLease(absl::Duration lease) {
  const uint64_t key = shares_.NewKey();
  absl::StatusOr<LeaseId> id =
      db_->leases()->Create(lease, [this, key] { OnLeaseExpired(key); });
  if (!id.ok()) return Fail(id.status());
  std::vector<LeaseShares::Entry> entries;
  entries.reserve(handed_.size());
  for (const Handed& h : handed_) {
    h.rec->share = key;
    h.rec->share_at = static_cast<uint32_t>(entries.size());
    entries.push_back({.lane = h.lane, .id = h.id, .live = true});
  }
  shares_.Start(key, *id, std::move(entries));
  return absl::OkStatus();
}

LeaseId GroupImpl::LeaveShare(Rec* rec) {
  const uint64_t key = rec->share;
  rec->share = 0;
  return shares_.Leave(key, rec->share_at);
}

void GroupImpl::OnLeaseExpired(uint64_t key) {
  MutexLock l(&mu_);
  std::optional<LeaseShares::Share> share = shares_.Take(key);
  if (!share.has_value()) return;  // Its tasks all left flight meanwhile.
  const absl::Time now = db_->clock()->Now();
  for (const LeaseShares::Entry& e : share->entries) {
    if (!e.live) continue;
    Lane* lane = e.lane;
    auto t = lane->tasks.find(e.id);
    if (t == lane->tasks.end() || t->second.share != key) continue;
    Rec& rec = t->second;
    rec.share = 0;
    EndInFlight(lane, &rec);
    if (rec.attempts >= options_.max_attempts) {
      MarkDying(lane, e.id, &rec, DeadLetterReason::kLeaseExpired);
    } else {
      waiting_.Add(lane, e.id, &rec, now + Backoff(rec.attempts));
    }
  }
  if (wakeup_.has_waiters())
    wakeup_.Wake();  // Due now, or a new earliest due time.
}

}  // namespace hq
