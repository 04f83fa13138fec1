// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Writes test/data/format1_db with the format version 1 code (hq at
// 0780e1d). See test/data/README.md.

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

int main(int argc, char** argv) {
  hq::Options o;
  auto db = hq::Db::Open(argv[1], o);
  DIE(db.status());
  // "topics": topic layout, 2 partitions, 2 priorities; 20 messages on 10
  // topics "t0".."t9" (priority i % 2).
  auto t = (*db)->CreateQueue(
      "topics",
      {.partitions = 2, .priorities = 2, .layout = hq::Layout::kTopic});
  DIE(t.status());
  for (int i = 0; i < 20; ++i) {
    hq::Message m;
    m.topic = "t" + std::to_string(i % 10);
    m.payload = "p" + std::to_string(i);
    m.priority = (i % 10) % 2;
    DIE((*t)->Put(m).status());
  }
  // Group "g": claims 6 and completes 4 (2 stay in flight); group "idle"
  // created, never claims.
  auto g = (*t)->Group("g", {});
  DIE(g.status());
  auto tasks = (*g)->Claim({.max = 6});
  DIE(tasks.status());
  if (tasks->size() != 6) std::abort();
  DIE((*g)->Complete(std::span<const hq::Task>(tasks->data(), 4)));
  DIE((*t)->Group("idle", {}).status());
  // "log": time layout, 1 partition; 5 messages.
  auto q = (*db)->CreateQueue("log", {});
  DIE(q.status());
  for (int i = 0; i < 5; ++i) {
    DIE((*q)->Put({.topic = "a", .payload = "l" + std::to_string(i)}).status());
  }
  db->reset();
  return 0;
}
