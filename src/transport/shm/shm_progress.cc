// Progress and waiting in the shared-memory transport: one pass over every link (rings,
// deferred reads, sends, acks, peers that left, flat contributions to the call checker),
// and the driving thread's wait: spin, then keep or yield the core, then sleep on the
// segment's doorbell, watching the few words a peer's publication changes (Marks). Set-up
// is shm_transport.cc's, failures and leaving shm_failure.cc's, flat exchanges flat.cc's.

#include <sched.h>

#include <algorithm>
#include <chrono>

#include "base/assert.h"
#include "base/log.h"
#include "base/strings.h"
#include "transport/call_checker.h"
#include "transport/shm/shm_link.h"
#include "transport/shm/shm_transport.h"
#include "transport/tag.h"

namespace tutti::shm {
namespace {

// How often a waiting rank looks for peers that died.
constexpr std::int64_t kPeerCheckNs = 50'000'000;
// How often a transport in use looks for mappings of peers' buffers that were freed.
constexpr std::int64_t kFreedCheckNs = 1'000'000'000;
// Progress passes between two reads of the clock (a pass without work is ~20 ns).
constexpr std::uint64_t kPassesPerClockRead = 256;

std::int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void ShmTransport::onProgress() {
  progress_.notify();
  own_.ring();
}

void ShmTransport::finish(DoneList& done) {
  if (!done.empty()) progress_.notify();
  done.clear();
}

bool ShmTransport::progressLocked(DoneList& done) {
  checkAbortLocked(done);
  if (failed_) return false;
  bool moved = false;
  for (int r : local_) {
    if (failed_) break;
    ShmLink& l = *links_[static_cast<std::size_t>(r)];
    moved = l.drainLocked(done) || moved;
    moved = l.startDeferredLocked(done) || moved;
    moved = l.pumpSendsLocked(done) || moved;
    moved = l.checkAcksLocked(done) || moved;
    moved = l.checkHelpedLocked(done) || moved;
    // A peer that left sends nothing more: whatever this rank still expects of it is lost.
    // Not while a peer is writing an abort record here (state 1): the leaver may have left
    // because of it, and the record, once written, names the cause (a writer that dies
    // halfway is found dead by checkPeersLocked).
    if (!failed_ && peers_[static_cast<std::size_t>(r)].base() != nullptr &&
        own_.left(r).load(std::memory_order_acquire) != 0 && l.needsPeerLocked() &&
        own_.control().abortState.load(std::memory_order_acquire) != 1) {
      // Drain once more: its last messages were published before it left.
      moved = l.drainLocked(done) || moved;
      if (l.needsPeerLocked())
        failLocked(Status(ErrorCode::kPeerFailure,
                          strFormat("rank %d left the communicator (destroyed it) while rank %d "
                                    "still needed it", r, rank_),
                          r),
                   done);
    }
  }
  if (!failed_) checkFlatArrivalsLocked(done);
  // Looking for dead peers costs a system call; the clock is read every few hundred passes.
  if (++passes_ % kPassesPerClockRead == 0) checkPeersIfDueLocked(done);
  return moved;
}

void ShmTransport::checkPeersIfDueLocked(DoneList& done) {
  const std::int64_t now = nowNs();
  if (now - lastPeerCheckNs_ < kPeerCheckNs) return;
  lastPeerCheckNs_ = now;
  checkPeersLocked(done);
  // Peers' buffers they freed since: their memory goes once nobody maps it.
  if (peerBuffers_.size() > 0 && now - lastFreedCheckNs_ >= kFreedCheckNs) {
    lastFreedCheckNs_ = now;
    peerBuffers_.dropFreed();
  }
}

void ShmTransport::checkAbortLocked(DoneList& done) {
  Control& c = own_.control();
  if (failed_ || c.abortState.load(std::memory_order_acquire) != 2) return;
  TUTTI_INFO(kShm, "rank %d aborted the communicator", c.abortFrom);
  // failLocked adopts the record: the root cause as the first rank to see it worded it.
  failLocked(Status(ErrorCode::kAborted, "aborted by a peer"), done);
}

void ShmTransport::checkFlatArrivalsLocked(DoneList& done) {
  CallChecker* checker = callChecker();
  if (checker == nullptr) return;
  for (int r : local_) {
    for (std::uint64_t parity = 0; parity < 2; ++parity) {
      const FlatSlot& slot = peers_[static_cast<std::size_t>(r)].flat(parity);
      std::uint64_t& checked = flatChecked_[2 * static_cast<std::size_t>(r) + parity];
      const std::uint64_t seq = slot.seq.load(std::memory_order_acquire);
      if (seq == 0 || seq == checked) continue;
      const CallStamp stamp = slot.stamp();
      // The owner may be rewriting the slot for a later call (it zeroes seq first): then
      // the stamp read may be the later call's, and the slot is looked at on a later pass.
      if (slot.seq.load(std::memory_order_relaxed) != seq) continue;  // stamp() acquires
      checked = seq;
      Status conflict = checker->onArrival(r, collectiveTagBase(0, seq - 1), stamp);
      if (!conflict.ok()) {
        failLocked(conflict, done);
        return;
      }
    }
  }
}

void ShmTransport::mark(Marks& marks) const {
  // Sequentially consistent: ordered after the sleeping flag's store before a sleep.
  marks.bell = own_.control().doorbell.load(std::memory_order_seq_cst);
  marks.arrived = 0;
  marks.tails = 0;
  marks.flat = 0;
  for (int r : local_) {
    const ShmLink& l = *links_[static_cast<std::size_t>(r)];
    marks.arrived += l.arrivals();
    if (marks.sending) marks.tails += l.outTail();
    if (flatWatch_ >= 0)
      marks.flat += peers_[static_cast<std::size_t>(r)].flat(static_cast<std::uint64_t>(flatWatch_))
                        .seq.load(std::memory_order_seq_cst);
  }
}

bool ShmTransport::changedSince(const Marks& marks, std::uint32_t seen) const {
  if (own_.control().doorbell.load(std::memory_order_acquire) != marks.bell ||
      progress_.snapshot() != seen)
    return true;
  Marks now;
  now.sending = marks.sending;
  mark(now);
  return now.arrived != marks.arrived || (marks.sending && now.tails != marks.tails) ||
         now.flat != marks.flat;
}

bool ShmTransport::markAndPass(Marks& marks, DoneList& done) {
  // The tails are read only when the last pass left sends waiting for room. A send that
  // starts waiting in this pass makes the next changedSince() differ (no tails in these
  // marks) and the pass after it reads them.
  mark(marks);
  bool moved;
  {
    std::lock_guard<SpinLock> lock(mutex_);
    moved = progressLocked(done);
    marks.sending = false;
    for (int r : local_)
      marks.sending = marks.sending || links_[static_cast<std::size_t>(r)]->sendsPendingLocked();
  }
  finish(done);
  return moved;
}

ShmTransport::WaitTimes ShmTransport::waitTimes() const {
  WaitTimes w;
  w.polls = waitsPolled_.load(std::memory_order_relaxed);
  w.yields = waitsYielded_.load(std::memory_order_relaxed);
  w.sleeps = waitSleeps_.load(std::memory_order_relaxed);
  w.polledNs = waitPolledNs_.load(std::memory_order_relaxed);
  w.yieldedNs = waitYieldedNs_.load(std::memory_order_relaxed);
  w.sleptNs = waitSleptNs_.load(std::memory_order_relaxed);
  return w;
}

// After the spin the rank keeps its core for options_.pollNs before it sleeps: where every
// rank of the host has a core the window simply extends the spin; else it yields, since the
// rank this one waits for is often runnable on this very core, and yielding hands it the
// core at once, where a futex sleep costs two context switches and a wake-up. A rank that
// polls is not preempted by other work when its message lands, and a vCPU that keeps
// running is not a halted one that the hypervisor must wake. Bounded, so an idle rank still
// ends up asleep (when nothing else is runnable, sched_yield returns at once).
//
// The clock is first read once the wait has lasted a while (64 turns of the spin, or the
// first yield): most waits for a small message end before that, and a read costs 20-100 ns
// here. The budgets count from that first read. What the wait has done since, for
// waitTimes(): polling, then yielding; a wait that ends before the clock starts counts
// nothing.
class ShmTransport::WaitClock {
 public:
  WaitClock(ShmTransport& transport, std::int64_t spinNs)
      : t_(transport),
        spinBudget_(std::max<std::int64_t>(spinNs, 0) +
                    (transport.coreEach_ ? transport.options_.pollNs : 0)),
        yieldBudget_(transport.coreEach_ ? 0 : transport.options_.pollNs) {}

