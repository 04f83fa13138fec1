// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Db::Verify: one pass over every key of a snapshot, in key order, checking
// each record against its grammar (lib/format/format.h,
// lib/format/layout_codec.h, doc/format.md) and against the records it refers
// to. Key order makes the references cheap: metadata (0x00) comes before the
// catalog (0x01), the catalog before everything of a queue, groups (0x06)
// before their cursors, tasks and dead letters, subscriptions (0x0b) before
// their checkpoints, reservations (0x02) and the lane directory (0x04) before
// messages (0x10). What the walk keeps in memory is per queue, group and
// subscription (and per partition for reservations), never per message.

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "leveldb/db.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/log_recovery.h"
#include "lib/engine/table_check.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

struct QueueEntry {
  std::string name;
  format::QueueRecord record;
  bool has_ttl_record = false;
  absl::flat_hash_set<uint32_t> groups;
  absl::flat_hash_set<uint32_t> subs;
};

class Verifier {
 public:
  // The records' problems are added to `report`, which holds what the
  // caller found before (damaged blocks, dropped logs). With `past_damage`,
  // the walk reads on past damaged blocks (LevelDB's iterator steps over
  // them) instead of failing at the first: the caller has reported them.
  Verifier(leveldb::DB* db, const leveldb::ReadOptions& ro, absl::Time now,
           VerifyReport report, bool past_damage)
      : db_(db),
        ro_(ro),
        now_(now),
        past_damage_(past_damage),
        report_(std::move(report)) {}

