// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Repair. For every kind of damaged file (the rows of issue 15) and
// every kind of damaged hq record (Verify's list), Repair leaves a Db that
// opens and verifies clean, deletes nothing, keeps a copy of the directory
// as it was and says what it found and did. Each row is also run with the
// mending of hq's records skipped (repair::TEST_SetSkipMending): the rows
// that need it must then fail, so these tests can fail.

#include "lib/admin/repair.h"

#include <grp.h>
#include <pwd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iterator>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "catch2/catch.hpp"
#include "hq/hq.h"
#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/write_batch.h"
#include "lib/engine/log_recovery.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/file_util.h"
#include "test/damaged_db.h"
#include "test/group_util.h"
#include "test/sample_db.h"
#include "test/test_util.h"

namespace hq::test {
namespace {

using Action = RepairReport::Change::Action;

std::string Hex(const std::string& key) { return absl::BytesToHexString(key); }

void PrintReport(const RepairReport& r) {
  for (const RepairReport::Damage& d : r.damage) {
    UNSCOPED_INFO("damage: " << d.file << ": " << d.what << " " << d.lost_keys);
  }
  for (const RecoveryReport::Dropped& d : r.logs.dropped) {
    UNSCOPED_INFO("log cut: " << d.file << " at " << d.offset << ", "
                              << d.records << " records: " << d.damage);
  }
  for (const std::string& f : r.moved_to_lost) UNSCOPED_INFO("lost: " << f);
  for (const std::string& l : r.leveldb_log) UNSCOPED_INFO("leveldb: " << l);
  for (const RepairReport::Change& c : r.changes) {
    UNSCOPED_INFO("change: " << c.key_hex << ": " << c.problem);
  }
  for (const VerifyProblem& p : r.verify.problems) {
    UNSCOPED_INFO("verify: " << p.key_hex << ": " << p.description);
  }
}

// A Db directory (on disk or in the in-memory Env) holding queue "q": kOld
// messages compacted into a table, a group "g" that completed the first
// kDone of them, and kNew messages only in the write-ahead log.
class DamagedDb : public DbDir {
 public:
  static constexpr int kOld = 3000, kDone = 1000, kNew = 600;

  using DbDir::DbDir;

