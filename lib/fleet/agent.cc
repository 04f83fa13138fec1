// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include <algorithm>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "lib/fleet/agent_impl.h"
#include "lib/fleet/clients.h"
#include "lib/fleet/records.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq::fleet {
namespace {

constexpr size_t kMaxKeyBytes = 1024;  // hq's key and dedup key limit.
constexpr int kIngestBatch = 1000;
constexpr char kGroup[] = "fetch";
// A partition new to this agent is rebuilt this long before it is served,
// not when it is first seen: the previous owner's last completions (of the
// tasks it handed out before its lease ran out) are published by then, so
// the rebuild leaves them out.
constexpr std::chrono::milliseconds kRebuildLeadSteady{500};

// Agent ids: 1..64 of [A-Za-z0-9_.-] (fleet names: ValidFleetName).
bool ValidAgentId(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' &&
        c != '.' && c != '-') {
      return false;
    }
  }
  return true;
}

absl::Status Check(const AgentOptions& o) {
  auto bad = [](std::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("hq fleet: ", Av(what)));
  };
  if (!ValidAgentId(o.agent_id)) {
    return bad("agent_id must be 1..64 of [A-Za-z0-9_.-]");
  }
  if (!ValidFleetName(o.fleet)) {
    return bad("fleet must be 1..64 of [A-Za-z0-9_-]");
  }
  if (o.db_path.empty()) return bad("db_path is empty");
  if (o.zookeeper.empty()) return bad("zookeeper is empty");
  if (o.nats.empty()) return bad("nats is empty");
  if (o.partitions < 1 || o.partitions > 65536) {
    return bad("partitions must be 1..65536");
  }
  if (o.session_timeout <= absl::ZeroDuration() ||
      o.ownership_lease <= absl::ZeroDuration() ||
      o.ownership_lease >= o.session_timeout) {
    return bad("0 < ownership_lease < session_timeout is required");
  }
  if (o.grace < absl::ZeroDuration()) return bad("grace is negative");
  if (o.replicas < 1 || o.replicas > 5) return bad("replicas must be 1..5");
  if (o.task_lease <= absl::ZeroDuration()) return bad("task_lease <= 0");
  return absl::OkStatus();
}

std::string QueuePrefix(uint32_t p) { return absl::StrFormat("p%05u.", p); }
std::string QueueName(uint32_t p, uint64_t epoch) {
  return absl::StrCat(QueuePrefix(p), "e", epoch);
}

absl::Time ToWall(SteadyTime t) {
  return absl::Now() + absl::FromChrono(t - std::chrono::steady_clock::now());
}

}  // namespace

absl::StatusOr<std::unique_ptr<Agent>> Agent::Open(
    const AgentOptions& options) {
  return AgentImpl::Open(options);
}

AgentImpl::AgentImpl(const AgentOptions& options) : options_(options) {}

absl::StatusOr<std::unique_ptr<Agent>> AgentImpl::Open(
    const AgentOptions& options) {
  HQ_RETURN_IF_ERROR(Check(options));
  std::unique_ptr<AgentImpl> a(new AgentImpl(options));
  HQ_RETURN_IF_ERROR(a->Init());
  a->ingest_ = std::thread([p = a.get()] { p->IngestLoop(); });
  a->flusher_ = std::thread([p = a.get()] { p->FlushLoop(); });
  return std::unique_ptr<Agent>(std::move(a));
}

absl::Status AgentImpl::Init() {
  HQ_ASSIGN_OR_RETURN(db_, Db::Open(options_.db_path, Options()));
  HandoffOptions h;
  for (absl::string_view u : absl::StrSplit(options_.nats, ',')) {
    if (!u.empty()) h.urls.emplace_back(u);
  }
  h.fleet = options_.fleet;
  h.partitions = options_.partitions;
  h.replicas = options_.replicas;
  h.duplicate_window = options_.duplicate_window;
  h.ack_wait = std::max(options_.task_lease, absl::Seconds(5));
  HQ_ASSIGN_OR_RETURN(handoff_, Handoff::Connect(h));
  OwnershipOptions o{.agent_id = options_.agent_id,
                     .fleet = options_.fleet,
                     .zookeeper = options_.zookeeper,
                     .partitions = options_.partitions,
                     .session_timeout = options_.session_timeout,
                     .grace = options_.grace,
                     .ownership_lease = options_.ownership_lease,
                     .takeover_delay = std::max(options_.pacing.interval,
                                                options_.task_lease)};
  HQ_ASSIGN_OR_RETURN(ownership_, Ownership::Start(o));
  return absl::OkStatus();
}

