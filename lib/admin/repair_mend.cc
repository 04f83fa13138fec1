// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Repair's mending: RecreateLostQueues and the Mender behind
// MendRecords (lib/admin/repair_mend.h). The Mender checks what Db::Verify
// checks (lib/admin/verify.cc), in the same order and with the same
// per-queue memory, and for each problem either corrects the record (a
// counter, a cursor beyond its lane's end, an empty value), adds a missing
// one (lane directory entry, reservation, TTL index record, fence) or moves
// the record aside into a LevelDB of its own (SideDb): nothing is deleted.
// A record that Verify would accept is never changed.

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

struct QueueEntry {
  std::string name;
  format::QueueRecord record;
  bool has_ttl_record = false;
  absl::flat_hash_set<uint32_t> groups;
  absl::flat_hash_set<uint32_t> subs;
};

using Action = RepairReport::Change::Action;

// One pass over the repaired LevelDB, in key order, on a snapshot; its
// changes are written in batches as it goes (records moved aside are
// written to the side Db first). Checks mirror lib/admin/verify.cc's Verifier.
class Mender {
 public:
  Mender(leveldb::DB* db, absl::Time now, SideDb* side, RepairReport* report)
      : db_(db), now_(now), side_(side), report_(report) {
    ro_ = CheckedReadOptions();
    ro_.fill_cache = false;
    ro_.snapshot = db_->GetSnapshot();
  }
  ~Mender() { db_->ReleaseSnapshot(ro_.snapshot); }

