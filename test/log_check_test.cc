// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// lib/format/log_check against logs LevelDB itself wrote (in the in-memory
// Env): every record is found, and each kind of damage is told apart.

#include "lib/format/log_check.h"

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "catch2/catch.hpp"
#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/helpers/memenv.h"
#include "leveldb/write_batch.h"
#include "lib/format/manifest.h"

namespace hq::log_check {
namespace {

using State = LogCheck::State;

// A LevelDB log of `writes.size()` writes (one WriteBatch each, the i-th
// putting key "key<i>" with value writes[i]), as LevelDB wrote it.
std::string RealLog(const std::vector<std::string>& writes) {
  std::unique_ptr<leveldb::Env> env(
      leveldb::NewMemEnv(leveldb::Env::Default()));
  leveldb::Options o;
  o.env = env.get();
  o.create_if_missing = true;
  o.write_buffer_size = 64 << 20;  // One log: no memtable switch.
  leveldb::DB* raw = nullptr;
  REQUIRE(leveldb::DB::Open(o, "/db", &raw).ok());
  std::unique_ptr<leveldb::DB> db(raw);
  for (size_t i = 0; i < writes.size(); ++i) {
    REQUIRE(db->Put({}, absl::StrCat("key", i), writes[i]).ok());
  }
  std::vector<std::string> names;
  REQUIRE(env->GetChildren("/db", &names).ok());
  std::string log;
  for (const std::string& n : names) {
    if (n.ends_with(".log")) {
      REQUIRE(leveldb::ReadFileToString(env.get(), "/db/" + n, &log).ok());
    }
  }
  REQUIRE(!log.empty());
  return log;
}

// Values of every size class: inside one block, spanning two, many.
std::vector<std::string> Writes(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) {
    const size_t size = rng() % 10 == 0 ? 40000 + rng() % 70000 : rng() % 900;
    out.push_back(std::string(size, static_cast<char>('a' + i % 26)));
  }
  return out;
}

TEST_CASE("an intact LevelDB log: every record, in order, and clean") {
  const std::vector<std::string> writes = Writes(300, 1);
  const std::string log = RealLog(writes);
  std::vector<std::string> records;
  const LogCheck c =
      Check(log, [&](std::string_view r) { records.emplace_back(r); });
  CHECK(c.state == State::kClean);
  CHECK(c.records == static_cast<int64_t>(writes.size()));
  CHECK(c.intact_end == log.size());
  REQUIRE(records.size() == writes.size());
  for (size_t i = 0; i < writes.size(); ++i) {
    // A WriteBatch: a header, then the Put's key and value.
    leveldb::WriteBatch b;
    b.Put(absl::StrCat("key", i), writes[i]);
    INFO("record " << i);
    CHECK(records[i].size() == b.ApproximateSize());
    CHECK(records[i].ends_with(writes[i]));
  }
}

TEST_CASE("a log cut anywhere: a short tail, a prefix of the records") {
  const std::vector<std::string> writes = Writes(60, 2);
  const std::string log = RealLog(writes);
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const size_t cut = rng() % log.size();
    const LogCheck c = Check(std::string_view(log).substr(0, cut));
    INFO("cut at " << cut << " of " << log.size());
    // A cut at a record's end is clean; a cut in a block's zero trailer is
    // clean too (LevelDB pads blocks with fewer than 7 bytes left).
    CHECK(c.state != State::kDamaged);
    CHECK(c.intact_end <= cut);
    const LogCheck whole = Check(std::string_view(log).substr(0, c.intact_end));
    CHECK(whole.state == State::kClean);
    CHECK(whole.records == c.records);
  }
}