  absl::StatusOr<VerifyReport> Run() {
    HQ_RETURN_IF_ERROR(ReadDropMarkers());
    std::unique_ptr<leveldb::Iterator> it(NewIterator());
    lane_it_.reset(NewIterator());
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ++report_.keys;
      key_ = View(it->key());
      value_ = View(it->value());
      Check();
    }
    if (!past_damage_) {
      HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "verifying the database"));
      HQ_RETURN_IF_ERROR(
          FromLevelDb(lane_it_->status(), "verifying the database"));
    }
    for (const auto& [id, q] : queues_) {
      if (q.record.options.ttl != absl::InfiniteDuration() &&
          !q.has_ttl_record) {
        Problem(format::TtlKey(id),
                absl::StrCat("queue '", q.name,
                             "' has a TTL but no TTL index record"));
      }
    }
    report_.queues = static_cast<int64_t>(queues_.size());
    return std::move(report_);
  }

 private:
  leveldb::Iterator* NewIterator() {
    return past_damage_ ? db_->NewIterator(ro_) : NewCheckedIterator(db_, ro_);
  }

  void Problem(std::string_view key, std::string description) {
    report_.AddProblem({.key_hex = absl::BytesToHexString(Av(key)),
                        .description = std::move(description)});
  }
  void Problem(std::string description) {
    Problem(key_, std::move(description));
  }

  absl::Status ReadDropMarkers() {
    // Records of a queue being dropped are leftovers, not problems.
    std::unique_ptr<leveldb::Iterator> it(NewIterator());
    const std::string prefix = format::DropPrefix();
    for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
         it->Next()) {
      const std::string_view key = View(it->key());
      if (key.size() == 5)
        dropping_.insert(coding::DecodeFixed32(key.data() + 1));
    }
    if (past_damage_) return absl::OkStatus();
    return FromLevelDb(it->status(), "reading drop markers");
  }

  void Check() {
    if (key_.empty()) return Problem("empty key");
    switch (key_[0]) {
      case format::kMetaTag:
        return CheckMeta();
      case format::kCatalogTag:
        return CheckCatalog();
      case format::kReserveTag:
        return CheckReserve();
      case format::kDropTag:
        return;  // Read by ReadDropMarkers (Open checked their keys).
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
        return Problem(absl::StrFormat("unknown record tag 0x%02x",
                                       static_cast<unsigned char>(key_[0])));
    }
  }

  void CheckMeta() {
    const std::string_view name = key_.substr(1);
    if (name == "format" || name == "next_queue_id") {
      // Open read and checked both.
      std::string_view in = value_;
      uint32_t v;
      if (coding::GetFixed32(&in, &v) && in.empty()) {
        if (name == "next_queue_id") next_queue_id_ = v;
      }
      return;
    }
    if (name == "next_group_id") {
      std::string_view in = value_;
      uint32_t v;
      if (!coding::GetFixed32(&in, &v) || !in.empty() || v == 0) {
        return Problem("malformed metadata value (next_group_id)");
      }
      next_group_id_ = v;
      return;
    }
    Problem(absl::StrCat("unknown metadata record '", Printable(name), "'"));
  }

  void CheckCatalog() {
    const std::string_view name = key_.substr(1);
    if (absl::Status s = format::ValidateQueueName(name); !s.ok()) {
      Problem(absl::StrCat("malformed catalog key: ", s.message()));
    }
    format::QueueRecord r;
    if (absl::Status s = format::DecodeQueueRecord(value_, &r); !s.ok()) {
      return Problem(absl::StrCat("malformed catalog value: ", s.message()));
    }
    if (r.id == 0 || r.id >= next_queue_id_) {
      Problem(absl::StrFormat("queue id %d at or above next_queue_id %d", r.id,
                              next_queue_id_));
    }
    if (queues_.contains(r.id)) {
      return Problem(absl::StrFormat("queue id %d used by queues '%s' and '%s'",
                                     r.id, queues_[r.id].name,
                                     Printable(name)));
    }
    queues_[r.id] = QueueEntry{std::string(name), r};
  }

  // The queue of a record whose key is tag queue_id ...: null if the key is
  // too short (reported) or the queue unknown (reported unless it is being
  // dropped).
  QueueEntry* QueueOf(std::string_view kind, size_t min_size) {
    if (key_.size() < min_size) {
      Problem(absl::StrCat("malformed ", Av(kind), " key (too short)"));
      return nullptr;
    }
    const uint32_t id = coding::DecodeFixed32(key_.data() + 1);
    auto it = queues_.find(id);
    if (it != queues_.end()) return &it->second;
    if (!dropping_.contains(id)) {
      Problem(absl::StrFormat("%s of queue id %d, which is not in the catalog",
                              kind, id));
    }
    return nullptr;
  }

  // Parses a lane prefix of `q`; reports and returns false if malformed or
  // out of the queue's ranges.
  bool Lane(std::string_view kind, const QueueEntry& q, std::string_view lane,
            uint32_t* partition = nullptr) {
    uint32_t p;
    int priority;
    std::string_view topic;
    const bool has_topic = q.record.options.layout == Layout::kTopic;
    if (!LayoutCodec::ParseLanePrefix(lane, has_topic, &p, &priority, &topic) ||
        topic.size() > format::kMaxTopicBytes) {
      Problem(absl::StrCat(
          "malformed ", Av(kind), " key: not a lane of queue '", q.name, "' (",
          Av(LayoutName(q.record.options.layout)), " layout)"));
      return false;
    }
    if (p >= q.record.options.partitions) {
      Problem(
          absl::StrFormat("%s key: partition %d out of range (queue '%s' "
                          "has %d)",
                          kind, p, q.name, q.record.options.partitions));
      return false;
    }
    if (priority >= q.record.options.priorities) {
      Problem(
          absl::StrFormat("%s key: priority %d out of range (queue '%s' "
                          "has %d)",
                          kind, priority, q.name, q.record.options.priorities));
      return false;
    }
    if (partition != nullptr) *partition = p;
    return true;
  }

  // The lane prefix (tag 0x10) for key bytes `rest` (lane_rest) of queue id.
  static std::string LanePrefix(uint32_t queue_id, std::string_view rest) {
    std::string lane = format::MessagePrefix(queue_id);
    lane.append(rest);
    return lane;
  }

  void CheckReserve() {
    QueueEntry* q = QueueOf("reservation", 5);
    if (q == nullptr) return;
    if (key_.size() != 7) return Problem("malformed reservation key");
    const uint32_t p = coding::DecodeFixed16(key_.data() + 5);
    if (p >= q->record.options.partitions) {
      return Problem(absl::StrFormat(
          "reservation key: partition %d out of range (queue '%s' has %d)", p,
          q->name, q->record.options.partitions));
    }
    std::string_view in = value_;
    uint64_t ms;
    if (!coding::GetFixed64(&in, &ms) || !in.empty() ||
        ms > MessageId::kMaxMs + 1) {
      return Problem("malformed reservation value");
    }
    reserved_[PartitionKey(coding::DecodeFixed32(key_.data() + 1), p)] = ms;
  }

  static uint64_t PartitionKey(uint32_t queue_id, uint32_t partition) {
    return (uint64_t{queue_id} << 16) | partition;
  }

  void CheckLaneDir() {
    QueueEntry* q = QueueOf("lane directory", LayoutCodec::kHeadSize);
    if (q == nullptr) return;
    if (!Lane("lane directory", *q, LanePrefix(q->record.id, key_.substr(5)))) {
      return;
    }
    if (!value_.empty()) Problem("malformed lane directory value (not empty)");
  }

  void CheckTtl() {
    QueueEntry* q = QueueOf("TTL index", 5);
    if (q == nullptr) return;
    if (key_.size() != 5) return Problem("malformed TTL index key");
    q->has_ttl_record = true;
    if (q->record.options.ttl == absl::InfiniteDuration() ||
        value_ != q->name) {
      Problem(
          absl::StrCat("TTL index record does not match the catalog (queue '",
                       q->name, "')"));
    }
  }

  void CheckGroupOrSub(bool is_group) {
    const std::string_view kind = is_group ? "group" : "subscription";
    QueueEntry* q = QueueOf(kind, 5);
    if (q == nullptr) return;
    const std::string_view name = key_.substr(5);
    if (absl::Status s = format::ValidateGroupName(name); !s.ok()) {
      Problem(absl::StrCat("malformed ", Av(kind), " key: ", s.message()));
    }
    uint32_t id;
    if (is_group) {
      format::GroupRecord r;
      if (absl::Status s = format::DecodeGroupRecord(value_, &r); !s.ok()) {
        return Problem(absl::StrCat("malformed group value: ", s.message()));
      }
      id = r.id;
    } else {
      format::SubRecord r;
      if (absl::Status s = format::DecodeSubRecord(value_, &r); !s.ok()) {
        return Problem(
            absl::StrCat("malformed subscription value: ", s.message()));
      }
      for (uint32_t p : r.partitions) {
        if (p >= q->record.options.partitions) {
          Problem(absl::StrFormat(
              "subscription value: partition %d out of range (queue '%s' has "
              "%d)",
              p, q->name, q->record.options.partitions));
          break;
        }
      }
      id = r.id;
    }
    if (id == 0 || id >= next_group_id_) {
      Problem(absl::StrFormat("%s id %d at or above next_group_id %d", kind, id,
                              next_group_id_));
    }
    if (!group_ids_.insert(id).second) {
      return Problem(absl::StrFormat(
          "%s id %d already used by another group or subscription", kind, id));
    }
    (is_group ? q->groups : q->subs).insert(id);
  }

  // For keys tag queue_id group_id ...: the queue, if it has group (or
  // subscription) `id`.
  QueueEntry* OwnerOf(std::string_view kind, bool of_group) {
    QueueEntry* q = QueueOf(kind, format::kGroupRecordPrefixSize);
    if (q == nullptr) return nullptr;
    const uint32_t id = coding::DecodeFixed32(key_.data() + 5);
    if (!(of_group ? q->groups : q->subs).contains(id)) {
      Problem(absl::StrFormat("%s of %s id %d, which queue '%s' does not have",
                              kind, of_group ? "group" : "subscription", id,
                              q->name));
      return nullptr;
    }
    return q;
  }

  // The id after the last message of `lane` (or its TTL watermark, if
  // higher); Min() for an empty lane.
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
    if (!Lane("cursor", *q, lane)) return;
    format::CursorValue c;
    if (!format::DecodeCursor(value_, &c)) {
      // (Also a completion cursor above the scan cursor.)
      return Problem("malformed cursor value");
    }
    MessageId limit = LaneEnd(lane);
    if (q->record.options.ttl != absl::InfiniteDuration()) {
      // A group moves its scan cursor up to the TTL cutoff.
      limit = std::max(limit, MessageId::AtTime(now_ - q->record.options.ttl));
    }
    if (limit < c.scan) {
      Problem(absl::StrCat("scan cursor ", c.scan.ToString(),
                           " beyond the lane end ", limit.ToString()));
    }
  }

  void CheckTask() {
    QueueEntry* q = OwnerOf("task", /*of_group=*/true);
    if (q == nullptr) return;
    if (key_.size() <
        format::kGroupRecordPrefixSize + 3 + LayoutCodec::kMessageIdSize) {
      return Problem("malformed task key (too short)");
    }
    const std::string lane = LanePrefix(
        q->record.id, key_.substr(format::kGroupRecordPrefixSize,
                                  key_.size() - format::kGroupRecordPrefixSize -
                                      LayoutCodec::kMessageIdSize));
    if (!Lane("task", *q, lane)) return;
    format::TaskValue t;
    if (!format::DecodeTask(value_, &t)) Problem("malformed task value");
  }

  void CheckDead() {
    QueueEntry* q = OwnerOf("dead letter", /*of_group=*/true);
    if (q == nullptr) return;
    if (key_.size() !=
        format::kGroupRecordPrefixSize + 2 + LayoutCodec::kMessageIdSize) {
      return Problem("malformed dead letter key");
    }
    format::DeadValue d;
    if (!format::DecodeDead(value_, &d) || d.reason < 1 || d.reason > 3) {
      return Problem("malformed dead letter value");
    }
    if (d.original_partition >= q->record.options.partitions ||
        d.priority >= q->record.options.priorities) {
      Problem(absl::StrFormat(
          "dead letter value: partition %d or priority %d out of range of "
          "queue '%s'",
          d.original_partition, d.priority, q->name));
    }
  }

  void CheckDedup() {
    QueueEntry* q = QueueOf("dedup", 6);
    if (q == nullptr) return;
    if (key_.size() - 5 > format::kMaxKeyBytes) {
      return Problem("malformed dedup key (dedup key over 1024 bytes)");
    }
    uint32_t p;
    MessageId id;
    if (!format::DecodeDedup(value_, &p, &id)) {
      return Problem("malformed dedup value");
    }
    if (p >= q->record.options.partitions) {
      Problem(absl::StrFormat(
          "dedup value: partition %d out of range (queue '%s' has %d)", p,
          q->name, q->record.options.partitions));
    }
  }

  void CheckCheckpoint() {
    QueueEntry* q = OwnerOf("checkpoint", /*of_group=*/false);
    if (q == nullptr) return;
    const std::string lane =
        LanePrefix(q->record.id, key_.substr(format::kGroupRecordPrefixSize));
    if (!Lane("checkpoint", *q, lane)) return;
    MessageId next;
    if (!format::DecodeCheckpoint(value_, &next)) {
      Problem("malformed checkpoint value");
    }
  }

  void CheckHint() {
    QueueEntry* q = QueueOf("lane index", 5);
    if (q == nullptr) return;
    uint64_t seq;
    if (!format::DecodeHintSeq(key_, &seq) ||
        q->record.options.layout != Layout::kTopic) {
      return Problem(
          absl::StrCat("malformed lane index key (queue '", q->name, "')"));
    }
    uint32_t partition;
    const std::string lane = LanePrefix(q->record.id, value_);
    if (!Lane("lane index", *q, lane, &partition)) return;
    if (lane[LayoutCodec::kHeadSize - 1] != key_[5]) {
      Problem("lane index value: its priority is not its key's");
    }
  }

  void CheckSource() {
    const bool group = [&] {
      if (key_.size() < format::kGroupRecordPrefixSize) return true;
      auto it = queues_.find(coding::DecodeFixed32(key_.data() + 1));
      return it == queues_.end() ||
             !it->second.subs.contains(coding::DecodeFixed32(key_.data() + 5));
    }();
    QueueEntry* q = OwnerOf("lane source position", group);
    if (q == nullptr) return;
    format::SourceValue v;
    if (key_.size() != format::kGroupRecordPrefixSize ||
        !format::DecodeSource(value_, &v) ||
        v.priorities.size() !=
            static_cast<size_t>(q->record.options.priorities)) {
      return Problem("malformed lane source position");
    }
  }

  void CheckMessage() {
    QueueEntry* q = QueueOf("message", LayoutCodec::kHeadSize);
    if (q == nullptr) return;
    // The lane prefix, then: nothing (the lane head), or an id [and, in
    // the time layout, a topic].
    size_t lane_size = LayoutCodec::kHeadSize;
    const bool has_topic = q->record.options.layout == Layout::kTopic;
    if (has_topic) {
      if (key_.size() < LayoutCodec::kHeadSize + 2) {
        return Problem("malformed message key: not a key of queue '" + q->name +
                       "' (topic layout)");
      }
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
      return Problem(absl::StrCat(
          "malformed message key: not a key of queue '", q->name, "' (",
          Av(LayoutName(q->record.options.layout)), " layout)"));
    }
    const std::string_view lane = key_.substr(0, lane_size);
    uint32_t partition = 0;
    if (!Lane("message", *q, lane, &partition)) return;
    if (lane != current_lane_) {
      current_lane_.assign(lane);
      std::string dir;
      format::AppendLaneDirKey(&dir, lane);
      std::string unused;
      const leveldb::Status s = CheckedGet(db_, ro_, dir, &unused);
      if (s.IsNotFound()) {
        Problem("message lane missing from the lane directory");
      } else if (!s.ok()) {
        Problem(absl::StrCat("cannot read the lane's directory record: ",
                             s.ToString()));
      }
    }
    if (head) {
      if (value_.size() != LayoutCodec::kMessageIdSize) {
        Problem("malformed lane head value (TTL watermark)");
      }
      return;
    }
    const MessageId id = LayoutCodec::DecodeMessageId(rest.data());
    if (id == MessageId::Max()) {
      if (!value_.empty() || rest.size() != LayoutCodec::kMessageIdSize) {
        Problem("malformed lane fence");
      }
      return;
    }
    ++report_.messages;
    std::string_view k, payload;
    if (!format::DecodeMessageValue(value_, &k, &payload)) {
      Problem("malformed message value");
    }
    auto r = reserved_.find(PartitionKey(q->record.id, partition));
    if (r == reserved_.end()) {
      Problem("message in a partition without an id reservation");
    } else if (id.ms >= r->second) {
      Problem(absl::StrFormat(
          "message id %s at or above its partition's reservation (ms %d)",
          id.ToString(), r->second));
    }
  }

  leveldb::DB* const db_;
  const leveldb::ReadOptions ro_;
  const absl::Time now_;
  const bool past_damage_;
  std::unique_ptr<leveldb::Iterator> lane_it_;  // For LaneEnd.
  VerifyReport report_;
  std::string_view key_, value_;
  uint32_t next_queue_id_ = 1;
  uint32_t next_group_id_ = 1;  // Absent: 1.
  absl::flat_hash_set<uint32_t> dropping_;
  absl::flat_hash_map<uint32_t, QueueEntry> queues_;
  absl::flat_hash_set<uint32_t> group_ids_;  // Groups and subscriptions.
  absl::flat_hash_map<uint64_t, uint64_t> reserved_;
  std::string current_lane_;
};

