// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/lease_manager.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace hq {
namespace {

constexpr size_t kReuseAfter = 1024;  // Freed slots wait this long in line.

absl::Status CheckDuration(absl::Duration d) {
  if (d < absl::ZeroDuration() || d == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "lease duration %s must be finite and >= 0", absl::FormatDuration(d)));
  }
  return absl::OkStatus();
}

}  // namespace

LeaseManagerImpl::LeaseManagerImpl(Clock* clock) : clock_(clock) {
  thread_ = std::thread([this] { Run(); });
  thread_id_ = thread_.get_id();
  clock_->AddListener(this);
}

LeaseManagerImpl::~LeaseManagerImpl() { Shutdown(); }

void LeaseManagerImpl::Shutdown() {
  {
    MutexLock l(&mu_);
    if (shutdown_) return;
    shutdown_ = true;
    wake_.Signal();
    fired_.SignalAll();
  }
  thread_.join();
  clock_->RemoveListener(this);
  // Pending actions never run. Destroy them now, outside the lock and with
  // every member alive: their captures may call back (a captured Scanner
  // cancels its own lease).
  std::vector<std::function<void()>> pending;
  {
    MutexLock l(&mu_);
    for (Slot& slot : slots_) {
      if (slot.action) pending.push_back(std::move(slot.action));
    }
  }
  pending.clear();
}

absl::Time LeaseManagerImpl::DeadlineAfter(absl::Duration d) const {
  return clock_->Now() + d;
}

absl::StatusOr<LeaseId> LeaseManagerImpl::Create(
    absl::Duration duration, std::function<void()> on_expire) {
  if (absl::Status s = CheckDuration(duration); !s.ok()) return s;
  return CreateAt(DeadlineAfter(duration), std::move(on_expire));
}

absl::StatusOr<LeaseId> LeaseManagerImpl::CreateAt(
    absl::Time deadline, std::function<void()> on_expire) {
  if (!on_expire) {
    return absl::InvalidArgumentError("lease expiry action is empty");
  }
  if (deadline == absl::InfiniteFuture() || deadline == absl::InfinitePast()) {
    return absl::InvalidArgumentError("lease deadline must be finite");
  }
  MutexLock l(&mu_);
  if (shutdown_) {
    return absl::FailedPreconditionError("the Db's leases are shut down");
  }
  uint32_t s;
  if (free_.size() > kReuseAfter) {
    s = free_.front();
    free_.pop_front();
  } else {
    s = static_cast<uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Slot& slot = slots_[s];
  slot.deadline = deadline;
  slot.seq = next_seq_++;
  slot.action = std::move(on_expire);
  slot.state = State::kActive;
  HeapPush(s);
  ++live_;
  if (slots_[s].heap_pos == 0) wake_.Signal();
  return (uint64_t{slots_[s].generation} << 32) | (uint64_t{s} + 1);
}

absl::StatusOr<uint32_t> LeaseManagerImpl::Find(LeaseId id) {
  const uint64_t low = id & 0xffffffffu;
  const uint32_t gen = static_cast<uint32_t>(id >> 32);
  if (low == 0 || low > slots_.size()) {
    return absl::NotFoundError(absl::StrFormat("lease %d is unknown", id));
  }
  const uint32_t s = static_cast<uint32_t>(low - 1);
  const Slot& slot = slots_[s];
  if (slot.generation == gen && slot.state == State::kActive) return s;
  if ((slot.generation == gen && slot.state == State::kFiring) ||
      (slot.generation == gen + 1 && slot.last_expired)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("lease %d expired", id));
  }
  return absl::NotFoundError(absl::StrFormat(
      "lease %d is unknown: cancelled, or expired long ago", id));
}

absl::Status LeaseManagerImpl::Renew(LeaseId id, absl::Duration duration) {
  if (absl::Status s = CheckDuration(duration); !s.ok()) return s;
  const absl::Time deadline = DeadlineAfter(duration);
  MutexLock l(&mu_);
  absl::StatusOr<uint32_t> s = Find(id);
  if (!s.ok()) return s.status();
  slots_[*s].deadline = deadline;
  slots_[*s].seq = next_seq_++;
  HeapFix(slots_[*s].heap_pos);
  if (slots_[*s].heap_pos == 0) wake_.Signal();
  return absl::OkStatus();
}

