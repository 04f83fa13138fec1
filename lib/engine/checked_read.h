// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// Reads that check what they read. Every LevelDB read of hq goes through
// these:
//   - CheckedReadOptions(): the ReadOptions of every read (checksums are
//     checked by TableCheckEnv, below);
//   - NewCheckedIterator(): an iterator that stops at the first error. A
//     LevelDB iterator can stay Valid() past a damaged block (its two-level
//     iterator steps to the next block and keeps the error in status()),
//     so a loop that checks status() only once Valid() is false would
//     answer short without an error. How it notices an error at the step
//     it happens without asking every level's status() at every step:
//     see CheckedIterator;
//   - CheckedGet(): a Get whose "not found" means the key is absent, never
//     that a table file is missing (LevelDB reports both as NotFound).
// Errors come back as leveldb::Status::Corruption naming what is damaged
// (FromLevelDb turns that into absl DataLoss).
//
// TableCheckEnv, the Env hq opens LevelDB through, checks the CRC of every
// table block read and fails the read with a message naming the file.

#ifndef HQ_LIB_ENGINE_CHECKED_READ_H_
#define HQ_LIB_ENGINE_CHECKED_READ_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "leveldb/db.h"
#include "leveldb/env.h"
#include "leveldb/iterator.h"
#include "leveldb/options.h"

namespace hq {

// The message of `s` without LevelDB's code prefix ("Corruption: ",
// "IO error: ", ...), for a message that wraps it in a status of its own.
std::string StatusMessage(const leveldb::Status& s);

// ReadOptions for every hq read. Checksums are verified by TableCheckEnv,
// which every Db opens LevelDB through and which checks every block read
// from a table file (a block served from the block cache was checked when
// it was read); LevelDB's verify_checksums would compute the same CRC a
// second time (hq_bench: a full scan at 0.36 of raw LevelDB's rate with
// both, 0.65 with the Env's alone), so it stays off.
inline leveldb::ReadOptions CheckedReadOptions() { return {}; }

// A new iterator over `db` that is not Valid() once its source reports an
// error, and whose status() then names the damage and the keys around it.
// The error is sticky: no later Seek makes it Valid() again. Caller owns
// the result.
//
// A Seek whose target lies between the last key passed and the current
// one (or past the last key passed, once the iterator is at the end)
// leaves the iterator where it is, without seeking LevelDB's tables: the
// iterator reads one snapshot, so that gap has no key. A reader going
// from one lane to the next pays one seek for a run of adjacent lanes.
leveldb::Iterator* NewCheckedIterator(leveldb::DB* db,
                                      const leveldb::ReadOptions& ro);

// A copy of a key that reuses its buffer: keys of one queue have nearly
// one size, so a scan copies each in place without a call into the string
// library.
class KeyCopy {
 public:
  void Assign(const char* p, size_t n) {
    if (n > capacity_) Grow(n);
    if (n > 0) std::memcpy(data_.get(), p, n);
    size_ = n;
  }
  void Clear() { size_ = 0; }
  bool empty() const { return size_ == 0; }
  absl::string_view view() const {
    return absl::string_view(data_.get(), size_);
  }
  void Swap(KeyCopy& other) {
    std::swap(data_, other.data_);
    std::swap(size_, other.size_);
    std::swap(capacity_, other.capacity_);
  }

 private:
  void Grow(size_t n) {
    capacity_ = std::max(n, 2 * capacity_);
    data_ = std::make_unique_for_overwrite<char[]>(capacity_);
  }

  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// How many table file opens and reads failed under a TableCheckEnv of this
// process: a checksum mismatch, a short read, a missing or unreadable
// file, a footer that is no table's. Only ever grows.
extern std::atomic<uint64_t> table_read_failures;

// The iterator NewCheckedIterator returns, for a reader that calls it in a
// loop and wants its calls inlined (the class is final). Owns `it`.
//
// When it asks LevelDB's iterator for its status(), which calls into every
// level's iterator: after every seek, at the end, and after a Next when
// table_read_failures moved since it last asked, or when it has not asked
// for kStepsPerStatus steps. Every damaged byte of a table file fails a
// read under TableCheckEnv (blocks have their CRC-32C checked, the footer
// its magic number and its block handles), so damage on disk stops the
// iterator at the step that met it. What LevelDB alone can find, a block
// whose checksum holds but whose entries do not parse (only a writer's
// fault makes one), stops it within kStepsPerStatus steps.
class CheckedIterator final : public leveldb::Iterator {
 public:
  static constexpr int kStepsPerStatus = 32;

  explicit CheckedIterator(leveldb::Iterator* it) : it_(it) {}

