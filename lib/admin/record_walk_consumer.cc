// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The rules of the consumers' records (lib/admin/record_walk.h): groups
// and subscriptions, their cursors, parked lanes, claims, tasks, dead
// letters, dedup entries, checkpoints, hints, source positions and
// pacing. As record_walk.cc's rules, each states one record kind's rules.

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/admin/record_walk.h"
#include "lib/engine/checked_read.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

void RecordWalker::CheckGroupOrSub(bool is_group) {
  const std::string_view kind = is_group ? "group" : "subscription";
  WalkQueue* q = QueueOf(kind, 5);
  if (q == nullptr) return;
  if (absl::Status s = format::ValidateGroupName(key_.substr(5)); !s.ok()) {
    if (!Reject(absl::StrCat("malformed ", Av(kind), " key: ", s.message()))) {
      return;
    }
  }
  uint32_t id;
  if (is_group) {
    format::GroupRecord r;
    if (absl::Status s = format::DecodeGroupRecord(value_, &r); !s.ok()) {
      return (void)Reject(absl::StrCat("malformed group value: ", s.message()));
    }
    id = r.id;
  } else {
    format::SubRecord r;
    if (absl::Status s = format::DecodeSubRecord(value_, &r); !s.ok()) {
      return (void)Reject(
          absl::StrCat("malformed subscription value: ", s.message()));
    }
    if (!r.start_ids.empty() &&
        r.start_ids.size() != q->record.options.partitions) {
      return (void)Reject(absl::StrFormat(
          "subscription value: %d start ids (queue '%s' has %d partitions)",
          r.start_ids.size(), q->name, q->record.options.partitions));
    }
    for (uint32_t p : r.partitions) {
      if (p >= q->record.options.partitions) {
        if (!Reject(absl::StrFormat("subscription value: partition %d out of "
                                    "range (queue '%s' has %d)",
                                    p, q->name,
                                    q->record.options.partitions))) {
          return;
        }
        break;
      }
    }
    id = r.id;
  }
  if (!CheckGroupId(kind, id)) return;
  (is_group ? q->groups : q->subs).insert(id);
}

// The id of a group or subscription record: below next_group_id and used
// once. Returns false if the record is gone or its id taken.
bool RecordWalker::CheckGroupId(std::string_view kind, uint32_t id) {
  const std::string above = absl::StrFormat(
      "%s id %d at or above next_group_id %d", kind, id, facts_.next_group_id);
  if (id == 0) {
    if (!Reject(above, absl::StrCat(Av(kind), " id 0"))) return false;
  } else if (id >= facts_.next_group_id) {
    Later(above);
  }
  if (!group_ids_.insert(id).second) {
    Reject(absl::StrFormat(
        "%s id %d already used by another group or subscription", kind, id));
    return false;
  }
  facts_.max_group_id = std::max(facts_.max_group_id, id);
  return true;
}

RecordWalker::LaneRecord RecordWalker::OwnedLane(std::string_view kind,
                                                 bool of_group, size_t suffix) {
  LaneRecord r;
  WalkQueue* q = OwnerOf(kind, of_group);
  if (q == nullptr) return r;
  const size_t n = format::kGroupRecordPrefixSize;
  if (suffix > 0 && key_.size() < n + 3 + suffix) {
    Reject(absl::StrCat("malformed ", Av(kind), " key (too short)"));
    return r;
  }
  r.lane = LanePrefix(q->record.id, key_.substr(n, key_.size() - n - suffix));
  if (Lane(kind, *q, r.lane, &r.partition)) r.q = q;
  return r;
}

void RecordWalker::CheckCursor() {
  const auto [q, lane, p] = OwnedLane("cursor", /*of_group=*/true);
  if (q == nullptr) return;
  format::CursorValue c;
  if (!format::DecodeCursor(value_, &c)) {
    // (Also a completion cursor above the scan cursor.) Without a record,
    // a lane the group's walk has passed would be at its floor: its source
    // position goes too (CheckSource), and it walks the lanes anew.
    if (!Reject("malformed cursor value")) {
      cursors_lost_.insert(std::string(key_.substr(1, 8)));
    }
    return;
  }
  const MessageId limit = ScanLimit(*q, lane);
  if (limit < c.scan) {
    const std::string problem =
        absl::StrCat("scan cursor ", c.scan.ToString(), " beyond the lane end ",
                     limit.ToString());
    c.scan = limit;
    c.done = std::min(c.done, limit);
    Rewrite(problem, format::EncodeCursor(c),
            absl::StrCat(problem,
                         ": lowered to it (messages after it are delivered)"));
  }
  policy_->Refers(q->record.id, p, c.scan, /*message=*/false);
}

