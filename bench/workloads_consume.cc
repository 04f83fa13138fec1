// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// hq_bench's consume workloads: consumer groups (claim_complete,
// claim_sparse), push delivery (subscribe, subscribe_10) and the leases
// claims hold (leases). See the top of hq_bench.cc for what each measures.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/attributes.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/registry.h"
#include "bench/workload.h"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/lease_manager.h"
#include "lib/util/status_macros.h"

namespace hq::bench {
namespace {

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ClaimComplete(Context& c,
                                                             Histogram* hist) {
  HQ_RETURN_IF_ERROR(c.OpenFreshHq());
  HQ_RETURN_IF_ERROR(c.FillQueue());
  c.put_messages = c.config.num;
  HQ_ASSIGN_OR_RETURN(ConsumerGroup * group,
                      c.queue->Group("bench", {.pacing = c.config.pacing}));
  uint64_t bytes = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(const int64_t count, c.Drain(group, hist, &bytes));
  const double seconds = MicrosSince(start) / 1e6;
  sink = sink + bytes;
  if (count != c.config.num) {
    return absl::DataLossError(absl::StrFormat(
        "claimed %d messages of the %d written", count, c.config.num));
  }
  return c.Payloads(seconds, count);
}

// Puts 1000 messages into 10 topics of `q`, then times draining them.
absl::StatusOr<Result> SparseRound(Context& c, Queue* q, ConsumerGroup* group) {
  std::vector<Message> batch(1000);
  std::vector<std::string> topics;
  for (int t = 0; t < 10; ++t) topics.push_back(absl::StrCat("busy", t));
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].topic = topics[i % topics.size()];
    batch[i].payload = c.source.payload(static_cast<int64_t>(i));
  }
  HQ_RETURN_IF_ERROR(q->PutBatch(batch, nullptr));
  const SteadyClock::time_point start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(const int64_t n, c.Drain(group));
  const double seconds = MicrosSince(start) / 1e6;
  if (n != 1000) {
    return absl::DataLossError(absl::StrFormat("claimed %d of 1000", n));
  }
  return c.Payloads(seconds, n);
}

// claim_sparse's untimed fill: --num messages into a queue "sparse" at
// `path` in a topic of their own each, all claimed and completed.
absl::Status SparseFill(Context& c, const std::string& path,
                        const QueueOptions& qo) {
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, c.hq_options));
  HQ_ASSIGN_OR_RETURN(Queue * q, db->CreateQueue("sparse", qo));
  std::vector<Message> batch;
  std::vector<std::string> topics;
  for (int64_t i = 0; i < c.config.num; i += 1000) {
    const int64_t n = std::min<int64_t>(1000, c.config.num - i);
    topics.clear();
    batch.clear();
    for (int64_t j = 0; j < n; ++j) topics.push_back(absl::StrCat("t", i + j));
    for (int64_t j = 0; j < n; ++j) {
      batch.push_back({.topic = topics[static_cast<size_t>(j)],
                       .payload = c.source.payload(i + j)});
    }
    HQ_RETURN_IF_ERROR(q->PutBatch(batch, nullptr));
  }
  HQ_ASSIGN_OR_RETURN(ConsumerGroup * g, q->Group("g"));
  HQ_ASSIGN_OR_RETURN(const int64_t drained, c.Drain(g));
  if (drained != c.config.num) {
    return absl::DataLossError("claim_sparse: the fill was not drained");
  }
  return absl::OkStatus();
}

// The reopened sparse queue at `path`: times its first Group call
// (claim_sparse_load), then a round.
absl::StatusOr<Result> SparseReopened(Context& c, const std::string& path) {
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, c.hq_options));
  WaitForCompactions(static_cast<DbImpl*>(db.get())->leveldb());
  HQ_ASSIGN_OR_RETURN(Queue * q, db->OpenQueue("sparse"));
  const SteadyClock::time_point start = SteadyClock::now();
  HQ_ASSIGN_OR_RETURN(ConsumerGroup * g, q->Group("g"));
  const double load_micros = MicrosSince(start);
  std::printf("claim_sparse_load : %.1f ms; %.2f micros/topic\n",
              load_micros / 1e3,
              load_micros / static_cast<double>(c.config.num));
  return SparseRound(c, q, g);
}

