// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Queue::DeleteGroup (hq/queue.h): every record of the group goes, a new
// group of the name starts afresh, tasks in flight block it unless forced,
// concurrent claims, a delete a crash interrupted is finished by Open, dead
// letters kept by option, and puts stop writing the lane activity index
// once the queue has no consumer.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hq/hq.h"
#include "hq/status.h"
#include "lib/consume/group_impl.h"
#include "lib/consume/subscription_impl.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/format.h"
#include "test/group_util.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::AwaitWaiters;
using test::BackgroundClaim;
using test::CountKeys;
using test::DbFixture;
using test::Impl;
using test::NoBackgroundSweeps;
using test::Storage;
using test::ValueOrDie;

uint32_t QueueId(Queue* q) { return static_cast<QueueImpl*>(q)->id(); }
uint32_t GroupId(ConsumerGroup* g) {
  return static_cast<GroupImpl*>(g)->record().id;
}

// Every key of the group's own records (doc/format.md, "Consumer
// deletes"), its record and its tombstone.
size_t GroupKeys(Db* db, uint32_t queue_id, uint32_t group_id,
                 const std::string& name) {
  size_t n = CountKeys(db, format::GroupKey(queue_id, name)) +
             CountKeys(db, format::DeleteKey(queue_id, group_id));
  for (const char tag : format::kConsumerRecordTags) {
    n += CountKeys(db, format::GroupRecordPrefix(tag, queue_id, group_id));
  }
  return n;
}

void Put(Queue* q, int n, int topics, const std::string& prefix = "m") {
  for (int i = 0; i < n; ++i) {
    ValueOrDie(q->Put({.topic = absl::StrCat("t", i % topics),
                       .payload = absl::StrCat(prefix, i),
                       .partition = 0}));
  }
}

// 20 messages on 4 topics, and group "g" with 2500 pacing records: a
// delete of it writes three batches of deletions.
ConsumerGroup* GroupOfManyRecords(Queue* q) {
  Put(q, 20, 4);
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  for (int i = 0; i < 2500; ++i) {
    HQ_REQUIRE_OK(
        g->SetTopicPacing(absl::StrCat("site", i), {.max_in_flight = 2}));
  }
  return g;
}

std::vector<std::string> Queues(Db* db) { return ValueOrDie(db->ListQueues()); }

bool HasQueue(Db* db, const std::string& name) {
  for (const std::string& q : Queues(db)) {
    if (q == name) return true;
  }
  return false;
}

