// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/format/format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/format/coding.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq::format {
namespace {

constexpr uint8_t kQueueRecordVersion = 1;
constexpr uint8_t kMessageValueVersion = 1;
constexpr uint8_t kFlagHasKey = 0x01;
constexpr uint8_t kFlagNotBefore = 0x02;
constexpr uint8_t kFlagDedup = 0x04;
constexpr uint8_t kGroupRecordVersion = 1;
// A source record's first byte: without floors (format 9), with (10).
constexpr uint8_t kSourceVersion = 1;
constexpr uint8_t kSourceFloors = 2;
constexpr uint8_t kGroupOrdered = 0x01;  // Group record flags.
constexpr uint8_t kGroupStart = 0x02;
// At most this many start ids (one per partition).
constexpr uint32_t kMaxStartIds = 65536;

std::string Tagged(char tag, std::string_view rest) {
  std::string s(1, tag);
  s.append(rest);
  return s;
}

// tag fixed32 queue_id: the start of every per-queue key.
std::string TaggedQueue(char tag, uint32_t queue_id) {
  std::string s(1, tag);
  coding::PutFixed32(&s, queue_id);
  return s;
}

}  // namespace

std::string MetaKey(std::string_view name) { return Tagged(kMetaTag, name); }
std::string CatalogKey(std::string_view queue_name) {
  return Tagged(kCatalogTag, queue_name);
}
std::string CatalogPrefix() { return std::string(1, kCatalogTag); }

std::string ReserveKey(uint32_t queue_id, uint32_t partition) {
  std::string s = ReservePrefix(queue_id);
  coding::PutFixed16(&s, static_cast<uint16_t>(partition));
  return s;
}
std::string ReservePrefix(uint32_t queue_id) {
  return TaggedQueue(kReserveTag, queue_id);
}

std::string DropKey(uint32_t queue_id) {
  return TaggedQueue(kDropTag, queue_id);
}
std::string DropPrefix() { return std::string(1, kDropTag); }

std::string DeleteKey(uint32_t queue_id, uint32_t consumer_id) {
  return GroupRecordPrefix(kDeleteTag, queue_id, consumer_id);
}
std::string DeletePrefix() { return std::string(1, kDeleteTag); }
std::string EncodeDelete(const DeleteValue& v) {
  std::string s;
  coding::PutFixed8(&s, 1);
  coding::PutFixed32(&s, v.dead_queue_id);
  s.append(v.dead_queue);
  return s;
}
bool DecodeDelete(std::string_view in, DeleteValue* v) {
  uint8_t version;
  if (!coding::GetFixed8(&in, &version) || version != 1 ||
      !coding::GetFixed32(&in, &v->dead_queue_id)) {
    return false;
  }
  v->dead_queue.assign(in);
  return (v->dead_queue_id == 0) == v->dead_queue.empty();
}

std::string MessagePrefix(uint32_t queue_id) {
  return TaggedQueue(kMessageTag, queue_id);
}

void AppendLaneDirKey(std::string* dst, std::string_view lane_prefix) {
  dst->push_back(kLaneDirTag);
  dst->append(lane_prefix.substr(1));
}
std::string LaneDirPrefix(uint32_t queue_id) {
  return TaggedQueue(kLaneDirTag, queue_id);
}
std::string LaneDirPrefix(uint32_t queue_id, uint32_t partition) {
  std::string s = LaneDirPrefix(queue_id);
  coding::PutFixed16(&s, static_cast<uint16_t>(partition));
  return s;
}

std::string TtlKey(uint32_t queue_id) { return TaggedQueue(kTtlTag, queue_id); }
std::string TtlPrefix() { return std::string(1, kTtlTag); }

std::string GroupKey(uint32_t queue_id, std::string_view group_name) {
  std::string s = GroupPrefix(queue_id);
  s.append(group_name);
  return s;
}
std::string DedupKey(uint32_t queue_id, std::string_view dedup_key) {
  std::string s = TaggedQueue(kDedupTag, queue_id);
  s.append(dedup_key);
  return s;
}

std::string EncodeDedup(uint32_t partition, MessageId id) {
  std::string s;
  coding::PutFixed16(&s, static_cast<uint16_t>(partition));
  coding::PutFixed64(&s, (id.ms << 16) | id.seq);
  return s;
}