void RecordWalker::CheckPark() {
  if (OwnedLane("parked lane", /*of_group=*/true).q == nullptr) return;
  // Rewritten, not moved aside: its lane may have work that only the
  // record leads to.
  if (!value_.empty()) {
    Rewrite("malformed parked lane value (not empty)", "",
            "malformed parked lane value: rewritten empty");
  }
}

void RecordWalker::CheckClaim() {
  WalkQueue* q = OwnerOf("claim record", /*of_group=*/true);
  if (q == nullptr) return;
  // Without it, its lanes' first hand-outs that were in flight are found
  // again through the source position (which their hold keeps before
  // them), as messages never handed out: nothing is lost but their count
  // of attempts.
  const std::string lost =
      "claim record moved aside: tasks it names in flight are delivered "
      "again as first attempts";
  uint64_t seq;
  if (!format::DecodeClaimSeq(key_, &seq)) {
    return (void)Reject("malformed claim record key", lost);
  }
  if (q->record.options.layout != Layout::kTopic) {
    return (void)Reject(absl::StrCat("claim record of a group of queue '",
                                     q->name, "', which has the time layout"),
                        lost);
  }
  std::vector<format::ClaimEntry> entries;
  if (!format::DecodeClaimEntries(value_, &entries)) {
    return (void)Reject("malformed claim record value", lost);
  }
  std::vector<uint32_t> partitions;
  for (const format::ClaimEntry& e : entries) {
    const std::string lane = LanePrefix(q->record.id, e.lane_rest);
    uint32_t& p = partitions.emplace_back();
    if (!Lane("claim record", *q, lane, &p)) return;
    const MessageId limit = ScanLimit(*q, lane);
    if (limit < e.cursor.scan) {
      return (void)Reject(
          absl::StrCat("claim record: scan cursor ", e.cursor.scan.ToString(),
                       " beyond the lane end ", limit.ToString()),
          lost);
    }
  }
  for (size_t i = 0; i < entries.size(); ++i) {
    policy_->Refers(q->record.id, partitions[i], entries[i].cursor.scan,
                    /*message=*/false);
  }
}

void RecordWalker::CheckTask() {
  constexpr size_t kIdSize = LayoutCodec::kMessageIdSize;
  const auto [q, lane, p] = OwnedLane("task", /*of_group=*/true, kIdSize);
  if (q == nullptr) return;
  format::TaskValue t;
  if (!format::DecodeTask(value_, &t)) {
    return (void)Reject("malformed task value");
  }
  policy_->Refers(
      q->record.id, p,
      LayoutCodec::DecodeMessageId(key_.data() + key_.size() - kIdSize),
      /*message=*/false);
}

void RecordWalker::CheckDead() {
  WalkQueue* q = OwnerOf("dead letter", /*of_group=*/true);
  if (q == nullptr) return;
  if (key_.size() !=
      format::kGroupRecordPrefixSize + 2 + LayoutCodec::kMessageIdSize) {
    return (void)Reject("malformed dead letter key");
  }
  format::DeadValue d;
  if (!format::DecodeDead(value_, &d)) {
    return (void)Reject("malformed dead letter value");
  }
  if (d.original_partition >= q->record.options.partitions ||
      d.priority >= q->record.options.priorities) {
    Reject(absl::StrFormat(
        "dead letter value: partition %d or priority %d out of range of "
        "queue '%s'",
        d.original_partition, d.priority, q->name));
  }
}

void RecordWalker::CheckDedup() {
  WalkQueue* q = QueueOf("dedup", 6);
  if (q == nullptr) return;
  if (key_.size() - 5 > format::kMaxKeyBytes) {
    return (void)Reject("malformed dedup key (dedup key over 1024 bytes)");
  }
  uint32_t p;
  MessageId id;
  if (!format::DecodeDedup(value_, &p, &id)) {
    return (void)Reject("malformed dedup value");
  }
  if (p >= q->record.options.partitions) {
    return (void)Reject(absl::StrFormat(
        "dedup value: partition %d out of range (queue '%s' has %d)", p,
        q->name, q->record.options.partitions));
  }
  policy_->Refers(q->record.id, p, id, /*message=*/false);
}

void RecordWalker::CheckCheckpoint() {
  const auto [q, lane, p] = OwnedLane("checkpoint", /*of_group=*/false);
  if (q == nullptr) return;
  MessageId next;
  if (!format::DecodeCheckpoint(value_, &next)) {
    // Without a record, a lane the subscription's walk has passed would be
    // at its floor: its source position goes too (CheckSource).
    if (!Reject("malformed checkpoint value")) {
      cursors_lost_.insert(std::string(key_.substr(1, 8)));
    }
    return;
  }
  policy_->Refers(q->record.id, p, next, /*message=*/false);
}