TEST_CASE("DeleteGroup removes every record and the name starts afresh") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  const bool ordered = GENERATE(false, true);
  INFO(LayoutName(layout) << (ordered ? " ordered" : ""));
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q =
      ValueOrDie(f.db()->CreateQueue("q", {.partitions = 2, .layout = layout}));
  for (int i = 0; i < 40; ++i) {
    ValueOrDie(q->Put({.topic = absl::StrCat("t", i % 8),
                       .payload = absl::StrCat("m", i),
                       .partition = static_cast<uint32_t>(i % 2)}));
  }
  const GroupOptions go{.ordered = ordered, .max_attempts = 5};
  ConsumerGroup* g = ValueOrDie(q->Group("g", go));
  ConsumerGroup* other = ValueOrDie(q->Group("other", go));
  const ClaimOptions co{.max = 4, .consumer = "c"};
  // Progress of every kind: completed, released for later, dead-lettered,
  // paced.
  std::vector<Task> held = ValueOrDie(g->Claim(co));
  REQUIRE(held.size() >= 2);
  HQ_REQUIRE_OK(g->Complete({held.data() + 1, held.size() - 1}));
  HQ_REQUIRE_OK(g->Reject(held[0]));
  held = ValueOrDie(g->Claim(co));
  REQUIRE(!held.empty());
  HQ_REQUIRE_OK(g->Release(held[0], absl::Hours(1)));
  if (held.size() > 1) {
    HQ_REQUIRE_OK(g->Complete({held.data() + 1, held.size() - 1}));
  }
  HQ_REQUIRE_OK(g->SetTopicPacing("t3", {.max_in_flight = 1}));
  const std::vector<Task> other_first = ValueOrDie(other->Claim(co));
  HQ_REQUIRE_OK(other->Complete(other_first));
  REQUIRE(HasQueue(f.db(), "q.dead.g"));

  const uint32_t qid = QueueId(q), gid = GroupId(g);
  REQUIRE(GroupKeys(f.db(), qid, gid, "g") > 0);
  HQ_REQUIRE_OK(q->DeleteGroup("g"));

  CHECK(GroupKeys(f.db(), qid, gid, "g") == 0);
  CHECK(CountKeys(f.db(), format::DeletePrefix()) == 0);
  CHECK_FALSE(HasQueue(f.db(), "q.dead.g"));
  CHECK(ValueOrDie(q->ListGroups()) == std::vector<std::string>{"other"});
  CHECK(absl::IsNotFound(q->InspectGroup("g").status()));
  // The old handle fails every call with NotFound.
  CHECK(absl::IsNotFound(g->Claim(co).status()));
  CHECK(absl::IsNotFound(g->Complete(held)));
  CHECK(absl::IsNotFound(g->Stats().status()));
  CHECK(absl::IsNotFound(g->GetTopicPacing("t3").status()));
  CHECK(absl::IsNotFound(q->DeleteGroup("g")));
  CHECK(ValueOrDie(f.db()->Verify()).ok());

  // Deleted before and after a reopen: a new group of the name starts at the
  // oldest message, with no pacing, task or dead letter of the old one.
  const bool reopen = GENERATE(false, true);
  if (reopen) {
    f.Reopen();
    q = ValueOrDie(f.db()->OpenQueue("q"));
    other = ValueOrDie(q->Group("other", go));
  }
  ConsumerGroup* fresh = ValueOrDie(q->Group("g", go));
  if (!reopen) CHECK(fresh != g);  // After a reopen g's memory is gone.
  CHECK(GroupId(fresh) != gid);
  CHECK_FALSE(ValueOrDie(fresh->GetTopicPacing("t3")).has_value());
  GroupStats st = ValueOrDie(fresh->Stats());
  CHECK(st.dead_letters == 0);
  CHECK(st.redelivery == 0);
  CHECK(st.in_flight == 0);
  std::set<std::string> seen;
  for (;;) {
    const std::vector<Task> tasks =
        ValueOrDie(fresh->Claim({.max = 8, .consumer = "c"}));
    if (tasks.empty()) break;
    for (const Task& t : tasks) {
      CHECK(t.attempt == 1);
      CHECK(seen.insert(t.payload).second);
    }
    HQ_REQUIRE_OK(fresh->Complete(tasks));
  }
  CHECK(seen.size() == 40);
  // The other group goes on where it was.
  std::set<std::string> rest;
  for (;;) {
    const std::vector<Task> tasks =
        ValueOrDie(other->Claim({.max = 8, .consumer = "c"}));
    if (tasks.empty()) break;
    for (const Task& t : tasks) rest.insert(t.payload);
    HQ_REQUIRE_OK(other->Complete(tasks));
  }
  CHECK(rest.size() + other_first.size() == 40);
  for (const Task& t : other_first) CHECK_FALSE(rest.contains(t.payload));
  CHECK(ValueOrDie(f.db()->Verify()).ok());
}

TEST_CASE("DeleteGroup refuses tasks in flight unless forced") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = layout}));
  Put(q, 10, 3);
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  std::vector<Task> held = ValueOrDie(g->Claim({.max = 3}));
  REQUIRE(held.size() == 3);

  const absl::Status refused = q->DeleteGroup("g");
  INFO(refused.ToString());
  CHECK(absl::IsFailedPrecondition(refused));
  // Nothing changed: the group works on, its tasks are still held.
  CHECK(ValueOrDie(q->ListGroups()) == std::vector<std::string>{"g"});
  HQ_REQUIRE_OK(g->Complete({held.data(), 1}));
  held.erase(held.begin());
  CHECK(absl::IsFailedPrecondition(q->DeleteGroup("g")));

  const uint32_t gid = GroupId(g);
  HQ_REQUIRE_OK(q->DeleteGroup("g", {.force = true}));
  CHECK(GroupKeys(f.db(), QueueId(q), gid, "g") == 0);
  // The holders learn it at their next call.
  CHECK(absl::IsNotFound(g->Complete(held)));
  CHECK(absl::IsNotFound(g->Release(held[0], absl::ZeroDuration())));
  CHECK(absl::IsNotFound(g->Extend(&held[0], absl::Minutes(1))));
  CHECK(ValueOrDie(f.db()->Verify()).ok());
}

