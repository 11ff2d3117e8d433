#include "core/call_queue.h"

#include <time.h>

#include <memory>
#include <mutex>
#include <utility>

#include "base/macros.h"
#include "base/stack.h"
#include "base/wait.h"

namespace tutti::detail {
namespace {

// A call reads the clock once, for its issue time and deadline; steady_clock's read costs
// 40 ns on this kind of virtual machine, the coarse monotonic clock's (the same time base,
// updated once per tick) 13. CoarseNow::at is at most one tick (1-4 ms) before the real now,
// so a deadline that adds `tick` is never early, and at most a tick late: no timeout a
// caller can set notices. Without a coarse clock (or with one coarser than 10 ms), the
// precise one, and no tick.
struct CoarseNow {
  Deadline::Clock::time_point at;
  Deadline::Clock::duration tick{0};
};

CoarseNow coarseNow() {
  static const Deadline::Clock::duration tick = [] {
    timespec res{};
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) != 0) return Deadline::Clock::duration(-1);
    return std::chrono::duration_cast<Deadline::Clock::duration>(
        std::chrono::seconds(res.tv_sec) + std::chrono::nanoseconds(res.tv_nsec));
  }();
  timespec now{};
  if (tick.count() < 0 || tick > std::chrono::milliseconds(10) ||
      clock_gettime(CLOCK_MONOTONIC_COARSE, &now) != 0)
    return CoarseNow{Deadline::Clock::now()};
  const auto sinceBoot = std::chrono::duration_cast<Deadline::Clock::duration>(
      std::chrono::seconds(now.tv_sec) + std::chrono::nanoseconds(now.tv_nsec));
  return CoarseNow{Deadline::Clock::time_point(sinceBoot), tick};
}

}  // namespace

CallQueue::CallQueue(Runner& runner, Setup setup) : runner_(runner), setup_(setup) {}

CallQueue::~CallQueue() { stop(); }

void CallQueue::stop() {
  workLink_->close();  // waits running queued calls finish them first
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();  // queued calls finish by their deadlines
}

void CallQueue::issue(OpRequest& r, const CallOptions& options) {
  const auto timeout = options.timeout.value_or(setup_.timeout);
  const CoarseNow now = coarseNow();
  r.issued = now.at;
  r.deadline = Deadline::at(now.at + now.tick +
                            std::chrono::duration_cast<Deadline::Clock::duration>(timeout));
  // Point to point takes no sequence number; it keeps the next one, so that the hang report
  // can say which collectives it came between.
  r.seq = isPointToPoint(r.spec.kind) ? nextSeq_ : nextSeq_++;
}

Status CallQueue::runBlocking(OpRequest&& request, const CallOptions& options) {
  // Without a worker (no async call was issued yet) no other thread runs calls, and the
  // lock would only order this thread with itself: skipped.
  if (!workerStarted_) return runner_.runNow(request, options);
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!workerBusy_ && !inlineBusy_ && queue_.empty()) {
      // The worker is idle with nothing queued: until finishInline() this thread alone
      // runs calls, as before any async call.
      inlineBusy_ = true;
      lock.unlock();
      Status status = runner_.runNow(request, options);
      finishInline();
      return status;
    }
  }
  TUTTI_RETURN_IF_ERROR(runner_.check(request));
  issue(request, options);
  return runBehindQueued(request, options);
}

Status CallQueue::runBehindQueued(OpRequest& request, const CallOptions& options) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (workerBusy_ || inlineBusy_) {
    // The worker (or a thread waiting on a Work) is running an async call: run behind it
    // and whatever is queued, to keep issue order.
    std::shared_ptr<WorkState> work = newWork();
    request.work = work;
    request.algorithm = options.algorithm;
    const bool p2p = isPointToPoint(request.spec.kind);
    queue_.push_back(std::move(request));
    queued_.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    cv_.notify_all();
    if (p2p) runner_.interruptWait();      // a point-to-point group there takes it in
    return work->wait(Deadline::never());  // bounded: every queued call has a deadline
  }
  inlineBusy_ = true;
  // Async calls issued before this one and not started yet run here first, in issue order
  // (the worker starts nothing while inlineBusy_): handing them to the worker would cost a
  // wake-up of the worker and then one of this thread, where an isend followed by a recv
  // needs none. Point-to-point calls back to back run together, this one too when it is
  // one of them and the last.
  while (!queue_.empty()) {
    if (!isPointToPoint(queue_.front().spec.kind)) {
      runFrontLocked(lock);
      continue;
    }
    takeQueuedPointToPointLocked(batch_);
    const bool joins = queue_.empty() && isPointToPoint(request.spec.kind);
    lock.unlock();
    if (joins) {
      request.algorithm = options.algorithm;
      Status status = runner_.runPointToPoint(batch_, &request, nullptr);
      finishInline();
      return status;
    }
    // Without a call of the caller's in the group, every status goes to a Work.
    (void)runner_.runPointToPoint(batch_, nullptr, nullptr);
    lock.lock();
  }
  lock.unlock();
  Status status = runner_.run(request, options.algorithm);
  finishInline();
  return status;
}