void AddDamage(const table_check::Report& tables, VerifyReport* report) {
  report->tables = tables.tables;
  report->blocks = tables.blocks;
  for (const table_check::Damage& d : tables.damage) {
    // A block's `what` names its file and offset (TableCheckEnv's words).
    std::string description =
        d.bytes == 0 ? absl::StrCat("table file ", d.file, ": ", d.what)
                     : d.what;
    if (!d.key_before.empty() || !d.key_after.empty()) {
      absl::StrAppend(
          &description, "; unreadable keys lie after ",
          d.key_before.empty() ? std::string("the table's start")
                               : absl::BytesToHexString(d.key_before),
          " and before ",
          d.key_after.empty() ? std::string("the table's end")
                              : absl::BytesToHexString(d.key_after));
    }
    report->AddProblem({.key_hex = absl::BytesToHexString(d.key_before),
                        .description = std::move(description),
                        .file = d.file});
  }
}

// What recovery kept under dropped/ (log_recovery.h): a hole or a later
// log is a problem (intact writes were dropped to keep a prefix); a torn
// tail is only listed.
void AddDropped(leveldb::Env* env, const std::string& dir,
                VerifyReport* report) {
  std::vector<std::string> names;
  if (!env->GetChildren(dir + "/" + kDroppedDir, &names).ok()) return;
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    if (n == "." || n == "..") continue;
    const std::string file = absl::StrCat(kDroppedDir, "/", n);
    report->dropped.push_back(file);
    if (n.find(kTornAt) != std::string::npos) continue;
    uint64_t bytes = 0;
    env->GetFileSize(dir + "/" + file, &bytes).ok();
    report->AddProblem(
        {.description = absl::StrCat(
             "recovery dropped ", bytes, " bytes of write-ahead log (",
             n.find(kHoleAt) != std::string::npos
                 ? "from damage to the log's end"
                 : "a whole log after a damaged one",
             ") to keep a prefix of the writes; they are kept in ", file),
         .file = file});
  }
}

}  // namespace

absl::StatusOr<VerifyReport> DbImpl::Verify() {
  OpScope op(this);
  HQ_RETURN_IF_ERROR(op.status());
  // Damage first (tables, then dropped logs), then the records' problems in
  // key order.
  VerifyReport damage;
  HQ_ASSIGN_OR_RETURN(std::vector<table_check::LiveTable> live,
                      table_check::LiveTables(db_.get()));
  const table_check::Report tables =
      table_check::CheckTables(db_.get(), env_.get(), path_, live);
  AddDamage(tables, &damage);
  AddDropped(env_.get(), path_, &damage);

  leveldb::ReadOptions ro = CheckedReadOptions();
  ro.fill_cache = false;
  ro.snapshot = db_->GetSnapshot();
  absl::StatusOr<VerifyReport> report;
  {
    // Its iterators go before the snapshot is released.
    Verifier v(db_.get(), ro, clock_->Now(), std::move(damage),
               /*past_damage=*/!tables.damage.empty());
    report = v.Run();
  }
  db_->ReleaseSnapshot(ro.snapshot);
  return report;
}

}  // namespace hq
