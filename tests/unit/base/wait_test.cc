#include "base/wait.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
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

}  // namespace
}  // namespace tutti
