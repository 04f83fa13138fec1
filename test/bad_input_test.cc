// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Every public argument check: each bad call gets the documented status
// code with a message that names the problem, and leaves stored data as it
// was.

#include <functional>

#include "absl/strings/match.h"
#include "test/test_util.h"

namespace hq {
namespace {

using test::DbFixture;
using test::ScanAll;
using test::Storage;
using test::ValueOrDie;

struct BadCase {
  const char* what;
  absl::StatusCode code;
  const char* message_has;  // A substring the message must contain.
  std::function<absl::Status()> call;
};

// Runs each case and checks its code and message.
void CheckCases(const std::vector<BadCase>& cases) {
  for (const BadCase& c : cases) {
    INFO(c.what);
    const absl::Status s = c.call();
    INFO(s.ToString());
    CHECK(s.code() == c.code);
    CHECK(absl::StrContains(s.message(), c.message_has));
  }
}

// Db::Open of a fresh directory beside the fixture's, with the fixture's
// options changed by `edit`.
absl::Status OpenWith(DbFixture& f, const std::function<void(Options&)>& edit) {
  Options o = f.options();
  edit(o);
  return Db::Open(f.path() + "-x", o).status();
}

TEST_CASE("bad input gets a clear status and changes nothing") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(test::StorageName(storage));
  DbFixture f(storage);
  Db* db = f.db();
  Queue* q = ValueOrDie(db->CreateQueue(
      "q", {.partitions = 4, .priorities = 2, .max_payload_bytes = 100}));
  Queue* dropped = ValueOrDie(db->CreateQueue("gone", {}));
  HQ_REQUIRE_OK(db->DropQueue("gone"));
  for (int i = 0; i < 20; ++i) {
    HQ_REQUIRE_OK(q->Put({.topic = "t", .payload = "keep"}).status());
  }
  const auto before = ScanAll(q);
  const auto queues_before = ValueOrDie(db->ListQueues());