void CallQueue::takeQueuedPointToPoint(std::vector<OpRequest>& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  takeQueuedPointToPointLocked(out);
}

void CallQueue::takeQueuedPointToPointLocked(std::vector<OpRequest>& out) {
  while (!queue_.empty() && isPointToPoint(queue_.front().spec.kind)) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
}

void CallQueue::runFrontLocked(std::unique_lock<std::mutex>& lock) {
  if (isPointToPoint(queue_.front().spec.kind)) {
    takeQueuedPointToPointLocked(batch_);
    lock.unlock();
    // Calls that other threads queue meanwhile join the group: a receive here may need a
    // send queued after it. Every status goes to a Work.
    (void)runner_.runPointToPoint(batch_, nullptr, this);
  } else {
    OpRequest request = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    Status status = runner_.run(request, request.algorithm);
    request.work->complete(std::move(status));
    recycleArrays(request);
  }
  lock.lock();
}

bool CallQueue::runQueuedUntil(const WorkState& work) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (queue_.empty()) return false;
  if (workerBusy_ || inlineBusy_) {
    // The thread running calls now may stop before this wait's own (a wait stops at its
    // call), leaving it to the worker: no grace for it then (waitForDueCall).
    hurry_ = true;
    return false;
  }
  inlineBusy_ = true;
  while (!work.done() && !queue_.empty()) runFrontLocked(lock);
  finishInlineLocked(lock);
  return true;
}

void CallQueue::finishInline() {
  std::unique_lock<std::mutex> lock(mutex_);
  finishInlineLocked(lock);
}

void CallQueue::finishInlineLocked(std::unique_lock<std::mutex>& lock) {
  inlineBusy_ = false;
  // Only the worker waits for inlineBusy_ (the destructor joins it, so without one
  // nobody), and only to take queued operations or to stop: waking it for nothing after
  // every blocking call cost a futex wake and two context switches per call (2 ranks,
  // 8 B all-reduce after one async call: 0.4-1.6 us against 0.13).
  const bool wake = worker_.joinable() && (!queue_.empty() || stopping_);
  lock.unlock();
  if (wake) cv_.notify_all();
}

Work CallQueue::submit(OpRequest request, const CallOptions& options) {
  std::shared_ptr<WorkState> work = newWork();
  const Status valid = runner_.check(request);
  if (!valid.ok()) {
    work->complete(valid);
    return Work(work);
  }
  issue(request, options);
  request.work = work;
  request.algorithm = options.algorithm;
  const bool p2p = isPointToPoint(request.spec.kind);
  bool busy = false;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(request));
    queued_.fetch_add(1, std::memory_order_relaxed);
    if (!worker_.joinable()) {
      worker_ = startPrefaultedThread([this] { workerLoop(); });
      workerStarted_ = true;
    }
    busy = workerBusy_ || inlineBusy_;
    // A napping worker finds the call when its nap ends (waitForDueCall): waking it now
    // would cost the two scheduler round trips that a wait running the call saves.
    wake = !setup_.deferToWaits || workerAsleep_;
  }
  if (wake) cv_.notify_all();
  // A worker or waiter driving point-to-point calls takes this one into its group: wake it.
  if (p2p && busy) runner_.interruptWait();
  return Work(work);
}