TEST_CASE("tasks in flight before a restart do not block DeleteGroup") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  Put(q, 5, 1);
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  REQUIRE(ValueOrDie(g->Claim({.max = 3})).size() == 3);
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  HQ_REQUIRE_OK(q->DeleteGroup("g"));
  CHECK(ValueOrDie(q->ListGroups()).empty());
}

TEST_CASE("DeleteGroup's errors") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  CHECK(absl::IsNotFound(q->DeleteGroup("nope")));
  CHECK(absl::IsInvalidArgument(q->DeleteGroup("")));
  CHECK(absl::IsInvalidArgument(q->DeleteGroup("bad name")));
  CHECK(absl::IsInvalidArgument(q->DeleteGroup(std::string(129, 'a'))));
  ValueOrDie(q->Group("g"));
  HQ_REQUIRE_OK(f.db()->DropQueue("q"));
  CHECK(absl::IsNotFound(q->DeleteGroup("g")));
}

TEST_CASE("a waiting claim returns NotFound when its group is deleted") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  BackgroundClaim waiting(g, {.max = 1, .wait = absl::Hours(1)});
  AwaitWaiters(g, 1);
  HQ_REQUIRE_OK(q->DeleteGroup("g"));
  const absl::StatusOr<std::vector<Task>> got = waiting.Wait();
  INFO(got.status().ToString());
  CHECK(absl::IsNotFound(got.status()));
}

TEST_CASE("DeleteGroup while other threads claim") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q =
      ValueOrDie(f.db()->CreateQueue("q", {.partitions = 4, .layout = layout}));
  constexpr int kMessages = 2000;
  // Message holds views: the strings live in `text` for the PutBatch.
  std::vector<std::string> text;
  text.reserve(2 * kMessages);
  std::vector<Message> batch;
  for (int i = 0; i < kMessages; ++i) {
    text.push_back(absl::StrCat("t", i % 50));
    text.push_back(absl::StrCat("m", i));
    batch.push_back({.topic = text[2 * i], .payload = text[2 * i + 1]});
  }
  HQ_REQUIRE_OK(q->PutBatch(batch, nullptr));
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  ConsumerGroup* other = ValueOrDie(q->Group("other"));

  std::atomic<bool> deleted{false};
  std::atomic<int> late_tasks{0}, claims_before{0}, errors{0};
  std::vector<std::thread> claimers;
  for (int t = 0; t < 3; ++t) {
    claimers.emplace_back([&] {
      for (;;) {
        const bool after = deleted.load();
        absl::StatusOr<std::vector<Task>> got = g->Claim({.max = 5});
        if (!got.ok()) {
          if (!absl::IsNotFound(got.status())) errors.fetch_add(1);
          return;
        }
        if (after && !got->empty()) late_tasks.fetch_add(1);
        if (!got->empty()) claims_before.fetch_add(1);
        const absl::Status s = g->Complete(*got);
        if (!s.ok() && !absl::IsNotFound(s)) errors.fetch_add(1);
      }
    });
  }
  std::atomic<int> other_done{0};
  std::thread other_thread([&] {
    for (;;) {
      absl::StatusOr<std::vector<Task>> got = other->Claim({.max = 7});
      if (!got.ok()) {
        errors.fetch_add(1);
        return;
      }
      if (got->empty()) {
        if (deleted.load()) return;
        continue;
      }
      if (!other->Complete(*got).ok()) errors.fetch_add(1);
      other_done.fetch_add(static_cast<int>(got->size()));
    }
  });
  // Once the claimers are under way (a liveness bound, not a timing test).
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  while (claims_before.load() < 10 && absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  HQ_REQUIRE_OK(q->DeleteGroup("g", {.force = true}));
  deleted.store(true);
  for (std::thread& t : claimers) t.join();
  other_thread.join();
  CHECK(errors.load() == 0);
  CHECK(late_tasks.load() == 0);
  // The other group was not affected: it completed every message once.
  while (true) {
    const std::vector<Task> tasks = ValueOrDie(other->Claim({.max = 100}));
    if (tasks.empty()) break;
    HQ_REQUIRE_OK(other->Complete(tasks));
    other_done.fetch_add(static_cast<int>(tasks.size()));
  }
  CHECK(other_done.load() == kMessages);
  CHECK(ValueOrDie(f.db()->Verify()).ok());
}