  void Build() {
    auto db = ValueOrDie(Db::Open(path(), options()));
    Queue* q = ValueOrDie(db->CreateQueue("q", {.partitions = 2}));
    for (int i = 0; i < kOld + kNew; ++i) {
      if (i == kOld) {
        ConsumerGroup* g = ValueOrDie(q->Group("g"));
        int done = 0;
        while (done < kDone) {
          std::vector<Task> tasks = ValueOrDie(g->Claim({.max = 100}));
          REQUIRE(!tasks.empty());
          HQ_REQUIRE_OK(g->Complete(tasks));
          done += static_cast<int>(tasks.size());
        }
        ValueOrDie(db->CompactAll());
      }
      ValueOrDie(q->Put(
          {.topic = absl::StrCat("t", i % 7),
           .payload = absl::StrCat("message-", i, "-", std::string(80, 'x'))}));
    }
  }
};

struct FileDamage {
  const char* name;
  // Damages the Db; returns the file the report must name as damaged
  // ("" for log damage, reported in RepairReport::logs).
  std::function<std::string(DamagedDb&)> damage;
  // Messages acknowledged that may be lost: 0, 1 (a torn last write), or
  // -1 (any number).
  int may_lose;
};

std::vector<FileDamage> AllFileDamage() {
  return {
      {"a flipped table block (the first: metadata and catalog)",
       [](DamagedDb& d) {
         const std::string t = d.Largest(".ldb");
         d.Flip(t, 100);
         return t;
       },
       -1},
      {"a flipped table block (in the middle: messages)",
       [](DamagedDb& d) {
         const std::string t = d.Largest(".ldb");
         d.Flip(t, d.Size(t) / 2);
         return t;
       },
       -1},
      {"a truncated table",
       [](DamagedDb& d) {
         const std::string t = d.Largest(".ldb");
         d.Write(t, d.Read(t).substr(0, d.Size(t) / 2));
         return t;
       },
       -1},
      {"a missing table",
       [](DamagedDb& d) {
         const std::string t = d.Largest(".ldb");
         d.Remove(t);
         return t;
       },
       -1},
      {"a missing CURRENT",
       [](DamagedDb& d) {
         d.Remove("CURRENT");
         return std::string("CURRENT");
       },
       0},
      {"a garbage MANIFEST",
       [](DamagedDb& d) {
         const std::string m = d.Manifest();
         std::string garbage(d.Size(m), '\0');
         for (size_t i = 0; i < garbage.size(); ++i) {
           garbage[i] = static_cast<char>(i * 131 + 17);
         }
         d.Write(m, garbage);
         return m;
       },
       0},
      {"a flipped log record in the middle",
       [](DamagedDb& d) {
         const std::string log = d.Largest(".log");
         d.Flip(log, d.Size(log) / 2);
         return std::string();
       },
       -1},
      {"a torn log tail",
       [](DamagedDb& d) {
         const std::string log = d.Largest(".log");
         // The last record's end never written: garbage where it should
         // be (what a power cut leaves in unwritten sectors).
         std::string data = d.Read(log);
         std::fill(data.end() - 60, data.end(), '\xee');
         d.Write(log, data);
         return std::string();
       },
       1},
      {"a zeroed page in the log",
       [](DamagedDb& d) {
         const std::string log = d.Largest(".log");
         std::string data = d.Read(log);
         const size_t at = data.size() / 2 / 4096 * 4096;
         REQUIRE(at + 4096 < data.size());
         std::fill(data.begin() + static_cast<ptrdiff_t>(at),
                   data.begin() + static_cast<ptrdiff_t>(at + 4096), '\0');
         d.Write(log, data);
         return std::string();
       },
       -1},
  };
}

TEST_CASE("issue15: Repair mends every kind of damaged file") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  for (const FileDamage& row : AllFileDamage()) {
    DYNAMIC_SECTION(row.name << " (" << StorageName(storage) << ")") {
      // Once with hq's mending skipped, once for real.
      int64_t changes = -1;
      for (const bool skip : {false, true}) {
        INFO((skip ? "mending skipped" : "mending"));
        DamagedDb d(storage);
        d.Build();
        const std::string damaged = row.damage(d);
        std::map<std::string, std::string> before;
        for (const std::string& f : d.TopFiles()) {
          if (f != "LOCK") before[f] = d.Read(f);
        }
        repair::TEST_SetSkipMending(skip);
        absl::StatusOr<RepairReport> r = Db::Repair(d.path(), d.options());
        repair::TEST_SetSkipMending(false);
        if (skip) {
          // Rows whose hq records RepairDB leaves inconsistent fail.
          if (changes > 0) {
            CHECK((!r.ok() || !r->clean()));
          }
          continue;
        }
        HQ_REQUIRE_OK(r.status());
        PrintReport(*r);
        changes = r->change_count;
        CHECK(r->clean());

        // The copy aside is the directory as it was.
        REQUIRE(!r->copied_to.empty());
        CHECK(r->copied_to.starts_with(d.path() + ".before-repair-"));
        for (const auto& [name, data] : before) {
          INFO(name);
          CHECK(d.Read(name, r->copied_to) == data);
        }
        // Nothing deleted: each file is where it was, or in lost/ (what
        // the log cuts kept too: Repair accounts for them).
        CHECK_FALSE(d.Exists("dropped"));
        for (const auto& [name, data] : before) {
          bool kept = d.Exists(name) || d.Exists("lost/" + name);
          std::vector<std::string> lost;
          d.env()->GetChildren(d.path() + "/lost", &lost);
          for (const std::string& x : lost) {
            if (x.starts_with(name)) kept = true;
          }
          INFO(name);
          CHECK(kept);
        }
        // The report names the damage.
        if (!damaged.empty()) {
          bool named = false;
          for (const RepairReport::Damage& x : r->damage) {
            if (x.file == damaged) named = true;
          }
          CHECK(named);
        } else {
          REQUIRE_FALSE(r->logs.dropped.empty());
          CHECK(r->logs.dropped[0].saved_as.starts_with("lost/"));
          CHECK(d.Exists(r->logs.dropped[0].saved_as));
          CHECK(r->logs.dropped[0].torn_tail == (row.may_lose == 1));
        }
        CHECK(r->keys_after > 0);
        constexpr int64_t kAll = DamagedDb::kOld + DamagedDb::kNew;
        if (row.may_lose >= 0) {
          CHECK(r->lost_nothing());
          CHECK(r->messages_after >= kAll - row.may_lose);
          CHECK(r->messages_before == r->messages_after);
        } else {
          CHECK_FALSE(r->lost_nothing());
          CHECK(r->messages_after < kAll);
        }

        // The Db opens, verifies clean, and every lane is in id order.
        auto db = ValueOrDie(Db::Open(d.path(), d.options()));
        const VerifyReport v = ValueOrDie(db->Verify());
        CHECK(v.ok());
        int64_t messages = 0;
        // "q", or the queue recreated when its catalog record was lost.
        for (const std::string& name : ValueOrDie(db->ListQueues())) {
          Queue* q = ValueOrDie(db->OpenQueue(name));
          for (uint32_t p = 0; p < q->info().options.partitions; ++p) {
            const std::vector<ScannedMessage> got =
                ScanAll(q, {.partitions = {p}});
            for (size_t i = 1; i < got.size(); ++i) {
              CHECK(got[i - 1].id < got[i].id);
            }
            messages += static_cast<int64_t>(got.size());
          }
          // Its group still works (or a new one does).
          ConsumerGroup* g = ValueOrDie(q->Group("g"));
          HQ_REQUIRE_OK(g->Claim({.max = 10}).status());
          // And new messages go in.
          ValueOrDie(q->Put({.payload = "after repair"}));
        }
        CHECK(messages == r->messages_after);
        if (row.may_lose >= 0) CHECK(messages >= kAll - row.may_lose);
      }
    }
  }
}

// Issue 18: LevelDB removes a log once its memtable is in a table, and an
// old log that no sync write needed is never synced (log_sync_env.h). The
// removal is not durable until the directory is synced, so a power cut can
// bring such a log back, cut short. Repair must not read it as a hole
// before the logs after it: only the logs the MANIFEST still needs are cut.
TEST_CASE(
    "issue18: a removed log back after a power cut, cut short, is not "
    "a hole for Repair") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(StorageName(storage));
  DamagedDb d(storage);
  d.Build();
  const std::string live = d.Largest(".log");
  std::string stale = d.Read(live);
  REQUIRE(stale.size() > 1000);
  stale.resize(stale.size() - 30);  // Its last record cut short.
  d.Write("000002.log", stale);     // Older than every log LevelDB keeps.
  REQUIRE(live != "000002.log");
  const RepairReport r = ValueOrDie(Db::Repair(d.path(), d.options()));
  PrintReport(r);
  for (const RecoveryReport::Dropped& x : r.logs.dropped) {
    INFO(x.file << ": " << x.damage);
    CHECK(x.file != live);
  }
  CHECK(r.messages_after >= DamagedDb::kOld + DamagedDb::kNew);
  auto db = ValueOrDie(Db::Open(d.path(), d.options()));
  CHECK(ValueOrDie(db->Verify()).ok());
  Queue* q = ValueOrDie(db->OpenQueue("q"));
  CHECK(ScanAll(q).size() ==
        static_cast<size_t>(DamagedDb::kOld + DamagedDb::kNew));
}

