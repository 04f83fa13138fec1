// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Verify: a clean Db reports nothing; every kind of problem it reports
// is found when a record of that kind is damaged through raw LevelDB.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "catch2/catch.hpp"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "test/sample_db.h"
#include "test/test_util.h"

namespace hq::test {
namespace {

std::string Hex(const std::string& key) { return absl::BytesToHexString(key); }

// One kind of damage: `damage` writes (or deletes) records in `b` and
// returns the key Verify must name; `expect` is part of its description.
struct Damage {
  const char* expect;
  std::function<std::string(const Ids&, leveldb::WriteBatch*)> damage;
};

std::string Put(leveldb::WriteBatch* b, const std::string& k,
                const std::string& v) {
  b->Put(k, v);
  return k;
}

std::vector<Damage> AllDamage() {
  const std::string junk = "\x09junk";
  std::vector<Damage> d;
  auto add = [&](const char* expect, auto fn) { d.push_back({expect, fn}); };
  add("unknown record tag 0x7f", [](const Ids&, auto* b) {
    return Put(b,
               "\x7f"
               "x",
               "v");
  });
  add("empty key", [](const Ids&, auto* b) { return Put(b, "", "v"); });
  add("unknown metadata record", [](const Ids&, auto* b) {
    return Put(b, format::MetaKey("bogus"), "v");
  });
  add("malformed metadata value (next_group_id)", [](const Ids&, auto* b) {
    return Put(b, format::MetaKey("next_group_id"), "x");
  });
  add("malformed catalog key", [](const Ids& ids, auto* b) {
    // (Its id, q's, is also reported as used twice.)
    return Put(b, format::CatalogKey("-bad"),
               format::EncodeQueueRecord(ids.q_record));
  });
  add("malformed catalog value", [junk](const Ids&, auto* b) {
    return Put(b, format::CatalogKey("zz"), junk);
  });
  add("at or above next_queue_id", [](const Ids& ids, auto* b) {
    format::QueueRecord r = ids.q_record;
    r.id = 999;
    return Put(b, format::CatalogKey("zz"), format::EncodeQueueRecord(r));
  });
  add("used by queues", [](const Ids& ids, auto* b) {
    return Put(b, format::CatalogKey("zz"),
               format::EncodeQueueRecord(ids.q_record));
  });
  add("reservation of queue id 500, which is not in the catalog",
      [](const Ids&, auto* b) {
        return Put(b, format::ReserveKey(500, 0), Fixed64(1));
      });
  add("malformed reservation key (too short)",
      [](const Ids&, auto* b) { return Put(b, "\x02\x01", "v"); });
  add("malformed reservation key", [](const Ids& ids, auto* b) {
    return Put(b, format::ReserveKey(ids.q, 0) + "x", Fixed64(1));
  });
  add("reservation key: partition 7 out of range", [](const Ids& ids, auto* b) {
    return Put(b, format::ReserveKey(ids.q, 7), Fixed64(1));
  });
  add("malformed reservation value", [](const Ids& ids, auto* b) {
    return Put(b, format::ReserveKey(ids.q, 1), "x");
  });
  add("malformed lane directory key", [](const Ids& ids, auto* b) {
    std::string k;
    LayoutCodec::AppendHead(&k, ids.t, 0, 0);  // No topic: not a topic lane.
    k[0] = format::kLaneDirTag;
    return Put(b, k, "");
  });
  add("lane directory key: priority 5 out of range",
      [](const Ids& ids, auto* b) {
        std::string k;
        LayoutCodec::AppendHead(&k, ids.q, 0, 5);
        k[0] = format::kLaneDirTag;
        return Put(b, k, "");
      });
  add("malformed lane directory value", [](const Ids& ids, auto* b) {
    std::string k;
    format::AppendLaneDirKey(&k, ids.q_lane);
    return Put(b, k, "x");
  });
  add("TTL index record does not match the catalog",
      [](const Ids& ids, auto* b) {
        return Put(b, format::TtlKey(ids.q), "q");
      });
  add("has a TTL but no TTL index record", [](const Ids& ids, auto* b) {
    b->Delete(format::TtlKey(ids.t));
    return format::TtlKey(ids.t);
  });
  add("malformed TTL index key", [](const Ids& ids, auto* b) {
    return Put(b, format::TtlKey(ids.t) + "x", "t");
  });
  add("malformed group key", [](const Ids& ids, auto* b) {
    return Put(b, format::GroupKey(ids.q, "-g"),
               format::EncodeGroupRecord({.id = 77}));
  });
  add("malformed group value", [junk](const Ids& ids, auto* b) {
    return Put(b, format::GroupKey(ids.q, "h"), junk);
  });
  add("group id 999 at or above next_group_id", [](const Ids& ids, auto* b) {
    return Put(b, format::GroupKey(ids.q, "h"),
               format::EncodeGroupRecord({.id = 999}));
  });
  add("already used by another group or subscription",
      [](const Ids& ids, auto* b) {
        return Put(b, format::GroupKey(ids.q, "h"),
                   format::EncodeGroupRecord({.id = ids.g}));
      });
  add("malformed subscription key", [](const Ids& ids, auto* b) {
    return Put(b, format::SubKey(ids.q, "_s"),
               format::EncodeSubRecord({.id = 78}));
  });
  add("malformed subscription value", [junk](const Ids& ids, auto* b) {
    return Put(b, format::SubKey(ids.q, "s2"), junk);
  });
  add("subscription value: partition 9 out of range",
      [](const Ids& ids, auto* b) {
        return Put(b, format::SubKey(ids.q, "s2"),
                   format::EncodeSubRecord({.id = 79, .partitions = {9}}));
      });
  add("group of queue id 600, which is not in the catalog",
      [](const Ids&, auto* b) {
        return Put(b, format::GroupKey(600, "g"),
                   format::EncodeGroupRecord({.id = 80}));
      });
  add("cursor of group id 77, which queue 'q' does not have",
      [](const Ids& ids, auto* b) {
        return Put(b, CursorKey(ids, 77, ids.q_lane_rest),
                   format::EncodeCursor({}));
      });
  add("parked lane of group id 77, which queue 'q' does not have",
      [](const Ids& ids, auto* b) {
        return Put(b, format::ParkPrefix(ids.q, 77) + ids.q_lane_rest, "");
      });
  add("malformed parked lane key", [](const Ids& ids, auto* b) {
    return Put(b, format::ParkPrefix(ids.q, ids.g) + "\x00", "");
  });
  add("malformed parked lane value (not empty)", [](const Ids& ids, auto* b) {
    return Put(b, format::ParkPrefix(ids.q, ids.g) + ids.q_lane_rest, "x");
  });
  add("malformed cursor key", [](const Ids& ids, auto* b) {
    return Put(b, CursorKey(ids, ids.g, "\x00"), format::EncodeCursor({}));
  });
  add("malformed cursor value", [junk](const Ids& ids, auto* b) {
    return Put(b, CursorKey(ids, ids.g, ids.q_lane_rest), junk);
  });
  add("malformed cursor value", [](const Ids& ids, auto* b) {  // done > scan
    return Put(b, CursorKey(ids, ids.g, ids.q_lane_rest),
               format::EncodeCursor(
                   {.scan = MessageId{5, 0}, .done = MessageId{6, 0}}));
  });
  add("beyond the lane end", [](const Ids& ids, auto* b) {
    return Put(
        b, CursorKey(ids, ids.g, ids.q_lane_rest),
        format::EncodeCursor({.scan = MessageId{ids.now_ms + 3600000, 0}}));
  });
  add("malformed task key (too short)", [](const Ids& ids, auto* b) {
    return Put(b,
               format::GroupRecordPrefix(format::kTaskTag, ids.q, ids.g) + "x",
               format::EncodeTask({}));
  });
  add("malformed task value", [junk](const Ids& ids, auto* b) {
    std::string k = format::GroupRecordPrefix(format::kTaskTag, ids.q, ids.g) +
                    ids.q_lane_rest;
    LayoutCodec::AppendMessageId(&k, MessageId{1, 0});
    return Put(b, k, junk);
  });
  add("task key: partition 4 out of range", [](const Ids& ids, auto* b) {
    std::string lane;
    LayoutCodec::AppendHead(&lane, ids.q, 4, 0);
    std::string k = format::GroupRecordPrefix(format::kTaskTag, ids.q, ids.g) +
                    lane.substr(5);
    LayoutCodec::AppendMessageId(&k, MessageId{1, 0});
    return Put(b, k, format::EncodeTask({}));
  });
  add("malformed dead letter key", [](const Ids& ids, auto* b) {
    return Put(b,
               format::GroupRecordPrefix(format::kDeadTag, ids.q, ids.g) + "x",
               format::EncodeDead({.reason = 1}));
  });
  add("malformed dead letter value", [](const Ids& ids, auto* b) {
    std::string k = format::GroupRecordPrefix(format::kDeadTag, ids.q, ids.g);
    coding::PutFixed16(&k, 0);
    LayoutCodec::AppendMessageId(&k, MessageId{1, 0});
    return Put(b, k, format::EncodeDead({.reason = 9}));
  });
  add("out of range of queue 'q'", [](const Ids& ids, auto* b) {
    std::string k = format::GroupRecordPrefix(format::kDeadTag, ids.q, ids.g);
    coding::PutFixed16(&k, 0);
    LayoutCodec::AppendMessageId(&k, MessageId{1, 0});
    return Put(b, k,
               format::EncodeDead({.original_partition = 8, .reason = 1}));
  });
  add("malformed dedup value", [junk](const Ids& ids, auto* b) {
    return Put(b, format::DedupKey(ids.q, "d0"), junk);
  });
  add("dedup value: partition 3 out of range", [](const Ids& ids, auto* b) {
    return Put(b, format::DedupKey(ids.q, "d0"),
               format::EncodeDedup(3, MessageId{1, 0}));
  });
  add("dedup key over 1024 bytes", [](const Ids& ids, auto* b) {
    return Put(b, format::DedupKey(ids.q, std::string(1025, 'd')),
               format::EncodeDedup(0, MessageId{1, 0}));
  });
  add("checkpoint of subscription id 55, which queue 'q' does not have",
      [](const Ids& ids, auto* b) {
        return Put(
            b,
            format::GroupRecordPrefix(format::kCheckpointTag, ids.q, 55) +
                ids.q_lane_rest,
            format::EncodeCheckpoint({}));
      });
  add("malformed checkpoint value", [junk](const Ids& ids, auto* b) {
    return Put(b,
               format::GroupRecordPrefix(format::kCheckpointTag, ids.q, ids.s) +
                   ids.q_lane_rest,
               junk);
  });
  add("message of queue id 500, which is not in the catalog",
      [](const Ids&, auto* b) {
        std::string k;
        LayoutCodec::For(Layout::kTime)
            .AppendMessageKey(&k, 500, 0, 0, "", MessageId{1, 0});
        return Put(b, k, "");
      });
  add("malformed message key: not a key of queue 't' (topic layout)",
      [](const Ids& ids, auto* b) {
        std::string k;
        LayoutCodec::For(Layout::kTopic)
            .AppendMessageKey(&k, ids.t, 0, 0, "x", MessageId{1, 0});
        return Put(b, k + "extra", "");
      });
  add("message key: partition 2 out of range", [](const Ids& ids, auto* b) {
    std::string k;
    LayoutCodec::For(Layout::kTime)
        .AppendMessageKey(&k, ids.q, 2, 0, "", MessageId{1, 0});
    return Put(b, k, "");
  });
  add("malformed message value",
      [](const Ids& ids, auto* b) { return Put(b, ids.q_first, "\x07"); });
  add("at or above its partition's reservation", [](const Ids& ids, auto* b) {
    std::string k = ids.q_lane;
    LayoutCodec::AppendMessageId(&k, MessageId{MessageId::kMaxMs - 5, 0});
    std::string v;
    format::AppendMessageValue(&v, "", "p");
    return Put(b, k, v);
  });
  add("message in a partition without an id reservation",
      [](const Ids& ids, auto* b) {
        b->Delete(format::ReserveKey(ids.q, 0));
        return ids.q_first;
      });
  add("malformed lane head value",
      [](const Ids& ids, auto* b) { return Put(b, ids.q_lane, "x"); });
  add("malformed lane fence", [](const Ids& ids, auto* b) {
    std::string k;
    LayoutCodec::AppendLaneFence(&k, ids.q_lane);
    return Put(b, k, "x");
  });
  return d;
}

TEST_CASE("Verify finds nothing wrong in a clean Db") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  PopulateSample(f.db());
  VerifyReport report = ValueOrDie(f.db()->Verify());
  for (const VerifyProblem& p : report.problems) {
    INFO(p.key_hex << ": " << p.description);
  }
  CHECK(report.ok());
  CHECK(report.problems.empty());
  CHECK(report.queues == 3);  // q, t and q.dead.g.
  CHECK(report.messages == 10 + 3 + 6 + 1);
  CHECK(report.keys > report.messages);
  // Also after a reopen (the in-flight task becomes a dead letter), a
  // sweep and a full compaction.
  f.Reopen();
  ValueOrDie(
      ValueOrDie(f.db()->OpenQueue("q"))->Group("g", {.max_attempts = 1}));
  f.clock().Advance(absl::Hours(2));  // Every message of t expires.
  const SweepStats swept = ValueOrDie(f.db()->CompactAll());
  CHECK(swept.deleted == 6);
  report = ValueOrDie(f.db()->Verify());
  for (const VerifyProblem& p : report.problems) {
    INFO(p.key_hex << ": " << p.description);
  }
  CHECK(report.ok());
  CHECK(report.messages >= 10 + 3 + 1);  // t's expired; 1 or 2 dead letters.
}

TEST_CASE("Verify reports each kind of damaged record, naming its key") {
  const std::vector<Damage> all = AllDamage();
  for (const Damage& d : all) {
    DYNAMIC_SECTION(d.expect) {
      DbFixture f(Storage::kDisk, NoBackgroundSweeps());
      PopulateSample(f.db());
      const Ids ids = ReadIds(f.db(), f.clock().Now());
      f.Close();
      std::string key;
      {
        leveldb::DB* raw = nullptr;
        REQUIRE(leveldb::DB::Open(leveldb::Options(), f.path(), &raw).ok());
        std::unique_ptr<leveldb::DB> owned(raw);
        leveldb::WriteBatch b;
        key = d.damage(ids, &b);
        REQUIRE(raw->Write(leveldb::WriteOptions(), &b).ok());
      }
      f.Reopen();
      const VerifyReport report = ValueOrDie(f.db()->Verify());
      bool found = false;
      for (const VerifyProblem& p : report.problems) {
        UNSCOPED_INFO(p.key_hex << ": " << p.description);
        if (p.key_hex == Hex(key) &&
            absl::StrContains(p.description, d.expect)) {
          found = true;
        }
      }
      CHECK_FALSE(report.ok());
      CHECK(report.problem_count >= 1);
      CHECK(found);
    }
  }
}

TEST_CASE("Verify walks a bigger Db with groups and TTL sweeps cleanly") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("big", {.partitions = 4,
                                                    .priorities = 3,
                                                    .ttl = absl::Hours(1),
                                                    .layout = Layout::kTopic}));
  std::vector<Message> batch;
  std::vector<std::string> topics, payloads;
  for (int round = 0; round < 20; ++round) {
    batch.clear();
    topics.clear();
    payloads.clear();
    for (int i = 0; i < 1000; ++i) {
      topics.push_back("topic" + std::to_string(i % 50));
      payloads.push_back(std::string(100, static_cast<char>('a' + i % 26)));
    }
    for (int i = 0; i < 1000; ++i) {
      batch.push_back(
          {.topic = topics[i], .payload = payloads[i], .priority = i % 3});
    }
    HQ_REQUIRE_OK(q->PutBatch(batch, nullptr));
    f.clock().Advance(absl::Minutes(5));
  }
  ConsumerGroup* g = ValueOrDie(q->Group("workers"));
  for (int i = 0; i < 10; ++i) {
    std::vector<Task> tasks = ValueOrDie(g->Claim({.max = 100}));
    HQ_REQUIRE_OK(g->Complete(std::span<const Task>(tasks.data(), 50)));
  }
  const SweepStats swept = ValueOrDie(f.db()->CompactExpired());
  CHECK(swept.deleted > 0);
  f.Reopen();
  const VerifyReport report = ValueOrDie(f.db()->Verify());
  for (const VerifyProblem& p : report.problems) {
    INFO(p.key_hex << ": " << p.description);
  }
  CHECK(report.ok());
  CHECK(report.messages == 20000 - swept.deleted);
}