bool DecodeDedup(std::string_view in, uint32_t* partition, MessageId* id) {
  uint16_t p;
  uint64_t v;
  if (!coding::GetFixed16(&in, &p) || !coding::GetFixed64(&in, &v) ||
      !in.empty()) {
    return false;
  }
  *partition = p;
  *id = MessageId{v >> 16, static_cast<uint16_t>(v & 0xffff)};
  return true;
}

std::string QueuePrefix(char tag, uint32_t queue_id) {
  return TaggedQueue(tag, queue_id);
}
std::string GroupPrefix(uint32_t queue_id) {
  return TaggedQueue(kGroupTag, queue_id);
}
std::string GroupRecordPrefix(char tag, uint32_t queue_id, uint32_t group_id) {
  std::string s = TaggedQueue(tag, queue_id);
  coding::PutFixed32(&s, group_id);
  return s;
}
void AppendLaneRest(std::string* dst, std::string_view lane_prefix) {
  dst->append(lane_prefix.substr(5));
}

namespace {
void PutId(std::string* dst, MessageId id) {
  coding::PutFixed64(dst, (id.ms << 16) | id.seq);
}
bool GetId(std::string_view* in, MessageId* id) {
  uint64_t v;
  if (!coding::GetFixed64(in, &v)) return false;
  *id = MessageId{v >> 16, static_cast<uint16_t>(v & 0xffff)};
  return true;
}
}  // namespace

std::string EncodeGroupRecord(const GroupRecord& r) {
  std::string s;
  coding::PutFixed8(&s, kGroupRecordVersion);
  coding::PutFixed32(&s, r.id);
  coding::PutVarint32(&s, static_cast<uint32_t>(r.topics.size()));
  for (const std::string& t : r.topics) coding::PutLengthPrefixed(&s, t);
  // The flags byte only when a flag is set: an unordered group's record
  // stays what earlier versions wrote and read.
  const uint8_t flags =
      (r.ordered ? kGroupOrdered : 0) | (r.start_ids.empty() ? 0 : kGroupStart);
  if (flags != 0) coding::PutFixed8(&s, flags);
  if (!r.start_ids.empty()) {
    coding::PutFixed8(&s, r.start);
    coding::PutVarint32(&s, static_cast<uint32_t>(r.start_ids.size()));
    for (const MessageId& id : r.start_ids) PutId(&s, id);
  }
  return s;
}

absl::Status DecodeGroupRecord(std::string_view in, GroupRecord* r) {
  uint8_t version;
  uint32_t n;
  if (!coding::GetFixed8(&in, &version) || version != kGroupRecordVersion ||
      !coding::GetFixed32(&in, &r->id) || !coding::GetVarint32(&in, &n) ||
      n > 1024) {
    return absl::DataLossError("malformed consumer group record");
  }
  r->topics.clear();
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view t;
    // Sorted and unique, as written.
    if (!coding::GetLengthPrefixed(&in, &t) || t.size() > kMaxTopicBytes ||
        (i > 0 && t <= r->topics.back())) {
      return absl::DataLossError("malformed consumer group record");
    }
    r->topics.emplace_back(t);
  }
  // Flags: absent in records written before ordered groups existed.
  uint8_t flags = 0;
  if (!in.empty() && !coding::GetFixed8(&in, &flags)) {
    return absl::DataLossError("malformed consumer group record");
  }
  if ((flags & ~(kGroupOrdered | kGroupStart)) != 0) {
    return absl::DataLossError("malformed consumer group record");
  }
  r->ordered = (flags & kGroupOrdered) != 0;
  r->start = 0;
  r->start_ids.clear();
  if ((flags & kGroupStart) != 0) {
    uint32_t count;
    if (!coding::GetFixed8(&in, &r->start) || r->start == 0 || r->start > 3 ||
        !coding::GetVarint32(&in, &count) || count == 0 ||
        count > kMaxStartIds) {
      return absl::DataLossError("malformed consumer group record");
    }
    r->start_ids.resize(count);
    for (MessageId& id : r->start_ids) {
      if (!GetId(&in, &id)) {
        return absl::DataLossError("malformed consumer group record");
      }
    }
  }
  if (!in.empty())
    return absl::DataLossError("malformed consumer group record");
  return absl::OkStatus();
}

std::string EncodeCursor(const CursorValue& c) {
  std::string s;
  AppendCursor(&s, c);
  return s;
}

