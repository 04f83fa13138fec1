// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Writes test/data/format5_db with the format version 5 code (hq at
// e120364, the release before list hints). See test/data/README.md.

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
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

class Counter : public hq::MessageListener {
 public:
  absl::Status OnMessage(const hq::MessageView&) override {
    n.fetch_add(1);
    return absl::OkStatus();
  }
  std::atomic<int> n{0};
};

// Puts messages [from, to) in batches of 5: topic t<i % 12> (priority
// (i % 12) % 2), payload p<i>.
void Put(hq::Queue* q, int from, int to) {
  for (int i = from; i < to; i += 5) {
    std::vector<std::string> topics, payloads;
    std::vector<hq::Message> batch;
    for (int j = i; j < i + 5 && j < to; ++j) {
      topics.push_back("t" + std::to_string(j % 12));
      payloads.push_back("p" + std::to_string(j));
    }
    for (size_t k = 0; k < topics.size(); ++k) {
      batch.push_back({.topic = topics[k],
                       .payload = payloads[k],
                       .priority = (std::stoi(topics[k].substr(1)) % 2)});
    }
    DIE(q->PutBatch(batch, nullptr));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  {
    auto db = hq::Db::Open(argv[1], {});
    DIE(db.status());
    auto t = (*db)->CreateQueue(
        "topics",
        {.partitions = 2, .priorities = 2, .layout = hq::Layout::kTopic});
    DIE(t.status());
    // Groups "g" and "idle" and subscription "s" exist before the messages,
    // so that they read them from the lane activity index.
    auto g = (*t)->Group("g", {});
    DIE(g.status());
    DIE((*t)->Group("idle", {}).status());
    Counter c;
    auto s = (*t)->Subscribe({.name = "s"}, &c);
    DIE(s.status());
    Put(*t, 0, 30);
    // "s" delivers all 30 (its checkpoints are written at the close).
    while (c.n.load() < 30) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // "g" claims 8, completes 5: 3 stay in flight.
    auto tasks = (*g)->Claim({.max = 8});
    DIE(tasks.status());
    if (tasks->size() != 8) std::abort();
    DIE((*g)->Complete(std::span<const hq::Task>(tasks->data(), 5)));
  }
  {
    // Reopened without the subscription: 10 more messages, on topics it
    // has and one it has not (t10, t11 are new to none; all are hinted).
    auto db = hq::Db::Open(argv[1], {});
    DIE(db.status());
    auto t = (*db)->OpenQueue("topics");
    DIE(t.status());
    Put(*t, 30, 40);
  }
  return 0;
}