TEST_CASE("a delete a crash interrupted is finished by the next Open") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = layout}));
  ConsumerGroup* g = GroupOfManyRecords(q);
  std::vector<Task> t = ValueOrDie(g->Claim({.max = 2}));
  REQUIRE(t.size() == 2);
  HQ_REQUIRE_OK(g->Reject(t[0]));
  HQ_REQUIRE_OK(g->Complete({t.data() + 1, 1}));
  REQUIRE(HasQueue(f.db(), "q.dead.g"));
  const uint32_t qid = QueueId(q), gid = GroupId(g);

  // The "crash": the delete stops before its second batch.
  Impl(f.db())->TEST_SetDeleteBatchHook([](int batch) {
    return batch == 1 ? absl::AbortedError("crash") : absl::OkStatus();
  });
  const absl::Status s = q->DeleteGroup("g");
  INFO(s.ToString());
  REQUIRE_FALSE(s.ok());
  CHECK(GetErrorDetail(s) == ErrorDetail::kDropDurable);
  CHECK(CountKeys(f.db(), format::DeleteKey(qid, gid)) == 1);
  CHECK(CountKeys(f.db(), format::GroupKey(qid, "g")) == 0);
  CHECK(CountKeys(f.db(), format::PacePrefix(qid, gid)) > 0);
  // The name is unusable from the tombstone on.
  CHECK(absl::IsNotFound(q->Group("g").status()));
  CHECK(absl::IsNotFound(g->Claim({.max = 1}).status()));
  CHECK(ValueOrDie(q->ListGroups()).empty());
  // What is left is no problem for Verify.
  CHECK(ValueOrDie(f.db()->Verify()).ok());

  f.Reopen();
  CHECK(GroupKeys(f.db(), qid, gid, "g") == 0);
  CHECK(CountKeys(f.db(), format::DeletePrefix()) == 0);
  CHECK_FALSE(HasQueue(f.db(), "q.dead.g"));
  CHECK(ValueOrDie(f.db()->Verify()).ok());
  q = ValueOrDie(f.db()->OpenQueue("q"));
  ConsumerGroup* fresh = ValueOrDie(q->Group("g"));
  CHECK_FALSE(ValueOrDie(fresh->GetTopicPacing("site7")).has_value());
  CHECK(ValueOrDie(fresh->Stats()).dead_letters == 0);
  CHECK(test::Drain(fresh).size() == 20);
}

// Kills (SIGKILL) and reaps a forked child that was not reaped.
struct Reaper {
  pid_t pid;
  ~Reaper() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
  }
};