void AppendCursor(std::string* dst, const CursorValue& c) {
  coding::PutFixed8(dst, kGroupRecordVersion);
  PutId(dst, c.scan);
  PutId(dst, c.done);
}

bool DecodeCursor(std::string_view in, CursorValue* c) {
  uint8_t version;
  return coding::GetFixed8(&in, &version) && version == kGroupRecordVersion &&
         GetId(&in, &c->scan) && GetId(&in, &c->done) && in.empty() &&
         c->done <= c->scan;
}

std::string HintPrefix(uint32_t queue_id, int priority) {
  std::string s = TaggedQueue(kHintTag, queue_id);
  coding::PutFixed8(&s, static_cast<uint8_t>(255 - priority));
  return s;
}
namespace {
constexpr size_t kSingleHintKeySize = 1 + 4 + 1 + 8;
constexpr char kListHint = 0x01;  // The suffix of a list hint's key.
}  // namespace

std::string HintKey(uint32_t queue_id, int priority, uint64_t seq) {
  std::string s = HintPrefix(queue_id, priority);
  coding::PutFixed64(&s, seq);
  return s;
}
std::string ListHintKey(uint32_t queue_id, int priority, uint64_t seq) {
  std::string s = HintKey(queue_id, priority, seq);
  s.push_back(kListHint);
  return s;
}
std::string IndexHeadKey(uint32_t queue_id, int priority) {
  return HintKey(queue_id, priority, 0);
}
std::string EncodeIndexHead(uint64_t trimmed_below) {
  std::string s;
  coding::PutFixed64(&s, trimmed_below);
  return s;
}
bool DecodeIndexHead(std::string_view value, uint64_t* trimmed_below) {
  return coding::GetFixed64(&value, trimmed_below) && value.empty();
}
bool DecodeHintSeq(std::string_view key, uint64_t* seq) {
  if (key.size() != kSingleHintKeySize &&
      !(key.size() == kSingleHintKeySize + 1 && key.back() == kListHint)) {
    return false;
  }
  *seq = coding::DecodeFixed64(key.data() + 6);
  return true;
}
void AppendHintLane(std::string* value, std::string_view lane_prefix) {
  coding::PutLengthPrefixed(value, lane_prefix.substr(5));
}
bool DecodeHintLanes(std::string_view key, std::string_view value, int priority,
                     std::vector<std::string_view>* lanes) {
  lanes->clear();
  auto valid = [priority](std::string_view rest) {
    return rest.size() >= 3 &&
           static_cast<unsigned char>(rest[2]) == 255 - priority;
  };
  if (key.size() == kSingleHintKeySize) {
    lanes->push_back(value);
    return valid(value);
  }
  while (!value.empty()) {
    std::string_view rest;
    if (!coding::GetLengthPrefixed(&value, &rest) || !valid(rest)) {
      return false;
    }
    lanes->push_back(rest);
  }
  return !lanes->empty();
}

std::string ClaimPrefix(uint32_t queue_id, uint32_t group_id) {
  return GroupRecordPrefix(kClaimTag, queue_id, group_id);
}

std::string ClaimKey(uint32_t queue_id, uint32_t group_id, uint64_t seq) {
  std::string s = ClaimPrefix(queue_id, group_id);
  coding::PutFixed64(&s, seq);
  return s;
}

bool DecodeClaimSeq(std::string_view key, uint64_t* seq) {
  if (key.size() != kGroupRecordPrefixSize + 8) return false;
  key.remove_prefix(kGroupRecordPrefixSize);
  return coding::GetFixed64(&key, seq) && *seq != 0;
}

void AppendClaimEntry(std::string* value, std::string_view lane_prefix,
                      const CursorValue& cursor) {
  if (value->empty()) coding::PutFixed8(value, kGroupRecordVersion);
  coding::PutLengthPrefixed(value, lane_prefix.substr(5));
  PutId(value, cursor.scan);
  PutId(value, cursor.done);
}

bool DecodeClaimEntries(std::string_view value,
                        std::vector<ClaimEntry>* entries) {
  entries->clear();
  uint8_t version;
  if (!coding::GetFixed8(&value, &version) || version != kGroupRecordVersion) {
    return false;
  }
  while (!value.empty()) {
    ClaimEntry& e = entries->emplace_back();
    if (!coding::GetLengthPrefixed(&value, &e.lane_rest) ||
        e.lane_rest.size() < 3 || !GetId(&value, &e.cursor.scan) ||
        !GetId(&value, &e.cursor.done) || e.cursor.scan < e.cursor.done) {
      return false;
    }
  }
  return !entries->empty();
}