// The calls a ProgressCallback got, checked against Progress's contract:
// each phase begins at done 0, ends at done == total, and in between done
// never goes back or past total.
class ProgressLog {
 public:
  ProgressCallback callback() {
    return [this](const Progress& p) { calls_.push_back(p); };
  }
  // The phases in the order they ended.
  std::vector<std::string> Check() const {
    std::vector<std::string> phases;
    const Progress* prev = nullptr;
    for (const Progress& p : calls_) {
      INFO(p.phase << " " << p.done << " of " << p.total);
      CHECK(p.done <= p.total);
      const bool starts = prev == nullptr || p.phase != prev->phase ||
                          (prev->done == prev->total && p.done == 0);
      if (starts) {
        if (prev != nullptr) CHECK(prev->done == prev->total);
        CHECK(p.done == 0);
      } else {
        CHECK(p.done >= prev->done);
        CHECK(p.total == prev->total);
      }
      if (p.done == p.total &&
          (phases.empty() || phases.back() != p.phase || starts)) {
        phases.emplace_back(p.phase);
      }
      prev = &p;
    }
    if (prev != nullptr) CHECK(prev->done == prev->total);
    return phases;
  }
  size_t size() const { return calls_.size(); }

 private:
  std::vector<Progress> calls_;
};

TEST_CASE(
    "issue38: Verify, CompactAll, Backup and Repair report their "
    "progress") {
  TempDir dir;
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(f.db()->CreateQueue("big", {.partitions = 2}));
  for (int i = 0; i < 20000; ++i) {
    ValueOrDie(q->Put({.payload = std::string(100, 'a' + i % 26)}));
  }
  ValueOrDie(f.db()->CompactAll());
  {
    ProgressLog log;
    CHECK(ValueOrDie(f.db()->Verify(log.callback())).ok());
    CHECK(log.Check() ==
          std::vector<std::string>{"checking tables", "checking records"});
    // 20000 keys: progress in between too, not only each phase's ends.
    CHECK(log.size() > 4);
  }
  {
    // More messages on top (level-0 tables and the log), then the whole
    // key range compacted in slices.
    for (int i = 0; i < 5000; ++i) {
      ValueOrDie(q->Put({.payload = std::string(100, 'z')}));
    }
    ProgressLog log;
    ValueOrDie(f.db()->CompactAll(log.callback()));
    CHECK(log.Check() == std::vector<std::string>{"compacting"});
    CHECK(log.size() > 4);  // Slices, not only the phase's ends.
    const VerifyReport v = ValueOrDie(f.db()->Verify());
    CHECK(v.ok());
    CHECK(v.messages == 25000);
  }
  {
    ProgressLog log;
    ValueOrDie(f.db()->Backup(dir.Sub("backup"), log.callback()));
    CHECK(log.Check() == std::vector<std::string>{"copying"});
  }
  f.Close();
  {
    ProgressLog log;
    const RepairReport r =
        ValueOrDie(Db::Repair(f.path(), f.options(), log.callback()));
    CHECK(r.nothing_to_repair);
    CHECK(log.Check() ==
          std::vector<std::string>{"checking tables", "checking records"});
  }
}

}  // namespace
}  // namespace hq::test
