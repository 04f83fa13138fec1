// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The records hq stores in its LevelDB: the record tags, and the key
// builders, encoders and decoders of every record but message keys (built
// by the layouts, layout_codec.h). doc/format.md holds the grammar of every
// key and value; each group below names its section there, and
// test/format_test.cc checks that the tags and sections named here are the
// ones doc/format.md has. Integers in keys are big-endian (coding.h).

#ifndef HQ_LIB_FORMAT_FORMAT_H_
#define HQ_LIB_FORMAT_FORMAT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hq/group.h"
#include "hq/message.h"
#include "hq/options.h"
#include "hq/subscription.h"

namespace hq::format {

// doc/format.md, "Record tags". DO NOT CHANGE: persisted record tags.
inline constexpr char kMetaTag = 0x00;
inline constexpr char kCatalogTag = 0x01;
inline constexpr char kReserveTag = 0x02;
inline constexpr char kDropTag = 0x03;
inline constexpr char kLaneDirTag = 0x04;
inline constexpr char kTtlTag = 0x05;
inline constexpr char kGroupTag = 0x06;
inline constexpr char kCursorTag = 0x07;
inline constexpr char kTaskTag = 0x08;
inline constexpr char kDeadTag = 0x09;
inline constexpr char kDedupTag = 0x0a;
inline constexpr char kSubTag = 0x0b;
inline constexpr char kCheckpointTag = 0x0c;
inline constexpr char kHintTag = 0x0d;
inline constexpr char kSourceTag = 0x0e;
inline constexpr char kPaceTag = 0x0f;
inline constexpr char kMessageTag = 0x10;
inline constexpr char kParkTag = 0x11;
inline constexpr char kClaimTag = 0x12;
inline constexpr char kDeleteTag = 0x13;

// Bumped when a change makes old code unable to read new data.
inline constexpr uint32_t kFormatVersion = 11;
// The oldest version Open upgrades (doc/format.md, "Db metadata").
inline constexpr uint32_t kOldestFormatVersion = 1;

// Limits (documented in the public headers).
inline constexpr size_t kMaxQueueNameBytes = 128;
inline constexpr size_t kMaxTopicBytes = 1024;
// TopicPacing's limits (hq/group.h).
inline constexpr uint32_t kMaxPaceInFlight = 1000000;
inline constexpr uint64_t kMaxPaceIntervalMs = uint64_t{720} * 3600 * 1000;
inline constexpr size_t kMaxKeyBytes = 1024;
inline constexpr uint32_t kMaxPartitions = 65535;
inline constexpr int kMaxPriorities = 256;
inline constexpr uint32_t kMaxPayloadLimit = uint32_t{64} << 20;

// doc/format.md, "Db metadata".
std::string MetaKey(std::string_view name);
// doc/format.md, "Queue catalog" (the record: EncodeQueueRecord below).
std::string CatalogKey(std::string_view queue_name);
std::string CatalogPrefix();
// doc/format.md, "MessageId reservations".
std::string ReserveKey(uint32_t queue_id, uint32_t partition);
std::string ReservePrefix(uint32_t queue_id);
// doc/format.md, "Queue drops".
std::string DropKey(uint32_t queue_id);
std::string DropPrefix();
// doc/format.md, "Messages" (the value: AppendMessageValue below).
// All message keys of a queue start with this (tag, fixed32 queue_id).
std::string MessagePrefix(uint32_t queue_id);
inline constexpr size_t kMessagePrefixSize = 5;
// doc/format.md, "Lane directory".
// Appends the lane directory key of a lane, given its lane prefix.
void AppendLaneDirKey(std::string* dst, std::string_view lane_prefix);
// All lane directory keys of a queue, or of one of its partitions.
std::string LaneDirPrefix(uint32_t queue_id);
std::string LaneDirPrefix(uint32_t queue_id, uint32_t partition);
// doc/format.md, "TTL index and sweep watermarks".
std::string TtlKey(uint32_t queue_id);
std::string TtlPrefix();

// doc/format.md, "Consumer groups": group, cursor, task and dead records.
std::string GroupKey(uint32_t queue_id, std::string_view group_name);
std::string GroupPrefix(uint32_t queue_id);
// tag queue_id.
std::string QueuePrefix(char tag, uint32_t queue_id);
// tag queue_id group_id: the start of a group's cursor, task or dead keys.
std::string GroupRecordPrefix(char tag, uint32_t queue_id, uint32_t group_id);
// Appends lane_rest (the lane prefix without tag and queue id).
void AppendLaneRest(std::string* dst, std::string_view lane_prefix);
inline constexpr size_t kGroupRecordPrefixSize = 1 + 4 + 4;

struct GroupRecord {
  uint32_t id = 0;
  std::vector<std::string> topics;  // Sorted, unique.
  bool ordered = false;             // GroupOptions::ordered.
  // GroupOptions::start, and the first id handed out in each partition:
  // one id for all partitions, or one per partition; empty for kEarliest.
  uint8_t start = 0;
  std::vector<MessageId> start_ids;
};
std::string EncodeGroupRecord(const GroupRecord& record);
absl::Status DecodeGroupRecord(std::string_view in, GroupRecord* record);

struct CursorValue {
  MessageId scan;
  MessageId done;
};
std::string EncodeCursor(const CursorValue& c);
// EncodeCursor appended to `dst`.
void AppendCursor(std::string* dst, const CursorValue& c);
bool DecodeCursor(std::string_view in, CursorValue* c);

// doc/format.md, "Subscriptions": subscription records and checkpoints.
std::string SubKey(uint32_t queue_id, std::string_view name);
struct SubRecord {
  uint32_t id = 0;
  std::vector<uint32_t> partitions;  // Sorted, unique; empty: all.
  std::vector<std::string> topics;   // Sorted, unique; empty: all.
  // Where a lane without a checkpoint starts: start_ids[partition] if
  // there are any (one per partition: Start::kLatest, since format 7),
  // else `start`.
  MessageId start;
  std::vector<MessageId> start_ids;
  MessageId StartOf(uint32_t partition) const {
    return partition < start_ids.size() ? start_ids[partition] : start;
  }
};
std::string EncodeSubRecord(const SubRecord& r);
absl::Status DecodeSubRecord(std::string_view in, SubRecord* r);
std::string EncodeCheckpoint(MessageId next);
bool DecodeCheckpoint(std::string_view in, MessageId* next);

// doc/format.md, "Lane activity index".
// tag queue_id (255 - priority): the start of a priority's hints.
std::string HintPrefix(uint32_t queue_id, int priority);
// The key of a single-lane hint (formats 2 to 5), which sorts at or before
// every hint of `seq`: Seek to it to read from `seq` on.
std::string HintKey(uint32_t queue_id, int priority, uint64_t seq);
// The key of a hint written since format 6 (a list of lanes).
std::string ListHintKey(uint32_t queue_id, int priority, uint64_t seq);
// The seq of a hint key (either kind) that starts with HintPrefix; false if
// malformed. The index head's key decodes to seq 0.
bool DecodeHintSeq(std::string_view key, uint64_t* seq);
// The index head of a (queue, priority): the single-lane hint key of seq 0,
// which sorts before every hint, written by the trim in the batch of its
// deletions so that they always follow a live key. Its value: fixed64
// trimmed_below, every hint below which is deleted.
std::string IndexHeadKey(uint32_t queue_id, int priority);
std::string EncodeIndexHead(uint64_t trimmed_below);
bool DecodeIndexHead(std::string_view value, uint64_t* trimmed_below);
// Appends a topic layout lane to a list hint's value.
void AppendHintLane(std::string* value, std::string_view lane_prefix);
// The lane_rests a hint (either kind) names, each of `priority`; false if
// malformed (or empty).
bool DecodeHintLanes(std::string_view key, std::string_view value, int priority,
                     std::vector<std::string_view>* lanes);

// doc/format.md, "Topic pacing".
// A group's latest paced hand-out: fixed64 unix ms.
std::string PaceClockKey(uint32_t queue_id, uint32_t group_id);
// A topic's own pacing; and the start of a group's.
std::string PaceKey(uint32_t queue_id, uint32_t group_id,
                    std::string_view topic);
std::string PacePrefix(uint32_t queue_id, uint32_t group_id);

// doc/format.md, "Parked lanes": a lane with messages that an ordered group
// of a topic layout queue took out of its working set; the value is empty.
// The key is the prefix and the lane's lane_rest (AppendLaneRest).
std::string ParkPrefix(uint32_t queue_id, uint32_t group_id);

// doc/format.md, "Claim records": the cursors that a claim of a topic layout
// queue's group would have written for the lanes it handed out first
// messages of, in one record instead.
// tag queue_id group_id: the start of a group's claim records.
std::string ClaimPrefix(uint32_t queue_id, uint32_t group_id);
std::string ClaimKey(uint32_t queue_id, uint32_t group_id, uint64_t seq);
// The seq of a key that starts with ClaimPrefix; false if malformed.
bool DecodeClaimSeq(std::string_view key, uint64_t* seq);
struct ClaimEntry {
  std::string_view lane_rest;
  CursorValue cursor;
};
// Appends a topic layout lane's cursor to a claim record's value (which
// starts empty).
void AppendClaimEntry(std::string* value, std::string_view lane_prefix,
                      const CursorValue& cursor);
// The entries of a claim record's value; false if malformed (or empty).
bool DecodeClaimEntries(std::string_view value,
                        std::vector<ClaimEntry>* entries);

// doc/format.md, "Consumer deletes": the tombstone of a consumer group
// (or subscription) being deleted; its value says which dead-letter queue
// goes with it.
std::string DeleteKey(uint32_t queue_id, uint32_t consumer_id);
std::string DeletePrefix();
struct DeleteValue {
  // The dead-letter queue to drop (0: none, or kept), as its catalog
  // record had it, and its name.
  uint32_t dead_queue_id = 0;
  std::string dead_queue;
};
std::string EncodeDelete(const DeleteValue& v);
bool DecodeDelete(std::string_view in, DeleteValue* v);
// Every tag of the records keyed `tag queue_id consumer_id ...` that a
// consumer group or subscription owns (doc/format.md, "Consumer deletes").
inline constexpr char kConsumerRecordTags[] = {
    kCursorTag, kTaskTag, kDeadTag, kCheckpointTag,
    kSourceTag, kPaceTag, kParkTag, kClaimTag};

struct PaceValue {
  uint32_t max_in_flight = 0;
  uint64_t interval_ms = 0;
};
std::string EncodePace(const PaceValue& v);
// False if malformed or out of range (TopicPacing's limits).
bool DecodePace(std::string_view in, PaceValue* v);

// doc/format.md, "Lane source positions".
std::string SourceKey(uint32_t queue_id, uint32_t consumer_id);
struct SourcePosition {  // Of one priority.
  uint64_t next_seq = 1;
  bool walking = false;   // Its directory walk is in progress.
  std::string walk_from;  // If walking: a seek key after tag queue_id.
};
struct SourceValue {
  std::vector<SourcePosition> priorities;  // Per priority, from 0.
  // Per partition (format 10; empty in older records): an id that every
  // message of the partition written before the record is below and every
  // later one is at or above. A lane the walk has passed without a cursor
  // record has its cursors there (doc/format.md, "Walk floors").
  std::vector<MessageId> floors;
};
// Queues with more partitions get no floors: the record is rewritten at
// every move of the position.
inline constexpr uint32_t kMaxSourceFloors = 1024;
std::string EncodeSource(const SourceValue& v);
bool DecodeSource(std::string_view in, SourceValue* v);
// Whether `v` has passed the lane `lane_prefix` (a message lane prefix) of
// `priority` in its walk (false without floors).
bool SourcePassed(const SourceValue& v, std::string_view lane_prefix,
                  int priority);
// If `v` has passed the lane (of `partition`), its floor in *floor: where
// the consumer's cursors or checkpoint of the lane are if it has no record
// (at the latest of the floor and the consumer's start). Else false.
bool SourceFloor(const SourceValue& v, std::string_view lane_prefix,
                 uint32_t partition, int priority, MessageId* floor);

// DO NOT CHANGE: persisted task states.
enum class TaskState : uint8_t { kInFlight = 1, kWaiting = 2, kDone = 3 };
struct TaskValue {
  TaskState state = TaskState::kInFlight;
  uint32_t attempts = 0;
  uint64_t ms = 0;
};
std::string EncodeTask(const TaskValue& t);
bool DecodeTask(std::string_view in, TaskValue* t);

struct DeadValue {
  uint32_t original_partition = 0;
  MessageId original_id;
  int priority = 0;
  uint8_t reason = 0;
  uint32_t attempts = 0;
  uint64_t dead_ms = 0;
  std::string topic;
};
std::string EncodeDead(const DeadValue& d);
bool DecodeDead(std::string_view in, DeadValue* d);

// OK, or InvalidArgument saying what is wrong with the name (1..128
// bytes of [A-Za-z0-9._-], starting with a letter or a digit).
absl::Status ValidateQueueName(std::string_view name);
absl::Status ValidateGroupName(std::string_view name);
absl::Status ValidateSubscriptionName(std::string_view name);
// OK, or InvalidArgument naming the QueueOptions field outside its limits
// (those of the queue record, doc/format.md "Queue catalog").
absl::Status ValidateQueueOptions(const QueueOptions& options);

struct QueueRecord {
  uint32_t id = 0;
  QueueOptions options;
  absl::Time created;
};
std::string EncodeQueueRecord(const QueueRecord& record);
// DataLoss on malformed input.
absl::Status DecodeQueueRecord(std::string_view in, QueueRecord* record);

// Appends a message value; not_before_ms 0: none; dedup "": none.
void AppendMessageValue(std::string* dst, std::string_view key,
                        std::string_view payload, uint64_t not_before_ms = 0,
                        std::string_view dedup = {});
// Splits a message value into views of `in`, its not-before time (0 if
// none) into *not_before_ms and its dedup key into *dedup (each if not
// null). False if malformed.
bool DecodeMessageValue(std::string_view in, std::string_view* key,
                        std::string_view* payload,
                        uint64_t* not_before_ms = nullptr,
                        std::string_view* dedup = nullptr);
// doc/format.md, "Dedup index".
std::string DedupKey(uint32_t queue_id, std::string_view dedup_key);
std::string EncodeDedup(uint32_t partition, MessageId id);
bool DecodeDedup(std::string_view in, uint32_t* partition, MessageId* id);
// The not-before time of a decoded value (InfinitePast() for 0).
inline absl::Time NotBeforeTime(uint64_t not_before_ms) {
  return not_before_ms == 0
             ? absl::InfinitePast()
             : absl::FromUnixMillis(static_cast<int64_t>(not_before_ms));
}

}  // namespace hq::format

#endif  // HQ_LIB_FORMAT_FORMAT_H_
