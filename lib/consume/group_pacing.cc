// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// GroupImpl (lib/consume/group_impl.h): per-topic pacing. The topics' own
// pacing records (SetTopicPacing, GetTopicPacing, ClearTopicPacing; stored
// by lib/consume/pace_records.h), and the claim's question: is this topic
// held back now?

#include <string>

#include "absl/strings/str_cat.h"
#include "lib/consume/consume_options.h"
#include "lib/consume/group_impl.h"
#include "lib/engine/db_impl.h"
#include "lib/util/status_macros.h"

namespace hq {

absl::StatusOr<bool> GroupImpl::PacedOut(std::string_view topic,
                                         absl::Time now) {
  if (!pacer_.on()) return false;
  absl::StatusOr<bool> may = pacer_.MayHandOut(topic, now);
  if (!may.ok()) return may.status();
  return !*may;
}

absl::Status GroupImpl::SetTopicPacing(std::string_view topic,
                                       const TopicPacing& pacing) {
  HQ_RETURN_IF_ERROR(pace_records_.CheckTopic(topic));
  HQ_RETURN_IF_ERROR(ValidateTopicPacing("SetTopicPacing", pacing));
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  leveldb::WriteBatch batch;
  pace_records_.Put(topic, pacing, &batch);
  HQ_RETURN_IF_ERROR(Write(batch));
  // As stored: to the millisecond.
  TopicPacing stored = pacing;
  stored.interval =
      absl::Milliseconds(absl::ToInt64Milliseconds(pacing.interval));
  pacer_.OverrideChanged(topic, stored);
  if (wakeup_.has_waiters()) wakeup_.Wake();  // It may have been loosened.
  return absl::OkStatus();
}

absl::StatusOr<std::optional<TopicPacing>> GroupImpl::GetTopicPacing(
    std::string_view topic) {
  HQ_RETURN_IF_ERROR(pace_records_.CheckTopic(topic));
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  HQ_RETURN_IF_ERROR(Gone());
  return pace_records_.Read(topic);
}

absl::Status GroupImpl::ClearTopicPacing(std::string_view topic) {
  HQ_RETURN_IF_ERROR(pace_records_.CheckTopic(topic));
  DbImpl::OpScope op(db_);
  HQ_RETURN_IF_ERROR(op.status());
  MutexLock l(&mu_);
  HQ_RETURN_IF_ERROR(Usable());
  leveldb::WriteBatch batch;
  pace_records_.Delete(topic, &batch);
  HQ_RETURN_IF_ERROR(Write(batch));
  pacer_.OverrideChanged(topic, std::nullopt);
  if (wakeup_.has_waiters()) wakeup_.Wake();
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
  return pace_records_.List(max, after);
}

}  // namespace hq
