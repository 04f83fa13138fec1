// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The checks of the consume side's options (hq/group.h, hq/subscription.h,
// hq/scanner.h): each returns OK, or InvalidArgument naming the option
// outside its limits (the limits are documented with each option).

#ifndef HQ_LIB_CONSUME_CONSUME_OPTIONS_H_
#define HQ_LIB_CONSUME_CONSUME_OPTIONS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "hq/group.h"
#include "hq/subscription.h"

namespace hq {

// The longest lease, ownership lease, backoff and claim wait: 720h.
inline constexpr absl::Duration kMaxLease = absl::Hours(24 * 30);

absl::Status ValidateGroupOptions(const GroupOptions& options);
// OK, or InvalidArgument naming `field`.
absl::Status ValidateTopicPacing(std::string_view field,
                                 const TopicPacing& pacing);
// The checks of SubscribeOptions that need no queue (partition ranges are
// checked by the queue).
absl::Status ValidateSubscribeOptions(const SubscribeOptions& options);
// A consumer's working-set cap: `configured`, unless a test replaced every
// consumer's (lib/consume/group_test_hooks.h).
size_t MaxActiveLanes(size_t configured);
// The checks of ClaimOptions that need only the queue's partition count
// (an ordered group checks its own on top).
absl::Status ValidateClaimOptions(const ClaimOptions& options,
                                  uint32_t queue_partitions);
// The most topics a group or a subscription filters on (GroupOptions::topics,
// SubscribeOptions::topics).
inline constexpr size_t kMaxConsumerTopics = 1024;
// Checks of the topic and partition lists in ScanOptions, ClaimOptions,
// GroupOptions and SubscribeOptions: OK, or InvalidArgument naming `field`
// ("ScanOptions::topics") and the bad entry, or the count if over
// `max_topics`.
absl::Status ValidateTopicList(std::string_view field,
                               const std::vector<std::string>& topics,
                               size_t max_topics = SIZE_MAX);
absl::Status ValidatePartitionList(std::string_view field,
                                   const std::vector<uint32_t>& partitions,
                                   uint32_t queue_partitions);

}  // namespace hq

#endif  // HQ_LIB_CONSUME_CONSUME_OPTIONS_H_
