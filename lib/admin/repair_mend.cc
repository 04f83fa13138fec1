// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Repair's mending: RecreateLostQueues, and MendRecords, which walks
// the records with the rules of lib/admin/record_walk.h (Db::Verify's) and
// for each problem either corrects the record (a counter, a cursor beyond
// its lane's end, an empty value), adds a missing one (reservation, TTL
// index record) or moves the record aside
// into a LevelDB of its own (SideDb): nothing is deleted. A record that
// Verify would accept is never changed.

#include "lib/admin/repair_mend.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <queue>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "hq/clock.h"
#include "hq/status.h"
#include "leveldb/comparator.h"
#include "leveldb/db.h"
#include "leveldb/filter_policy.h"
#include "leveldb/table.h"
#include "leveldb/write_batch.h"
#include "lib/admin/record_walk.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/log_recovery.h"
#include "lib/engine/options_check.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/format/log_check.h"
#include "lib/format/manifest.h"
#include "lib/util/file_util.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"
#include "lib/util/sync.h"

namespace hq {
namespace repair {
namespace {

std::string Hex(std::string_view s) { return absl::BytesToHexString(Av(s)); }

using Action = RepairReport::Change::Action;

std::string Fixed32(uint32_t v) {
  std::string s;
  coding::PutFixed32(&s, v);
  return s;
}

std::string Fixed64(uint64_t v) {
  std::string s;
  coding::PutFixed64(&s, v);
  return s;
}

// Repair's policy for the RecordWalker (lib/admin/record_walk.h): each
// finding is mended as its remedy says, and what is mended after the walk
// (counters, reservations) is decided from what the walk read and the
// message ids its records refer to. Changes are written in batches as the
// walk goes (records moved aside are written to the side Db first).
class Mender : public WalkPolicy {
 public:
  Mender(leveldb::DB* db, SideDb* side, RepairReport* report)
      : db_(db), side_(side), report_(report) {}

  bool Found(const Finding& f) override;
  void Refers(uint32_t queue_id, uint32_t partition, MessageId id,
              bool message) override;
  absl::Status Step() override;
  void WalkEnded(const WalkFacts& facts) override;

  // The first error of a mend (a failed read, a failed write).
  const absl::Status& status() const { return status_; }
  int64_t changes() const { return changes_; }
  // Writes what is batched: the records moved aside, then the changes.
  absl::Status Flush();

 private:
  void Note(std::string_view key, std::string problem, Action action);
  void Write(std::string_view key, std::string_view value, std::string problem,
             Action action);
  void FinishCounters(const WalkFacts& facts);
  void FinishReservations(const WalkFacts& facts);

