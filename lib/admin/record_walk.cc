// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The rules of hq's records (lib/admin/record_walk.h). Each CheckXxx()
// states one record kind's rules; where a rule fails, the Finding says
// Verify's words and Repair's remedy. A rule whose record the policy may
// keep (`if (!Reject(...)) return;`) goes on checking it.

#include "lib/admin/record_walk.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/engine/checked_read.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

using Remedy = Finding::Remedy;

bool DecodeU32(std::string_view in, uint32_t* v) {
  return coding::GetFixed32(&in, v) && in.empty();
}

}  // namespace

std::string RecordWalker::LanePrefix(uint32_t queue_id, std::string_view rest) {
  std::string lane = format::MessagePrefix(queue_id);
  lane.append(rest);
  return lane;
}

RecordWalker::RecordWalker(leveldb::DB* db, const leveldb::ReadOptions& ro,
                           absl::Time now, WalkPolicy* policy,
                           const Options& options)
    : db_(db), ro_(ro), now_(now), policy_(policy), options_(options) {}

RecordWalker::~RecordWalker() = default;

absl::Status RecordWalker::Run() {
  HQ_RETURN_IF_ERROR(ReadDropMarkers());
  {
    std::unique_ptr<leveldb::Iterator> it(NewIterator());
    lane_it_.reset(NewIterator());
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ++facts_.keys;
      key_ = View(it->key());
      value_ = View(it->value());
      policy_->Walking(key_, facts_.keys);
      Check();
      HQ_RETURN_IF_ERROR(policy_->Step());
    }
    if (!options_.past_damage) {
      HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), options_.reading));
      HQ_RETURN_IF_ERROR(
          FromLevelDb(lane_it_->status(), options_.reading_lanes));
    }
    lane_it_.reset();
    key_ = value_ = std::string_view();
  }
  EndLane();
  policy_->WalkEnded(facts_);
  CheckTtlRecords();
  return absl::OkStatus();
}

leveldb::Iterator* RecordWalker::NewIterator() {
  return options_.past_damage ? db_->NewIterator(ro_)
                              : NewCheckedIterator(db_, ro_);
}

absl::Status RecordWalker::ReadDropMarkers() {
  // Records of a queue being dropped are leftovers, not problems.
  std::unique_ptr<leveldb::Iterator> it(NewIterator());
  const std::string prefix = format::DropPrefix();
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    const std::string_view key = View(it->key());
    if (key.size() == 5) {
      const uint32_t id = coding::DecodeFixed32(key.data() + 1);
      dropping_.insert(id);
      facts_.max_queue_id = std::max(facts_.max_queue_id, id);
    }
  }
  if (!options_.past_damage) {
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), options_.reading_drops));
  }
  const std::string deletes = format::DeletePrefix();
  for (it->Seek(deletes); it->Valid() && View(it->key()).starts_with(deletes);
       it->Next()) {
    const std::string_view key = View(it->key());
    if (key.size() == format::kGroupRecordPrefixSize) {
      const uint32_t id = coding::DecodeFixed32(key.data() + 5);
      deleting_.insert(uint64_t{coding::DecodeFixed32(key.data() + 1)} << 32 |
                       id);
      facts_.max_group_id = std::max(facts_.max_group_id, id);
    }
  }
  if (options_.past_damage) return absl::OkStatus();
  return FromLevelDb(it->status(), options_.reading_drops);
}

bool RecordWalker::OfDeletedConsumer() const {
  if (key_.size() < format::kGroupRecordPrefixSize) return false;
  return deleting_.contains(uint64_t{coding::DecodeFixed32(key_.data() + 1)}
                                << 32 |
                            coding::DecodeFixed32(key_.data() + 5));
}

// ---- Findings.

bool RecordWalker::Reject(std::string problem, std::string mend) {
  return policy_->Found({.key = key_,
                         .problem = std::move(problem),
                         .remedy = Remedy::kMoveAside,
                         .mend = std::move(mend),
                         .value = std::string(value_)});
}

bool RecordWalker::Rewrite(std::string problem, std::string value,
                           std::string mend) {
  return policy_->Found({.key = key_,
                         .problem = std::move(problem),
                         .remedy = Remedy::kRewrite,
                         .mend = std::move(mend),
                         .value = std::move(value)});
}

bool RecordWalker::Add(std::string_view key, std::string problem,
                       std::string write_key, std::string value,
                       std::string mend) {
  return policy_->Found({.key = key,
                         .problem = std::move(problem),
                         .remedy = Remedy::kAdd,
                         .mend = std::move(mend),
                         .write_key = std::move(write_key),
                         .value = std::move(value)});
}

bool RecordWalker::Later(std::string problem) {
  return policy_->Found(
      {.key = key_, .problem = std::move(problem), .remedy = Remedy::kLater});
}

