// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The parts of Db::Repair (lib/admin/repair.cc) that work without a Db, for its
// tests: the read of a damaged directory's files (what Repair reports as
// "before"), and the counting of keys and messages it reports.

#ifndef HQ_LIB_ADMIN_REPAIR_H_
#define HQ_LIB_ADMIN_REPAIR_H_

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "hq/db.h"
#include "hq/layout.h"
#include "leveldb/env.h"

namespace hq::repair {

// Counts keys, and messages per queue, of a Db's live keys given in key
// order (the catalog, tag 0x01, comes before the messages, tag 0x10).
class Census {
 public:
  void Add(std::string_view key, std::string_view value);

  int64_t keys() const { return keys_; }
  int64_t messages() const { return messages_; }
  // Messages per queue id.
  const std::map<uint32_t, int64_t>& per_queue() const { return per_queue_; }
  // Queue names by id, from the catalog.
  const absl::flat_hash_map<uint32_t, std::string>& names() const {
    return names_;
  }
  const absl::flat_hash_map<uint32_t, Layout>& layouts() const {
    return layouts_;
  }
  // The format record: whether there is one and its version (0 if it does
  // not decode).
  bool has_format() const { return has_format_; }
  uint32_t format_version() const { return format_version_; }
  // Whether the keys look like an hq database's: a record only hq writes
  // (a catalog record that decodes, the next_queue_id counter), or, when
  // those are lost, message records whose values decode and hardly any key
  // with a tag hq does not use (under a tenth).
  bool looks_like_hq() const {
    return has_hq_records_ ||
           (decoded_messages_ > 0 && foreign_keys_ * 10 < keys_);
  }

 private:
  int64_t keys_ = 0;
  int64_t messages_ = 0;
  std::map<uint32_t, int64_t> per_queue_;
  absl::flat_hash_map<uint32_t, std::string> names_;
  absl::flat_hash_map<uint32_t, Layout> layouts_;
  bool has_format_ = false;
  uint32_t format_version_ = 0;
  bool has_hq_records_ = false;
  int64_t decoded_messages_ = 0;  // Message-tag keys with a message value.
  int64_t foreign_keys_ = 0;      // Keys with a tag hq does not use.
};

// What ReadFiles found.
struct FileRead {
  Census census;
  std::vector<RepairReport::Damage> damage;
  // Table and log files read, and their entries (LevelDB records, every
  // version of every key).
  int64_t tables = 0, logs = 0, entries = 0;
  // For the damage entries of unreadable blocks: the index in `damage`,
  // and the user keys read before and after the gap ("" for the table's
  // start or end).
  struct Gap {
    size_t damage;
    std::string before, after;
  };
  std::vector<Gap> gaps;
  // Whether a log holds a damaged record (a short tail is no damage).
  bool log_damaged = false;
};

// Reads the LevelDB files directly in `dir`, changing nothing: every table
// file, block by block (a damaged block is skipped and reported with the
// readable keys around it), and the logs in number order, up to the first
// damaged record (Open's point-in-time recovery keeps no more); merges
// them as LevelDB would (the newest version of each key wins) and counts
// the live keys. CURRENT and the MANIFEST are read only to report them
// missing or damaged, and the tables the MANIFEST names that are missing or
// unreadable. Memory: the logs' records, and a block per table.
// Errors: Internal (a file that exists could not be read at all).
absl::Status ReadFiles(leveldb::Env* env, const std::string& dir,
                       FileRead* out);

// For tests of the tests: with `skip`, Db::Repair leaves hq's records as
// LevelDB's RepairDB left them (the rest runs, Verify included).
void TEST_SetSkipMending(bool skip);

// For tests of an undamaged Db's full repair: with `force`, Db::Repair
// repairs a Db that verifies clean instead of answering nothing_to_repair.
void TEST_SetForceRepair(bool force);

// For the kill tests: called in Db::Repair's copy aside after each file
// is copied, with the number copied so far (none when null).
void TEST_SetCopyAsideHook(void (*hook)(int files_copied));

}  // namespace hq::repair

#endif  // HQ_LIB_ADMIN_REPAIR_H_
