// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Messages of one lane read past the last one a turn handed out, kept so
// that the lane's next turn starts without a seek. A lane that gives one
// task a turn (round-robin over many lanes with backlogs) would otherwise
// pay a seek of every table level, and often block reads, per task.
//
// Sound because a message never changes once written, no message is ever
// written between two existing messages of a lane (ids grow in commit
// order), and only two things delete messages: the TTL sweep, below the
// queue's cutoff (a reader drops what its cursor passed, DropBelow, and
// everything if an entry lies below the greatest cutoff a sweep used, as
// after the clock stepped back), and DropQueue, which ends the consumer. The
// entries say nothing of what follows them: once they are used up the reader
// seeks.
//
// The bytes kept (values and entries) are counted against a Budget that a
// consumer's lanes share. Not thread-safe: the owner calls it under its own
// lock.

#ifndef HQ_LIB_CONSUME_READ_AHEAD_H_
#define HQ_LIB_CONSUME_READ_AHEAD_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "hq/message.h"
#include "leveldb/iterator.h"

namespace hq {

class ReadAhead {
 public:
  struct Budget {
    size_t limit = 0;
    size_t used = 0;
  };
  // Per lane, at most this many messages, and values of at most this many
  // bytes in all.
  static constexpr size_t kMaxMessages = 16;
  static constexpr size_t kMaxBytes = 4096;

  ReadAhead() = default;
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;
  ~ReadAhead() { Clear(); }

  bool empty() const { return next_ == entries_.size(); }
  // The first entry not used; not empty().
  MessageId front_id() const { return entries_[next_].id; }
  std::string_view front_value() const;
  // Forgets the entries below `id` (the reader's cursor passed them).
  void DropBelow(MessageId id);
  // Replaces the entries by the messages of the lane `prefix` from `it`'s
  // position on (it must be on one), within the limits above and `budget`.
  // Fails only if the iterator reports an error.
  absl::Status Fill(std::string_view prefix, leveldb::Iterator* it,
                    Budget* budget);
  void Clear();

 private:
  // Gives the bytes back and empties the entries, keeping the buffers.
  void Forget();

  struct Entry {
    MessageId id;
    size_t offset;  // In data_.
    size_t size;
  };
  Budget* budget_ = nullptr;  // Set by Fill.
  std::vector<Entry> entries_;
  size_t next_ = 0;  // The first entry not used.
  std::string data_;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_READ_AHEAD_H_
