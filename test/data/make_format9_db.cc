// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Writes test/data/format9_db with the format version 9 code (hq at
// d7734a4, the release before walk floors: every completion of a lane
// wrote its cursor record). See test/data/README.md.

#include <cstdio>
#include <cstdlib>
#include <string>
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
void ClaimSome(hq::ConsumerGroup* g, uint32_t n, size_t complete,
               const std::string& consumer = "") {
  std::vector<hq::Task> tasks;
  while (tasks.size() < n) {
    auto got = g->Claim(
        {.max = n - static_cast<uint32_t>(tasks.size()), .consumer = consumer});
    DIE(got.status());
    if (got->empty()) std::abort();
    for (hq::Task& t : *got) tasks.push_back(std::move(t));
  }
  DIE(g->Complete(std::span<const hq::Task>(tasks.data(), complete)));
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
  // "g", "o" (ordered) and "idle" exist before the messages: they read them
  // from the lane activity index. "late" is created after them: it walks
  // the lanes.
  auto g = (*t)->Group("g", {});
  DIE(g.status());
  auto o = (*t)->Group("o", {.ordered = true});
  DIE(o.status());
  DIE((*t)->Group("idle", {}).status());
  Put(*t, 0, 40);
  auto late = (*t)->Group("late", {});
  DIE(late.status());
  // First hand-outs left in flight: windows in the lanes' cursors.
  ClaimSome(*g, 8, 5);       // 3 in flight.
  ClaimSome(*o, 2, 1, "c");  // 1 in flight (one task a partition).
  ClaimSome(*late, 4, 2);    // 2 in flight.
  return 0;
}