TEST_CASE("issue15: a queue whose catalog record was lost is recreated") {
  // The only table holds the catalog: the log's messages are left without
  // their queue. Repair writes the queue's catalog record again, with
  // options read off its records; without the mending Verify fails.
  for (const char* kind : {"missing table", "first block flipped"}) {
    DYNAMIC_SECTION(kind) {
      DamagedDb d(Storage::kDisk);
      d.Build();
      REQUIRE(d.TopFiles(".ldb").size() == 1);
      const std::string t = d.Largest(".ldb");
      if (std::string(kind) == "missing table") {
        d.Remove(t);
      } else {
        d.Flip(t, 100);
      }
      const RepairReport r = ValueOrDie(Db::Repair(d.path(), d.options()));
      PrintReport(r);
      CHECK(r.clean());
      CHECK_FALSE(r.lost_nothing());
      bool recreated = false;
      for (const RepairReport::Change& c : r.changes) {
        if (c.action == Action::kAdded &&
            c.key_hex == Hex(format::CatalogKey("recovered-1")) &&
            absl::StrContains(c.problem,
                              "with 2 partitions, 1 priorities, "
                              "time layout")) {
          recreated = true;
        }
      }
      CHECK(recreated);
      int64_t after = -1;
      for (const RepairReport::QueueCount& c : r.queues) {
        if (c.queue == "recovered-1") after = c.messages_after;
      }
      CHECK(after >= DamagedDb::kNew);
      auto db = ValueOrDie(Db::Open(d.path(), d.options()));
      Queue* q = ValueOrDie(db->OpenQueue("recovered-1"));
      CHECK(q->info().options.partitions == 2);
      const std::vector<ScannedMessage> got = ScanAll(q);
      CHECK(static_cast<int64_t>(got.size()) == after);
      int newest = 0;  // The log's messages are all there.
      for (const ScannedMessage& m : got) {
        if (m.payload.starts_with(absl::StrCat(
                "message-", DamagedDb::kOld + DamagedDb::kNew - 1, "-"))) {
          ++newest;
        }
      }
      CHECK(newest == 1);
    }
  }
}

// ---------------------------------------------------------------------
// Damaged hq records (the kinds Verify reports), in the sample Db.

std::string MessageValue() {
  std::string v;
  format::AppendMessageValue(&v, "", "p");
  return v;
}

// One damaged record: `damage` writes (or deletes) records in `b` and
// returns the key Repair must change; `action` is what it must do.
struct RecordDamage {
  const char* name;
  Action action;
  std::function<std::string(const Ids&, leveldb::WriteBatch*)> damage;
};

std::string Put(leveldb::WriteBatch* b, const std::string& k,
                const std::string& v) {
  b->Put(k, v);
  return k;
}

