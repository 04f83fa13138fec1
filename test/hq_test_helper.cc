// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// A second process for tests.
//   hq_test_helper hold DIR
//       Opens DIR; prints "OK" or "ERROR <code>: <message>"; if open, keeps
//       it open until stdin closes.
//   hq_test_helper put DIR QUEUE PARTITIONS
//       Opens DIR, creates QUEUE if missing, then puts sync messages round
//       the partitions forever, printing "<partition> <id>" after each
//       acknowledged Put. Meant to be killed with SIGKILL.
//   hq_test_helper consume DIR QUEUE GROUP
//       Opens DIR with sync writes and claims from GROUP of QUEUE (lease
//       1 h), 5 at a time, completing the first 2 of each claim and keeping
//       the others. Prints "C <partition> <id> <attempt>" for each claimed
//       task once its claim returned, "D <partition> <id>" once its Complete
//       returned, and "IDLE" when nothing is left to claim; then waits for
//       stdin to close. Meant to be killed with SIGKILL.
//   hq_test_helper subscribe DIR QUEUE SUB
//       Opens DIR with sync writes and subscribes SUB to QUEUE (checkpoints
//       every 7 messages or 1 h). Its listener prints "M <partition> <id>"
//       for each message before it returns OK (and sleeps 200 us, so that
//       a kill lands mid-stream), and "IDLE" once nothing is left to
//       deliver; then waits for stdin to close. Meant to be killed with
//       SIGKILL.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "hq/hq.h"

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  const std::string cmd = argv[1];
  auto db = hq::Db::Open(
      argv[2], {.sync_writes = cmd == "consume" || cmd == "subscribe"});
  if (!db.ok()) {
    std::printf("ERROR %s\n", db.status().ToString().c_str());
    return 1;
  }
  if (cmd == "hold") {
    std::printf("OK\n");
    std::fflush(stdout);
    while (std::getchar() != EOF) {
    }
    return 0;
  }
  if (cmd == "put" && argc == 5) {
    const uint32_t partitions = static_cast<uint32_t>(std::atoi(argv[4]));
    hq::Queue* q;
    auto opened = (*db)->OpenQueue(argv[3]);
    if (opened.ok()) {
      q = *opened;
    } else {
      auto created = (*db)->CreateQueue(argv[3], {.partitions = partitions});
      if (!created.ok()) return 1;
      q = *created;
    }
    for (uint64_t i = 0;; ++i) {
      const std::string payload = absl::StrCat("m", i);
      auto r = q->Put({.payload = payload,
                       .partition = static_cast<uint32_t>(i % partitions)},
                      {.sync = true});
      if (!r.ok()) {
        std::printf("ERROR %s\n", r.status().ToString().c_str());
        return 1;
      }
      std::printf("%u %s\n", r->partition, r->id.ToString().c_str());
      std::fflush(stdout);
    }
  }
  if (cmd == "subscribe" && argc == 5) {
    class Printer : public hq::MessageListener {
      absl::Status OnMessage(const hq::MessageView& m) override {
        std::printf("M %u %s\n", m.partition, m.id.ToString().c_str());
        std::fflush(stdout);
        absl::SleepFor(absl::Microseconds(200));
        return absl::OkStatus();
      }
    } printer;
    auto q = (*db)->OpenQueue(argv[3]);
    if (!q.ok()) return 1;
    auto s = (*q)->Subscribe({.name = argv[4],
                              .checkpoint_messages = 7,
                              .checkpoint_interval = absl::Hours(1),
                              .buffer_messages = 16},
                             &printer);
    if (!s.ok()) {
      std::printf("ERROR %s\n", s.status().ToString().c_str());
      return 1;
    }
    for (;;) {  // Polls its own stats: a test helper, not the library.
      absl::SleepFor(absl::Milliseconds(5));
      auto st = (*s)->Stats();
      if (!st.ok()) {
        std::printf("ERROR %s\n", st.status().ToString().c_str());
        return 1;
      }
      if (st->lag == 0) break;
    }
    std::printf("IDLE\n");
    std::fflush(stdout);
    while (std::getchar() != EOF) {
    }
    return 0;
  }
  if (cmd == "consume" && argc == 5) {
    auto q = (*db)->OpenQueue(argv[3]);
    if (!q.ok()) return 1;
    auto g = (*q)->Group(argv[4], {.lease = absl::Hours(1)});
    if (!g.ok()) return 1;
    for (;;) {
      auto tasks = (*g)->Claim({.max = 5});
      if (!tasks.ok()) {
        std::printf("ERROR %s\n", tasks.status().ToString().c_str());
        return 1;
      }
      if (tasks->empty()) break;
      for (const hq::Task& t : *tasks) {
        std::printf("C %u %s %u\n", t.partition, t.id.ToString().c_str(),
                    t.attempt);
      }
      std::fflush(stdout);
      const size_t n = std::min<size_t>(2, tasks->size());
      absl::Status s = (*g)->Complete(std::span(tasks->data(), n));
      if (!s.ok()) {
        std::printf("ERROR %s\n", s.ToString().c_str());
        return 1;
      }
      for (size_t i = 0; i < n; ++i) {
        std::printf("D %u %s\n", (*tasks)[i].partition,
                    (*tasks)[i].id.ToString().c_str());
      }
      std::fflush(stdout);
    }
    std::printf("IDLE\n");
    std::fflush(stdout);
    while (std::getchar() != EOF) {
    }
    return 0;
  }
  return 2;
}
