// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/fleet/ownership.h"

#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq::fleet {
namespace {

SteadyTime SteadyNow() { return std::chrono::steady_clock::now(); }

std::chrono::steady_clock::duration ToSteady(absl::Duration d) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      absl::ToChronoNanoseconds(d));
}

}  // namespace

Ownership::Ownership(const OwnershipOptions& options)
    : options_(options), root_(absl::StrCat("/hq-fleet/", options.fleet)) {
  auto empty = std::make_shared<View>();
  empty->lease_until = SteadyTime::min();
  view_ = std::move(empty);
}

std::string Ownership::Path(std::string_view leaf) const {
  return absl::StrCat(root_, "/", Av(leaf));
}

absl::StatusOr<std::unique_ptr<Ownership>> Ownership::Start(
    const OwnershipOptions& options) {
  std::unique_ptr<Ownership> o(new Ownership(options));
  // A loaded server or a leader election answers late: Unavailable is
  // tried again, with a new session, for three session timeouts.
  const absl::Time end = absl::Now() + 3 * options.session_timeout;
  for (;;) {
    absl::Status s = o->Join();
    if (s.ok()) s = o->Step();
    if (s.ok()) break;
    o->session_.reset();
    if (!absl::IsUnavailable(s) || absl::Now() >= end) return s;
    absl::SleepFor(absl::Milliseconds(200));
  }
  o->thread_ = std::thread([p = o.get()] { p->Run(); });
  return o;
}