absl::Status LeaseManagerImpl::Cancel(LeaseId id) {
  // Destroyed after the lock is released: the action's captures may call
  // back into the manager (a captured Scanner cancels its own lease).
  std::function<void()> doomed;
  MutexLock l(&mu_);
  absl::StatusOr<uint32_t> s = Find(id);
  if (s.ok()) {
    HeapRemove(slots_[*s].heap_pos);
    doomed = std::move(slots_[*s].action);
    Free(*s, /*expired=*/false);
    return absl::OkStatus();
  }
  // If the action is running, wait for it (unless this is the action).
  const uint32_t slot = static_cast<uint32_t>((id & 0xffffffffu) - 1);
  const uint32_t gen = static_cast<uint32_t>(id >> 32);
  if (absl::IsFailedPrecondition(s.status()) &&
      std::this_thread::get_id() != thread_id_) {
    while (slots_[slot].generation == gen &&
           slots_[slot].state == State::kFiring) {
      fired_.Wait(&mu_);
    }
  }
  return s.status();
}

absl::StatusOr<absl::Time> LeaseManagerImpl::Deadline(LeaseId id) {
  MutexLock l(&mu_);
  absl::StatusOr<uint32_t> s = Find(id);
  if (!s.ok()) return s.status();
  return slots_[*s].deadline;
}

size_t LeaseManagerImpl::size() {
  MutexLock l(&mu_);
  return live_;
}

void LeaseManagerImpl::Free(uint32_t s, bool expired) {
  Slot& slot = slots_[s];
  slot.action = nullptr;
  slot.state = State::kFree;
  ++slot.generation;
  slot.last_expired = expired;
  free_.push_back(s);
  --live_;
}

void LeaseManagerImpl::OnTimeChanged() {
  if (std::this_thread::get_id() == thread_id_) return;  // From an action.
  MutexLock l(&mu_);
  if (shutdown_) return;
  const uint64_t epoch = ++epoch_;
  wake_.Signal();
  while (processed_ < epoch && !shutdown_) fired_.Wait(&mu_);
}

void LeaseManagerImpl::Run() {
  MutexLock l(&mu_);
  while (!shutdown_) {
    const uint64_t epoch = epoch_;
    const absl::Time now = clock_->Now();
    if (!heap_.empty() && slots_[heap_[0]].deadline <= now) {
      const uint32_t s = heap_[0];
      HeapRemove(0);
      slots_[s].state = State::kFiring;
      std::function<void()> action = std::move(slots_[s].action);
      mu_.Unlock();
      action();
      action = nullptr;  // Its captures die outside the lock too.
      mu_.Lock();
      Free(s, /*expired=*/true);
      fired_.SignalAll();
      continue;
    }
    if (processed_ < epoch) {
      processed_ = epoch;
      fired_.SignalAll();
    }
    if (heap_.empty() || !clock_->IsRealTime()) {
      wake_.Wait(&mu_);
    } else {
      wake_.WaitWithTimeout(&mu_, slots_[heap_[0]].deadline - now);
    }
  }
}

// ---- Indexed binary min-heap on deadline.

void LeaseManagerImpl::Place(uint32_t pos, uint32_t slot) {
  heap_[pos] = slot;
  slots_[slot].heap_pos = pos;
}

bool LeaseManagerImpl::Before(uint32_t a, uint32_t b) const {
  const Slot& x = slots_[a];
  const Slot& y = slots_[b];
  return x.deadline != y.deadline ? x.deadline < y.deadline : x.seq < y.seq;
}

bool LeaseManagerImpl::SiftUp(uint32_t pos) {
  const uint32_t slot = heap_[pos];
  const uint32_t start = pos;
  while (pos > 0) {
    const uint32_t parent = (pos - 1) / 2;
    if (!Before(slot, heap_[parent])) break;
    Place(pos, heap_[parent]);
    pos = parent;
  }
  Place(pos, slot);
  return pos != start;
}

void LeaseManagerImpl::SiftDown(uint32_t pos) {
  const uint32_t n = static_cast<uint32_t>(heap_.size());
  const uint32_t slot = heap_[pos];
  while (true) {
    uint32_t child = 2 * pos + 1;
    if (child >= n) break;
    if (child + 1 < n && Before(heap_[child + 1], heap_[child])) ++child;
    if (!Before(heap_[child], slot)) break;
    Place(pos, heap_[child]);
    pos = child;
  }
  Place(pos, slot);
}

void LeaseManagerImpl::HeapPush(uint32_t slot) {
  heap_.push_back(slot);
  slots_[slot].heap_pos = static_cast<uint32_t>(heap_.size() - 1);
  SiftUp(slots_[slot].heap_pos);
}

void LeaseManagerImpl::HeapRemove(uint32_t pos) {
  const uint32_t last = heap_.back();
  heap_.pop_back();
  if (pos == heap_.size()) return;
  Place(pos, last);
  HeapFix(pos);
}

void LeaseManagerImpl::HeapFix(uint32_t pos) {
  if (!SiftUp(pos)) SiftDown(pos);
}

}  // namespace hq
