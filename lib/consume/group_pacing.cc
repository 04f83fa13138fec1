// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): per-topic pacing. The topics' own
// pacing records (SetTopicPacing, GetTopicPacing, ClearTopicPacing), the
// group's pace clock (its latest paced hand-out, stored with each claim so
// that intervals hold across a restart), and the claim's question: is this
// topic held back now?

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/consume/consume_options.h"
#include "lib/consume/group_impl.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/format/coding.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

absl::StatusOr<bool> GroupImpl::PacedOut(std::string_view topic,
                                         absl::Time now) {
  if (!pacer_.on()) return false;
  absl::StatusOr<bool> may = pacer_.MayHandOut(topic, now);
  if (!may.ok()) return may.status();
  return !*may;
}

absl::StatusOr<std::optional<TopicPacing>> GroupImpl::ReadPace(
    std::string_view topic) const {
  std::string value;
  const leveldb::Status s =
      CheckedGet(db_->leveldb(), CheckedReadOptions(),
                 format::PaceKey(queue_->id(), record_.id, topic), &value);
  if (s.IsNotFound()) return std::nullopt;
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a topic's pacing"));
  format::PaceValue v;
  if (!format::DecodePace(value, &v)) {
    return absl::DataLossError(
        absl::StrCat("group '", name_, "': malformed pacing record of topic '",
                     Printable(topic), "'"));
  }
  return TopicPacing{.max_in_flight = v.max_in_flight,
                     .interval = absl::Milliseconds(v.interval_ms)};
}

absl::Status GroupImpl::LoadPacing() {
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  const std::string prefix = format::PacePrefix(queue_->id(), record_.id);
  it->Seek(prefix);
  const bool any = it->Valid() && View(it->key()).starts_with(prefix);
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading pacing records"));
  pacer_.SetMayHaveOverrides(any);
  std::string value;
  const leveldb::Status s =
      CheckedGet(db_->leveldb(), CheckedReadOptions(),
                 format::PaceClockKey(queue_->id(), record_.id), &value);
  if (s.IsNotFound()) return absl::OkStatus();
  HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading the group's pace clock"));
  std::string_view in = value;
  uint64_t ms;
  if (!coding::GetFixed64(&in, &ms) || !in.empty() ||
      ms > static_cast<uint64_t>(INT64_MAX)) {
    return absl::DataLossError(
        absl::StrCat("group '", name_, "': malformed pace clock record"));
  }
  pacer_.SetResumeAfter(absl::FromUnixMillis(static_cast<int64_t>(ms)));
  return absl::OkStatus();
}

void GroupImpl::PutPaceClock(absl::Time before, leveldb::WriteBatch* batch) {
  if (pacer_.latest() == before) return;
  std::string v;
  coding::PutFixed64(&v, ToMs(pacer_.latest()));
  batch->Put(format::PaceClockKey(queue_->id(), record_.id), v);
}

absl::Status GroupImpl::CheckPacingTopic(std::string_view topic) const {
  if (topic.size() > format::kMaxTopicBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "group '%s': a pacing topic has %d bytes; the limit is %d", name_,
        topic.size(), format::kMaxTopicBytes));
  }
  return absl::OkStatus();
}

absl::Status GroupImpl::SetTopicPacing(std::string_view topic,
                                       const TopicPacing& pacing) {
  HQ_RETURN_IF_ERROR(CheckPacingTopic(topic));
  HQ_RETURN_IF_ERROR(ValidateTopicPacing("SetTopicPacing", pacing));
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  leveldb::WriteBatch batch;
  batch.Put(
      format::PaceKey(queue_->id(), record_.id, topic),
      format::EncodePace({.max_in_flight = pacing.max_in_flight,
                          .interval_ms = static_cast<uint64_t>(
                              absl::ToInt64Milliseconds(pacing.interval))}));
  HQ_RETURN_IF_ERROR(Write(batch));
  // As stored: to the millisecond.
  TopicPacing stored = pacing;
  stored.interval =
      absl::Milliseconds(absl::ToInt64Milliseconds(pacing.interval));
  pacer_.OverrideChanged(topic, stored);
  if (waiters_.load() > 0) Wake();  // It may have been loosened.
  return absl::OkStatus();
}

absl::StatusOr<std::optional<TopicPacing>> GroupImpl::GetTopicPacing(
    std::string_view topic) {
  HQ_RETURN_IF_ERROR(CheckPacingTopic(topic));
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  HQ_RETURN_IF_ERROR(Gone());
  return ReadPace(topic);
}

absl::Status GroupImpl::ClearTopicPacing(std::string_view topic) {
  HQ_RETURN_IF_ERROR(CheckPacingTopic(topic));
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  leveldb::WriteBatch batch;
  batch.Delete(format::PaceKey(queue_->id(), record_.id, topic));
  HQ_RETURN_IF_ERROR(Write(batch));
  pacer_.OverrideChanged(topic, std::nullopt);
  if (waiters_.load() > 0) Wake();
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::pair<std::string, TopicPacing>>>
GroupImpl::ListTopicPacing(size_t max, const std::string* after) {
  if (max < 1 || max > 10000) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ListTopicPacing: max is ", max, "; the limits are 1..10000"));
  }
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  HQ_RETURN_IF_ERROR(Gone());
  const std::string prefix = format::PacePrefix(queue_->id(), record_.id);
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  if (after == nullptr) {
    it->Seek(prefix);
  } else {
    // The first key past `after`'s: its key with a zero byte appended.
    std::string from = format::PaceKey(queue_->id(), record_.id, *after);
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
          "group '", name_, "': malformed pacing record of topic '",
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
