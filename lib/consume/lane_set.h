// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// LaneSet: the lanes of one consumer (a consumer group or a subscription)
// that it holds in memory, and how lanes come into that set.
//
// A consumer reads a queue lane by lane (a lane: one partition, priority
// and, in the topic layout, topic) and keeps in memory only the lanes it
// has work in. Lanes come in two ways:
// - Noted lanes (time layout, unpaged): the write path notes each lane it
//   wrote (Note, from any thread), and the consumer takes the notes under
//   its lock (TakeNotes).
// - Paging (topic layout, paged): lanes come from a LaneSource (the queue's
//   lane activity index read from the consumer's position, and the walk of
//   the lanes written before it), while fewer than max_active() are active.
//   Page takes up to n lanes of a priority from the source; the consumer
//   admits each (Admit): the lane the source names is parsed (DataLoss if it
//   is malformed), let go at once if it is outside the consumer's scope,
//   read into memory by the consumer if it is not there, and from then on
//   holds the source's position back (LaneBase::hold) until the consumer
//   lets it go (LetGo): once its progress is written with the position.
//   The write path's notes only say that the index may have new hints
//   (TakePagedNotes).
// A paging pass (BeginPass) may page in lanes that the source's walk saw
// holding one message, whose value it kept: for the rest of that pass (and
// with the iterator the pass gave Page) the consumer reads that message
// from TakeWalked instead of seeking the lane.
//
// What the set owns: the lanes in memory, keyed by prefix (Make, Find,
// Insert, Erase); which of them are active, the working set (Enter, Leave,
// active), and its cap (max_active); the source and the notes; the pass's kept
// values. What each consumer keeps, as its own: its Lane type (deriving
// LaneBase) with the state of its kind, the order in which its active lanes
// have their turns and when they leave the working set, what a turn reads
// and writes (a group's tasks, leases and cursors; a subscription's
// buffers, deliveries and checkpoints), and when an idle lane leaves memory
// (Erase).
//
// LaneSetHooks: the test hooks of a consumer over its lock and its set.
//
// `Source` is LaneSource, or in tests a fake with its Next, pending,
// NoteWritten and Release.
//
// Thread-safety: Note may be called from any thread at any time; every
// other method is called under the consumer's lock (not thread-safe).

#ifndef HQ_LIB_CONSUME_LANE_SET_H_
#define HQ_LIB_CONSUME_LANE_SET_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "leveldb/iterator.h"
#include "lib/consume/consume_options.h"
#include "lib/consume/lane_notes.h"
#include "lib/consume/lane_source.h"
#include "lib/format/layout_codec.h"
#include "lib/util/sync.h"

namespace hq {

// What every consumer's lane has. A consumer's Lane type derives from it.
struct LaneBase {
  std::string prefix;  // The message lane prefix; the set's key.
  uint32_t partition = 0;
  int priority = 0;
  std::string topic;  // Topic layout only.
  // In the working set (LaneSet::Enter): may have messages to read.
  bool active = false;
  // Paged: what holds the source's position back for this lane.
  LaneSource::Hold hold;
  // Paged: paged in by pass `walked_pass` with its one message kept
  // (LaneSet::TakeWalked).
  uint64_t walked_pass = 0;
  LaneSource::Kept walked;
};

// A LaneSet's counts, whatever its lane type (see LaneSet).
class LaneCounts {
 public:
  // Lanes in memory.
  size_t size() const { return resident_; }
  // Lanes in the working set.
  size_t active() const { return active_; }
  // The working-set cap: the consumer's max_active_lanes as `configured`,
  // unless a test replaced every consumer's (group_test_hooks.h).
  void SetMaxActive(size_t configured) { configured_max_ = configured; }
  size_t max_active() const { return MaxActiveLanes(configured_max_); }
  // The source's entries for holds (LaneSource::TEST_Entries); 0 unpaged,
  // or for a source that does not count them.
  virtual size_t SourceEntries() const = 0;