std::string PaceClockKey(uint32_t queue_id, uint32_t group_id) {
  std::string s = GroupRecordPrefix(kPaceTag, queue_id, group_id);
  s.push_back('\0');
  return s;
}

std::string PacePrefix(uint32_t queue_id, uint32_t group_id) {
  std::string s = GroupRecordPrefix(kPaceTag, queue_id, group_id);
  s.push_back('\1');
  return s;
}

std::string ParkPrefix(uint32_t queue_id, uint32_t group_id) {
  return GroupRecordPrefix(kParkTag, queue_id, group_id);
}

std::string PaceKey(uint32_t queue_id, uint32_t group_id,
                    std::string_view topic) {
  std::string s = PacePrefix(queue_id, group_id);
  s.append(topic);
  return s;
}

std::string EncodePace(const PaceValue& v) {
  std::string s;
  coding::PutFixed8(&s, kGroupRecordVersion);
  coding::PutVarint32(&s, v.max_in_flight);
  coding::PutVarint64(&s, v.interval_ms);
  return s;
}

bool DecodePace(std::string_view in, PaceValue* v) {
  uint8_t version;
  return coding::GetFixed8(&in, &version) && version == kGroupRecordVersion &&
         coding::GetVarint32(&in, &v->max_in_flight) &&
         coding::GetVarint64(&in, &v->interval_ms) && in.empty() &&
         v->max_in_flight <= kMaxPaceInFlight &&
         v->interval_ms <= kMaxPaceIntervalMs;
}

std::string SourceKey(uint32_t queue_id, uint32_t consumer_id) {
  return GroupRecordPrefix(kSourceTag, queue_id, consumer_id);
}

std::string EncodeSource(const SourceValue& v) {
  std::string s;
  coding::PutFixed8(&s, v.floors.empty() ? kSourceVersion : kSourceFloors);
  coding::PutVarint32(&s, static_cast<uint32_t>(v.priorities.size()));
  for (const SourcePosition& p : v.priorities) {
    coding::PutFixed64(&s, p.next_seq);
    coding::PutFixed8(&s, p.walking ? 1 : 0);
    if (p.walking) coding::PutLengthPrefixed(&s, p.walk_from);
  }
  if (!v.floors.empty()) {
    coding::PutVarint32(&s, static_cast<uint32_t>(v.floors.size()));
    for (const MessageId& id : v.floors) PutId(&s, id);
  }
  return s;
}

bool DecodeSource(std::string_view in, SourceValue* v) {
  uint8_t version;
  uint32_t n;
  if (!coding::GetFixed8(&in, &version) ||
      (version != kSourceVersion && version != kSourceFloors) ||
      !coding::GetVarint32(&in, &n) || n == 0 ||
      n > static_cast<uint32_t>(kMaxPriorities)) {
    return false;
  }
  v->priorities.assign(n, SourcePosition());
  v->floors.clear();
  for (SourcePosition& p : v->priorities) {
    uint8_t walking;
    std::string_view from;
    if (!coding::GetFixed64(&in, &p.next_seq) || p.next_seq == 0 ||
        !coding::GetFixed8(&in, &walking) || walking > 1) {
      return false;
    }
    p.walking = walking == 1;
    if (p.walking) {
      if (!coding::GetLengthPrefixed(&in, &from)) return false;
      p.walk_from.assign(from);
    }
  }
  if (version == kSourceFloors) {
    uint32_t count;
    if (!coding::GetVarint32(&in, &count) || count == 0 ||
        count > kMaxPartitions) {
      return false;
    }
    v->floors.resize(count);
    for (MessageId& id : v->floors) {
      if (!GetId(&in, &id)) return false;
    }
  }
  return in.empty();
}

bool SourcePassed(const SourceValue& v, std::string_view lane_prefix,
                  int priority) {
  if (v.floors.empty() || priority < 0 ||
      static_cast<size_t>(priority) >= v.priorities.size()) {
    return false;
  }
  const SourcePosition& pos = v.priorities[priority];
  return !pos.walking ||
         (lane_prefix.size() >= kMessagePrefixSize &&
          lane_prefix.substr(kMessagePrefixSize) < pos.walk_from);
}