std::vector<RecordDamage> AllRecordDamage() {
  const std::string junk = "\x09junk";
  const Action aside = Action::kMovedAside, rewritten = Action::kRewritten,
               added = Action::kAdded;
  std::vector<RecordDamage> d;
  auto add = [&](const char* name, Action a, auto fn) {
    d.push_back({name, a, fn});
  };
  add("unknown record tag", aside,
      [](const Ids&, auto* b) { return Put(b, "\x7fx", "v"); });
  add("empty key", aside, [](const Ids&, auto* b) { return Put(b, "", "v"); });
  add("unknown metadata record", aside, [](const Ids&, auto* b) {
    return Put(b, format::MetaKey("bogus"), "v");
  });
  add("format record missing", added, [](const Ids&, auto* b) {
    b->Delete(format::MetaKey("format"));
    return format::MetaKey("format");
  });
  add("format record malformed", rewritten, [](const Ids&, auto* b) {
    return Put(b, format::MetaKey("format"), "x");
  });
  add("next_queue_id missing", added, [](const Ids&, auto* b) {
    b->Delete(format::MetaKey("next_queue_id"));
    return format::MetaKey("next_queue_id");
  });
  add("malformed next_group_id", rewritten, [](const Ids&, auto* b) {
    return Put(b, format::MetaKey("next_group_id"), "x");
  });
  add("malformed catalog key", aside, [](const Ids& ids, auto* b) {
    return Put(b, format::CatalogKey("-bad"),
               format::EncodeQueueRecord(ids.q_record));
  });
  add("malformed catalog value", aside, [junk](const Ids&, auto* b) {
    return Put(b, format::CatalogKey("zz"), junk);
  });
  add("queue id at or above next_queue_id", rewritten,
      [](const Ids& ids, auto* b) {
        format::QueueRecord r = ids.q_record;
        r.id = 999;
        b->Put(format::CatalogKey("zz"), format::EncodeQueueRecord(r));
        return format::MetaKey("next_queue_id");
      });
  add("queue id used twice", aside, [](const Ids& ids, auto* b) {
    return Put(b, format::CatalogKey("zz"),
               format::EncodeQueueRecord(ids.q_record));
  });
  add("reservation of a queue not in the catalog", aside,
      [](const Ids&, auto* b) {
        return Put(b, format::ReserveKey(500, 0), Fixed64(1));
      });
  add("reservation key too short", aside,
      [](const Ids&, auto* b) { return Put(b, "\x02\x01", "v"); });
  add("malformed reservation key", aside, [](const Ids& ids, auto* b) {
    return Put(b, format::ReserveKey(ids.q, 0) + "x", Fixed64(1));
  });
  add("reservation partition out of range", aside, [](const Ids& ids, auto* b) {
    return Put(b, format::ReserveKey(ids.q, 7), Fixed64(1));
  });
  add("malformed reservation value", rewritten, [](const Ids& ids, auto* b) {
    return Put(b, format::ReserveKey(ids.q, 1), "x");
  });
  add("malformed lane directory key", aside, [](const Ids& ids, auto* b) {
    std::string k;
    LayoutCodec::AppendHead(&k, ids.t, 0, 0);
    k[0] = format::kLaneDirTag;
    return Put(b, k, "");
  });
  add("lane directory priority out of range", aside,
      [](const Ids& ids, auto* b) {
        std::string k;
        LayoutCodec::AppendHead(&k, ids.q, 0, 5);
        k[0] = format::kLaneDirTag;
        return Put(b, k, "");
      });
  add("malformed lane directory value", rewritten, [](const Ids& ids, auto* b) {
    std::string k;
    format::AppendLaneDirKey(&k, ids.q_lane);
    return Put(b, k, "x");
  });
  add("TTL index record of a queue without TTL", aside,
      [](const Ids& ids, auto* b) {
        return Put(b, format::TtlKey(ids.q), "q");
      });
  add("TTL index record naming another queue", rewritten,
      [](const Ids& ids, auto* b) {
        return Put(b, format::TtlKey(ids.t), "q");
      });
  add("TTL index record missing", added, [](const Ids& ids, auto* b) {
    b->Delete(format::TtlKey(ids.t));
    return format::TtlKey(ids.t);
  });
  add("malformed TTL index key", aside, [](const Ids& ids, auto* b) {
    return Put(b, format::TtlKey(ids.t) + "x", "t");
  });
  add("malformed group key", aside, [](const Ids& ids, auto* b) {
    return Put(b, format::GroupKey(ids.q, "-g"),
               format::EncodeGroupRecord({.id = 77}));
  });
  add("malformed group value", aside, [junk](const Ids& ids, auto* b) {
    return Put(b, format::GroupKey(ids.q, "h"), junk);
  });
  add("group id at or above next_group_id", rewritten,
      [](const Ids& ids, auto* b) {
        b->Put(format::GroupKey(ids.q, "h"),
               format::EncodeGroupRecord({.id = 999}));
        return format::MetaKey("next_group_id");
      });
  add("group id used twice", aside, [](const Ids& ids, auto* b) {
    return Put(b, format::GroupKey(ids.q, "h"),
               format::EncodeGroupRecord({.id = ids.g}));
  });
  add("malformed subscription value", aside, [junk](const Ids& ids, auto* b) {
    return Put(b, format::SubKey(ids.q, "s2"), junk);
  });
  add("subscription partition out of range", aside,
      [](const Ids& ids, auto* b) {
        return Put(b, format::SubKey(ids.q, "s2"),
                   format::EncodeSubRecord({.id = 79, .partitions = {9}}));
      });
  add("group of a queue not in the catalog", aside, [](const Ids&, auto* b) {
    return Put(b, format::GroupKey(600, "g"),
               format::EncodeGroupRecord({.id = 80}));
  });
  add("cursor of a group the queue does not have", aside,
      [](const Ids& ids, auto* b) {
        return Put(b, CursorKey(ids, 77, ids.q_lane_rest),
                   format::EncodeCursor({}));
      });
  add("malformed cursor key", aside, [](const Ids& ids, auto* b) {
    return Put(b, CursorKey(ids, ids.g, std::string(1, '\0')),
               format::EncodeCursor({}));
  });
  add("malformed cursor value", aside, [junk](const Ids& ids, auto* b) {
    return Put(b, CursorKey(ids, ids.g, ids.q_lane_rest), junk);
  });
  add("cursor beyond the lane end", rewritten, [](const Ids& ids, auto* b) {
    return Put(
        b, CursorKey(ids, ids.g, ids.q_lane_rest),
        format::EncodeCursor({.scan = MessageId{ids.now_ms + 3600000, 0}}));
  });
  add("malformed task key", aside, [](const Ids& ids, auto* b) {
    return Put(b,
               format::GroupRecordPrefix(format::kTaskTag, ids.q, ids.g) + "x",
               format::EncodeTask({}));
  });
  add("malformed task value", aside, [junk](const Ids& ids, auto* b) {
    std::string k = format::GroupRecordPrefix(format::kTaskTag, ids.q, ids.g) +
                    ids.q_lane_rest;
    LayoutCodec::AppendMessageId(&k, MessageId{1, 0});
    return Put(b, k, junk);
  });
  add("malformed dead letter value", aside, [](const Ids& ids, auto* b) {
    std::string k = format::GroupRecordPrefix(format::kDeadTag, ids.q, ids.g);
    coding::PutFixed16(&k, 0);
    LayoutCodec::AppendMessageId(&k, MessageId{1, 0});
    return Put(b, k, format::EncodeDead({.reason = 9}));
  });
  add("malformed dedup value", aside, [junk](const Ids& ids, auto* b) {
    return Put(b, format::DedupKey(ids.q, "d0"), junk);
  });
  add("dedup partition out of range", aside, [](const Ids& ids, auto* b) {
    return Put(b, format::DedupKey(ids.q, "d0"),
               format::EncodeDedup(3, MessageId{1, 0}));
  });
  add("checkpoint of a subscription the queue does not have", aside,
      [](const Ids& ids, auto* b) {
        return Put(
            b,
            format::GroupRecordPrefix(format::kCheckpointTag, ids.q, 55) +
                ids.q_lane_rest,
            format::EncodeCheckpoint({}));
      });
  add("malformed checkpoint value", aside, [junk](const Ids& ids, auto* b) {
    return Put(b,
               format::GroupRecordPrefix(format::kCheckpointTag, ids.q, ids.s) +
                   ids.q_lane_rest,
               junk);
  });
  add("message of a queue not in the catalog (recreated)", added,
      [](const Ids&, auto* b) {
        std::string k;
        LayoutCodec::For(Layout::kTime)
            .AppendMessageKey(&k, 500, 0, 0, "", MessageId{1, 0});
        b->Put(k, MessageValue());
        return format::CatalogKey("recovered-500");
      });
  add("malformed message key", aside, [](const Ids& ids, auto* b) {
    std::string k;
    LayoutCodec::For(Layout::kTopic)
        .AppendMessageKey(&k, ids.t, 0, 0, "x", MessageId{1, 0});
    return Put(b, k + "extra", "");
  });
  add("message partition out of range", aside, [](const Ids& ids, auto* b) {
    std::string k;
    LayoutCodec::For(Layout::kTime)
        .AppendMessageKey(&k, ids.q, 2, 0, "", MessageId{1, 0});
    return Put(b, k, MessageValue());
  });
  add("malformed message value", aside,
      [](const Ids& ids, auto* b) { return Put(b, ids.q_first, "\x07"); });
  add("message at or above its partition's reservation", rewritten,
      [](const Ids& ids, auto* b) {
        std::string k = ids.q_lane;
        LayoutCodec::AppendMessageId(&k, MessageId{ids.now_ms + 5000000, 0});
        b->Put(k, MessageValue());
        return format::ReserveKey(ids.q, 0);
      });
  add("partition without a reservation", added, [](const Ids& ids, auto* b) {
    b->Delete(format::ReserveKey(ids.q, 0));
    return format::ReserveKey(ids.q, 0);
  });
  add("malformed lane head", aside,
      [](const Ids& ids, auto* b) { return Put(b, ids.q_lane, "x"); });
  add("malformed lane fence", rewritten, [](const Ids& ids, auto* b) {
    std::string k;
    LayoutCodec::AppendLaneFence(&k, ids.q_lane);
    return Put(b, k, "x");
  });
  add("malformed drop marker", aside,
      [](const Ids&, auto* b) { return Put(b, format::DropKey(1) + "x", ""); });
  // Claim records (the sample's group is of the time layout queue q, whose
  // groups write none).
  auto claim_value = [](const Ids& ids) {
    std::string v;
    format::AppendClaimEntry(&v, ids.q_lane,
                             {MessageId::Min(), MessageId::Min()});
    return v;
  };
  add("claim record of a group the queue does not have", aside,
      [claim_value](const Ids& ids, auto* b) {
        return Put(b, format::ClaimKey(ids.q, 999, 1), claim_value(ids));
      });
  add("claim record of a time layout queue's group", aside,
      [claim_value](const Ids& ids, auto* b) {
        return Put(b, format::ClaimKey(ids.q, ids.g, 1), claim_value(ids));
      });
  add("malformed claim record key", aside,
      [claim_value](const Ids& ids, auto* b) {
        return Put(b, format::ClaimKey(ids.q, ids.g, 0), claim_value(ids));
      });
  return d;
}

