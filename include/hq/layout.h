// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Rowkey layouts. A queue's layout decides how its messages are ordered on
// disk and therefore what is cheap. It is fixed when the queue is created.
// The exact key grammar of each layout is in doc/format.md.

#ifndef HQ_LAYOUT_H_
#define HQ_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "hq/export.h"

namespace hq {

// Persisted in the queue catalog: DO NOT CHANGE the numeric values.
enum class Layout : uint8_t {
  // HQueue's layout (the default).
  //   key = queue | partition | priority | MessageId | topic
  // A lane is (partition, priority): a partition with one priority level reads
  // as one time-ordered log. A topic filter is applied by skipping rows, so it
  // costs a read of every row of the scanned lanes.
  kTime = 1,

  // TableStore's massive-topic layout.
  //   key = queue | partition | priority | topic | MessageId
  // A lane is (partition, priority, topic): every topic is its own ordered
  // sub-queue, so reading one topic touches only that topic's rows. Reading
  // across topics merges one lane per topic. Unless a message names its
  // partition or key, its partition is hash(topic) % partitions, so one topic
  // lives in one partition. The layout for millions of topics.
  kTopic = 2,
};

// "time" or "topic".
HQ_EXPORT std::string_view LayoutName(Layout layout);

// Parses "time" or "topic"; std::nullopt for anything else.
HQ_EXPORT std::optional<Layout> ParseLayout(std::string_view name);

}  // namespace hq

#endif  // HQ_LAYOUT_H_
