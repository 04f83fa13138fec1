// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// How a scanner reads.
//
// It holds one LevelDB snapshot and one iterator (plus one that walks the
// lanes). The lanes in scope come from a walk of the message keys
// (lib/engine/lane_walk.h), which steps once per lane; with the topic
// layout and a topic filter, from the filter. Each lane is
// sought straight at lane_prefix + from, so a seek never walks a lane from
// its first key; one that runs out of a lane stops at the next lane's head
// or first message (layout_codec.h): the rows TTL deletes at lane heads,
// which an LSM store skips one by one, are never visited.
//
// Each lane keeps a small buffer of copied entries and the key to resume
// from. A lane refills by seeking its resume key, unless the iterator is
// still where that lane left it. The one lane left to read (always the
// current lane in kLane order, the last lane in kMerged order) stops
// buffering and streams from the iterator in place, so a one-lane scan is a
// plain sequential walk without copies. kMerged order keeps lanes in a heap
// keyed by (id, partition), touched only when the current lane stops being
// the smallest; kLane order finds the next lane only when the current one
// ends, in constant memory.

#include "lib/consume/scanner_impl.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "lib/engine/checked_read.h"
#include "lib/engine/db_impl.h"
#include "lib/engine/lane_walk.h"
#include "lib/engine/queue_impl.h"
#include "lib/format/coding.h"
#include "lib/format/format.h"
#include "lib/format/layout_codec.h"
#include "lib/util/status_macros.h"
#include "lib/util/strings.h"

namespace hq {
namespace {

// Entries buffered across all lanes at most (about), and per lane.
constexpr size_t kBufferedEntries = 65536;
constexpr size_t kMaxChunk = 256;

// A buffered message: copies of its key and value, and its decoded key.
struct Entry {
  std::string key;
  std::string value;
  MessageId id;
  int priority = 0;
  size_t topic_offset = 0;  // The topic is key.substr(offset, size).
  size_t topic_size = 0;
};

struct Lane {
  uint32_t partition = 0;
  std::string prefix;  // Every key of the lane starts with it.
  std::string resume;  // Next key to read.
  std::vector<Entry> buf;
  size_t n = 0;             // Entries in buf.
  size_t pos = 0;           // Current entry.
  bool discovered = false;  // Filled once: later fills read full chunks.
  bool exhausted = false;   // Nothing more after buf.
  // The lane reads straight from the scanner's iterator: its current entry
  // is the iterator's, and buf is unused. Only for the one lane left.
  bool streaming = false;
};

// A lane in the merge heap with its current (id, partition) inline.
struct HeapItem {
  MessageId id;
  uint32_t partition;
  Lane* lane;
};

class ScannerImpl final : public Scanner {
 public:
  ScannerImpl(DbImpl* db, QueueImpl* queue, const ScanOptions& options,
              absl::Duration lease)
      : db_(db),
        lease_(lease),
        queue_id_(queue->id()),
        codec_(queue->codec()),
        priorities_(queue->options().priorities),
        from_(options.from),
        to_(options.to),
        merged_(options.order == ScanOptions::Order::kMerged) {
    if (options.partitions.empty()) {
      parts_.resize(queue->options().partitions);
      for (uint32_t p = 0; p < parts_.size(); ++p) parts_[p] = p;
    } else {
      parts_ = options.partitions;
      std::sort(parts_.begin(), parts_.end());
      parts_.erase(std::unique(parts_.begin(), parts_.end()), parts_.end());
    }
    topics_ = options.topics;
    // In the order of their lane prefixes (length first, then bytes): the
    // topic layout visits candidate lanes in key order, which kLane order
    // relies on.
    std::sort(topics_.begin(), topics_.end(),
              [](const std::string& a, const std::string& b) {
                if (a.size() != b.size()) return a.size() < b.size();
                return a < b;
              });
    topics_.erase(std::unique(topics_.begin(), topics_.end()), topics_.end());
    topic_set_.insert(topics_.begin(), topics_.end());
    // Lanes of the time layout hold every topic: filter rows while reading.
    filter_rows_ = !codec_.lane_has_topic() && !topics_.empty();

    snapshot_ = db_->leveldb()->GetSnapshot();
    leveldb::ReadOptions ro = CheckedReadOptions();
    ro.snapshot = snapshot_;
    iter_ = MakeCheckedIterator(db_->leveldb(), ro);

    if (merged_) {
      while (true) {
        auto lane = NextLane();
        if (lane == nullptr) break;
        lanes_.push_back(std::move(lane));
      }
      max_chunk_ =
          std::clamp(kBufferedEntries / std::max<size_t>(lanes_.size(), 1),
                     size_t{1}, kMaxChunk);
      for (auto& lane : lanes_) heap_.push_back(ItemOf(lane.get()));
      std::make_heap(heap_.begin(), heap_.end(), After);
    }
  }

