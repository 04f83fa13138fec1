// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Writes test/data/format10_db with the format version 10 code (hq at
// be63152, the commit before format 11), and format10_early_db with that
// of 1658b08 (format 10 before subscriptions used the walk floors). See
// test/data/README.md.
//
// Prints the payloads each subscription had delivered when it stopped,
// and those its last checkpoint covers; upgrade_test.cc holds them.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "hq/hq.h"

#define DIE(x)                                             \
  do {                                                     \
    auto _s = (x);                                         \
    if (!_s.ok()) {                                        \
      std::fprintf(stderr, "%s\n", _s.ToString().c_str()); \
      std::abort();                                        \
    }                                                      \
  } while (0)

namespace {

// Puts messages [from, to) in batches of 5: topic t<i % 12> (priority
// (i % 12) % 2), payload p<i>.
void Put(hq::Queue* q, int from, int to) {
  for (int i = from; i < to; i += 5) {
    // Message holds views: the strings live in these vectors.
    std::vector<std::string> topics, payloads;
    for (int j = i; j < i + 5 && j < to; ++j) {
      topics.push_back("t" + std::to_string(j % 12));
      payloads.push_back("p" + std::to_string(j));
    }
    std::vector<hq::Message> batch;
    for (size_t k = 0; k < topics.size(); ++k) {
      batch.push_back({.topic = topics[k],
                       .payload = payloads[k],
                       .priority = (i + static_cast<int>(k)) % 12 % 2});
    }
    DIE(q->PutBatch(batch, nullptr));
  }
}

// Claims `n` tasks of `g` and completes the first `complete` of them.
void ClaimSome(hq::ConsumerGroup* g, uint32_t n, size_t complete) {
  std::vector<hq::Task> tasks;
  while (tasks.size() < n) {
    auto got = g->Claim({.max = n - static_cast<uint32_t>(tasks.size())});
    DIE(got.status());
    if (got->empty()) std::abort();
    for (hq::Task& t : *got) tasks.push_back(std::move(t));
  }
  DIE(g->Complete(std::span<const hq::Task>(tasks.data(), complete)));
}

// Takes the first `allowed` messages; refuses the others (they come again
// after the retry backoff), so that the delivered set stops where the
// program says.
class Gate : public hq::MessageListener {
 public:
  absl::Status OnMessage(const hq::MessageView& m) override {
    std::lock_guard<std::mutex> l(mu_);
    if (got_.size() >= allowed_) return absl::UnavailableError("not yet");
    got_.emplace_back(m.payload);
    return absl::OkStatus();
  }
  void Allow(size_t n) {
    std::lock_guard<std::mutex> l(mu_);
    allowed_ = n;
  }
  std::vector<std::string> Got() {
    std::lock_guard<std::mutex> l(mu_);
    return got_;
  }

 private:
  std::mutex mu_;
  size_t allowed_ = 0;
  std::vector<std::string> got_;
};

// Lets `gate` take `n` messages in all, and waits until `s` counts them
// delivered (so that a Checkpoint covers them).
void DeliverUpTo(hq::Subscription* s, Gate* gate, uint64_t n) {
  gate->Allow(n);
  for (int i = 0; i < 60000; ++i) {
    auto stats = s->Stats();
    DIE(stats.status());
    if (stats->delivered == n) return;
    if (stats->delivered > n) std::abort();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::abort();
}

void Print(const char* what, std::vector<std::string> payloads) {
  std::sort(payloads.begin(), payloads.end());
  std::printf("%s (%zu):", what, payloads.size());
  for (const std::string& p : payloads) std::printf(" \"%s\",", p.c_str());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto db = hq::Db::Open(argv[1], {});
  DIE(db.status());
  auto t = (*db)->CreateQueue(
      "topics",
      {.partitions = 2, .priorities = 2, .layout = hq::Layout::kTopic});
  DIE(t.status());
  // Checkpoints only when this program asks; refused messages retried
  // soon.
  hq::SubscribeOptions options{
      .checkpoint_messages = 1000000,
      .checkpoint_interval = absl::Hours(1),
      .retry_base = absl::Milliseconds(5),
      .retry_cap = absl::Milliseconds(20),
  };
  // "g" and "s" exist before the messages: they read them from the lane
  // activity index. "late" is subscribed after them: it walks the lanes,
  // two at a time with a buffer of two messages.
  auto g = (*t)->Group("g", {});
  DIE(g.status());
  Gate s_gate, late_gate;
  options.name = "s";
  auto s = (*t)->Subscribe(options, &s_gate);
  DIE(s.status());
  Put(*t, 0, 40);
  options.name = "late";
  options.max_active_lanes = 2;
  options.buffer_messages = 2;
  auto late = (*t)->Subscribe(options, &late_gate);
  DIE(late.status());
  ClaimSome(*g, 8, 5);  // 3 in flight.
  // "s": 20 delivered, all checkpointed.
  DeliverUpTo(*s, &s_gate, 20);
  DIE((*s)->Checkpoint());
  Print("s delivered and checkpointed", s_gate.Got());
  // "late": 10 delivered and checkpointed, then 5 more delivered.
  DeliverUpTo(*late, &late_gate, 10);
  DIE((*late)->Checkpoint());
  Print("late checkpointed", late_gate.Got());
  DeliverUpTo(*late, &late_gate, 15);
  Print("late delivered", late_gate.Got());
  // Queue "single": 30 one-message lanes, q<i> on topic u<i>, and
  // "walker" subscribed after them, two lanes at a time: 12 delivered and
  // checkpointed. With the walk floors, its walk passes a lane it read
  // whole and delivered without writing the lane's checkpoint record.
  auto single = (*db)->CreateQueue(
      "single", {.partitions = 2, .layout = hq::Layout::kTopic});
  DIE(single.status());
  for (int i = 0; i < 30; ++i) {
    const std::string topic = "u" + std::to_string(i);
    const std::string payload = "q" + std::to_string(i);
    DIE((*single)->Put({.topic = topic, .payload = payload}).status());
  }
  Gate walker_gate;
  options.name = "walker";
  auto walker = (*single)->Subscribe(options, &walker_gate);
  DIE(walker.status());
  DeliverUpTo(*walker, &walker_gate, 12);
  DIE((*walker)->Checkpoint());
  Print("walker delivered and checkpointed", walker_gate.Got());
  std::fflush(stdout);
  // Stops as a crash would, without closing the Db (closing would write
  // the checkpoints of the last 5).
  std::_Exit(0);
}
