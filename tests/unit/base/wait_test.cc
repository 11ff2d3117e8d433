#include "base/wait.h"

#include <gtest/gtest.h>

#include <atomic>
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