// ---- The rules.

void RecordWalker::Check() {
  if (key_.empty()) return (void)Reject("empty key");
  if (key_[0] != format::kMessageTag) EndLane();
  switch (key_[0]) {
    case format::kMetaTag:
      return CheckMeta();
    case format::kCatalogTag:
      return CheckCatalog();
    case format::kReserveTag:
      return CheckReserve();
    case format::kDropTag:
      return CheckDrop();
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
    case format::kPaceTag:
      return CheckPace();
    case format::kMessageTag:
      return CheckMessage();
    case format::kParkTag:
      return CheckPark();
    case format::kClaimTag:
      return CheckClaim();
    case format::kDeleteTag:
      return CheckDelete();
    default:
      Reject(absl::StrFormat("unknown record tag 0x%02x",
                             static_cast<unsigned char>(key_[0])));
  }
}

void RecordWalker::CheckMeta() {
  const std::string_view name = key_.substr(1);
  uint32_t v;
  if (name == "format") {
    facts_.has_format = true;
    if (!DecodeU32(value_, &v)) {
      std::string fixed;
      coding::PutFixed32(&fixed, format::kFormatVersion);
      Rewrite("malformed metadata value (format)", std::move(fixed),
              "malformed format record: rewritten");
    }
    return;
  }
  if (name == "next_queue_id") {
    facts_.has_next_queue_id = true;
    if (DecodeU32(value_, &v)) {
      facts_.next_queue_id = v;
    } else {
      facts_.bad_next_queue_id = true;
      Later("malformed metadata value (next_queue_id)");
    }
    return;
  }
  if (name == "next_group_id") {
    facts_.has_next_group_id = true;
    if (DecodeU32(value_, &v) && v != 0) {
      facts_.next_group_id = v;
    } else {
      facts_.bad_next_group_id = true;
      Later("malformed metadata value (next_group_id)");
    }
    return;
  }
  Reject(absl::StrCat("unknown metadata record '", Printable(name), "'"));
}

void RecordWalker::CheckCatalog() {
  const std::string_view name = key_.substr(1);
  if (absl::Status s = format::ValidateQueueName(name); !s.ok()) {
    if (!Reject(absl::StrCat("malformed catalog key: ", s.message()))) return;
  }
  format::QueueRecord r;
  if (absl::Status s = format::DecodeQueueRecord(value_, &r); !s.ok()) {
    return (void)Reject(absl::StrCat("malformed catalog value: ", s.message()));
  }
  const std::string above = absl::StrFormat(
      "queue id %d at or above next_queue_id %d", r.id, facts_.next_queue_id);
  if (r.id == 0) {
    if (!Reject(above, "queue id 0")) return;
  } else if (r.id >= facts_.next_queue_id) {
    Later(above);
  }
  auto& queues = facts_.queues;
  if (queues.contains(r.id)) {
    return (void)Reject(
        absl::StrFormat("queue id %d used by queues '%s' and '%s'", r.id,
                        queues[r.id].name, Printable(name)));
  }
  facts_.max_queue_id = std::max(facts_.max_queue_id, r.id);
  queues[r.id] = WalkQueue{std::string(name), r};
}

void RecordWalker::CheckReserve() {
  WalkQueue* q = QueueOf("reservation", 5);
  if (q == nullptr) return;
  if (key_.size() != 7) return (void)Reject("malformed reservation key");
  const uint32_t p = coding::DecodeFixed16(key_.data() + 5);
  if (p >= q->record.options.partitions) {
    return (void)Reject(absl::StrFormat(
        "reservation key: partition %d out of range (queue '%s' has %d)", p,
        q->name, q->record.options.partitions));
  }
  std::string_view in = value_;
  uint64_t ms;
  const uint64_t pk = PartitionKey(q->record.id, p);
  if (!coding::GetFixed64(&in, &ms) || !in.empty() ||
      ms > MessageId::kMaxMs + 1) {
    facts_.bad_reservation.insert(pk);
    return (void)Later("malformed reservation value");
  }
  facts_.reserved[pk] = ms;
}

void RecordWalker::CheckDrop() {
  // ReadDropMarkers read the well-formed ones.
  if (key_.size() != 5) return (void)Reject("malformed drop marker");
  const uint32_t id = coding::DecodeFixed32(key_.data() + 1);
  if (id >= facts_.next_queue_id) {
    Later(
        absl::StrFormat("drop marker of queue id %d at or above "
                        "next_queue_id %d",
                        id, facts_.next_queue_id));
  }
}

