// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// DbImpl (lib/engine/db_impl.h): trimming the lane activity index
// (doc/format.md, "Lane activity index"). A hint below every consumer's
// source position was taken in by all of them; a consumer created later
// starts at the index's tail and walks the lanes. So the hints of a
// (queue, priority) below the lowest position of the queue's consumers are
// deleted, except the newest one, which keeps `seq` from going back. The
// index head (format.h) records how far, so that no later read steps over
// the deleted hints.

#include <algorithm>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "leveldb/write_batch.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

absl::StatusOr<std::vector<uint64_t>> DbImpl::LowestSourcePositions(
    uint32_t queue_id, leveldb::Iterator* it) {
  // Per priority; max: no consumer has a position (there are at most 256
  // priorities).
  std::vector<uint64_t> lowest(256, std::numeric_limits<uint64_t>::max());
  const std::string prefix = format::QueuePrefix(format::kSourceTag, queue_id);
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    format::SourceValue v;
    if (!format::DecodeSource(View(it->value()), &v) ||
        v.priorities.size() > lowest.size()) {
      return absl::DataLossError(absl::StrCat(
          "malformed lane source position '", Printable(View(it->key())),
          "': the lane activity index is not trimmed"));
    }
    for (size_t p = 0; p < v.priorities.size(); ++p) {
      lowest[p] = std::min(lowest[p], v.priorities[p].next_seq);
    }
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading source positions"));
  return lowest;
}

absl::Status DbImpl::TrimHints(SweepStats* stats) {
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  std::unique_ptr<leveldb::Iterator> src(
      NewCheckedIterator(db_.get(), CheckedReadOptions()));
  const std::string index(1, format::kHintTag);
  uint32_t queue_id = 0;
  std::vector<uint64_t> lowest;
  it->Seek(index);
  while (it->Valid() && View(it->key()).starts_with(index) && !IsClosing()) {
    // The (queue, priority) of this hint (or index head), and its newest.
    const std::string_view key = View(it->key());
    uint64_t seq;
    if (key.size() < 6 || !format::DecodeHintSeq(key, &seq)) {
      return absl::DataLossError(absl::StrCat(
          "malformed lane activity index key '", Printable(key), "'"));
    }
    const uint32_t qid = coding::DecodeFixed32(key.data() + 1);
    const int priority = 255 - static_cast<unsigned char>(key[5]);
    const std::string prefix = format::HintPrefix(qid, priority);
    // Hints below it were deleted by an earlier trim.
    uint64_t trimmed = 0;
    if (seq == 0 && !format::DecodeIndexHead(View(it->value()), &trimmed)) {
      return absl::DataLossError(absl::StrCat(
          "malformed lane activity index head '", Printable(key), "'"));
    }
    if (lowest.empty() || qid != queue_id) {
      HQ_ASSIGN_OR_RETURN(lowest, LowestSourcePositions(qid, src.get()));
      queue_id = qid;
    }
    HQ_ASSIGN_OR_RETURN(const uint64_t next, NextHintSeq(prefix, src.get()));
    // Below every position, and not the newest (next - 1).
    const uint64_t below = std::min(lowest[priority], next - 1);
    if (trimmed < below) {
      HQ_RETURN_IF_ERROR(
          TrimHintRange(qid, priority, trimmed, below, it.get(), stats));
    }
    it->Seek(coding::PrefixSuccessor(prefix));  // The next priority or queue.
  }
  return FromLevelDb(it->status(), "reading the lane activity index");
}

absl::Status DbImpl::TrimHintRange(uint32_t queue_id, int priority,
                                   uint64_t from, uint64_t below,
                                   leveldb::Iterator* it, SweepStats* stats) {
  const std::string prefix = format::HintPrefix(queue_id, priority);
  const std::string head = format::IndexHeadKey(queue_id, priority);
  leveldb::WriteBatch batch;
  size_t in_batch = 0;
  // Each batch writes the index head with its deletions, so they always
  // follow a live key: a seek that runs into them stops at the head.
  auto flush = [&](uint64_t trimmed_below) {
    batch.Put(head, format::EncodeIndexHead(trimmed_below));
    const absl::Status s = WriteOther(leveldb::WriteOptions(), &batch,
                                      "trimming the lane activity index");
    batch.Clear();
    in_batch = 0;
    return s;
  };
  // From the first hint not yet trimmed: never over the earlier deletions.
  bool deleted = false;
  it->Seek(format::HintKey(queue_id, priority, std::max<uint64_t>(from, 1)));
  for (; it->Valid() && View(it->key()).starts_with(prefix); it->Next()) {
    uint64_t seq;
    if (!format::DecodeHintSeq(View(it->key()), &seq)) {
      return absl::DataLossError(
          absl::StrCat("malformed lane activity index key '",
                       Printable(View(it->key())), "'"));
    }
    if (seq >= below) break;
    batch.Delete(it->key());
    deleted = true;
    ++stats->hints_trimmed;
    if (++in_batch == static_cast<size_t>(options_.ttl_sweep_batch)) {
      HQ_RETURN_IF_ERROR(flush(seq + 1));
    }
  }
  HQ_RETURN_IF_ERROR(
      FromLevelDb(it->status(), "reading the lane activity index"));
  return deleted ? flush(below) : absl::OkStatus();
}

}  // namespace hq
