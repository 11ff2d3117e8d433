#pragma once
// The shared state behind a tutti::Work handle.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "base/wait.h"
#include "tutti/status.h"

namespace tutti::detail {

class WorkState;

/// What runs a communicator's queued operations on a thread that waits for one of them
/// (CallQueue::runQueuedUntil).
class QueueRunner {
 public:
  /// Runs queued operations in issue order on the calling thread until `work` has
  /// completed or nothing is queued. False, having run nothing, when another thread runs
  /// operations now (the worker, or another caller inline).
  virtual bool runQueuedUntil(const WorkState& work) = 0;
  /// Asks whoever runs queued operations later (the worker) to start them now: a wait
  /// with a deadline does not run them itself.
  virtual void runSoon() = 0;

 protected:
  ~QueueRunner() = default;
};

/// The link from a communicator's Work states to its queue, shared by both: a Work handle
/// may outlive its communicator, and a thread may wait on one while another destroys it.
/// Waits enter() it to run queued operations; the communicator's destructor close()s it
/// first, which waits for the waits inside to leave.
class WorkQueueLink {
 public:
  explicit WorkQueueLink(QueueRunner* runner) : runner_(runner) {}

  /// The runner, with this wait counted inside until leave(); null once closed. Atomic
  /// operations, no lock: every wait on an unfinished async call passes here. enter()
  /// counts itself before it reads the runner and close() clears the runner before it
  /// reads the count (all sequentially consistent), so either the wait sees no runner or
  /// close() sees the wait inside.
  QueueRunner* enter() {
    inside_.fetch_add(1);
    QueueRunner* runner = runner_.load();
    if (runner == nullptr) leave();
    return runner;
  }
  void leave() {
    if (inside_.fetch_sub(1) != 1 || !closing_.load()) return;
    // The last one out while close() waits: through the mutex, so that the wake-up cannot
    // fall between close()'s check and its sleep.
    { std::lock_guard<std::mutex> lock(mutex_); }
    left_.notify_all();
  }
  /// No wait enters from now on; returns once the ones inside have left.
  void close() {
    runner_.store(nullptr);
    closing_.store(true);
    std::unique_lock<std::mutex> lock(mutex_);
    left_.wait(lock, [&] { return inside_.load() == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable left_;
  std::atomic<QueueRunner*> runner_;
  std::atomic<int> inside_{0};
  std::atomic<bool> closing_{false};
};

class WorkState {
 public:
  /// `queue`: the communicator's queue, which a wait without a deadline may run (null:
  /// waits only wait).
  explicit WorkState(std::int64_t spinNs, std::shared_ptr<WorkQueueLink> queue = nullptr)
      : spinNs_(spinNs), queue_(std::move(queue)) {}

  bool done() const { return done_.load(std::memory_order_acquire) != 0; }

  /// done(), and the first time it is not, asks the worker to start the queued operations
  /// now (runSoon) rather than after their grace: a program that polls (MPI_Test, a
  /// framework's is_completed()) is not about to run them in a wait.
  bool test() const;

  /// Records the result and wakes waiters. Called once, by whoever ran the operation.
  void complete(Status status) {
    status_ = std::move(status);
    done_.store(1, std::memory_order_release);
    signal_.notify();
  }

  /// Makes a finished state that nobody else holds any more new again
  /// (CallQueue::newWork reuses states instead of allocating one per call).
  void reset() {
    status_ = Status::Ok();
    done_.store(0, std::memory_order_relaxed);
    hastened_.store(false, std::memory_order_relaxed);
  }

  /// Waits until complete or the deadline; kTimeout if the deadline comes first. Without a
  /// deadline, when no other thread runs the communicator's operations, the waiting thread
  /// runs the queued ones itself, in issue order up to this one (as MPI_Wait progresses a
  /// request): where cores are scarce, handing a small call to the worker and back costs
  /// two wake-ups, several microseconds, for a call of a fraction of one.
  Status wait(Deadline deadline) const;

 private:
  std::atomic<std::uint32_t> done_{0};
  mutable std::atomic<bool> hastened_{false};  // test() has asked for a start (once)
  Status status_;  // written before done_ is set, read only after
  mutable WaitSignal signal_;
  std::int64_t spinNs_;
  std::shared_ptr<WorkQueueLink> queue_;
};

}  // namespace tutti::detail