  // Returns the number of changes made.
  absl::StatusOr<int64_t> Run() {
    HQ_RETURN_IF_ERROR(ReadDropMarkers());
    {
      std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(db_, ro_));
      lane_it_.reset(NewCheckedIterator(db_, ro_));
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        key_ = View(it->key());
        value_ = View(it->value());
        Check();
        HQ_RETURN_IF_ERROR(status_);
        if (fix_.ApproximateSize() + aside_.ApproximateSize() > (4 << 20)) {
          HQ_RETURN_IF_ERROR(Flush());
        }
      }
      HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "repair: reading"));
      HQ_RETURN_IF_ERROR(
          FromLevelDb(lane_it_->status(), "repair: reading a lane"));
      lane_it_.reset();
    }
    EndLane();
    Finish();
    HQ_RETURN_IF_ERROR(status_);
    HQ_RETURN_IF_ERROR(Flush());
    return changes_;
  }

 private:
  // ---- Changes.

  void Note(std::string_view key, std::string problem, Action action) {
    ++changes_;
    ++report_->change_count;
    if (report_->changes.size() < RepairReport::kMaxListedChanges) {
      report_->changes.push_back({Hex(key), std::move(problem), action});
    }
  }
  // Moves the current record aside.
  void Aside(std::string problem) {
    aside_.Put(leveldb::Slice(key_.data(), key_.size()),
               leveldb::Slice(value_.data(), value_.size()));
    fix_.Delete(leveldb::Slice(key_.data(), key_.size()));
    ++report_->moved_aside;
    Note(key_, absl::StrCat(problem, ": moved aside"), Action::kMovedAside);
  }
  void Write(std::string_view key, std::string_view value, std::string problem,
             Action action) {
    fix_.Put(leveldb::Slice(key.data(), key.size()),
             leveldb::Slice(value.data(), value.size()));
    Note(key, std::move(problem), action);
  }
  absl::Status Flush() {
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

  static uint64_t PartitionKey(uint32_t queue_id, uint32_t partition) {
    return (uint64_t{queue_id} << 16) | partition;
  }
  // Records that `id` is referred to in a partition (see Finish).
  void Refer(uint32_t queue_id, uint32_t partition, MessageId id) {
    uint64_t& m = referred_[PartitionKey(queue_id, partition)];
    m = std::max(m, id.ms);
  }

  // ---- The walk (as Verifier's).

  absl::Status ReadDropMarkers() {
    std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(db_, ro_));
    const std::string prefix = format::DropPrefix();
    for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
         it->Next()) {
      const std::string_view key = View(it->key());
      if (key.size() == 5) {
        const uint32_t id = coding::DecodeFixed32(key.data() + 1);
        dropping_.insert(id);
        max_queue_id_ = std::max(max_queue_id_, id);
      }
    }
    return FromLevelDb(it->status(), "repair: reading drop markers");
  }

  void Check() {
    if (key_.empty()) return Aside("empty key");
    if (key_[0] != format::kMessageTag) EndLane();
    switch (key_[0]) {
      case format::kMetaTag:
        return CheckMeta();
      case format::kCatalogTag:
        return CheckCatalog();
      case format::kReserveTag:
        return CheckReserve();
      case format::kDropTag:
        if (key_.size() != 5) Aside("malformed drop marker");
        return;
      case format::kLaneDirTag:
        return CheckLaneDir();
      case format::kTtlTag:
        return CheckTtl();
      case format::kGroupTag:
        return CheckGroupOrSub(/*is_group=*/true);
      case format::kSubTag:
        return CheckGroupOrSub(/*is_group=*/false);
      case format::kCursorTag:
        return CheckCursor();
      case format::kTaskTag:
        return CheckTask();
      case format::kDeadTag:
        return CheckDead();
      case format::kDedupTag:
        return CheckDedup();
      case format::kCheckpointTag:
        return CheckCheckpoint();
      case format::kHintTag:
        return CheckHint();
      case format::kSourceTag:
        return CheckSource();
      case format::kMessageTag:
        return CheckMessage();
      default:
        return Aside(absl::StrFormat("unknown record tag 0x%02x",
                                     static_cast<unsigned char>(key_[0])));
    }
  }

  static bool DecodeU32(std::string_view in, uint32_t* v) {
    return coding::GetFixed32(&in, v) && in.empty();
  }

  void CheckMeta() {
    const std::string_view name = key_.substr(1);
    uint32_t v;
    if (name == "format") {
      has_format_ = true;
      if (!DecodeU32(value_, &v)) {
        Write(key_, Fixed32(format::kFormatVersion),
              "malformed format record: rewritten", Action::kRewritten);
      }
      return;
    }
    if (name == "next_queue_id") {
      has_next_queue_id_ = true;
      if (DecodeU32(value_, &v)) {
        next_queue_id_ = v;
      } else {
        bad_next_queue_id_ = true;
      }
      return;
    }
    if (name == "next_group_id") {
      has_next_group_id_ = true;
      if (DecodeU32(value_, &v) && v != 0) {
        next_group_id_ = v;
      } else {
        bad_next_group_id_ = true;
      }
      return;
    }
    Aside(absl::StrCat("unknown metadata record '", Printable(name), "'"));
  }

  void CheckCatalog() {
    const std::string_view name = key_.substr(1);
    if (absl::Status s = format::ValidateQueueName(name); !s.ok()) {
      return Aside(absl::StrCat("malformed catalog key: ", s.message()));
    }
    format::QueueRecord r;
    if (absl::Status s = format::DecodeQueueRecord(value_, &r); !s.ok()) {
      return Aside(absl::StrCat("malformed catalog value: ", s.message()));
    }
    if (r.id == 0) return Aside("queue id 0");
    if (queues_.contains(r.id)) {
      return Aside(absl::StrFormat("queue id %d used by queues '%s' and '%s'",
                                   r.id, queues_[r.id].name, Printable(name)));
    }
    max_queue_id_ = std::max(max_queue_id_, r.id);
    queues_[r.id] = QueueEntry{std::string(name), r};
  }

  // As Verifier::QueueOf; what it rejects is moved aside, except the
  // records of a queue being dropped (Open finishes the drop).
  QueueEntry* QueueOf(std::string_view kind, size_t min_size) {
    if (key_.size() < min_size) {
      Aside(absl::StrCat("malformed ", Av(kind), " key (too short)"));
      return nullptr;
    }
    const uint32_t id = coding::DecodeFixed32(key_.data() + 1);
    auto it = queues_.find(id);
    if (it != queues_.end()) return &it->second;
    if (!dropping_.contains(id)) {
      Aside(absl::StrFormat("%s of queue id %d, which is not in the catalog",
                            kind, id));
    }
    return nullptr;
  }

  bool Lane(std::string_view kind, const QueueEntry& q, std::string_view lane,
            uint32_t* partition = nullptr) {
    uint32_t p;
    int priority;
    std::string_view topic;
    const bool has_topic = q.record.options.layout == Layout::kTopic;
    if (!LayoutCodec::ParseLanePrefix(lane, has_topic, &p, &priority, &topic) ||
        topic.size() > format::kMaxTopicBytes) {
      Aside(absl::StrCat("malformed ", Av(kind), " key: not a lane of queue '",
                         q.name, "'"));
      return false;
    }
    if (p >= q.record.options.partitions ||
        priority >= q.record.options.priorities) {
      Aside(absl::StrFormat(
          "%s key: partition %d or priority %d out of range of queue '%s'",
          kind, p, priority, q.name));
      return false;
    }
    if (partition != nullptr) *partition = p;
    return true;
  }

  static std::string LanePrefix(uint32_t queue_id, std::string_view rest) {
    std::string lane = format::MessagePrefix(queue_id);
    lane.append(rest);
    return lane;
  }

  static std::string Fixed32(uint32_t v) {
    std::string s;
    coding::PutFixed32(&s, v);
    return s;
  }
  static std::string Fixed64(uint64_t v) {
    std::string s;
    coding::PutFixed64(&s, v);
    return s;
  }

  void CheckReserve() {
    QueueEntry* q = QueueOf("reservation", 5);
    if (q == nullptr) return;
    if (key_.size() != 7) return Aside("malformed reservation key");
    const uint32_t p = coding::DecodeFixed16(key_.data() + 5);
    if (p >= q->record.options.partitions) {
      return Aside(absl::StrFormat(
          "reservation key: partition %d out of range (queue '%s' has %d)", p,
          q->name, q->record.options.partitions));
    }
    std::string_view in = value_;
    uint64_t ms;
    const uint64_t pk = PartitionKey(q->record.id, p);
    if (!coding::GetFixed64(&in, &ms) || !in.empty() ||
        ms > MessageId::kMaxMs + 1) {
      bad_reservation_.insert(pk);
      return;
    }
    reserved_[pk] = ms;
  }

  void CheckLaneDir() {
    QueueEntry* q = QueueOf("lane directory", LayoutCodec::kHeadSize);
    if (q == nullptr) return;
    if (!Lane("lane directory", *q, LanePrefix(q->record.id, key_.substr(5)))) {
      return;
    }
    if (!value_.empty()) {
      Write(key_, "", "malformed lane directory value (not empty): emptied",
            Action::kRewritten);
    }
  }

  void CheckTtl() {
    QueueEntry* q = QueueOf("TTL index", 5);
    if (q == nullptr) return;
    if (key_.size() != 5) return Aside("malformed TTL index key");
    if (q->record.options.ttl == absl::InfiniteDuration()) {
      return Aside(absl::StrCat("TTL index record of queue '", q->name,
                                "', which has no TTL"));
    }
    q->has_ttl_record = true;
    if (value_ != q->name) {
      Write(key_, q->name,
            absl::StrCat("TTL index record does not name queue '", q->name,
                         "': rewritten"),
            Action::kRewritten);
    }
  }

  void CheckGroupOrSub(bool is_group) {
    const std::string_view kind = is_group ? "group" : "subscription";
    QueueEntry* q = QueueOf(kind, 5);
    if (q == nullptr) return;
    const std::string_view name = key_.substr(5);
    if (absl::Status s = format::ValidateGroupName(name); !s.ok()) {
      return Aside(absl::StrCat("malformed ", Av(kind), " key: ", s.message()));
    }
    uint32_t id;
    if (is_group) {
      format::GroupRecord r;
      if (absl::Status s = format::DecodeGroupRecord(value_, &r); !s.ok()) {
        return Aside(absl::StrCat("malformed group value: ", s.message()));
      }
      id = r.id;
    } else {
      format::SubRecord r;
      if (absl::Status s = format::DecodeSubRecord(value_, &r); !s.ok()) {
        return Aside(
            absl::StrCat("malformed subscription value: ", s.message()));
      }
      for (uint32_t p : r.partitions) {
        if (p >= q->record.options.partitions) {
          return Aside(absl::StrFormat(
              "subscription value: partition %d out of range (queue '%s' has "
              "%d)",
              p, q->name, q->record.options.partitions));
        }
      }
      id = r.id;
    }
    if (id == 0) return Aside(absl::StrCat(Av(kind), " id 0"));
    if (!group_ids_.insert(id).second) {
      return Aside(absl::StrFormat(
          "%s id %d already used by another group or subscription", kind, id));
    }
    max_group_id_ = std::max(max_group_id_, id);
    (is_group ? q->groups : q->subs).insert(id);
  }

  void CheckHint() {
    QueueEntry* q = QueueOf("lane index", 5);
    if (q == nullptr) return;
    uint64_t seq;
    if (!format::DecodeHintSeq(key_, &seq) ||
        q->record.options.layout != Layout::kTopic) {
      return Aside("malformed lane index key");
    }
    const std::string lane = LanePrefix(q->record.id, value_);
    if (!Lane("lane index", *q, lane)) return;
    if (lane[LayoutCodec::kHeadSize - 1] != key_[5]) {
      Aside("lane index value: its priority is not its key's");
    }
  }

  void CheckSource() {
    QueueEntry* q =
        QueueOf("lane source position", format::kGroupRecordPrefixSize);
    if (q == nullptr) return;
    const uint32_t id = coding::DecodeFixed32(key_.data() + 5);
    if (!q->groups.contains(id) && !q->subs.contains(id)) {
      return Aside(absl::StrFormat(
          "lane source position of consumer id %d, which queue '%s' does "
          "not have",
          id, q->name));
    }
    format::SourceValue v;
    if (key_.size() != format::kGroupRecordPrefixSize ||
        !format::DecodeSource(value_, &v) ||
        v.priorities.size() !=
            static_cast<size_t>(q->record.options.priorities)) {
      return Aside("malformed lane source position");
    }
  }

  QueueEntry* OwnerOf(std::string_view kind, bool of_group) {
    QueueEntry* q = QueueOf(kind, format::kGroupRecordPrefixSize);
    if (q == nullptr) return nullptr;
    const uint32_t id = coding::DecodeFixed32(key_.data() + 5);
    if (!(of_group ? q->groups : q->subs).contains(id)) {
      Aside(absl::StrFormat("%s of %s id %d, which queue '%s' does not have",
                            kind, of_group ? "group" : "subscription", id,
                            q->name));
      return nullptr;
    }
    return q;
  }

  // As Verifier::LaneEnd: after the lane's last message, or its TTL
  // watermark if higher; Min() for an empty lane.
  MessageId LaneEnd(std::string_view lane) {
    std::string fence(lane);
    LayoutCodec::AppendMessageId(&fence, MessageId::Max());
    MessageId end = MessageId::Min();
    lane_it_->Seek(fence);
    if (lane_it_->Valid()) {
      lane_it_->Prev();
    } else {
      lane_it_->SeekToLast();
    }
    MessageId last;
    if (lane_it_->Valid() &&
        LayoutCodec::LaneMessage(View(lane_it_->key()), lane, &last)) {
      end = last.Next();
    }
    lane_it_->Seek(leveldb::Slice(lane.data(), lane.size()));
    if (lane_it_->Valid() && View(lane_it_->key()) == lane &&
        lane_it_->value().size() == LayoutCodec::kMessageIdSize) {
      end =
          std::max(end, LayoutCodec::DecodeMessageId(lane_it_->value().data()));
    }
    return end;
  }

  void CheckCursor() {
    QueueEntry* q = OwnerOf("cursor", /*of_group=*/true);
    if (q == nullptr) return;
    const std::string lane =
        LanePrefix(q->record.id, key_.substr(format::kGroupRecordPrefixSize));
    uint32_t p;
    if (!Lane("cursor", *q, lane, &p)) return;
    format::CursorValue c;
    if (!format::DecodeCursor(value_, &c)) {
      return Aside("malformed cursor value");
    }
    MessageId limit = LaneEnd(lane);
    if (q->record.options.ttl != absl::InfiniteDuration()) {
      limit = std::max(limit, MessageId::AtTime(now_ - q->record.options.ttl));
    }
    if (limit < c.scan) {
      const MessageId old = c.scan;
      c.scan = limit;
      c.done = std::min(c.done, limit);
      Write(key_, format::EncodeCursor(c),
            absl::StrCat("scan cursor ", old.ToString(),
                         " beyond the lane end ", limit.ToString(),
                         ": lowered to it (messages after it are delivered)"),
            Action::kRewritten);
    }
    Refer(q->record.id, p, c.scan);
  }

  void CheckTask() {
    QueueEntry* q = OwnerOf("task", /*of_group=*/true);
    if (q == nullptr) return;
    if (key_.size() <
        format::kGroupRecordPrefixSize + 3 + LayoutCodec::kMessageIdSize) {
      return Aside("malformed task key (too short)");
    }
    const std::string lane = LanePrefix(
        q->record.id, key_.substr(format::kGroupRecordPrefixSize,
                                  key_.size() - format::kGroupRecordPrefixSize -
                                      LayoutCodec::kMessageIdSize));
    uint32_t p;
    if (!Lane("task", *q, lane, &p)) return;
    format::TaskValue t;
    if (!format::DecodeTask(value_, &t)) return Aside("malformed task value");
    Refer(q->record.id, p,
          LayoutCodec::DecodeMessageId(key_.data() + key_.size() -
                                       LayoutCodec::kMessageIdSize));
  }

  void CheckDead() {
    QueueEntry* q = OwnerOf("dead letter", /*of_group=*/true);
    if (q == nullptr) return;
    if (key_.size() !=
        format::kGroupRecordPrefixSize + 2 + LayoutCodec::kMessageIdSize) {
      return Aside("malformed dead letter key");
    }
    format::DeadValue d;
    if (!format::DecodeDead(value_, &d) || d.reason < 1 || d.reason > 3) {
      return Aside("malformed dead letter value");
    }
    if (d.original_partition >= q->record.options.partitions ||
        d.priority >= q->record.options.priorities) {
      return Aside(absl::StrFormat(
          "dead letter value: partition %d or priority %d out of range of "
          "queue '%s'",
          d.original_partition, d.priority, q->name));
    }
  }

  void CheckDedup() {
    QueueEntry* q = QueueOf("dedup", 6);
    if (q == nullptr) return;
    if (key_.size() - 5 > format::kMaxKeyBytes) {
      return Aside("malformed dedup key (dedup key over 1024 bytes)");
    }
    uint32_t p;
    MessageId id;
    if (!format::DecodeDedup(value_, &p, &id)) {
      return Aside("malformed dedup value");
    }
    if (p >= q->record.options.partitions) {
      return Aside(absl::StrFormat(
          "dedup value: partition %d out of range (queue '%s' has %d)", p,
          q->name, q->record.options.partitions));
    }
    Refer(q->record.id, p, id);
  }

  void CheckCheckpoint() {
    QueueEntry* q = OwnerOf("checkpoint", /*of_group=*/false);
    if (q == nullptr) return;
    const std::string lane =
        LanePrefix(q->record.id, key_.substr(format::kGroupRecordPrefixSize));
    uint32_t p;
    if (!Lane("checkpoint", *q, lane, &p)) return;
    MessageId next;
    if (!format::DecodeCheckpoint(value_, &next)) {
      return Aside("malformed checkpoint value");
    }
    Refer(q->record.id, p, next);
  }

  // The lane the walk is in ends: a lane with keys gets a fence if it has
  // none (every lane ever written has one: layout_codec.h).
  void EndLane() {
    if (lane_.empty()) return;
    if (!lane_has_fence_) {
      std::string fence;
      LayoutCodec::AppendLaneFence(&fence, lane_);
      Write(fence, "", "lane fence missing: added", Action::kAdded);
    }
    lane_.clear();
  }

  void CheckMessage() {
    QueueEntry* q = QueueOf("message", LayoutCodec::kHeadSize);
    if (q == nullptr) return;
    size_t lane_size = LayoutCodec::kHeadSize;
    const bool has_topic = q->record.options.layout == Layout::kTopic;
    const std::string malformed = absl::StrCat(
        "malformed message key: not a key of queue '", q->name, "' (",
        Av(LayoutName(q->record.options.layout)), " layout)");
    if (has_topic) {
      if (key_.size() < LayoutCodec::kHeadSize + 2) return Aside(malformed);
      lane_size +=
          2 + coding::DecodeFixed16(key_.data() + LayoutCodec::kHeadSize);
    }
    const std::string_view rest =
        key_.size() >= lane_size ? key_.substr(lane_size) : std::string_view();
    const bool head = key_.size() == lane_size;
    if (key_.size() < lane_size ||
        (!head && rest.size() < LayoutCodec::kMessageIdSize) ||
        (has_topic && !head && rest.size() != LayoutCodec::kMessageIdSize) ||
        (!has_topic &&
         rest.size() > LayoutCodec::kMessageIdSize + format::kMaxTopicBytes)) {
      return Aside(malformed);
    }
    const std::string_view lane = key_.substr(0, lane_size);
    uint32_t partition = 0;
    if (!Lane("message", *q, lane, &partition)) return;
    if (lane != lane_) {
      EndLane();
      lane_.assign(lane);
      lane_has_fence_ = false;
      std::string dir;
      format::AppendLaneDirKey(&dir, lane);
      std::string unused;
      const leveldb::Status s = CheckedGet(db_, ro_, dir, &unused);
      if (s.IsNotFound()) {
        Write(dir, "", "message lane missing from the lane directory: added",
              Action::kAdded);
      } else if (!s.ok()) {
        status_ = FromLevelDb(s, "repair: reading the lane directory");
        return;
      }
    }
    if (head) {
      if (value_.size() != LayoutCodec::kMessageIdSize) {
        return Aside("malformed lane head value (TTL watermark)");
      }
      Refer(q->record.id, partition,
            LayoutCodec::DecodeMessageId(value_.data()));
      return;
    }
    const MessageId id = LayoutCodec::DecodeMessageId(rest.data());
    if (id == MessageId::Max()) {
      if (rest.size() != LayoutCodec::kMessageIdSize) {
        return Aside("malformed lane fence (a topic after it)");
      }
      lane_has_fence_ = true;
      if (!value_.empty()) {
        Write(key_, "", "malformed lane fence (a value): emptied",
              Action::kRewritten);
      }
      return;
    }
    std::string_view k, payload;
    if (!format::DecodeMessageValue(value_, &k, &payload)) {
      return Aside("malformed message value");
    }
    const uint64_t pk = PartitionKey(q->record.id, partition);
    uint64_t& m = message_ms_[pk];
    m = std::max(m, id.ms + 1);
    Refer(q->record.id, partition, id);
  }

  // What can only be decided after the walk: counters, reservations and
  // TTL index records.
  void Finish() {
    // A Db left without any hq record is empty: Open initializes it.
    if (!has_format_ && !has_next_queue_id_ && queues_.empty()) return;
    if (!has_format_) {
      Write(format::MetaKey("format"), Fixed32(format::kFormatVersion),
            "format record missing: added", Action::kAdded);
    }
    const uint32_t need_queue_id = max_queue_id_ + 1;
    if (!has_next_queue_id_) {
      Write(format::MetaKey("next_queue_id"), Fixed32(need_queue_id),
            absl::StrCat("next_queue_id missing: set to ", need_queue_id),
            Action::kAdded);
    } else if (bad_next_queue_id_ || next_queue_id_ < need_queue_id) {
      Write(format::MetaKey("next_queue_id"), Fixed32(need_queue_id),
            absl::StrCat("next_queue_id malformed or not above queue id ",
                         max_queue_id_, ": set to ", need_queue_id),
            Action::kRewritten);
    }
    const uint32_t need_group_id = max_group_id_ + 1;
    if (bad_next_group_id_ ||
        (need_group_id > 1 && next_group_id_ < need_group_id)) {
      Write(format::MetaKey("next_group_id"), Fixed32(need_group_id),
            absl::StrCat(
                "next_group_id ",
                has_next_group_id_ ? "malformed or not above" : "missing, with",
                " group id ", max_group_id_, ": set to ", need_group_id),
            has_next_group_id_ ? Action::kRewritten : Action::kAdded);
    }
    // Reservations: every message id of a partition must be below it; it
    // is set above every id the partition's records refer to (cursors,
    // checkpoints, tasks, dedup records, watermarks), so that no id below
    // one of them is handed out again.
    std::set<uint64_t> partitions(bad_reservation_.begin(),
                                  bad_reservation_.end());
    for (const auto& [pk, ms] : message_ms_) partitions.insert(pk);
    for (uint64_t pk : partitions) {
      const uint64_t need = std::min(
          std::max(message_ms_[pk], referred_[pk] + 1), MessageId::kMaxMs + 1);
      auto stored = reserved_.find(pk);
      const uint32_t qid = static_cast<uint32_t>(pk >> 16);
      const uint32_t p = static_cast<uint32_t>(pk & 0xffff);
      const std::string key = format::ReserveKey(qid, p);
      if (bad_reservation_.contains(pk)) {
        Write(key, Fixed64(need),
              absl::StrCat("malformed reservation value: set to ms ", need),
              Action::kRewritten);
      } else if (stored == reserved_.end()) {
        Write(key, Fixed64(need),
              absl::StrCat("partition without an id reservation: set to ms ",
                           need),
              Action::kAdded);
      } else if (stored->second < message_ms_[pk]) {
        Write(key, Fixed64(need),
              absl::StrCat("reservation ms ", stored->second,
                           " not above the partition's messages: raised to ",
                           need),
              Action::kRewritten);
      }
    }
    for (const auto& [id, q] : queues_) {
      if (q.record.options.ttl != absl::InfiniteDuration() &&
          !q.has_ttl_record) {
        Write(format::TtlKey(id), q.name,
              absl::StrCat("queue '", q.name,
                           "' has a TTL but no TTL index record: added"),
              Action::kAdded);
      }
    }
  }

  leveldb::DB* const db_;
  const absl::Time now_;
  SideDb* const side_;
  RepairReport* const report_;
  leveldb::ReadOptions ro_;
  std::unique_ptr<leveldb::Iterator> lane_it_;
  std::string_view key_, value_;
  absl::Status status_;
  int64_t changes_ = 0;
  leveldb::WriteBatch fix_, aside_;

  bool has_format_ = false;
  bool has_next_queue_id_ = false, has_next_group_id_ = false;
  bool bad_next_queue_id_ = false, bad_next_group_id_ = false;
  uint32_t next_queue_id_ = 0, next_group_id_ = 1;
  uint32_t max_queue_id_ = 0, max_group_id_ = 0;
  absl::flat_hash_set<uint32_t> dropping_;
  absl::flat_hash_map<uint32_t, QueueEntry> queues_;
  absl::flat_hash_set<uint32_t> group_ids_;
  // Per partition (PartitionKey): the stored reservation, malformed ones,
  // just past the last message's ms, and the highest ms referred to.
  absl::flat_hash_map<uint64_t, uint64_t> reserved_;
  absl::flat_hash_set<uint64_t> bad_reservation_;
  absl::flat_hash_map<uint64_t, uint64_t> message_ms_;
  absl::flat_hash_map<uint64_t, uint64_t> referred_;
  std::string lane_;  // The message lane the walk is in.
  bool lane_has_fence_ = false;
};

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
}  // namespace

