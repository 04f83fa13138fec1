// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): Ordered groups' consumers: Join,
// KeepAlive, Leave, expiry, and the partition assignment
// (lib/consume/rebalance.h).

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/consume/group_impl.h"
#include "lib/consume/rebalance.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

absl::Status GroupImpl::ArmConsumer(Consumer* c) {
  c->gen = ++next_consumer_gen_;
  absl::StatusOr<LeaseId> id = db_->leases()->Create(
      options_.ownership_lease,
      [this, name = c->name, gen = c->gen] { OnConsumerExpired(name, gen); });
  if (!id.ok()) return id.status();
  c->lease = *id;
  return absl::OkStatus();
}

absl::StatusOr<GroupImpl::Consumer*> GroupImpl::Join(const std::string& name) {
  auto it = consumers_.find(name);
  if (it != consumers_.end()) {
    Consumer* c = it->second.get();
    if (!db_->leases()->Renew(c->lease, options_.ownership_lease).ok()) {
      // Its expiry is running (waiting for our lock): a new lease, and the
      // old one's action finds a stale generation.
      HQ_RETURN_IF_ERROR(ArmConsumer(c));
    }
    return c;
  }
  auto c = std::make_unique<Consumer>();
  c->name = name;
  HQ_RETURN_IF_ERROR(ArmConsumer(c.get()));
  Consumer* raw = c.get();
  consumers_.emplace(name, std::move(c));
  Rebalance();
  return raw;
}

void GroupImpl::KeepAlive(const std::string& name) {
  auto it = consumers_.find(name);
  if (it == consumers_.end()) return;  // Gone: Claim joins it again.
  Consumer* c = it->second.get();
  if (!db_->leases()->Renew(c->lease, options_.ownership_lease).ok()) {
    (void)ArmConsumer(c);  // Fails only when the Db is closing.
  }
}

void GroupImpl::OnConsumerExpired(const std::string& name, uint64_t gen) {
  {
    MutexLock l(&mu_);
    auto it = consumers_.find(name);
    if (it == consumers_.end() || it->second->gen != gen) return;
    if (claiming_.contains(name)) {
      // Blocked in a claim: live. A new lease (fails only when closing).
      (void)ArmConsumer(it->second.get());
      return;
    }
    DropConsumer(name);  // Its lease just expired: nothing to cancel.
  }
}

LeaseId GroupImpl::DropConsumer(const std::string& name) {
  auto it = consumers_.find(name);
  const LeaseId lease = it->second->lease;
  for (uint32_t p : it->second->partitions) parts_[p].owner = nullptr;
  consumers_.erase(it);
  Rebalance();
  return lease;
}

void GroupImpl::Rebalance() {
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
  // Waiting claims of consumers that gained partitions.
  if (waiters_.load() > 0) Wake();
}

absl::StatusOr<std::vector<ConsumerInfo>> GroupImpl::Consumers() {
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  std::vector<ConsumerInfo> out;
  for (const auto& [name, c] : consumers_) {
    ConsumerInfo info;
    info.name = name;
    info.partitions = c->partitions;
    absl::StatusOr<absl::Time> deadline = db_->leases()->Deadline(c->lease);
    // An expiry waiting for our lock: the consumer is about to leave.
    info.lease_deadline = deadline.ok() ? *deadline : db_->clock()->Now();
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(),
            [](const ConsumerInfo& a, const ConsumerInfo& b) {
              return a.name < b.name;
            });
  return out;
}

absl::Status GroupImpl::Leave(std::string_view consumer) {
  if (!record_.ordered) {
    return absl::FailedPreconditionError(absl::StrCat(
        "group '", name_, "' is not ordered: it has no consumers to leave"));
  }
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  LeaseId lease;
  {
    MutexLock l(&mu_);
    HQ_RETURN_IF_ERROR(Usable());
    if (!consumers_.contains(Av(consumer))) {
      return absl::NotFoundError(absl::StrCat("'", Av(consumer),
                                              "' is not a live consumer of "
                                              "group '",
                                              name_, "'"));
    }
    lease = DropConsumer(std::string(consumer));
    // Claims of it in progress return; later ones join it again.
    if (claiming_.contains(Av(consumer))) ++leaves_[std::string(consumer)];
  }
  // Outside the lock (an expiry running now waits for it, then finds the
  // consumer gone).
  (void)db_->leases()->Cancel(lease);
  return absl::OkStatus();
}

}  // namespace hq
