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
         Options o = f.options();
         o.bloom_bits_per_key = 41;
         return Db::Open(f.path() + "-x", o).status();
       }},
      {"write buffer", C::kInvalidArgument, "write_buffer_bytes",
       [&] {
         Options o = f.options();
         o.write_buffer_bytes = 1;
         return Db::Open(f.path() + "-x", o).status();
       }},
      {"max open files", C::kInvalidArgument, "max_open_files",
       [&] {
         Options o = f.options();
         o.max_open_files = 1;
         return Db::Open(f.path() + "-x", o).status();
       }},
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
  for (const BadCase& c : cases) {
    INFO(c.what);
    const absl::Status s = c.call();
    INFO(s.ToString());
    CHECK(s.code() == c.code);
    CHECK(absl::StrContains(s.message(), c.message_has));
  }
  CHECK(ScanAll(q) == before);
  CHECK(ValueOrDie(db->ListQueues()) == queues_before);
  f.Reopen();
  CHECK(ScanAll(ValueOrDie(f.db()->OpenQueue("q"))) == before);
}

}  // namespace
}  // namespace hq