  leveldb::DB* const db_;
  SideDb* const side_;
  RepairReport* const report_;
  absl::Status status_;
  int64_t changes_ = 0;
  leveldb::WriteBatch fix_, aside_;
  // Per partition (RecordWalker::PartitionKey): just past the last
  // message's ms, and the highest ms referred to.
  absl::flat_hash_map<uint64_t, uint64_t> message_ms_;
  absl::flat_hash_map<uint64_t, uint64_t> referred_;
};

bool Mender::Found(const Finding& f) {
  const std::string& mend = f.mend.empty() ? f.problem : f.mend;
  switch (f.remedy) {
    case Finding::Remedy::kMoveAside: {
      const leveldb::Slice key(f.key.data(), f.key.size());
      aside_.Put(key, f.value);
      fix_.Delete(key);
      ++report_->moved_aside;
      Note(f.key, absl::StrCat(mend, ": moved aside"), Action::kMovedAside);
      return false;
    }
    case Finding::Remedy::kRewrite:
      Write(f.key, f.value, mend, Action::kRewritten);
      return true;
    case Finding::Remedy::kAdd:
      Write(f.write_key, f.value, mend, Action::kAdded);
      return true;
    case Finding::Remedy::kLater:
      return true;
    case Finding::Remedy::kFail:
      if (status_.ok()) status_ = FromLevelDb(f.io, "repair: " + mend);
      return false;
  }
  return false;
}

void Mender::Refers(uint32_t queue_id, uint32_t partition, MessageId id,
                    bool message) {
  const uint64_t pk = RecordWalker::PartitionKey(queue_id, partition);
  if (message) {
    uint64_t& m = message_ms_[pk];
    m = std::max(m, id.ms + 1);
  }
  uint64_t& r = referred_[pk];
  r = std::max(r, id.ms);
}

absl::Status Mender::Step() {
  HQ_RETURN_IF_ERROR(status_);
  if (fix_.ApproximateSize() + aside_.ApproximateSize() > (4 << 20)) {
    return Flush();
  }
  return absl::OkStatus();
}

void Mender::Note(std::string_view key, std::string problem, Action action) {
  ++changes_;
  ++report_->change_count;
  if (report_->changes.size() < RepairReport::kMaxListedChanges) {
    report_->changes.push_back({Hex(key), std::move(problem), action});
  }
}

void Mender::Write(std::string_view key, std::string_view value,
                   std::string problem, Action action) {
  fix_.Put(leveldb::Slice(key.data(), key.size()),
           leveldb::Slice(value.data(), value.size()));
  Note(key, std::move(problem), action);
}

absl::Status Mender::Flush() {
  leveldb::WriteBatch empty;
  if (aside_.ApproximateSize() > empty.ApproximateSize()) {
    HQ_RETURN_IF_ERROR(side_->Write(&aside_));
    aside_.Clear();
  }
  if (fix_.ApproximateSize() > empty.ApproximateSize()) {
    leveldb::WriteOptions wo;
    wo.sync = true;
    HQ_RETURN_IF_ERROR(FromLevelDb(db_->Write(wo, &fix_), "repair: writing"));
    fix_.Clear();
  }
  return absl::OkStatus();
}

// What can only be decided after the walk: counters and reservations (the
// walk's closing rule adds missing TTL index records).
void Mender::WalkEnded(const WalkFacts& facts) {
  // A Db left without any hq record is empty: Open initializes it.
  if (!facts.has_format && !facts.has_next_queue_id && facts.queues.empty()) {
    return;
  }
  FinishCounters(facts);
  FinishReservations(facts);
}

void Mender::FinishCounters(const WalkFacts& facts) {
  if (!facts.has_format) {
    Write(format::MetaKey("format"), Fixed32(format::kFormatVersion),
          "format record missing: added", Action::kAdded);
  }
  const uint32_t need_queue_id = facts.max_queue_id + 1;
  if (!facts.has_next_queue_id) {
    Write(format::MetaKey("next_queue_id"), Fixed32(need_queue_id),
          absl::StrCat("next_queue_id missing: set to ", need_queue_id),
          Action::kAdded);
  } else if (facts.bad_next_queue_id || facts.next_queue_id < need_queue_id) {
    Write(format::MetaKey("next_queue_id"), Fixed32(need_queue_id),
          absl::StrCat("next_queue_id malformed or not above queue id ",
                       facts.max_queue_id, ": set to ", need_queue_id),
          Action::kRewritten);
  }
  const uint32_t need_group_id = facts.max_group_id + 1;
  if (facts.bad_next_group_id ||
      (need_group_id > 1 && facts.next_group_id < need_group_id)) {
    Write(format::MetaKey("next_group_id"), Fixed32(need_group_id),
          absl::StrCat("next_group_id ",
                       facts.has_next_group_id ? "malformed or not above"
                                               : "missing, with",
                       " group id ", facts.max_group_id, ": set to ",
                       need_group_id),
          facts.has_next_group_id ? Action::kRewritten : Action::kAdded);
  }
}

// Reservations: every message id of a partition must be below it; it is
// set above every id the partition's records refer to (cursors,
// checkpoints, tasks, dedup records, watermarks), so that no id below one
// of them is handed out again.
void Mender::FinishReservations(const WalkFacts& facts) {
  std::set<uint64_t> partitions(facts.bad_reservation.begin(),
                                facts.bad_reservation.end());
  for (const auto& [pk, ms] : message_ms_) partitions.insert(pk);
  for (uint64_t pk : partitions) {
    const uint64_t need = std::min(std::max(message_ms_[pk], referred_[pk] + 1),
                                   MessageId::kMaxMs + 1);
    auto stored = facts.reserved.find(pk);
    const uint32_t qid = static_cast<uint32_t>(pk >> 16);
    const uint32_t p = static_cast<uint32_t>(pk & 0xffff);
    const std::string key = format::ReserveKey(qid, p);
    if (facts.bad_reservation.contains(pk)) {
      Write(key, Fixed64(need),
            absl::StrCat("malformed reservation value: set to ms ", need),
            Action::kRewritten);
    } else if (stored == facts.reserved.end()) {
      Write(
          key, Fixed64(need),
          absl::StrCat("partition without an id reservation: set to ms ", need),
          Action::kAdded);
    } else if (stored->second < message_ms_[pk]) {
      Write(
          key, Fixed64(need),
          absl::StrCat("reservation ms ", stored->second,
                       " not above the partition's messages: raised to ", need),
          Action::kRewritten);
    }
  }
}

// Queues whose catalog record was lost while their records remain (the
// block holding the catalog was damaged): the catalog record is written
// again, with options read off the records, so that the messages stay in a
// queue instead of going aside with everything else of it. Its name: the
// one its TTL index record keeps, else "recovered-<id>". Its options: the
// highest partition and priority its records use, the layout its keys
// have (topic if every message and lane directory key parses as one), no
// TTL (the TTL is not stored anywhere else), the default payload limit.
// Queue ids with no message and no lane directory record are left to the
// Mender. Returns the number of queues written.
// What the records of a queue without a catalog record tell of it.
struct Orphan {
  uint32_t max_partition = 0;
  int max_priority = 0;
  bool evidence = false;  // A message or lane directory record.
  bool topic = true;      // Every key parses in the topic layout.
  std::string ttl_name;   // The name its TTL index record gives, if any.
};

// The ids of the queues whose drop is in progress (a drop marker).
absl::StatusOr<absl::flat_hash_set<uint32_t>> DroppingQueueIds(
    leveldb::DB* db) {
  absl::flat_hash_set<uint32_t> dropping;
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db, CheckedReadOptions()));
  const std::string prefix = format::DropPrefix();
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    if (it->key().size() == 5) {
      dropping.insert(coding::DecodeFixed32(it->key().data() + 1));
    }
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "repair: reading"));
  return dropping;
}