AgentImpl::~AgentImpl() {
  {
    MutexLock l(&mu_);
    stop_ = true;
    left_ = true;
    stop_cv_.SignalAll();
  }
  if (ingest_.joinable()) ingest_.join();
  if (flusher_.joinable()) flusher_.join();
  if (handoff_ != nullptr) FlushCompletions().IgnoreError();
  ownership_.reset();  // The session ends; the grace period starts.
  {
    MutexLock l(&mu_);
    partitions_.clear();
  }
  handoff_.reset();
  db_.reset();
}

absl::Status AgentImpl::CheckOpen() const {
  MutexLock l(&mu_);
  if (left_) return absl::FailedPreconditionError("hq fleet: the agent left");
  return absl::OkStatus();
}

absl::StatusOr<std::string> AgentImpl::SiteFor(std::string_view url) const {
  return options_.site_of ? options_.site_of(url) : SiteOf(url);
}

absl::Status AgentImpl::Put(const Url& url) {
  return PutBatch(std::span<const Url>(&url, 1));
}

absl::Status AgentImpl::PutBatch(std::span<const Url> urls) {
  HQ_RETURN_IF_ERROR(CheckOpen());
  std::vector<Outgoing> out;
  out.reserve(urls.size());
  for (size_t i = 0; i < urls.size(); ++i) {
    const Url& u = urls[i];
    if (u.url.size() > kMaxKeyBytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "hq fleet: URL ", i, " is over ", kMaxKeyBytes, " bytes"));
    }
    HQ_ASSIGN_OR_RETURN(std::string site, SiteFor(u.url));
    if (site.empty() || site.size() > kMaxKeyBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat("hq fleet: URL ", i, " has no usable site"));
    }
    out.push_back({.partition = PartitionOf(site, options_.partitions),
                   .url = u.url,
                   .priority = u.priority,
                   .payload = u.payload});
  }
  PublishResult r;
  absl::Status s = handoff_->Publish(out, &r);
  published_ += r.acknowledged;
  return s;
}

void AgentImpl::IngestLoop() {
  for (;;) {
    {
      MutexLock l(&mu_);
      if (stop_) return;
    }
    std::shared_ptr<const Ownership::View> view = ownership_->view();
    // Follow the view: release what moved, acquire what came.
    std::vector<std::pair<uint32_t, uint64_t>> wanted;
    {
      MutexLock l(&mu_);
      for (auto it = partitions_.begin(); it != partitions_.end();) {
        auto held = view->owned.find(it->first);
        if (held == view->owned.end() ||
            held->second.epoch != it->second->epoch) {
          partitions_.erase(it++);
        } else {
          ++it;
        }
      }
      for (const auto& [p, held] : view->owned) {
        if (!partitions_.contains(p)) wanted.push_back({p, held.epoch});
      }
    }
    absl::StatusOr<std::vector<std::string>> queues;
    if (!wanted.empty()) queues = db_->ListQueues();
    const SteadyTime now = std::chrono::steady_clock::now();
    for (auto [p, epoch] : wanted) {
      if (!queues.ok()) break;  // Tried again on the next round.
      if (!std::binary_search(queues->begin(), queues->end(),
                              QueueName(p, epoch)) &&
          now < view->owned.at(p).serve_from - kRebuildLeadSteady) {
        continue;  // A rebuild: later (kRebuildLeadSteady).
      }
      absl::StatusOr<std::shared_ptr<Partition>> part =
          Acquire(p, epoch, *queues);
      if (!part.ok()) continue;  // Tried again on the next round.
      MutexLock l(&mu_);
      partitions_[p] = std::move(*part);
    }
    std::vector<std::shared_ptr<Partition>> parts;
    {
      MutexLock l(&mu_);
      for (auto& [p, part] : partitions_) parts.push_back(part);
    }
    size_t stored = 0;
    for (auto& part : parts) {
      absl::StatusOr<size_t> n = Pump(*part);
      if (n.ok()) stored += *n;
    }
    if (stored == 0 && WaitStop(absl::Milliseconds(20))) return;
  }
}

