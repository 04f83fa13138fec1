// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/consume_options.h"

#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "lib/consume/group_test_hooks.h"
#include "lib/format/format.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {

absl::Status ValidateTopicList(std::string_view field,
                               const std::vector<std::string>& topics,
                               size_t max_topics) {
  if (topics.size() > max_topics) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s holds %d topics; the limit is %d", Av(field),
                        topics.size(), max_topics));
  }
  for (const std::string& t : topics) {
    if (t.size() > format::kMaxTopicBytes) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s holds a topic of %d bytes, over the limit of %d",
                          Av(field), t.size(), format::kMaxTopicBytes));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidatePartitionList(std::string_view field,
                                   const std::vector<uint32_t>& partitions,
                                   uint32_t queue_partitions) {
  for (uint32_t p : partitions) {
    if (p >= queue_partitions) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s holds %d, out of range 0..%d", Av(field), p,
                          queue_partitions - 1));
    }
  }
  return absl::OkStatus();
}

namespace {

// The start of a subscription or a group (the two Start enums have the
// same values).
template <typename Start>
absl::Status ValidateStart(std::string_view options, Start start,
                           MessageId start_id, absl::Time start_time) {
  if (start != Start::kEarliest && start != Start::kLatest &&
      start != Start::kId && start != Start::kTime) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(options), "::start is not a Start"));
  }
  if (start == Start::kId && start_id.ms > MessageId::kMaxMs) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(options), "::start_id is past MessageId::kMaxMs"));
  }
  if (start == Start::kTime && (start_time == absl::InfiniteFuture() ||
                                start_time == absl::InfinitePast())) {
    return absl::InvalidArgumentError(
        absl::StrCat(Av(options), "::start_time must be finite"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateTopicPacing(std::string_view field,
                                 const TopicPacing& pacing) {
  if (pacing.max_in_flight > format::kMaxPaceInFlight) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: max_in_flight is %d; it must be in 0..%d", field,
                        pacing.max_in_flight, format::kMaxPaceInFlight));
  }
  if (pacing.interval < absl::ZeroDuration() || pacing.interval > kMaxLease) {
    return absl::InvalidArgumentError(absl::StrCat(
        Av(field), ": interval is ", absl::FormatDuration(pacing.interval),
        "; it must be in 0..720h"));
  }
  return absl::OkStatus();
}

absl::Status ValidateGroupOptions(const GroupOptions& o) {
  HQ_RETURN_IF_ERROR(
      ValidateTopicList("GroupOptions::topics", o.topics, kMaxConsumerTopics));
  HQ_RETURN_IF_ERROR(
      ValidateStart("GroupOptions", o.start, o.start_id, o.start_time));
  if (o.lease < absl::Milliseconds(1) || o.lease > kMaxLease) {
    return absl::InvalidArgumentError(
        absl::StrCat("GroupOptions::lease is ", absl::FormatDuration(o.lease),
                     "; it must be in 1ms..720h"));
  }
  if (o.max_attempts < 1 || o.max_attempts > 1000000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GroupOptions::max_attempts is %d; it must be in 1..1000000",
        o.max_attempts));
  }
  if (o.backoff_base < absl::ZeroDuration() || o.backoff_cap > kMaxLease ||
      o.backoff_base > o.backoff_cap) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GroupOptions::backoff_base is ", absl::FormatDuration(o.backoff_base),
        " and backoff_cap is ", absl::FormatDuration(o.backoff_cap),
        "; they must be in 0..720h with base <= cap"));
  }
  if (!(o.backoff_jitter >= 0 && o.backoff_jitter <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("GroupOptions::backoff_jitter is ", o.backoff_jitter,
                     "; it must be in 0..1"));
  }
  if (o.ownership_lease < absl::Milliseconds(1) ||
      o.ownership_lease > kMaxLease) {
    return absl::InvalidArgumentError(absl::StrCat(
        "GroupOptions::ownership_lease is ",
        absl::FormatDuration(o.ownership_lease), "; it must be in 1ms..720h"));
  }
  HQ_RETURN_IF_ERROR(ValidateTopicPacing("GroupOptions::pacing", o.pacing));
  if (o.max_active_lanes < 1 || o.max_active_lanes > (size_t{1} << 24)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GroupOptions::max_active_lanes is %d; it must be in 1..16777216",
        o.max_active_lanes));
  }
  return absl::OkStatus();
}

