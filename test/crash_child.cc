// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The child process of test/crash_loop_test.cc: a busy user of one Db,
// meant to be killed with SIGKILL at a random moment.
//
//   crash_child DIR RUN SEED [time|topic]
//
// Opens DIR (sync_writes off; some writes ask for sync; in half the runs
// with a clock up to 2 s behind the wall clock), creates queue "q"
// (3 partitions, 2 priorities, the layout named, default time) if missing,
// then, until it is killed:
//   - topic layout, when it creates the queue: one message in each lane,
//     before the consumers exist (so that they walk the lanes);
//   - 3 producer threads write Puts (sync and not) and PutBatches of 1..6
//     messages, to explicit, key-hashed and round-robin partitions, with
//     priorities 0..1 and topics "", "a", "b" (topic layout: "" and "a" to
//     "k", and every consumer's working set capped at 2 lanes, so that
//     lanes are paged in and out all the time);
//   - 2 consumer threads claim from group "g" (lease 100..300 ms) and
//     complete some tasks, release some (at once, or after 20 ms) and keep
//     the others until their lease expires;
//   - topic layout only: 2 consumer threads, "o1" and "o2", do the same
//     with the ordered group "o" (GroupOptions::ordered, the options of
//     "g"), each claiming with its name as ClaimOptions::consumer (keeping
//     fewer tasks until their lease expires: one holds back its partition);
//   - subscription "s" delivers every message to a listener that fails one
//     delivery in 50 (so that it is retried), reports the others, and
//     takes 1..11 ms over one in 50.
// Every line on stdout is written with one write(2) (atomic on a pipe) AFTER
// the call it reports returned OK, so a line is only printed for what the
// library acknowledged:
//   P <sync 0|1> <partition> <priority> <id> <topic|-> <payload>
//                             a Put or a message of a PutBatch returned OK
//   C <partition> <id> <attempt>   a Claim handed out this task
//   d <partition> <id>        about to Complete this task (it may or may not
//                             be completed if the child dies before "D")
//   D <partition> <id>        the Complete returned OK
//   R <partition> <id>        a Release returned OK
//   OC <partition> <id> <attempt> <consumer> <lease deadline> <now>
//                             a Claim of group "o" handed out this task to
//                             consumer o1 or o2; the task's lease_deadline
//                             and the Db's clock read after the Claim
//                             returned, in microseconds since the epoch
//   Od, OD, OR <partition> <id>   as d, D and R, for group "o"
//   M <partition> <priority> <id> <topic|->  the listener took this
//                             message (prints, then returns OK)
//   ERROR <status>            an unexpected error; the child exits 1
// Claims, Completes and Releases are made and reported under one lock per
// group, so the report's order of the C, D and R lines (and of the OC, OD
// and OR lines) is the order of the calls. RUN goes
// into payloads ("r<RUN>t<thread>n<count>" and padding) so they are unique
// across runs; SEED drives the child's random choices.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "hq/hq.h"
#include "lib/consume/group_test_hooks.h"