void CallQueue::workerLoop() {
  // Started by submit() under mutex_: the thread that started it goes on from here (a
  // blocking lock is this thread's first wait, base/stack.h).
  threadSettled();
  while (true) {
    std::unique_lock<std::mutex> lock(mutex_);
    const auto ready = [&] {
      return (stopping_ && !inlineBusy_) || (!queue_.empty() && !inlineBusy_);
    };
    if (setup_.deferToWaits) {
      waitForDueCall(lock);
    } else {
      if (!ready() && setup_.workSpinNs > 0) {
        // Where the worker has a core of its own (setup_.workSpinNs), it polls for the next async
        // call for a while before it sleeps: a loop of async calls then costs no wake-up.
        const std::uint64_t seen = queued_.load(std::memory_order_relaxed);
        lock.unlock();
        const Deadline until = Deadline::after(std::chrono::nanoseconds(setup_.workSpinNs));
        while (queued_.load(std::memory_order_relaxed) == seen && !until.expired()) cpuRelax();
        lock.lock();
      }
      // Idle wait for work: woken by submit() or by the destructor (stopping_).
      cv_.wait(lock, ready);
    }
    if (queue_.empty()) return;  // stopping, nothing left
    workerBusy_ = true;
    runFrontLocked(lock);
    workerBusy_ = false;
    // The calls queued meanwhile are due now (a thread waiting for one sleeps until this
    // thread runs it), and a call nobody waited for may have company: look again soon.
    napStartQueued_ = queued_.load(std::memory_order_relaxed);
    napNs_ = kNapMinNs;
    lock.unlock();
    cv_.notify_all();
  }
}

void CallQueue::waitForDueCall(std::unique_lock<std::mutex>& lock) {
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
      while (!stopping_ && queue_.empty()) cv_.wait_for(lock, std::chrono::seconds(10));
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
    cv_.wait_for(lock, std::chrono::nanoseconds(nap));
    if (queued_.load(std::memory_order_relaxed) == seen) {
      quietNs += std::chrono::duration_cast<std::chrono::nanoseconds>(Deadline::Clock::now() - start)
                     .count();
    } else {
      quietNs = 0;
    }
    napNs_ = std::min(2 * napNs_, kNapMaxNs);
  }
}

void CallQueue::runSoon() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (queue_.empty() || !setup_.deferToWaits) return;
    hurry_ = true;
  }
  cv_.notify_all();
}

std::shared_ptr<WorkState> CallQueue::newWork() {
  // Enough for a pipeline of async calls in flight; past it, states are allocated and
  // freed as before. They are made a few at a time: the state of the call before is often
  // still held for a moment by the thread that completed it, so a loop of call-and-wait
  // needs two, and the second must not wait for the first time that happens.
#if defined(TUTTI_TSAN)
  // ThreadSanitizer does not model the fence below (and refuses to build it): under it,
  // every call gets a state of its own, as before the pool.
  return std::make_shared<WorkState>(setup_.workSpinNs, workLink_);
#else
  constexpr std::size_t kPooledWork = 64;
  constexpr std::size_t kWorkBatch = 4;
  std::lock_guard<std::mutex> lock(workPoolMutex_);
  for (const std::shared_ptr<WorkState>& w : workPool_) {
    if (w.use_count() != 1) continue;
    // Whoever dropped the last other reference (a Work handle, the worker's request) did
    // so after its last use of the state, with a release decrement this acquires.
    std::atomic_thread_fence(std::memory_order_acquire);
    w->reset();
    return w;
  }
  auto w = std::make_shared<WorkState>(setup_.workSpinNs, workLink_);
  if (workPool_.size() >= kPooledWork) return w;
  workPool_.push_back(w);
  for (std::size_t i = 1; i < kWorkBatch && workPool_.size() < kPooledWork; ++i)
    workPool_.push_back(std::make_shared<WorkState>(setup_.workSpinNs, workLink_));
  return w;
#endif
}

std::vector<std::uint64_t> CallQueue::arrayOf(std::span<const std::size_t> values) {
  std::vector<std::uint64_t> out;
  if (values.empty()) return out;
  {
    std::lock_guard<std::mutex> lock(arraysMutex_);
    if (!spareArrays_.empty()) {
      out = std::move(spareArrays_.back());
      spareArrays_.pop_back();
    }
  }
  out.assign(values.begin(), values.end());
  return out;
}

void CallQueue::recycleArrays(OpRequest& request) {
  // An alltoallv holds four; a few calls' worth queued covers the async pipelines too.
  constexpr std::size_t kSpareArrays = 16;
  CollectiveSpec& s = request.spec;
  // Every call but the v-collectives' has none: no lock taken for them.
  if (s.counts.capacity() == 0 && s.displs.capacity() == 0 && s.recvCounts.capacity() == 0 &&
      s.recvDispls.capacity() == 0)
    return;
  std::lock_guard<std::mutex> lock(arraysMutex_);
  for (std::vector<std::uint64_t>* v : {&s.counts, &s.displs, &s.recvCounts, &s.recvDispls}) {
    if (v->capacity() == 0 || spareArrays_.size() >= kSpareArrays) continue;
    v->clear();
    spareArrays_.push_back(std::move(*v));
    v->clear();
  }
}

}  // namespace tutti::detail