namespace {
std::atomic<size_t> test_max_active_lanes{0};
}  // namespace

void TEST_SetMaxActiveLanes(size_t n) { test_max_active_lanes.store(n); }

size_t MaxActiveLanes(size_t configured) {
  const size_t test = test_max_active_lanes.load();
  return test != 0 ? test : configured;
}

absl::Status ValidateSubscribeOptions(const SubscribeOptions& o) {
  HQ_RETURN_IF_ERROR(format::ValidateSubscriptionName(o.name));
  HQ_RETURN_IF_ERROR(ValidateTopicList("SubscribeOptions::topics", o.topics,
                                       kMaxConsumerTopics));
  HQ_RETURN_IF_ERROR(
      ValidateStart("SubscribeOptions", o.start, o.start_id, o.start_time));
  if (o.checkpoint_messages < 1 || o.checkpoint_messages > 1000000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SubscribeOptions::checkpoint_messages is %d; it must be in "
        "1..1000000",
        o.checkpoint_messages));
  }
  if (o.checkpoint_interval < absl::Milliseconds(1) ||
      o.checkpoint_interval > absl::Hours(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SubscribeOptions::checkpoint_interval is ",
                     absl::FormatDuration(o.checkpoint_interval),
                     "; it must be in 1ms..1h"));
  }
  if (o.buffer_messages < 1 || o.buffer_messages > 1000000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SubscribeOptions::buffer_messages is %d; it must be in 1..1000000",
        o.buffer_messages));
  }
  if (o.buffer_bytes < 1 || o.buffer_bytes > (uint64_t{1} << 30)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SubscribeOptions::buffer_bytes is %d; it must be in 1..2^30",
        o.buffer_bytes));
  }
  if (o.retry_base < absl::Milliseconds(1) || o.retry_cap > absl::Hours(1) ||
      o.retry_base > o.retry_cap) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SubscribeOptions::retry_base is ", absl::FormatDuration(o.retry_base),
        " and retry_cap is ", absl::FormatDuration(o.retry_cap),
        "; they must be in 1ms..1h with base <= cap"));
  }
  if (o.max_active_lanes < 1 || o.max_active_lanes > (size_t{1} << 24)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SubscribeOptions::max_active_lanes is %d; it must be in 1..16777216",
        o.max_active_lanes));
  }
  return absl::OkStatus();
}

absl::Status ValidateClaimOptions(const ClaimOptions& o,
                                  uint32_t queue_partitions) {
  if (o.max < 1 || o.max > 10000) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ClaimOptions::max is %d; it must be in 1..10000", o.max));
  }
  if (o.lease != absl::ZeroDuration() &&
      (o.lease < absl::Milliseconds(1) || o.lease > kMaxLease)) {
    return absl::InvalidArgumentError(
        absl::StrCat("ClaimOptions::lease is ", absl::FormatDuration(o.lease),
                     "; it must be 0 or in 1ms..720h"));
  }
  HQ_RETURN_IF_ERROR(ValidatePartitionList("ClaimOptions::partitions",
                                           o.partitions, queue_partitions));
  HQ_RETURN_IF_ERROR(ValidateTopicList("ClaimOptions::topics", o.topics));
  if (o.wait < absl::ZeroDuration() || o.wait > kMaxLease) {
    return absl::InvalidArgumentError(absl::StrCat("ClaimOptions::wait is ",
                                                   absl::FormatDuration(o.wait),
                                                   "; it must be in 0..720h"));
  }
  return absl::OkStatus();
}

}  // namespace hq
