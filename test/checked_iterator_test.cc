// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The checked iterator (lib/engine/checked_read.h) moves exactly as
// LevelDB's own over tables, overwrites and deletions, while it skips the
// seeks its position already answers: a reader going from one lane to the
// next seeks LevelDB once. It stops at the step that meets a damaged block
// or table footer, although it asks LevelDB's status() only now and then.

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "catch2/catch.hpp"
#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/helpers/memenv.h"
#include "leveldb/options.h"
#include "lib/engine/checked_read.h"

namespace hq {
namespace {

// A LevelDB in memory with small memtables, so that its keys spread over
// several tables and levels.
class Store {
 public:
  Store() : env_(leveldb::NewMemEnv(leveldb::Env::Default())) {
    leveldb::Options o;
    o.env = env_.get();
    o.create_if_missing = true;
    o.write_buffer_size = 16 << 10;
    leveldb::DB* db = nullptr;
    REQUIRE(leveldb::DB::Open(o, "/checked-iterator", &db).ok());
    db_.reset(db);
  }
  leveldb::DB* db() { return db_.get(); }
  void Put(const std::string& key, const std::string& value) {
    REQUIRE(db_->Put(leveldb::WriteOptions(), key, value).ok());
  }
  void Delete(const std::string& key) {
    REQUIRE(db_->Delete(leveldb::WriteOptions(), key).ok());
  }

 private:
  std::unique_ptr<leveldb::Env> env_;
  std::unique_ptr<leveldb::DB> db_;
};

// Forwards to a LevelDB iterator and counts the seeks that reach it.
class CountingIterator final : public leveldb::Iterator {
 public:
  CountingIterator(leveldb::Iterator* it, int* seeks)
      : it_(it), seeks_(seeks) {}
  bool Valid() const override { return it_->Valid(); }
  void SeekToFirst() override {
    ++*seeks_;
    it_->SeekToFirst();
  }
  void SeekToLast() override {
    ++*seeks_;
    it_->SeekToLast();
  }
  void Seek(const leveldb::Slice& target) override {
    ++*seeks_;
    it_->Seek(target);
  }
  void Next() override { it_->Next(); }
  void Prev() override { it_->Prev(); }
  leveldb::Slice key() const override { return it_->key(); }
  leveldb::Slice value() const override { return it_->value(); }
  leveldb::Status status() const override { return it_->status(); }