void RecordWalker::CheckDelete() {
  // ReadDropMarkers read the well-formed keys.
  WalkQueue* q =
      QueueOf("consumer delete tombstone", format::kGroupRecordPrefixSize);
  if (q == nullptr) return;
  if (key_.size() != format::kGroupRecordPrefixSize) {
    return (void)Reject("malformed consumer delete tombstone key");
  }
  format::DeleteValue v;
  if (!format::DecodeDelete(value_, &v)) {
    Reject("malformed consumer delete tombstone value");
  }
}

void RecordWalker::CheckLaneDir() {
  WalkQueue* q = QueueOf("lane directory", LayoutCodec::kHeadSize);
  if (q == nullptr) return;
  if (!Lane("lane directory", *q, LanePrefix(q->record.id, key_.substr(5)))) {
    return;
  }
  if (!value_.empty()) {
    Rewrite("malformed lane directory value (not empty)", "",
            "malformed lane directory value (not empty): emptied");
  }
}

void RecordWalker::CheckTtl() {
  WalkQueue* q = QueueOf("TTL index", 5);
  if (q == nullptr) return;
  if (key_.size() != 5) return (void)Reject("malformed TTL index key");
  const std::string mismatch = absl::StrCat(
      "TTL index record does not match the catalog (queue '", q->name, "')");
  if (q->record.options.ttl == absl::InfiniteDuration()) {
    return (void)Reject(mismatch, absl::StrCat("TTL index record of queue '",
                                               q->name, "', which has no TTL"));
  }
  q->has_ttl_record = true;
  if (value_ != q->name) {
    Rewrite(mismatch, q->name,
            absl::StrCat("TTL index record does not name queue '", q->name,
                         "': rewritten"));
  }
}

void RecordWalker::CheckMessage() {
  WalkQueue* q = QueueOf("message", LayoutCodec::kHeadSize);
  if (q == nullptr) return;
  size_t lane_size;
  if (!MessageLane(*q, &lane_size)) return;
  const std::string_view lane = key_.substr(0, lane_size);
  uint32_t partition = 0;
  if (!Lane("message", *q, lane, &partition)) return;
  if (lane != lane_) EnterLane(lane);
  CheckMessageRecord(*q, partition, key_.substr(lane_size),
                     key_.size() == lane_size);
}

// A record of message lane `rest`'s lane: the lane head (`head`), the
// fence or a message.
void RecordWalker::CheckMessageRecord(const WalkQueue& q, uint32_t partition,
                                      std::string_view rest, bool head) {
  const uint32_t qid = q.record.id;
  if (head) {
    if (value_.size() != LayoutCodec::kMessageIdSize) {
      return (void)Reject("malformed lane head value (TTL watermark)");
    }
    policy_->Refers(qid, partition, LayoutCodec::DecodeMessageId(value_.data()),
                    /*message=*/false);
    return;
  }
  const MessageId id = LayoutCodec::DecodeMessageId(rest.data());
  if (id == MessageId::Max()) {
    if (rest.size() != LayoutCodec::kMessageIdSize) {
      return (void)Reject("malformed lane fence",
                          "malformed lane fence (a topic after it)");
    }
    if (!value_.empty()) {
      Rewrite("malformed lane fence", "",
              "malformed lane fence (a value): emptied");
    }
    return;
  }
  ++facts_.messages;
  std::string_view k, payload;
  if (!format::DecodeMessageValue(value_, &k, &payload)) {
    if (!Reject("malformed message value")) return;
  }
  auto r = facts_.reserved.find(PartitionKey(qid, partition));
  if (r == facts_.reserved.end()) {
    Later("message in a partition without an id reservation");
  } else if (id.ms >= r->second) {
    Later(absl::StrFormat(
        "message id %s at or above its partition's reservation (ms %d)",
        id.ToString(), r->second));
  }
  policy_->Refers(qid, partition, id, /*message=*/true);
}

void RecordWalker::CheckTtlRecords() {
  for (const auto& [id, q] : facts_.queues) {
    if (q.record.options.ttl != absl::InfiniteDuration() && !q.has_ttl_record) {
      const std::string key = format::TtlKey(id);
      const std::string problem = absl::StrCat(
          "queue '", q.name, "' has a TTL but no TTL index record");
      Add(key, problem, key, q.name, absl::StrCat(problem, ": added"));
    }
  }
}

// ---- Shared steps.

// The queue of a record whose key is tag queue_id ...: null if the key is
// too short or the queue unknown (found, unless it is being dropped: Open
// finishes the drop).
WalkQueue* RecordWalker::QueueOf(std::string_view kind, size_t min_size) {
  if (key_.size() < min_size) {
    Reject(absl::StrCat("malformed ", Av(kind), " key (too short)"));
    return nullptr;
  }
  const uint32_t id = coding::DecodeFixed32(key_.data() + 1);
  auto it = facts_.queues.find(id);
  if (it != facts_.queues.end()) return &it->second;
  if (!dropping_.contains(id)) {
    Reject(absl::StrFormat("%s of queue id %d, which is not in the catalog",
                           kind, id));
  }
  return nullptr;
}