namespace {

// Kept in step with test/crash_loop_test.cc.
constexpr uint32_t kPartitions = 3;
constexpr int kPriorities = 2;

void WriteLine(const std::string& line) {
  std::string l = line + "\n";
  const char* p = l.data();
  size_t n = l.size();
  while (n > 0) {
    const ssize_t w = write(1, p, n);
    if (w <= 0) _exit(3);  // The parent is gone.
    p += w;
    n -= static_cast<size_t>(w);
  }
}

[[noreturn]] void Fail(const std::string& what, const absl::Status& s) {
  WriteLine(absl::StrCat("ERROR ", what, ": ", s.ToString()));
  _exit(1);
}

std::string Id(const hq::MessageId& id) { return id.ToString(); }

void Produce(hq::Queue* q, int run, int thread, uint64_t seed,
             bool topic_layout) {
  std::mt19937_64 rng(seed);
  const char* topics[] = {"",  "a", "b", "c", "d", "e",
                          "f", "g", "h", "i", "j", "k"};
  const uint64_t n_topics = topic_layout ? 12 : 3;
  uint64_t count = 0;
  for (;;) {
    const int kind = static_cast<int>(rng() % 10);
    const bool sync = rng() % 2 == 0;
    const int n = kind < 7 ? 1 : 1 + static_cast<int>(rng() % 6);
    std::vector<std::string> payloads, keys;
    std::vector<hq::Message> batch;
    payloads.reserve(n);
    keys.reserve(n);
    for (int i = 0; i < n; ++i) {
      payloads.push_back(absl::StrCat("r", run, "t", thread, "n", count++,
                                      std::string(rng() % 40, 'x')));
      keys.push_back(absl::StrCat("k", rng() % 1000));
      hq::Message m{.topic = topics[rng() % n_topics],
                    .payload = payloads.back(),
                    .priority = static_cast<int>(rng() % kPriorities)};
      switch (rng() % 3) {
        case 0:
          m.partition = static_cast<uint32_t>(rng() % kPartitions);
          break;
        case 1:
          m.key = keys.back();
          break;
        default:
          break;  // Round-robin.
      }
      batch.push_back(m);
    }
    std::vector<hq::PutResult> results;
    if (kind < 7) {
      auto r = q->Put(batch[0], {.sync = sync});
      if (!r.ok()) Fail("Put", r.status());
      results.push_back(*r);
    } else {
      const absl::Status s = q->PutBatch(batch, &results, {.sync = sync});
      if (!s.ok()) Fail("PutBatch", s);
    }
    std::string lines;
    for (int i = 0; i < n; ++i) {
      const std::string topic(batch[i].topic);
      absl::StrAppend(&lines, i == 0 ? "" : "\n", "P ", sync ? 1 : 0, " ",
                      results[i].partition, " ", batch[i].priority, " ",
                      Id(results[i].id), " ", topic.empty() ? "-" : topic, " ",
                      payloads[i]);
    }
    WriteLine(lines);
    absl::SleepFor(absl::Microseconds(rng() % 4000));
  }
}

// Topic layout, first run: one message in each lane (every partition,
// priority and topic), before the consumers exist, so that they walk
// lanes of one message (doc/massive_topics.md, "Lanes the walk read
// whole"), and a later run resumes a walk a kill interrupted.
void Seed(hq::Queue* q, int run) {
  const char* topics[] = {"",  "a", "b", "c", "d", "e",
                          "f", "g", "h", "i", "j", "k"};
  int count = 0;
  for (uint32_t partition = 0; partition < kPartitions; ++partition) {
    for (int priority = 0; priority < kPriorities; ++priority) {
      for (const char* topic : topics) {
        const std::string payload = absl::StrCat("r", run, "s", count++);
        auto r = q->Put({.topic = topic,
                         .payload = payload,
                         .partition = partition,
                         .priority = priority});
        if (!r.ok()) Fail("Put", r.status());
        WriteLine(absl::StrCat("P 0 ", r->partition, " ", priority, " ",
                               Id(r->id), " ", *topic == '\0' ? "-" : topic,
                               " ", payload));
      }
    }
  }
}

// A consumer of group "g" (consumer empty) or of the ordered group "o"
// (consumer "o1" or "o2": its lines start with "O").
void Consume(hq::ConsumerGroup* g, std::mutex* mu, uint64_t seed,
             const std::string& consumer, const hq::Clock* clock) {
  std::mt19937_64 rng(seed);
  const std::string o = consumer.empty() ? "" : "O";
  for (;;) {
    std::vector<hq::Task> tasks;
    {
      std::lock_guard<std::mutex> l(*mu);
      auto r = g->Claim(
          {.max = 1 + static_cast<uint32_t>(rng() % 8),
           .lease = absl::Milliseconds(100 + static_cast<int>(rng() % 200)),
           .consumer = consumer});
      if (!r.ok()) Fail("Claim", r.status());
      const absl::Time now = clock->Now();
      tasks = std::move(*r);
      std::string lines;
      for (const hq::Task& t : tasks) {
        absl::StrAppend(&lines, lines.empty() ? "" : "\n", o, "C ", t.partition,
                        " ", Id(t.id), " ", t.attempt);
        if (!consumer.empty()) {
          absl::StrAppend(&lines, " ", t.consumer, " ",
                          absl::ToUnixMicros(t.lease_deadline), " ",
                          absl::ToUnixMicros(now));
        }
      }
      if (!lines.empty()) WriteLine(lines);
    }
    if (tasks.empty()) {
      absl::SleepFor(absl::Milliseconds(5));
      continue;
    }
    std::vector<hq::Task> done;
    std::vector<hq::Task> release;
    // A task kept until its lease expires holds back its partition in
    // "o": fewer of those there, so that "o" gets on.
    const int complete = consumer.empty() ? 13 : 16;
    const int keep = consumer.empty() ? 4 : 1;
    for (hq::Task& t : tasks) {
      const int c = static_cast<int>(rng() % 20);
      if (c < complete) {
        done.push_back(t);
      } else if (c < 20 - keep) {
        release.push_back(t);
      }  // Else keep it until its lease expires.
    }
    absl::SleepFor(absl::Microseconds(rng() % 3000));
    if (!done.empty()) {
      std::lock_guard<std::mutex> l(*mu);
      std::string intent, lines;
      for (const hq::Task& t : done) {
        absl::StrAppend(&intent, intent.empty() ? "" : "\n", o, "d ",
                        t.partition, " ", Id(t.id));
        absl::StrAppend(&lines, lines.empty() ? "" : "\n", o, "D ", t.partition,
                        " ", Id(t.id));
      }
      WriteLine(intent);
      const absl::Status s = g->Complete(done);
      // FailedPrecondition: a lease expired and the task went to another
      // consumer; nothing was completed.
      if (s.ok()) {
        WriteLine(lines);
      } else if (s.code() != absl::StatusCode::kFailedPrecondition) {
        Fail("Complete", s);
      }
    }
    for (const hq::Task& t : release) {
      std::lock_guard<std::mutex> l(*mu);
      const absl::Status s = g->Release(
          t, rng() % 2 ? absl::ZeroDuration() : absl::Milliseconds(20));
      if (s.ok()) {
        WriteLine(absl::StrCat(o, "R ", t.partition, " ", Id(t.id)));
      } else if (s.code() != absl::StatusCode::kFailedPrecondition) {
        Fail("Release", s);
      }
    }
  }
}

// The wall clock, set back by a fixed offset: a run whose clock reads
// earlier than the ids written by the run before it.
class BehindClock : public hq::Clock {
 public:
  explicit BehindClock(absl::Duration behind) : behind_(behind) {}
  absl::Time Now() const override { return absl::Now() - behind_; }