 private:
  std::unique_ptr<leveldb::Iterator> it_;
  int* seeks_;
};

std::string LaneKey(int lane, int message) {
  return absl::StrFormat("lane%05d/%03d", lane, message);
}

std::string Where(const leveldb::Iterator& it) {
  return it.Valid() ? it.key().ToString() : std::string("(end)");
}

TEST_CASE("a checked iterator moves as LevelDB's own") {
  Store store;
  std::mt19937 rng(17);
  // Lanes of 0..4 messages, some overwritten or deleted, over several
  // tables: gaps of every size between keys.
  for (int round = 0; round < 3; ++round) {
    for (int lane = 0; lane < 400; ++lane) {
      const int n = static_cast<int>(rng() % 5);
      for (int m = 0; m < n; ++m) {
        const std::string key = LaneKey(lane, m);
        if (rng() % 4 == 0) {
          store.Delete(key);
        } else {
          store.Put(key, absl::StrFormat("r%d-%d", round, rng() % 1000));
        }
      }
    }
  }
  int seeks = 0;
  std::unique_ptr<leveldb::Iterator> checked(WrapCheckedIterator(
      new CountingIterator(store.db()->NewIterator({}), &seeks)));
  std::unique_ptr<leveldb::Iterator> plain(store.db()->NewIterator({}));
  // Writes after the iterators were made: neither sees them.
  store.Put(LaneKey(7, 9), "late");
  store.Delete(LaneKey(8, 0));

  int skipped = 0;
  for (int op = 0; op < 40000; ++op) {
    const int r = static_cast<int>(rng() % 100);
    std::string what;
    if (r < 40 && plain->Valid()) {
      what = "Next";
      checked->Next();
      plain->Next();
    } else if (r < 43 && plain->Valid()) {
      what = "Prev";
      checked->Prev();
      plain->Prev();
    } else if (r < 44) {
      what = "SeekToFirst";
      checked->SeekToFirst();
      plain->SeekToFirst();
    } else if (r < 45) {
      what = "SeekToLast";
      checked->SeekToLast();
      plain->SeekToLast();
    } else {
      // Mostly near the current key (the case the iterator answers),
      // sometimes anywhere, sometimes exactly at a key or between keys.
      const int lane = rng() % 3 == 0 ? static_cast<int>(rng() % 402)
                                      : static_cast<int>(rng() % 8);
      std::string target = LaneKey(lane, static_cast<int>(rng() % 6));
      if (rng() % 2 == 0) target = absl::StrFormat("lane%05d", lane);
      if (rng() % 5 == 0 && plain->Valid()) target = plain->key().ToString();
      what = "Seek " + target;
      const int before = seeks;
      checked->Seek(target);
      plain->Seek(target);
      if (seeks == before) ++skipped;
    }
    INFO("op " << op << ": " << what);
    REQUIRE(checked->Valid() == plain->Valid());
    REQUIRE(Where(*checked) == Where(*plain));
    if (plain->Valid()) {
      REQUIRE(checked->value().ToString() == plain->value().ToString());
    }
    REQUIRE(checked->status().ok());
  }
  // The case the change is for happened, and was answered right above.
  CHECK(skipped > 1000);
}

TEST_CASE("a checked iterator seeks once for a run of adjacent lanes") {
  Store store;
  for (int lane = 0; lane < 300; ++lane) {
    for (int m = 0; m < lane % 3 + 1; ++m) store.Put(LaneKey(lane, m), "v");
  }
  int seeks = 0;
  std::unique_ptr<leveldb::Iterator> it(WrapCheckedIterator(
      new CountingIterator(store.db()->NewIterator({}), &seeks)));
  // Lane by lane, as a claim reads the lanes a walk found: each lane from
  // its prefix to the first key past it.
  int read = 0;
  for (int lane = 0; lane < 300; ++lane) {
    const std::string prefix = absl::StrFormat("lane%05d/", lane);
    for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix);
         it->Next()) {
      ++read;
    }
  }
  REQUIRE(it->status().ok());
  CHECK(read == 100 * (1 + 2 + 3));
  CHECK(seeks == 1);

  // Past the end: the end, without a seek.
  it->Seek("zzz");
  CHECK_FALSE(it->Valid());
  CHECK(seeks == 1);
  // Back, or past a key not yet seen: a real seek, to the right key.
  it->Seek(LaneKey(5, 0));
  REQUIRE(it->Valid());
  CHECK(it->key().ToString() == LaneKey(5, 0));
  CHECK(seeks == 2);
  it->Seek(LaneKey(9, 0));
  REQUIRE(it->Valid());
  CHECK(it->key().ToString() == LaneKey(9, 0));
  CHECK(seeks == 3);
  // The key it is at: where it is.
  it->Seek(LaneKey(9, 0));
  CHECK(it->key().ToString() == LaneKey(9, 0));
  CHECK(seeks == 3);
}

// A LevelDB in memory opened through TableCheckEnv, with blocks of a few
// entries each (far fewer than CheckedIterator::kStepsPerStatus), its keys
// in tables only.
class TableStore {
 public:
  static constexpr int kKeys = 10000;

  TableStore()
      : mem_(leveldb::NewMemEnv(leveldb::Env::Default())),
        env_(std::make_unique<TableCheckEnv>(mem_.get())) {
    Open();
    for (int i = 0; i < kKeys; ++i) {
      REQUIRE(db_->Put(leveldb::WriteOptions(), Key(i),
                       absl::StrFormat("value-%06d", i))
                  .ok());
    }
    db_->CompactRange(nullptr, nullptr);
    db_.reset();
  }