 protected:
  LaneCounts() = default;
  LaneCounts(const LaneCounts&) = default;
  LaneCounts& operator=(const LaneCounts&) = default;
  ~LaneCounts() = default;
  size_t resident_ = 0;
  size_t active_ = 0;
  size_t configured_max_ = 0;
};

template <typename L, typename Source = LaneSource>
class LaneSet final : public LaneCounts {
 public:
  using Taken = LaneSource::Taken;
  using Map = absl::flat_hash_map<std::string_view, std::unique_ptr<L>>;

  // The most the set keeps allocated for a pass's kept values between
  // passes.
  static constexpr size_t kHeldWalkedBytes = 16 << 10;

  // `owner` names the consumer in errors ("subscription 's'"). `has_topic`
  // is the queue's LayoutCodec::lane_has_topic(), `partitions` and
  // `priorities` its counts. `source`: the lanes are paged from it; null:
  // noted.
  LaneSet(std::string owner, bool has_topic, uint32_t partitions,
          int priorities, std::unique_ptr<Source> source)
      : owner_(std::move(owner)),
        has_topic_(has_topic),
        partitions_(partitions),
        priorities_(priorities),
        notes_(has_topic),
        source_(std::move(source)) {}
  LaneSet(const LaneSet&) = delete;
  LaneSet& operator=(const LaneSet&) = delete;

  bool paged() const { return source_ != nullptr; }
  size_t SourceEntries() const override {
    if constexpr (requires(const Source& s) { s.TEST_Entries(); }) {
      return paged() ? source_->TEST_Entries() : 0;
    } else {
      return 0;
    }
  }
  // The source (paged), owned by the set; null if unpaged.
  Source* source() const { return source_.get(); }

  // ---------------------------------------------------------- in memory
  // A new lane of `prefix` with its partition, priority and topic, not yet
  // in the set (Insert adds it). DataLoss if `prefix` is not a lane of the
  // queue's layout, or names a partition or priority the queue lacks.
  absl::StatusOr<std::unique_ptr<L>> Make(std::string prefix) const {
    auto lane = std::make_unique<L>();
    lane->prefix = std::move(prefix);
    std::string_view topic;
    if (!LayoutCodec::ParseLanePrefix(lane->prefix, has_topic_,
                                      &lane->partition, &lane->priority,
                                      &topic) ||
        lane->partition >= partitions_ || lane->priority >= priorities_) {
      return absl::DataLossError(
          absl::StrCat(owner_, ": a record names a malformed lane"));
    }
    lane->topic.assign(topic);
    return lane;
  }
  L* Find(std::string_view prefix) const {
    if (lanes_.empty()) return nullptr;  // No hashing (a first walk's case).
    auto it = lanes_.find(prefix);
    return it == lanes_.end() ? nullptr : it->second.get();
  }
  // Adds `lane` (its prefix, partition, priority and topic set).
  // InternalError if a lane of its prefix is in memory.
  absl::StatusOr<L*> Insert(std::unique_ptr<L> lane) {
    L* raw = lane.get();
    if (!lanes_.emplace(raw->prefix, std::move(lane)).second) {
      return absl::InternalError(
          absl::StrCat(owner_, ": a lane was read in twice"));
    }
    ++resident_;
    return raw;
  }
  // Forgets `lane` (it leaves the working set). REQUIRES: it is in the set;
  // the consumer has let go of its hold or does not need it let go.
  void Erase(L* lane) {
    if (lane->active) --active_;
    lanes_.erase(lanes_.find(lane->prefix));
    --resident_;
  }
  // Forgets each lane for which pred(const L&) is true.
  template <typename Pred>
  void EraseIf(Pred pred) {
    for (auto it = lanes_.begin(); it != lanes_.end();) {
      if (pred(static_cast<const L&>(*it->second))) {
        if (it->second->active) --active_;
        lanes_.erase(it++);
        --resident_;
      } else {
        ++it;
      }
    }
  }
  // In no particular order; pairs of (prefix, std::unique_ptr<L>). The set
  // must not change while iterating (but through EraseIf).
  typename Map::iterator begin() { return lanes_.begin(); }
  typename Map::iterator end() { return lanes_.end(); }
  typename Map::const_iterator begin() const { return lanes_.begin(); }
  typename Map::const_iterator end() const { return lanes_.end(); }