bool SourceFloor(const SourceValue& v, std::string_view lane_prefix,
                 uint32_t partition, int priority, MessageId* floor) {
  if (partition >= v.floors.size() || !SourcePassed(v, lane_prefix, priority)) {
    return false;
  }
  *floor = v.floors[partition];
  return true;
}

std::string SubKey(uint32_t queue_id, std::string_view name) {
  std::string s = TaggedQueue(kSubTag, queue_id);
  s.append(name);
  return s;
}

std::string EncodeSubRecord(const SubRecord& r) {
  std::string s;
  coding::PutFixed8(&s, kGroupRecordVersion);
  coding::PutFixed32(&s, r.id);
  coding::PutVarint32(&s, static_cast<uint32_t>(r.partitions.size()));
  for (uint32_t p : r.partitions) {
    coding::PutFixed16(&s, static_cast<uint16_t>(p));
  }
  coding::PutVarint32(&s, static_cast<uint32_t>(r.topics.size()));
  for (const std::string& t : r.topics) coding::PutLengthPrefixed(&s, t);
  PutId(&s, r.start);
  if (!r.start_ids.empty()) {
    coding::PutVarint32(&s, static_cast<uint32_t>(r.start_ids.size()));
    for (const MessageId& id : r.start_ids) PutId(&s, id);
  }
  return s;
}

absl::Status DecodeSubRecord(std::string_view in, SubRecord* r) {
  const absl::Status bad = absl::DataLossError("malformed subscription record");
  uint8_t version;
  uint32_t n;
  if (!coding::GetFixed8(&in, &version) || version != kGroupRecordVersion ||
      !coding::GetFixed32(&in, &r->id) || !coding::GetVarint32(&in, &n) ||
      n > kMaxPartitions) {
    return bad;
  }
  r->partitions.clear();
  for (uint32_t i = 0; i < n; ++i) {
    uint16_t p;
    // Sorted and unique, as written.
    if (!coding::GetFixed16(&in, &p) || (i > 0 && p <= r->partitions.back())) {
      return bad;
    }
    r->partitions.push_back(p);
  }
  if (!coding::GetVarint32(&in, &n) || n > 1024) return bad;
  r->topics.clear();
  for (uint32_t i = 0; i < n; ++i) {
    std::string_view t;
    if (!coding::GetLengthPrefixed(&in, &t) || t.size() > kMaxTopicBytes ||
        (i > 0 && t <= r->topics.back())) {
      return bad;
    }
    r->topics.emplace_back(t);
  }
  if (!GetId(&in, &r->start)) return bad;
  r->start_ids.clear();
  if (in.empty()) return absl::OkStatus();
  if (!coding::GetVarint32(&in, &n) || n == 0 || n > kMaxPartitions) {
    return bad;
  }
  r->start_ids.resize(n);
  for (MessageId& id : r->start_ids) {
    if (!GetId(&in, &id)) return bad;
  }
  return in.empty() ? absl::OkStatus() : bad;
}

std::string EncodeCheckpoint(MessageId next) {
  std::string s;
  coding::PutFixed8(&s, kGroupRecordVersion);
  PutId(&s, next);
  return s;
}

bool DecodeCheckpoint(std::string_view in, MessageId* next) {
  uint8_t version;
  return coding::GetFixed8(&in, &version) && version == kGroupRecordVersion &&
         GetId(&in, next) && in.empty();
}

std::string EncodeTask(const TaskValue& t) {
  std::string s;
  coding::PutFixed8(&s, kGroupRecordVersion);
  coding::PutFixed8(&s, static_cast<uint8_t>(t.state));
  coding::PutVarint32(&s, t.attempts);
  coding::PutVarint64(&s, t.ms);
  return s;
}

bool DecodeTask(std::string_view in, TaskValue* t) {
  uint8_t version, state;
  if (!coding::GetFixed8(&in, &version) || version != kGroupRecordVersion ||
      !coding::GetFixed8(&in, &state) || state < 1 || state > 3 ||
      !coding::GetVarint32(&in, &t->attempts) ||
      !coding::GetVarint64(&in, &t->ms) || !in.empty() ||
      t->ms > static_cast<uint64_t>(INT64_MAX)) {
    return false;
  }
  t->state = static_cast<TaskState>(state);
  return true;
}

