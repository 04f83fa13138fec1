// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/record_ceiling.h"

#include <memory>

#include "lib/engine/checked_read.h"
#include "lib/format/coding.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

absl::Status RecordCeiling::Load(leveldb::DB* db, std::string_view prefix) {
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db, CheckedReadOptions()));
  // The last key before the end of the prefix's range.
  const std::string end = coding::PrefixSuccessor(prefix);
  if (!end.empty()) it->Seek(end);
  if (!end.empty() && it->Valid()) {
    it->Prev();
  } else {
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading consumer records"));
    it->SeekToLast();
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading consumer records"));
  ceiling_.clear();
  if (it->Valid() && View(it->key()).starts_with(prefix)) {
    ceiling_.assign(View(it->key()));
  }
  return absl::OkStatus();
}

}  // namespace hq