  static std::string Key(int i) { return absl::StrFormat("key%06d", i); }
  leveldb::DB* db() { return db_.get(); }

  void Open() {
    leveldb::Options o;
    o.env = env_.get();
    o.create_if_missing = true;
    o.block_size = 128;
    o.write_buffer_size = 64 << 10;  // Several tables.
    o.compression = leveldb::kNoCompression;
    leveldb::DB* db = nullptr;
    REQUIRE(leveldb::DB::Open(o, "/tables", &db).ok());
    db_.reset(db);
  }

  // Overwrites `bytes` at `offset` (from the end when negative) of the
  // middle one of the table files, which hold keys both before and after
  // its own; the Db must be closed.
  void Damage(int64_t offset, const std::string& bytes) {
    std::vector<std::string> names;
    REQUIRE(mem_->GetChildren("/tables", &names).ok());
    std::vector<std::string> tables;
    for (const std::string& n : names) {
      if (n.ends_with(".ldb")) tables.push_back("/tables/" + n);
    }
    REQUIRE(tables.size() >= 3);
    std::sort(tables.begin(), tables.end());
    const std::string& table = tables[tables.size() / 2];
    std::string contents;
    REQUIRE(leveldb::ReadFileToString(mem_.get(), table, &contents).ok());
    REQUIRE(contents.size() > 8192);
    const size_t at = offset >= 0
                          ? static_cast<size_t>(offset)
                          : contents.size() - static_cast<size_t>(-offset);
    contents.replace(at, bytes.size(), bytes);
    REQUIRE(leveldb::WriteStringToFile(mem_.get(), contents, table).ok());
  }

  // Reads every key with a checked iterator; true if the keys it gave are
  // key 0, 1, 2... with none missing before the last one given.
  bool ReadsAPrefix(leveldb::Status* status, int* read) {
    std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(db(), {}));
    *read = 0;
    bool prefix = true;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (it->key().ToString() != Key(*read)) prefix = false;
      ++*read;
    }
    *status = it->status();
    return prefix;
  }

 private:
  std::unique_ptr<leveldb::Env> mem_;
  std::unique_ptr<TableCheckEnv> env_;
  std::unique_ptr<leveldb::DB> db_;
};

TEST_CASE("a checked iterator stops at the step that meets a damaged block") {
  TableStore store;
  // Bytes of a data block, in a table with tables before and after it.
  store.Damage(4000, "\xff\xfe\xfd");
  store.Open();
  const uint64_t failures_before = table_read_failures.load();
  leveldb::Status s;
  int read = 0;
  // LevelDB's own iterator steps over the damaged block and goes on.
  int plain_read = 0;
  {
    std::unique_ptr<leveldb::Iterator> plain(store.db()->NewIterator({}));
    for (plain->SeekToFirst(); plain->Valid(); plain->Next()) ++plain_read;
    REQUIRE_FALSE(plain->status().ok());
  }
  REQUIRE(plain_read > 0);
  REQUIRE(plain_read < TableStore::kKeys);
  CHECK(table_read_failures.load() > failures_before);
  // The checked one gives the keys before it, none after it, and the error.
  CHECK(store.ReadsAPrefix(&s, &read));
  INFO(s.ToString());
  CHECK(read > 0);
  CHECK(read < plain_read);
  CHECK(s.IsCorruption());
  CHECK(absl::StrContains(s.ToString(), "checksum mismatch"));
}

TEST_CASE("a checked iterator stops at a table whose footer is damaged") {
  TableStore store;
  // The metaindex handle's offset, a varint that never ends: LevelDB
  // would fail the table's open without a read that could name the file.
  store.Damage(-48, std::string(12, '\xff'));
  store.Open();
  leveldb::Status s;
  int read = 0;
  const bool prefix = store.ReadsAPrefix(&s, &read);
  INFO(s.ToString());
  CHECK(prefix);
  CHECK(read > 0);
  CHECK(s.IsCorruption());
  CHECK(absl::StrContains(s.ToString(), "bad footer"));
}

}  // namespace
}  // namespace hq
