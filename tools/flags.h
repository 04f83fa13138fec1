// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The hq tool's flags, defined (with their help text) in tools/hq.cc, which
// also checks which subcommand takes which.

#ifndef HQ_TOOLS_FLAGS_H_
#define HQ_TOOLS_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/time/time.h"

// Common
ABSL_DECLARE_FLAG(std::string, db);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(absl::Duration, lock_wait);
ABSL_DECLARE_FLAG(int32_t, width);
ABSL_DECLARE_FLAG(bool, version);
// put
ABSL_DECLARE_FLAG(std::string, topic);
ABSL_DECLARE_FLAG(std::string, key);
ABSL_DECLARE_FLAG(int32_t, partition);
ABSL_DECLARE_FLAG(int32_t, priority);
ABSL_DECLARE_FLAG(absl::Duration, delay);
ABSL_DECLARE_FLAG(std::string, dedup_key);
// scan
ABSL_DECLARE_FLAG(std::string, partitions);
ABSL_DECLARE_FLAG(std::string, topics);
ABSL_DECLARE_FLAG(std::string, from);
ABSL_DECLARE_FLAG(std::string, to);
ABSL_DECLARE_FLAG(std::string, since);
ABSL_DECLARE_FLAG(std::string, until);
ABSL_DECLARE_FLAG(int64_t, limit);
ABSL_DECLARE_FLAG(bool, follow);
ABSL_DECLARE_FLAG(absl::Duration, follow_for);
ABSL_DECLARE_FLAG(absl::Duration, poll);
ABSL_DECLARE_FLAG(bool, lane_order);
// stat
ABSL_DECLARE_FLAG(int32_t, lanes);
// dead
ABSL_DECLARE_FLAG(bool, requeue);
// create
ABSL_DECLARE_FLAG(int32_t, num_partitions);
ABSL_DECLARE_FLAG(int32_t, num_priorities);
ABSL_DECLARE_FLAG(absl::Duration, ttl);
ABSL_DECLARE_FLAG(std::string, layout);
// backup
ABSL_DECLARE_FLAG(bool, verify);
// pending, pacing
ABSL_DECLARE_FLAG(std::string, after);
// pacing
ABSL_DECLARE_FLAG(int64_t, max_in_flight);
ABSL_DECLARE_FLAG(absl::Duration, interval);
ABSL_DECLARE_FLAG(bool, clear);
// groups
ABSL_DECLARE_FLAG(bool, consumers);
ABSL_DECLARE_FLAG(bool, force);
ABSL_DECLARE_FLAG(bool, keep_dead_letters);
// fleet
ABSL_DECLARE_FLAG(std::string, zookeeper);
ABSL_DECLARE_FLAG(std::string, fleet);
ABSL_DECLARE_FLAG(std::string, nats);
ABSL_DECLARE_FLAG(absl::Duration, timeout);

#endif  // HQ_TOOLS_FLAGS_H_