  bool Valid() const override { return valid_; }
  void SeekToFirst() override {
    it_->SeekToFirst();
    floor_.Clear();
    floor_kind_ = kInclusive;
    After();
  }
  void SeekToLast() override {
    it_->SeekToLast();
    floor_kind_ = kUnknown;
    After();
  }
  void Seek(const leveldb::Slice& target) override {
    if (AtSeekOf(absl::string_view(target.data(), target.size()))) return;
    it_->Seek(target);
    floor_.Assign(target.data(), target.size());
    floor_kind_ = kInclusive;
    After();
  }
  void Next() override {
    // The key left behind bounds the keys not yet seen; at the end or an
    // error it stays the last key yielded (After restores it).
    floor_.Swap(last_key_);
    floor_kind_ = kExclusive;
    it_->Next();
    // A step to a key with no failed table read to look into: the common
    // case, without a status.
    if (status_.ok() && it_->Valid() && !StatusMayHaveChanged()) {
      valid_ = true;
      const leveldb::Slice k = it_->key();
      last_key_.Assign(k.data(), k.size());
      return;
    }
    After(/*restore_last=*/true);
  }
  void Prev() override {
    it_->Prev();
    floor_kind_ = kUnknown;
    After();
  }
  // The iterator's copy of the current key (valid until the next move).
  leveldb::Slice key() const override {
    return leveldb::Slice(last_key_.view().data(), last_key_.view().size());
  }
  leveldb::Slice value() const override { return it_->value(); }
  leveldb::Status status() const override { return status_; }

 private:
  // What the position says of the keys before it: every key from floor_
  // (or after it) up to the current key, exclusive, is absent.
  enum FloorKind { kUnknown, kInclusive, kExclusive };

  // Whether Seek(target) would stay where the iterator is: the target lies
  // in the gap below the current key (or below the end, once the iterator
  // ran past the last key). An iterator reads one snapshot, so the gap
  // stays empty. Saves a seek of every level's table for a reader that
  // seeks from one lane to the next, as claims and walks do.
  bool AtSeekOf(absl::string_view target) const {
    if (!status_.ok() || floor_kind_ == kUnknown) return false;
    const absl::string_view floor = floor_.view();
    if (floor_kind_ == kInclusive ? target < floor : target <= floor) {
      return false;
    }
    return !valid_ || target <= last_key_.view();
  }

  // After a move that Next did not settle itself: an error ends the
  // iteration. Reads the inner status(). `restore_last`: a Next, whose
  // floor_ holds the key it left; at the end or an error that key stays
  // the last one yielded.
  void After(bool restore_last = false) {
    if (!status_.ok()) {
      valid_ = false;
      return;
    }
    // The count first: a failure after it is looked into at the next step.
    failures_seen_ = table_read_failures.load(std::memory_order_relaxed);
    steps_to_status_ = kStepsPerStatus;
    const leveldb::Status s = it_->status();
    valid_ = s.ok() && it_->Valid();
    if (valid_) {
      const leveldb::Slice k = it_->key();
      last_key_.Assign(k.data(), k.size());
      return;
    }
    if (restore_last) {
      last_key_.Assign(floor_.view().data(), floor_.view().size());
    }
    if (!s.ok()) Fail(s);
  }

  // Whether a Next must ask the inner status(): a table read failed since
  // it was last asked (on this thread, in that Next, or anywhere), or
  // kStepsPerStatus steps passed.
  bool StatusMayHaveChanged() {
    return table_read_failures.load(std::memory_order_relaxed) !=
               failures_seen_ ||
           --steps_to_status_ <= 0;
  }

  // Ends the iteration with `s`, naming where it stopped.
  void Fail(const leveldb::Status& s);

  const std::unique_ptr<leveldb::Iterator> it_;
  bool valid_ = false;
  leveldb::Status status_;
  KeyCopy last_key_;  // The current key (the last one yielded).
  KeyCopy floor_;
  FloorKind floor_kind_ = kUnknown;
  uint64_t failures_seen_ = 0;  // table_read_failures when last asked.
  int steps_to_status_ = 0;
};

// As NewCheckedIterator, with the concrete type.
std::unique_ptr<CheckedIterator> MakeCheckedIterator(
    leveldb::DB* db, const leveldb::ReadOptions& ro);

// As NewCheckedIterator, over `it` (owned by the result), which must read
// one snapshot in bytewise key order, as LevelDB's iterators do.
leveldb::Iterator* WrapCheckedIterator(leveldb::Iterator* it);

// db->Get, except that a table file that cannot be found is Corruption
// (naming the file), not NotFound.
leveldb::Status CheckedGet(leveldb::DB* db, const leveldb::ReadOptions& ro,
                           const leveldb::Slice& key, std::string* value);

// A leveldb::Env wrapper that checks every block read from a table file
// (.ldb, .sst) against its CRC-32C, and the table's footer (its magic
// number, and block handles that lie inside the file), before LevelDB sees
// it. A mismatch or a short read fails the read with Corruption: "table
// file <path>: block at offset O (N bytes): checksum mismatch" (LevelDB's
// own check names no file). Every failed open or read of a table file adds
// one to table_read_failures. Thread-safe as its base.
class TableCheckEnv final : public leveldb::EnvWrapper {
 public:
  explicit TableCheckEnv(leveldb::Env* base) : leveldb::EnvWrapper(base) {}

  leveldb::Status NewRandomAccessFile(
      const std::string& name, leveldb::RandomAccessFile** result) override;
};

}  // namespace hq

#endif  // HQ_LIB_ENGINE_CHECKED_READ_H_
