// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The lanes the write path reports as written, kept for one consumer (a
// consumer group or a subscription) until it next looks: how a consumer
// that holds its lanes in memory learns of new work without walking the
// queue's lanes again.

#ifndef HQ_LIB_CONSUME_LANE_NOTES_H_
#define HQ_LIB_CONSUME_LANE_NOTES_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "lib/util/sync.h"

namespace hq {

// A noted lane: its prefix (LayoutCodec::LanePrefixSize) and what it
// names. `topic` is empty in a layout whose lanes have no topic.
struct NotedLane {
  std::string_view prefix;
  uint32_t partition;
  int priority;
  std::string_view topic;
};

// Thread-safe. Note() is called by the write path's leader, which holds
// none of the consumer's locks; Take() by the consumer under its own lock.
// LaneNotes takes only its own mutex, for the time of a set insert or swap.
class LaneNotes {
 public:
  // REQUIRES: `has_topic` is the queue's LayoutCodec::lane_has_topic().
  explicit LaneNotes(bool has_topic) : has_topic_(has_topic) {}
  LaneNotes(const LaneNotes&) = delete;
  LaneNotes& operator=(const LaneNotes&) = delete;

  // Records that `lane_prefix` was written. A lane noted again before the
  // next Take() is kept once.
  void Note(std::string_view lane_prefix);

  // Calls `fn` once for each lane noted since the last Take(), in no
  // particular order, and forgets them. A prefix that does not parse as a
  // lane of this layout is skipped (the write path notes only lanes it
  // built). Stops at fn's first error and returns it; the lanes not yet
  // passed to fn are then forgotten too, so a caller that fails must find
  // its lanes again by other means (as a consumer's Load does).
  absl::Status Take(absl::FunctionRef<absl::Status(const NotedLane&)> fn);

 private:
  const bool has_topic_;
  Mutex mu_;
  absl::flat_hash_set<std::string> noted_ ABSL_GUARDED_BY(mu_);
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_LANE_NOTES_H_