// For keys tag queue_id group_id ...: the queue, if it has group (or
// subscription) `id`.
WalkQueue* RecordWalker::OwnerOf(std::string_view kind, bool of_group) {
  WalkQueue* q = QueueOf(kind, format::kGroupRecordPrefixSize);
  if (q == nullptr) return nullptr;
  const uint32_t id = coding::DecodeFixed32(key_.data() + 5);
  if (!(of_group ? q->groups : q->subs).contains(id)) {
    if (OfDeletedConsumer()) return nullptr;
    Reject(absl::StrFormat("%s of %s id %d, which queue '%s' does not have",
                           kind, of_group ? "group" : "subscription", id,
                           q->name));
    return nullptr;
  }
  return q;
}

// Parses a lane prefix of `q`; false (found) if malformed or out of the
// queue's ranges.
bool RecordWalker::Lane(std::string_view kind, const WalkQueue& q,
                        std::string_view lane, uint32_t* partition) {
  uint32_t p;
  int priority;
  std::string_view topic;
  const QueueOptions& o = q.record.options;
  if (!LayoutCodec::ParseLanePrefix(lane, o.layout == Layout::kTopic, &p,
                                    &priority, &topic) ||
      topic.size() > format::kMaxTopicBytes) {
    const std::string malformed = absl::StrCat(
        "malformed ", Av(kind), " key: not a lane of queue '", q.name, "'");
    Reject(absl::StrCat(malformed, " (", Av(LayoutName(o.layout)), " layout)"),
           malformed);
    return false;
  }
  if (p < o.partitions && priority < o.priorities) {
    if (partition != nullptr) *partition = p;
    return true;
  }
  const std::string mend = absl::StrFormat(
      "%s key: partition %d or priority %d out of range of queue '%s'", kind, p,
      priority, q.name);
  if (p >= o.partitions) {
    Reject(absl::StrFormat("%s key: partition %d out of range (queue '%s' "
                           "has %d)",
                           kind, p, q.name, o.partitions),
           mend);
  } else {
    Reject(absl::StrFormat("%s key: priority %d out of range (queue '%s' "
                           "has %d)",
                           kind, priority, q.name, o.priorities),
           mend);
  }
  return false;
}

// A message key is its lane prefix, then nothing (the lane head) or an id
// [and, in the time layout, a topic]. Sets the prefix's size; false
// (found) if the key is not one of `q`'s.
bool RecordWalker::MessageLane(const WalkQueue& q, size_t* lane_size) {
  const bool has_topic = q.record.options.layout == Layout::kTopic;
  const std::string malformed =
      absl::StrCat("malformed message key: not a key of queue '", q.name, "' (",
                   Av(LayoutName(q.record.options.layout)), " layout)");
  size_t n = LayoutCodec::kHeadSize;
  if (has_topic) {
    if (key_.size() < LayoutCodec::kHeadSize + 2) {
      Reject(malformed);
      return false;
    }
    n += 2 + coding::DecodeFixed16(key_.data() + LayoutCodec::kHeadSize);
  }
  const std::string_view rest =
      key_.size() >= n ? key_.substr(n) : std::string_view();
  const bool head = key_.size() == n;
  constexpr size_t kIdSize = LayoutCodec::kMessageIdSize;
  if (key_.size() < n || (!head && rest.size() < kIdSize) ||
      (has_topic && !head && rest.size() != kIdSize) ||
      (!has_topic && rest.size() > kIdSize + format::kMaxTopicBytes)) {
    Reject(malformed);
    return false;
  }
  *lane_size = n;
  return true;
}

// The walk enters message lane `lane`: the one before ends.
void RecordWalker::EnterLane(std::string_view lane) {
  EndLane();
  lane_.assign(lane);
}

// The lane the walk is in ends. (A lane need not have a fence: format
// version 5 writes none, layout_codec.h.)
void RecordWalker::EndLane() { lane_.clear(); }

// The id after the last message of `lane` (or its TTL watermark, if
// higher); Min() for an empty lane.
MessageId RecordWalker::ScanLimit(const WalkQueue& q, std::string_view lane) {
  MessageId limit = LaneEnd(lane);
  if (q.record.options.ttl != absl::InfiniteDuration()) {
    // A group moves its scan cursor up to the TTL cutoff.
    limit = std::max(limit, MessageId::AtTime(now_ - q.record.options.ttl));
  }
  return limit;
}

MessageId RecordWalker::LaneEnd(std::string_view lane) {
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
    end = std::max(end, LayoutCodec::DecodeMessageId(lane_it_->value().data()));
  }
  return end;
}

}  // namespace hq
