// The communicator's queue of async calls: submit() queues them, the worker thread runs
// them in issue order, and a thread that waits on a Work runs them itself when nobody else
// does (runQueuedUntil). runBlocking() (comm_impl.cc) runs queued calls before its own.
// Where the worker has no core of its own (asyncProgress "wait"), it leaves each call a
// grace period for a wait to run it, and looks for calls in naps (waitForDueCall).

#include <memory>
#include <mutex>
#include <utility>

#include "base/stack.h"
#include "base/wait.h"
#include "core/comm_impl.h"
#include "core/work_state.h"

namespace tutti::detail {

void CommImpl::runFrontLocked(std::unique_lock<std::mutex>& lock) {
  if (isPointToPoint(queue_.front())) {
    takeQueuedP2pLocked(p2pBatch_);
    lock.unlock();
    // Calls that other threads queue meanwhile join the group: a receive here may need a
    // send queued after it. Every status goes to a Work.
    (void)runP2pGroup(p2pBatch_, nullptr, true);
  } else {
    OpRequest request = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Status status = execute(request, request.algorithm);
    request.work->complete(std::move(status));
    recycleArrays(request);
  }
  lock.lock();
}

bool CommImpl::runQueuedUntil(const WorkState& work) {
  std::unique_lock<std::mutex> lock(queueMutex_);
  if (queue_.empty()) return false;
  if (workerBusy_ || inlineBusy_) {
    // The thread running calls now may stop before this wait's own (a wait stops at its
    // call), leaving it to the worker: no grace for it then (waitForDueCall).
    hurry_ = true;
    return false;
  }
  inlineBusy_ = true;
  repeated_.valid = false;  // as in workerLoop(): the runs below may evict its plan
  while (!work.done() && !queue_.empty()) runFrontLocked(lock);
  finishInlineLocked(lock);
  return true;
}

void CommImpl::finishInline() {
  std::unique_lock<std::mutex> lock(queueMutex_);
  finishInlineLocked(lock);
}

void CommImpl::finishInlineLocked(std::unique_lock<std::mutex>& lock) {
  inlineBusy_ = false;
  // Only the worker waits for inlineBusy_ (the destructor joins it, so without one
  // nobody), and only to take queued operations or to stop: waking it for nothing after
  // every blocking call cost a futex wake and two context switches per call (2 ranks,
  // 8 B all-reduce after one async call: 0.4-1.6 us against 0.13).
  const bool wake = worker_.joinable() && (!queue_.empty() || stopping_);
  lock.unlock();
  if (wake) queueCv_.notify_all();
}

Work CommImpl::submit(OpRequest request, const CallOptions& options) {
  std::shared_ptr<WorkState> work = newWork();
  Status valid = validate(request);
  if (!valid.ok()) {
    work->complete(valid);
    return Work(work);
  }
  prepare(request, options);
  request.work = work;
  request.algorithm = options.algorithm;
  const bool p2p = isPointToPoint(request);
  bool busy = false;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    queue_.push_back(std::move(request));
    queued_.fetch_add(1, std::memory_order_relaxed);
    if (!worker_.joinable()) {
      worker_ = startPrefaultedThread([this] { workerLoop(); });
      workerStarted_ = true;
    }
    busy = workerBusy_ || inlineBusy_;
    // A napping worker finds the call when its nap ends (waitForDueCall): waking it now
    // would cost the two scheduler round trips that a wait running the call saves.
    wake = !deferToWaits_ || workerAsleep_;
  }
  if (wake) queueCv_.notify_all();
  // A worker or waiter driving point-to-point calls takes this one into its group: wake it.
  if (p2p && busy) transport_->interruptWait();
  return Work(work);
}

void CommImpl::workerLoop() {
  while (true) {
    std::unique_lock<std::mutex> lock(queueMutex_);
    const auto ready = [&] {
      return (stopping_ && !inlineBusy_) || (!queue_.empty() && !inlineBusy_);
    };
    if (deferToWaits_) {
      waitForDueCall(lock);
    } else {
      if (!ready() && workSpinNs_ > 0) {
        // Where the worker has a core of its own (workSpinNs_), it polls for the next async
        // call for a while before it sleeps: a loop of async calls then costs no wake-up.
        const std::uint64_t seen = queued_.load(std::memory_order_relaxed);
        lock.unlock();
        const Deadline until = Deadline::after(std::chrono::nanoseconds(workSpinNs_));
        while (queued_.load(std::memory_order_relaxed) == seen && !until.expired()) cpuRelax();
        lock.lock();
      }
      // Idle wait for work: woken by submit() or by the destructor (stopping_).
      queueCv_.wait(lock, ready);
    }
    if (queue_.empty()) return;  // stopping, nothing left
    workerBusy_ = true;
    // What the issuing thread kept for a repeat may name a plan this run evicts; it reads
    // the flag only while the worker is idle (runBlocking), after this lock.
    repeated_.valid = false;
    runFrontLocked(lock);
    workerBusy_ = false;
    // The calls queued meanwhile are due now (a thread waiting for one sleeps until this
    // thread runs it), and a call nobody waited for may have company: look again soon.
    napStartQueued_ = queued_.load(std::memory_order_relaxed);
    napNs_ = kNapMinNs;
    lock.unlock();
    queueCv_.notify_all();
  }
}

void CommImpl::waitForDueCall(std::unique_lock<std::mutex>& lock) {
  std::int64_t quietNs = 0;  // how long no call has been issued
  while (true) {
    if (stopping_ && !inlineBusy_) return;
    const std::uint64_t seen = queued_.load(std::memory_order_relaxed);
    if (queue_.empty()) hurry_ = false;
    if (!queue_.empty() && !inlineBusy_) {
      // queued_ counts every call ever queued, so the front one is number queued_ - size.
      const bool due = seen - queue_.size() < napStartQueued_;
      if (due || hurry_) {
        hurry_ = false;
        return;
      }
    }
    if (queue_.empty() && quietNs >= kDeepSleepAfterNs) {
      // Nothing issued for a while: sleep until submit() wakes this thread (an idle rank
      // burns nothing), then give the call that woke it the usual grace.
      workerAsleep_ = true;
      // Through the timed wait the naps use: a first call of another waiting function
      // here, long after the last call, could fault its code page in while a later call
      // runs (tests/multiproc/steady_test.cc counts the process's faults).
      while (!stopping_ && queue_.empty()) queueCv_.wait_for(lock, std::chrono::seconds(10));
      workerAsleep_ = false;
      napNs_ = kNapMinNs;
      quietNs = 0;
      napStartQueued_ = queued_.load(std::memory_order_relaxed) - queue_.size();
      continue;
    }
    napStartQueued_ = seen;
    // A call queued but not due yet (or held by a thread running calls inline) is looked
    // at again after no more than the shortest nap.
    const std::int64_t nap = queue_.empty() ? napNs_ : std::min(napNs_, kNapMinNs);
    const auto start = Deadline::Clock::now();
    queueCv_.wait_for(lock, std::chrono::nanoseconds(nap));
    if (queued_.load(std::memory_order_relaxed) == seen) {
      quietNs += std::chrono::duration_cast<std::chrono::nanoseconds>(Deadline::Clock::now() - start)
                     .count();
    } else {
      quietNs = 0;
    }
    napNs_ = std::min(2 * napNs_, kNapMaxNs);
  }
}

void CommImpl::runSoon() {
  {
    std::lock_guard<std::mutex> lock(queueMutex_);
    if (queue_.empty() || !deferToWaits_) return;
    hurry_ = true;
  }
  queueCv_.notify_all();
}

}  // namespace tutti::detail
