// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/lane_notes.h"

#include <utility>

#include "lib/format/layout_codec.h"

namespace hq {

void LaneNotes::Note(std::string_view lane_prefix) {
  MutexLock l(&mu_);
  noted_.emplace(lane_prefix);
}

absl::Status LaneNotes::Take(
    absl::FunctionRef<absl::Status(const NotedLane&)> fn) {
  absl::flat_hash_set<std::string> taken;
  {
    MutexLock l(&mu_);
    taken.swap(noted_);
  }
  for (const std::string& prefix : taken) {
    NotedLane lane{.prefix = prefix};
    if (!LayoutCodec::ParseLanePrefix(prefix, has_topic_, &lane.partition,
                                      &lane.priority, &lane.topic)) {
      continue;
    }
    if (absl::Status s = fn(lane); !s.ok()) return s;
  }
  return absl::OkStatus();
}

}  // namespace hq