TEST_CASE("issue15: Repair mends every kind of damaged hq record") {
  for (const RecordDamage& row : AllRecordDamage()) {
    DYNAMIC_SECTION(row.name) {
      for (const bool skip : {true, false}) {
        INFO((skip ? "mending skipped" : "mending"));
        DbFixture f(Storage::kDisk, NoBackgroundSweeps());
        PopulateSample(f.db());
        const Ids ids = ReadIds(f.db(), f.clock().Now());
        std::vector<ScannedMessage> t_before =
            ScanAll(ValueOrDie(f.db()->OpenQueue("t")));
        f.Close();
        std::string key, damaged_value;
        {
          leveldb::DB* raw = nullptr;
          REQUIRE(leveldb::DB::Open(leveldb::Options(), f.path(), &raw).ok());
          std::unique_ptr<leveldb::DB> owned(raw);
          leveldb::WriteBatch b;
          key = row.damage(ids, &b);
          REQUIRE(raw->Write(leveldb::WriteOptions(), &b).ok());
          raw->Get({}, key, &damaged_value);
        }
        repair::TEST_SetSkipMending(skip);
        absl::StatusOr<RepairReport> r = Db::Repair(f.path(), f.options());
        repair::TEST_SetSkipMending(false);
        if (skip) {
          // RepairDB alone leaves the damage: Verify (or Open) fails.
          CHECK((!r.ok() || !r->clean()));
          continue;
        }
        HQ_REQUIRE_OK(r.status());
        PrintReport(*r);
        CHECK(r->clean());
        bool found = false;
        for (const RepairReport::Change& c : r->changes) {
          if (c.key_hex == Hex(key) && c.action == row.action) found = true;
        }
        INFO("key " << Hex(key));
        CHECK(found);
        CHECK(r->moved_aside == (row.action == Action::kMovedAside ? 1 : 0));
        if (row.action == Action::kMovedAside) {
          // In the side database, key and value unchanged.
          REQUIRE(
              r->moved_aside_to.starts_with(f.path() + "/lost/hq-records-"));
          leveldb::DB* raw = nullptr;
          REQUIRE(leveldb::DB::Open({}, r->moved_aside_to, &raw).ok());
          std::unique_ptr<leveldb::DB> side(raw);
          std::string v;
          REQUIRE(side->Get({}, key, &v).ok());
          CHECK(v == damaged_value);
        } else {
          CHECK(r->moved_aside_to.empty());
        }
        CHECK(r->damage.empty());  // The files were fine.
        // The Db opens, verifies clean, and queue t is as it was.
        f.Reopen();
        CHECK(ValueOrDie(f.db()->Verify()).ok());
        CHECK(ScanAll(ValueOrDie(f.db()->OpenQueue("t"))) == t_before);
      }
    }
  }
}

// Repair's full run on an undamaged Db (which Repair otherwise answers
// with nothing_to_repair) changes no record.
TEST_CASE("issue15: Repair of an undamaged Db changes no record") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(StorageName(storage));
  repair::TEST_SetForceRepair(true);
  auto unforce = absl::MakeCleanup([] { repair::TEST_SetForceRepair(false); });
  DbFixture f(storage, NoBackgroundSweeps());
  PopulateSample(f.db());
  auto scan_all = [&] {
    std::map<std::string, std::vector<ScannedMessage>> out;
    for (const std::string& name : ValueOrDie(f.db()->ListQueues())) {
      out[name] = ScanAll(ValueOrDie(f.db()->OpenQueue(name)));
    }
    return out;
  };
  const auto before = scan_all();
  const GroupInfo group_before =
      ValueOrDie(ValueOrDie(f.db()->OpenQueue("q"))->InspectGroup("g"));
  f.Close();
  const RepairReport r = ValueOrDie(Db::Repair(f.path(), f.options()));
  PrintReport(r);
  CHECK(r.clean());
  CHECK(r.lost_nothing());
  CHECK_FALSE(r.nothing_to_repair);
  CHECK(r.change_count == 0);
  CHECK(r.damage.empty());
  CHECK(r.logs.dropped.empty());
  CHECK(r.moved_aside_to.empty());
  CHECK(r.messages_before == 20);
  CHECK(r.messages_after == 20);
  CHECK(r.keys_before == r.keys_after);
  CHECK(r.queues.size() == 3);
  CHECK_FALSE(r.leveldb_log.empty());
  CHECK(r.copied_bytes > 0);
  f.Reopen();
  CHECK(scan_all() == before);
  const GroupInfo group_after =
      ValueOrDie(ValueOrDie(f.db()->OpenQueue("q"))->InspectGroup("g"));
  REQUIRE(group_after.cursors.size() == group_before.cursors.size());
  for (size_t i = 0; i < group_after.cursors.size(); ++i) {
    CHECK(group_after.cursors[i].scan == group_before.cursors[i].scan);
    CHECK(group_after.cursors[i].completion ==
          group_before.cursors[i].completion);
  }
  // A second repair: another copy aside, nothing changed again.
  f.Close();
  const RepairReport again = ValueOrDie(Db::Repair(f.path(), f.options()));
  CHECK(again.copied_to != r.copied_to);
  CHECK(again.change_count == 0);
  CHECK(again.clean());
}

