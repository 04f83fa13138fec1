// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Read-only inspection of a queue (queue.h: ApproximateBytes, Stats,
// InspectGroup, InspectSubscription) and Db::CompactAll: what the hq tool's
// `ls`, `stat` and `compact` show and do. Only CompactAll writes: its TTL
// sweep deletes expired messages before the compaction.

#include "lib/admin/inspect.h"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "leveldb/db.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/lane_walk.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/progress.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

// Stats and InspectSubscription count keys up to this many (per partition,
// per subscription).
constexpr uint64_t kCountLimit = 100000;

// LevelDB's size estimate of [begin, PrefixSuccessor(begin)).
uint64_t PrefixBytes(leveldb::DB* db, const std::string& prefix) {
  const std::string end = coding::PrefixSuccessor(prefix);
  const leveldb::Range range(prefix, end);
  uint64_t size = 0;
  db->GetApproximateSizes(&range, 1, &size);
  return size;
}

// CompactAll with progress compacts in this many slices.
constexpr int kCompactSlices = 20;

// LevelDB's size estimate of the keys before `key` (of all keys when `key`
// is empty).
uint64_t ApproximateBytesBefore(leveldb::DB* db, const std::string& key) {
  const std::string end = key.empty() ? std::string(9, '\xff') : key;
  const leveldb::Range range(leveldb::Slice(), end);
  uint64_t size = 0;
  db->GetApproximateSizes(&range, 1, &size);
  return size;
}

// A key before which about `target` bytes lie (LevelDB's estimate, which
// counts table blocks): built a byte at a time, each the largest byte that
// keeps the bytes before the key under `target`, to a depth of kDepth.
std::string KeyBefore(leveldb::DB* db, uint64_t target) {
  constexpr int kDepth = 24;
  std::string key;
  for (int depth = 0; depth < kDepth; ++depth) {
    int lo = -1, hi = 256;  // Under target at key + lo, not at key + hi.
    while (hi - lo > 1) {
      const int mid = (lo + hi) / 2;
      std::string k = key;
      k.push_back(static_cast<char>(mid));
      if (ApproximateBytesBefore(db, k) >= target) {
        hi = mid;
      } else {
        lo = mid;
      }
    }
    if (lo < 0) break;  // The bytes reach target right after `key`.
    key.push_back(static_cast<char>(lo));
  }
  key.push_back('\0');
  return key;
}

// Up to `slices` - 1 increasing keys that cut the key range into slices of
// about equal size by LevelDB's estimate.
std::vector<std::string> SliceBounds(leveldb::DB* db, int slices) {
  const uint64_t total = ApproximateBytesBefore(db, "");
  std::vector<std::string> bounds;
  for (int i = 1; i < slices && total > 0; ++i) {
    std::string k = KeyBefore(db, total / slices * i);
    if (bounds.empty() || k > bounds.back()) bounds.push_back(std::move(k));
  }
  return bounds;
}

}  // namespace

absl::StatusOr<uint64_t> QueueBytes(QueueImpl* q) {
  if (q->dropped()) return q->DroppedError();
  DbImpl::OpScope op(q->db());
  HQ_RETURN_IF_ERROR(op.status());
  return PrefixBytes(q->db()->leveldb(), format::MessagePrefix(q->id()));
}