  ~ScannerImpl() override {
    // End the lease for good: cancel it, and again if a running action
    // re-armed it meanwhile (Cancel waits for a running action).
    closing_.store(true);
    while (true) {
      const LeaseId id = lease_id_.load();
      if (id == 0) break;
      const absl::Status s = db_->leases()->Cancel(id);
      if (s.ok() || lease_id_.load() == id) break;
    }
    if (state_.load() != kExpired) ReleaseResources();
    db_->ScannerClosed();
  }

  // Arms the scanner's lease. Called once, right after construction.
  absl::Status StartLease() {
    calls_at_arm_ = calls_.load(std::memory_order_relaxed);
    deadline_ = db_->clock()->Now() + lease_;
    absl::StatusOr<LeaseId> id =
        db_->lease_impl()->CreateAt(deadline_, [this] { OnLeaseDeadline(); });
    if (!id.ok()) return id.status();
    // Unless the lease already fired and re-armed itself.
    LeaseId none = 0;
    lease_id_.compare_exchange_strong(none, *id);
    return absl::OkStatus();
  }

  bool Next() override {
    // Each call counts as a renewal (OnLeaseDeadline looks at calls_), and
    // holds the scanner busy so that an expiry cannot free what it uses.
    // calls_ is written by the calling thread only (a Scanner is not for
    // concurrent calls), so a plain store: no locked instruction.
    calls_.store(calls_.load(std::memory_order_relaxed) + 1,
                 std::memory_order_relaxed);
    int idle = kIdle;
    if (!state_.compare_exchange_strong(idle, kBusy)) {
      return Fail(absl::FailedPreconditionError(absl::StrCat(
          "scanner lease expired: no call for ", absl::FormatDuration(lease_),
          " (Options::scanner_lease); its snapshot was released, open a new "
          "scanner")));
    }
    const bool more = NextLocked();
    // Release: an expiry that finds the scanner idle sees this call's
    // reads of the iterator done.
    state_.store(kIdle, std::memory_order_release);
    return more;
  }

  bool NextLocked() {
    if (done_) return false;
    Lane* lane = merged_ ? NextMerged() : NextInLaneOrder();
    if (lane == nullptr) {
      done_ = true;
      return false;
    }
    std::string_view value;
    if (lane->streaming) {
      const DecodedKey& k = stream_key_;
      view_.id = k.id;
      view_.priority = k.priority;
      view_.topic = k.topic;
      value = View(iter_->value());
    } else {
      const Entry& e = lane->buf[lane->pos];
      view_.id = e.id;
      view_.priority = e.priority;
      view_.topic =
          std::string_view(e.key).substr(e.topic_offset, e.topic_size);
      value = e.value;
    }
    view_.partition = lane->partition;
    uint64_t not_before_ms;
    if (!format::DecodeMessageValue(value, &view_.key, &view_.payload,
                                    &not_before_ms, &view_.dedup_key)) {
      return Fail(absl::DataLossError(
          absl::StrCat("undecodable message value in partition ",
                       lane->partition, " at id ", view_.id.ToString())));
    }
    view_.not_before = format::NotBeforeTime(not_before_ms);
    return true;
  }

  const MessageView& message() const override { return view_; }
  absl::Status status() const override { return status_; }

 private:
  enum : int { kIdle, kBusy, kExpired };

