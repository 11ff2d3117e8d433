// RingQueue (base/ring_queue.h): first in, first out across wrap-arounds and growth; erase
// keeps the order; freed slots release what they held; a queue that turns over within
// its capacity never allocates again. And the pool-growth marks (base/pool_growth.h).

#include "base/ring_queue.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <random>

#include "base/pool_growth.h"

namespace tutti {
namespace {

TEST(RingQueue, MatchesADequeThroughRandomPushesPopsAndErases) {
  RingQueue<int> q;
  std::deque<int> expected;
  std::mt19937 rng(7);
  int next = 0;
  for (int step = 0; step < 20000; ++step) {
    const unsigned what = rng() % 10;
    if (what < 5 || expected.empty()) {
      q.push_back(next);
      expected.push_back(next);
      ++next;
    } else if (what < 8) {
      ASSERT_EQ(q.front(), expected.front());
      q.pop_front();
      expected.pop_front();
    } else {
      const std::size_t at = rng() % expected.size();
      auto it = q.begin();
      for (std::size_t i = 0; i < at; ++i) ++it;
      auto after = q.erase(it);
      expected.erase(expected.begin() + static_cast<std::ptrdiff_t>(at));
      ASSERT_EQ(after.index(), at);
    }
    ASSERT_EQ(q.size(), expected.size());
    ASSERT_TRUE(std::equal(q.begin(), q.end(), expected.begin(), expected.end())) << step;
    if (!expected.empty()) {
      ASSERT_EQ(q.back(), expected.back());
    }
  }
}

TEST(RingQueue, FindsWithStandardAlgorithmsAndErasesWhatTheyFind) {
  RingQueue<int> q;
  for (int i = 0; i < 12; ++i) q.push_back(i);
  for (int i = 0; i < 5; ++i) q.pop_front();  // the live part now wraps around
  for (int i = 12; i < 16; ++i) q.push_back(i);
  auto it = std::find_if(q.begin(), q.end(), [](int v) { return v == 9; });
  ASSERT_NE(it, q.end());
  q.erase(it);
  EXPECT_FALSE(std::any_of(q.begin(), q.end(), [](int v) { return v == 9; }));
  const std::deque<int> expected = {5, 6, 7, 8, 10, 11, 12, 13, 14, 15};
  EXPECT_TRUE(std::equal(q.begin(), q.end(), expected.begin(), expected.end()));
}

TEST(RingQueue, FreedSlotsReleaseWhatTheyHeld) {
  auto shared = std::make_shared<int>(1);
  RingQueue<std::shared_ptr<int>> q;
  q.push_back(shared);
  q.push_back(shared);
  q.push_back(shared);
  EXPECT_EQ(shared.use_count(), 4);
  q.pop_front();
  EXPECT_EQ(shared.use_count(), 3);
  q.erase(q.begin());
  EXPECT_EQ(shared.use_count(), 2);
  q.clear();
  EXPECT_EQ(shared.use_count(), 1);
}

TEST(RingQueue, TurningOverWithinItsCapacityNeverGrowsIt) {
  RingQueue<int> q;
  q.reserve(32);
  EXPECT_EQ(q.capacity(), 32u);
  for (int round = 0; round < 1000; ++round) {
    for (int i = 0; i < 32; ++i) q.push_back(i);
    for (int i = 0; i < 31; ++i) q.pop_front();
    q.erase(q.begin());
    ASSERT_EQ(q.capacity(), 32u);
  }
  // Past the capacity it grows, keeping the order.
  for (int i = 0; i < 40; ++i) q.push_back(i);
  EXPECT_GE(q.capacity(), 40u);
  for (int i = 0; i < 40; ++i) {
    ASSERT_EQ(q.front(), i);
    q.pop_front();
  }
}

TEST(PoolGrowth, AGrowthShowsAsUnderWayUntilItEndsThenAsDone) {
  const PoolGrowth before = poolGrowth();
  {
    GrowingPool growing;
    EXPECT_EQ(poolGrowth().underWay, before.underWay + 1);
    EXPECT_EQ(poolGrowth().done, before.done);
  }
  EXPECT_EQ(poolGrowth().underWay, before.underWay);
  EXPECT_EQ(poolGrowth().done, before.done + 1);
}

}  // namespace
}  // namespace tutti