 private:
  const absl::Duration behind_;
};

class Reporter : public hq::MessageListener {
 public:
  explicit Reporter(uint64_t seed) : rng_(seed) {}
  absl::Status OnMessage(const hq::MessageView& m) override {
    // Never called concurrently for one subscription: rng_ needs no lock.
    if (rng_() % 50 == 0) return absl::UnavailableError("try again");
    WriteLine(absl::StrCat("M ", m.partition, " ", m.priority, " ", Id(m.id),
                           " ", m.topic.empty() ? "-" : std::string(m.topic)));
    // Now and then a slow message, so that the buffer fills behind it and a
    // checkpoint is written while messages wait in it.
    if (rng_() % 50 == 0) {
      absl::SleepFor(absl::Microseconds(1000 + rng_() % 10000));
    }
    return absl::OkStatus();
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: crash_child DIR RUN SEED [time|topic]\n");
    return 2;
  }
  const bool topic_layout = argc == 5 && std::string(argv[4]) == "topic";
  if (topic_layout) hq::TEST_SetMaxActiveLanes(2);
  const std::string dir = argv[1];
  const int run = std::atoi(argv[2]);
  const uint64_t seed = std::strtoull(argv[3], nullptr, 10);
  std::mt19937_64 rng(seed);

  // Half the runs have a clock up to 2 s behind: ids must still go on
  // from the ids written before (message.h).
  BehindClock clock(rng() % 2 ? absl::Milliseconds(rng() % 2000)
                              : absl::ZeroDuration());
  auto db = hq::Db::Open(dir, {.clock = &clock});
  if (!db.ok()) Fail("Open", db.status());
  hq::Queue* q;
  if (auto opened = (*db)->OpenQueue("q"); opened.ok()) {
    q = *opened;
  } else if (opened.status().code() == absl::StatusCode::kNotFound) {
    auto created = (*db)->CreateQueue(
        "q", {.partitions = kPartitions,
              .priorities = kPriorities,
              .layout = topic_layout ? hq::Layout::kTopic : hq::Layout::kTime});
    if (!created.ok()) Fail("CreateQueue", created.status());
    q = *created;
    if (topic_layout) Seed(q, run);
  } else {
    Fail("OpenQueue", opened.status());
  }
  auto g = q->Group("g", {.lease = absl::Milliseconds(200),
                          .max_attempts = 1000000,
                          .backoff_base = absl::Milliseconds(10),
                          .backoff_cap = absl::Milliseconds(50)});
  if (!g.ok()) Fail("Group", g.status());
  hq::ConsumerGroup* ordered = nullptr;
  if (topic_layout) {
    auto o = q->Group("o", {.ordered = true,
                            .lease = absl::Milliseconds(200),
                            .max_attempts = 1000000,
                            .backoff_base = absl::Milliseconds(10),
                            .backoff_cap = absl::Milliseconds(50)});
    if (!o.ok()) Fail("Group", o.status());
    ordered = *o;
  }

  Reporter reporter(rng());
  auto sub = q->Subscribe(
      {.name = "s",
       .checkpoint_messages = 1 + static_cast<uint32_t>(rng() % 50),
       .checkpoint_interval =
           absl::Milliseconds(10 + static_cast<int>(rng() % 90)),
       .buffer_messages = 16 + static_cast<uint32_t>(rng() % 240),
       .retry_base = absl::Milliseconds(1),
       .retry_cap = absl::Milliseconds(10)},
      &reporter);
  if (!sub.ok()) Fail("Subscribe", sub.status());

  std::mutex group_mu, ordered_mu;
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) {
    threads.emplace_back(Produce, q, run, t, rng(), topic_layout);
  }
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back(Consume, *g, &group_mu, rng(), std::string(), &clock);
  }
  if (ordered != nullptr) {
    for (const char* name : {"o1", "o2"}) {
      threads.emplace_back(Consume, ordered, &ordered_mu, rng(),
                           std::string(name), &clock);
    }
  }
  for (;;) pause();  // Until SIGKILL.
}
