// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/claim_records.h"

#include <algorithm>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/engine/checked_read.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

ClaimRecords::ClaimRecords(leveldb::DB* db, uint32_t queue_id,
                           uint32_t group_id, std::string group)
    : db_(db),
      queue_id_(queue_id),
      group_id_(group_id),
      group_(std::move(group)) {}

absl::Status ClaimRecords::Load(
    absl::FunctionRef<absl::Status(std::string_view lane_prefix,
                                   const format::CursorValue& cursor)>
        fold,
    leveldb::WriteBatch* batch) {
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_, CheckedReadOptions()));
  const std::string prefix = format::ClaimPrefix(queue_id_, group_id_);
  const std::string message_prefix = format::MessagePrefix(queue_id_);
  std::vector<format::ClaimEntry> entries;
  std::string lane_prefix;
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    uint64_t seq;
    if (!format::DecodeClaimSeq(View(it->key()), &seq) ||
        !format::DecodeClaimEntries(View(it->value()), &entries)) {
      return absl::DataLossError(absl::StrCat("consumer group '", group_,
                                              "': malformed claim record"));
    }
    for (const format::ClaimEntry& e : entries) {
      lane_prefix = message_prefix;
      lane_prefix.append(e.lane_rest);
      HQ_RETURN_IF_ERROR(fold(lane_prefix, e.cursor));
    }
    batch->Delete(it->key());
    next_seq_ = std::max(next_seq_, seq + 1);
  }
  return FromLevelDb(it->status(), "reading claim records");
}

void ClaimRecords::Put(const Log& log, leveldb::WriteBatch* batch) {
  if (log.entries_ == 0) return;
  batch->Put(format::ClaimKey(queue_id_, group_id_, log.seq_), log.value_);
  live_[log.seq_] = log.entries_;
  next_seq_ = log.seq_ + 1;
}

void ClaimRecords::Retire(Seqs* seqs, leveldb::WriteBatch* batch) {
  for (const uint64_t seq : *seqs) {
    auto it = live_.find(seq);
    if (it == live_.end() || --it->second > 0) continue;
    if (batch != nullptr) {
      batch->Delete(format::ClaimKey(queue_id_, group_id_, seq));
    }
    live_.erase(it);
  }
  seqs->clear();
}

}  // namespace hq
