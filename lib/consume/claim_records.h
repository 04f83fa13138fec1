// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The claim records of a paged consumer group (doc/format.md, "Claim
// records"). A claim that hands out the first messages of lanes writes
// their new cursors as entries of one record, instead of a cursor record
// per lane. A lane's entry is superseded when a later write puts its
// cursors again (its cursor record, or an entry of a later claim); a
// record left with no live entry is deleted. At load, every record is
// folded into the cursors of the lanes it names and deleted.
//
// Not thread-safe: its group calls it under the group's lock
// (GroupImpl::mu_). The DB must outlive it.

#ifndef HQ_LIB_CONSUME_CLAIM_RECORDS_H_
#define HQ_LIB_CONSUME_CLAIM_RECORDS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "leveldb/db.h"
#include "leveldb/write_batch.h"
#include "lib/format/format.h"

namespace hq {

class ClaimRecords {
 public:
  // A claim in progress: the value of its record, and its entries.
  class Log {
   public:
    // Adds the entry of the lane `lane_prefix` with cursors `cursor`;
    // returns the record's seq, which the lane keeps (Retire).
    uint64_t Add(std::string_view lane_prefix,
                 const format::CursorValue& cursor) {
      format::AppendClaimEntry(&value_, lane_prefix, cursor);
      ++entries_;
      return seq_;
    }

   private:
    friend class ClaimRecords;
    explicit Log(uint64_t seq) : seq_(seq) {}
    uint64_t seq_;
    std::string value_;
    uint32_t entries_ = 0;
  };
  // The seqs of the records holding one lane's live entries.
  using Seqs = absl::InlinedVector<uint64_t, 1>;

  // The claim records of group `group_id` (named `group` in errors) of the
  // queue `queue_id`.
  ClaimRecords(leveldb::DB* db, uint32_t queue_id, uint32_t group_id,
               std::string group);
  ClaimRecords(const ClaimRecords&) = delete;
  ClaimRecords& operator=(const ClaimRecords&) = delete;

  // At load: calls fold(lane_prefix, cursor) for each entry of each record,
  // in record order, and appends the deletion of each record to `batch`.
  // New records are numbered after them. DataLoss for a malformed record;
  // fold's error stops the load and is returned.
  absl::Status Load(
      absl::FunctionRef<absl::Status(std::string_view lane_prefix,
                                     const format::CursorValue& cursor)>
          fold,
      leveldb::WriteBatch* batch);
  // The log of a new claim.
  Log Begin() const { return Log(next_seq_); }
  // Appends the record of `log` to `batch`, if it has entries, and counts
  // them live.
  void Put(const Log& log, leveldb::WriteBatch* batch);
  // A lane's entries in the records `seqs` are superseded (`seqs` is
  // cleared): a record left with none is deleted in `batch` (if null, only
  // forgotten: the next load folds it in).
  void Retire(Seqs* seqs, leveldb::WriteBatch* batch);

 private:
  leveldb::DB* const db_;
  const uint32_t queue_id_;
  const uint32_t group_id_;
  const std::string group_;
  // Per record on disk (by seq), its live entries.
  absl::flat_hash_map<uint64_t, uint32_t> live_;
  uint64_t next_seq_ = 1;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_CLAIM_RECORDS_H_
