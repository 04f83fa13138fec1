// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Point reads of keys asked in ascending order, answered by one checked
// iterator: a key at or just after the last one asked costs a compare or a
// few steps, not a Get through every level. A consumer reading the cursors
// of the lanes a walk found (in key order) uses it.

#ifndef HQ_LIB_ENGINE_ORDERED_LOOKUP_H_
#define HQ_LIB_ENGINE_ORDERED_LOOKUP_H_

#include <memory>
#include <string>

#include "leveldb/db.h"
#include "leveldb/iterator.h"
#include "leveldb/slice.h"
#include "leveldb/status.h"

namespace hq {

class OrderedLookup {
 public:
  // Reads `db`, which must outlive this object.
  explicit OrderedLookup(leveldb::DB* db) : db_(db) {}

  // As CheckedGet (lib/engine/checked_read.h): OK with `*value`, NotFound,
  // or the error that ends the read (sticky, as the iterator's). Reads the
  // snapshot of the first Get: a key written after it is not seen, so the
  // caller must hold what orders the writes of the keys it asks for. Keys
  // asked out of order are answered right, at the cost of a seek.
  leveldb::Status Get(const leveldb::Slice& key, std::string* value);

 private:
  leveldb::DB* const db_;
  std::unique_ptr<leveldb::Iterator> it_;
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_ORDERED_LOOKUP_H_
