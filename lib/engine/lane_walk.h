// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// LaneWalk: the lanes of a queue, found in its message keys themselves.
//
// A lane exists while it holds a key (doc/format.md, "Messages"): a
// message, its head (a TTL sweep's watermark) or, in a Db written before
// format version 5, its fence. The walk steps once per lane: lane prefixes
// are prefix-free (the topic is length-prefixed), so every key after a
// lane's keys sorts at or after the successor of its prefix. From a message
// a step first tries a few Next() calls, which is all it takes when lanes
// hold a message or two, then seeks that successor. From a lane's head it
// seeks at once: the rows a TTL sweep deleted follow the head, and a seek
// never walks them (layout_codec.h).

#ifndef HQ_LIB_ENGINE_LANE_WALK_H_
#define HQ_LIB_ENGINE_LANE_WALK_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "leveldb/iterator.h"
#include "lib/format/layout_codec.h"

namespace hq {

class LaneWalk {
 public:
  // Walks the lanes whose prefixes start with `range`, a message key prefix
  // (format::MessagePrefix, optionally followed by a lane_rest's leading
  // bytes: a partition, and a stored priority). Uses `it` (a checked
  // iterator, checked_read.h), which must outlive the walk.
  LaneWalk(leveldb::Iterator* it, const LayoutCodec& codec, std::string range);

  // Moves to the first lane whose prefix sorts at or after `target` (a lane
  // prefix to start at that lane; that prefix followed by anything, such as
  // a '\0', to start after it), within `range`.
  void Seek(std::string_view target);
  // Moves to the next lane. REQUIRES: Valid().
  void Next();
  // Whether the lane the last Next() left held exactly one key, longer
  // than its prefix (a message, not a head), as the iterator saw it.
  bool left_one_key() const { return left_one_key_; }

  bool Valid() const { return valid_; }
  // The lane's prefix (a message key prefix of the queue). REQUIRES:
  // Valid().
  std::string_view prefix() const { return lane_; }
  // The lane's prefix without the queue's message prefix: what the lane
  // directory and the lane index store (a lane_rest, doc/format.md).
  std::string_view rest(size_t message_prefix_size) const {
    return std::string_view(lane_).substr(message_prefix_size);
  }
  // Not OK if the iterator failed, or a key in range held no lane prefix
  // (DataLoss); the walk is then not Valid().
  absl::Status status() const { return status_; }

 private:
  // Takes the lane of the iterator's key, or ends the walk.
  void Settle();

  leveldb::Iterator* const it_;
  const LayoutCodec& codec_;
  const std::string range_;
  std::string lane_;
  bool valid_ = false;
  bool left_one_key_ = false;
  absl::Status status_;
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_LANE_WALK_H_
