// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): Claim and the passes that collect tasks
// for it: ReadLane, CollectDue, CollectUnordered, CollectOrdered, ClaimOnce,
// and lease expiry.

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/consume/consume_options.h"
#include "lib/consume/group_impl.h"
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
// A claim reads past at most this many messages of topics held back by
// their pacing in one lane of a `time` layout queue (hq/group.h).
constexpr size_t kMaxPacedSkips = 1000;

}  // namespace

absl::Status GroupImpl::DecodeValue(std::string_view value, MessageId id,
                                    Task* t) const {
  std::string_view key, payload;
  uint64_t not_before_ms;
  if (!format::DecodeMessageValue(value, &key, &payload, &not_before_ms)) {
    return absl::DataLossError(absl::StrCat(
        "queue '", queue_->name(), "': malformed message ", id.ToString()));
  }
  t->key.assign(key);
  t->payload.assign(payload);
  t->not_before = format::NotBeforeTime(not_before_ms);
  return absl::OkStatus();
}

absl::StatusOr<bool> GroupImpl::ReadMessage(Lane* lane, MessageId id,
                                            leveldb::Iterator* it, Task* t) {
  std::string seek = lane->prefix;
  LayoutCodec::AppendMessageId(&seek, id);
  it->Seek(seek);
  if (!it->Valid()) {
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading a task"));
    return false;
  }
  const std::string_view key = View(it->key());
  if (!key.starts_with(seek)) return false;  // Gone (TTL sweep, drop).
  HQ_RETURN_IF_ERROR(DecodeValue(View(it->value()), id, t));
  t->topic.assign(queue_->codec().lane_has_topic()
                      ? std::string_view(lane->topic)
                      : key.substr(seek.size()));
  return true;
}

absl::StatusOr<bool> GroupImpl::Offer(LaneRead* r, MessageId id,
                                      std::string_view topic,
                                      std::string_view value) {
  Lane* lane = r->lane;
  if (r->handed == r->want) return false;
  if (lane->tasks.contains(id) || !records_.InScope(topic)) {
    if (r->contiguous) lane->scan = id.Next();
    return true;
  }
  Task t;
  HQ_RETURN_IF_ERROR(DecodeValue(value, id, &t));
  if (t.not_before > r->now) {
    // Delayed: it waits with the redeliveries until its time (a record,
    // attempt 0, so that a restart keeps the time).
    Rec& rec = lane->tasks[id];
    rec.attempts = 0;
    waiting_.Add(lane, id, &rec, t.not_before);
    PutTask(lane, id, &rec, r->batch);
    if (r->contiguous) lane->scan = id.Next();
    return !record_.ordered;  // It holds back an ordered lane.
  }
  if (!r->topics.empty() &&
      std::find(r->topics.begin(), r->topics.end(), topic) == r->topics.end()) {
    r->contiguous = false;  // Left for a claim without this filter.
    return true;
  }
  if (pacer_.on()) {
    HQ_ASSIGN_OR_RETURN(const bool paced_out, PacedOut(topic, r->now));
    // An ordered lane waits for it; others take the messages after it.
    if (paced_out && (r->has_topic || record_.ordered)) return false;
    if (paced_out) {
      // Bounded: a lane of topics that are all held back is not read to
      // its end by every claim.
      if (++r->paced_skips == kMaxPacedSkips) return false;
      r->contiguous = false;
      return true;
    }
  }
  t.topic.assign(topic);
  Rec& rec = lane->tasks[id];
  HandOut(lane, id, &rec, r->now, r->lease, /*covered=*/r->contiguous, &t,
          r->batch);
  r->out->push_back(std::move(t));
  ++r->handed;
  if (r->contiguous) lane->scan = id.Next();
  return true;
}

absl::StatusOr<bool> GroupImpl::ReadLane(Lane* lane, size_t want,
                                         const std::vector<std::string>& topics,
                                         ClaimPass* p) {
  absl::StatusOr<bool> drained = ReadLaneTurn(lane, want, topics, p);
  lane->at_end = drained.ok() && *drained;
  return drained;
}