// A round on a fresh queue of only the round's topics, at `path`.
absl::StatusOr<Result> SparseSmall(Context& c, const std::string& path,
                                   const QueueOptions& qo) {
  HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
  HQ_ASSIGN_OR_RETURN(std::unique_ptr<Db> db, Db::Open(path, c.hq_options));
  HQ_ASSIGN_OR_RETURN(Queue * q, db->CreateQueue("sparse", qo));
  HQ_ASSIGN_OR_RETURN(ConsumerGroup * g, q->Group("g"));
  return SparseRound(c, q, g);
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> ClaimSparse(Context& c,
                                                           Histogram*) {
  QueueOptions qo = c.queue_options;
  qo.layout = Layout::kTopic;
  qo.partitions = 1;
  const std::string path = c.root + "/sparse";
  HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
  HQ_RETURN_IF_ERROR(SparseFill(c, path, qo));
  HQ_ASSIGN_OR_RETURN(const Result sparse, SparseReopened(c, path));
  HQ_ASSIGN_OR_RETURN(const Result small, SparseSmall(c, path, qo));
  HQ_RETURN_IF_ERROR(FromLevelDb(leveldb::DestroyDB(path, {}), path));
  PrintLine("claim_sparse", sparse);
  PrintLine("claim_sparse_small", small);
  std::printf("ratio claim_sparse/claim_sparse_small : %.2f\n",
              sparse.msgs_per_sec() / small.msgs_per_sec());
  return Result{};
}

int64_t SteadyNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             SteadyClock::now().time_since_epoch())
      .count();
}

// Counts deliveries; the first subscription's listener also records the
// latency from Put to listener (the put time is in the payload).
class BenchListener : public MessageListener {
 public:
  explicit BenchListener(Histogram* latency) : latency_(latency) {}
  absl::Status OnMessage(const MessageView& m) override {
    if (latency_ != nullptr && m.payload.size() >= 8) {
      int64_t put_ns;
      std::memcpy(&put_ns, m.payload.data(), 8);
      latency_->Add(static_cast<double>(SteadyNanos() - put_ns) / 1e3);
    }
    count_.fetch_add(1, std::memory_order_release);
    return absl::OkStatus();
  }
  int64_t count() const { return count_.load(std::memory_order_acquire); }

 private:
  Histogram* const latency_;  // Only the delivery thread touches it.
  std::atomic<int64_t> count_{0};
};

