// Copyright 2026 The hq Authors. Licensed under the Apache License 2.0.
//
// VectorFifo<T>: a first-in first-out sequence in one std::vector and a head
// index. Unlike std::deque (which allocates two blocks, one of 512 bytes,
// when it is constructed), an empty VectorFifo owns no memory, so a
// consumer can hold one per lane for millions of lanes that are mostly
// empty. Elements are contiguous: push_back is amortized O(1), pop_front
// O(1) amortized (the popped slots are reclaimed once they are at least
// half of the vector, or all of it), pop_back O(1).
//
// References to elements stay valid until the next push_back or pop_front
// (either may move the elements); pop_back invalidates only the last.
//
// Not thread-safe.

#ifndef HQ_LIB_UTIL_VECTOR_FIFO_H_
#define HQ_LIB_UTIL_VECTOR_FIFO_H_

#include <cassert>
#include <cstddef>
#include <utility>
#include <vector>

namespace hq {

template <typename T>
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
    if (head_ > 0 && items_.size() == items_.capacity()) Compact();
    items_.push_back(std::move(item));
  }
  // REQUIRES: !empty().
  void pop_front() {
    assert(!empty());
    items_[head_] = T();  // Lets go of what the element owns now.
    ++head_;
    if (head_ == items_.size()) {
      clear();
    } else if (head_ >= items_.size() - head_) {
      Compact();
    }
  }
  // REQUIRES: !empty().
  void pop_back() {
    assert(!empty());
    items_.pop_back();
    if (head_ == items_.size()) clear();
  }
  // Empties it; keeps the vector's capacity (shrink_to_fit lets it go).
  void clear() {
    items_.clear();
    head_ = 0;
  }
  void shrink_to_fit() {
    Compact();
    items_.shrink_to_fit();
  }
  // Bytes of the elements' slots (not what the elements own).
  size_t capacity_bytes() const { return items_.capacity() * sizeof(T); }

 private:
  // Moves the live elements to the vector's start.
  void Compact() {
    if (head_ == 0) return;
    items_.erase(items_.begin(), items_.begin() + head_);
    head_ = 0;
  }

  std::vector<T> items_;
  size_t head_ = 0;  // items_[0, head_) are popped.
};

}  // namespace hq

#endif  // HQ_LIB_UTIL_VECTOR_FIFO_H_
