// The rank maths of patterns/bruck.h and patterns/pairwise.h, checked by playing the
// patterns out on block labels for many world sizes, independently of the schedules.

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "algorithms/patterns/bruck.h"
#include "algorithms/patterns/pairwise.h"

namespace tutti {
namespace {

std::vector<int> worlds() {
  std::vector<int> out;
  for (int n = 1; n <= 70; ++n) out.push_back(n);
  for (int n : {127, 128, 129, 1000, 1024}) out.push_back(n);
  return out;
}

TEST(BruckPattern, RoundsAreCeilLog2) {
  EXPECT_EQ(bruck::rounds(1), 0);
  EXPECT_EQ(bruck::rounds(2), 1);
  EXPECT_EQ(bruck::rounds(3), 2);
  EXPECT_EQ(bruck::rounds(4), 2);
  EXPECT_EQ(bruck::rounds(5), 3);
  EXPECT_EQ(bruck::rounds(1024), 10);
  EXPECT_EQ(bruck::rounds(1025), 11);
  for (int n : worlds()) {
    const int k = bruck::rounds(n);
    EXPECT_GE(1 << k, n);
    if (k > 0) {
      EXPECT_LT(1 << (k - 1), n);
    }
  }
}

TEST(BruckPattern, WrapIsModuloIntoRange) {
  EXPECT_EQ(bruck::wrap(-1, 5), 4);
  EXPECT_EQ(bruck::wrap(-5, 5), 0);
  EXPECT_EQ(bruck::wrap(-11, 5), 4);
  EXPECT_EQ(bruck::wrap(7, 5), 2);
}

// Plays the allgather out: slots[r][i] is the block rank r holds in slot i (-1: none yet).
// Every send must carry slots the sender already holds, every receive must land on empty
// slots, and at the end slot i of rank r holds block (r + i) mod n: every block exactly once.
TEST(BruckPattern, AllgatherGathersEveryBlockOnce) {
  for (int n : worlds()) {
    if (n > 200) continue;  // O(n^2 log n) here; the schedules are checked at 1024 elsewhere
    std::vector<std::vector<int>> slots(static_cast<std::size_t>(n),
                                        std::vector<int>(static_cast<std::size_t>(n), -1));
    for (int r = 0; r < n; ++r) slots[static_cast<std::size_t>(r)][0] = r;
    int held = 1;
    for (int k = 0; k < bruck::rounds(n); ++k) {
      const int d = bruck::distance(k);
      const int blocks = bruck::allgatherBlocks(n, k);
      ASSERT_GE(blocks, 1);
      ASSERT_LE(blocks, held) << "n=" << n << " k=" << k;
      auto before = slots;
      for (int r = 0; r < n; ++r) {
        const int from = bruck::allgatherRecvPeer(n, r, k);
        ASSERT_EQ(bruck::allgatherSendPeer(n, from, k), r);  // the sender sends to r
        for (int i = 0; i < blocks; ++i) {
          auto& dst = slots[static_cast<std::size_t>(r)][static_cast<std::size_t>(d + i)];
          ASSERT_EQ(dst, -1) << "n=" << n << " k=" << k << " r=" << r << " slot " << d + i;
          dst = before[static_cast<std::size_t>(from)][static_cast<std::size_t>(i)];
          ASSERT_NE(dst, -1);
        }
      }
      held += blocks;
    }
    ASSERT_EQ(held, n);
    for (int r = 0; r < n; ++r) {
      std::set<int> distinct;
      for (int i = 0; i < n; ++i) {
        EXPECT_EQ(slots[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)], (r + i) % n);
        distinct.insert(slots[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)]);
      }
      EXPECT_EQ(distinct.size(), static_cast<std::size_t>(n));
    }
  }
}

