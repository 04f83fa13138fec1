// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Opening a Db written by an older format version (test/data/README.md).

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "catch2/catch.hpp"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "lib/consume/subscription_impl.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/sync.h"
#include "test/group_util.h"
#include "test/test_util.h"

namespace hq {
namespace {

// A copy of test/data/`name` in `dir`.
std::string CopyTestData(const test::TempDir& dir, const std::string& name) {
  const char* root = std::getenv("HQ_SOURCE_ROOT");
  INFO("environment variable HQ_SOURCE_ROOT");
  REQUIRE(root != nullptr);
  const std::string to = dir.Sub(name);
  std::filesystem::copy(std::string(root) + "/test/data/" + name, to,
                        std::filesystem::copy_options::recursive);
  return to;
}

uint32_t FormatVersion(leveldb::DB* raw) {
  std::string v;
  REQUIRE(raw->Get(leveldb::ReadOptions(), format::MetaKey("format"), &v).ok());
  std::string_view in = v;
  uint32_t version = 0;
  REQUIRE(coding::GetFixed32(&in, &version));
  return version;
}

uint32_t FormatVersion(Db* db) {
  return FormatVersion(test::Impl(db)->leveldb());
}

// Db::Verify finds nothing wrong in `db`.
void CheckVerifiesClean(Db* db) {
  const VerifyReport report = test::ValueOrDie(db->Verify());
  for (const VerifyProblem& p : report.problems) FAIL_CHECK(p.description);
  CHECK(report.ok());
}

TEST_CASE("a format 1 Db is upgraded on Open and keeps its state") {
  test::TempDir dir;
  const std::string path = CopyTestData(dir, "format1_db");
  {
    auto db = test::ValueOrDie(Db::Open(path));
    CHECK(FormatVersion(db.get()) == format::kFormatVersion);
    Queue* topics = test::ValueOrDie(db->OpenQueue("topics"));
    // Group "g": the 2 tasks in flight at the stop come again (attempt 2),
    // then the 14 messages it never claimed.
    ConsumerGroup* g = test::ValueOrDie(topics->Group("g"));
    std::vector<Task> tasks = test::Drain(g);
    CHECK(tasks.size() == 16);
    int again = 0;
    for (const Task& t : tasks) again += t.attempt == 2 ? 1 : 0;
    CHECK(again == 2);
    // Group "idle" never claimed: all 20.
    CHECK(test::Drain(test::ValueOrDie(topics->Group("idle"))).size() == 20);
    // New messages of the topic layout queue write lane index hints (the
    // groups may have written some: lanes hinted again by a claim).
    const std::string hints = format::QueuePrefix(
        format::kHintTag, static_cast<QueueImpl*>(topics)->id());
    const size_t before = test::CountKeys(db.get(), hints);
    test::ValueOrDie(topics->Put({.topic = "t3", .payload = "new"}));
    CHECK(test::CountKeys(db.get(), hints) == before + 1);
    CHECK(test::Drain(g).size() == 1);
    // The time layout queue: its 5 messages, no hints.
    Queue* log = test::ValueOrDie(db->OpenQueue("log"));
    CHECK(test::Drain(test::ValueOrDie(log->Group("g"))).size() == 5);
    test::ValueOrDie(log->Put({.payload = "x"}));
    CHECK(test::CountKeys(
              db.get(),
              format::QueuePrefix(format::kHintTag,
                                  static_cast<QueueImpl*>(log)->id())) == 0);
    CheckVerifiesClean(db.get());
  }
  // Reopened: still the current version, nothing left to claim.
  auto db = test::ValueOrDie(Db::Open(path));
  CHECK(FormatVersion(db.get()) == format::kFormatVersion);
  Queue* topics = test::ValueOrDie(db->OpenQueue("topics"));
  CHECK(test::Drain(test::ValueOrDie(topics->Group("g"))).empty());
}

TEST_CASE("a Db of a format version newer than this hq is refused") {
  test::TempDir dir;
  const std::string path = CopyTestData(dir, "format1_db");
  {
    leveldb::DB* raw;
    REQUIRE(leveldb::DB::Open(leveldb::Options(), path, &raw).ok());
    std::string v;
    coding::PutFixed32(&v, format::kFormatVersion + 1);
    REQUIRE(
        raw->Put(leveldb::WriteOptions(), format::MetaKey("format"), v).ok());
    delete raw;
  }
  CHECK(absl::IsDataLoss(Db::Open(path).status()));
}

// Format 3 added group start positions (a group record flag), format 4 the
// dead letter reason "rejected", format 5 dropped lane fences; a format 2
// to 4 Db is upgraded by rewriting its format record, and keeps its groups
// and the fences it has (which Verify still checks and readers skip).
TEST_CASE("a format 2 to 10 Db is upgraded to the current version on Open") {
  const uint32_t old_version = GENERATE(2u, 3u, 4u, 5u, 6u, 7u, 8u, 9u, 10u);
  CAPTURE(old_version);
  test::TempDir dir;
  const std::string path = dir.Sub("db");
  uint32_t qid;
  {
    auto db = test::ValueOrDie(Db::Open(path));
    Queue* q = test::ValueOrDie(db->CreateQueue("q", {}));
    qid = static_cast<QueueImpl*>(q)->id();
    HQ_REQUIRE_OK(q->Put({.payload = "a"}).status());
    test::ValueOrDie(q->Group("g"));
  }
  {
    leveldb::DB* raw;
    REQUIRE(leveldb::DB::Open(leveldb::Options(), path, &raw).ok());
    std::string v;
    coding::PutFixed32(&v, old_version);
    leveldb::WriteBatch b;
    b.Put(format::MetaKey("format"), v);
    // The fence a version 4 Db has at the end of the lane.
    std::string lane, fence;
    LayoutCodec::For(Layout::kTime).AppendLanePrefix(&lane, qid, 0, 0, "");
    LayoutCodec::AppendLaneFence(&fence, lane);
    b.Put(fence, "");
    REQUIRE(raw->Write(leveldb::WriteOptions(), &b).ok());
    delete raw;
  }
  auto db = test::ValueOrDie(Db::Open(path));
  CHECK(FormatVersion(db.get()) == format::kFormatVersion);
  CHECK(format::kFormatVersion == 11);
  Queue* q = test::ValueOrDie(db->OpenQueue("q"));
  HQ_REQUIRE_OK(q->Put({.payload = "b"}).status());
  CHECK(test::ScanAll(q).size() == 2);
  CHECK(test::Drain(test::ValueOrDie(q->Group("g"))).size() == 2);
  CheckVerifiesClean(db.get());
}

// Records every delivered payload.
class Payloads : public MessageListener {
 public:
  absl::Status OnMessage(const MessageView& m) override {
    MutexLock l(&mu_);
    got_.emplace_back(m.payload);
    return absl::OkStatus();
  }
  std::vector<std::string> Wait(size_t n) {
    const absl::Time give_up = absl::Now() + absl::Seconds(60);
    for (;;) {
      {
        MutexLock l(&mu_);
        if (got_.size() >= n) return got_;
      }
      REQUIRE(absl::Now() < give_up);  // A liveness bound.
      absl::SleepFor(absl::Milliseconds(1));
    }
  }