absl::StatusOr<std::shared_ptr<AgentImpl::Partition>> AgentImpl::Acquire(
    uint32_t p, uint64_t epoch, const std::vector<std::string>& queues) {
  auto part = std::make_shared<Partition>();
  part->partition = p;
  part->epoch = epoch;
  const std::string name = QueueName(p, epoch);
  const std::string prefix = QueuePrefix(p);
  bool kept = false;
  // `queues` is in byte order (Db::ListQueues): p's queues are one run.
  for (auto it = std::lower_bound(queues.begin(), queues.end(), prefix);
       it != queues.end() && absl::StartsWith(*it, prefix); ++it) {
    const std::string& q = *it;
    if (q == name) {
      kept = true;
    } else if (!absl::StartsWith(q, name + ".")) {
      // A dead-letter queue goes with its queue: NotFound when it went.
      absl::Status s = db_->DropQueue(q);
      if (!s.ok() && !absl::IsNotFound(s)) return s;
    }
  }
  // Read also for a queue kept: a rebuild that a crash cut short goes on
  // from the stream, whose older records include URLs completed elsewhere.
  HQ_ASSIGN_OR_RETURN(part->completed, handoff_->ReadCompletions(p));
  if (kept) {
    HQ_ASSIGN_OR_RETURN(part->queue, db_->OpenQueue(name));
  } else {
    QueueOptions qo;
    qo.layout = Layout::kTopic;
    qo.priorities = 8;
    HQ_ASSIGN_OR_RETURN(part->queue, db_->CreateQueue(name, qo));
  }
  GroupOptions g;
  g.lease = options_.task_lease;
  g.max_attempts = options_.max_attempts;
  g.pacing = options_.pacing;
  HQ_ASSIGN_OR_RETURN(part->group, part->queue->Group(kGroup, g));
  HQ_ASSIGN_OR_RETURN(part->feed, handoff_->OpenPartition(p, epoch));
  return part;
}

absl::StatusOr<size_t> AgentImpl::Pump(Partition& part) {
  HQ_ASSIGN_OR_RETURN(FetchResult batch,
                      part.feed->Fetch(kIngestBatch, absl::Milliseconds(5)));
  if (!batch.malformed.empty()) {
    // Reported, never stored and never acked as stored: Term keeps them
    // from coming back. The stream keeps them for inspection.
    std::vector<uint64_t> seqs;
    for (const MalformedRecord& m : batch.malformed) seqs.push_back(m.sequence);
    part.feed->Term(seqs).IgnoreError();
  }
  if (batch.records.empty()) return 0;
  std::vector<std::string> sites;
  sites.reserve(batch.records.size());
  std::vector<Message> messages;
  std::vector<uint64_t> acks;
  for (const FeedRecord& r : batch.records) {
    acks.push_back(r.sequence);
    if (part.completed.contains(UrlHash(r.url.url))) continue;
    absl::StatusOr<std::string> site = SiteFor(r.url.url);
    if (!site.ok()) continue;  // Publish checked it: not from an agent.
    sites.push_back(std::move(*site));
    Message m;
    m.topic = sites.back();
    m.key = r.url.url;
    m.payload = r.url.payload;
    m.priority = r.url.priority;
    m.dedup_key = r.url.url;
    messages.push_back(m);
  }
  std::vector<PutResult> results;
  HQ_RETURN_IF_ERROR(
      part.queue->PutBatch(messages, &results, PutOptions{.sync = true}));
  size_t dup = 0;
  for (const PutResult& r : results) dup += r.duplicate ? 1 : 0;
  received_ += messages.size();
  duplicates_ += dup;
  HQ_RETURN_IF_ERROR(part.feed->Ack(acks));
  return messages.size();
}