absl::StatusOr<QueueStats> QueueStatsOf(QueueImpl* q) {
  if (q->dropped()) return q->DroppedError();
  DbImpl::OpScope op(q->db());
  HQ_RETURN_IF_ERROR(op.status());
  QueueStats stats;
  const uint32_t partitions = q->options().partitions;
  stats.partitions.resize(partitions);
  for (uint32_t p = 0; p < partitions; ++p) {
    stats.partitions[p].partition = p;
    std::string prefix = format::MessagePrefix(q->id());
    coding::PutFixed16(&prefix, static_cast<uint16_t>(p));
    stats.partitions[p].approximate_bytes =
        PrefixBytes(q->db()->leveldb(), prefix);
    stats.approximate_bytes += stats.partitions[p].approximate_bytes;
  }
  const MessageId cutoff = q->TtlCutoff(q->db()->clock()->Now());
  leveldb::ReadOptions ro = CheckedReadOptions();
  ro.fill_cache = false;
  ro.snapshot = q->db()->leveldb()->GetSnapshot();
  struct Release {
    leveldb::DB* db;
    const leveldb::Snapshot* s;
    ~Release() { db->ReleaseSnapshot(s); }
  } release{q->db()->leveldb(), ro.snapshot};
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(q->db()->leveldb(), ro));
  std::unique_ptr<leveldb::Iterator> dir(
      NewCheckedIterator(q->db()->leveldb(), ro));
  const std::string message_prefix = format::MessagePrefix(q->id());
  const bool has_topic = q->codec().lane_has_topic();
  std::string lane, key;
  LaneWalk walk(dir.get(), q->codec(), message_prefix);
  for (walk.Seek(message_prefix); walk.Valid(); walk.Next()) {
    lane.assign(walk.prefix());
    uint32_t partition;
    int priority;
    std::string_view topic;
    if (!LayoutCodec::ParseLanePrefix(lane, has_topic, &partition, &priority,
                                      &topic) ||
        partition >= partitions) {
      return absl::DataLossError(absl::StrCat("queue '", q->name(),
                                              "': malformed lane prefix '",
                                              Printable(lane), "'"));
    }
    PartitionStats& ps = stats.partitions[partition];
    ++ps.lanes;
    // The last live message.
    MessageId last;
    HQ_ASSIGN_OR_RETURN(const bool found,
                        QueueImpl::LastLaneMessage(it.get(), lane, &last));
    if (!found || last < cutoff) continue;  // No live message.
    key = lane;
    LayoutCodec::AppendMessageId(&key, cutoff);
    MessageId id;
    bool first = true;
    for (it->Seek(key);
         it->Valid() && LayoutCodec::LaneMessage(View(it->key()), lane, &id);
         it->Next()) {
      if (first) {
        if (ps.messages == 0 || id < ps.first) ps.first = id;
        first = false;
      }
      if (ps.messages >= kCountLimit) {
        ps.messages_exact = false;
        break;
      }
      ++ps.messages;
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "counting messages"));
    if (!first && (ps.last < last)) ps.last = last;
  }
  HQ_RETURN_IF_ERROR(walk.status());
  return stats;
}

absl::StatusOr<GroupInfo> InspectGroupOf(QueueImpl* q, std::string_view name) {
  HQ_RETURN_IF_ERROR(format::ValidateGroupName(name));
  if (q->dropped()) return q->DroppedError();
  DbImpl::OpScope op(q->db());
  HQ_RETURN_IF_ERROR(op.status());
  HQ_ASSIGN_OR_RETURN(const std::string value,
                      q->ReadNamedRecord(format::GroupKey(q->id(), name),
                                         "consumer group", name));
  format::GroupRecord record;
  HQ_RETURN_IF_ERROR(format::DecodeGroupRecord(value, &record));
  GroupInfo info;
  info.name = std::string(name);
  info.topics = record.topics;
  info.ordered = record.ordered;
  info.start = static_cast<GroupOptions::Start>(record.start);
  info.start_ids = record.start_ids;
  info.dead_letter_queue = absl::StrCat(q->name(), ".dead.", Av(name));
  const std::string prefix =
      format::GroupRecordPrefix(format::kCursorTag, q->id(), record.id);
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(q->db()->leveldb(), CheckedReadOptions()));
  const bool has_topic = q->codec().lane_has_topic();
  std::string lane;
  for (it->Seek(prefix); it->Valid() && View(it->key()).starts_with(prefix);
       it->Next()) {
    lane = format::MessagePrefix(q->id());
    lane.append(View(it->key()).substr(prefix.size()));
    GroupInfo::LaneCursor c;
    std::string_view topic;
    format::CursorValue v;
    if (!LayoutCodec::ParseLanePrefix(lane, has_topic, &c.partition,
                                      &c.priority, &topic) ||
        !format::DecodeCursor(View(it->value()), &v)) {
      return absl::DataLossError(absl::StrCat("consumer group '", Av(name),
                                              "': malformed cursor record"));
    }
    c.topic = std::string(topic);
    c.scan = v.scan;
    c.completion = v.done;
    info.cursors.push_back(std::move(c));
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading group cursors"));
  return info;
}

