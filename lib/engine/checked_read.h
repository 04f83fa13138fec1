// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Reads that check what they read. Every LevelDB read of hq goes through
// these:
//   - CheckedReadOptions(): the ReadOptions of every read (checksums are
//     checked by TableCheckEnv, below);
//   - NewCheckedIterator(): an iterator that stops at the first error. A
//     LevelDB iterator can stay Valid() past a damaged block (its two-level
//     iterator steps to the next block and keeps the error in status()),
//     so a loop that checks status() only once Valid() is false would
//     answer short without an error;
//   - CheckedGet(): a Get whose "not found" means the key is absent, never
//     that a table file is missing (LevelDB reports both as NotFound).
// Errors come back as leveldb::Status::Corruption naming what is damaged
// (FromLevelDb turns that into absl DataLoss).
//
// TableCheckEnv, the Env hq opens LevelDB through, checks the CRC of every
// table block read and fails the read with a message naming the file.

#ifndef HQ_LIB_ENGINE_CHECKED_READ_H_
#define HQ_LIB_ENGINE_CHECKED_READ_H_

#include <string>

#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"

namespace hq {

// The message of `s` without LevelDB's code prefix ("Corruption: ",
// "IO error: ", ...), for a message that wraps it in a status of its own.
std::string StatusMessage(const leveldb::Status& s);

// ReadOptions for every hq read. Checksums are verified by TableCheckEnv,
// which every Db opens LevelDB through and which checks every block read
// from a table file (a block served from the block cache was checked when
// it was read); LevelDB's verify_checksums would compute the same CRC a
// second time (hq_bench: a full scan at 0.36 of raw LevelDB's rate with
// both, 0.65 with the Env's alone), so it stays off.
inline leveldb::ReadOptions CheckedReadOptions() { return {}; }

// A new iterator over `db` that is not Valid() once its source reports an
// error, and whose status() then names the damage and the keys around it.
// The error is sticky: no later Seek makes it Valid() again. Caller owns
// the result.
//
// A Seek whose target lies between the last key passed and the current
// one (or past the last key passed, once the iterator is at the end)
// leaves the iterator where it is, without seeking LevelDB's tables: the
// iterator reads one snapshot, so that gap has no key. A reader going
// from one lane to the next pays one seek for a run of adjacent lanes.
leveldb::Iterator* NewCheckedIterator(leveldb::DB* db,
                                      const leveldb::ReadOptions& ro);

// As NewCheckedIterator, over `it` (owned by the result), which must read
// one snapshot in bytewise key order, as LevelDB's iterators do.
leveldb::Iterator* WrapCheckedIterator(leveldb::Iterator* it);

// db->Get, except that a table file that cannot be found is Corruption
// (naming the file), not NotFound.
leveldb::Status CheckedGet(leveldb::DB* db, const leveldb::ReadOptions& ro,
                           const leveldb::Slice& key, std::string* value);

// A leveldb::Env wrapper that checks every block read from a table file
// (.ldb, .sst) against its CRC-32C, and the table's magic number, before
// LevelDB sees it. A mismatch or a short read fails the read with
// Corruption: "table file <path>: block at offset O (N bytes): checksum
// mismatch" (LevelDB's own check names no file). Thread-safe as its base.
class TableCheckEnv final : public leveldb::EnvWrapper {
 public:
  explicit TableCheckEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}

  leveldb::Status NewRandomAccessFile(
      const std::string& name, leveldb::RandomAccessFile** result) override;
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_CHECKED_READ_H_
