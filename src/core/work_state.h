#pragma once
// The shared state behind a tutti::Work handle.

#include <atomic>
#include <cstdint>

#include "base/wait.h"
#include "tutti/status.h"

namespace tutti::detail {

class WorkState {
 public:
  explicit WorkState(std::int64_t spinNs) : spinNs_(spinNs) {}

  bool done() const { return done_.load(std::memory_order_acquire) != 0; }

  /// Records the result and wakes waiters. Called once, by whoever ran the operation.
  void complete(Status status) {
    status_ = std::move(status);
    done_.store(1, std::memory_order_release);
    signal_.notify();
  }

  /// Makes a finished state that nobody else holds any more new again
  /// (CommImpl::newWork reuses states instead of allocating one per call).
  void reset() {
    status_ = Status::Ok();
    done_.store(0, std::memory_order_relaxed);
  }

  /// Waits until complete or the deadline; kTimeout if the deadline comes first.
  Status wait(Deadline deadline) const;

 private:
  std::atomic<std::uint32_t> done_{0};
  Status status_;  // written before done_ is set, read only after
  mutable WaitSignal signal_;
  std::int64_t spinNs_;
};

}  // namespace tutti::detail
