// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/fleet/handoff.h"

#include <algorithm>
#include <charconv>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "lib/fleet/clients.h"
#include "lib/fleet/handoff_shared.h"
#include "lib/fleet/records.h"
#include "lib/util/status_macros.h"

namespace hq::fleet {

bool ParseConsumerName(std::string_view name, uint32_t* p, uint64_t* epoch) {
  if (name.size() < 4 || name[0] != 'u') return false;
  const size_t e = name.find('e');
  if (e == std::string_view::npos || e < 2 || e + 1 == name.size()) {
    return false;
  }
  const char* begin = name.data() + 1;
  const char* mid = name.data() + e;
  const char* end = name.data() + name.size();
  auto r1 = std::from_chars(begin, mid, *p);
  if (r1.ec != std::errc() || r1.ptr != mid) return false;
  auto r2 = std::from_chars(mid + 1, end, *epoch);
  return r2.ec == std::errc() && r2.ptr == end;
}

// ---------------------------------------------------------------------------
// Publishing.

// One message to publish, and what became of it.
struct Handoff::Pending {
  std::string subject;
  std::string data;
  std::string msg_id;  // Empty: no id.
  bool done = false;
  bool duplicate = false;
  absl::Status error;  // The last failure, while not done.
};

// A JetStream context used by one Publish call at a time, with the state
// its ack callback fills in. Every call leaves it with nothing in flight.
struct Handoff::Publisher {
  jsCtx* js = nullptr;
  Mutex mu;
  // Messages in flight -> index in *pending.
  absl::flat_hash_map<natsMsg*, size_t> in_flight ABSL_GUARDED_BY(mu);
  std::vector<Pending>* pending ABSL_GUARDED_BY(mu) = nullptr;

  ~Publisher() {
    if (js != nullptr) jsCtx_Destroy(js);
  }

