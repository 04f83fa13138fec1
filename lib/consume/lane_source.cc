// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.

#include "lib/consume/lane_source.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/lane_walk.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

// The start of the lane_rests (a lane prefix after tag and queue id) of the
// lanes of (partition, priority).
std::string LaneRestRange(uint32_t partition, int priority) {
  std::string s;
  coding::PutFixed16(&s, static_cast<uint16_t>(partition));
  coding::PutFixed8(&s, static_cast<uint8_t>(255 - priority));
  return s;
}

}  // namespace

LaneSource::LaneSource(DbImpl* db, QueueImpl* queue, uint32_t consumer_id)
    : db_(db),
      queue_(queue),
      key_(format::SourceKey(queue->id(), consumer_id)),
      priorities_(queue->options().priorities),
      state_(priorities_) {}

absl::Status LaneSource::Load() {
  std::string value;
  leveldb::Status s =
      CheckedGet(db_->leveldb(), CheckedReadOptions(), key_, &value);
  if (s.IsNotFound()) {
    // New (or made by an older hq): from the index's tail, and walks of
    // everything written before. Read in the pipeline's leader, so that
    // every write is either stored before the walks or hinted at or after
    // the tail.
    format::SourceValue v;
    HQ_RETURN_IF_ERROR(db_->WriteWithHints(
        queue_, db_->default_sync(),
        [&](DbImpl::HintWriter* hints, leveldb::WriteBatch* b) {
          // The walks find the messages stored before this record and
          // those of its batch appended before it without a hint (a
          // queue's messages get none until it has a consumer); hints
          // lead to the later ones. With neither there is nothing to walk
          // (a walk started later would visit the lanes written meanwhile,
          // which their hints lead to anyway).
          const bool walk = !NoMessages() || hints->UnhintedInBatch();
          // Without floors (a read error, or too many partitions for a
          // record rewritten at every move) cursors are written as before.
          // Without a walk there are none either: every lane counts as
          // passed, and a message of this batch appended before the record
          // (which NoMessages cannot see) lies below the floor.
          if (!walk ||
              queue_->options().partitions > format::kMaxSourceFloors ||
              !hints->NextIds(&v.floors)) {
            v.floors.clear();
          }
          v.priorities.resize(priorities_);
          for (int p = 0; p < priorities_; ++p) {
            v.priorities[p].next_seq = hints->Next(p);
            v.priorities[p].walking = walk;
          }
          b->Put(key_, format::EncodeSource(v));
        }));
    value = format::EncodeSource(v);
  } else {
    HQ_RETURN_IF_ERROR(FromLevelDb(s, "reading a lane source position"));
  }
  format::SourceValue v;
  if (!format::DecodeSource(value, &v) ||
      v.priorities.size() != static_cast<size_t>(priorities_) ||
      !(v.floors.empty() || v.floors.size() == queue_->options().partitions)) {
    return absl::DataLossError(absl::StrCat(
        "queue '", queue_->name(), "': malformed lane source position"));
  }
  for (int p = 0; p < priorities_; ++p) {
    state_[p].read_next = v.priorities[p].next_seq;
    state_[p].walking = v.priorities[p].walking;
    state_[p].walk_next = v.priorities[p].walk_from;
  }
  written_ = std::move(value);
  durable_ = std::move(v);
  return absl::OkStatus();
}

bool LaneSource::NoMessages() const {
  std::unique_ptr<leveldb::Iterator> it(
      NewCheckedIterator(db_->leveldb(), CheckedReadOptions()));
  const std::string prefix = format::MessagePrefix(queue_->id());
  it->Seek(prefix);
  if (it->Valid()) return !View(it->key()).starts_with(prefix);
  return it->status().ok();  // On an error: walk, which is always sound.
}

void LaneSource::NoteWritten() {
  for (State& st : state_) st.more = true;
}

absl::Status LaneSource::Next(int priority, size_t max, leveldb::Iterator* it,
                              std::vector<Taken>* out, std::string* values) {
  const size_t before = out->size();
  HQ_RETURN_IF_ERROR(NextWalk(priority, max, it, out, values));
  return NextHints(priority, max - (out->size() - before), it, out);
}

absl::Status LaneSource::DecodeHint(
    const leveldb::Iterator& it, int priority, uint64_t* seq,
    std::vector<std::string_view>* lanes) const {
  // Reads start at seq 1 or later: the index head (seq 0) is not a hint.
  if (!format::DecodeHintSeq(View(it.key()), seq) || *seq == 0 ||
      !format::DecodeHintLanes(View(it.key()), View(it.value()), priority,
                               lanes)) {
    return absl::DataLossError(absl::StrCat("queue '", queue_->name(),
                                            "': malformed lane index record"));
  }
  return absl::OkStatus();
}