// subscribe's puts: --num messages, --batch per call, each payload
// starting with the time of its put call.
absl::Status SubscribePuts(Context& c) {
  const int64_t num = c.config.num;
  const int64_t batch = c.config.batch;
  const size_t width = static_cast<size_t>(std::min(batch, num));
  const size_t size = std::max<size_t>(8, c.config.value_size);
  std::vector<std::string> payloads(width, std::string(size, 'x'));
  std::vector<Message> messages(width);
  PutOptions po;
  po.sync = c.config.sync;
  for (int64_t i = 0; i < num; i += batch) {
    const int64_t n = std::min(batch, num - i);
    const int64_t put_ns = SteadyNanos();
    for (int64_t j = 0; j < n; ++j) {
      std::string& p = payloads[static_cast<size_t>(j)];
      const std::string_view body = c.source.payload(i + j);
      p.replace(0, std::min(size, body.size()), body);
      std::memcpy(p.data(), &put_ns, 8);
      Message& m = messages[static_cast<size_t>(j)];
      m.topic = c.source.topic(i + j);
      m.payload = p;
      m.partition = c.source.partition(i + j);
      m.priority = c.source.priority(i + j);
    }
    if (batch == 1) {
      HQ_RETURN_IF_ERROR(c.queue->Put(messages[0], po).status());
    } else {
      HQ_RETURN_IF_ERROR(c.queue->PutBatch(
          std::span<const Message>(messages.data(), static_cast<size_t>(n)),
          nullptr, po));
    }
  }
  return absl::OkStatus();
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Subscribe(
    Context& c, const std::string& name, int subscriptions) {
  HQ_RETURN_IF_ERROR(c.OpenFreshHq());
  const int64_t num = c.config.num;
  Histogram latency;
  latency.Reserve(static_cast<size_t>(num));
  std::vector<std::unique_ptr<BenchListener>> listeners;
  for (int i = 0; i < subscriptions; ++i) {
    listeners.push_back(
        std::make_unique<BenchListener>(i == 0 ? &latency : nullptr));
    HQ_RETURN_IF_ERROR(c.queue
                           ->Subscribe({.name = absl::StrCat("bench", i)},
                                       listeners.back().get())
                           .status());
  }
  const SteadyClock::time_point start = SteadyClock::now();
  HQ_RETURN_IF_ERROR(SubscribePuts(c));
  // Until every subscription has every message (a liveness bound of
  // ten minutes).
  const SteadyClock::time_point give_up =
      SteadyClock::now() + std::chrono::minutes(10);
  for (const auto& l : listeners) {
    while (l->count() < num) {
      if (SteadyClock::now() > give_up) {
        return absl::DeadlineExceededError(
            absl::StrFormat("a subscription got %d of %d messages in 10 "
                            "minutes",
                            l->count(), num));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  const double seconds = MicrosSince(start) / 1e6;
  c.CloseHq();  // Stops delivery before the listeners go.
  std::printf("%s latency micros : %s\n", name.c_str(),
              latency.Summary().c_str());
  return c.Payloads(seconds, num);
}

// What a thread that walks every lease on each wake pays per wake: prints
// lease_walk_all.
void LeaseWalkAll(int64_t num, std::mt19937_64& rng) {
  std::vector<int64_t> deadlines(static_cast<size_t>(num));
  for (auto& d : deadlines) d = static_cast<int64_t>(rng() >> 1);
  const int64_t now = INT64_MAX / 4;
  constexpr int kWalks = 20;
  int64_t expired = 0;
  const SteadyClock::time_point start = SteadyClock::now();
  for (int w = 0; w < kWalks; ++w) {
    for (int64_t d : deadlines) expired += d <= now;
  }
  sink = sink + static_cast<uint64_t>(expired);
  PrintLine("lease_walk_all", Result{MicrosSince(start) / 1e6, kWalks, 0});
}

ABSL_ATTRIBUTE_NOINLINE absl::StatusOr<Result> Leases(Context& c, Histogram*) {
  const int64_t num = c.config.num;
  std::mt19937_64 rng(42);
  auto far = [&] { return absl::Hours(1) + absl::Seconds(rng() % 3600); };
  std::vector<LeaseId> ids(static_cast<size_t>(num));
  const int64_t heap_before = HeapKb();
  {
    LeaseManagerImpl leases(Clock::Default());
    SteadyClock::time_point start = SteadyClock::now();
    for (int64_t i = 0; i < num; ++i) {
      HQ_ASSIGN_OR_RETURN(ids[static_cast<size_t>(i)],
                          leases.Create(far(), [] {}));
    }
    PrintLine("lease_create", Result{MicrosSince(start) / 1e6, num, 0});
    const int64_t heap_full = HeapKb();
    std::printf("lease memory : %.1f bytes/lease (heap growth)\n",
                static_cast<double>(heap_full - heap_before) * 1024.0 /
                    static_cast<double>(num));
    std::shuffle(ids.begin(), ids.end(), rng);
    start = SteadyClock::now();
    for (LeaseId id : ids) HQ_RETURN_IF_ERROR(leases.Renew(id, far()));
    PrintLine("lease_renew", Result{MicrosSince(start) / 1e6, num, 0});
    std::shuffle(ids.begin(), ids.end(), rng);
    start = SteadyClock::now();
    for (LeaseId id : ids) HQ_RETURN_IF_ERROR(leases.Cancel(id));
    PrintLine("lease_cancel", Result{MicrosSince(start) / 1e6, num, 0});
  }
  LeaseWalkAll(num, rng);
  return Result{};
}

}  // namespace

void AddConsumeWorkloads(std::vector<Workload>* out) {
  out->push_back({.name = "claim_complete",
                  .description = "one consumer claims and completes "
                                 "--claim_batch tasks at a time until drained",
                  .run = ClaimComplete,
                  .opens_hq_db = true});
  out->push_back({.name = "claim_sparse",
                  .description = "claims that follow the topics with work "
                                 "among --num drained topics",
                  .run = ClaimSparse});
  out->push_back({.name = "subscribe",
                  .description = "push delivery to one subscription while "
                                 "one thread puts",
                  .run = [](Context& c, Histogram*) {
                    return Subscribe(c, "subscribe", 1);
                  }});
  out->push_back({.name = "subscribe_10",
                  .description = "the same with 10 subscriptions",
                  .run = [](Context& c, Histogram*) {
                    return Subscribe(c, "subscribe_10", 10);
                  }});
  out->push_back({.name = "leases",
                  .description = "LeaseManager create, renew and cancel of "
                                 "--num live leases",
                  .run = Leases});
}

}  // namespace hq::bench