  // nats.c's jsPubAckHandler: once per message published asynchronously,
  // with its ack or its error (a server error, a timeout). The callback
  // owns `msg`.
  static void OnAck(jsCtx*, natsMsg* msg, jsPubAck* pa, jsPubAckErr* pae,
                    void* closure) {
    auto* self = static_cast<Publisher*>(closure);
    {
      MutexLock l(&self->mu);
      auto it = self->in_flight.find(msg);
      if (it != self->in_flight.end()) {
        Pending& p = (*self->pending)[it->second];
        self->in_flight.erase(it);
        if (!p.done) {
          if (pa != nullptr) {
            p.done = true;
            p.duplicate = pa->Duplicate;
            p.error = absl::OkStatus();
          } else if (pae != nullptr) {
            p.error = NatsStatus(
                pae->Err,
                absl::StrCat("publish to ", natsMsg_GetSubject(msg), ": ",
                             pae->ErrText != nullptr ? pae->ErrText : ""),
                pae->ErrCode);
          }
        }
      }
    }
    natsMsg_Destroy(msg);
  }
};

std::unique_ptr<Handoff::Publisher> Handoff::TakePublisher() {
  {
    MutexLock l(&mu_);
    if (!idle_.empty()) {
      auto p = std::move(idle_.back());
      idle_.pop_back();
      return p;
    }
  }
  auto p = std::make_unique<Publisher>();
  jsOptions o = shared_->ApiOptions();
  o.PublishAsync.AckHandler = &Publisher::OnAck;
  o.PublishAsync.AckHandlerClosure = p.get();
  // No limit on messages in flight: the caller's batch bounds them.
  o.PublishAsync.MaxPending = 0;
  if (natsConnection_JetStream(&p->js, shared_->nc, &o) != NATS_OK) {
    p->js = nullptr;
    return nullptr;
  }
  return p;
}

void Handoff::ReturnPublisher(std::unique_ptr<Publisher> p) {
  MutexLock l(&mu_);
  idle_.push_back(std::move(p));
}

absl::Status Handoff::PublishAll(std::vector<Pending>& pending,
                                 PublishResult* result) {
  PublishResult local;
  if (result == nullptr) result = &local;
  *result = PublishResult();
  if (pending.empty()) return absl::OkStatus();

  std::unique_ptr<Publisher> pub = TakePublisher();
  if (pub == nullptr) {
    return absl::UnavailableError("publish: cannot create a JetStream context");
  }
  {
    MutexLock l(&pub->mu);
    pub->pending = &pending;
  }
  const absl::Time deadline = absl::Now() + options_.publish_timeout;
  absl::Duration backoff = absl::Milliseconds(50);
  size_t left = pending.size();
  while (true) {
    // Send every message not yet acknowledged; each waits for its ack at
    // most until the round ends.
    const absl::Duration round =
        std::max(absl::Milliseconds(1),
                 std::min(deadline - absl::Now(), options_.request_timeout));
    for (size_t i = 0; i < pending.size(); ++i) {
      Pending& p = pending[i];
      if (p.done) continue;
      natsMsg* m = nullptr;
      natsStatus s =
          natsMsg_Create(&m, p.subject.c_str(), nullptr, p.data.data(),
                         static_cast<int>(p.data.size()));
      if (s != NATS_OK) {
        p.error = NatsStatus(s, "publish");
        continue;
      }
      jsPubOptions po;
      jsPubOptions_Init(&po);
      po.MaxWait = Millis(round);
      if (!p.msg_id.empty()) po.MsgId = p.msg_id.c_str();
      natsMsg* const key = m;
      {
        // Before the send: the ack may come before js_PublishMsgAsync
        // returns.
        MutexLock l(&pub->mu);
        pub->in_flight[key] = i;
      }
      s = js_PublishMsgAsync(pub->js, &m, &po);
      if (s != NATS_OK) {
        // Not sent: the message is still ours.
        {
          MutexLock l(&pub->mu);
          pub->in_flight.erase(key);
        }
        natsMsg_Destroy(m);
        p.error = NatsStatus(s, "publish to " + p.subject);
      }
    }
    jsPubOptions wait;
    jsPubOptions_Init(&wait);
    wait.MaxWait = Millis(round + absl::Seconds(1));
    js_PublishAsyncComplete(pub->js, &wait);
    // Take back what is still unanswered (its late ack will be ignored),
    // then wait for callbacks already running, so that nothing is in
    // flight when this round ends.
    natsMsgList unanswered;
    if (js_PublishAsyncGetPendingList(&unanswered, pub->js) == NATS_OK) {
      MutexLock l(&pub->mu);
      for (int k = 0; k < unanswered.Count; ++k) {
        auto it = pub->in_flight.find(unanswered.Msgs[k]);
        if (it != pub->in_flight.end()) {
          Pending& p = pending[it->second];
          if (!p.done) {
            p.error = absl::DeadlineExceededError(
                "publish to " + p.subject + ": no acknowledgment in time");
          }
          pub->in_flight.erase(it);
        }
      }
      natsMsgList_Destroy(&unanswered);
    }
    js_PublishAsyncComplete(pub->js, nullptr);

    left = 0;
    absl::Status error;
    bool all_timeouts = true;
    for (const Pending& p : pending) {
      if (p.done) continue;
      ++left;
      if (error.ok()) error = p.error;
      all_timeouts = all_timeouts && absl::IsDeadlineExceeded(p.error);
    }
    if (left == 0 || absl::Now() + backoff >= deadline) {
      result->acknowledged = pending.size() - left;
      result->duplicates = static_cast<uint64_t>(std::count_if(
          pending.begin(), pending.end(),
          [](const Pending& p) { return p.done && p.duplicate; }));
      {
        MutexLock l(&pub->mu);
        pub->pending = nullptr;
      }
      const bool connected = shared_->Connected();
      ReturnPublisher(std::move(pub));
      if (left == 0) return absl::OkStatus();
      std::string text =
          absl::StrCat("publish: ", left, " of ", pending.size(),
                       " messages not acknowledged by JetStream within ",
                       absl::FormatDuration(options_.publish_timeout), " (",
                       result->acknowledged, " were); ", error.message());
      if (connected && all_timeouts) return absl::DeadlineExceededError(text);
      return absl::UnavailableError(text);
    }
    absl::SleepFor(backoff);
    backoff = std::min(backoff * 2, absl::Seconds(1));
  }
}

absl::Status Handoff::Publish(std::span<const Outgoing> urls,
                              PublishResult* result) {
  if (result != nullptr) *result = PublishResult();
  std::vector<Pending> pending(urls.size());
  for (size_t i = 0; i < urls.size(); ++i) {
    const Outgoing& o = urls[i];
    if (absl::Status s = CheckPartition(o.partition); !s.ok()) return s;
    Url u{.url = std::string(o.url),
          .payload = std::string(o.payload),
          .priority = o.priority};
    if (absl::Status s = EncodeUrlRecord(u, &pending[i].data); !s.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("publish: URL ", i, ": ", s.message()));
    }
    pending[i].subject = UrlSubject(o.partition);
    pending[i].msg_id = UrlMessageId(o.url);
  }
  return PublishAll(pending, result);
}