  // On the lease thread, at the lease's deadline. A scanner called since
  // the lease was armed gets the next lease, one lease after this deadline
  // (not after now: a clock that jumps past several deadlines at once must
  // not revive a scanner idle for all but the first); so an idle scanner
  // expires between one and two leases after its last call, and releases
  // its iterator and snapshot at once. A scanner in a call now is renewed
  // from now.
  void OnLeaseDeadline() {
    if (closing_.load()) return;
    const uint64_t calls = calls_.load(std::memory_order_relaxed);
    absl::Time next = deadline_ + lease_;
    if (calls == calls_at_arm_) {
      int idle = kIdle;
      if (state_.compare_exchange_strong(idle, kExpired)) {
        ReleaseResources();
        return;
      }
      // Busy in one call longer than the lease.
      next = std::max(next, db_->clock()->Now() + lease_);
    }
    calls_at_arm_ = calls;
    deadline_ = next;
    absl::StatusOr<LeaseId> id =
        db_->lease_impl()->CreateAt(next, [this] { OnLeaseDeadline(); });
    lease_id_.store(id.ok() ? *id : 0);  // 0: the Db is closing.
  }

  // Frees the iterators, buffers and snapshot. Once only: by the lease
  // thread at expiry, or by the destructor.
  void ReleaseResources() {
    walk_.reset();
    dir_iter_.reset();
    iter_.reset();
    lanes_.clear();
    heap_.clear();
    owned_current_.reset();
    current_ = nullptr;
    db_->leveldb()->ReleaseSnapshot(snapshot_);
    snapshot_ = nullptr;
    db_->ScannerResourcesReleased();
  }
  // Heap order: the smallest (id, partition) on top.
  static bool After(const HeapItem& a, const HeapItem& b) {
    if (a.id != b.id) return a.id > b.id;
    return a.partition > b.partition;
  }

  HeapItem ItemOf(Lane* lane) const {
    return HeapItem{lane->streaming ? stream_key_.id : lane->buf[lane->pos].id,
                    lane->partition, lane};
  }

  bool Fail(absl::Status s) {
    if (status_.ok()) status_ = std::move(s);
    done_ = true;
    return false;
  }

  // Moves `lane` past its current entry. False when it has no more.
  bool Advance(Lane* lane) {
    if (lane->streaming) return Stream(lane, /*first=*/false);
    if (++lane->pos < lane->n) return true;
    if (lane->exhausted) return false;
    // The one lane left needs no buffer: read it in place.
    if (!merged_ || heap_.empty()) {
      lane->streaming = true;
      return Stream(lane, /*first=*/true);
    }
    return Refill(lane);
  }

  Lane* NextMerged() {
    if (current_ != nullptr) {
      if (Advance(current_)) {
        const HeapItem item = ItemOf(current_);
        // Still the smallest: no heap work (the common case of long runs).
        if (heap_.empty() || !After(item, heap_.front())) return current_;
        // Otherwise the top lane is next: swap it out for this one with a
        // single sift-down instead of a push and a pop.
        current_ = heap_.front().lane;
        heap_.front() = item;
        SiftDown();
        return current_;
      }
      current_ = nullptr;
    }
    if (!status_.ok() || heap_.empty()) return nullptr;
    std::pop_heap(heap_.begin(), heap_.end(), After);
    current_ = heap_.back().lane;
    heap_.pop_back();
    return current_;
  }

  // Restores the heap after its top item grew.
  void SiftDown() {
    const size_t n = heap_.size();
    size_t i = 0;
    const HeapItem moving = heap_[0];
    while (true) {
      size_t child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && After(heap_[child], heap_[child + 1])) ++child;
      if (!After(moving, heap_[child])) break;
      heap_[i] = heap_[child];
      i = child;
    }
    heap_[i] = moving;
  }

  Lane* NextInLaneOrder() {
    if (current_ != nullptr && Advance(current_)) return current_;
    if (!status_.ok()) return nullptr;
    owned_current_ = NextLane();
    current_ = owned_current_.get();
    return current_;
  }

  std::unique_ptr<Lane> MakeLane(uint32_t partition, int priority,
                                 std::string_view topic) {
    auto lane = std::make_unique<Lane>();
    lane->partition = partition;
    codec_.AppendLanePrefix(&lane->prefix, queue_id_, partition, priority,
                            topic);
    lane->resume = lane->prefix;
    LayoutCodec::AppendMessageId(&lane->resume, from_);
    return lane;
  }

