// SparePool (transport/spare_pool.h): records given back are taken again with their
// buffers, so buffering early messages stops allocating once the pool holds what the
// pattern needs; every growth, and only a growth, is marked (base/pool_growth.h).

#include "transport/spare_pool.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "base/ring_queue.h"

namespace tutti {
namespace {

struct Record {
  std::vector<char> data;
  int field = 0;
};

std::uint64_t growths() { return poolGrowth().done; }

TEST(SparePool, TakesBackItsRecordsWithTheirBuffersAndMarksOnlyGrowth) {
  SparePool<Record> pool;
  std::uint64_t before = growths();
  std::unique_ptr<Record> a = pool.take(4096);
  EXPECT_EQ(growths(), before + 2);  // a new record, and its buffer
  ASSERT_GE(a->data.size(), 4096u);
  a->field = 7;
  const Record* first = a.get();
  const char* buffer = a->data.data();
  pool.give(std::move(a), 1 << 20);

  before = growths();
  std::unique_ptr<Record> b = pool.take(100);  // smaller: the same record, reset
  EXPECT_EQ(growths(), before);
  EXPECT_EQ(b.get(), first);
  EXPECT_EQ(b->data.data(), buffer);
  EXPECT_GE(b->data.size(), 4096u);  // never shrinks: its pages stay touched
  EXPECT_EQ(b->field, 0);
  pool.give(std::move(b), 1 << 20);

  before = growths();
  std::unique_ptr<Record> c = pool.take(8192);  // larger: the same record, grown
  EXPECT_EQ(growths(), before + 1);
  EXPECT_EQ(c.get(), first);
  EXPECT_GE(c->data.size(), 8192u);
  pool.give(std::move(c), 1 << 20);

  // A steady pattern of two at a time stops growing once both are pooled.
  for (int round = 0; round < 3; ++round) {
    before = growths();
    std::unique_ptr<Record> x = pool.take(8192);
    std::unique_ptr<Record> y = pool.take(8192);
    if (round > 0) {
      EXPECT_EQ(growths(), before) << round;
    }
    pool.give(std::move(x), 1 << 20);
    pool.give(std::move(y), 1 << 20);
  }
}

TEST(SparePool, KeepsNoMoreThanItsBudget) {
  SparePool<Record> pool;
  std::unique_ptr<Record> big = pool.take(1 << 16);
  pool.give(std::move(big), 1 << 10);  // over the budget: freed
  const std::uint64_t before = growths();
  std::unique_ptr<Record> again = pool.take(16);
  EXPECT_EQ(growths(), before + 2);  // nothing was kept
}

TEST(SparePool, PushEarlyMarksAListThatGrows) {
  RingQueue<int> q;
  q.reserve(2);
  std::uint64_t before = growths();
  pushEarly(q, 1);
  pushEarly(q, 2);
  EXPECT_EQ(growths(), before);
  pushEarly(q, 3);
  EXPECT_EQ(growths(), before + 1);
}

}  // namespace
}  // namespace tutti
