// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/pace_records.h"

#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/engine/checked_read.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/util/leveldb_status.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

PaceRecords::PaceRecords(leveldb::DB* db, uint32_t queue_id, uint32_t group_id,
                         std::string group)
    : db_(db),
      queue_id_(queue_id),
      group_id_(group_id),
      group_(std::move(group)) {}

absl::Status PaceRecords::CheckTopic(std::string_view topic) const {
  if (topic.size() > format::kMaxTopicBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "group '%s': a pacing topic has %d bytes; the limit is %d", group_,
        topic.size(), format::kMaxTopicBytes));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<TopicPacing>> PaceRecords::Read(
    std::string_view topic) const {
  std::string value;
  const leveldb::Status s =
      CheckedGet(db_, CheckedReadOptions(),
                 format::PaceKey(queue_id_, group_id_, topic), &value);
  if (s.IsNotFound()) return std::nullopt;
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a topic's pacing"));
  format::PaceValue v;
  if (!format::DecodePace(value, &v)) {
    return absl::DataLossError(
        absl::StrCat("group '", group_, "': malformed pacing record of topic '",
                     Printable(topic), "'"));
  }
  return TopicPacing{.max_in_flight = v.max_in_flight,
                     .interval = absl::Milliseconds(v.interval_ms)};
}

absl::Status PaceRecords::Load(Pacer* pacer) const {
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_, CheckedReadOptions()));
  const std::string prefix = format::PacePrefix(queue_id_, group_id_);
  it->Seek(prefix);
  const bool any = it->Valid() && View(it->key()).starts_with(prefix);
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading pacing records"));
  pacer->SetMayHaveOverrides(any);
  std::string value;
  const leveldb::Status s =
      CheckedGet(db_, CheckedReadOptions(),
                 format::PaceClockKey(queue_id_, group_id_), &value);
  if (s.IsNotFound()) return absl::OkStatus();
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading the group's pace clock"));
  std::string_view in = value;
  uint64_t ms;
  if (!coding::GetFixed64(&in, &ms) || !in.empty() ||
      ms > static_cast<uint64_t>(INT64_MAX)) {
    return absl::DataLossError(
        absl::StrCat("group '", group_, "': malformed pace clock record"));
  }
  pacer->SetResumeAfter(absl::FromUnixMillis(static_cast<int64_t>(ms)));
  return absl::OkStatus();
}

void PaceRecords::PutClock(absl::Time latest, absl::Time before,
                           leveldb::WriteBatch* batch) const {
  if (latest == before) return;
  const int64_t ms = absl::ToUnixMillis(latest);  // 0 before the epoch.
  std::string v;
  coding::PutFixed64(&v, ms < 0 ? 0 : static_cast<uint64_t>(ms));
  batch->Put(format::PaceClockKey(queue_id_, group_id_), v);
}

void PaceRecords::Put(std::string_view topic, const TopicPacing& pacing,
                      leveldb::WriteBatch* batch) const {
  batch->Put(
      format::PaceKey(queue_id_, group_id_, topic),
      format::EncodePace({.max_in_flight = pacing.max_in_flight,
                          .interval_ms = static_cast<uint64_t>(
                              absl::ToInt64Milliseconds(pacing.interval))}));
}

void PaceRecords::Delete(std::string_view topic,
                         leveldb::WriteBatch* batch) const {
  batch->Delete(format::PaceKey(queue_id_, group_id_, topic));
}

absl::StatusOr<std::vector<std::pair<std::string, TopicPacing>>>
PaceRecords::List(size_t max, const std::string* after) const {
  const std::string prefix = format::PacePrefix(queue_id_, group_id_);
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_, CheckedReadOptions()));
  if (after == nullptr) {
    it->Seek(prefix);
  } else {
    // The first key past `after`'s: its key with a zero byte appended.
    std::string from = format::PaceKey(queue_id_, group_id_, *after);
    from.push_back('\0');
    it->Seek(from);
  }
  std::vector<std::pair<std::string, TopicPacing>> out;
  for (; it->Valid() && out.size() < max; it->Next()) {
    const std::string_view key = View(it->key());
    if (!key.starts_with(prefix)) break;
    std::string topic(key.substr(prefix.size()));
    format::PaceValue v;
    if (!format::DecodePace(View(it->value()), &v)) {
      return absl::DataLossError(absl::StrCat(
          "group '", group_, "': malformed pacing record of topic '",
          Printable(topic), "'"));
    }
    out.emplace_back(
        std::move(topic),
        TopicPacing{.max_in_flight = v.max_in_flight,
                    .interval = absl::Milliseconds(v.interval_ms)});
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "listing pacing records"));
  return out;
}

}  // namespace hq