  // From the iterator's position, skips rows the topic filter rejects and
  // returns true if it is on a message of `lane` in range, decoded into
  // *k. Otherwise sets lane->exhausted (or fails) and returns false.
  bool PositionInLane(Lane* lane, DecodedKey* k) {
    while (true) {
      if (!iter_->Valid()) {
        if (!iter_->status().ok()) {
          return Fail(FromLevelDb(iter_->status(), "scanning"));
        }
        lane->exhausted = true;
        return false;
      }
      const std::string_view key = View(iter_->key());
      if (!key.starts_with(lane->prefix)) {
        lane->exhausted = true;
        return false;
      }
      if (!codec_.DecodeMessageKey(key, queue_id_, k) ||
          k->lane_prefix_size != lane->prefix.size()) {
        return Fail(absl::DataLossError(
            absl::StrCat("undecodable message key '", Printable(key), "'")));
      }
      if (k->id >= to_) {
        lane->exhausted = true;
        return false;
      }
      if (!filter_rows_ || topic_set_.contains(Av(k->topic))) return true;
      iter_->Next();
    }
  }

  // Reads up to lane->chunk entries from lane->resume into lane->buf.
  // Returns whether it read any; sets lane->exhausted at the lane's end or
  // the range's end.
  bool Refill(Lane* lane) {
    if (iter_owner_ != lane) iter_->Seek(lane->resume);
    iter_owner_ = nullptr;
    lane->n = lane->pos = 0;
    // Discovery reads one entry per lane (memory: one per lane in scope);
    // after that, full chunks.
    const size_t chunk = lane->discovered ? max_chunk_ : 1;
    lane->discovered = true;
    if (lane->buf.size() < chunk) lane->buf.resize(chunk);
    DecodedKey k;
    while (lane->n < chunk && PositionInLane(lane, &k)) {
      Entry& e = lane->buf[lane->n++];
      e.key.assign(View(iter_->key()));
      e.value.assign(View(iter_->value()));
      e.id = k.id;
      e.priority = k.priority;
      e.topic_offset =
          static_cast<size_t>(k.topic.data() - iter_->key().data());
      e.topic_size = k.topic.size();
      iter_->Next();
    }
    if (!status_.ok()) return false;
    if (!lane->exhausted) {
      if (iter_->Valid()) {
        iter_owner_ = lane;
        lane->resume.assign(View(iter_->key()));
      } else if (!iter_->status().ok()) {
        return Fail(FromLevelDb(iter_->status(), "scanning"));
      } else {
        lane->exhausted = true;  // The chunk ended with the last key stored.
      }
    }
    return lane->n > 0;
  }

  // Moves a streaming lane to its next message, reading in place. `first`:
  // the iterator is not yet on the lane (its buffer just ran out).
  bool Stream(Lane* lane, bool first) {
    if (first) {
      if (iter_owner_ != lane) iter_->Seek(lane->resume);
    } else {
      iter_->Next();
    }
    iter_owner_ = lane;
    if (PositionInLane(lane, &stream_key_)) return true;
    iter_owner_ = nullptr;
    return false;
  }

  // Moves to the next partition in scope that is >= `min_partition`.
  void SkipPartitions(uint32_t min_partition) {
    in_partition_ = false;
    while (pi_ < parts_.size() && parts_[pi_] < min_partition) ++pi_;
  }

  // The next lane within partition `p` (lane_walk.h), or nullptr when the
  // partition has no more (then moves to the next partition).
  std::unique_ptr<Lane> NextWalkedLane(uint32_t p) {
    if (dir_iter_ == nullptr) {
      leveldb::ReadOptions ro = CheckedReadOptions();
      ro.snapshot = snapshot_;
      dir_iter_.reset(NewCheckedIterator(db_->leveldb(), ro));
    }
    if (walk_ == nullptr) {
      std::string range = format::MessagePrefix(queue_id_);
      coding::PutFixed16(&range, static_cast<uint16_t>(p));
      walk_ = std::make_unique<LaneWalk>(dir_iter_.get(), codec_, range);
      walk_->Seek(range);
    } else {
      walk_->Next();
    }
    if (!walk_->Valid()) {
      const absl::Status s = walk_->status();  // Iterator or key damage.
      walk_.reset();
      if (!s.ok()) {
        Fail(s);
        return nullptr;
      }
      // Partitions in scope before the next one with lanes have none.
      const std::string queue_prefix = format::MessagePrefix(queue_id_);
      const std::string_view key =
          dir_iter_->Valid() ? View(dir_iter_->key()) : std::string_view();
      if (key.starts_with(queue_prefix) &&
          key.size() >= queue_prefix.size() + 2) {
        SkipPartitions(coding::DecodeFixed16(key.data() + queue_prefix.size()));
      } else {
        pi_ = parts_.size();  // No lanes in any later partition.
      }
      return nullptr;
    }
    uint32_t partition;
    int priority;
    std::string_view topic;
    if (!LayoutCodec::ParseLanePrefix(walk_->prefix(), codec_.lane_has_topic(),
                                      &partition, &priority, &topic) ||
        priority >= priorities_) {
      Fail(absl::DataLossError(absl::StrCat("malformed lane prefix '",
                                            Printable(walk_->prefix()), "'")));
      return nullptr;
    }
    return MakeLane(p, priority, topic);
  }