TEST_CASE("a flipped byte or a zeroed page in the middle is a hole") {
  const std::vector<std::string> writes = Writes(200, 4);
  const std::string log = RealLog(writes);
  REQUIRE(log.size() > 4 * kBlockSize);
  SECTION("a flipped byte") {
    std::string damaged = log;
    const size_t at = log.size() / 2;
    damaged[at] ^= 0x01;
    const LogCheck c = Check(damaged);
    CHECK(c.state == State::kDamaged);
    CHECK(c.intact_end <= at);
    CHECK(c.damage_offset <= at);
    CHECK(c.damage_offset >= c.intact_end);
    CHECK(c.intact_after > 0);
    CHECK(c.records + c.intact_after < static_cast<int64_t>(writes.size()) + 1);
    CHECK(!c.damage.empty());
  }
  SECTION("a zeroed page") {
    std::string damaged = log;
    const size_t page = log.size() / 2 / 4096 * 4096;
    std::fill(damaged.begin() + page, damaged.begin() + page + 4096, '\0');
    const LogCheck c = Check(damaged);
    CHECK(c.state == State::kDamaged);
    CHECK(c.intact_end <= page);
    CHECK(c.intact_after > 0);
  }
  SECTION("garbage to the end: a torn tail, nothing intact after") {
    std::string damaged = log;
    const size_t at = log.size() - 3000;
    for (size_t i = at; i < damaged.size(); ++i) damaged[i] = '\x5a';
    const LogCheck c = Check(damaged);
    CHECK(c.state == State::kDamaged);
    CHECK(c.intact_after == 0);
    CHECK(c.intact_end <= at);
  }
}

TEST_CASE("a MANIFEST's log numbers, as LevelDB wrote them") {
  std::unique_ptr<leveldb::Env> env(
      leveldb::NewMemEnv(leveldb::Env::Default()));
  leveldb::Options o;
  o.env = env.get();
  o.create_if_missing = true;
  o.write_buffer_size = 64 << 10;
  {
    leveldb::DB* raw = nullptr;
    REQUIRE(leveldb::DB::Open(o, "/db", &raw).ok());
    std::unique_ptr<leveldb::DB> db(raw);
    for (int i = 0; i < 2000; ++i) {  // Several memtable switches.
      REQUIRE(db->Put({}, absl::StrCat("k", i), std::string(100, 'v')).ok());
    }
  }
  std::string current, manifest;
  REQUIRE(leveldb::ReadFileToString(env.get(), "/db/CURRENT", &current).ok());
  current.pop_back();  // The newline.
  REQUIRE(
      leveldb::ReadFileToString(env.get(), "/db/" + current, &manifest).ok());
  manifest::State m;
  std::string error;
  REQUIRE(manifest::Read(manifest, &m, &error));
  CHECK(!m.tables.empty());
  CHECK(m.last_sequence > 0);
  CHECK(m.intact_end == manifest.size());
  // The live log is the one LevelDB replays: numbered log_number.
  std::vector<std::string> names;
  REQUIRE(env->GetChildren("/db", &names).ok());
  bool found = false;
  for (const std::string& n : names) {
    uint64_t number;
    if (manifest::ParseLogName(n, &number)) {
      found = true;
      CHECK(number >= m.log_number);
    }
  }
  CHECK(found);
  for (const auto& [number, table] : m.tables) {  // Every live table exists.
    CHECK(env->FileExists(absl::StrFormat("/db/%06d.ldb", number)));
  }

  // A damaged edit refuses the whole MANIFEST: which logs to replay is
  // unknown. The first edit's payload starts after its header.
  std::string flipped = manifest;
  flipped[kHeaderSize + 2] ^= 0x40;
  manifest::State untouched = m;
  CHECK(!manifest::Read(flipped, &untouched, &error));
  CHECK(absl::StrContains(error, "checksum"));
  CHECK(untouched.log_number == m.log_number);

  // An edit cut short by the end of the file is what a writer killed
  // mid-write leaves. LevelDB's own recovery ignores it and keeps the edits
  // before it, and so does this reader.
  manifest::State torn;
  REQUIRE(
      manifest::Read(manifest.substr(0, manifest.size() - 1), &torn, &error));
  CHECK(torn.edits == m.edits - 1);
  CHECK(torn.intact_end < manifest.size());
}

TEST_CASE("CURRENT names a MANIFEST only with its newline") {
  std::string_view name;
  REQUIRE(manifest::ParseCurrent("MANIFEST-000002\n", &name));
  CHECK(name == "MANIFEST-000002");
  CHECK_FALSE(manifest::ParseCurrent("MANIFEST-000002", &name));  // Cut short.
  CHECK_FALSE(manifest::ParseCurrent("", &name));
  CHECK_FALSE(manifest::ParseCurrent("\n", &name));
  CHECK_FALSE(manifest::ParseCurrent("000002.log\n", &name));
  CHECK_FALSE(manifest::ParseCurrent("MANIFEST-x\n", &name));
}

}  // namespace
}  // namespace hq::log_check