Ownership::~Ownership() {
  {
    MutexLock l(&mu_);
    stop_ = true;
    wake_cv_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
  session_.reset();
}

void Ownership::Wake() {
  MutexLock l(&mu_);
  wake_ = true;
  wake_cv_.Signal();
}

absl::Status Ownership::Join() {
  HQ_ASSIGN_OR_RETURN(
      session_,
      ZkSession::Connect(options_.zookeeper, options_.session_timeout,
                         options_.session_timeout, [this] { Wake(); }));
  for (std::string_view dir : {"members", "election", "left"}) {
    HQ_RETURN_IF_ERROR(session_->EnsurePath(Path(dir)));
  }
  const std::string config =
      absl::StrCat("partitions=", options_.partitions, "\n");
  if (absl::StatusOr<std::string> made =
          session_->Create(Path("config"), config, 0);
      !made.ok()) {
    if (!absl::IsAlreadyExists(made.status())) return made.status();
    HQ_ASSIGN_OR_RETURN(ZkNode node, session_->Get(Path("config"), false));
    if (node.data != config) {
      return absl::FailedPreconditionError(absl::StrCat(
          "hq fleet \"", options_.fleet, "\" has ", node.data.substr(0, 40),
          " (", Path("config"),
          "), this agent was given partitions=", options_.partitions));
    }
  }
  absl::StatusOr<std::string> made = session_->Create(
      Path("assignment"),
      EncodeAssignment(EmptyAssignment(options_.partitions)), 0);
  if (!made.ok() && !absl::IsAlreadyExists(made.status())) {
    return made.status();
  }
  return JoinMember();
}

// The member node and the election node of this session. A node of the
// same id left by a previous process of this agent goes when that
// process's session expires: wait for it, up to two session timeouts.
absl::Status Ownership::JoinMember() {
  const std::string member = Path(absl::StrCat("members/", options_.agent_id));
  // What ReadFleetStatus shows of a live agent: "pid=<pid>\nhost=<name>\n".
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  const std::string data =
      absl::StrCat("pid=", getpid(), "\nhost=", host, "\n");
  const absl::Time end = absl::Now() + 2 * options_.session_timeout;
  for (;;) {
    absl::StatusOr<std::string> made =
        session_->Create(member, data, ZOO_EPHEMERAL);
    if (made.ok()) break;
    if (!absl::IsAlreadyExists(made.status())) return made.status();
    ZkNode node;
    HQ_ASSIGN_OR_RETURN(bool exists, session_->Exists(member, &node));
    if (exists && node.ephemeral_owner == session_->session_id()) break;
    if (absl::Now() > end) {
      return absl::AlreadyExistsError(
          absl::StrCat("hq fleet: another live agent is \"", options_.agent_id,
                       "\" (", member, " is held by session 0x",
                       absl::Hex(node.ephemeral_owner), ")"));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
  absl::Status s =
      session_->Delete(Path(absl::StrCat("left/", options_.agent_id)));
  if (!s.ok() && !absl::IsNotFound(s)) return s;
  HQ_ASSIGN_OR_RETURN(election_node_,
                      session_->Create(Path("election/n_"), options_.agent_id,
                                       ZOO_EPHEMERAL | ZOO_SEQUENCE));
  return absl::OkStatus();
}

std::shared_ptr<const Ownership::View> Ownership::view() const {
  MutexLock l(&mu_);
  return view_;
}

Assignment Ownership::assignment() const {
  MutexLock l(&mu_);
  return assignment_;
}

bool Ownership::Serving(uint32_t p, uint64_t epoch,
                        SteadyTime* valid_until) const {
  std::shared_ptr<const View> v = view();
  auto it = v->owned.find(p);
  if (it == v->owned.end() || it->second.epoch != epoch) return false;
  const SteadyTime now = SteadyNow();
  if (now < it->second.serve_from || now >= v->lease_until) return false;
  if (valid_until != nullptr) *valid_until = v->lease_until;
  return true;
}

void Ownership::Run() {
  const absl::Duration period = options_.ownership_lease / 3;
  for (;;) {
    {
      const absl::Time end = absl::Now() + period;
      MutexLock l(&mu_);
      while (!wake_ && !stop_) {
        const absl::Duration left = end - absl::Now();
        if (left <= absl::ZeroDuration()) break;
        wake_cv_.WaitWithTimeout(&mu_, left);
      }
      if (stop_) return;
      wake_ = false;
    }
    if (session_ == nullptr || session_->expired()) {
      // The server ended the session: its nodes are gone. The leases run
      // out by themselves; join again with a new session.
      session_.reset();
      if (!Join().ok()) {
        session_.reset();
        continue;
      }
    }
    Step().IgnoreError();  // A failed read renews nothing; the next tries.
  }
}

absl::Status Ownership::Step() {
  const SteadyTime sent = SteadyNow();
  HQ_RETURN_IF_ERROR(
      session_->Sync(Path("assignment"), options_.ownership_lease / 3));
  HQ_ASSIGN_OR_RETURN(ZkNode node, session_->Get(Path("assignment"), true));
  HQ_ASSIGN_OR_RETURN(Assignment a, DecodeAssignment(node.data));
  if (a.partitions() != options_.partitions) {
    return absl::DataLossError(
        absl::StrCat("hq fleet: the assignment has ", a.partitions(),
                     " partitions, the fleet ", options_.partitions));
  }
  HQ_ASSIGN_OR_RETURN(std::vector<std::string> election,
                      session_->Children(Path("election"), true));
  std::sort(election.begin(), election.end());
  const bool coordinator =
      !election.empty() && Path("election/" + election[0]) == election_node_;

  auto next = std::make_shared<View>();
  next->lease_until = sent + ToSteady(options_.ownership_lease);
  next->coordinator = coordinator;
  const SteadyTime serve_from =
      SteadyNow() +
      ToSteady(options_.ownership_lease + options_.takeover_delay);
  {
    MutexLock l(&mu_);
    if (left_) return absl::FailedPreconditionError("hq fleet: left");
    for (uint32_t p = 0; p < a.partitions(); ++p) {
      if (a.owners[p] != options_.agent_id) continue;
      auto it = view_->owned.find(p);
      const bool kept =
          it != view_->owned.end() && it->second.epoch == a.epochs[p];
      next->owned[p] =
          Held{.epoch = a.epochs[p],
               .serve_from = kept ? it->second.serve_from : serve_from};
    }
    next->reads = view_->reads + 1;
    view_ = next;
    assignment_ = a;
  }
  if (!coordinator) {
    first_missing_.clear();
    return absl::OkStatus();
  }
  return Coordinate(a, node.version);
}

// The coordinator's step: members that are gone past their grace period
// (or left) lose their partitions; new members get their share.
absl::Status Ownership::Coordinate(const Assignment& current, int32_t version) {
  HQ_ASSIGN_OR_RETURN(std::vector<std::string> live,
                      session_->Children(Path("members"), true));
  HQ_ASSIGN_OR_RETURN(std::vector<std::string> left,
                      session_->Children(Path("left"), true));
  absl::flat_hash_set<std::string> live_set(live.begin(), live.end());
  absl::flat_hash_set<std::string> left_set(left.begin(), left.end());
  const SteadyTime now = SteadyNow();
  std::vector<std::string> members = live;
  absl::flat_hash_set<std::string> seen;
  for (const std::string& owner : current.owners) {
    if (owner.empty() || live_set.contains(owner) ||
        !seen.insert(owner).second) {
      continue;
    }
    if (left_set.contains(owner)) continue;
    auto [it, inserted] = first_missing_.try_emplace(owner, now);
    if (now - it->second < ToSteady(options_.grace)) members.push_back(owner);
  }
  for (const std::string& id : live) first_missing_.erase(id);
  std::sort(members.begin(), members.end());
  size_t moved = 0;
  Assignment next = Rebalance(current, members, &moved);
  if (moved > 0) {
    HQ_RETURN_IF_ERROR(session_->CheckAndSet(election_node_, Path("assignment"),
                                             EncodeAssignment(next), version));
  }
  // A left/ marker is kept until its agent owns nothing.
  absl::flat_hash_set<std::string> owners(next.owners.begin(),
                                          next.owners.end());
  for (const std::string& id : left) {
    if (!owners.contains(id) && !live_set.contains(id)) {
      session_->Delete(Path(absl::StrCat("left/", id))).IgnoreError();
      first_missing_.erase(id);
    }
  }
  return absl::OkStatus();
}

absl::Status Ownership::Leave() {
  {
    MutexLock l(&mu_);
    if (left_) return absl::OkStatus();
    left_ = true;
    stop_ = true;
    wake_cv_.SignalAll();
    auto empty = std::make_shared<View>();
    empty->lease_until = SteadyTime::min();
    view_ = std::move(empty);
  }
  if (thread_.joinable()) thread_.join();
  absl::Status s;
  if (session_ != nullptr && !session_->expired()) {
    absl::StatusOr<std::string> made =
        session_->Create(Path(absl::StrCat("left/", options_.agent_id)), "", 0);
    if (!made.ok() && !absl::IsAlreadyExists(made.status())) {
      s = made.status();
    }
  }
  session_.reset();  // Its member and election nodes go with it.
  return s;
}

}  // namespace hq::fleet