// The names beside `path` that start with its name and ".before-repair-".
std::vector<std::string> CopiesAside(leveldb::Env* env,
                                     const std::string& path) {
  const std::string parent = std::filesystem::path(path).parent_path();
  const std::string prefix =
      std::filesystem::path(path).filename().string() + ".before-repair-";
  std::vector<std::string> children;
  env->GetChildren(parent, &children);
  std::set<std::string> names;
  for (const std::string& c : children) {
    const std::string name = c.substr(0, c.find('/'));
    if (name.starts_with(prefix)) names.insert(parent + "/" + name);
  }
  return {names.begin(), names.end()};
}

TEST_CASE("issue38: Repair of a Db that verifies clean changes nothing") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(StorageName(storage));
  DbFixture f(storage, NoBackgroundSweeps());
  PopulateSample(f.db());
  const std::vector<ScannedMessage> before =
      ScanAll(ValueOrDie(f.db()->OpenQueue("q")));
  f.Close();
  leveldb::Env* env =
      f.options().env ? f.options().env : leveldb::Env::Default();
  const RepairReport r = ValueOrDie(Db::Repair(f.path(), f.options()));
  PrintReport(r);
  CHECK(r.nothing_to_repair);
  CHECK(r.clean());
  CHECK(r.lost_nothing());
  CHECK(r.copied_to.empty());
  CHECK(r.copied_bytes == 0);
  CHECK(r.leveldb_log.empty());  // LevelDB's RepairDB did not run.
  CHECK(r.change_count == 0);
  CHECK(r.messages_before == 20);
  CHECK(r.messages_after == 20);
  CHECK(r.queues.size() == 3);
  CHECK(CopiesAside(env, f.path()).empty());
  f.Reopen();
  CHECK(ScanAll(ValueOrDie(f.db()->OpenQueue("q"))) == before);
}

TEST_CASE("issue38: Repair of a damaged Db is not answered nothing_to_repair") {
  DamagedDb d(Storage::kDisk);
  d.Build();
  d.Flip(d.Largest(".ldb"), d.Size(d.Largest(".ldb")) / 2);
  const RepairReport r = ValueOrDie(Db::Repair(d.path(), d.options()));
  PrintReport(r);
  CHECK_FALSE(r.nothing_to_repair);
  CHECK_FALSE(r.copied_to.empty());
  CHECK(r.clean());
}

// A repair killed (SIGKILL, in a child process) after copying two files
// aside leaves a directory whose name says the copy is unfinished; the next
// repair removes it, says so, and makes a whole copy.
TEST_CASE(
    "issue38: a repair killed while it copies aside leaves no copy "
    "that looks whole") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  PopulateSample(f.db());
  const std::vector<ScannedMessage> before =
      ScanAll(ValueOrDie(f.db()->OpenQueue("q")));
  f.Close();
  leveldb::Env* env = leveldb::Env::Default();
  const size_t files = ValueOrDie(file_util::ListFiles(env, f.path())).size();
  // An undamaged Db is answered nothing_to_repair without a copy: the full
  // repair copies it.
  repair::TEST_SetForceRepair(true);
  auto unforce = absl::MakeCleanup([] { repair::TEST_SetForceRepair(false); });
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    repair::TEST_SetCopyAsideHook(+[](int copied) {
      if (copied == 2) raise(SIGKILL);
    });
    (void)Db::Repair(f.path(), f.options());
    _exit(0);  // The hook did not run: the parent fails the test.
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(WTERMSIG(status) == SIGKILL);
  const std::vector<std::string> left = CopiesAside(env, f.path());
  REQUIRE(left.size() == 1);
  CHECK(left[0].ends_with(".partial"));
  CHECK(ValueOrDie(file_util::ListFiles(env, left[0])).size() == 2);

  const RepairReport r = ValueOrDie(Db::Repair(f.path(), f.options()));
  PrintReport(r);
  CHECK(r.clean());
  CHECK(r.removed_partial_copies == left);
  CHECK_FALSE(file_util::DirExists(env, left[0]));
  REQUIRE(CopiesAside(env, f.path()) == std::vector<std::string>{r.copied_to});
  CHECK_FALSE(r.copied_to.ends_with(".partial"));
  // Every file but LOCK.
  CHECK(ValueOrDie(file_util::ListFiles(env, r.copied_to)).size() == files - 1);
  f.Reopen();
  CHECK(ScanAll(ValueOrDie(f.db()->OpenQueue("q"))) == before);
}

TEST_CASE("issue15: a second Repair keeps what the first put in lost/") {
  const Storage storage = GENERATE(Storage::kDisk, Storage::kMemory);
  INFO(StorageName(storage));
  // The Db verifies clean: only the full repair touches lost/.
  repair::TEST_SetForceRepair(true);
  auto unforce = absl::MakeCleanup([] { repair::TEST_SetForceRepair(false); });
  DbFixture f(storage, NoBackgroundSweeps());
  PopulateSample(f.db());
  f.Close();
  leveldb::Env* env =
      f.options().env ? f.options().env : leveldb::Env::Default();
  // lost/ holds a MANIFEST named as the live one (what a repair that
  // stopped before hq opened its result leaves): LevelDB's repair archives
  // the live one under that name.
  const std::string manifest = CurrentManifest(env, f.path());
  REQUIRE(!manifest.empty());
  env->CreateDir(f.path() + "/lost");
  REQUIRE(
      leveldb::WriteStringToFile(env, "earlier", f.path() + "/lost/" + manifest)
          .ok());
  const RepairReport r = ValueOrDie(Db::Repair(f.path(), f.options()));
  CHECK(r.clean());
  std::vector<std::string> lost;
  REQUIRE(env->GetChildren(f.path() + "/lost", &lost).ok());
  std::string kept;
  for (const std::string& n : lost) {
    if (n.starts_with(manifest + ".before-repair-")) kept = n;
  }
  REQUIRE(!kept.empty());
  std::string data;
  REQUIRE(
      leveldb::ReadFileToString(env, f.path() + "/lost/" + kept, &data).ok());
  CHECK(data == "earlier");
  REQUIRE(leveldb::ReadFileToString(env, f.path() + "/lost/" + manifest, &data)
              .ok());
  CHECK(data != "earlier");
}