absl::StatusOr<int64_t> RecreateLostQueues(leveldb::DB* db, absl::Time now,
                                           RepairReport* report) {
  struct Orphan {
    uint32_t max_partition = 0;
    int max_priority = 0;
    bool evidence = false;  // A message or lane directory record.
    bool topic = true;      // Every key parses in the topic layout.
    std::string ttl_name;
  };
  absl::flat_hash_set<uint32_t> known, dropping;
  absl::flat_hash_set<std::string> names;
  std::map<uint32_t, Orphan> orphans;
  const leveldb::ReadOptions ro = CheckedReadOptions();
  {
    std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(db, ro));
    const std::string prefix = format::DropPrefix();
    for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
         it->Next()) {
      if (it->key().size() == 5) {
        dropping.insert(coding::DecodeFixed32(it->key().data() + 1));
      }
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "repair: reading"));
  }
  std::unique_ptr<leveldb::Iterator> it(NewCheckedIterator(db, ro));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view key = View(it->key());
    if (key.empty()) continue;
    const char tag = key[0];
    if (tag == format::kCatalogTag) {
      format::QueueRecord r;
      if (format::DecodeQueueRecord(View(it->value()), &r).ok()) {
        known.insert(r.id);
        names.insert(std::string(key.substr(1)));
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
    Orphan& o = orphans[id];
    if (tag == format::kTtlTag) {
      if (key.size() == 5 &&
          format::ValidateQueueName(View(it->value())).ok()) {
        o.ttl_name = std::string(View(it->value()));
      }
      continue;
    }
    if (key.size() < 7) continue;
    o.max_partition = std::max<uint32_t>(o.max_partition,
                                         coding::DecodeFixed16(key.data() + 5));
    if (tag == format::kReserveTag || key.size() < LayoutCodec::kHeadSize) {
      continue;
    }
    o.evidence = true;
    o.max_priority =
        std::max(o.max_priority, 255 - static_cast<unsigned char>(key[7]));
    // Topic layout: head fixed16 len topic [message_id].
    const size_t n = key.size();
    const size_t len =
        n >= LayoutCodec::kHeadSize + 2
            ? coding::DecodeFixed16(key.data() + LayoutCodec::kHeadSize)
            : SIZE_MAX;
    const size_t base = LayoutCodec::kHeadSize + 2 + len;
    if (len == SIZE_MAX ||
        (n != base && n != base + LayoutCodec::kMessageIdSize)) {
      o.topic = false;
    }
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "repair: reading"));
  it.reset();

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
    std::string name = o.ttl_name;
    if (name.empty() || names.contains(name)) {
      name = absl::StrCat("recovered-", id);
      for (int i = 2; names.contains(name); ++i) {
        name = absl::StrCat("recovered-", id, "-", i);
      }
    }
    names.insert(name);
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
  Mender mender(db, now, side, report);
  return mender.Run();
}

}  // namespace repair
}  // namespace hq