 private:
  Mutex mu_;
  std::vector<std::string> got_;
};

std::set<std::string> PayloadSet(const std::vector<Task>& tasks) {
  std::set<std::string> out;
  for (const Task& t : tasks) out.insert(t.payload);
  return out;
}

std::set<std::string> Range(int from, int to) {
  std::set<std::string> out;
  for (int i = from; i < to; ++i) out.insert(absl::StrCat("p", i));
  return out;
}

TEST_CASE("a format 5 Db (single-lane hints) is upgraded and keeps its state") {
  test::TempDir dir;
  Payloads listener;  // Outlives the Db (and the subscription on it).
  const std::string path = CopyTestData(dir, "format5_db");
  {
    // As written: version 5, single-lane hints only.
    leveldb::DB* raw;
    REQUIRE(leveldb::DB::Open(leveldb::Options(), path, &raw).ok());
    CHECK(FormatVersion(raw) == 5);
    std::unique_ptr<leveldb::Iterator> it(raw->NewIterator({}));
    size_t single = 0, other = 0;
    const std::string index(1, format::kHintTag);
    for (it->Seek(index); it->Valid() && it->key().starts_with(index);
         it->Next()) {
      ++(it->key().size() == 1 + 4 + 1 + 8 ? single : other);
    }
    CHECK(single > 0);
    CHECK(other == 0);
    it.reset();
    delete raw;
  }
  auto db = test::ValueOrDie(Db::Open(path));
  CHECK(FormatVersion(db.get()) == format::kFormatVersion);
  CHECK(format::kFormatVersion == 11);
  // Verify reads both kinds of hint, and the lane directory format 7 no
  // longer writes.
  CheckVerifiesClean(db.get());
  Queue* q = test::ValueOrDie(db->OpenQueue("topics"));
  // New messages after the upgrade get list hints; p43 starts a lane of
  // its own, which no lane directory entry lists.
  const std::string dir_prefix =
      format::LaneDirPrefix(static_cast<QueueImpl*>(q)->id());
  const size_t dir_entries = test::CountKeys(db.get(), dir_prefix);
  CHECK(dir_entries > 0);
  for (int i = 40; i < 44; ++i) {
    HQ_REQUIRE_OK(q->Put({.topic = i == 43 ? "new" : absl::StrCat("t", i % 12),
                          .payload = absl::StrCat("p", i),
                          .priority = (i % 12) % 2})
                      .status());
  }
  CHECK(test::CountKeys(db.get(), dir_prefix) == dir_entries);
  // "g" completed 5 of p0..p29 and had 3 in flight: those 3 come again
  // (attempt 2), then everything else, once each.
  std::vector<Task> g = test::Drain(test::ValueOrDie(q->Group("g")));
  CHECK(g.size() == 44 - 5);
  CHECK(PayloadSet(g).size() == g.size());
  CHECK(std::count_if(g.begin(), g.end(),
                      [](const Task& t) { return t.attempt == 2; }) == 3);
  std::set<std::string> want = Range(0, 44);
  // "idle" never claimed: all 44.
  CHECK(PayloadSet(test::Drain(test::ValueOrDie(q->Group("idle")))) == want);
  // A group created now finds every lane by its walk of the message keys,
  // the lane "new" (which no directory entry lists) too; so does a scan.
  CHECK(PayloadSet(test::Drain(test::ValueOrDie(q->Group("fresh")))) == want);
  CHECK(test::ScanAll(q, {.order = ScanOptions::Order::kLane}).size() == 44);
  // "s" delivered p0..p29: it gets p30..p43.
  test::ValueOrDie(q->Subscribe({.name = "s"}, &listener));
  const std::vector<std::string> got = listener.Wait(14);
  CHECK(std::set<std::string>(got.begin(), got.end()) == Range(30, 44));
  // Every consumer read past the old hints: a sweep trims them.
  CHECK(test::ValueOrDie(db->CompactExpired()).hints_trimmed > 0);
  CheckVerifiesClean(db.get());
}

// Tasks of `tasks` with attempt `n`.
size_t Attempts(const std::vector<Task>& tasks, uint32_t n) {
  return std::count_if(tasks.begin(), tasks.end(),
                       [n](const Task& t) { return t.attempt == n; });
}

// Drains groups "g" and "late" of test/data's format 8 and 9 Dbs (40
// messages): the first hand-outs each had in flight at the stop (3 and 2,
// after 5 and 2 completed) come again as second attempts, then the rest,
// none twice.
void DrainGroupsInFlight(Queue* q) {
  struct Case {
    const char* group;
    size_t completed, in_flight;
  };
  for (const Case& c : {Case{"g", 5, 3}, Case{"late", 2, 2}}) {
    INFO(c.group);
    const std::vector<Task> got =
        test::Drain(test::ValueOrDie(q->Group(c.group)));
    CHECK(got.size() == 40 - c.completed);
    CHECK(PayloadSet(got).size() == got.size());
    CHECK(Attempts(got, 2) == c.in_flight);
  }
}

TEST_CASE("a format 8 Db (cursor windows) is upgraded and keeps its state") {
  test::TempDir dir;
  const std::string path = CopyTestData(dir, "format8_db");
  {
    leveldb::DB* raw;
    REQUIRE(leveldb::DB::Open(leveldb::Options(), path, &raw).ok());
    CHECK(FormatVersion(raw) == 8);
    delete raw;
  }
  auto db = test::ValueOrDie(Db::Open(path));
  CHECK(FormatVersion(db.get()) == format::kFormatVersion);
  CheckVerifiesClean(db.get());
  Queue* q = test::ValueOrDie(db->OpenQueue("topics"));
  const std::set<std::string> all = Range(0, 40);
  // Windows in their lanes' cursor records.
  DrainGroupsInFlight(q);
  // The ordered group: in order within each topic.
  ConsumerGroup* o = test::ValueOrDie(q->Group("o", {.ordered = true}));
  std::vector<Task> ordered;
  for (;;) {
    std::vector<Task> t =
        test::ValueOrDie(o->Claim({.max = 2, .consumer = "c"}));
    if (t.empty()) break;
    HQ_REQUIRE_OK(o->Complete(t));
    for (Task& task : t) ordered.push_back(std::move(task));
  }
  CHECK(ordered.size() == 39);
  CHECK(PayloadSet(ordered).size() == 39);
  CHECK(Attempts(ordered, 2) == 1);
  std::map<std::string, int> last;
  for (const Task& t : ordered) {
    const int n = std::stoi(t.payload.substr(1));
    auto [it, fresh] = last.try_emplace(t.topic, n);
    if (!fresh) CHECK(it->second < n);
    it->second = n;
  }
  CHECK(PayloadSet(test::Drain(test::ValueOrDie(q->Group("idle")))) == all);
  CheckVerifiesClean(db.get());
}

// The floors of the source record of consumer `name` of queue "topics"
// (empty for a record written by format 9 code).
std::vector<MessageId> Floors(Db* db, Queue* q, uint32_t consumer_id) {
  std::string v;
  REQUIRE(static_cast<DbImpl*>(db)
              ->leveldb()
              ->Get({},
                    format::SourceKey(static_cast<QueueImpl*>(q)->id(),
                                      consumer_id),
                    &v)
              .ok());
  format::SourceValue source;
  REQUIRE(format::DecodeSource(v, &source));
  return source.floors;
}

TEST_CASE(
    "a format 9 Db (a cursor record per completed lane) is upgraded: its "
    "consumers go on writing them, new ones use walk floors, nothing is "
    "delivered twice or lost") {
  test::TempDir dir;
  const std::string path = CopyTestData(dir, "format9_db");
  {
    leveldb::DB* raw;
    REQUIRE(leveldb::DB::Open(leveldb::Options(), path, &raw).ok());
    CHECK(FormatVersion(raw) == 9);
    delete raw;
  }
  const std::set<std::string> all = Range(0, 40);
  {
    auto db = test::ValueOrDie(Db::Open(path));
    CHECK(FormatVersion(db.get()) == format::kFormatVersion);
    CHECK(format::kFormatVersion == 11);
    CheckVerifiesClean(db.get());
    Queue* q = test::ValueOrDie(db->OpenQueue("topics"));
    // "late" walks the lanes from a format 9 source record: no floors.
    ConsumerGroup* late = test::ValueOrDie(q->Group("late"));
    CHECK(Floors(db.get(), q, static_cast<GroupImpl*>(late)->record().id)
              .empty());
    DrainGroupsInFlight(q);  // Claim records.
    CHECK(PayloadSet(test::Drain(test::ValueOrDie(q->Group("idle")))) == all);
    // A group created now walks with floors, and drains every lane.
    ConsumerGroup* fresh = test::ValueOrDie(q->Group("fresh"));
    CHECK(Floors(db.get(), q, static_cast<GroupImpl*>(fresh)->record().id)
              .size() == 2);
    CHECK(PayloadSet(test::Drain(fresh)) == all);
    CheckVerifiesClean(db.get());
  }
  // After a restart, none hands out an old message again; each hands out
  // the new ones once, old lanes and new.
  auto db = test::ValueOrDie(Db::Open(path));
  Queue* q = test::ValueOrDie(db->OpenQueue("topics"));
  std::set<std::string> later;
  for (int i = 0; i < 16; ++i) {
    const std::string payload = absl::StrCat("n", i);
    HQ_REQUIRE_OK(
        q->Put({.topic = absl::StrCat("t", i), .payload = payload}).status());
    later.insert(payload);
  }
  for (const char* name : {"g", "late", "idle", "fresh"}) {
    INFO(name);
    const std::vector<Task> got = test::Drain(test::ValueOrDie(q->Group(name)));
    CHECK(got.size() == later.size());
    CHECK(PayloadSet(got) == later);
  }
  CheckVerifiesClean(db.get());
}

// What the subscriptions of format10_db and format10_early_db had
// delivered when make_format10_db stopped (it printed them, the same for
// both): "s" had every delivery checkpointed; "late"
// had its first 10 checkpointed and 5 more delivered after; "walker" (of
// queue "single") had every delivery checkpointed.
const std::set<std::string> kSDelivered = {
    "p1",  "p11", "p13", "p15", "p17", "p19", "p21", "p23", "p25", "p27",
    "p29", "p3",  "p31", "p33", "p35", "p37", "p39", "p5",  "p7",  "p9"};
const std::set<std::string> kLateCheckpointed = {"p0", "p1", "p11", "p2", "p3",
                                                 "p4", "p5", "p6",  "p7", "p9"};
const std::set<std::string> kLateDelivered = {"p0",  "p1", "p11", "p13", "p15",
                                              "p17", "p2", "p21", "p23", "p3",
                                              "p4",  "p5", "p6",  "p7",  "p9"};

const std::set<std::string> kWalkerDelivered = {"q0",  "q10", "q11", "q12",
                                                "q13", "q16", "q18", "q19",
                                                "q2",  "q28", "q5",  "q8"};

// Subscribes `name` to `q` with `listener` and returns every payload the
// listener got once the subscription has nothing left: at least
// `at_least`, then no lag past its checkpoints and nothing buffered.
std::vector<std::string> DeliverAll(Queue* q, const std::string& name,
                                    Payloads* listener, size_t at_least,
                                    Subscription** out = nullptr) {
  Subscription* s = test::ValueOrDie(q->Subscribe({.name = name}, listener));
  if (out != nullptr) *out = s;
  listener->Wait(at_least);
  const absl::Time give_up = absl::Now() + absl::Seconds(60);
  for (;;) {
    HQ_REQUIRE_OK(s->Checkpoint());
    const SubscriptionStats st = test::ValueOrDie(s->Stats());
    if (st.lag == 0 && st.lag_exact && st.buffered == 0) break;
    REQUIRE(absl::Now() < give_up);  // A liveness bound.
    absl::SleepFor(absl::Milliseconds(1));
  }
  return listener->Wait(0);
}

// `got` as a set, each payload in it once.
std::set<std::string> Once(const std::vector<std::string>& got) {
  std::set<std::string> out(got.begin(), got.end());
  CHECK(out.size() == got.size());
  return out;
}

// The id of subscription `s`.
uint32_t SubId(Subscription* s) {
  return static_cast<SubscriptionImpl*>(s)->record().id;
}

// format10_db was written by format 10 code whose subscriptions used the
// walk floors, format10_early_db by format 10 code whose subscriptions
// wrote a checkpoint record for every lane they paged in.
TEST_CASE(
    "a format 10 Db (a subscription's walk in progress) is upgraded: each "
    "subscription delivers what it had not, nothing its checkpoints cover, "
    "new ones walk with floors") {
  struct Fixture {
    const char* name;
    size_t walker_records;
  };
  const Fixture fixture =
      GENERATE(Fixture{"format10_db", 0}, Fixture{"format10_early_db", 30});
  CAPTURE(fixture.name);
  test::TempDir dir;
  const std::string path = CopyTestData(dir, fixture.name);
  {
    leveldb::DB* raw;
    REQUIRE(leveldb::DB::Open(leveldb::Options(), path, &raw).ok());
    CHECK(FormatVersion(raw) == 10);
    // The source records of "g", "s" and "late" (queue 1, the only one):
    // one walk in progress in both priorities, "late"'s, with its floors.
    std::unique_ptr<leveldb::Iterator> it(raw->NewIterator({}));
    const std::string prefix = format::QueuePrefix(format::kSourceTag, 1);
    size_t records = 0, walking = 0;
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
         it->Next()) {
      format::SourceValue source;
      REQUIRE(format::DecodeSource(it->value().ToString(), &source));
      ++records;
      const auto n = std::count_if(
          source.priorities.begin(), source.priorities.end(),
          [](const format::SourcePosition& p) { return p.walking; });
      if (n == 0) continue;
      ++walking;
      CHECK(n == 2);
      CHECK(source.floors.size() == 2);
    }
    CHECK(records == 3);
    CHECK(walking == 1);
    // "walker" (of queue 2, "single") delivered 12 lanes whole: with
    // floors, it passed them with no checkpoint record; without, it wrote
    // one for each of the 30 lanes it paged in.
    size_t walker_records = 0;
    const std::string checkpoints =
        format::QueuePrefix(format::kCheckpointTag, 2);
    for (it->Seek(checkpoints);
         it->Valid() && it->key().starts_with(checkpoints); it->Next()) {
      ++walker_records;
    }
    CHECK(walker_records == fixture.walker_records);
    it.reset();
    delete raw;
  }
  const std::set<std::string> all = Range(0, 40);
  // The listeners outlive the Dbs (Subscribe's requirement).
  Payloads s, late, fresh, walker;
  Payloads s_again, late_again, fresh_again, walker_again;
  auto minus = [](std::set<std::string> a, const std::set<std::string>& b) {
    for (const std::string& x : b) a.erase(x);
    return a;
  };
  {
    auto db = test::ValueOrDie(Db::Open(path));
    CHECK(FormatVersion(db.get()) == format::kFormatVersion);
    CHECK(format::kFormatVersion == 11);
    CheckVerifiesClean(db.get());
    Queue* q = test::ValueOrDie(db->OpenQueue("topics"));
    // "s" checkpointed everything it delivered: it gets the rest, once.
    CHECK(Once(DeliverAll(q, "s", &s, 40 - kSDelivered.size())) ==
          minus(all, kSDelivered));
    // "late" stopped in its walk, with 5 deliveries past its checkpoints:
    // it gets everything it had not delivered, at most those 5 again
    // (at least once after the last checkpoint), nothing its checkpoints
    // cover, and each once.
    Subscription* late_sub = nullptr;
    const std::set<std::string> got = Once(
        DeliverAll(q, "late", &late, 40 - kLateDelivered.size(), &late_sub));
    CHECK(Floors(db.get(), q, SubId(late_sub)).size() == 2);
    const std::set<std::string> owed = minus(all, kLateDelivered);
    CHECK(std::includes(got.begin(), got.end(), owed.begin(), owed.end()));
    const std::set<std::string> allowed = minus(all, kLateCheckpointed);
    CHECK(
        std::includes(allowed.begin(), allowed.end(), got.begin(), got.end()));
    // A subscription made now walks with floors and delivers all 40.
    Subscription* fresh_sub = nullptr;
    CHECK(Once(DeliverAll(q, "fresh", &fresh, 40, &fresh_sub)) == all);
    CHECK(Floors(db.get(), q, SubId(fresh_sub)).size() == 2);
    // "walker" delivers the 18 lanes it had not, none of the 12 it passed
    // without checkpoint records.
    std::set<std::string> single_all;
    for (int i = 0; i < 30; ++i) single_all.insert(absl::StrCat("q", i));
    Queue* single = test::ValueOrDie(db->OpenQueue("single"));
    CHECK(Once(DeliverAll(single, "walker", &walker,
                          30 - kWalkerDelivered.size())) ==
          minus(single_all, kWalkerDelivered));
    // "g" had 8 claimed, 5 completed: its 3 in flight come again
    // (attempt 2), then the 32 it never claimed, none twice.
    const std::vector<Task> g = test::Drain(test::ValueOrDie(q->Group("g")));
    CHECK(g.size() == 40 - 5);
    CHECK(PayloadSet(g).size() == g.size());
    CHECK(Attempts(g, 2) == 3);
    CheckVerifiesClean(db.get());
  }
  // After a restart, each subscription delivers the new messages once (old
  // lanes and new ones), and no old one; so does the group.
  auto db = test::ValueOrDie(Db::Open(path));
  CHECK(FormatVersion(db.get()) == format::kFormatVersion);
  Queue* q = test::ValueOrDie(db->OpenQueue("topics"));
  std::set<std::string> later;
  for (int i = 0; i < 16; ++i) {
    const std::string payload = absl::StrCat("n", i);
    HQ_REQUIRE_OK(q->Put({.topic = absl::StrCat("t", i),
                          .payload = payload,
                          .priority = i % 2})
                      .status());
    later.insert(payload);
  }
  for (auto [name, listener] :
       {std::pair{"s", &s_again}, std::pair{"late", &late_again},
        std::pair{"fresh", &fresh_again}}) {
    INFO(name);
    CHECK(Once(DeliverAll(q, name, listener, later.size())) == later);
  }
  CHECK(PayloadSet(test::Drain(test::ValueOrDie(q->Group("g")))) == later);
  // "walker": new messages in lanes it passed and in new lanes.
  Queue* single = test::ValueOrDie(db->OpenQueue("single"));
  std::set<std::string> single_later;
  for (int i = 0; i < 34; i += 3) {
    const std::string payload = absl::StrCat("r", i);
    HQ_REQUIRE_OK(
        single->Put({.topic = absl::StrCat("u", i), .payload = payload})
            .status());
    single_later.insert(payload);
  }
  CHECK(Once(DeliverAll(single, "walker", &walker_again,
                        single_later.size())) == single_later);
  CheckVerifiesClean(db.get());
}

}  // namespace
}  // namespace hq