// Adds what record `key` (tag `tag`, value `value`) of an orphan queue
// says of it to `o`.
void NoteOrphanRecord(char tag, std::string_view key, std::string_view value,
                      Orphan* o) {
  if (tag == format::kTtlTag) {
    if (key.size() == 5 && format::ValidateQueueName(value).ok()) {
      o->ttl_name = std::string(value);
    }
    return;
  }
  if (key.size() < 7) return;
  o->max_partition = std::max<uint32_t>(o->max_partition,
                                        coding::DecodeFixed16(key.data() + 5));
  if (tag == format::kReserveTag || key.size() < LayoutCodec::kHeadSize) {
    return;
  }
  o->evidence = true;
  o->max_priority =
      std::max(o->max_priority, 255 - static_cast<unsigned char>(key[7]));
  // Topic layout: head fixed16 len topic [message_id].
  const size_t n = key.size();
  const size_t len =
      n >= LayoutCodec::kHeadSize + 2
          ? coding::DecodeFixed16(key.data() + LayoutCodec::kHeadSize)
          : SIZE_MAX;
  const size_t base = LayoutCodec::kHeadSize + 2 + len;
  if (len == SIZE_MAX ||
      (n != base && n != base + LayoutCodec::kMessageIdSize)) {
    o->topic = false;
  }
}

// Reads every key once: the names of the queues in the catalog into
// `names`, and what the records of each other queue (not being dropped)
// tell of it into `orphans`.
absl::Status FindOrphans(leveldb::DB* db,
                         const absl::flat_hash_set<uint32_t>& dropping,
                         absl::flat_hash_set<std::string>* names,
                         std::map<uint32_t, Orphan>* orphans) {
  absl::flat_hash_set<uint32_t> known;
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db, CheckedReadOptions()));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view key = View(it->key());
    if (key.empty()) continue;
    const char tag = key[0];
    if (tag == format::kCatalogTag) {
      format::QueueRecord r;
      if (format::DecodeQueueRecord(View(it->value()), &r).ok()) {
        known.insert(r.id);
        names->insert(std::string(key.substr(1)));
      }
      continue;
    }
    if (key.size() < 5 ||
        (tag != format::kReserveTag && tag != format::kLaneDirTag &&
         tag != format::kTtlTag && tag != format::kMessageTag)) {
      continue;
    }
    const uint32_t id = coding::DecodeFixed32(key.data() + 1);
    if (id == 0 || known.contains(id) || dropping.contains(id)) continue;
    NoteOrphanRecord(tag, key, View(it->value()), &(*orphans)[id]);
  }
  return FromLevelDb(it->status(), "repair: reading");
}

