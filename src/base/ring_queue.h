#pragma once
// RingQueue: a first-in first-out queue in one circular array that keeps its capacity.
//
// The transports' queues of requests and buffered messages, and the communicator's queue
// of operations, turn over on every call. std::deque allocates a block whenever its end
// crosses into a new one and frees the block its front leaves, so a queue that merely
// turns over allocates every few dozen pushes, forever; this one allocates only to grow
// past the most it ever held (issue 4: nothing allocated on the path of a call).
//
// Elements are default-constructed in the free slots; pop_front() and erase() assign a
// default value to the slot they free, so that what the element owned is released then,
// as with std::deque. erase() shifts the elements behind the erased one forward.

#include <cstddef>
#include <iterator>
#include <utility>
#include <vector>

#include "base/assert.h"

namespace tutti {

template <typename T>
class RingQueue {
 public:
  template <bool Const>
  class Iter {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::conditional_t<Const, const T*, T*>;
    using reference = std::conditional_t<Const, const T&, T&>;
    using Queue = std::conditional_t<Const, const RingQueue, RingQueue>;

    Iter() = default;
    Iter(Queue* queue, std::size_t index) : queue_(queue), index_(index) {}
    // An iterator converts to a const_iterator.
    template <bool C = Const, typename = std::enable_if_t<C>>
    Iter(const Iter<false>& other) : queue_(other.queue_), index_(other.index_) {}

    reference operator*() const { return (*queue_)[index_]; }
    pointer operator->() const { return &(*queue_)[index_]; }
    Iter& operator++() {
      ++index_;
      return *this;
    }
    Iter operator++(int) {
      Iter before = *this;
      ++index_;
      return before;
    }
    friend bool operator==(const Iter& a, const Iter& b) { return a.index_ == b.index_; }
    /// Position from the front (0 is front()).
    std::size_t index() const { return index_; }

   private:
    friend class Iter<true>;
    friend class RingQueue;
    Queue* queue_ = nullptr;
    std::size_t index_ = 0;
  };
  using iterator = Iter<false>;
  using const_iterator = Iter<true>;

  bool empty() const { return size_ == 0; }
  std::size_t size() const { return size_; }
  /// Elements it holds without growing.
  std::size_t capacity() const { return slots_.size(); }

  T& operator[](std::size_t i) { return slots_[slot(i)]; }
  const T& operator[](std::size_t i) const { return slots_[slot(i)]; }
  T& front() { return (*this)[0]; }
  const T& front() const { return (*this)[0]; }
  T& back() { return (*this)[size_ - 1]; }
  const T& back() const { return (*this)[size_ - 1]; }

  iterator begin() { return iterator(this, 0); }
  iterator end() { return iterator(this, size_); }
  const_iterator begin() const { return const_iterator(this, 0); }
  const_iterator end() const { return const_iterator(this, size_); }

  void push_back(T value) {
    if (size_ == slots_.size()) grow();
    slots_[slot(size_)] = std::move(value);
    ++size_;
  }

  void pop_front() {
    TUTTI_ASSERT(size_ > 0);
    slots_[head_] = T{};
    head_ = head_ + 1 == slots_.size() ? 0 : head_ + 1;
    --size_;
  }

  /// Removes the element at `it`; returns the position of the one that followed it.
  iterator erase(const_iterator it) {
    const std::size_t at = it.index_;
    TUTTI_ASSERT(at < size_);
    if (at == 0) {
      pop_front();
      return begin();
    }
    for (std::size_t i = at; i + 1 < size_; ++i) (*this)[i] = std::move((*this)[i + 1]);
    (*this)[size_ - 1] = T{};
    --size_;
    return iterator(this, at);
  }

  /// Makes room for `n` elements without growing later.
  void reserve(std::size_t n) {
    if (n <= slots_.size()) return;
    std::vector<T> bigger(n);
    for (std::size_t i = 0; i < size_; ++i) bigger[i] = std::move((*this)[i]);
    slots_ = std::move(bigger);
    head_ = 0;
  }

  /// Empties the queue, keeping its capacity.
  void clear() {
    while (size_ > 0) pop_front();
    head_ = 0;
  }

 private:
  std::size_t slot(std::size_t i) const {
    const std::size_t s = head_ + i;
    return s < slots_.size() ? s : s - slots_.size();
  }
  void grow() { reserve(slots_.empty() ? 8 : 2 * slots_.size()); }

  std::vector<T> slots_;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

}  // namespace tutti