absl::Status Handoff::PublishCompletions(uint32_t partition,
                                         std::span<const std::string> urls) {
  const Completed one{.partition = partition, .urls = urls};
  return PublishCompletions(std::span<const Completed>(&one, 1));
}

absl::Status Handoff::PublishCompletions(std::span<const Completed> batches) {
  std::vector<Pending> pending;
  std::vector<uint64_t> hashes;
  for (const Completed& c : batches) {
    HQ_RETURN_IF_ERROR(CheckPartition(c.partition));
    hashes.clear();
    for (const std::string& u : c.urls) hashes.push_back(UrlHash(u));
    for (size_t at = 0; at < hashes.size(); at += kMaxCompletionsPerBatch) {
      const size_t n = std::min(kMaxCompletionsPerBatch, hashes.size() - at);
      Pending& p = pending.emplace_back();
      p.subject = CompletionSubject(c.partition);
      HQ_RETURN_IF_ERROR(EncodeCompletionBatch(
          std::span<const uint64_t>(hashes).subspan(at, n), &p.data));
    }
  }
  return PublishAll(pending, nullptr);
}

// ---------------------------------------------------------------------------
// Connecting.

Handoff::Handoff(HandoffOptions options,
                 std::shared_ptr<PartitionFeed::Shared> shared)
    : options_(std::move(options)), shared_(std::move(shared)) {}

Handoff::~Handoff() {
  MutexLock l(&mu_);
  idle_.clear();  // Each has nothing in flight (PublishAll).
}

const std::string& Handoff::stream() const { return shared_->stream; }

std::string Handoff::UrlSubject(uint32_t partition) const {
  return absl::StrCat("hqf.", options_.fleet, ".u.", partition);
}

std::string Handoff::CompletionSubject(uint32_t partition) const {
  return absl::StrCat("hqf.", options_.fleet, ".d.", partition);
}

absl::Status Handoff::CheckPartition(uint32_t partition) const {
  if (partition >= options_.partitions) {
    return absl::InvalidArgumentError(absl::StrCat("partition ", partition,
                                                   " is not below the fleet's ",
                                                   options_.partitions));
  }
  return absl::OkStatus();
}

namespace {

absl::Status CheckOptions(const HandoffOptions& o) {
  if (o.urls.empty()) {
    return absl::InvalidArgumentError("handoff: no NATS server URL");
  }
  for (const std::string& u : o.urls) {
    if (u.empty() || u.find_first_of(", \t\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("handoff: bad NATS server URL '", u, "'"));
    }
  }
  if (!ValidFleetName(o.fleet)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "handoff: the fleet name must be 1..64 of [A-Za-z0-9_-], not '",
        o.fleet, "'"));
  }
  if (o.partitions < 1 || o.partitions > 65536) {
    return absl::InvalidArgumentError(absl::StrCat(
        "handoff: partitions must be 1..65536, not ", o.partitions));
  }
  if (o.replicas < 1 || o.replicas > 5) {
    return absl::InvalidArgumentError(
        absl::StrCat("handoff: replicas must be 1..5, not ", o.replicas));
  }
  if (o.max_ack_pending < 1) {
    return absl::InvalidArgumentError("handoff: max_ack_pending must be > 0");
  }
  for (absl::Duration d :
       {o.duplicate_window, o.connect_timeout, o.request_timeout, o.read_stall,
        o.publish_timeout, o.ack_wait}) {
    if (d <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(
          "handoff: every duration option must be positive");
    }
  }
  return absl::OkStatus();
}