TEST_CASE("a delete killed with SIGKILL midway is finished by the next Open") {
  const Layout layout = GENERATE(Layout::kTime, Layout::kTopic);
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = layout}));
  ConsumerGroup* g = GroupOfManyRecords(q);
  const std::vector<Task> t = ValueOrDie(g->Claim({.max = 1}));
  REQUIRE(t.size() == 1);
  HQ_REQUIRE_OK(g->Reject(t[0]));
  const uint32_t qid = QueueId(q), gid = GroupId(g);
  f.Close();  // No thread of a Db runs in this process at the fork.

  // The child deletes the group and is killed before its fourth batch.
  Reaper child{fork()};
  REQUIRE(child.pid >= 0);
  if (child.pid == 0) {
    absl::StatusOr<std::unique_ptr<Db>> db = Db::Open(f.path(), f.options());
    if (!db.ok()) std::_Exit(2);
    static_cast<DbImpl*>(db->get())->TEST_SetDeleteBatchHook([](int batch) {
      if (batch == 3) raise(SIGKILL);
      return absl::OkStatus();
    });
    absl::StatusOr<Queue*> cq = (*db)->OpenQueue("q");
    if (!cq.ok()) std::_Exit(3);
    (void)(*cq)->DeleteGroup("g");
    std::_Exit(4);  // Not reached: the hook kills it.
  }
  const int status = test::WaitForExit(child.pid, "deleting child");
  child.pid = -1;
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);

  f.Reopen();
  CHECK(GroupKeys(f.db(), qid, gid, "g") == 0);
  CHECK(CountKeys(f.db(), format::DeletePrefix()) == 0);
  CHECK_FALSE(HasQueue(f.db(), "q.dead.g"));
  CHECK(ValueOrDie(f.db()->Verify()).ok());
  q = ValueOrDie(f.db()->OpenQueue("q"));
  CHECK(ValueOrDie(q->ListGroups()).empty());
  ConsumerGroup* fresh = ValueOrDie(q->Group("g"));
  CHECK_FALSE(ValueOrDie(fresh->GetTopicPacing("site9")).has_value());
  CHECK(test::Drain(fresh).size() == 20);
}

TEST_CASE("DeleteGroup keeps the dead-letter queue by option") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  Put(q, 3, 1);
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  const std::vector<Task> t = ValueOrDie(g->Claim({.max = 1}));
  REQUIRE(t.size() == 1);
  HQ_REQUIRE_OK(g->Reject(t[0]));
  const uint32_t gid = GroupId(g);
  HQ_REQUIRE_OK(q->DeleteGroup("g", {.keep_dead_letters = true}));
  CHECK(CountKeys(f.db(), format::GroupRecordPrefix(format::kDeadTag,
                                                    QueueId(q), gid)) == 0);
  REQUIRE(HasQueue(f.db(), "q.dead.g"));
  Queue* dead = ValueOrDie(f.db()->OpenQueue("q.dead.g"));
  const std::vector<test::ScannedMessage> kept = test::ScanAll(dead);
  REQUIRE(kept.size() == 1);
  CHECK(kept[0].payload == t[0].payload);
  // While the kept queue has the name, the group cannot be created again.
  CHECK(absl::IsAlreadyExists(q->Group("g").status()));
  HQ_REQUIRE_OK(f.db()->DropQueue("q.dead.g"));
  ConsumerGroup* fresh = ValueOrDie(q->Group("g"));
  CHECK(test::Drain(fresh).size() == 3);
  CHECK(ValueOrDie(f.db()->Verify()).ok());
}

TEST_CASE("puts stop writing the lane index once the queue has no consumer") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = Layout::kTopic}));
  const std::string hints = format::QueuePrefix(format::kHintTag, QueueId(q));
  Put(q, 10, 10, "a");
  CHECK(CountKeys(f.db(), hints) == 0);  // No consumer: no index.
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  ConsumerGroup* h = ValueOrDie(q->Group("h"));
  REQUIRE(ValueOrDie(g->Claim({.max = 1})).size() == 1);
  REQUIRE(ValueOrDie(h->Claim({.max = 1})).size() == 1);
  size_t n = CountKeys(f.db(), hints);
  Put(q, 10, 10, "b");
  CHECK(CountKeys(f.db(), hints) > n);

  // One consumer left: the index goes on.
  HQ_REQUIRE_OK(q->DeleteGroup("g", {.force = true}));
  n = CountKeys(f.db(), hints);
  Put(q, 10, 10, "c");
  CHECK(CountKeys(f.db(), hints) > n);

  // None left: puts write no hint, also after a reopen.
  HQ_REQUIRE_OK(q->DeleteGroup("h", {.force = true}));
  n = CountKeys(f.db(), hints);
  Put(q, 10, 10, "d");
  CHECK(CountKeys(f.db(), hints) == n);
  f.Reopen();
  q = ValueOrDie(f.db()->OpenQueue("q"));
  Put(q, 10, 10, "e");
  CHECK(CountKeys(f.db(), hints) == n);

  // A group created now walks the lanes: it finds every message.
  ConsumerGroup* fresh = ValueOrDie(q->Group("g"));
  CHECK(test::Drain(fresh, 13).size() == 50);
  n = CountKeys(f.db(), hints);
  Put(q, 10, 10, "f");
  CHECK(CountKeys(f.db(), hints) > n);
  CHECK(test::Drain(fresh, 13).size() == 10);
  CHECK(ValueOrDie(f.db()->Verify()).ok());
}

