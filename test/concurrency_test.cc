// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Concurrency tests: a follower of a lane never skips a message while many
// producers write to it; ids stay unique and increasing per partition under
// concurrency, a moving clock and a reopen; concurrent CreateQueue/OpenQueue;
// Put racing DropQueue.
//
// Catch2 assertions are not thread-safe: worker threads record what went
// wrong in an Errors object, and the test thread checks it after joining.

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "lib/util/strings.h"
#include "lib/util/sync.h"
#include "test/test_util.h"

namespace hq::test {
namespace {

using Order = ScanOptions::Order;

// Errors seen by worker threads; checked by the test thread.
class Errors {
 public:
  void Add(std::string e) {
    MutexLock l(&mu_);
    ++count_;
    if (first_.size() < 10) first_.push_back(std::move(e));
  }
  // "" if there were none, else the count and the first few.
  std::string Summary() {
    MutexLock l(&mu_);
    if (count_ == 0) return "";
    std::string out = absl::StrCat(count_, " errors:");
    for (const std::string& e : first_) absl::StrAppend(&out, "\n  ", e);
    return out;
  }

 private:
  Mutex mu_;
  size_t count_ = 0;
  std::vector<std::string> first_;
};

// Runs fn(i) on n threads and joins them.
template <typename Fn>
void RunThreads(int n, Fn fn) {
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i) threads.emplace_back(fn, i);
  for (std::thread& t : threads) t.join();
}

// ------------------------------------------------------ lane visibility

// A lane of partition 0: (priority) in the time layout, (priority, topic)
// in the topic layout.
struct Lane {
  int priority;
  std::string topic;  // Empty in the time layout: every topic.
  bool Contains(const MessageView& m, Layout layout) const {
    return m.partition == 0 && m.priority == priority &&
           (layout == Layout::kTime || m.topic == topic);
  }
};

// Messages per producer of the lane follower cases: fewer under
// ThreadSanitizer, where the eight cases of 6000 took from 28 to 341 s
// alone in runs of one binary (the reader's passes race the producers), so
// past meson's timeout beside another test. A race shows with fewer; the
// plain build's larger run adds more late commits to race against.
constexpr int kFollowerMessagesPerProducer =
    test::kThreadSanitizer ? 1500 : 6000;

TEST_CASE("A lane follower never skips a message that commits late",
          "[concurrency][visibility]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const int priorities = GENERATE(1, 2);
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO("layout " << LayoutName(layout) << ", priorities " << priorities
                 << ", storage " << StorageName(storage));
  constexpr int kProducers = 8;
  constexpr int kMessagesPerProducer = kFollowerMessagesPerProducer;

  // The real clock: ids carry real milliseconds, and many messages share
  // one, as in production.
  DbFixture f(storage, Options{.clock = Clock::Default()});
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = 2, .priorities = priorities, .layout = layout}));
  const std::vector<std::string> topics = {"a", "b"};
  std::vector<Lane> lanes;
  for (int p = priorities - 1; p >= 0; --p) {
    if (layout == Layout::kTopic) {
      for (const std::string& t : topics) lanes.push_back({p, t});
    } else {
      lanes.push_back({p, ""});
    }
  }

  Errors errors;
  std::atomic<bool> producers_done{false};
  // What each lane's follower saw, in the order it saw it.
  std::vector<std::vector<MessageId>> seen(lanes.size());

  std::thread reader([&] {
    std::vector<std::optional<MessageId>> last(lanes.size());
    while (true) {
      // Read the flag before the pass: a pass that starts after every
      // producer returned must catch up completely.
      const bool finished = producers_done.load();
      for (size_t i = 0; i < lanes.size(); ++i) {
        ScanOptions o{.partitions = {0}, .order = Order::kLane};
        if (layout == Layout::kTopic) o.topics = {lanes[i].topic};
        if (last[i].has_value()) o.from = last[i]->Next();
        auto scanner = q->NewScanner(o);
        if (!scanner.ok()) {
          errors.Add(scanner.status().ToString());
          return;
        }
        while ((*scanner)->Next()) {
          const MessageView& m = (*scanner)->message();
          if (!lanes[i].Contains(m, layout)) continue;
          if (last[i].has_value() && !(*last[i] < m.id)) {
            errors.Add(absl::StrCat("lane ", i, ": ", m.id.ToString(),
                                    " after ", last[i]->ToString()));
          }
          last[i] = m.id;
          seen[i].push_back(m.id);
        }
        if (!(*scanner)->status().ok()) {
          errors.Add((*scanner)->status().ToString());
          return;
        }
      }
      if (finished) return;
    }
  });

  // Producers: single Puts and batches of 1..20, a few synced, mostly to
  // partition 0 and its lanes, some to partition 1 in the same batches.
  std::atomic<size_t> acknowledged{0};
  RunThreads(kProducers, [&](int t) {
    std::mt19937_64 rng(Seed(static_cast<uint64_t>(t)));
    int written = 0;
    std::vector<Message> batch;
    std::vector<PutResult> results;
    while (written < kMessagesPerProducer) {
      const size_t n = rng() % 2 == 0 ? 0 : 1 + rng() % 20;
      PutOptions po;
      if (rng() % 64 == 0) po.sync = true;
      auto make = [&] {
        return Message{.topic = topics[rng() % topics.size()],
                       .payload = "p",
                       .partition = rng() % 8 == 0 ? 1u : 0u,
                       .priority = static_cast<int>(rng() % priorities)};
      };
      if (n == 0) {
        auto r = q->Put(make(), po);
        if (!r.ok()) {
          errors.Add(r.status().ToString());
          return;
        }
        ++written;
      } else {
        batch.clear();
        for (size_t i = 0; i < n; ++i) batch.push_back(make());
        absl::Status s = q->PutBatch(batch, &results, po);
        if (!s.ok()) {
          errors.Add(s.ToString());
          return;
        }
        written += static_cast<int>(n);
      }
      acknowledged += n == 0 ? 1 : n;
    }
  });
  producers_done = true;
  reader.join();
  {
    const std::string e = errors.Summary();
    REQUIRE(e == "");
  }

  // The followers must have seen every message of their lane, in order.
  std::vector<std::vector<MessageId>> want(lanes.size());
  size_t total = 0;
  {
    auto scanner = ValueOrDie(q->NewScanner({.order = Order::kLane}));
    while (scanner->Next()) {
      const MessageView& m = scanner->message();
      ++total;
      for (size_t i = 0; i < lanes.size(); ++i) {
        if (lanes[i].Contains(m, layout)) want[i].push_back(m.id);
      }
    }
    HQ_REQUIRE_OK(scanner->status());
  }
  REQUIRE(acknowledged.load() >= size_t{kProducers} * kMessagesPerProducer);
  CHECK(total == acknowledged.load());
  size_t in_lanes = 0;
  for (size_t i = 0; i < lanes.size(); ++i) {
    INFO("lane " << i << ": priority " << lanes[i].priority << " topic '"
                 << lanes[i].topic << "'");
    in_lanes += want[i].size();
    CHECK(std::is_sorted(want[i].begin(), want[i].end()));
    CHECK(seen[i].size() == want[i].size());
    size_t first_diff = 0;
    while (first_diff < std::min(seen[i].size(), want[i].size()) &&
           seen[i][first_diff] == want[i][first_diff]) {
      ++first_diff;
    }
    INFO("first difference at " << first_diff);
    CHECK(seen[i] == want[i]);
  }
  // Most messages went to partition 0, so the lanes were busy.
  CHECK(in_lanes > acknowledged.load() / 2);
}

