#include "base/wait.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <thread>
#include <vector>

#include "base/cpus.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace tutti {

int usableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  const int listed = sched_getaffinity(0, sizeof(set), &set) == 0 ? CPU_COUNT(&set) : 1;
  return std::min(listed, quotaCores());
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

namespace {

std::int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::int64_t measureWakeLatencyNs(int trials, int gapUs) {
  // Two threads on two different cores of this process's mask, as a sleeping rank and the
  // rank that wakes it would be: the sleeper waits on `ping`; the waker stamps the clock and
  // wakes it, the sleeper stamps the clock when it runs again and answers on `pong`, where
  // the waker sleeps in turn. Between trials the waker pauses (a timed sleep) so that the
  // sleeper is back asleep in the kernel, and its core idle, when woken.
  const std::vector<int> cpus = allowedCpuList();
  if (cpus.size() < 2) return -1;
  auto pin = [](int cpu) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
  };
  trials = std::max(trials, 1);
  std::atomic<std::uint32_t> ping{0}, pong{0};
  std::atomic<std::int64_t> wokeAt{0};
  std::atomic<bool> quit{false};
  const Deadline bound = Deadline::after(std::chrono::seconds(2));
  std::thread sleeper([&] {
    pin(cpus[1]);
    for (std::uint32_t seen = 0;;) {
      while (ping.load(std::memory_order_acquire) == seen && !quit.load(std::memory_order_acquire))
        if (!futexWait(&ping, seen, bound)) break;
      if (quit.load(std::memory_order_acquire) || ping.load(std::memory_order_acquire) == seen)
        return;
      wokeAt.store(steadyNs(), std::memory_order_relaxed);
      seen = ping.load(std::memory_order_acquire);
      pong.store(seen, std::memory_order_release);
      futexWakeAll(&pong);
    }
  });
  std::vector<std::int64_t> samples;
  samples.reserve(static_cast<std::size_t>(trials));
  std::thread waker([&] {
    pin(cpus[0]);
    for (std::uint32_t i = 1; i <= static_cast<std::uint32_t>(trials) && !bound.expired(); ++i) {
      std::this_thread::sleep_for(std::chrono::microseconds(gapUs));
      const std::int64_t start = steadyNs();
      ping.store(i, std::memory_order_release);
      futexWakeAll(&ping);
      while (pong.load(std::memory_order_acquire) != i)
        if (!futexWait(&pong, pong.load(std::memory_order_acquire), bound)) break;
      if (pong.load(std::memory_order_acquire) != i) break;
      samples.push_back(wokeAt.load(std::memory_order_relaxed) - start);
    }
    quit.store(true, std::memory_order_release);
    ping.fetch_add(1, std::memory_order_release);
    futexWakeAll(&ping);
  });
  waker.join();
  sleeper.join();
  if (samples.empty()) return -1;
  std::nth_element(samples.begin(), samples.begin() + static_cast<std::ptrdiff_t>(samples.size() / 2),
                   samples.end());
  return samples[samples.size() / 2];
}

std::int64_t calibratedSpinNs() {
  // Spinning for as long as blocking costs, and then blocking, never spends more than twice
  // what the better of the two choices would have for that wait (the classic bound for
  // spin-then-block). Blocking costs the waiter its wake-up, and more: the sleep's own
  // system call, the waker's FUTEX_WAKE or write, the caches the sleep lost; twice the
  // wake-up covers them. The measurement: two threads on two cores, as two ranks are
  // (8-byte all-reduce over TCP, 2 ranks, on a VM whose wake-up reads 40-45 us: a 20 us
  // spin 1.3x the time of 50, 100 and 1000 us, docs/performance.md). Bounded both ways:
  // never under the fixed budget it replaces, never long enough to matter to an idle rank.
  static const std::int64_t budget = [] {
    const std::int64_t latency = measureWakeLatencyNs(15, 200);
    if (latency <= 0) return kDefaultSpinNs;
    return std::clamp<std::int64_t>(2 * latency, kMinSpinNs, kMaxSpinNs);
  }();
  return budget;
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