// The stream `si` describes serves `subjects` with `replicas` replicas.
absl::Status CheckStream(const jsStreamInfo* si, const std::string& name,
                         const std::vector<std::string>& subjects,
                         int replicas) {
  const jsStreamConfig* c = si->Config;
  std::vector<std::string> have;
  for (int i = 0; c != nullptr && i < c->SubjectsLen; ++i) {
    have.emplace_back(c->Subjects[i]);
  }
  std::vector<std::string> want = subjects;
  std::sort(have.begin(), have.end());
  std::sort(want.begin(), want.end());
  if (c == nullptr || have != want || c->Replicas != replicas) {
    return absl::FailedPreconditionError(absl::StrCat(
        "handoff: stream ", name, " exists with subjects [",
        absl::StrJoin(have, ", "), "] and ", c == nullptr ? 0 : c->Replicas,
        " replicas, not [", absl::StrJoin(want, ", "), "] and ", replicas));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Handoff>> Handoff::Connect(
    const HandoffOptions& options) {
  HQ_RETURN_IF_ERROR(CheckOptions(options));
  const absl::Time deadline = absl::Now() + options.connect_timeout;
  auto shared = std::make_shared<PartitionFeed::Shared>();
  shared->options = options;
  shared->stream = absl::StrCat("HQF_", options.fleet);

  natsOptions* no = nullptr;
  std::vector<const char*> servers;
  for (const std::string& u : options.urls) servers.push_back(u.c_str());
  natsStatus s = natsOptions_Create(&no);
  if (s == NATS_OK) {
    s = natsOptions_SetServers(no, servers.data(),
                               static_cast<int>(servers.size()));
  }
  if (s == NATS_OK) s = natsOptions_SetName(no, "hq-fleet");
  if (s == NATS_OK) {
    s = natsOptions_SetTimeout(
        no, Millis(std::min(options.connect_timeout, absl::Seconds(2))));
  }
  if (s == NATS_OK) s = natsOptions_SetMaxReconnect(no, -1);
  if (s == NATS_OK) s = natsOptions_SetReconnectWait(no, 250);
  if (s == NATS_OK) s = natsOptions_SetPingInterval(no, 5000);
  // Requests (JetStream API calls, sync acks) fail at once on a
  // disconnection instead of waiting for their timeout.
  if (s == NATS_OK) s = natsOptions_SetFailRequestsOnDisconnect(no, true);
  if (s != NATS_OK) {
    natsOptions_Destroy(no);
    return absl::InvalidArgumentError(
        NatsStatus(s, "handoff: NATS options").message());
  }
  absl::Status last;
  while (true) {
    s = natsConnection_Connect(&shared->nc, no);
    if (s == NATS_OK) break;
    shared->nc = nullptr;
    last = NatsStatus(s, "handoff: connect");
    if (absl::Now() + absl::Milliseconds(200) >= deadline) {
      natsOptions_Destroy(no);
      return absl::UnavailableError(absl::StrCat(
          "handoff: no NATS server of ", absl::StrJoin(options.urls, ","),
          " reached within ", absl::FormatDuration(options.connect_timeout),
          ": ", last.message()));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  natsOptions_Destroy(no);
  jsOptions jo = shared->ApiOptions();
  s = natsConnection_JetStream(&shared->js, shared->nc, &jo);
  if (s != NATS_OK) {
    shared->js = nullptr;
    return NatsStatus(s, "handoff: JetStream context");
  }

  std::unique_ptr<Handoff> h(new Handoff(options, shared));
  const std::vector<std::string> subjects = {
      absl::StrCat("hqf.", options.fleet, ".u.*"),
      absl::StrCat("hqf.", options.fleet, ".d.*")};
  std::vector<const char*> subject_ptrs;
  for (const std::string& x : subjects) subject_ptrs.push_back(x.c_str());
  jsStreamConfig cfg;
  jsStreamConfig_Init(&cfg);
  cfg.Name = shared->stream.c_str();
  cfg.Subjects = subject_ptrs.data();
  cfg.SubjectsLen = static_cast<int>(subject_ptrs.size());
  cfg.Storage = js_FileStorage;
  cfg.Retention = js_LimitsPolicy;
  cfg.Replicas = options.replicas;
  cfg.Duplicates = absl::ToInt64Nanoseconds(options.duplicate_window);

  // JetStream may not be ready yet (a cluster electing its meta leader):
  // try again until the deadline.
  while (true) {
    jsStreamInfo* si = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    s = js_GetStreamInfo(&si, shared->js, cfg.Name, &jo, &jerr);
    if (s == NATS_OK) {
      absl::Status c =
          options.create_stream
              ? CheckStream(si, shared->stream, subjects, options.replicas)
              : absl::OkStatus();
      jsStreamInfo_Destroy(si);
      if (!c.ok()) return c;
      return h;
    }
    if (s == NATS_NOT_FOUND && !options.create_stream) {
      return absl::NotFoundError(
          absl::StrCat("handoff: no stream ", shared->stream, " on NATS ",
                       absl::StrJoin(options.urls, ",")));
    }
    if (s == NATS_NOT_FOUND) {
      jerr = static_cast<jsErrCode>(0);
      s = js_AddStream(&si, shared->js, &cfg, &jo, &jerr);
      if (s == NATS_OK) {
        jsStreamInfo_Destroy(si);
        return h;
      }
      if (jerr == JSStreamReplicasNotSupportedErr) {
        return absl::InvalidArgumentError(
            NatsStatus(s, "handoff: create stream", jerr).message());
      }
      if (jerr == JSStreamSubjectOverlapErr) {
        return absl::FailedPreconditionError(
            NatsStatus(s, "handoff: create stream", jerr).message());
      }
      // JSStreamNameExistErr: another agent created it; check it above.
    }
    last = NatsStatus(s, "handoff: stream " + shared->stream, jerr);
    if (absl::Now() + absl::Milliseconds(250) >= deadline) {
      return absl::UnavailableError(absl::StrCat(
          "handoff: JetStream not ready within ",
          absl::FormatDuration(options.connect_timeout), ": ", last.message()));
    }
    absl::SleepFor(absl::Milliseconds(250));
  }
}

// ---------------------------------------------------------------------------
// Partition consumers.

absl::StatusOr<std::unique_ptr<PartitionFeed>> Handoff::OpenPartition(
    uint32_t partition, uint64_t epoch) {
  HQ_RETURN_IF_ERROR(CheckPartition(partition));
  const std::string name = ConsumerName(partition, epoch);
  const std::string subject = UrlSubject(partition);
  jsOptions jo = shared_->ApiOptions();
  const char* stream = shared_->stream.c_str();

  // The consumers of this partition: refuse if a later epoch has one.
  std::vector<std::string> older;
  {
    jsConsumerNamesList* names = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_ConsumerNames(&names, shared_->js, stream, &jo, &jerr);
    if (s != NATS_OK && s != NATS_NOT_FOUND) {
      return NatsStatus(s, "open partition: list consumers", jerr);
    }
    for (int i = 0; names != nullptr && i < names->Count; ++i) {
      uint32_t p;
      uint64_t e;
      if (!ParseConsumerName(names->List[i], &p, &e) || p != partition) {
        continue;
      }
      if (e > epoch) {
        jsConsumerNamesList_Destroy(names);
        return absl::FailedPreconditionError(
            absl::StrCat("open partition ", partition, " at epoch ", epoch,
                         ": the consumer of a later epoch exists (",
                         ConsumerName(p, e), ")"));
      }
      if (e < epoch) older.push_back(ConsumerName(p, e));
    }
    jsConsumerNamesList_Destroy(names);
  }

  // Create ours unless it exists (a restart at the same epoch keeps it, and
  // with it what was acked).
  {
    jsConsumerInfo* ci = nullptr;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s =
        js_GetConsumerInfo(&ci, shared_->js, stream, name.c_str(), &jo, &jerr);
    if (s == NATS_NOT_FOUND) {
      jsConsumerConfig cc;
      jsConsumerConfig_Init(&cc);
      cc.Durable = name.c_str();
      cc.FilterSubject = subject.c_str();
      cc.AckPolicy = js_AckExplicit;
      cc.DeliverPolicy = js_DeliverAll;
      cc.AckWait = absl::ToInt64Nanoseconds(options_.ack_wait);
      cc.MaxAckPending = options_.max_ack_pending;
      cc.MaxDeliver = -1;
      jerr = static_cast<jsErrCode>(0);
      s = js_AddConsumer(&ci, shared_->js, stream, &cc, &jo, &jerr);
    }
    jsConsumerInfo_Destroy(ci);
    if (s != NATS_OK) {
      return NatsStatus(s, "open partition: consumer " + name, jerr);
    }
  }

  natsSubscription* sub = nullptr;
  {
    jsSubOptions so;
    jsSubOptions_Init(&so);
    so.Stream = stream;
    so.Consumer = name.c_str();
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s = js_PullSubscribe(&sub, shared_->js, subject.c_str(),
                                    name.c_str(), &jo, &so, &jerr);
    if (s != NATS_OK) {
      return NatsStatus(s, "open partition: subscribe " + name, jerr);
    }
  }
  std::unique_ptr<PartitionFeed> feed(
      new PartitionFeed(shared_, partition, epoch, name, subject, sub));

  for (const std::string& old : older) {
    jsErrCode jerr = static_cast<jsErrCode>(0);
    natsStatus s =
        js_DeleteConsumer(shared_->js, stream, old.c_str(), &jo, &jerr);
    if (s != NATS_OK && s != NATS_NOT_FOUND) {
      return NatsStatus(s, "open partition: delete consumer " + old, jerr);
    }
  }
  return feed;
}

PartitionFeed::PartitionFeed(std::shared_ptr<Shared> shared, uint32_t partition,
                             uint64_t epoch, std::string consumer,
                             std::string subject, natsSubscription* sub)
    : shared_(std::move(shared)),
      partition_(partition),
      epoch_(epoch),
      consumer_(std::move(consumer)),
      subject_(std::move(subject)),
      sub_(sub) {}

PartitionFeed::~PartitionFeed() {
  {
    MutexLock l(&mu_);
    for (auto& [seq, m] : held_) natsMsg_Destroy(m);
    held_.clear();
  }
  // Destroy, not Unsubscribe: the durable consumer stays.
  natsSubscription_Destroy(sub_);
}

absl::StatusOr<FetchResult> PartitionFeed::Fetch(int max, absl::Duration wait) {
  if (max < 1 || max > 10000) {
    return absl::InvalidArgumentError(
        absl::StrCat("fetch: max must be 1..10000, not ", max));
  }
  natsMsgList list{nullptr, 0};
  natsStatus s;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  {
    MutexLock l(&fetch_mu_);
    s = natsSubscription_Fetch(&list, sub_, max, Millis(wait), &jerr);
  }
  FetchResult out;
  if (s == NATS_TIMEOUT && list.Count == 0 && shared_->Connected()) return out;
  if (s != NATS_OK && list.Count == 0) {
    return absl::UnavailableError(
        NatsStatus(s, absl::StrCat("fetch ", consumer_), jerr).message());
  }
  MutexLock l(&mu_);
  for (int i = 0; i < list.Count; ++i) {
    natsMsg* m = list.Msgs[i];
    jsMsgMetaData* meta = nullptr;
    if (natsMsg_GetMetaData(&meta, m) != NATS_OK) continue;  // Not JetStream.
    const uint64_t seq = meta->Sequence.Stream;
    const uint64_t deliveries = meta->NumDelivered;
    jsMsgMetaData_Destroy(meta);
    Url url;
    // A record of another subject is not this partition's, whatever it
    // holds: a consumer on a replica out of step with its leader was seen
    // to deliver some (its subject's own consumer delivers it).
    const char* subject = natsMsg_GetSubject(m);
    absl::Status d =
        subject != nullptr && subject_ == subject
            ? DecodeUrlRecord(std::string_view(natsMsg_GetData(m),
                                               static_cast<size_t>(
                                                   natsMsg_GetDataLength(m))),
                              &url)
            : absl::DataLossError(absl::StrCat(
                  "a record of another subject on the consumer of ", subject_));
    if (d.ok()) {
      out.records.push_back(
          {.sequence = seq, .deliveries = deliveries, .url = std::move(url)});
    } else {
      out.malformed.push_back(
          {.sequence = seq,
           .status = absl::DataLossError(absl::StrCat(
               "stream ", shared_->stream, " sequence ", seq, " on ",
               subject != nullptr ? subject : "", ": ", d.message()))});
    }
    // Hold the newest delivery of each sequence, for Ack and Term.
    auto [it, inserted] = held_.try_emplace(seq, m);
    if (!inserted) {
      natsMsg_Destroy(it->second);
      it->second = m;
    }
    list.Msgs[i] = nullptr;
  }
  natsMsgList_Destroy(&list);
  return out;
}

absl::Status PartitionFeed::Ack(std::span<const uint64_t> sequences) {
  return Settle(sequences, /*term=*/false);
}

absl::Status PartitionFeed::Term(std::span<const uint64_t> sequences) {
  return Settle(sequences, /*term=*/true);
}

absl::Status PartitionFeed::Settle(std::span<const uint64_t> sequences,
                                   bool term) {
  std::vector<std::pair<uint64_t, natsMsg*>> msgs;
  size_t missing = 0;
  uint64_t first_missing = 0;
  {
    MutexLock l(&mu_);
    for (uint64_t seq : sequences) {
      auto it = held_.find(seq);
      if (it == held_.end()) {
        if (missing++ == 0) first_missing = seq;
        continue;
      }
      msgs.emplace_back(seq, it->second);
      held_.erase(it);
    }
  }
  const char* verb = term ? "term" : "ack";
  size_t settled = 0;
  absl::Status error;
  for (size_t i = 0; i < msgs.size(); ++i) {
    natsMsg* m = msgs[i].second;
    natsStatus s;
    jsErrCode jerr = static_cast<jsErrCode>(0);
    if (term) {
      s = natsMsg_Term(m, nullptr);
    } else if (i + 1 < msgs.size()) {
      s = natsMsg_Ack(m, nullptr);
    } else {
      // The last one waits for the server's reply; the others went before
      // it on the same connection.
      jsOptions jo = shared_->ApiOptions();
      s = natsMsg_AckSync(m, &jo, &jerr);
    }
    if (s != NATS_OK) {
      error = NatsStatus(
          s, absl::StrCat(verb, " ", consumer_, " sequence ", msgs[i].first),
          jerr);
      break;
    }
    settled = i + 1;
  }
  if (error.ok() && term && !msgs.empty()) {
    natsStatus s = natsConnection_FlushTimeout(
        shared_->nc, Millis(shared_->options.request_timeout));
    if (s != NATS_OK) {
      error = NatsStatus(s, absl::StrCat(verb, " ", consumer_));
      settled = 0;
    }
  }
  {
    // Keep what was not confirmed, unless a newer delivery replaced it.
    MutexLock l(&mu_);
    for (size_t i = 0; i < msgs.size(); ++i) {
      natsMsg* m = msgs[i].second;
      if (i >= settled && held_.try_emplace(msgs[i].first, m).second) {
        continue;
      }
      natsMsg_Destroy(m);
    }
  }
  if (!error.ok()) {
    return absl::UnavailableError(absl::StrCat(
        error.message(), " (", settled, " of ", msgs.size(), " confirmed)"));
  }
  if (missing > 0) {
    return absl::NotFoundError(absl::StrCat(
        verb, " ", consumer_, ": ", missing,
        " sequences not held by this feed, the first ", first_missing));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> PartitionFeed::Lag() {
  jsOptions jo = shared_->ApiOptions();
  jsConsumerInfo* ci = nullptr;
  jsErrCode jerr = static_cast<jsErrCode>(0);
  natsStatus s = js_GetConsumerInfo(&ci, shared_->js, shared_->stream.c_str(),
                                    consumer_.c_str(), &jo, &jerr);
  if (s != NATS_OK) {
    return NatsStatus(s, absl::StrCat("lag of ", consumer_), jerr);
  }
  const uint64_t lag = Unacked(*ci);
  jsConsumerInfo_Destroy(ci);
  return lag;
}

}  // namespace hq::fleet