// -------------------------------------------------- ids per partition

TEST_CASE("Ids stay unique and increasing per partition under concurrency",
          "[concurrency]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO("layout " << LayoutName(layout) << ", storage " << StorageName(storage));
  constexpr int kProducers = 6;
  constexpr int kMessagesPerProducer = 1500;
  constexpr uint32_t kPartitions = 4;
  DbFixture f(storage);
  Queue* q = ValueOrDie(f.db()->CreateQueue(
      "q", {.partitions = kPartitions, .priorities = 2, .layout = layout}));

  // Everything acknowledged, over both rounds.
  std::vector<ScannedMessage> acked;
  Mutex acked_mu;
  Errors errors;

  // One round: producers write while they move the simulated clock.
  auto round = [&](int round_no) {
    RunThreads(kProducers, [&](int t) {
      std::mt19937_64 rng(Seed(static_cast<uint64_t>(round_no * 100 + t)));
      std::vector<std::optional<MessageId>> last(kPartitions);
      std::vector<ScannedMessage> mine;
      std::vector<std::string> payloads;
      std::vector<std::string> keys;
      std::vector<Message> batch;
      std::vector<PutResult> results;
      int seq = 0;
      auto record = [&](const Message& m, const PutResult& r) {
        auto& l = last[r.partition];
        if (l.has_value() && !(*l < r.id)) {
          errors.Add(absl::StrCat("producer ", t, " partition ", r.partition,
                                  ": got ", r.id.ToString(), " after ",
                                  l->ToString()));
        }
        l = r.id;
        mine.push_back({r.id, r.partition, m.priority, std::string(m.topic),
                        std::string(m.key), std::string(m.payload)});
      };
      while (seq < kMessagesPerProducer) {
        // Every producer moves the shared clock: mostly forwards, sometimes
        // backwards, often not at all (then ids differ by seq only).
        switch (rng() % 16) {
          case 0:
            f.clock().Advance(absl::Milliseconds(-3));
            break;
          case 1:
          case 2:
          case 3:
            f.clock().Advance(absl::Milliseconds(1));
            break;
          default:
            break;
        }
        const size_t n = rng() % 3 == 0 ? 1 + rng() % 10 : 1;
        payloads.clear();
        keys.clear();
        for (size_t i = 0; i < n; ++i) {
          payloads.push_back(absl::StrCat(round_no, "/", t, "/", seq++));
          keys.push_back(absl::StrCat("k", rng() % 100));
        }
        batch.clear();
        for (size_t i = 0; i < n; ++i) {
          Message m{.topic = rng() % 2 ? "x" : "y",
                    .payload = payloads[i],
                    .priority = static_cast<int>(rng() % 2)};
          switch (rng() % 3) {
            case 0:
              m.partition = static_cast<uint32_t>(rng() % kPartitions);
              break;
            case 1:
              m.key = keys[i];
              break;
            default:
              break;
          }
          batch.push_back(m);
        }
        if (n == 1 && rng() % 2 == 0) {
          auto r = q->Put(batch[0]);
          if (!r.ok()) {
            errors.Add(r.status().ToString());
            return;
          }
          record(batch[0], *r);
          continue;
        }
        absl::Status s = q->PutBatch(batch, &results);
        if (!s.ok()) {
          errors.Add(s.ToString());
          return;
        }
        for (size_t i = 0; i < n; ++i) record(batch[i], results[i]);
      }
      MutexLock l(&acked_mu);
      acked.insert(acked.end(), mine.begin(), mine.end());
    });
  };

  auto check_all = [&] {
    {
      const std::string e = errors.Summary();
      REQUIRE(e == "");
    }
    std::set<std::pair<uint32_t, MessageId>> distinct;
    for (const ScannedMessage& m : acked) distinct.insert({m.partition, m.id});
    CHECK(distinct.size() == acked.size());
    std::vector<ScannedMessage> want = acked;
    std::sort(want.begin(), want.end(), [](const auto& a, const auto& b) {
      return std::tie(a.id, a.partition) < std::tie(b.id, b.partition);
    });
    const auto got = ScanAll(q);
    REQUIRE(got.size() == want.size());
    size_t mismatches = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (!(got[i] == want[i])) ++mismatches;
    }
    CHECK(mismatches == 0);
  };

  round(1);
  check_all();
  std::map<uint32_t, MessageId> max_before;
  for (const ScannedMessage& m : acked) {
    max_before[m.partition] = std::max(max_before[m.partition], m.id);
  }
  const size_t first_round = acked.size();

  // Reopen with the clock behind: ids must continue past the old ones.
  f.clock().Advance(absl::Seconds(-10));
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  round(2);
  check_all();
  size_t not_after = 0;
  for (size_t i = first_round; i < acked.size(); ++i) {
    if (!(max_before[acked[i].partition] < acked[i].id)) ++not_after;
  }
  CHECK(not_after == 0);
}