  // ------------------------------------------------------- working set
  // `lane` (in the set) joins the working set: true, unless it was in it.
  bool Enter(L* lane) {
    if (lane->active) return false;
    lane->active = true;
    ++active_;
    return true;
  }
  // `lane` leaves the working set. REQUIRES: it is in it.
  void Leave(L* lane) {
    lane->active = false;
    --active_;
  }
  // ------------------------------------------------------------- notes
  // From the write path, any thread: `lane_prefix` was written.
  void Note(std::string_view lane_prefix) {
    if (paged()) {
      paged_notes_.store(true);
    } else {
      notes_.Note(lane_prefix);
    }
  }
  // Unpaged: calls `fn` once for each lane noted since the last call (see
  // LaneNotes::Take). Paged: does nothing (TakePagedNotes).
  absl::Status TakeNotes(absl::FunctionRef<absl::Status(const NotedLane&)> fn) {
    if (paged()) return absl::OkStatus();
    return notes_.Take(fn);
  }
  // Paged: if the write path wrote since the last call, the source is told
  // that its index may have new hints. Call it before making the iterator
  // the source is to read them with.
  void TakePagedNotes() {
    if (paged_notes_.exchange(false)) source_->NoteWritten();
  }
  // Paged: whether the write path wrote since TakePagedNotes was last
  // called.
  bool PagedNotesPending() const { return paged() && paged_notes_.load(); }

  // ------------------------------------------------------------ paging
  // Begins a pass: what earlier passes kept is gone. Returns its number.
  uint64_t BeginPass() {
    walked_.clear();
    if (walked_.capacity() > kHeldWalkedBytes) std::string().swap(walked_);
    return ++pass_;
  }
  // Ends a pass: a large buffer of kept values is not held until the next.
  void EndPass() {
    if (walked_.capacity() > kHeldWalkedBytes) std::string().swap(walked_);
  }
  // Whether the pass in progress paged `lane` in with its one message kept.
  bool Walked(const L& lane) const {
    return lane.walked_pass != 0 && lane.walked_pass == pass_;
  }
  // If Walked(*lane): clears it and returns the kept message, its value in
  // *value (valid until the pass ends), which is all the lane holds as of
  // the iterator the pass gave Page. Else null.
  const LaneSource::Kept* TakeWalked(L* lane, std::string_view* value) {
    if (!Walked(*lane)) return nullptr;
    lane->walked_pass = 0;
    *value = lane->walked.ValueIn(walked_);
    return &lane->walked;
  }

  // The value of a message the pass's walk kept (valid until it ends).
  std::string_view KeptValue(const LaneSource::Kept& kept) const {
    return kept.ValueIn(walked_);
  }

