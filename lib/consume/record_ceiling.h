// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The greatest key of a consumer's records of one kind (a group's cursors,
// a subscription's checkpoints), kept so that a lane above it is known to
// have no record without a read: every lane of a first walk over existing
// data. Sound only while its owner is the only writer of those records and
// raises the ceiling with every one it writes (deletions may leave it
// high, which costs a read, never a wrong answer).
//
// Not thread-safe: the owner calls it under its own lock.

#ifndef HQ_LIB_CONSUME_RECORD_CEILING_H_
#define HQ_LIB_CONSUME_RECORD_CEILING_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "leveldb/db.h"

namespace hq {

class RecordCeiling {
 public:
  // Reads the greatest key of `db` that starts with `prefix` (one seek);
  // none means no record at all.
  absl::Status Load(leveldb::DB* db, std::string_view prefix);

  // Whether no record exists at all (MayExist is false for every key).
  bool none() const { return ceiling_.empty(); }
  // Whether a record with key `key` may exist.
  bool MayExist(std::string_view key) const {
    return !ceiling_.empty() && key <= ceiling_;
  }
  // A record with key `key` is being written.
  void Raise(std::string_view key) {
    if (key > ceiling_) ceiling_.assign(key);
  }

 private:
  std::string ceiling_;  // Empty: no record.
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_RECORD_CEILING_H_