absl::StatusOr<SubscriptionStats> InspectSubscriptionOf(QueueImpl* q,
                                                        std::string_view name) {
  HQ_RETURN_IF_ERROR(format::ValidateGroupName(name));
  if (q->dropped()) return q->DroppedError();
  DbImpl::OpScope op(q->db());
  HQ_RETURN_IF_ERROR(op.status());
  HQ_ASSIGN_OR_RETURN(
      const std::string value,
      q->ReadNamedRecord(format::SubKey(q->id(), name), "subscription", name));
  format::SubRecord record;
  HQ_RETURN_IF_ERROR(format::DecodeSubRecord(value, &record));
  const bool has_topic = q->codec().lane_has_topic();
  const MessageId cutoff = q->TtlCutoff(q->db()->clock()->Now());
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(q->db()->leveldb(), CheckedReadOptions()));
  SubscriptionStats st;
  std::string seek;
  // Topic layout: a lane its walk passed has no record if its checkpoint is
  // at its floor.
  format::SourceValue source;
  if (has_topic) {
    std::string sv;
    const leveldb::Status s =
        CheckedGet(q->db()->leveldb(), CheckedReadOptions(),
                   format::SourceKey(q->id(), record.id), &sv);
    if (s.ok() && !format::DecodeSource(sv, &source)) {
      return absl::DataLossError(absl::StrCat(
          "subscription '", Av(name), "': malformed lane source position"));
    }
    if (!s.ok() && !s.IsNotFound()) {
      return FromLevelDb(s, "reading a lane source position");
    }
  }
  const std::string cp_prefix =
      format::GroupRecordPrefix(format::kCheckpointTag, q->id(), record.id);
  HQ_RETURN_IF_ERROR(q->WalkLanes(
      cp_prefix, [&](const QueueImpl::LaneEntry& e) -> absl::Status {
        if (!record.partitions.empty() &&
            !std::binary_search(record.partitions.begin(),
                                record.partitions.end(), e.partition)) {
          return absl::OkStatus();
        }
        if (has_topic && !record.topics.empty() &&
            !std::binary_search(record.topics.begin(), record.topics.end(),
                                std::string(e.topic))) {
          return absl::OkStatus();
        }
        MessageId next = record.StartOf(e.partition);
        MessageId floor;
        const bool floored = format::SourceFloor(source, e.prefix, e.partition,
                                                 e.priority, &floor);
        if (floored) next = std::max(next, floor);
        if (e.record != nullptr &&
            !format::DecodeCheckpoint(*e.record, &next)) {
          return absl::DataLossError(absl::StrCat(
              "subscription '", Av(name), "': malformed checkpoint record"));
        }
        if (e.record != nullptr || floored) {
          LaneCheckpoint c;
          c.partition = e.partition;
          c.priority = e.priority;
          c.topic = std::string(e.topic);
          c.next = next;
          c.written = next;
          st.lanes.push_back(std::move(c));
        }
        if (!st.lag_exact) return absl::OkStatus();
        seek = std::string(e.prefix);
        LayoutCodec::AppendMessageId(&seek, std::max(next, cutoff));
        const size_t n = e.prefix.size();
        MessageId id;
        for (it->Seek(seek); it->Valid() && LayoutCodec::LaneMessage(
                                                View(it->key()), e.prefix, &id);
             it->Next()) {
          if (!has_topic && !record.topics.empty() &&
              !std::binary_search(
                  record.topics.begin(), record.topics.end(),
                  View(it->key()).substr(n + LayoutCodec::kMessageIdSize))) {
            continue;
          }
          if (st.lag >= kCountLimit) {
            st.lag_exact = false;
            break;
          }
          ++st.lag;
        }
        return FromLevelDb(it->status(), "counting the lag");
      }));
  return st;
}

absl::StatusOr<SweepStats> CompactAllOf(DbImpl* db,
                                        const ProgressCallback& progress) {
  HQ_ASSIGN_OR_RETURN(SweepStats stats, db->CompactExpired());
  DbImpl::OpScope op(db);
  HQ_RETURN_IF_ERROR(op.status());
  if (!progress) {
    db->leveldb()->CompactRange(nullptr, nullptr);
  } else {
    // Slices [begin, end] of about equal size: the first from the start of
    // the key range, the last to its end.
    const std::vector<std::string> bounds =
        SliceBounds(db->leveldb(), kCompactSlices);
    PhaseProgress told(progress, "compacting",
                       ApproximateBytesBefore(db->leveldb(), ""));
    for (size_t i = 0; i <= bounds.size(); ++i) {
      const leveldb::Slice begin =
          i == 0 ? leveldb::Slice() : leveldb::Slice(bounds[i - 1]);
      const leveldb::Slice end =
          i == bounds.size() ? leveldb::Slice() : leveldb::Slice(bounds[i]);
      db->leveldb()->CompactRange(i == 0 ? nullptr : &begin,
                                  i == bounds.size() ? nullptr : &end);
      HQ_RETURN_IF_ERROR(db->DamageError());
      if (i < bounds.size()) {
        told.Set(ApproximateBytesBefore(db->leveldb(), bounds[i]));
      }
    }
    told.Finish();
  }
  // CompactRange returns nothing: a compaction it gave up on is only in
  // LevelDB's log, which the Db's info log watches.
  HQ_RETURN_IF_ERROR(db->DamageError());
  return stats;
}

}  // namespace hq