// Issue 17: a consumer of a topic layout queue finds lanes with work
// through the lane activity index from its source position. A hint that
// Repair moves aside would hide its lanes from every consumer behind it,
// so the queue's source positions go aside with it.
TEST_CASE("issue17: Repair moving a lane index record aside loses no work") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  ValueOrDie(ValueOrDie(q->Group("g"))->Claim({}));  // Its position: written.
  for (int i = 0; i < 3; ++i) {                      // A hint each.
    HQ_REQUIRE_OK(
        q->Put({.topic = absl::StrCat("t", i), .payload = absl::StrCat("p", i)})
            .status());
  }
  f.Close();
  std::string hint;  // The second hint, damaged.
  {
    leveldb::DB* raw = nullptr;
    REQUIRE(leveldb::DB::Open(leveldb::Options(), f.path(), &raw).ok());
    std::unique_ptr<leveldb::DB> owned(raw);
    std::unique_ptr<leveldb::Iterator> it(raw->NewIterator({}));
    const std::string index(1, format::kHintTag);
    int n = 0;
    for (it->Seek(index); it->Valid() && it->key().starts_with(index);
         it->Next()) {
      if (++n == 2) hint = it->key().ToString();
    }
    REQUIRE(n == 3);
    it.reset();
    REQUIRE(raw->Put({}, hint, "\xff").ok());
  }
  RepairReport r = ValueOrDie(Db::Repair(f.path(), f.options()));
  PrintReport(r);
  CHECK(r.clean());
  CHECK(r.moved_aside == 2);  // The hint and g's source position.
  f.Reopen();
  CHECK(ValueOrDie(f.db()->Verify()).ok());
  q = ValueOrDie(f.db()->OpenQueue("q"));
  std::set<std::string> got;
  for (const Task& t :
       ValueOrDie(ValueOrDie(q->Group("g"))->Claim({.max = 10}))) {
    got.insert(t.payload);
  }
  CHECK(got == std::set<std::string>{"p0", "p1", "p2"});
}

TEST_CASE("issue17: Repair moving a claim record aside loses no task") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  for (int i = 0; i < 4; ++i) {
    HQ_REQUIRE_OK(
        q->Put({.topic = absl::StrCat("t", i), .payload = absl::StrCat("p", i)})
            .status());
  }
  // Three first hand-outs in flight at the close: one claim record.
  REQUIRE(ValueOrDie(ValueOrDie(q->Group("g"))->Claim({.max = 3})).size() == 3);
  f.Close();
  {
    leveldb::DB* raw = nullptr;
    REQUIRE(leveldb::DB::Open(leveldb::Options(), f.path(), &raw).ok());
    std::unique_ptr<leveldb::DB> owned(raw);
    std::unique_ptr<leveldb::Iterator> it(raw->NewIterator({}));
    const std::string claims(1, format::kClaimTag);
    std::vector<std::string> keys;
    for (it->Seek(claims); it->Valid() && it->key().starts_with(claims);
         it->Next()) {
      keys.push_back(it->key().ToString());
    }
    it.reset();
    REQUIRE(keys.size() == 1);
    REQUIRE(raw->Put({}, keys[0], "\x01\x05").ok());
  }
  RepairReport r = ValueOrDie(Db::Repair(f.path(), f.options()));
  PrintReport(r);
  CHECK(r.clean());
  CHECK(r.moved_aside == 1);  // The claim record alone.
  f.Reopen();
  CHECK(ValueOrDie(f.db()->Verify()).ok());
  q = ValueOrDie(f.db()->OpenQueue("q"));
  // The three come again as first attempts (their count was in the
  // record), with the fourth.
  std::vector<Task> got =
      ValueOrDie(ValueOrDie(q->Group("g"))->Claim({.max = 10}));
  std::set<std::string> payloads;
  for (const Task& t : got) {
    payloads.insert(t.payload);
    CHECK(t.attempt == 1);
  }
  CHECK(payloads == std::set<std::string>{"p0", "p1", "p2", "p3"});
}

