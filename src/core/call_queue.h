#pragma once
// CallQueue: the order in which a communicator's calls run and the thread each runs on.
// Owns the issue order (sequence numbers, deadlines), the queue of async calls and its
// worker thread, async progress by waiting threads (QueueRunner), and the Work handles.
// It decides when and where a call runs, never what it runs (CallQueue::Runner does).
//
// Calls run in issue order: on the calling thread when nothing is queued (blocking calls),
// or on the worker thread (async calls, and blocking calls issued while async ones are
// pending). A thread that waits on a Work runs queued calls itself when nobody else does
// (runQueuedUntil). Point-to-point calls issued back to back run together as a group.
// Where the worker has no core of its own (deferToWaits), it leaves each call a grace
// period for a wait to run it, and looks for calls in naps (waitForDueCall).

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "base/ring_queue.h"
#include "core/op_request.h"
#include "core/work_state.h"
#include "tutti/communicator.h"
#include "tutti/work.h"

namespace tutti::detail {

class CallQueue final : public QueueRunner {
 public:
  /// What runs the calls (the communicator). One thread at a time calls run() and
  /// runPointToPoint(), handed over under the queue's lock.
  class Runner {
   public:
    /// Checks a blocking call, issues it (CallQueue::issue) and runs it, on this thread,
    /// with no other thread running calls.
    virtual Status runNow(OpRequest& request, const CallOptions& options) = 0;
    /// Checks `request`'s arguments before it is queued (the issuing thread). An error
    /// refuses it.
    virtual Status check(OpRequest& request) = 0;
    /// Runs a checked and issued call; `requested`: the algorithm its options force.
    virtual Status run(OpRequest& request, std::string_view requested) = 0;
    /// Runs `batch` (point-to-point calls, in issue order, emptied) and then `blocking` (the
    /// caller's own, when not null) together; completes the batch's Work and returns the
    /// blocking call's status. `absorb`: calls queued meanwhile join (the worker's groups).
    virtual Status runPointToPoint(std::vector<OpRequest>& batch, OpRequest* blocking,
                                   CallQueue* absorb) = 0;
    /// Makes a wait for progress on another thread return soon (a call joins its group).
    virtual void interruptWait() = 0;

   protected:
    ~Runner() = default;
  };

  struct Setup {
    std::chrono::milliseconds timeout{0};  // a call's deadline, unless its options say
    std::int64_t workSpinNs = 0;           // how long waits on Work handles poll
    bool deferToWaits = false;             // async calls wait for a waiting thread first
  };

  CallQueue(Runner& runner, Setup setup);
  ~CallQueue();
  /// Lets queued calls finish (by their deadlines) and joins the worker; waits on Work
  /// handles no longer run calls. Idempotent.
  void stop();
  CallQueue(const CallQueue&) = delete;
  CallQueue& operator=(const CallQueue&) = delete;

  /// Checks, issues and runs a blocking call in issue order.
  Status runBlocking(OpRequest&& request, const CallOptions& options);
  /// Checks and issues an async call; its Work completes once it ran.
  Work submit(OpRequest request, const CallOptions& options);

  /// Sets the request's issue time, deadline and sequence number: the issue order. The
  /// issuing thread, for every call, before it runs or is queued.
  void issue(OpRequest& request, const CallOptions& options);

  /// Moves the point-to-point calls at the front of the queue (up to the first collective)
  /// to the back of `out`: a group running takes them in.
  void takeQueuedPointToPoint(std::vector<OpRequest>& out);

  /// A vector holding `values` (empty for none), reusing a spare one's capacity: the
  /// v-collectives' arrays, kept with their request.
  std::vector<std::uint64_t> arrayOf(std::span<const std::size_t> values);
  /// Takes `request`'s arrays back as spares once it has run.
  void recycleArrays(OpRequest& request);

  /// Runs queued operations on a thread waiting for `work` (QueueRunner).
  bool runQueuedUntil(const WorkState& work) override;
  /// Has the worker run the queued operations without their grace (QueueRunner).
  void runSoon() override;

 private:
  /// Runs a checked and issued blocking call behind the queued ones, in issue order:
  /// here when the worker is idle, else on the worker while this thread waits.
  Status runBehindQueued(OpRequest& request, const CallOptions& options);
  /// Runs the queue's first call, or its first point-to-point calls as a group, with
  /// `lock` released meanwhile; statuses go to their Works.
  void runFrontLocked(std::unique_lock<std::mutex>& lock);
  /// The end of an inline run: lets the worker start again.
  void finishInline();
  void finishInlineLocked(std::unique_lock<std::mutex>& lock);
  void workerLoop();
  /// The worker's wait for a call to run where calls wait for their waits (deferToWaits):
  /// returns, holding `lock`, when stopping or the front call is due. A call is due once it
  /// has been queued for a whole nap of the worker (or at once when a wait asks, hurry_): a
  /// thread that waits for it meanwhile runs it itself (runQueuedUntil), saving the wake-up
  /// of the worker and then its own. submit() does not wake a napping worker. Naps lengthen
  /// from kNapMinNs to kNapMaxNs while every call is waited for; after kDeepSleepAfterNs
  /// without a call the worker sleeps until submit() wakes it.
  void waitForDueCall(std::unique_lock<std::mutex>& lock);
  void takeQueuedPointToPointLocked(std::vector<OpRequest>& out);
  /// A fresh WorkState: a pooled one that only the pool holds, else a new one.
  std::shared_ptr<WorkState> newWork();

  Runner& runner_;
  const Setup setup_;
  std::uint64_t nextSeq_ = 0;  // touched only by the issuing thread

  std::mutex mutex_;
  std::condition_variable cv_;
  RingQueue<OpRequest> queue_;
  std::vector<OpRequest> batch_;  // the point-to-point group taken off the queue
  bool workerBusy_ = false;
  bool inlineBusy_ = false;
  bool workerStarted_ = false;  // read and written only by the issuing thread
  bool stopping_ = false;
  // Calls ever queued (read without the lock by the worker's poll, workerLoop()).
  std::atomic<std::uint64_t> queued_{0};
  static constexpr std::int64_t kNapMinNs = 100'000;
  static constexpr std::int64_t kNapMaxNs = 2'000'000;
  static constexpr std::int64_t kDeepSleepAfterNs = 100'000'000;
  std::int64_t napNs_ = kNapMinNs;
  std::uint64_t napStartQueued_ = 0;  // queued_ when the last nap began: older calls are due
  bool hurry_ = false;                // a wait wants the front call run without its grace
  bool workerAsleep_ = false;         // asleep until submit() wakes it
  std::thread worker_;

  // What waits on this queue's Work handles reach it through (WorkState::wait).
  const std::shared_ptr<WorkQueueLink> workLink_ = std::make_shared<WorkQueueLink>(this);
  std::mutex workPoolMutex_;
  std::vector<std::shared_ptr<WorkState>> workPool_;
  // Spare vectors for arrayOf(), with their capacity (the issuing thread takes them, the
  // thread running calls may give them back).
  std::mutex arraysMutex_;
  std::vector<std::vector<std::uint64_t>> spareArrays_;
};

}  // namespace tutti::detail
