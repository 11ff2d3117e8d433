// Every algorithm of the rooted collectives and of all-reduce (the list from the registry,
// one test per entry) through the schedule verifier in more shapes than the registry-wide
// verify_all_test.cc: every root class (0, 3, n/2, n-1), worlds 31-33, pipelining with 1,
// 5, 7 and 64 elements per segment, and gatherv/scatterv layouts whose blocks lie out of
// rank order (the trees' staged path at the root). Then the tree algorithms' rank maths
// (binomial, double_binary_tree, reduce_bcast) at 1,024 ranks, and their measured costs
// (VerifyStats, scatter_allgather's too) against each file's documented cost.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/partition.h"
#include "algorithms/patterns/binomial_tree.h"
#include "base/strings.h"
#include "common/registry.h"
#include "schedule/verifier.h"

namespace tutti {
namespace {

using Builder = Schedule (*)(const CollectiveSpec&);

std::string describe(const CollectiveSpec& s) {
  return strFormat("%s n=%d root=%d count=%llu segment=%llu %s", collectiveName(s.kind), s.size,
                   s.root, static_cast<unsigned long long>(s.count),
                   static_cast<unsigned long long>(s.segmentCount),
                   s.inPlace ? "in-place" : "out-of-place");
}

// Builds every rank's schedule from `base` and verifies them; "" or what went wrong.
std::string runWorld(Builder build, const CollectiveSpec& base, VerifyStats* stats = nullptr) {
  std::vector<CollectiveSpec> specs;
  std::vector<Schedule> schedules;
  for (int r = 0; r < base.size; ++r) {
    CollectiveSpec spec = base;
    spec.rank = r;
    if (!validateSpec(spec).ok()) return describe(base) + ": invalid spec in the test";
    specs.push_back(spec);
    schedules.push_back(build(spec));
  }
  Status status = verifySchedules(specs, schedules, {}, stats);
  return status.ok() ? "" : describe(base) + ": " + status.message();
}

std::vector<int> worlds() {
  std::vector<int> out(17);
  std::iota(out.begin(), out.end(), 1);
  for (int n : {31, 32, 33, 64}) out.push_back(n);
  return out;
}

std::vector<int> roots(int n) {
  std::vector<int> out = {0};
  if (n > 1) out.push_back(n - 1);
  if (n > 2) out.push_back(n / 2);
  if (n > 4) out.push_back(3);
  return out;
}

std::vector<std::uint64_t> counts(int n) {
  const auto u = static_cast<std::uint64_t>(n);
  return {0, 1, u > 1 ? u - 1 : 2, u + 1, 97, 1001};
}

// Segment sizes that keep the number of steps reasonable: one element per segment only for
// small counts.
std::vector<std::uint64_t> segments(std::uint64_t count) {
  if (count <= 32) return {1, 5, 1u << 20};
  return {7, 64, 1u << 20};
}

// Every world, root, count, segment size and placement of a uniform collective.
std::string sweep(Builder build, Collective kind, bool rooted) {
  std::string failures;
  for (int n : worlds()) {
    for (int root : rooted ? roots(n) : std::vector<int>{0}) {
      for (std::uint64_t count : counts(n)) {
        // Gather and scatter move n blocks per call: keep their totals small.
        if ((kind == Collective::kGather || kind == Collective::kScatter) && count > 97) continue;
        for (std::uint64_t segment : segments(count)) {
          for (bool inPlace : {false, true}) {
            CollectiveSpec spec;
            spec.kind = kind;
            spec.size = n;
            spec.root = root;
            spec.count = count;
            spec.segmentCount = segment;
            spec.inPlace = inPlace;
            std::string err = runWorld(build, spec);
            if (!err.empty()) failures += err + "\n";
            if (failures.size() > 4000) return failures;
          }
        }
      }
    }
  }
  return failures;
}

using test::RegisteredAlgorithm;

std::string nameOf(const ::testing::TestParamInfo<RegisteredAlgorithm>& param) {
  return param.param.testName();
}

class EveryRootAndSegment : public ::testing::TestWithParam<RegisteredAlgorithm> {};

TEST_P(EveryRootAndSegment, EveryWorldRootCountAndPlacement) {
  const RegisteredAlgorithm& e = GetParam();
  EXPECT_EQ(sweep(e.info->build, e.kind, isRooted(e.kind)), "");
}

INSTANTIATE_TEST_SUITE_P(Registry, EveryRootAndSegment,
                         ::testing::ValuesIn(test::registeredAlgorithms(
                             {Collective::kBroadcast, Collective::kReduce, Collective::kGather,
                              Collective::kScatter, Collective::kAllReduce})),
                         nameOf);

// The v-variants: zero counts, blocks out of rank order, gaps, all-empty.
std::vector<std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>>> vLayouts(int n) {
  const auto size = static_cast<std::size_t>(n);
  std::vector<std::pair<std::vector<std::uint64_t>, std::vector<std::uint64_t>>> out;
  std::vector<std::uint64_t> counts(size), displs(size);
  auto prefix = [&](const std::vector<std::size_t>& order, std::uint64_t gap) {
    std::uint64_t at = 0;
    for (std::size_t i : order) {
      displs[i] = at;
      at += counts[i] + gap;
    }
    out.emplace_back(counts, displs);
  };
  std::vector<std::size_t> order(size), reversed(size), shuffled(size);
  std::iota(order.begin(), order.end(), 0);
  std::reverse_copy(order.begin(), order.end(), reversed.begin());
  for (std::size_t i = 0; i < size; ++i) shuffled[i] = (i * 5 + 3) % size;
  if (std::gcd(size, std::size_t{5}) != 1) shuffled = reversed;
  for (std::size_t i = 0; i < size; ++i) counts[i] = (i * 7 + 2) % 5;  // some zero
  prefix(order, 0);
  prefix(reversed, 0);
  prefix(order, 3);
  prefix(shuffled, 1);
  for (std::size_t i = 0; i < size; ++i) counts[i] = 3 + i % 2;
  prefix(order, 0);
  prefix(shuffled, 0);
  std::fill(counts.begin(), counts.end(), 0);
  prefix(order, 0);
  return out;
}

std::string sweepV(Builder build, Collective kind) {
  std::string failures;
  for (int n : worlds()) {
    for (int root : roots(n)) {
      for (const auto& [counts, displs] : vLayouts(n)) {
        for (bool inPlace : {false, true}) {
          CollectiveSpec spec;
          spec.kind = kind;
          spec.size = n;
          spec.root = root;
          spec.counts = counts;
          spec.displs = displs;
          spec.inPlace = inPlace;
          std::string err = runWorld(build, spec);
          if (!err.empty()) failures += err + "\n";
          if (failures.size() > 4000) return failures;
        }
      }
    }
  }
  return failures;
}

class VLayouts : public ::testing::TestWithParam<RegisteredAlgorithm> {};

TEST_P(VLayouts, ZeroCountsScatteredDisplacementsAndGaps) {
  EXPECT_EQ(sweepV(GetParam().info->build, GetParam().kind), "");
}

INSTANTIATE_TEST_SUITE_P(Registry, VLayouts,
                         ::testing::ValuesIn(test::registeredAlgorithms(
                             {Collective::kGatherV, Collective::kScatterV})),
                         nameOf);

// 1024 ranks, a few shapes each: the trees' maths at scale.
TEST(Trees, ThousandRanks) {
  const int n = 1024;
  for (auto [build, kind] : std::vector<std::pair<Builder, Collective>>{
           {buildBroadcastBinomial, Collective::kBroadcast},
           {buildReduceBinomial, Collective::kReduce},
           {buildGatherBinomial, Collective::kGather},
           {buildScatterBinomial, Collective::kScatter},
           {buildBroadcastDoubleBinaryTree, Collective::kBroadcast},
           {buildAllreduceDoubleBinaryTree, Collective::kAllReduce},
           {buildAllreduceReduceBcast, Collective::kAllReduce}}) {
    for (std::uint64_t count : {0u, 1u, 3u}) {
      for (int root : {0, 777}) {
        CollectiveSpec spec;
        spec.kind = kind;
        spec.size = n;
        spec.root = root;
        spec.count = count;
        spec.segmentCount = 2;
        spec.inPlace = root == 777;
        EXPECT_EQ(runWorld(build, spec), "");
      }
    }
  }
}

// Measured costs (VerifyStats) against the documented ones: messages, the most elements and
// messages one rank sends, and the critical path (the longest chain of messages that must
// follow one another; the verifier counts a rank's sends to several peers as concurrent,
// so a binomial tree's path is its height, floor(log2 n), not its ceil(log2 n) rounds).
TEST(Trees, CostsMatchTheDocumentation) {
  for (int n : {2, 3, 5, 8, 13, 16, 64}) {
    const auto k = static_cast<std::uint64_t>(ceilLog2(n));
    const auto h = static_cast<std::uint64_t>(floorLog2(n));
    const auto edges = static_cast<std::uint64_t>(n - 1);
    const std::uint64_t count = 1000, segments = 10;
    CollectiveSpec spec;
    spec.size = n;
    spec.count = count;
    spec.segmentCount = count / segments;
    spec.root = n - 1;
    VerifyStats st;

    spec.kind = Collective::kBroadcast;
    ASSERT_EQ(runWorld(buildBroadcastBinomial, spec, &st), "");
    EXPECT_EQ(st.messages, segments * edges);
    EXPECT_EQ(st.maxMessagesSentByRank, segments * k) << "the root: k children per segment";
    EXPECT_EQ(st.maxElementsSentByRank, count * k);
    EXPECT_EQ(st.criticalPathMessages, h);

    // Two trees of half the data: the root sends N, and nobody more.
    ASSERT_EQ(runWorld(buildBroadcastDoubleBinaryTree, spec, &st), "");
    EXPECT_EQ(st.maxElementsSentByRank, count) << "n=" << n;
    EXPECT_LE(st.criticalPathMessages, k);

    // Scatter then ring all-gather: nobody sends much more than 2 (n-1)/n N (the root the
    // scatter's share and its ring share; each ring chunk holds at most ceil(N/n)).
    ASSERT_EQ(runWorld(buildBroadcastScatterAllgather, spec, &st), "");
    const std::uint64_t chunk = (count + static_cast<std::uint64_t>(n) - 1) / static_cast<std::uint64_t>(n);
    EXPECT_LE(st.maxElementsSentByRank, 2 * edges * chunk) << "n=" << n;
    EXPECT_LE(st.criticalPathMessages, k + edges * segments) << "n=" << n;

    spec.kind = Collective::kReduce;
    ASSERT_EQ(runWorld(buildReduceBinomial, spec, &st), "");
    EXPECT_EQ(st.messages, segments * edges);
    EXPECT_EQ(st.maxElementsSentByRank, count) << "every rank but the root sends N once";
    EXPECT_LE(st.criticalPathMessages, k);

    spec.kind = Collective::kAllReduce;
    ASSERT_EQ(runWorld(buildAllreduceDoubleBinaryTree, spec, &st), "");
    EXPECT_LE(st.maxElementsSentByRank, 2 * count) << "n=" << n;
    EXPECT_EQ(st.messages, 2 * segments * edges) << "each half: n-1 up and n-1 down, per segment";
    // Up and down the trees (2 depth), plus one per level up: a rank takes its second
    // child's result after its first (the fixed combining order).
    EXPECT_LE(st.criticalPathMessages, 3 * k - 1) << "n=" << n;

    ASSERT_EQ(runWorld(buildAllreduceReduceBcast, spec, &st), "");
    EXPECT_EQ(st.messages, 2 * segments * edges);
    EXPECT_EQ(st.maxElementsSentByRank, count * k) << "rank 0 broadcasts to k children";
    EXPECT_LE(st.criticalPathMessages, 2 * k);

    spec.kind = Collective::kGather;
    spec.count = 10;
    ASSERT_EQ(runWorld(buildGatherBinomial, spec, &st), "");
    EXPECT_LE(st.messages, edges + 1) << "n-1, plus one for a subtree that wraps past n-1";
    EXPECT_LE(st.maxElementsSentByRank, spec.count * static_cast<std::uint64_t>(n / 2 + 1));
    EXPECT_LE(st.criticalPathMessages, k);

    spec.kind = Collective::kScatter;
    ASSERT_EQ(runWorld(buildScatterBinomial, spec, &st), "");
    EXPECT_EQ(st.maxElementsSentByRank, spec.count * edges) << "the root sends every block once";
    EXPECT_LE(st.maxMessagesSentByRank, k + 1);
    EXPECT_LE(st.criticalPathMessages, k);
  }
}

}  // namespace
}  // namespace tutti