TEST_CASE("dropping a queue while its group's delete is unfinished") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {}));
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  for (int i = 0; i < 1500; ++i) {
    HQ_REQUIRE_OK(
        g->SetTopicPacing(absl::StrCat("s", i), {.max_in_flight = 1}));
  }
  Impl(f.db())->TEST_SetDeleteBatchHook([](int batch) {
    return batch == 1 ? absl::AbortedError("crash") : absl::OkStatus();
  });
  REQUIRE_FALSE(q->DeleteGroup("g").ok());
  Impl(f.db())->TEST_SetDeleteBatchHook(nullptr);
  HQ_REQUIRE_OK(f.db()->DropQueue("q"));
  CHECK(CountKeys(f.db(), format::DeletePrefix()) == 0);
  f.Reopen();
  CHECK(Queues(f.db()).empty());
  CHECK(ValueOrDie(f.db()->Verify()).ok());
}

// Counts the messages delivered.
class Counter : public MessageListener {
 public:
  absl::Status OnMessage(const MessageView&) override {
    n_.fetch_add(1);
    return absl::OkStatus();
  }
  // Waits until `n` were delivered (a liveness bound, not a timing test).
  void Await(int n) {
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    while (n_.load() < n && absl::Now() < give_up) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    REQUIRE(n_.load() >= n);
  }

 private:
  std::atomic<int> n_{0};
};

TEST_CASE("DeleteSubscription: a crash midway is finished by Open") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("q", {.layout = Layout::kTopic}));
  const uint32_t qid = QueueId(q);
  const std::string hints = format::QueuePrefix(format::kHintTag, qid);
  Put(q, 300, 300);
  Counter counter;
  Subscription* sub = ValueOrDie(
      q->Subscribe({.name = "s", .checkpoint_messages = 1}, &counter));
  const uint32_t sid = static_cast<SubscriptionImpl*>(sub)->record().id;
  counter.Await(300);
  Put(q, 10, 10, "x");  // With hints: the queue has a consumer.
  counter.Await(310);
  REQUIRE(CountKeys(f.db(), format::SourceKey(qid, sid)) == 1);
  REQUIRE(CountKeys(f.db(), hints) > 0);

  Impl(f.db())->TEST_SetDeleteBatchHook(
      [](int) { return absl::AbortedError("crash"); });
  const absl::Status s = q->DeleteSubscription("s");
  INFO(s.ToString());
  REQUIRE_FALSE(s.ok());
  CHECK(GetErrorDetail(s) == ErrorDetail::kDropDurable);
  CHECK(ValueOrDie(q->ListSubscriptions()).empty());
  CHECK(CountKeys(f.db(), format::DeleteKey(qid, sid)) == 1);
  CHECK(CountKeys(f.db(), format::SourceKey(qid, sid)) == 1);
  CHECK(ValueOrDie(f.db()->Verify()).ok());

  f.Reopen();
  for (const char tag : format::kConsumerRecordTags) {
    CHECK(CountKeys(f.db(), format::GroupRecordPrefix(tag, qid, sid)) == 0);
  }
  CHECK(CountKeys(f.db(), format::SubKey(qid, "s")) == 0);
  CHECK(CountKeys(f.db(), format::DeletePrefix()) == 0);
  q = ValueOrDie(f.db()->OpenQueue("q"));
  const size_t n = CountKeys(f.db(), hints);
  Put(q, 10, 10, "y");  // No consumer left: no hint.
  CHECK(CountKeys(f.db(), hints) == n);
  CHECK(ValueOrDie(f.db()->Verify()).ok());
  // Subscribed again, it starts afresh.
  Counter again;
  ValueOrDie(q->Subscribe({.name = "s"}, &again));
  again.Await(320);
  HQ_REQUIRE_OK(q->DeleteSubscription("s"));
  CHECK(absl::IsNotFound(q->DeleteSubscription("s")));
}

}  // namespace
}  // namespace hq