  /// Bytes are flowing (a long message streams through the ring): the budgets count time
  /// with nothing to do, so they start again. Sleeping now would cost the peer a wake-up
  /// per batch of slots and this rank a scheduler round trip.
  void restart() {
    end();
    started_ = false;
    spins_ = 0;
    yields_ = 0;
  }

  /// One turn of the spin, unless it has no budget or its budget is spent (false: no turn).
  /// Every 64th turn reads the clock and sets `*full`: a pass is due (it finds dead peers)
  /// and the deadline is looked at (the sleep reports it); other turns look at the marks.
  bool spinTurn(const Deadline& deadline, bool* full) {
    if (spinBudget_ <= 0) return false;
    const bool clockTurn = ++spins_ % 64 == 0;
    if (clockTurn) start();
    if (clockTurn && nowNs() >= spinUntil_) return false;
    cpuRelax();
    if (clockTurn && deadline.expired()) spinUntil_ = yieldUntil_ = 0;
    *full = clockTurn;
    return true;
  }

  /// One yield of the core, while the window for them lasts (false: none). Every 64th sets
  /// `*full` and looks at the deadline.
  bool yieldTurn(const Deadline& deadline, bool* full) {
    if (yieldBudget_ <= 0 || nowNs() >= yieldUntil_) return false;
    if (phase_ != Phase::kYield) enter(Phase::kYield, nowNs());
    sched_yield();
    *full = ++yields_ % 64 == 0;
    if (*full && deadline.expired()) yieldUntil_ = 0;
    return true;
  }