std::string EncodeDead(const DeadValue& d) {
  std::string s;
  coding::PutFixed8(&s, kGroupRecordVersion);
  coding::PutFixed16(&s, static_cast<uint16_t>(d.original_partition));
  PutId(&s, d.original_id);
  coding::PutFixed8(&s, static_cast<uint8_t>(d.priority));
  coding::PutFixed8(&s, d.reason);
  coding::PutVarint32(&s, d.attempts);
  coding::PutVarint64(&s, d.dead_ms);
  coding::PutLengthPrefixed(&s, d.topic);
  return s;
}

bool DecodeDead(std::string_view in, DeadValue* d) {
  uint8_t version, priority;
  uint16_t partition;
  std::string_view topic;
  if (!coding::GetFixed8(&in, &version) || version != kGroupRecordVersion ||
      !coding::GetFixed16(&in, &partition) || !GetId(&in, &d->original_id) ||
      !coding::GetFixed8(&in, &priority) ||
      !coding::GetFixed8(&in, &d->reason) ||
      !coding::GetVarint32(&in, &d->attempts) ||
      !coding::GetVarint64(&in, &d->dead_ms) ||
      !coding::GetLengthPrefixed(&in, &topic) || !in.empty() ||
      d->dead_ms > static_cast<uint64_t>(INT64_MAX) ||
      d->reason < static_cast<uint8_t>(DeadLetterReason::kLeaseExpired) ||
      d->reason > static_cast<uint8_t>(DeadLetterReason::kRejected) ||
      topic.size() > kMaxTopicBytes) {
    return false;
  }
  d->original_partition = partition;
  d->priority = priority;
  d->topic.assign(topic);
  return true;
}

namespace {

absl::Status ValidateName(std::string_view kind, std::string_view name) {
  if (name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(Av(kind), " name is empty"));
  }
  if (name.size() > kMaxQueueNameBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s name of %d bytes is longer than the limit of %d bytes", Av(kind),
        name.size(), kMaxQueueNameBytes));
  }
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
  };
  if (!alnum(name[0])) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(kind), " name '", Printable(name),
                     "' must start with a letter or a digit"));
  }
  for (char c : name) {
    if (!alnum(c) && c != '.' && c != '_' && c != '-') {
      return absl::InvalidArgumentError(
          absl::StrCat(Av(kind), " name '", Printable(name),
                       "' holds a character outside [A-Za-z0-9._-]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateQueueName(std::string_view name) {
  return ValidateName("queue", name);
}

absl::Status ValidateGroupName(std::string_view name) {
  return ValidateName("group", name);
}

absl::Status ValidateSubscriptionName(std::string_view name) {
  return ValidateName("subscription", name);
}

absl::Status ValidateQueueOptions(const QueueOptions& o) {
  if (o.partitions < 1 || o.partitions > kMaxPartitions) {
    return absl::InvalidArgumentError(
        absl::StrFormat("QueueOptions::partitions is %d; it must be in 1..%d",
                        o.partitions, kMaxPartitions));
  }
  if (o.priorities < 1 || o.priorities > kMaxPriorities) {
    return absl::InvalidArgumentError(
        absl::StrFormat("QueueOptions::priorities is %d; it must be in 1..%d",
                        o.priorities, kMaxPriorities));
  }
  if (o.ttl != absl::InfiniteDuration()) {
    if (o.ttl < absl::Milliseconds(1) ||
        o.ttl != absl::Milliseconds(absl::ToInt64Milliseconds(o.ttl))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "QueueOptions::ttl is ", absl::FormatDuration(o.ttl),
          "; it must be a whole number of milliseconds >= 1ms, or infinite"));
    }
  }
  if (o.layout != Layout::kTime && o.layout != Layout::kTopic) {
    return absl::InvalidArgumentError(
        absl::StrFormat("QueueOptions::layout %d is not a known layout",
                        static_cast<int>(o.layout)));
  }
  if (o.max_payload_bytes < 1 || o.max_payload_bytes > kMaxPayloadLimit) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "QueueOptions::max_payload_bytes is %d; it must be in 1..%d",
        o.max_payload_bytes, kMaxPayloadLimit));
  }
  return absl::OkStatus();
}