std::shared_ptr<AgentImpl::Partition> AgentImpl::Held(
    const FleetTask& task) const {
  MutexLock l(&mu_);
  auto it = partitions_.find(task.partition);
  if (it == partitions_.end() || it->second->epoch != task.epoch) {
    return nullptr;
  }
  return it->second;
}

absl::StatusOr<std::vector<FleetTask>> AgentImpl::Claim(
    const ClaimOptions& options) {
  HQ_RETURN_IF_ERROR(CheckOpen());
  if (!options.topics.empty() || !options.partitions.empty()) {
    return absl::InvalidArgumentError(
        "hq fleet: Claim takes no topics or partitions");
  }
  const absl::Time end = absl::Now() + options.wait;
  std::vector<FleetTask> out;
  for (;;) {
    std::vector<std::shared_ptr<Partition>> parts;
    {
      MutexLock l(&mu_);
      for (auto& [p, part] : partitions_) parts.push_back(part);
      if (!parts.empty()) {
        std::rotate(parts.begin(),
                    parts.begin() + (next_claim_++ % parts.size()),
                    parts.end());
      }
    }
    for (auto& part : parts) {
      if (out.size() >= options.max) break;
      if (!ownership_->Serving(part->partition, part->epoch, nullptr)) {
        continue;
      }
      ClaimOptions one;
      one.max = static_cast<uint32_t>(options.max - out.size());
      one.lease = options.lease;
      one.consumer = options.consumer;
      HQ_ASSIGN_OR_RETURN(std::vector<Task> tasks, part->group->Claim(one));
      // Fenced again after the claim: a lease that ran out meanwhile
      // gives the tasks back.
      SteadyTime until;
      const bool serving =
          ownership_->Serving(part->partition, part->epoch, &until);
      for (Task& t : tasks) {
        if (!serving) {
          part->group->Release(t, absl::ZeroDuration()).IgnoreError();
          continue;
        }
        out.push_back(FleetTask{.task = std::move(t),
                                .partition = part->partition,
                                .epoch = part->epoch,
                                .valid_until = ToWall(until)});
      }
    }
    if (!out.empty() || absl::Now() >= end) return out;
    if (WaitStop(std::min(absl::Milliseconds(10), end - absl::Now()))) {
      return out;
    }
  }
}

absl::Status AgentImpl::Complete(std::span<const FleetTask> tasks) {
  HQ_RETURN_IF_ERROR(CheckOpen());
  absl::flat_hash_map<Partition*, std::vector<Task>> by_part;
  std::vector<std::shared_ptr<Partition>> keep;
  for (const FleetTask& t : tasks) {
    std::shared_ptr<Partition> part = Held(t);
    if (part == nullptr) continue;  // Moved: only published below.
    by_part[part.get()].push_back(t.task);
    keep.push_back(std::move(part));
  }
  for (auto& [part, list] : by_part) {
    HQ_RETURN_IF_ERROR(part->group->Complete(list));
  }
  MutexLock l(&done_mu_);
  for (const FleetTask& t : tasks) done_[t.partition].push_back(t.task.key);
  return absl::OkStatus();
}

absl::Status AgentImpl::Release(const FleetTask& task,
                                absl::Duration retry_after) {
  HQ_RETURN_IF_ERROR(CheckOpen());
  std::shared_ptr<Partition> part = Held(task);
  if (part == nullptr) return absl::OkStatus();  // Its new owner has it.
  return part->group->Release(task.task, retry_after);
}

absl::Status AgentImpl::Reject(const FleetTask& task) {
  HQ_RETURN_IF_ERROR(CheckOpen());
  std::shared_ptr<Partition> part = Held(task);
  if (part == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "hq fleet: partition ", task.partition, " moved to another agent"));
  }
  HQ_RETURN_IF_ERROR(part->group->Reject(task.task));
  MutexLock l(&done_mu_);
  done_[task.partition].push_back(task.task.key);  // Final: not rebuilt.
  return absl::OkStatus();
}

