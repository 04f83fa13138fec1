// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/group_records.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/engine/checked_read.h"
#include "lib/format/layout_codec.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

GroupRecords::GroupRecords(leveldb::DB* db, uint32_t queue_id,
                           const format::GroupRecord& record, std::string group,
                           bool lane_has_topic)
    : db_(db),
      queue_id_(queue_id),
      group_id_(record.id),
      group_(std::move(group)),
      lane_has_topic_(lane_has_topic),
      cursor_prefix_(
          format::GroupRecordPrefix(format::kCursorTag, queue_id, record.id)),
      start_ids_(record.start_ids),
      topic_set_(record.topics.begin(), record.topics.end()) {}

bool GroupRecords::InScope(std::string_view topic) const {
  return topic_set_.empty() || topic_set_.contains(Av(topic));
}

MessageId GroupRecords::StartOf(uint32_t partition) const {
  const std::vector<MessageId>& ids = start_ids_;
  if (ids.empty()) return MessageId::Min();
  if (ids.size() == 1) return ids[0];
  return partition < ids.size() ? ids[partition] : MessageId::Min();
}

std::string GroupRecords::TaskKey(std::string_view lane_prefix,
                                  MessageId id) const {
  std::string k =
      format::GroupRecordPrefix(format::kTaskTag, queue_id_, group_id_);
  format::AppendLaneRest(&k, lane_prefix);
  LayoutCodec::AppendMessageId(&k, id);
  return k;
}

void GroupRecords::AppendCursorKey(std::string* k,
                                   std::string_view lane_prefix) const {
  k->append(cursor_prefix_);
  format::AppendLaneRest(k, lane_prefix);
}

std::string GroupRecords::CursorKey(std::string_view lane_prefix) const {
  std::string k;
  k.reserve(cursor_prefix_.size() + lane_prefix.size());
  AppendCursorKey(&k, lane_prefix);
  return k;
}

absl::StatusOr<format::CursorValue> GroupRecords::ReadCursor(
    std::string_view prefix, MessageId absent, const leveldb::ReadOptions& ro,
    bool* stored) const {
  std::string value;
  const leveldb::Status s = CheckedGet(db_, ro, CursorKey(prefix), &value);
  if (stored != nullptr) *stored = s.ok();
  format::CursorValue c;
  if (s.IsNotFound()) {
    c.scan = c.done = absent;
    return c;
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a group cursor"));
  if (!format::DecodeCursor(value, &c)) {
    return absl::DataLossError(
        absl::StrCat("consumer group '", group_, "': malformed cursor record"));
  }
  return c;
}

absl::Status GroupRecords::ForEachInWindow(
    std::string_view prefix, const format::CursorValue& c, MessageId from,
    leveldb::Iterator* it, absl::FunctionRef<bool(MessageId)> fn) {
  if (!(c.done < c.scan)) return absl::OkStatus();
  std::string seek(prefix);
  LayoutCodec::AppendMessageId(&seek, std::max(c.done, from));
  MessageId id;
  for (it->Seek(seek); it->Valid(); it->Next()) {
    if (!LayoutCodec::LaneMessage(View(it->key()), prefix, &id) ||
        !(id < c.scan) || !fn(id)) {
      break;
    }
  }
  return FromLevelDb(it->status(), "reading a group's window");
}

absl::Status GroupRecords::CountLane(const BacklogLane& lane, MessageId scan,
                                     MessageId cutoff, leveldb::Iterator* it,
                                     GroupStats* st) const {
  const size_t n = lane.prefix.size();
  std::string seek = lane.prefix;
  LayoutCodec::AppendMessageId(&seek, std::max(scan, cutoff));
  MessageId id;
  for (it->Seek(seek); it->Valid() && st->backlog_exact; it->Next()) {
    const std::string_view key = View(it->key());
    if (!LayoutCodec::LaneMessage(key, lane.prefix, &id)) break;
    if (std::binary_search(lane.skip.begin(), lane.skip.end(), id)) continue;
    if (!lane_has_topic_ && !InScope(key.substr(n + 8))) continue;
    if (st->backlog == kStatsCountLimit) {
      st->backlog_exact = false;  // A lower bound.
      break;
    }
    ++st->backlog;
  }
  return FromLevelDb(it->status(), "counting the backlog");
}

}  // namespace hq