absl::Status LaneSource::NextHints(int priority, size_t max,
                                   leveldb::Iterator* it,
                                   std::vector<Taken>* out) {
  State& st = state_[priority];
  if (!st.more || max == 0) return absl::OkStatus();
  const std::string prefix = format::HintPrefix(queue_->id(), priority);
  const std::string message_prefix = format::MessagePrefix(queue_->id());
  size_t n = 0;
  std::vector<std::string_view> lanes;
  for (it->Seek(format::HintKey(queue_->id(), priority, st.read_next));
       it->Valid() && View(it->key()).starts_with(prefix); it->Next()) {
    if (n == max) return absl::OkStatus();  // More may follow.
    uint64_t seq;
    HQ_RETURN_IF_ERROR(DecodeHint(*it, priority, &seq, &lanes));
    // Lanes of this hint taken by an earlier call are skipped.
    size_t k = seq == st.read_next ? st.read_skip : 0;
    for (; k < lanes.size() && n < max; ++k, ++n) {
      Taken t;
      t.prefix = message_prefix;
      t.prefix.append(lanes[k]);
      t.hold.priority = priority;
      t.hold.seq = seq;
      ++st.holds[seq];
      out->push_back(std::move(t));
    }
    st.read_next = k < lanes.size() ? seq : seq + 1;
    st.read_skip = k < lanes.size() ? k : 0;
  }
  HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading the lane index"));
  if (n < max) st.more = false;
  return absl::OkStatus();
}

absl::Status LaneSource::NextWalk(int priority, size_t max,
                                  leveldb::Iterator* it,
                                  std::vector<Taken>* out,
                                  std::string* values) {
  State& st = state_[priority];
  const std::string message_prefix = format::MessagePrefix(queue_->id());
  const uint32_t partitions = queue_->options().partitions;
  size_t n = 0;
  while (walk_pending(priority) && n < max) {
    // The partition the walk is in, and its range of this priority.
    const uint32_t partition = st.walk_next.size() >= 2
                                   ? coding::DecodeFixed16(st.walk_next.data())
                                   : 0;
    if (partition >= partitions) {
      st.walk_at_end = true;
      break;
    }
    LaneWalk walk(it, queue_->codec(),
                  message_prefix + LaneRestRange(partition, priority));
    bool full = false;
    walk.Seek(message_prefix + st.walk_next);
    while (walk.Valid()) {
      if (n == max) {
        full = true;
        break;
      }
      const std::string_view rest = walk.rest(message_prefix.size());
      Taken& t = out->emplace_back();
      t.prefix.assign(walk.prefix());
      t.hold.priority = priority;
      t.hold.walk_key.assign(rest);
      HoldWalked(&st, t.hold.walk_key);
      st.walk_next.assign(rest);
      st.walk_next.push_back('\0');  // The next lane sorts at or after.
      ++n;
      // The lane's first key, which the step below may find was its only.
      const leveldb::Slice value =
          values != nullptr ? it->value() : leveldb::Slice();
      const bool keep =
          values != nullptr && value.size() <= kMaxOnlyValue &&
          values->size() + value.size() <= kMaxOnlyValues &&
          LayoutCodec::LaneMessage(View(it->key()), t.prefix, &t.kept.id);
      if (keep) {
        t.kept.at = values->size();
        t.kept.size = value.size();
        values->append(value.data(), value.size());
      }
      walk.Next();
      t.only = keep && walk.left_one_key();
      if (keep && !t.only) values->resize(t.kept.at);
    }
    HQ_RETURN_IF_ERROR(walk.status());
    if (full) break;
    st.walk_next = LaneRestRange(partition + 1, priority);
  }
  return absl::OkStatus();
}

