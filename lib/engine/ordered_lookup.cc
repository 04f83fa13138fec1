// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/engine/ordered_lookup.h"

#include "lib/engine/checked_read.h"

namespace hq {
namespace {

// Steps forward before a key is sought: a step costs far less than a seek
// of every level, and the next key asked is most often a few keys on.
constexpr int kMaxSteps = 4;

}  // namespace

leveldb::Status OrderedLookup::Get(const leveldb::Slice& key,
                                   std::string* value) {
  if (it_ == nullptr) {
    it_.reset(NewCheckedIterator(db_, CheckedReadOptions()));
  }
  for (int i = 0; i < kMaxSteps && it_->Valid() && it_->key().compare(key) < 0;
       ++i) {
    it_->Next();
  }
  // Free when the position answers it (NewCheckedIterator).
  it_->Seek(key);
  if (!it_->status().ok()) return it_->status();
  if (!it_->Valid() || it_->key() != key)
    return leveldb::Status::NotFound(leveldb::Slice());
  value->assign(it_->value().data(), it_->value().size());
  return leveldb::Status::OK();
}

}  // namespace hq