// Issue 17, walk floors: a lane the walk passed without a cursor record is
// at its floor. A cursor record that Repair moves aside would put a lane
// with messages left below the floor there, so the group's source
// position goes aside with it and the group walks the lanes anew.
TEST_CASE(
    "issue17: Repair moving a cursor record aside loses no message below the "
    "walk's floor") {
  DbFixture f(Storage::kDisk, NoBackgroundSweeps());
  Queue* q = ValueOrDie(
      f.db()->CreateQueue("q", {.partitions = 2, .layout = Layout::kTopic}));
  std::set<std::string> all;
  for (int i = 0; i < 8; ++i) {
    for (int k = 0; k < 3; ++k) {
      const std::string payload = absl::StrCat("t", i, "/", k);
      HQ_REQUIRE_OK(
          q->Put({.topic = absl::StrCat("t", i), .payload = payload}).status());
      all.insert(payload);
    }
  }
  // One lane in memory: each gives one task a turn and goes behind the
  // others with two messages left, its cursor record written.
  const GroupOptions options{.max_active_lanes = 1};
  ConsumerGroup* g = ValueOrDie(q->Group("g", options));
  std::set<std::string> completed;
  for (int i = 0; i < 6; ++i) {
    std::vector<Task> t = ValueOrDie(g->Claim({.max = 1}));
    REQUIRE(t.size() == 1);
    HQ_REQUIRE_OK(g->Complete(t));
    completed.insert(t[0].payload);
  }
  f.Close();
  {
    leveldb::DB* raw = nullptr;
    REQUIRE(leveldb::DB::Open(leveldb::Options(), f.path(), &raw).ok());
    std::unique_ptr<leveldb::DB> owned(raw);
    std::unique_ptr<leveldb::Iterator> it(raw->NewIterator({}));
    const std::string cursors(1, format::kCursorTag);
    std::vector<std::string> keys;
    for (it->Seek(cursors); it->Valid() && it->key().starts_with(cursors);
         it->Next()) {
      keys.push_back(it->key().ToString());
    }
    it.reset();
    REQUIRE(keys.size() >= 2);
    REQUIRE(raw->Put({}, keys[1], "\xff").ok());
  }
  RepairReport r = ValueOrDie(Db::Repair(f.path(), f.options()));
  PrintReport(r);
  CHECK(r.clean());
  CHECK(r.moved_aside == 2);  // The cursor record and g's source position.
  f.Reopen();
  CHECK(ValueOrDie(f.db()->Verify()).ok());
  q = ValueOrDie(f.db()->OpenQueue("q"));
  g = ValueOrDie(q->Group("g", options));
  std::set<std::string> got;
  for (const Task& t : test::Drain(g)) got.insert(t.payload);
  // At least once: every message not completed, and maybe some again.
  std::set<std::string> left;
  std::set_difference(all.begin(), all.end(), completed.begin(),
                      completed.end(), std::inserter(left, left.end()));
  CHECK(std::includes(got.begin(), got.end(), left.begin(), left.end()));
}

TEST_CASE("issue15: Repair refuses what it must not touch") {
  SECTION("a Db open in this process") {
    DbFixture f(Storage::kDisk, NoBackgroundSweeps());
    const absl::Status s = Db::Repair(f.path(), f.options()).status();
    CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(absl::StrContains(s.message(), f.path()));
    CHECK(absl::StrContains(s.message(), "already open in this process"));
  }
  SECTION("a Db another process holds") {
    DbFixture f(Storage::kDisk, NoBackgroundSweeps());
    PopulateSample(f.db());
    f.Close();
    Child holder({"hold", f.path()});
    REQUIRE(holder.ReadLine() == "OK");
    const absl::Status s = Db::Repair(f.path(), f.options()).status();
    CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(GetErrorDetail(s) == ErrorDetail::kDbLocked);
    CHECK(absl::StrContains(s.message(), "in use by another process"));
    holder.CloseStdin();
    holder.Wait();
    // Nothing was copied aside.
    const std::string parent =
        std::filesystem::path(f.path()).parent_path().string();
    for (const auto& e : std::filesystem::directory_iterator(parent)) {
      CHECK_FALSE(
          absl::StrContains(e.path().filename().string(), "before-repair"));
    }
  }
  SECTION("no directory, no database, no path") {
    TempDir dir;
    CHECK(Db::Repair(dir.Sub("none")).status().code() ==
          absl::StatusCode::kNotFound);
    CHECK(Db::Repair(dir.path()).status().code() ==
          absl::StatusCode::kNotFound);
    CHECK(Db::Repair("").status().code() == absl::StatusCode::kInvalidArgument);
  }
  SECTION("a LevelDB database that is not hq's") {
    TempDir dir;
    const std::string path = dir.Sub("other");
    {
      leveldb::Options o;
      o.create_if_missing = true;
      leveldb::DB* raw = nullptr;
      REQUIRE(leveldb::DB::Open(o, path, &raw).ok());
      std::unique_ptr<leveldb::DB> db(raw);
      for (int i = 0; i < 100; ++i) {
        REQUIRE(db->Put({}, absl::StrCat("user-key-", i), "v").ok());
      }
    }
    const absl::Status s = Db::Repair(path).status();
    CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(absl::StrContains(s.message(), "not an hq database"));
    for (const auto& e : std::filesystem::directory_iterator(dir.path())) {
      CHECK(e.path().filename() == "other");  // No copy aside.
    }
  }
  SECTION("a directory it cannot write") {
    // Root writes anyway: as root, the repair runs in a child process as
    // nobody, which owns the directories.
    DbFixture f(Storage::kDisk, NoBackgroundSweeps());
    PopulateSample(f.db());
    f.Close();
    const std::filesystem::path parent =
        std::filesystem::path(f.path()).parent_path();
    const struct passwd* nobody = getpwnam("nobody");
    REQUIRE(nobody != nullptr);
    const uid_t uid = nobody->pw_uid;
    const gid_t gid = nobody->pw_gid;
    const bool root = geteuid() == 0;
    if (root) {
      REQUIRE(lchown(parent.c_str(), uid, gid) == 0);
      for (const auto& e :
           std::filesystem::recursive_directory_iterator(parent)) {
        REQUIRE(lchown(e.path().c_str(), uid, gid) == 0);
      }
    }
    std::filesystem::permissions(parent, std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::remove);
    // An undamaged Db needs no copy aside: the full repair checks for room.
    repair::TEST_SetForceRepair(true);
    auto unforce =
        absl::MakeCleanup([] { repair::TEST_SetForceRepair(false); });
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      if (root && (setgroups(0, nullptr) != 0 || setgid(gid) != 0 ||
                   setuid(uid) != 0 || setuid(0) == 0)) {
        std::fprintf(stderr, "cannot drop root privileges\n");
        _exit(125);
      }
      const absl::Status s = Db::Repair(f.path(), f.options()).status();
      std::fprintf(stderr, "Repair: %s\n", s.ToString().c_str());
      _exit(s.code() == absl::StatusCode::kPermissionDenied &&
                    absl::StrContains(s.message(), "nothing was changed")
                ? 0
                : 1);
    }
    const int status = WaitForExit(child, "Db::Repair as nobody");
    std::filesystem::permissions(parent, std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::add);
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);  // 125: could not drop root.
    for (const auto& e : std::filesystem::directory_iterator(parent)) {
      CHECK_FALSE(
          absl::StrContains(e.path().filename().string(), "before-repair"));
    }
  }
}

}  // namespace
}  // namespace hq::test