  void start() {
    if (started_) return;
    started_ = true;
    const std::int64_t now = nowNs();
    spinUntil_ = now + spinBudget_;
    yieldUntil_ = spinUntil_ + yieldBudget_;
    if (spinBudget_ > 0) enter(Phase::kPoll, now);
  }

  /// Counts the phase under way, if any.
  void end() {
    if (phase_ != Phase::kNone) close(nowNs());
  }

 private:
  enum class Phase { kNone, kPoll, kYield };

  void close(std::int64_t now) {
    if (phase_ == Phase::kPoll) t_.waitPolledNs_.fetch_add(now - phaseAt_, std::memory_order_relaxed);
    if (phase_ == Phase::kYield) t_.waitYieldedNs_.fetch_add(now - phaseAt_, std::memory_order_relaxed);
    phase_ = Phase::kNone;
  }

  void enter(Phase next, std::int64_t now) {
    if (phase_ == next) return;
    close(now);
    phase_ = next;
    phaseAt_ = now;
    if (next == Phase::kPoll) t_.waitsPolled_.fetch_add(1, std::memory_order_relaxed);
    if (next == Phase::kYield) t_.waitsYielded_.fetch_add(1, std::memory_order_relaxed);
  }

  ShmTransport& t_;
  const std::int64_t spinBudget_;
  const std::int64_t yieldBudget_;
  std::int64_t spinUntil_ = 0;
  std::int64_t yieldUntil_ = 0;
  bool started_ = false;
  Phase phase_ = Phase::kNone;
  std::int64_t phaseAt_ = 0;
  std::uint64_t spins_ = 0;
  std::uint64_t yields_ = 0;
};

bool ShmTransport::waitForProgress(std::uint32_t seen, Deadline deadline, std::int64_t spinNs) {
  WaitClock clock(*this, spinNs);
  DoneList done;
  Marks marks;
  bool look = true;  // a pass is due
  bool full = false;
  // The partner's look is a system call: every 4th turn of the spin (about 0.1-0.5 us of
  // turns) and every yield, itself a system call.
  std::uint32_t turns = 0;
  while (true) {
    if (look) {
      const bool moved = markAndPass(marks, done);
      if (waitEnded(marks, seen)) {
        clock.end();
        return true;
      }
      if (moved) {
        clock.restart();
        continue;
      }
    }
    if (clock.spinTurn(deadline, &full)) {
      if (partner_ != nullptr && ++turns % 4 == 0) partner_->poll();
      look = full || changedSince(marks, seen);
      continue;
    }
    clock.start();
    if (clock.yieldTurn(deadline, &full)) {
      if (partner_ != nullptr) partner_->poll();
      look = full || changedSince(marks, seen);
      continue;
    }
    look = true;
    clock.end();
    const bool handedOver = partner_ != nullptr && partner_->beforeSleep();
    const WakeUp woken = sleepOnDoorbell(marks, seen, deadline, done);
    if (partner_ != nullptr) partner_->afterSleep(handedOver);
    if (woken != WakeUp::kAgain) return woken == WakeUp::kEnded;
  }
}

ShmTransport::WakeUp ShmTransport::sleepOnDoorbell(Marks& marks, std::uint32_t seen,
                                                   Deadline deadline, DoneList& done) {
  // A peer publishes, then rings; reading the bell before the last look means a ring after
  // that look changes it and the wait returns at once.
  Control& c = own_.control();
  c.sleeping.store(1, std::memory_order_seq_cst);
  const bool movedLate = markAndPass(marks, done);
  if (movedLate || waitEnded(marks, seen)) {
    c.sleeping.store(0, std::memory_order_relaxed);
    return waitEnded(marks, seen) ? WakeUp::kEnded : WakeUp::kAgain;
  }
  if (deadline.expired()) {
    c.sleeping.store(0, std::memory_order_relaxed);
    return WakeUp::kExpired;
  }
  const std::int64_t remaining =
      deadline.isNever() ? kPeerCheckNs
                         : std::chrono::duration_cast<std::chrono::nanoseconds>(deadline.remaining()).count();
  waitSleeps_.fetch_add(1, std::memory_order_relaxed);
  const std::int64_t asleepAt = nowNs();
  sharedFutexWait(&c.doorbell, marks.bell, std::clamp<std::int64_t>(remaining, 0, kPeerCheckNs));
  waitSleptNs_.fetch_add(nowNs() - asleepAt, std::memory_order_relaxed);
  c.sleeping.store(0, std::memory_order_relaxed);
  {
    std::lock_guard<SpinLock> lock(mutex_);
    checkPeersIfDueLocked(done);
  }
  finish(done);
  return WakeUp::kAgain;
}

void ShmTransport::readStrays(std::uint64_t seq) {
  const Tag call = collectiveTagBase(0, seq);
  for (int r : local_) {
    if (!links_[static_cast<std::size_t>(r)]->holdsEarlierCall(call)) continue;
    DoneList done;
    {
      std::lock_guard<SpinLock> lock(mutex_);
      progressLocked(done);
    }
    finish(done);
    return;
  }
}

}  // namespace tutti::shm