  const std::string big_payload(101, 'x');
  const std::string big_topic(1025, 't');
  const std::string big_key(1025, 'k');
  const std::string long_name(129, 'n');
  using C = absl::StatusCode;
  auto put = [&](Message m) { return q->Put(m).status(); };
  std::vector<BadCase> cases = {
      // Db::Open
      {"empty path", C::kInvalidArgument, "path",
       [&] { return Db::Open("").status(); }},
      {"bloom bits", C::kInvalidArgument, "bloom_bits_per_key",
       [&] {
         return OpenWith(f, [](Options& o) { o.bloom_bits_per_key = 41; });
       }},
      {"write buffer", C::kInvalidArgument, "write_buffer_bytes",
       [&] {
         return OpenWith(f, [](Options& o) { o.write_buffer_bytes = 1; });
       }},
      {"max open files", C::kInvalidArgument, "max_open_files",
       [&] { return OpenWith(f, [](Options& o) { o.max_open_files = 1; }); }},
      {"second opener", C::kFailedPrecondition, "already open",
       [&] { return Db::Open(f.path(), f.options()).status(); }},
      // Catalog
      {"empty name", C::kInvalidArgument, "empty",
       [&] { return db->CreateQueue("", {}).status(); }},
      {"long name", C::kInvalidArgument, "longer than",
       [&] { return db->CreateQueue(long_name, {}).status(); }},
      {"bad character", C::kInvalidArgument, "character",
       [&] { return db->CreateQueue("a/b", {}).status(); }},
      {"leading dot", C::kInvalidArgument, "start with",
       [&] { return db->CreateQueue(".a", {}).status(); }},
      {"zero partitions", C::kInvalidArgument, "partitions",
       [&] { return db->CreateQueue("n", {.partitions = 0}).status(); }},
      {"too many partitions", C::kInvalidArgument, "partitions",
       [&] { return db->CreateQueue("n", {.partitions = 65536}).status(); }},
      {"zero priorities", C::kInvalidArgument, "priorities",
       [&] { return db->CreateQueue("n", {.priorities = 0}).status(); }},
      {"too many priorities", C::kInvalidArgument, "priorities",
       [&] { return db->CreateQueue("n", {.priorities = 257}).status(); }},
      {"bad ttl", C::kInvalidArgument, "ttl",
       [&] {
         return db->CreateQueue("n", {.ttl = absl::ZeroDuration()}).status();
       }},
      {"bad payload limit", C::kInvalidArgument, "max_payload_bytes",
       [&] { return db->CreateQueue("n", {.max_payload_bytes = 0}).status(); }},
      {"existing queue", C::kAlreadyExists, "already exists",
       [&] { return db->CreateQueue("q", {}).status(); }},
      {"unknown queue", C::kNotFound, "no queue named 'nope'",
       [&] { return db->OpenQueue("nope").status(); }},
      {"open bad name", C::kInvalidArgument, "character",
       [&] { return db->OpenQueue("a b").status(); }},
      {"drop unknown", C::kNotFound, "no queue named",
       [&] { return db->DropQueue("nope"); }},
      {"drop bad name", C::kInvalidArgument, "empty",
       [&] { return db->DropQueue(""); }},
      // Put
      {"payload over limit", C::kInvalidArgument, "max_payload_bytes 100",
       [&] { return put({.payload = big_payload}); }},
      {"topic over limit", C::kInvalidArgument, "topic of 1025 bytes",
       [&] { return put({.topic = big_topic}); }},
      {"key over limit", C::kInvalidArgument, "key of 1025 bytes",
       [&] { return put({.key = big_key}); }},
      {"partition out of range", C::kInvalidArgument, "partition 4",
       [&] { return put({.partition = 4}); }},
      {"negative priority", C::kInvalidArgument, "priority -1",
       [&] { return put({.priority = -1}); }},
      {"priority out of range", C::kInvalidArgument, "priority 2",
       [&] { return put({.priority = 2}); }},
      {"put on dropped queue", C::kNotFound, "dropped",
       [&] { return dropped->Put({}).status(); }},
      {"batch with one bad message", C::kInvalidArgument, "message 2",
       [&] {
         std::vector<Message> b(3, Message{.payload = "ok"});
         b[2].partition = 9;
         return q->PutBatch(b, nullptr);
       }},
      {"batch on dropped queue", C::kNotFound, "dropped",
       [&] {
         std::vector<Message> b(1);
         return dropped->PutBatch(b, nullptr);
       }},
      // NewScanner
      {"scan partition out of range", C::kInvalidArgument, "partitions",
       [&] {
         return q->NewScanner({.partitions = {0, 4}}).status();
       }},
      {"scan topic over limit", C::kInvalidArgument, "topic",
       [&] { return q->NewScanner({.topics = {big_topic}}).status(); }},
      {"scan from after to", C::kInvalidArgument, "after",
       [&] {
         return q->NewScanner({.from = MessageId{5, 0}, .to = MessageId{4, 0}})
             .status();
       }},
      {"scan from above kMaxMs", C::kInvalidArgument, "kMaxMs",
       [&] {
         return q
             ->NewScanner({.from = MessageId{MessageId::kMaxMs + 1, 0},
                           .to = MessageId{MessageId::kMaxMs + 2, 0}})
             .status();
       }},
      {"scan to above kMaxMs", C::kInvalidArgument, "kMaxMs",
       [&] {
         return q->NewScanner({.to = MessageId{MessageId::kMaxMs + 1, 0}})
             .status();
       }},
      {"scan bad order", C::kInvalidArgument, "order",
       [&] {
         return q->NewScanner({.order = static_cast<ScanOptions::Order>(9)})
             .status();
       }},
      {"scan dropped queue", C::kNotFound, "dropped",
       [&] { return dropped->NewScanner({}).status(); }},
  };
  CheckCases(cases);
  CHECK(ScanAll(q) == before);
  CHECK(ValueOrDie(db->ListQueues()) == queues_before);
  f.Reopen();
  CHECK(ScanAll(ValueOrDie(f.db()->OpenQueue("q"))) == before);
}

// The listener of the subscriptions the table below makes: takes anything.
class NullListener : public MessageListener {
 public:
  absl::Status OnMessage(const MessageView&) override {
    return absl::OkStatus();
  }
};

TEST_CASE("bad input to groups, subscriptions, leases and inspection") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(test::StorageName(storage));
  // Outlives the Db, as Subscribe requires: the Db delivers until it closes.
  NullListener listener;
  DbFixture f(storage);
  Db* db = f.db();
  Queue* q = ValueOrDie(db->CreateQueue("q", {.partitions = 4}));
  Queue* time_q = ValueOrDie(db->CreateQueue("tq", {.partitions = 2}));
  for (int i = 0; i < 10; ++i) {
    HQ_REQUIRE_OK(q->Put({.topic = "t", .payload = "keep"}).status());
  }
  ConsumerGroup* g = ValueOrDie(q->Group("g"));
  ConsumerGroup* ordered = ValueOrDie(time_q->Group("o", {.ordered = true}));
  HQ_REQUIRE_OK(q->Subscribe({.name = "s"}, &listener).status());
  // A task held by g, and one g never handed out.
  std::vector<Task> held = ValueOrDie(g->Claim({.max = 1}));
  REQUIRE(held.size() == 1);
  Task foreign = held[0];
  foreign.id = MessageId{1, 1};
  const auto before = ScanAll(q);
  const GroupStats stats_before = ValueOrDie(g->Stats());

