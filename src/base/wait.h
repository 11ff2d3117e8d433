#pragma once
// Spin-then-block waiting. A waiter spins for a short budget (cheap when the event is
// imminent and a core is free) and then sleeps on a futex, so that more ranks than cores
// still make progress and an idle rank burns no CPU (DESIGN.md 5).

#include <atomic>
#include <cstdint>

#include "tutti/deadline.h"

namespace tutti {

/// Blocks while *word == expected, until woken or the deadline passes. Returns false on
/// timeout. Spurious wake-ups are possible; callers re-check their condition.
bool futexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected, Deadline deadline);
void futexWakeAll(std::atomic<std::uint32_t>* word);

/// CPU relax hint for spin loops.
inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

/// The cores this process may run on: its affinity mask, or fewer where its control group's
/// CPU quota gives less time than that (cpus.h); 1 if the mask cannot be read. Whether
/// every rank of a host has a core of its own decides spinning and who copies.
int usableCores();

/// The median time, over `trials` tries, from a FUTEX_WAKE to the woken thread running, with
/// the sleeper and the waker on two different cores of this process's mask and `gapUs`
/// between tries: what a rank that sleeps pays when its peer's message comes. Takes two
/// threads and about `trials` times (gapUs + 50) us; -1 where the mask has one core or the
/// threads did not answer (bounded at 2 s).
std::int64_t measureWakeLatencyNs(int trials, int gapUs = 200);

/// The spin budget a waiter with a core of its own uses before it sleeps: twice this host's
/// wake-up latency (measureWakeLatencyNs, once per process on first use), within
/// [kMinSpinNs, kMaxSpinNs]; kDefaultSpinNs where it could not be measured.
std::int64_t calibratedSpinNs();
inline constexpr std::int64_t kMinSpinNs = 20'000;
inline constexpr std::int64_t kMaxSpinNs = 200'000;
inline constexpr std::int64_t kDefaultSpinNs = 20'000;

/// True where the processor has PREFETCHW (CPUID 0x80000001, ECX bit 8); read once.
bool cpuHasPrefetchW();

/// Asks for the cache line at `p` in a state this core may write (an exclusive copy), so a
/// store to it later does not wait for the other cores' copies to be invalidated. On x86
/// that is PREFETCHW: __builtin_prefetch(p, 1) emits it only where the compile target
/// already has it and a read prefetch otherwise, which leaves the line shared; here it is
/// issued where the processor reports it, and a read prefetch elsewhere.
inline void prefetchForWrite(const void* p) {
#if defined(__x86_64__)
  static const bool hasPrefetchW = cpuHasPrefetchW();
  if (hasPrefetchW) {
    asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
    return;
  }
#endif
  __builtin_prefetch(p, 1, 3);
}

/// A lock for short critical sections that one thread takes nearly always (a transport's
/// state, driven by the thread running the calls; abort() from another thread is rare).
/// Free, lock() is one atomic exchange and unlock() a plain release store, where a mutex
/// pays a locked instruction for each and a call into the C library. Taken, lock() polls
/// briefly and then yields the core on each try, so a holder that was preempted (more
/// ranks than cores) gets it back; it never sleeps, and so suits only sections that do not
/// block. Satisfies BasicLockable (std::lock_guard).
class SpinLock {
 public:
  void lock() {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    lockContended();
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  void lockContended();
  std::atomic<bool> locked_{false};
};

/// A sequence counter that waiters watch for change. Producers call notify() after they
/// publish a state change; a consumer takes a snapshot(), re-checks its condition, and
/// calls waitChange(snapshot, ...) if it still needs to wait. No wake-up is lost: a
/// notify() between snapshot and wait changes the counter.
class WaitSignal {
 public:
  std::uint32_t snapshot() const { return seq_.load(std::memory_order_acquire); }

  void notify() {
    seq_.fetch_add(1, std::memory_order_acq_rel);
    if (sleepers_.load(std::memory_order_acquire) > 0) futexWakeAll(&seq_);
  }

  /// Waits until the counter differs from `observed` or the deadline passes; spins for
  /// about `spinNs` first. Returns false on timeout.
  bool waitChange(std::uint32_t observed, Deadline deadline, std::int64_t spinNs);

 private:
  std::atomic<std::uint32_t> seq_{0};
  std::atomic<std::uint32_t> sleepers_{0};
};

}  // namespace tutti
