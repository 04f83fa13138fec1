// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The block-level half of Db::Verify: every block of every table file the
// Db's current version names is read and its checksum checked, and a
// damaged block is reported with its file, its offset and the keys around
// it, and the walk goes on past it (a key walk stops at the first damaged
// block; this one finds them all). The files LevelDB needs but cannot
// open (missing, truncated, not a table) are reported too.

#ifndef HQ_LIB_ENGINE_TABLE_CHECK_H_
#define HQ_LIB_ENGINE_TABLE_CHECK_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "leveldb/db.h"
#include "leveldb/env.h"

namespace hq::table_check {

// One damaged part of a table file.
struct Damage {
  std::string file;  // The table's file name, e.g. "000012.ldb".
  // The damaged block's offset and size in the file; both 0 when the whole
  // file is unreadable (missing, truncated footer or index).
  uint64_t offset = 0;
  uint64_t bytes = 0;
  std::string what;  // LevelDB's or hq's words for the damage.
  // The last key read before the damage and the first one after it, both
  // empty when unknown (the whole file, or the table's first or last block):
  // the keys of the damaged block lie between them.
  std::string key_before;
  std::string key_after;
};

struct Report {
  int64_t tables = 0;  // Table files walked.
  int64_t blocks = 0;  // Blocks read, with their checksums checked.
  std::vector<Damage> damage;
};

// The numbers and sizes of the table files `db`'s current version names
// (LevelDB's "leveldb.sstables" property). Internal if the property does
// not parse.
struct LiveTable {
  uint64_t number = 0;
  uint64_t size = 0;
};
absl::StatusOr<std::vector<LiveTable>> LiveTables(leveldb::DB* db);

// Parses the text of LevelDB's "leveldb.sstables" property. False if a line
// that names a table does not parse.
bool ParseSstables(std::string_view text, std::vector<LiveTable>* out);

// Walks `tables` in `dir` through `env` (the Env the Db was opened with, so
// table blocks are checked as every read checks them). A table listed but
// gone from the directory is reported as missing only if `db`'s current
// version still names it (a compaction may have replaced it meanwhile).
// Keys in Damage are user keys. Every problem is in the Report: the walk
// itself does not fail.
// `after_table`, if not empty, is called after each table with its size.
Report CheckTables(
    leveldb::DB* db, leveldb::Env* env, const std::string& dir,
    const std::vector<LiveTable>& tables,
    const std::function<void(uint64_t bytes)>& after_table = nullptr);

}  // namespace hq::table_check

#endif  // HQ_LIB_ENGINE_TABLE_CHECK_H_