absl::Status LaneSource::Peek(size_t max, leveldb::Iterator* it,
                              std::vector<std::string>* prefixes,
                              bool* all) const {
  *all = false;
  const std::string message_prefix = format::MessagePrefix(queue_->id());
  const uint32_t partitions = queue_->options().partitions;
  // Takes lane_rest `rest`; false once `max` are taken.
  auto take = [&](std::string_view rest) {
    if (max == 0) return false;
    --max;
    prefixes->push_back(message_prefix);
    prefixes->back().append(rest);
    return true;
  };
  for (int p = priorities_ - 1; p >= 0; --p) {
    const State& st = state_[p];
    if (walk_pending(p)) {
      uint32_t partition = st.walk_next.size() >= 2
                               ? coding::DecodeFixed16(st.walk_next.data())
                               : 0;
      for (; partition < partitions; ++partition) {
        LaneWalk walk(it, queue_->codec(),
                      message_prefix + LaneRestRange(partition, p));
        for (walk.Seek(message_prefix + st.walk_next); walk.Valid();
             walk.Next()) {
          if (!take(walk.rest(message_prefix.size()))) {
            return absl::OkStatus();
          }
        }
        HQ_RETURN_IF_ERROR(walk.status());
      }
    }
    const std::string prefix = format::HintPrefix(queue_->id(), p);
    std::vector<std::string_view> lanes;
    for (it->Seek(format::HintKey(queue_->id(), p, st.read_next));
         it->Valid() && View(it->key()).starts_with(prefix); it->Next()) {
      uint64_t seq;
      HQ_RETURN_IF_ERROR(DecodeHint(*it, p, &seq, &lanes));
      for (size_t k = seq == st.read_next ? st.read_skip : 0; k < lanes.size();
           ++k) {
        if (!take(lanes[k])) return absl::OkStatus();
      }
    }
    HQ_RETURN_IF_ERROR(FromLevelDb(it->status(), "reading the lane index"));
  }
  *all = true;
  return absl::OkStatus();
}

void LaneSource::Release(const Hold& hold) {
  State& st = state_[hold.priority];
  if (hold.seq > 0) {
    auto it = st.holds.find(hold.seq);
    if (it != st.holds.end() && --it->second == 0) st.holds.erase(it);
  } else if (!hold.walk_key.empty()) {
    ReleaseWalked(&st, hold.walk_key);
  }
}

void LaneSource::HoldWalked(State* st, std::string_view rest) {
  std::deque<State::WalkHold>& q = st->walk_holds;
  ++st->walk_held;
  if (q.empty() || q.back().rest < rest) {
    q.push_back({.rest = std::string(rest)});  // The walk's order.
    return;
  }
  auto it = std::lower_bound(
      q.begin(), q.end(), rest,
      [](const State::WalkHold& h, std::string_view k) { return h.rest < k; });
  if (it != q.end() && it->rest == rest) {
    if (it->held) --st->walk_held;  // Held already.
    it->held = true;
    return;
  }
  q.insert(it, {.rest = std::string(rest)});
}

void LaneSource::ReleaseWalked(State* st, std::string_view rest) {
  std::deque<State::WalkHold>& q = st->walk_holds;
  // Lanes are mostly released in the order they were walked.
  auto it =
      !q.empty() && q.front().rest == rest
          ? q.begin()
          : std::lower_bound(q.begin(), q.end(), rest,
                             [](const State::WalkHold& h, std::string_view k) {
                               return h.rest < k;
                             });
  if (it == q.end() || it->rest != rest || !it->held) return;
  it->held = false;
  --st->walk_held;
  while (!q.empty() && !q.front().held) q.pop_front();
  if (q.size() > 2 * st->walk_held + 64) {
    std::erase_if(q, [](const State::WalkHold& h) { return !h.held; });
  }
}

format::SourceValue LaneSource::Position() const {
  format::SourceValue v;
  v.floors = durable_.floors;  // Fixed at the record's creation.
  v.priorities.resize(priorities_);
  for (int p = 0; p < priorities_; ++p) {
    const State& st = state_[p];
    format::SourcePosition& pos = v.priorities[p];
    pos.next_seq = st.holds.empty()
                       ? st.read_next
                       : std::min(st.read_next, st.holds.begin()->first);
    pos.walking = st.walking && !(st.walk_at_end && st.walk_holds.empty());
    if (pos.walking) {
      pos.walk_from =
          st.walk_holds.empty() ? st.walk_next : st.walk_holds.front().rest;
    }
  }
  return v;
}

bool LaneSource::Moved() const {
  return format::EncodeSource(Position()) != written_;
}

bool LaneSource::AppendRecord(leveldb::WriteBatch* batch) {
  format::SourceValue v = Position();
  std::string value = format::EncodeSource(v);
  if (value == written_) return false;
  batch->Put(key_, value);
  written_ = std::move(value);
  durable_ = std::move(v);
  return true;
}

size_t LaneSource::TEST_Entries() const {
  size_t n = 0;
  for (const State& st : state_) n += st.holds.size() + st.walk_holds.size();
  return n;
}

bool LaneSource::Floor(uint32_t partition, MessageId* floor) const {
  if (partition >= durable_.floors.size()) return false;
  *floor = durable_.floors[partition];
  return true;
}

bool LaneSource::Passed(std::string_view lane_prefix, int priority) const {
  return format::SourcePassed(durable_, lane_prefix, priority);
}

}  // namespace hq