// The name a recreated queue gets: the one its TTL record gives, unless it
// is empty or taken, else "recovered-ID" (with "-2", "-3"... if taken).
// Adds it to `names`.
std::string RecreatedName(uint32_t id, const std::string& ttl_name,
                          absl::flat_hash_set<std::string>* names) {
  std::string name = ttl_name;
  if (name.empty() || names->contains(name)) {
    name = absl::StrCat("recovered-", id);
    for (int i = 2; names->contains(name); ++i) {
      name = absl::StrCat("recovered-", id, "-", i);
    }
  }
  names->insert(name);
  return name;
}

}  // namespace

absl::StatusOr<int64_t> RecreateLostQueues(leveldb::DB* db, absl::Time now,
                                           RepairReport* report) {
  HQ_ASSIGN_OR_RETURN(const absl::flat_hash_set<uint32_t> dropping,
                      DroppingQueueIds(db));
  absl::flat_hash_set<std::string> names;
  std::map<uint32_t, Orphan> orphans;
  HQ_RETURN_IF_ERROR(FindOrphans(db, dropping, &names, &orphans));
  leveldb::WriteBatch b;
  int64_t written = 0;
  for (const auto& [id, o] : orphans) {
    if (!o.evidence) continue;
    format::QueueRecord r;
    r.id = id;
    r.options.partitions = o.max_partition + 1;
    r.options.priorities = o.max_priority + 1;
    r.options.layout = o.topic ? Layout::kTopic : Layout::kTime;
    r.options.ttl = absl::InfiniteDuration();
    r.created = now;
    if (!format::ValidateQueueOptions(r.options).ok()) continue;
    const std::string name = RecreatedName(id, o.ttl_name, &names);
    const std::string key = format::CatalogKey(name);
    b.Put(key, format::EncodeQueueRecord(r));
    ++written;
    ++report->change_count;
    if (report->changes.size() < RepairReport::kMaxListedChanges) {
      report->changes.push_back(
          {Hex(key),
           absl::StrFormat(
               "queue id %d lost its catalog record, not its records: "
               "recreated as '%s' with %d partitions, %d priorities, %s "
               "layout (read off its records), no TTL",
               id, name, r.options.partitions, r.options.priorities,
               std::string(LayoutName(r.options.layout))),
           RepairReport::Change::Action::kAdded});
    }
  }
  if (written > 0) {
    leveldb::WriteOptions wo;
    wo.sync = true;
    HQ_RETURN_IF_ERROR(FromLevelDb(db->Write(wo, &b), "repair: writing"));
  }
  return written;
}

absl::StatusOr<int64_t> MendRecords(leveldb::DB* db, absl::Time now,
                                    SideDb* side, RepairReport* report) {
  leveldb::ReadOptions ro = CheckedReadOptions();
  ro.fill_cache = false;
  ro.snapshot = db->GetSnapshot();
  Mender mender(db, side, report);
  absl::Status s;
  {
    // Its iterators go before the snapshot is released.
    bool keys_lost = false;
    for (const RepairReport::Damage& d : report->damage) {
      keys_lost = keys_lost || d.keys_lost;
    }
    RecordWalker walker(db, ro, now, &mender,
                        {.keys_lost = keys_lost,
                         .reading = "repair: reading",
                         .reading_lanes = "repair: reading a lane",
                         .reading_drops = "repair: reading drop markers"});
    s = walker.Run();
  }
  db->ReleaseSnapshot(ro.snapshot);
  HQ_RETURN_IF_ERROR(s);
  HQ_RETURN_IF_ERROR(mender.status());
  HQ_RETURN_IF_ERROR(mender.Flush());
  return mender.changes();
}

}  // namespace repair
}  // namespace hq
