#include "base/wait.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tutti {

int usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  return sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
}

bool cpuHasPrefetchW() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) == 0) return false;
  return (ecx & (1u << 8)) != 0;
#else
  return false;
#endif
}

bool cpuIsAmd() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid(0, &eax, &ebx, &ecx, &edx) == 0) return false;
  // The twelve characters come in EBX, EDX, ECX order.
  return ebx == 0x68747541u && edx == 0x69746e65u && ecx == 0x444d4163u;  // "Auth" "enti" "cAMD"
#else
  return false;
#endif
}

bool futexWait(std::atomic<std::uint32_t>* word, std::uint32_t expected, Deadline deadline) {
  // FUTEX_WAIT takes a relative timeout; we recompute it from the deadline on each call.
  // Sleeps are capped so that a wake-up lost to a bug costs at most this long, never a hang.
  constexpr auto kMaxSleep = std::chrono::milliseconds(100);
  auto remaining = deadline.remaining();
  if (!deadline.isNever() && remaining <= Deadline::Clock::duration::zero()) return false;
  auto sleep = std::min<Deadline::Clock::duration>(remaining, kMaxSleep);
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(sleep).count();
  timespec ts{static_cast<time_t>(ns / 1000000000), static_cast<long>(ns % 1000000000)};
  long rc = syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAIT_PRIVATE,
                    expected, &ts, nullptr, 0);
  (void)rc;  // EAGAIN (value changed), EINTR, ETIMEDOUT: the caller re-checks in all cases
  return !deadline.expired();
}

void SpinLock::lockContended() {
  // Poll (reading, not writing, so the holder keeps the line) a few times, then hand the
  // core over between tries: the holder may be waiting for it.
  for (int spins = 0;; ++spins) {
    if (!locked_.load(std::memory_order_relaxed) &&
        !locked_.exchange(true, std::memory_order_acquire))
      return;
    if (spins < 64)
      cpuRelax();
    else
      sched_yield();
  }
}

void futexWakeAll(std::atomic<std::uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<std::uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX,
          nullptr, nullptr, 0);
}

bool WaitSignal::waitChange(std::uint32_t observed, Deadline deadline, std::int64_t spinNs) {
  if (seq_.load(std::memory_order_acquire) != observed) return true;
  if (spinNs > 0) {
    auto spinUntil = Deadline::Clock::now() + std::chrono::nanoseconds(spinNs);
    int iterations = 0;
    while (true) {
      for (int i = 0; i < 64; ++i) {
        if (seq_.load(std::memory_order_acquire) != observed) return true;
        cpuRelax();
      }
      if (++iterations % 16 == 0 && Deadline::Clock::now() >= spinUntil) break;
    }
  }
  sleepers_.fetch_add(1, std::memory_order_acq_rel);
  bool inTime = true;
  while (seq_.load(std::memory_order_acquire) == observed) {
    if (!futexWait(&seq_, observed, deadline)) {
      inTime = seq_.load(std::memory_order_acquire) != observed;
      break;
    }
  }
  sleepers_.fetch_sub(1, std::memory_order_acq_rel);
  return inTime;
}

}  // namespace tutti
