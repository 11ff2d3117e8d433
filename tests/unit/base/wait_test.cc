#include "base/wait.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <mutex>
#include <thread>

namespace tutti {
namespace {

TEST(WaitSignal, TimesOutWhenNothingHappens) {
  WaitSignal signal;
  auto seen = signal.snapshot();
  EXPECT_FALSE(signal.waitChange(seen, Deadline::after(std::chrono::milliseconds(20)), 1000));
}

TEST(WaitSignal, WakesASleepingWaiter) {
  WaitSignal signal;
  std::atomic<bool> flag{false};
  std::thread producer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    flag.store(true);
    signal.notify();
  });
  auto deadline = Deadline::after(std::chrono::seconds(30));
  while (!flag.load()) {
    auto seen = signal.snapshot();
    if (flag.load()) break;
    ASSERT_TRUE(signal.waitChange(seen, deadline, 0));
  }
  producer.join();
  EXPECT_TRUE(flag.load());
}

TEST(WaitSignal, ChangeBeforeWaitIsNotLost) {
  WaitSignal signal;
  auto seen = signal.snapshot();
  signal.notify();
  EXPECT_TRUE(signal.waitChange(seen, Deadline::after(std::chrono::seconds(5)), 0));
}

TEST(SpinBudget, TheWakeUpLatencyIsMeasuredAndTheBudgetBounded) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  const std::int64_t latency = measureWakeLatencyNs(5, 50);
  if (CPU_COUNT(&mask) < 2) {
    EXPECT_EQ(latency, -1);  // no second core to put the sleeper on
  } else {
    EXPECT_GT(latency, 0);  // threads that answered, a clock that moved
    EXPECT_LT(latency, 2'000'000'000);
  }
  const std::int64_t budget = calibratedSpinNs();
  EXPECT_GE(budget, kMinSpinNs);
  EXPECT_LE(budget, kMaxSpinNs);
  EXPECT_EQ(calibratedSpinNs(), budget);  // measured once
}

TEST(Deadline, Basics) {
  EXPECT_TRUE(Deadline::never().isNever());
  EXPECT_EQ(Deadline::never().pollTimeoutMs(), -1);
  EXPECT_FALSE(Deadline::never().expired());
  EXPECT_TRUE(Deadline::afterSeconds(0).expired());
  auto d = Deadline::afterSeconds(10);
  EXPECT_GT(d.pollTimeoutMs(), 9000);
  EXPECT_LE(d.pollTimeoutMs(), 10000);
  EXPECT_EQ(Deadline::earliest(d, Deadline::never()).at(), d.at());
}

}  // namespace
}  // namespace tutti

namespace tutti {
namespace {

// Two threads increment one plain counter under the lock: every increment must survive
// (a lost one means two threads were inside at once; TSan also checks the ordering).
TEST(SpinLock, ExcludesAndPublishesBetweenThreads) {
  SpinLock lock;
  std::uint64_t counter = 0;  // guarded by lock
  constexpr int kPerThread = 200000;
  auto work = [&] {
    for (int i = 0; i < kPerThread; ++i) {
      std::lock_guard<SpinLock> guard(lock);
      ++counter;
    }
  };
  std::thread other(work);
  work();
  other.join();
  std::lock_guard<SpinLock> guard(lock);
  EXPECT_EQ(counter, 2u * kPerThread);
}

// A holder that sleeps while holding it (preempted, on a busy machine) does not stop the
// waiter for good: the waiter gets the lock once it is released.
TEST(SpinLock, WaiterGetsItAfterASlowHolder) {
  SpinLock lock;
  std::atomic<bool> held{false};
  int value = 0;  // guarded by lock
  std::thread holder([&] {
    std::lock_guard<SpinLock> guard(lock);
    held.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    value = 7;
  });
  const Deadline bound = Deadline::afterSeconds(10);
  while (!held.load() && !bound.expired()) std::this_thread::yield();
  ASSERT_TRUE(held.load());
  {
    std::lock_guard<SpinLock> guard(lock);
    EXPECT_EQ(value, 7);
  }
  holder.join();
}


#if defined(__x86_64__)
// The processor's answer, read independently of CPUID: the kernel's flag list.
TEST(PrefetchForWrite, DetectionAgreesWithTheKernelsCpuFlags) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  ASSERT_TRUE(cpuinfo.good());
  bool listed = false;
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    for (std::string flag; words >> flag;) listed = listed || flag == "3dnowprefetch";
    break;
  }
  EXPECT_EQ(cpuHasPrefetchW(), listed);
}
#endif

// A hint: it changes no byte, and on a page that may only be read it does not fault.
TEST(PrefetchForWrite, ChangesNothingAndDoesNotFaultOnAReadOnlyPage) {
  const long page = sysconf(_SC_PAGESIZE);
  void* mem = mmap(nullptr, static_cast<std::size_t>(page), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mem, MAP_FAILED);
  auto* bytes = static_cast<unsigned char*>(mem);
  for (long i = 0; i < page; ++i) bytes[i] = static_cast<unsigned char>(i * 7);
  ASSERT_EQ(mprotect(mem, static_cast<std::size_t>(page), PROT_READ), 0);
  for (long i = 0; i < page; i += 64) prefetchForWrite(bytes + i);
  for (long i = 0; i < page; ++i) ASSERT_EQ(bytes[i], static_cast<unsigned char>(i * 7)) << i;
  munmap(mem, static_cast<std::size_t>(page));
}

}  // namespace
}  // namespace tutti
