// Unit tests of the pure rank maths in src/algorithms/patterns/ (ring.h, butterfly.h).

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "algorithms/patterns/butterfly.h"
#include "algorithms/patterns/ring.h"

namespace tutti {
namespace {

constexpr int kWorlds[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 31, 32, 33, 64, 100, 1024};

TEST(RingPattern, NeighboursAreInverse) {
  static_assert(ring::next(3, 4) == 0 && ring::prev(0, 4) == 3);
  for (int n : kWorlds) {
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(ring::prev(ring::next(r, n), n), r);
      EXPECT_EQ(ring::next(ring::prev(r, n), n), r);
    }
  }
}

TEST(RingPattern, AllgatherChunksArriveFromPrevAndCoverAll) {
  for (int n : kWorlds) {
    for (int r = 0; r < n; ++r) {
      std::set<int> seen;
      EXPECT_EQ(ring::allgatherChunk(r, n, 0), r);  // starts with its own block
      for (int t = 0; t < n; ++t) {
        seen.insert(ring::allgatherChunk(r, n, t));
        // What r handles at step t >= 1 is what prev handled at step t-1.
        if (t > 0) {
          EXPECT_EQ(ring::allgatherChunk(r, n, t),
                    ring::allgatherChunk(ring::prev(r, n), n, t - 1));
        }
      }
      EXPECT_EQ(seen.size(), static_cast<std::size_t>(n));
    }
  }
}

TEST(RingPattern, ReduceScatterEndsWithOwnChunk) {
  for (int n : kWorlds) {
    for (int r = 0; r < n; ++r) {
      std::set<int> seen;
      for (int t = 0; t < n; ++t) {
        seen.insert(ring::reduceScatterChunk(r, n, t));
        if (t > 0) {
          EXPECT_EQ(ring::reduceScatterChunk(r, n, t),
                    ring::reduceScatterChunk(ring::prev(r, n), n, t - 1));
        }
      }
      EXPECT_EQ(ring::reduceScatterChunk(r, n, n - 1), r);
      EXPECT_EQ(seen.size(), static_cast<std::size_t>(n));
    }
  }
}

TEST(ButterflyPattern, CoreSizeAndRounds) {
  static_assert(butterfly::coreSize(1) == 1 && butterfly::rounds(1) == 0);
  static_assert(butterfly::coreSize(6) == 4 && butterfly::rounds(6) == 2);
  for (int n : kWorlds) {
    const int p = butterfly::coreSize(n);
    EXPECT_LE(p, n);
    EXPECT_GT(2 * p, n);
    EXPECT_EQ(p & (p - 1), 0) << n;
    EXPECT_EQ(1 << butterfly::rounds(n), p);
  }
}

TEST(ButterflyPattern, FoldPairsEveryExtraRankWithADistinctCoreRank) {
  for (int n : kWorlds) {
    const int p = butterfly::coreSize(n);
    int paired = 0;
    for (int r = 0; r < n; ++r) {
      const int f = butterfly::foldPartner(r, n);
      EXPECT_EQ(butterfly::isExtra(r, n), r >= p);
      if (f < 0) {
        EXPECT_FALSE(butterfly::isExtra(r, n));
        continue;
      }
      EXPECT_EQ(butterfly::foldPartner(f, n), r);  // an involution
      EXPECT_NE(butterfly::isExtra(r, n), butterfly::isExtra(f, n));
      if (butterfly::isExtra(r, n)) ++paired;
    }
    EXPECT_EQ(paired, n - p);
  }
}

TEST(ButterflyPattern, DoublingGroupsDoubleAndPartnersHoldTheOtherHalf) {
  for (int p = 1; p <= 1024; p *= 2) {
    const int rounds = butterfly::rounds(p);
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(butterfly::doublingHeld(r, 0), (butterfly::RankRange{r, r + 1}));
      for (int k = 0; k < rounds; ++k) {
        const int q = butterfly::doublingPartner(r, k);
        ASSERT_GE(q, 0);
        ASSERT_LT(q, p);
        EXPECT_EQ(butterfly::doublingPartner(q, k), r);
        const auto mine = butterfly::doublingHeld(r, k);
        const auto theirs = butterfly::doublingHeld(q, k);
        const auto next = butterfly::doublingHeld(r, k + 1);
        // Disjoint halves whose union is the next group, the same for both partners.
        EXPECT_EQ(std::min(mine.begin, theirs.begin), next.begin);
        EXPECT_EQ(std::max(mine.end, theirs.end), next.end);
        EXPECT_TRUE(mine.end == theirs.begin || theirs.end == mine.begin);
        EXPECT_EQ(butterfly::doublingHeld(q, k + 1), next);
      }
      EXPECT_EQ(butterfly::doublingHeld(r, rounds), (butterfly::RankRange{0, p}));
    }
  }
}

TEST(ButterflyPattern, HalvingKeepsOwnHalfAndGivesThePartnersHalf) {
  for (int p = 1; p <= 1024; p *= 2) {
    const int rounds = butterfly::rounds(p);
    for (int r = 0; r < p; ++r) {
      EXPECT_EQ(butterfly::halvingRange(r, p, 0), (butterfly::RankRange{0, p}));
      for (int k = 0; k < rounds; ++k) {
        const int q = butterfly::halvingPartner(r, p, k);
        EXPECT_EQ(butterfly::halvingPartner(q, p, k), r);
        const auto range = butterfly::halvingRange(r, p, k);
        EXPECT_EQ(butterfly::halvingRange(q, p, k), range);  // partners share the range...
        const auto keep = butterfly::halvingRange(r, p, k + 1);
        const auto give = butterfly::halvingRange(q, p, k + 1);
        // ...and split it into the half with r and the half with q.
        EXPECT_TRUE(keep.begin <= r && r < keep.end);
        EXPECT_TRUE(give.begin <= q && q < give.end);
        EXPECT_EQ(keep.end - keep.begin, give.end - give.begin);
        EXPECT_EQ(std::min(keep.begin, give.begin), range.begin);
        EXPECT_EQ(std::max(keep.end, give.end), range.end);
      }
      EXPECT_EQ(butterfly::halvingRange(r, p, rounds), (butterfly::RankRange{r, r + 1}));
    }
  }
}

}  // namespace
}  // namespace tutti