absl::StatusOr<bool> GroupImpl::ReadLaneTurn(
    Lane* lane, size_t want, const std::vector<std::string>& topics,
    ClaimPass* p) {
  if (lane->scan < p->cutoff) lane->scan = p->cutoff;  // Expired: never out.
  LaneRead r{.lane = lane,
             .want = want,
             .topics = topics,
             .has_topic = queue_->codec().lane_has_topic(),
             .now = p->now,
             .lease = p->lease,
             .out = &p->out,
             .batch = &p->batch};
  // A topic layout lane is one topic: held back whole.
  if (r.has_topic && pacer_.on()) {
    HQ_ASSIGN_OR_RETURN(const bool paced_out, PacedOut(lane->topic, p->now));
    if (paced_out) return false;
  }
  if (r.has_topic) {
    // What an earlier turn read ahead: the lane's messages from its scan
    // cursor on (a topic layout lane's scan cursor passes every message
    // it examines).
    ReadAhead& ahead = lane->ahead;
    ahead.DropBelow(lane->scan);
    // A sweep may have deleted some since (a clock that stepped back):
    // read them again.
    if (!ahead.empty() && ahead.front_id() < queue_->swept_cutoff()) {
      ahead.Clear();
    }
    while (!ahead.empty()) {
      HQ_ASSIGN_OR_RETURN(
          const bool go_on,
          Offer(&r, ahead.front_id(), lane->topic, ahead.front_value()));
      ahead.DropBelow(lane->scan);
      if (!go_on) return false;
    }
    if (lanes_.Walked(*lane)) return ReadWalked(&r);
  }
  std::string seek = lane->prefix;
  LayoutCodec::AppendMessageId(&seek, lane->scan);
  const size_t n = lane->prefix.size();
  leveldb::Iterator* it = p->it;
  MessageId id;
  ++test_lane_seeks_;
  for (it->Seek(seek); it->Valid(); it->Next()) {
    const std::string_view key = View(it->key());
    // Past the lane's last message: nothing left to read.
    if (!LayoutCodec::LaneMessage(key, lane->prefix, &id)) return r.contiguous;
    const std::string_view topic =
        r.has_topic ? std::string_view(lane->topic)
                    : key.substr(n + LayoutCodec::kMessageIdSize);
    HQ_ASSIGN_OR_RETURN(const bool go_on,
                        Offer(&r, id, topic, View(it->value())));
    if (go_on) continue;
    if (r.has_topic && r.handed == want && !record_.ordered) {
      // The lane's next turn starts here (an ordered group's lane leaves
      // memory when its task completes: what it read ahead would be lost).
      HQ_RETURN_IF_ERROR(lane->ahead.Fill(lane->prefix, it, &ahead_budget_));
    }
    return false;
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading a lane"));
  return r.contiguous;
}

absl::StatusOr<bool> GroupImpl::ReadWalked(LaneRead* r) {
  // The pass's walk saw, with the pass's iterator, the lane hold one
  // message: all a read with it would find from the scan cursor on.
  Lane* lane = r->lane;
  std::string_view value;
  // Taken: a later turn of this pass reads.
  const LaneSource::Kept* m = lanes_.TakeWalked(lane, &value);
  if (m->id < lane->scan) return r->contiguous;
  HQ_ASSIGN_OR_RETURN(const bool go_on, Offer(r, m->id, lane->topic, value));
  return go_on && r->contiguous;
}

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
        // Bounded, as in ReadLane: a claim does not walk every due task of
        // topics held back.
        if (++paced_skips == kMaxPacedSkips) break;
        ++w;
        continue;
      }
    }
    Rec* rec = &lane->tasks.find(id)->second;
    Task t;
    absl::StatusOr<bool> found =
        id < p->cutoff ? false : ReadMessage(lane, id, p->it, &t);
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
        if (++paced_skips == kMaxPacedSkips) break;
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
            ReadLane(lane, want,
                     has_topic ? std::vector<std::string>() : p->o.topics, p));
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
        HQ_ASSIGN_OR_RETURN(bool drained, ReadLane(lane, 1, {}, p));
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
  p.match = [&](const Lane* lane) {
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