absl::Status AgentImpl::Extend(FleetTask* task, absl::Duration lease) {
  HQ_RETURN_IF_ERROR(CheckOpen());
  std::shared_ptr<Partition> part = Held(*task);
  SteadyTime until;
  if (part == nullptr ||
      !ownership_->Serving(task->partition, task->epoch, &until)) {
    return absl::FailedPreconditionError(
        absl::StrCat("hq fleet: partition ", task->partition,
                     " is no longer served by this agent"));
  }
  HQ_RETURN_IF_ERROR(part->group->Extend(&task->task, lease));
  task->valid_until = ToWall(until);
  return absl::OkStatus();
}

bool AgentImpl::WaitStop(absl::Duration d) {
  const absl::Time end = absl::Now() + d;
  MutexLock l(&mu_);
  while (!stop_) {
    const absl::Duration left = end - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    stop_cv_.WaitWithTimeout(&mu_, left);
  }
  return stop_;
}

void AgentImpl::FlushLoop() {
  while (!WaitStop(kCompletionFlush)) {
    FlushCompletions().IgnoreError();  // Kept and tried again.
  }
}

absl::Status AgentImpl::FlushCompletions() {
  absl::flat_hash_map<uint32_t, std::vector<std::string>> batch;
  {
    MutexLock l(&done_mu_);
    batch.swap(done_);
  }
  if (batch.empty()) return absl::OkStatus();
  // One round for every partition: a flush lasts one acknowledgment, so
  // what an agent killed for good completed and had not published is at
  // most a flush interval and a round trip of its completions.
  std::vector<Handoff::Completed> all;
  size_t urls = 0;
  for (const auto& [p, list] : batch) {
    all.push_back({.partition = p, .urls = list});
    urls += list.size();
  }
  absl::Status s = handoff_->PublishCompletions(all);
  if (s.ok()) {
    completions_published_ += urls;
    return s;
  }
  // Kept for the next flush (completions are a set: some may be stored
  // twice).
  MutexLock l(&done_mu_);
  for (auto& [p, list] : batch) {
    auto& back = done_[p];
    back.insert(back.end(), std::make_move_iterator(list.begin()),
                std::make_move_iterator(list.end()));
  }
  return s;
}

absl::StatusOr<AgentStats> AgentImpl::Stats() {
  HQ_RETURN_IF_ERROR(CheckOpen());
  AgentStats s;
  absl::flat_hash_map<uint32_t, std::shared_ptr<Partition>> parts;
  {
    MutexLock l(&mu_);
    parts = partitions_;
  }
  std::shared_ptr<const Ownership::View> view = ownership_->view();
  for (const auto& [p, held] : view->owned) {
    AgentStats::Partition ps{.partition = p, .epoch = held.epoch};
    ps.serving = ownership_->Serving(p, held.epoch, nullptr);
    auto it = parts.find(p);
    if (it != parts.end() && it->second->epoch == held.epoch) {
      const Partition& part = *it->second;
      if (auto g = part.group->Stats(); g.ok()) {
        ps.backlog = g->backlog;
        ps.in_flight = g->in_flight;
      }
      if (auto lag = part.feed->Lag(); lag.ok()) ps.handoff_lag = *lag;
    }
    s.owned.push_back(ps);
  }
  std::sort(s.owned.begin(), s.owned.end(), [](const auto& a, const auto& b) {
    return a.partition < b.partition;
  });
  s.published = published_;
  s.received = received_;
  s.duplicates = duplicates_;
  s.completions_published = completions_published_;
  s.coordinator = view->coordinator;
  return s;
}

absl::Status AgentImpl::Leave() {
  {
    MutexLock l(&mu_);
    if (left_) return absl::OkStatus();
    left_ = true;
    stop_ = true;
    stop_cv_.SignalAll();
  }
  if (ingest_.joinable()) ingest_.join();
  if (flusher_.joinable()) flusher_.join();
  absl::Status s;
  if (handoff_ != nullptr) s.Update(FlushCompletions());
  if (ownership_ != nullptr) s.Update(ownership_->Leave());
  {
    MutexLock l(&mu_);
    partitions_.clear();
  }
  // The Db and the NATS connection stay open until the destructor: a call
  // already past its check goes on safely, and fails the next time.
  return s;
}

}  // namespace hq::fleet