void RecordWalker::CheckHint() {
  WalkQueue* q = QueueOf("lane index", 5);
  if (q == nullptr) return;
  // A hint that goes takes its lanes out of the index: the queue's
  // source positions go too (CheckSource).
  const uint32_t qid = q->record.id;
  uint64_t seq;
  if (!format::DecodeHintSeq(key_, &seq) ||
      q->record.options.layout != Layout::kTopic) {
    if (!Reject(
            absl::StrCat("malformed lane index key (queue '", q->name, "')"),
            "malformed lane index key")) {
      hints_lost_.insert(qid);
    }
    return;
  }
  uint64_t trimmed;
  if (seq == 0) {  // The index head names no lane: nothing is lost with it.
    if (!format::DecodeIndexHead(value_, &trimmed)) {
      (void)Reject("malformed lane index head value");
    }
    return;
  }
  std::vector<std::string_view> lanes;
  if (!format::DecodeHintLanes(
          key_, value_, 255 - static_cast<unsigned char>(key_[5]), &lanes)) {
    if (!Reject("malformed lane index value (or a lane of another priority)")) {
      hints_lost_.insert(qid);
    }
    return;
  }
  for (std::string_view rest : lanes) {
    if (!Lane("lane index", *q, LanePrefix(qid, rest), nullptr)) {
      hints_lost_.insert(qid);
      return;
    }
  }
}

void RecordWalker::CheckSource() {
  WalkQueue* q =
      QueueOf("lane source position", format::kGroupRecordPrefixSize);
  if (q == nullptr) return;
  const uint32_t id = coding::DecodeFixed32(key_.data() + 5);
  if (options_.keys_lost || hints_lost_.contains(q->record.id)) {
    // A lane the index no longer names may have work: without a position
    // the consumer walks the lanes again (as a new one does).
    return (void)Reject(
        options_.keys_lost
            ? "lane source position of a Db that lost keys to damage"
            : "lane source position of a queue whose lane index lost "
              "records",
        "lane source position moved aside: its consumer walks the lanes "
        "again (messages of lanes it passed without a cursor record are "
        "delivered again)");
  }
  if (!q->groups.contains(id) && !q->subs.contains(id)) {
    if (OfDeletedConsumer()) return;
    return (void)Reject(absl::StrFormat(
        "lane source position of consumer id %d, which queue '%s' does not "
        "have",
        id, q->name));
  }
  if (cursors_lost_.contains(Av(key_.substr(1, 8)))) {
    if (q->subs.contains(id)) {
      return (void)Reject(
          "lane source position of a subscription that lost a checkpoint "
          "record",
          "lane source position moved aside: its subscription walks the "
          "lanes again (messages of lanes it passed without a checkpoint "
          "record are delivered again)");
    }
    return (void)Reject(
        "lane source position of a group that lost a cursor record",
        "lane source position moved aside: its group walks the lanes again "
        "(messages of lanes it passed without a cursor record are delivered "
        "again)");
  }
  format::SourceValue v;
  if (key_.size() != format::kGroupRecordPrefixSize ||
      !format::DecodeSource(value_, &v) ||
      v.priorities.size() !=
          static_cast<size_t>(q->record.options.priorities) ||
      !(v.floors.empty() || v.floors.size() == q->record.options.partitions)) {
    return (void)Reject("malformed lane source position");
  }
  // A lane passed at its floor without a cursor record takes every id
  // below it as done: new ids must stay at or above it.
  for (uint32_t p = 0; p < v.floors.size(); ++p) {
    policy_->Refers(q->record.id, p, v.floors[p], /*message=*/false);
  }
}

void RecordWalker::CheckPace() {
  if (OwnerOf("pacing record", /*of_group=*/true) == nullptr) return;
  const size_t n = format::kGroupRecordPrefixSize;
  if (key_.size() == n + 1 && key_[n] == '\0') {
    std::string_view in = value_;
    uint64_t ms;
    if (!coding::GetFixed64(&in, &ms) || !in.empty() ||
        ms > static_cast<uint64_t>(INT64_MAX)) {
      Reject("malformed pace clock record");
    }
    return;
  }
  format::PaceValue v;
  if (key_.size() <= n || key_[n] != '\1' ||
      key_.size() - n - 1 > format::kMaxTopicBytes) {
    return (void)Reject("malformed pacing key");
  }
  if (!format::DecodePace(value_, &v)) Reject("malformed pacing value");
}

}  // namespace hq