// ------------------------------------------------- create / open races

TEST_CASE("Concurrent CreateQueue and OpenQueue of the same names agree",
          "[concurrency]") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO("storage " << StorageName(storage));
  constexpr int kThreads = 8;
  constexpr int kNames = 40;
  DbFixture f(storage);
  Db* db = f.db();

  struct Outcome {
    int created = 0;
    int already_exists = 0;
    int other = 0;
    std::set<Queue*> handles;
  };
  std::vector<Outcome> outcomes(kNames);
  Mutex mu;
  Errors errors;

  RunThreads(kThreads, [&](int t) {
    std::mt19937_64 rng(Seed(static_cast<uint64_t>(t)));
    std::vector<int> order(kNames);
    for (int i = 0; i < kNames; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), rng);
    for (int i : order) {
      const std::string name = absl::StrCat("queue-", i);
      // Sometimes look before creating: NotFound or the queue.
      if (rng() % 2 == 0) {
        auto early = db->OpenQueue(name);
        if (early.ok()) {
          MutexLock l(&mu);
          outcomes[i].handles.insert(*early);
        } else if (!absl::IsNotFound(early.status())) {
          errors.Add(early.status().ToString());
        }
      }
      auto created =
          db->CreateQueue(name, {.partitions = static_cast<uint32_t>(1 + t)});
      auto opened = db->OpenQueue(name);
      MutexLock l(&mu);
      Outcome& o = outcomes[i];
      if (created.ok()) {
        ++o.created;
        o.handles.insert(*created);
      } else if (absl::IsAlreadyExists(created.status())) {
        ++o.already_exists;
      } else {
        ++o.other;
        errors.Add(created.status().ToString());
      }
      if (opened.ok()) {
        o.handles.insert(*opened);
      } else {
        errors.Add(opened.status().ToString());
      }
    }
  });
  {
    const std::string e = errors.Summary();
    CHECK(e == "");
  }
  std::vector<std::string> names;
  for (int i = 0; i < kNames; ++i) {
    INFO("queue-" << i);
    const Outcome& o = outcomes[i];
    CHECK(o.created == 1);
    CHECK(o.already_exists == kThreads - 1);
    CHECK(o.other == 0);
    REQUIRE(o.handles.size() == 1);
    Queue* q = *o.handles.begin();
    CHECK(q == ValueOrDie(db->OpenQueue(absl::StrCat("queue-", i))));
    CHECK(q->name() == absl::StrCat("queue-", i));
    names.push_back(absl::StrCat("queue-", i));
  }
  std::sort(names.begin(), names.end());
  CHECK(ValueOrDie(db->ListQueues()) == names);

  // The winner's options were stored, and every queue is usable.
  std::map<std::string, uint32_t> partitions;
  for (const std::string& n : names) {
    Queue* q = ValueOrDie(db->OpenQueue(n));
    partitions[n] = q->options().partitions;
    ValueOrDie(q->Put({.payload = n}));
  }
  f.Reopen();
  CHECK(ValueOrDie(f.db()->ListQueues()) == names);
  for (const std::string& n : names) {
    Queue* q = ValueOrDie(f.db()->OpenQueue(n));
    CHECK(q->options().partitions == partitions[n]);
    const auto all = ScanAll(q);
    REQUIRE(all.size() == 1);
    CHECK(all[0].payload == n);
  }
}

