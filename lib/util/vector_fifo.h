// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// VectorFifo<T, kInline>: a first-in first-out sequence in one vector (an
// absl::InlinedVector holding up to kInline elements in place) and a head
// index. Unlike std::deque (which allocates two blocks, one of 512 bytes,
// when it is constructed), a VectorFifo of at most kInline elements owns no
// heap memory, so a consumer can hold one per lane for millions of lanes
// that hold one message or none. Elements are contiguous: push_back is
// amortized O(1) (the popped slots are reclaimed when the vector is full
// and they are at least half of it, or when it is emptied), pop_front and
// pop_back O(1). An emptied one keeps its capacity for the next elements
// until shrink_to_fit.
//
// References to elements stay valid until the next push_back or pop_front
// (either may move the elements); pop_back invalidates only the last.
//
// Not thread-safe.

#ifndef HQ_LIB_UTIL_VECTOR_FIFO_H_
#define HQ_LIB_UTIL_VECTOR_FIFO_H_

#include <cassert>
#include <cstddef>
#include <memory>
#include <utility>

#include "absl/container/inlined_vector.h"

namespace hq {

template <typename T, size_t kInline = 1>
class VectorFifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }

  // REQUIRES: i < size(); 0 is the front.
  T& operator[](size_t i) {
    assert(i < size());
    return items_[head_ + i];
  }
  const T& operator[](size_t i) const {
    assert(i < size());
    return items_[head_ + i];
  }
  // REQUIRES: !empty().
  T& front() { return (*this)[0]; }
  const T& front() const { return (*this)[0]; }
  T& back() { return (*this)[size() - 1]; }
  const T& back() const { return (*this)[size() - 1]; }

  void push_back(T item) {
    MakeRoom();
    items_.push_back(std::move(item));
  }
  // Appends a value-initialized element and returns it (filled in place).
  T& emplace_back() {
    MakeRoom();
    return items_.emplace_back();
  }
  // REQUIRES: !empty().
  void pop_front() {
    assert(!empty());
    // Lets go of what the element owns now; the slot holds a new T until
    // it is reclaimed.
    std::destroy_at(&items_[head_]);
    std::construct_at(&items_[head_]);
    ++head_;
    if (head_ == items_.size()) clear();
  }
  // REQUIRES: !empty().
  void pop_back() {
    assert(!empty());
    items_.pop_back();
    if (head_ == items_.size()) clear();
  }
  // Empties it; keeps the vector's capacity (shrink_to_fit lets it go).
  void clear() {
    items_.erase(items_.begin(), items_.end());
    head_ = 0;
  }
  void shrink_to_fit() {
    Compact();
    items_.shrink_to_fit();
  }
  // Heap bytes of the elements' slots (not what the elements own): 0 while
  // they fit in place.
  size_t heap_bytes() const {
    return items_.capacity() > kInline ? items_.capacity() * sizeof(T) : 0;
  }

 private:
  // Before an append to a full vector: the popped slots are reclaimed if
  // they are at least half of it, else it grows (so each element moves O(1)
  // times, amortized, and the vector stays under four times the elements).
  void MakeRoom() {
    if (items_.size() == items_.capacity() && head_ >= items_.size() - head_) {
      Compact();
    }
  }
  // Moves the live elements to the vector's start.
  void Compact() {
    if (head_ == 0) return;
    items_.erase(items_.begin(), items_.begin() + head_);
    head_ = 0;
  }

  absl::InlinedVector<T, kInline> items_;
  size_t head_ = 0;  // items_[0, head_) are popped.
};

}  // namespace hq

#endif  // HQ_LIB_UTIL_VECTOR_FIFO_H_