TEST(BruckPattern, AlltoallRunsAreExactlyTheSlotsWithBitK) {
  for (int n : worlds()) {
    for (int k = 0; k < bruck::rounds(n); ++k) {
      std::vector<bool> covered(static_cast<std::size_t>(n), false);
      int total = 0;
      for (int j = 0; j < bruck::alltoallRunCount(n, k); ++j) {
        const bruck::SlotRun run = bruck::alltoallRun(n, k, j);
        ASSERT_GE(run.length, 1);
        ASSERT_LE(run.length, bruck::distance(k));
        ASSERT_LE(run.first + run.length, n);
        for (int i = run.first; i < run.first + run.length; ++i) {
          EXPECT_TRUE(bruck::alltoallMoves(k, i)) << "n=" << n << " k=" << k << " slot " << i;
          covered[static_cast<std::size_t>(i)] = true;
        }
        total += run.length;
      }
      for (int i = 0; i < n; ++i)
        EXPECT_EQ(covered[static_cast<std::size_t>(i)], bruck::alltoallMoves(k, i))
            << n << " " << k << " " << i;
      EXPECT_EQ(total, bruck::alltoallBlocks(n, k));
      EXPECT_LE(total, n / 2) << "n=" << n << " k=" << k;
      EXPECT_GE(total, 1);
    }
  }
}

// Plays the alltoall out on (source, destination) labels: after the rounds, slot i of rank r
// holds the block from (r - i) mod n for r, so every rank holds one block from every rank.
TEST(BruckPattern, AlltoallDeliversEveryBlockToItsDestination) {
  for (int n : worlds()) {
    if (n > 200) continue;
    using Block = std::pair<int, int>;  // (from, to)
    std::vector<std::vector<Block>> slots(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
      for (int i = 0; i < n; ++i)
        slots[static_cast<std::size_t>(r)].push_back({r, bruck::alltoallInputBlock(n, r, i)});
    }
    for (int k = 0; k < bruck::rounds(n); ++k) {
      auto before = slots;
      for (int r = 0; r < n; ++r) {
        const int from = bruck::alltoallRecvPeer(n, r, k);
        ASSERT_EQ(bruck::alltoallSendPeer(n, from, k), r);
        for (int i = 0; i < n; ++i) {
          if (bruck::alltoallMoves(k, i))
            slots[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)] =
                before[static_cast<std::size_t>(from)][static_cast<std::size_t>(i)];
        }
      }
    }
    for (int r = 0; r < n; ++r) {
      std::vector<int> sources;
      for (int i = 0; i < n; ++i) {
        const Block b = slots[static_cast<std::size_t>(r)][static_cast<std::size_t>(i)];
        EXPECT_EQ(b.second, r) << "n=" << n << " rank " << r << " slot " << i;
        EXPECT_EQ(b.first, bruck::alltoallOutputBlock(n, r, i));
        sources.push_back(b.first);
      }
      EXPECT_EQ(std::set<int>(sources.begin(), sources.end()).size(), static_cast<std::size_t>(n));
    }
  }
}

TEST(PairwisePattern, EveryRoundIsAPermutationAndEveryPairMeetsOnce) {
  for (int n : worlds()) {
    if (n > 200) continue;
    EXPECT_EQ(pairwise::rounds(n), n - 1);
    std::set<std::pair<int, int>> pairs;
    for (int k = 1; k < n; ++k) {
      std::vector<int> receivers(static_cast<std::size_t>(n), 0);
      for (int r = 0; r < n; ++r) {
        const int to = pairwise::sendPeer(n, r, k);
        ASSERT_NE(to, r);
        ASSERT_EQ(pairwise::recvPeer(n, to, k), r);  // the receiver expects r this round
        ASSERT_EQ(pairwise::sendRound(n, r, to), k);
        ++receivers[static_cast<std::size_t>(to)];
        EXPECT_TRUE(pairs.insert({r, to}).second) << "n=" << n << " " << r << "->" << to;
      }
      for (int c : receivers) EXPECT_EQ(c, 1) << "n=" << n << " round " << k;
    }
    EXPECT_EQ(pairs.size(), static_cast<std::size_t>(n) * static_cast<std::size_t>(n - 1));
  }
}

TEST(PairwisePattern, InPlaceScratchRoundsAreTheFirstHalf) {
  // The block received in round k is sent in round n - k: scratch until then iff n - k >= k.
  for (int n = 2; n <= 40; ++n) {
    for (int k = 1; k < n; ++k) {
      const int r = 0;
      const int sentIn = pairwise::sendRound(n, r, pairwise::recvPeer(n, r, k));
      EXPECT_EQ(sentIn, n - k);
      EXPECT_EQ(pairwise::inPlaceNeedsScratch(n, k), sentIn >= k) << n << " " << k;
    }
  }
}

}  // namespace
}  // namespace tutti