  // Paged, in a pass: takes up to `max` lanes of `priority` from the source
  // (reading with `it`) and calls admit(&taken) for each, in the source's
  // order; *taken (if not null) is how many it took (also those admit let
  // go). Stops at admit's first error and returns it.
  absl::Status Page(int priority, size_t max, leveldb::Iterator* it,
                    absl::FunctionRef<absl::Status(Taken*)> admit,
                    size_t* taken = nullptr) {
    std::vector<Taken> lanes;
    lanes.reserve(std::min<size_t>(max, 1024));
    absl::Status s = source_->Next(priority, max, it, &lanes, &walked_);
    if (taken != nullptr) *taken = lanes.size();
    if (!s.ok()) return s;
    for (Taken& t : lanes) {
      s = admit(&t);
      if (!s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Admits the lane of `t` (from Page): null if in_scope(partition, topic)
  // refuses it (its hold let go). Else the lane in memory (read_in(prefix)
  // brings it there if it is not: it returns the lane it Inserted), which
  // holds the position (t's hold, or one it held already, t's then let go),
  // and is marked Walked if t kept its message. The consumer activates it.
  // DataLoss if t names a malformed lane.
  absl::StatusOr<L*> Admit(
      Taken* t,
      absl::FunctionRef<bool(uint32_t partition, std::string_view topic)>
          in_scope,
      absl::FunctionRef<absl::StatusOr<L*>(std::string prefix)> read_in) {
    uint32_t partition;
    int priority;
    std::string_view topic;
    if (!LayoutCodec::ParseLanePrefix(t->prefix, has_topic_, &partition,
                                      &priority, &topic)) {
      return absl::DataLossError(
          absl::StrCat(owner_, ": the lane index names a malformed lane"));
    }
    if (!in_scope(partition, topic)) {
      source_->Release(t->hold);
      return nullptr;
    }
    L* lane = Find(t->prefix);
    if (lane == nullptr) {
      absl::StatusOr<L*> read = read_in(std::move(t->prefix));
      if (!read.ok()) return read.status();
      lane = *read;
    }
    if (t->only) {
      lane->walked_pass = pass_;
      lane->walked = t->kept;
    }
    if (lane->hold.held()) {
      source_->Release(t->hold);  // Already held back by an earlier one.
    } else {
      lane->hold = std::move(t->hold);
    }
    return lane;
  }

  // Lets go of the position `lane` holds; false if it held none.
  bool LetGo(L* lane) {
    if (!lane->hold.held()) return false;
    source_->Release(lane->hold);
    lane->hold = LaneSource::Hold();
    return true;
  }

  // Paged: whether the source may have lanes of any priority below
  // `priorities` not yet taken.
  bool SourcePending(int priorities) const {
    for (int p = 0; paged() && p < priorities; ++p) {
      if (source_->pending(p)) return true;
    }
    return false;
  }

 private:
  const std::string owner_;
  const bool has_topic_;
  const uint32_t partitions_;
  const int priorities_;
  LaneNotes notes_;  // Unpaged: lanes written since TakeNotes.
  // Paged: the write path wrote since the flag was last taken.
  std::atomic<bool> paged_notes_{true};
  const std::unique_ptr<Source> source_;
  Map lanes_;  // Keyed by each lane's own prefix.
  uint64_t pass_ = 0;
  std::string walked_;  // The pass's kept values.
};

// The test hooks of a consumer (a base of its class) over its lock and its
// LaneSet, which the consumer passes to the constructor and keeps for its
// lifetime. The hooks take the lock.
class LaneSetHooks {
 public:
  // Lanes in memory, and of them those in the working set.
  size_t TEST_ResidentLanes() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    MutexLock l(mu_);
    return lanes_->size();
  }
  size_t TEST_ActiveLanes() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    MutexLock l(mu_);
    return lanes_->active();
  }
  // The working set's cap in effect (the consumer's max_active_lanes, or a
  // test's override).
  size_t TEST_MaxActive() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    MutexLock l(mu_);
    return lanes_->max_active();
  }
  // The source's entries for holds (LaneSource::TEST_Entries; 0 unpaged).
  size_t TEST_SourceEntries() ABSL_NO_THREAD_SAFETY_ANALYSIS {
    MutexLock l(mu_);
    return lanes_->SourceEntries();
  }
  // Sets a function that the consumer's Stats calls before it counts each
  // lane's backlog or lag (nullptr: none). REQUIRES: no Stats call runs.
  void TEST_SetCountHook(std::function<void()> hook) {
    count_hook_ = std::move(hook);
  }
  // Whether the consumer's lock is free at this moment (takes and releases
  // it).
  bool TEST_LockIsFree() {
    if (!mu_->TryLock()) return false;
    mu_->Unlock();
    return true;
  }

 protected:
  // `mu` and `lanes` are the consumer's (not yet constructed when it
  // constructs its bases: only kept here).
  LaneSetHooks(Mutex* mu, const LaneCounts* lanes) : mu_(mu), lanes_(lanes) {}
  // Calls the hook TEST_SetCountHook set, if any.
  void CountHook() const {
    if (count_hook_) count_hook_();
  }

 private:
  Mutex* const mu_;
  const LaneCounts* const lanes_;
  std::function<void()> count_hook_;
};

}  // namespace hq

#endif  // HQ_LIB_CONSUME_LANE_SET_H_
