// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/ordered_consumers.h"

#include <algorithm>
#include <utility>

#include "lib/consume/rebalance.h"
#include "lib/util/status_macros.h"

namespace hq {

OrderedConsumers::OrderedConsumers(
    LeaseManager* leases,
    std::function<void(const std::string& name, uint64_t gen)> on_expired,
    std::function<void()> on_rebalanced)
    : leases_(leases),
      on_expired_(std::move(on_expired)),
      on_rebalanced_(std::move(on_rebalanced)) {}

absl::Status OrderedConsumers::Arm(Consumer* c, absl::Duration lease) {
  c->gen = ++next_gen_;
  absl::StatusOr<LeaseId> id = leases_->Create(
      lease, [this, name = c->name, gen = c->gen] { on_expired_(name, gen); });
  if (!id.ok()) return id.status();
  c->lease = *id;
  return absl::OkStatus();
}

absl::StatusOr<OrderedConsumers::Consumer*> OrderedConsumers::Join(
    const std::string& name, absl::Duration lease) {
  auto it = consumers_.find(name);
  if (it != consumers_.end()) {
    Consumer* c = it->second.get();
    if (!leases_->Renew(c->lease, lease).ok()) {
      // Its expiry is running (waiting for our lock): a new lease, and the
      // old one's action finds a stale generation.
      HQ_RETURN_IF_ERROR(Arm(c, lease));
    }
    return c;
  }
  auto c = std::make_unique<Consumer>();
  c->name = name;
  HQ_RETURN_IF_ERROR(Arm(c.get(), lease));
  Consumer* raw = c.get();
  consumers_.emplace(name, std::move(c));
  Rebalance();
  return raw;
}

void OrderedConsumers::KeepAlive(const std::string& name,
                                 absl::Duration lease) {
  auto it = consumers_.find(name);
  if (it == consumers_.end()) return;  // Gone: Claim joins it again.
  Consumer* c = it->second.get();
  if (!leases_->Renew(c->lease, lease).ok()) {
    (void)Arm(c, lease);  // Fails only when the Db is closing.
  }
}

void OrderedConsumers::Expired(const std::string& name, uint64_t gen,
                               absl::Duration lease) {
  auto it = consumers_.find(name);
  if (it == consumers_.end() || it->second->gen != gen) return;
  if (claiming_.contains(name)) {
    // Blocked in a claim: live. A new lease (fails only when closing).
    (void)Arm(it->second.get(), lease);
    return;
  }
  Drop(name);  // Its lease just expired: nothing to cancel.
}

LeaseId OrderedConsumers::Leave(const std::string& name) {
  const LeaseId lease = Drop(name);
  // Claims of it in progress return; later ones join it again.
  if (claiming_.contains(name)) ++leaves_[name];
  return lease;
}

LeaseId OrderedConsumers::Drop(const std::string& name) {
  auto it = consumers_.find(name);
  const LeaseId lease = it->second->lease;
  for (uint32_t p : it->second->partitions) parts_[p].owner = nullptr;
  consumers_.erase(it);
  Rebalance();
  return lease;
}

uint64_t OrderedConsumers::BeginClaim(const std::string& name) {
  ++claiming_[name];
  auto it = leaves_.find(name);
  return it == leaves_.end() ? 0 : it->second;
}

void OrderedConsumers::EndClaim(const std::string& name) {
  auto it = claiming_.find(name);
  if (--it->second == 0) {
    claiming_.erase(it);
    leaves_.erase(name);  // No claim left that could see it.
  }
}

bool OrderedConsumers::LeftSince(const std::string& name,
                                 uint64_t before) const {
  auto it = leaves_.find(name);
  return it != leaves_.end() && it->second > before;
}

void OrderedConsumers::Rebalance() {
  std::vector<Consumer*> cs;
  std::vector<std::string> names;
  absl::flat_hash_map<const Consumer*, int> index;
  for (auto& [name, c] : consumers_) {
    index[c.get()] = static_cast<int>(cs.size());
    cs.push_back(c.get());
    names.push_back(name);
  }
  std::vector<int> owner(parts_.size(), -1);
  for (size_t p = 0; p < parts_.size(); ++p) {
    if (parts_[p].owner != nullptr) owner[p] = index.at(parts_[p].owner);
  }
  const std::vector<int> assigned = AssignPartitions(owner, names);
  for (Consumer* c : cs) c->partitions.clear();
  for (uint32_t p = 0; p < parts_.size(); ++p) {
    parts_[p].owner = assigned[p] < 0 ? nullptr : cs[assigned[p]];
    if (parts_[p].owner != nullptr) parts_[p].owner->partitions.push_back(p);
  }
  for (Consumer* c : cs) {
    c->next = c->partitions.empty() ? 0 : c->next % c->partitions.size();
  }
  on_rebalanced_();
}

std::vector<ConsumerInfo> OrderedConsumers::Infos(absl::Time now) const {
  std::vector<ConsumerInfo> out;
  for (const auto& [name, c] : consumers_) {
    ConsumerInfo info;
    info.name = name;
    info.partitions = c->partitions;
    absl::StatusOr<absl::Time> deadline = leases_->Deadline(c->lease);
    // An expiry waiting for the group's lock: the consumer is about to
    // leave.
    info.lease_deadline = deadline.ok() ? *deadline : now;
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(),
            [](const ConsumerInfo& a, const ConsumerInfo& b) {
              return a.name < b.name;
            });
  return out;
}

}  // namespace hq
