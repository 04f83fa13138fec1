// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Where a consumer of a topic layout queue finds the lanes that may have
// work: the queue's lane activity index read from the consumer's own
// position, and (for a consumer created over existing data, or after an
// upgrade) a walk of the queue's lanes (lib/engine/lane_walk.h).
// doc/format.md, "Lane activity index" and "Lane source positions", has the
// records and the invariant.
//
// A lane taken from either source is *held* by it until the consumer
// Releases it: once its lane is drained (its cursor at its end, no task
// open, written in the batch that writes the position) or hinted again (in
// that batch). The durable position (AppendRecord) never passes a held
// lane, so after a crash every lane with work is found again. Memory is
// proportional to the lanes held, which the consumer bounds.
//
// Not thread-safe: the consumer calls it under its own lock.

#ifndef HQ_LIB_CONSUME_LANE_SOURCE_H_
#define HQ_LIB_CONSUME_LANE_SOURCE_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "hq/message.h"
#include "leveldb/iterator.h"
#include "leveldb/write_batch.h"
#include "lib/format/format.h"

namespace hq {

class DbImpl;
class QueueImpl;

class LaneSource {
 public:
  // What holds back a source's position: a hint (seq > 0) of `priority`, or
  // a walked lane (walk_key, its lane_rest).
  struct Hold {
    int priority = 0;
    uint64_t seq = 0;
    std::string walk_key;
    bool held() const { return seq > 0 || !walk_key.empty(); }
  };
  // A message a walk kept: its id, and where its stored value lies in the
  // values buffer the walk's caller passed.
  struct Kept {
    MessageId id;
    size_t at = 0;
    size_t size = 0;
    std::string_view ValueIn(std::string_view values) const {
      return values.substr(at, size);
    }
  };
  struct Taken {
    std::string prefix;  // The message lane prefix.
    Hold hold;
    // A walked lane the walk saw hold one key, the message `kept`, when the
    // caller asked for values. True of the iterator's snapshot only: a
    // reader with that iterator knows the lane's whole content without
    // reading it.
    bool only = false;
    Kept kept;
  };
  // A walk keeps no value larger than kMaxOnlyValue, and none that would
  // make `values` larger than kMaxOnlyValues (its caller clears it).
  static constexpr size_t kMaxOnlyValues = 256 << 10;
  static constexpr size_t kMaxOnlyValue = 4096;

  // REQUIRES: `queue` has the topic layout.
  LaneSource(DbImpl* db, QueueImpl* queue, uint32_t consumer_id);

  // Reads the consumer's source record; if it has none, writes one through
  // the write pipeline: the index's next seq per priority, a walk from the
  // first lane.
  absl::Status Load();

  // Up to `max` lanes of `priority` from its walk (lanes
  // written before the consumer's source record), then from the index, in
  // seq order. With `values`, a walked lane of one message comes with it
  // (Taken::only), its value appended to `values`.
  absl::Status Next(int priority, size_t max, leveldb::Iterator* it,
                    std::vector<Taken>* out, std::string* values = nullptr);
  // Whether the source may have lanes of `priority` not yet taken (as of
  // the last read, or since NoteWritten).
  bool pending(int priority) const {
    return state_[priority].more || walk_pending(priority);
  }
  // The index may have new hints (from the write path's notes).
  void NoteWritten();

  // The lanes of up to `max` hints past those read (all priorities) and
  // of lanes past the walk's position, without taking them; sets
  // `*all` if that is everything the source has.
  absl::Status Peek(size_t max, leveldb::Iterator* it,
                    std::vector<std::string>* prefixes, bool* all) const;

  // The lane of `hold` no longer holds the position back.
  void Release(const Hold& hold);
  // Appends the source record to `batch` if the position moved since it
  // was last appended; returns whether it did.
  bool AppendRecord(leveldb::WriteBatch* batch);
  // Whether the position moved since the record was last appended.
  bool Moved() const;

  // Entries kept for holds: held hints, and walked lanes (held, or released
  // behind a held one). Bounded by the lanes held, not by those taken.
  size_t TEST_Entries() const;

  // Where the cursors of the lane `lane_prefix` (of `partition` and
  // `priority`) are if it has no cursor record: false if nothing is implied
  // (a record without floors, or a lane the walk has not passed, as last
  // loaded or appended); else its partition's floor. The durable position
  // passes a walked lane once its messages below the floor are all
  // completed, so such a lane has nothing left below the floor, and every
  // message of it at or above the floor came later (doc/format.md, "Walk
  // floors").
  bool Floor(std::string_view lane_prefix, uint32_t partition, int priority,
             MessageId* floor) const {
    return Passed(lane_prefix, priority) && Floor(partition, floor);
  }
  // Of any lane of `partition`: false if the record has no floors.
  bool Floor(uint32_t partition, MessageId* floor) const;
  // Whether the position as last loaded or appended has passed the lane
  // `lane_prefix` of `priority` (false without floors).
  bool Passed(std::string_view lane_prefix, int priority) const;

 private:
  // Whether the queue stores no message (false on a read error).
  bool NoMessages() const;
  // Per priority.
  struct State {
    uint64_t read_next = 1;  // The next hint to read...
    size_t read_skip = 0;    // ...past its first read_skip lanes.
    bool more = true;        // Hints may be unread.
    // Seqs of held hints: how many of each hint's lanes are held.
    std::map<uint64_t, uint32_t> holds;
    bool walking = false;      // As durable: the walk is not finished.
    bool walk_at_end = false;  // The walk passed the last partition.
    std::string walk_next;     // lane_rest to seek the next lane at.
    // Walked lanes (lane_rest), in walk order, which is key order: the
    // front is held; a lane released behind it stays, marked, until the
    // front goes, or until they outnumber the held ones (memory stays
    // proportional to the lanes held).
    struct WalkHold {
      std::string rest;
      bool held = true;
    };
    std::deque<WalkHold> walk_holds;
    size_t walk_held = 0;  // Entries of walk_holds still held.
  };
  // Notes the walked lane `rest` of `st` held (kept in key order).
  static void HoldWalked(State* st, std::string_view rest);
  // Marks the walked lane `rest` of `st` released.
  static void ReleaseWalked(State* st, std::string_view rest);
  bool walk_pending(int priority) const {
    return state_[priority].walking && !state_[priority].walk_at_end;
  }
  absl::Status NextWalk(int priority, size_t max, leveldb::Iterator* it,
                        std::vector<Taken>* out, std::string* values);
  absl::Status NextHints(int priority, size_t max, leveldb::Iterator* it,
                         std::vector<Taken>* out);
  format::SourceValue Position() const;
  // The seq and lanes of the hint at `it` (of `priority`); DataLoss if
  // malformed.
  absl::Status DecodeHint(const leveldb::Iterator& it, int priority,
                          uint64_t* seq,
                          std::vector<std::string_view>* lanes) const;

  DbImpl* const db_;
  QueueImpl* const queue_;
  const std::string key_;  // The source record's key.
  const int priorities_;
  std::vector<State> state_;
  std::string written_;  // The record as last appended.
  // The position as last appended (floors_ included).
  format::SourceValue durable_;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_LANE_SOURCE_H_