  // The next lane in scope with a message in range, its buffer filled; or
  // nullptr when there is none (or on error). Candidate lanes come from a
  // walk of the lanes, or with the topic layout and a topic filter from the
  // filter; each is sought at `from`.
  std::unique_ptr<Lane> NextLane() {
    while (status_.ok() && pi_ < parts_.size()) {
      const uint32_t p = parts_[pi_];
      if (!in_partition_) {
        in_partition_ = true;
        prio_ = priorities_ - 1;
        ti_ = 0;
        walk_.reset();
      }
      std::unique_ptr<Lane> lane;
      if (codec_.lane_has_topic() && !topics_.empty()) {
        if (prio_ < 0) {
          SkipPartitions(p + 1);
          continue;
        }
        lane = MakeLane(p, prio_, topics_[ti_]);
        if (ti_ + 1 < topics_.size()) {
          ++ti_;
        } else {
          ti_ = 0;
          --prio_;
        }
      } else {
        lane = NextWalkedLane(p);
        if (lane == nullptr) continue;
      }
      if (Refill(lane.get())) return lane;
    }
    return nullptr;
  }

  DbImpl* const db_;
  const absl::Duration lease_;
  // Lease state, shared with the lease thread.
  std::atomic<int> state_{kIdle};
  std::atomic<uint64_t> calls_{0};
  uint64_t calls_at_arm_ = 0;  // Lease thread (and StartLease) only.
  absl::Time deadline_;        // Of the armed lease; as calls_at_arm_.
  std::atomic<LeaseId> lease_id_{0};
  std::atomic<bool> closing_{false};
  const uint32_t queue_id_;
  const LayoutCodec& codec_;
  const int priorities_;
  const MessageId from_;
  const MessageId to_;
  const bool merged_;

  std::vector<uint32_t> parts_;
  std::vector<std::string> topics_;
  absl::flat_hash_set<std::string> topic_set_;
  bool filter_rows_ = false;

  const leveldb::Snapshot* snapshot_ = nullptr;
  std::unique_ptr<CheckedIterator> iter_;  // Concrete: calls inlined.
  Lane* iter_owner_ = nullptr;             // Lane whose resume key iter_ is at.
  size_t max_chunk_ = kMaxChunk;

  // Lane discovery state.
  size_t pi_ = 0;
  bool in_partition_ = false;
  int prio_ = 0;
  size_t ti_ = 0;
  std::unique_ptr<leveldb::Iterator> dir_iter_;  // Walks the lanes.
  // Over dir_iter_, while it is inside partition parts_[pi_].
  std::unique_ptr<LaneWalk> walk_;

  std::vector<std::unique_ptr<Lane>> lanes_;  // kMerged: all lanes.
  std::vector<HeapItem> heap_;                // kMerged: lanes with entries.
  DecodedKey stream_key_;  // The streaming lane's current key (in iter_).
  std::unique_ptr<Lane> owned_current_;  // kLane: the current lane.
  Lane* current_ = nullptr;

  MessageView view_;
  absl::Status status_;
  bool done_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Scanner>> NewScannerImpl(
    DbImpl* db, QueueImpl* queue, const ScanOptions& options) {
  HQ_RETURN_IF_ERROR(db->AcquireScannerResources());
  db->ScannerOpened();
  auto scanner =
      std::make_unique<ScannerImpl>(db, queue, options, db->scanner_lease());
  HQ_RETURN_IF_ERROR(scanner->StartLease());
  return std::unique_ptr<Scanner>(std::move(scanner));
}

}  // namespace hq
