// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// The pure parts of the write pipeline's batch building (DbImpl,
// lib/engine/write_pipeline.cc), apart from the Db so that they are tested
// alone (test/unit/write_group_test.cc):
//
// - WriteGroup: which of the writers waiting in line the leader commits in
//   its one LevelDB batch.
// - PartitionIds: the MessageIds of one partition, and the reservations
//   that keep them growing across a crash.
// - BatchHints: the lane activity hints a batch carries.
//
// Neither is thread-safe: the pipeline's leader uses them under its lock.

#ifndef HQ_LIB_ENGINE_WRITE_GROUP_H_
#define HQ_LIB_ENGINE_WRITE_GROUP_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "hq/message.h"
#include "lib/format/format.h"

namespace hq {

// The writers one batch commits: the leader (the writer at the front of the
// line) and those behind it, in line order, up to the first that may not
// join. The group is asked about each writer in line order, the leader
// first; once it says no it is closed, and that writer and every one behind
// it wait for a later batch (no writer passes one ahead of it).
//
// A writer joins unless:
// - it is exclusive (it runs alone, while no write is in flight);
// - it asked for sync and the leader did not: the batch is written with the
//   leader's sync, and a sync write never rides in a batch written without
//   it (a write that did not ask for sync may ride in a synced batch);
// - it is not the leader and the batch already holds more than max_bytes.
//   So a batch exceeds max_bytes by at most its last writer, and a writer
//   bigger than max_bytes goes first or last in its batch.
class WriteGroup {
 public:
  // The pipeline's limit: about 1 MiB of batch per LevelDB write.
  static constexpr size_t kMaxBytes = size_t{1} << 20;

  // A group led by a writer that asked for `sync`.
  explicit WriteGroup(bool sync, size_t max_bytes = kMaxBytes)
      : sync_(sync), max_bytes_(max_bytes) {}

  // Whether the next writer in line joins, given what it is and the size of
  // the batch before it (the leader is asked first, with any size).
  bool Join(bool exclusive, bool sync, size_t batch_bytes) {
    if (closed_) return false;
    const bool leader = joined_ == 0;
    if (exclusive ||
        (!leader && ((sync && !sync_) || batch_bytes > max_bytes_))) {
      closed_ = true;
      return false;
    }
    ++joined_;
    return true;
  }

  // Whether the batch is written with sync (the leader's).
  bool sync() const { return sync_; }
  // The writers that joined.
  size_t joined() const { return joined_; }

 private:
  const bool sync_;
  const size_t max_bytes_;
  size_t joined_ = 0;
  bool closed_ = false;
};

// The ids of one partition (doc/format.md, "MessageId reservations"). Ids
// are handed out in increasing order. Every stored id is below the stored
// reservation: a message whose id reaches it is written in the batch of a
// new reservation (Reserve). After a crash the partition resumes above it
// (Resume), so ids keep growing whatever the clock did meanwhile.
struct PartitionIds {
  MessageId last;  // The last id handed out; valid if has_last.
  bool has_last = false;
  uint64_t reserved_ms = 0;  // Persisted: all ids have ms < this.

  // The ids of a partition whose stored reservation is `reserved_ms` (0:
  // none): every later id is above every stored one. REQUIRES:
  // reserved_ms <= MessageId::kMaxMs + 1.
  static PartitionIds Resume(uint64_t reserved_ms) {
    PartitionIds ids;
    ids.reserved_ms = reserved_ms;
    if (reserved_ms > 0) {
      ids.last = MessageId{reserved_ms - 1, 0xffff};
      ids.has_last = true;
    }
    return ids;
  }

  // Takes the next id at clock time `now_ms` into *id: now_ms if the
  // clock passed the last id, else the last id's successor. False if
  // every id is used (Max() is never handed out: it stays the exclusive
  // end of every range). Skipped ids (a later message fails) are gaps.
  bool Take(uint64_t now_ms, MessageId* id) {
    if (!has_last || now_ms > last.ms) {
      *id = MessageId{now_ms, 0};
    } else {
      *id = last.Next();
      if (!(*id < MessageId::Max())) return false;
    }
    last = *id;
    has_last = true;
    return true;
  }

  // Whether writing `id` needs a new reservation; if so raises reserved_ms
  // to `window_ms` past it (at most kMaxMs + 1), the value to store in the
  // batch of the message.
  bool Reserve(MessageId id, uint64_t window_ms) {
    if (id.ms < reserved_ms) return false;
    reserved_ms = std::min(id.ms + window_ms, MessageId::kMaxMs + 1);
    return true;
  }
};

// The hints of the lane activity index (doc/format.md, "Lane activity
// index") that one batch carries: per key (queue id << 8 | priority), one
// list hint naming each lane the batch hints, once, in the order the batch
// first hinted them. The writer gives each hint its seq when it writes it.
class BatchHints {
 public:
  struct Hint {
    uint64_t key;
    std::string lanes;  // The value: format::AppendHintLane of each lane.
  };

  // Forgets every hint: a new batch.
  void Clear() {
    hinted_.clear();
    last_.clear();
    hints_.clear();
  }

  // Names `lane` (a topic layout lane prefix of the key's queue and
  // priority) in the hint of `key`, unless this batch names it already.
  void Add(uint64_t key, std::string_view lane) {
    if (lane == last_) return;  // A stream to one lane.
    last_.assign(lane);
    if (!hinted_.emplace(lane).second) return;
    // A batch holds few keys: the last one first.
    auto hint = std::find_if(hints_.rbegin(), hints_.rend(),
                             [key](const Hint& h) { return h.key == key; });
    if (hint == hints_.rend()) {
      hints_.push_back({key, std::string()});
      hint = hints_.rbegin();
    }
    format::AppendHintLane(&hint->lanes, lane);
  }

  // The batch's hints, in the order of their keys' first lanes.
  const std::vector<Hint>& hints() const { return hints_; }

 private:
  absl::flat_hash_set<std::string> hinted_;  // The lanes named.
  std::string last_;                         // The lane named last.
  std::vector<Hint> hints_;
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_WRITE_GROUP_H_