// ------------------------------------------------------- Put vs Drop

TEST_CASE("Puts racing DropQueue either land before it or get NotFound",
          "[concurrency]") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO("layout " << LayoutName(layout) << ", storage " << StorageName(storage));
  constexpr int kProducers = 6;
  DbFixture f(storage);
  const QueueOptions qo{.partitions = 3, .priorities = 2, .layout = layout};
  Queue* old_q = ValueOrDie(f.db()->CreateQueue("q", qo));
  Queue* bystander = ValueOrDie(f.db()->CreateQueue("bystander", qo));

  Errors errors;
  Mutex mu;
  CondVar progress;        // Signalled when ok_puts grows.
  size_t ok_puts = 0;      // Guarded by mu.
  bool recreated = false;  // Guarded by mu: the new "q" exists.
  int after_recreate = 0;  // Guarded by mu: producers that saw it.
  std::atomic<size_t> bystander_puts{0};
  // The dropper drops after a minute at the latest; what follows takes
  // seconds (a slow sanitizer build included).
  constexpr absl::Duration kGiveUp = absl::Minutes(4);
  const absl::Time give_up = absl::Now() + kGiveUp;

  RunThreads(kProducers + 1, [&](int t) {
    if (t == kProducers) {
      // The dropper: waits until producers have written a fair amount,
      // or drops anyway after a minute (and says so).
      {
        MutexLock l(&mu);
        const absl::Time deadline = absl::Now() + absl::Minutes(1);
        while (ok_puts < 2000 && absl::Now() < deadline) {
          progress.WaitWithTimeout(&mu, deadline - absl::Now());
        }
        if (ok_puts < 2000) {
          errors.Add(absl::StrCat("only ", ok_puts, " puts in a minute"));
        }
      }
      if (absl::Status s = f.db()->DropQueue("q"); !s.ok()) {
        errors.Add(s.ToString());
      }
      auto again = f.db()->CreateQueue("q", qo);
      if (!again.ok()) errors.Add(again.status().ToString());
      MutexLock l(&mu);
      recreated = true;
      return;
    }
    std::mt19937_64 rng(Seed(static_cast<uint64_t>(t)));
    bool saw_not_found = false;
    int late_puts = 0;  // Puts after the new queue exists.
    std::vector<Message> batch;
    while (late_puts < 50) {
      bool late;  // Whether the new queue existed before this call began.
      {
        MutexLock l(&mu);
        late = recreated;
      }
      absl::Status s;
      size_t n = 1;
      if (rng() % 2 == 0) {
        s = old_q
                ->Put({.topic = "t",
                       .payload = "old",
                       .priority = static_cast<int>(rng() % 2)})
                .status();
      } else {
        n = 1 + rng() % 5;
        batch.assign(n, Message{.topic = "t", .payload = "old"});
        s = old_q->PutBatch(batch, nullptr);
      }
      if (bystander->Put({.payload = "b"}).ok()) ++bystander_puts;
      MutexLock l(&mu);
      if (s.ok()) {
        if (saw_not_found) errors.Add("a Put succeeded after a NotFound");
        if (late) errors.Add("a Put to the dropped queue succeeded");
        ok_puts += n;
        progress.Signal();
      } else if (absl::IsNotFound(s)) {
        saw_not_found = true;
      } else {
        errors.Add(s.ToString());
      }
      if (late) ++late_puts;
      // Keep going until the queue is dropped, with a guard against a
      // dropper that never runs or never finishes.
      if (ok_puts > 1000000) {
        errors.Add("the drop never happened");
        return;
      }
      if (absl::Now() > give_up) {
        errors.Add(absl::StrCat("the drop and re-creation took over ",
                                absl::FormatDuration(kGiveUp), " (",
                                recreated ? "done" : "not done", ")"));
        return;
      }
    }
    MutexLock l(&mu);
    if (!saw_not_found) errors.Add("producer never saw the drop");
    ++after_recreate;
  });
  {
    const std::string e = errors.Summary();
    REQUIRE(e == "");
  }
  CHECK(after_recreate == kProducers);
  CHECK(ok_puts >= 2000);

  Queue* new_q = ValueOrDie(f.db()->OpenQueue("q"));
  CHECK(new_q != old_q);
  CHECK(ScanAll(new_q).empty());
  CHECK(ScanAll(new_q, {.order = ScanOptions::Order::kLane}).empty());
  CHECK(ScanAll(bystander).size() == bystander_puts.load());
  ValueOrDie(new_q->Put({.topic = "t", .payload = "new"}));

  f.Reopen();
  CHECK(ValueOrDie(f.db()->ListQueues()) ==
        std::vector<std::string>{"bystander", "q"});
  new_q = ValueOrDie(f.db()->OpenQueue("q"));
  const auto after = ScanAll(new_q);
  REQUIRE(after.size() == 1);
  CHECK(after[0].payload == "new");
  CHECK(ScanAll(ValueOrDie(f.db()->OpenQueue("bystander"))).size() ==
        bystander_puts.load());
}

}  // namespace
}  // namespace hq::test