std::string EncodeQueueRecord(const QueueRecord& r) {
  std::string s;
  coding::PutFixed8(&s, kQueueRecordVersion);
  coding::PutFixed32(&s, r.id);
  coding::PutFixed16(&s, static_cast<uint16_t>(r.options.partitions));
  coding::PutFixed16(&s, static_cast<uint16_t>(r.options.priorities));
  coding::PutFixed8(&s, static_cast<uint8_t>(r.options.layout));
  const uint64_t ttl_ms =
      r.options.ttl == absl::InfiniteDuration()
          ? 0
          : static_cast<uint64_t>(absl::ToInt64Milliseconds(r.options.ttl));
  coding::PutVarint64(&s, ttl_ms);
  coding::PutVarint32(&s, r.options.max_payload_bytes);
  coding::PutVarint64(&s, static_cast<uint64_t>(absl::ToUnixMillis(r.created)));
  return s;
}

absl::Status DecodeQueueRecord(std::string_view in, QueueRecord* r) {
  uint8_t version, layout;
  uint16_t partitions, priorities;
  uint64_t ttl_ms, created_ms;
  uint32_t max_payload;
  if (!coding::GetFixed8(&in, &version) || version != kQueueRecordVersion ||
      !coding::GetFixed32(&in, &r->id) ||
      !coding::GetFixed16(&in, &partitions) ||
      !coding::GetFixed16(&in, &priorities) ||
      !coding::GetFixed8(&in, &layout) || !coding::GetVarint64(&in, &ttl_ms) ||
      !coding::GetVarint32(&in, &max_payload) ||
      !coding::GetVarint64(&in, &created_ms) || !in.empty() ||
      ttl_ms > static_cast<uint64_t>(INT64_MAX) ||
      created_ms > static_cast<uint64_t>(INT64_MAX)) {
    return absl::DataLossError("malformed queue record in the catalog");
  }
  r->options.partitions = partitions;
  r->options.priorities = priorities;
  r->options.layout = static_cast<Layout>(layout);
  r->options.ttl = ttl_ms == 0
                       ? absl::InfiniteDuration()
                       : absl::Milliseconds(static_cast<int64_t>(ttl_ms));
  r->options.max_payload_bytes = max_payload;
  r->created = absl::FromUnixMillis(static_cast<int64_t>(created_ms));
  absl::Status s = ValidateQueueOptions(r->options);
  if (!s.ok()) {
    return absl::DataLossError(
        absl::StrCat("queue record in the catalog is invalid: ", s.message()));
  }
  return absl::OkStatus();
}

void AppendMessageValue(std::string* dst, std::string_view key,
                        std::string_view payload, uint64_t not_before_ms,
                        std::string_view dedup) {
  uint8_t flags = 0;
  if (!key.empty()) flags |= kFlagHasKey;
  if (not_before_ms != 0) flags |= kFlagNotBefore;
  if (!dedup.empty()) flags |= kFlagDedup;
  const char head[2] = {static_cast<char>(kMessageValueVersion),
                        static_cast<char>(flags)};
  dst->append(head, 2);
  if (!key.empty()) coding::PutLengthPrefixed(dst, key);
  if (!dedup.empty()) coding::PutLengthPrefixed(dst, dedup);
  if (not_before_ms != 0) coding::PutVarint64(dst, not_before_ms);
  dst->append(payload);
}

bool DecodeMessageValue(std::string_view in, std::string_view* key,
                        std::string_view* payload, uint64_t* not_before_ms,
                        std::string_view* dedup) {
  uint8_t version, flags;
  if (!coding::GetFixed8(&in, &version) || version != kMessageValueVersion ||
      !coding::GetFixed8(&in, &flags)) {
    return false;
  }
  *key = std::string_view();
  std::string_view d;
  uint64_t not_before = 0;
  // Most messages have a payload alone: no flag to look into.
  if (flags != 0) {
    if ((flags & ~(kFlagHasKey | kFlagNotBefore | kFlagDedup)) != 0) {
      return false;
    }
    if ((flags & kFlagHasKey) != 0 && !coding::GetLengthPrefixed(&in, key)) {
      return false;
    }
    if ((flags & kFlagDedup) != 0 &&
        (!coding::GetLengthPrefixed(&in, &d) || d.empty())) {
      return false;
    }
    if ((flags & kFlagNotBefore) != 0 &&
        (!coding::GetVarint64(&in, &not_before) || not_before == 0 ||
         not_before > static_cast<uint64_t>(INT64_MAX))) {
      return false;
    }
  }
  if (dedup != nullptr) *dedup = d;
  if (not_before_ms != nullptr) *not_before_ms = not_before;
  *payload = in;
  return true;
}

}  // namespace hq::format