  const std::string big_topic(1025, 't');
  const std::string long_name(129, 'n');
  std::vector<std::string> many_topics;
  for (int i = 0; i < 1025; ++i) many_topics.push_back(absl::StrCat("t", i));
  using C = absl::StatusCode;
  std::vector<BadCase> cases = {
      // Message fields beyond the table above.
      {"negative delay", C::kInvalidArgument, "delay",
       [&] { return q->Put({.delay = absl::Seconds(-1)}).status(); }},
      {"infinite delay", C::kInvalidArgument, "delay",
       [&] { return q->Put({.delay = absl::InfiniteDuration()}).status(); }},
      {"dedup key over limit", C::kInvalidArgument, "dedup",
       [&] {
         const std::string k(1025, 'd');
         return q->Put({.dedup_key = k}).status();
       }},
      // Options of Db::Open not in the table above.
      {"delivery threads", C::kInvalidArgument, "delivery_threads",
       [&] { return OpenWith(f, [](Options& o) { o.delivery_threads = 0; }); }},
      {"status interval too short", C::kInvalidArgument, "status_interval",
       [&] {
         return OpenWith(
             f, [](Options& o) { o.status_interval = absl::Milliseconds(99); });
       }},
      {"status interval too long", C::kInvalidArgument, "status_interval",
       [&] {
         return OpenWith(
             f, [](Options& o) { o.status_interval = absl::Hours(25); });
       }},
      {"ttl sweep batch", C::kInvalidArgument, "ttl_sweep_batch",
       [&] { return OpenWith(f, [](Options& o) { o.ttl_sweep_batch = 0; }); }},
      {"scanner lease", C::kInvalidArgument, "scanner_lease",
       [&] {
         return OpenWith(
             f, [](Options& o) { o.scanner_lease = absl::ZeroDuration(); });
       }},
      // Queue::Group
      {"group bad name", C::kInvalidArgument, "character",
       [&] { return q->Group("a/b").status(); }},
      {"group long name", C::kInvalidArgument, "longer than",
       [&] { return q->Group(long_name).status(); }},
      {"group lease", C::kInvalidArgument, "lease",
       [&] {
         return q->Group("g2", {.lease = absl::ZeroDuration()}).status();
       }},
      {"group max attempts", C::kInvalidArgument, "max_attempts",
       [&] { return q->Group("g2", {.max_attempts = 0}).status(); }},
      {"group backoff", C::kInvalidArgument, "backoff",
       [&] {
         return q
             ->Group("g2", {.backoff_base = absl::Minutes(10),
                            .backoff_cap = absl::Minutes(1)})
             .status();
       }},
      {"group jitter", C::kInvalidArgument, "jitter",
       [&] { return q->Group("g2", {.backoff_jitter = 2}).status(); }},
      {"group no active lanes", C::kInvalidArgument, "max_active_lanes",
       [&] { return q->Group("g2", {.max_active_lanes = 0}).status(); }},
      {"group too many active lanes", C::kInvalidArgument, "max_active_lanes",
       [&] {
         return q->Group("g2", {.max_active_lanes = (size_t{1} << 24) + 1})
             .status();
       }},
      {"group start not a Start", C::kInvalidArgument, "start",
       [&] {
         return q->Group("g2", {.start = static_cast<GroupOptions::Start>(7)})
             .status();
       }},
      {"group start time infinite", C::kInvalidArgument, "start_time",
       [&] {
         return q
             ->Group("g2", {.start = GroupOptions::Start::kTime,
                            .start_time = absl::InfinitePast()})
             .status();
       }},
      {"group start id past the last ms", C::kInvalidArgument, "start_id",
       [&] {
         return q
             ->Group("g2", {.start = GroupOptions::Start::kId,
                            .start_id = MessageId{MessageId::kMaxMs + 1, 0}})
             .status();
       }},
      {"group pacing in flight over limit", C::kInvalidArgument,
       "max_in_flight",
       [&] {
         GroupOptions o;
         o.pacing.max_in_flight = 1000001;
         return q->Group("g2", o).status();
       }},
      {"group pacing negative interval", C::kInvalidArgument, "interval",
       [&] {
         GroupOptions o;
         o.pacing.interval = absl::Seconds(-1);
         return q->Group("g2", o).status();
       }},
      {"topic pacing interval over limit", C::kInvalidArgument, "interval",
       [&] { return g->SetTopicPacing("t", {.interval = absl::Hours(721)}); }},
      {"topic pacing topic over limit", C::kInvalidArgument, "topic",
       [&] { return g->SetTopicPacing(big_topic, {}); }},
      {"topic pacing read of a topic over limit", C::kInvalidArgument, "topic",
       [&] { return g->GetTopicPacing(big_topic).status(); }},
      {"topic pacing clear of a topic over limit", C::kInvalidArgument, "topic",
       [&] { return g->ClearTopicPacing(big_topic); }},
      {"group topic over limit", C::kInvalidArgument, "topic",
       [&] { return q->Group("g2", {.topics = {big_topic}}).status(); }},
      {"group over 1024 topics", C::kInvalidArgument,
       "GroupOptions::topics holds 1025 topics; the limit is 1024",
       [&] { return q->Group("g2", {.topics = many_topics}).status(); }},
      {"group other topics", C::kInvalidArgument, "topic",
       [&] { return q->Group("g", {.topics = {"x"}}).status(); }},
      // Claim
      {"claim max 0", C::kInvalidArgument, "max",
       [&] { return g->Claim({.max = 0}).status(); }},
      {"claim max over limit", C::kInvalidArgument, "max",
       [&] { return g->Claim({.max = 10001}).status(); }},
      {"claim negative lease", C::kInvalidArgument, "lease",
       [&] { return g->Claim({.lease = absl::Seconds(-1)}).status(); }},
      {"claim partition out of range", C::kInvalidArgument, "partition",
       [&] { return g->Claim({.partitions = {4}}).status(); }},
      {"claim topic over limit", C::kInvalidArgument, "topic",
       [&] { return g->Claim({.topics = {big_topic}}).status(); }},
      {"claim negative wait", C::kInvalidArgument, "wait",
       [&] { return g->Claim({.wait = absl::Seconds(-1)}).status(); }},
      {"ordered claim without consumer", C::kInvalidArgument, "consumer",
       [&] { return ordered->Claim({}).status(); }},
      {"ordered claim with topics in the time layout", C::kInvalidArgument,
       "topic",
       [&] {
         return ordered->Claim({.topics = {"t"}, .consumer = "c"}).status();
       }},
      // ListPending
      {"pending max 0", C::kInvalidArgument, "max",
       [&] { return g->ListPending(0).status(); }},
      {"pending max over 10000", C::kInvalidArgument, "max",
       [&] { return g->ListPending(10001).status(); }},
      {"pending after a partition out of range", C::kInvalidArgument,
       "partition",
       [&] {
         PendingTask after{.partition = 4};
         return g->ListPending(10, &after).status();
       }},
      // Complete, Release, Extend
      {"complete duplicates", C::kInvalidArgument, "",
       [&] {
         std::vector<Task> twice = {held[0], held[0]};
         return g->Complete(twice);
       }},
      {"complete not held", C::kFailedPrecondition, "",
       [&] { return g->Complete(std::span<const Task>(&foreign, 1)); }},
      {"release negative delay", C::kInvalidArgument, "",
       [&] { return g->Release(held[0], absl::Seconds(-1)); }},
      {"release not held", C::kFailedPrecondition, "",
       [&] { return g->Release(foreign, absl::ZeroDuration()); }},
      {"extend zero lease", C::kInvalidArgument, "lease",
       [&] {
         Task t = held[0];
         return g->Extend(&t, absl::ZeroDuration());
       }},
      {"extend not held", C::kFailedPrecondition, "",
       [&] { return g->Extend(&foreign, absl::Seconds(1)); }},
      // Leave, dead letters
      {"leave unordered", C::kFailedPrecondition, "ordered",
       [&] { return g->Leave("c"); }},
      {"leave unknown consumer", C::kNotFound, "",
       [&] { return ordered->Leave("nobody"); }},
      {"list dead letters max 0", C::kInvalidArgument, "max",
       [&] { return g->ListDeadLetters(0).status(); }},
      {"requeue unknown letter", C::kNotFound, "",
       [&] {
         DeadLetter d;
         d.partition = 0;
         d.id = MessageId{1, 0};
         return g->Requeue(std::span<const DeadLetter>(&d, 1), nullptr);
       }},
      // Subscribe, Unsubscribe
      {"subscribe without name", C::kInvalidArgument, "empty",
       [&] { return q->Subscribe({}, &listener).status(); }},
      {"subscribe without listener", C::kInvalidArgument, "listener",
       [&] { return q->Subscribe({.name = "s2"}, nullptr).status(); }},
      {"subscribe partition out of range", C::kInvalidArgument, "partition",
       [&] {
         return q->Subscribe({.name = "s2", .partitions = {4}}, &listener)
             .status();
       }},
      {"subscribe topic over limit", C::kInvalidArgument, "topic",
       [&] {
         return q->Subscribe({.name = "s2", .topics = {big_topic}}, &listener)
             .status();
       }},
      {"subscribe over 1024 topics", C::kInvalidArgument,
       "SubscribeOptions::topics holds 1025 topics; the limit is 1024",
       [&] {
         return q->Subscribe({.name = "s2", .topics = many_topics}, &listener)
             .status();
       }},
      {"subscribe no active lanes", C::kInvalidArgument, "max_active_lanes",
       [&] {
         return q->Subscribe({.name = "s2", .max_active_lanes = 0}, &listener)
             .status();
       }},
      {"subscribe too many active lanes", C::kInvalidArgument,
       "max_active_lanes",
       [&] {
         return q
             ->Subscribe(
                 {.name = "s2", .max_active_lanes = (size_t{1} << 24) + 1},
                 &listener)
             .status();
       }},
      {"subscribe checkpoint_messages 0", C::kInvalidArgument,
       "checkpoint_messages",
       [&] {
         return q
             ->Subscribe({.name = "s2", .checkpoint_messages = 0}, &listener)
             .status();
       }},
      {"subscribe buffer_messages 0", C::kInvalidArgument, "buffer_messages",
       [&] {
         return q->Subscribe({.name = "s2", .buffer_messages = 0}, &listener)
             .status();
       }},
      {"subscribe retry base above cap", C::kInvalidArgument, "retry",
       [&] {
         return q
             ->Subscribe({.name = "s2",
                          .retry_base = absl::Seconds(10),
                          .retry_cap = absl::Seconds(1)},
                         &listener)
             .status();
       }},
      {"subscribe again with other topics", C::kInvalidArgument, "",
       [&] {
         return q->Subscribe({.name = "s", .topics = {"x"}}, &listener)
             .status();
       }},
      {"unsubscribe unknown", C::kNotFound, "",
       [&] { return q->Unsubscribe("nope"); }},
      {"unsubscribe bad name", C::kInvalidArgument, "",
       [&] { return q->Unsubscribe("a b"); }},
      // Inspection
      {"inspect unknown group", C::kNotFound, "no consumer group 'nope'",
       [&] { return q->InspectGroup("nope").status(); }},
      {"inspect group bad name", C::kInvalidArgument, "",
       [&] { return q->InspectGroup("").status(); }},
      {"inspect unknown subscription", C::kNotFound, "no subscription 'nope'",
       [&] { return q->InspectSubscription("nope").status(); }},
      // Leases
      {"lease negative duration", C::kInvalidArgument, "",
       [&] { return db->leases()->Create(absl::Seconds(-1), [] {}).status(); }},
      {"lease without action", C::kInvalidArgument, "",
       [&] {
         return db->leases()->Create(absl::Seconds(1), nullptr).status();
       }},
      {"renew unknown lease", C::kNotFound, "",
       [&] { return db->leases()->Renew(987654321, absl::Seconds(1)); }},
      {"cancel unknown lease", C::kNotFound, "",
       [&] { return db->leases()->Cancel(987654321); }},
  };
  CheckCases(cases);
  // Nothing changed: the messages, the group's state, the held task.
  CHECK(ScanAll(q) == before);
  const GroupStats stats_after = ValueOrDie(g->Stats());
  CHECK(stats_after.in_flight == stats_before.in_flight);
  CHECK(stats_after.backlog == stats_before.backlog);
  HQ_REQUIRE_OK(g->Complete(held));
  CHECK(ValueOrDie(q->ListGroups()) == std::vector<std::string>{"g"});
  CHECK(ValueOrDie(q->ListSubscriptions()) == std::vector<std::string>{"s"});
}

}  // namespace
}  // namespace hq
