// The tree algorithms (binomial, double_binary_tree, reduce_bcast) run through the
// reference runner (schedule_sim.h) for many worlds, roots, counts, segment sizes and both
// placements: every output element must be what the collective's definition says, every
// send must meet its receive, no order of completion may deadlock, and every local hazard
// must be a dependency. Message and element counts are checked against each file's
// documented cost.

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/partition.h"
#include "algorithms/patterns/binomial_tree.h"
#include "base/strings.h"
#include "unit/algorithms/schedule_sim.h"

namespace tutti {
namespace {

using Builder = Schedule (*)(const CollectiveSpec&);

std::string describe(const CollectiveSpec& s) {
  return strFormat("%s n=%d root=%d count=%llu segment=%llu %s", collectiveName(s.kind), s.size,
                   s.root, static_cast<unsigned long long>(s.count),
                   static_cast<unsigned long long>(s.segmentCount),
                   s.inPlace ? "in-place" : "out-of-place");
}

// Builds every rank's schedule from `base` and runs them; "" or what went wrong.
std::string runWorld(Builder build, const CollectiveSpec& base, test::SimStats* stats = nullptr) {
  std::vector<CollectiveSpec> specs;
  std::vector<Schedule> schedules;
  for (int r = 0; r < base.size; ++r) {
    CollectiveSpec spec = base;
    spec.rank = r;
    if (!validateSpec(spec).ok()) return describe(base) + ": invalid spec in the test";
    specs.push_back(spec);
    schedules.push_back(build(spec));
  }
  std::string err = test::simulateSchedules(specs, schedules, 16, stats);
  return err.empty() ? "" : describe(base) + ": " + err;
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

// Segment sizes that keep the number of steps reasonable for the runner's O(steps^2)
// hazard check: one element per segment only for small counts.
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

TEST(BinomialBroadcast, EveryWorldRootCountAndPlacement) {
  EXPECT_EQ(sweep(buildBroadcastBinomial, Collective::kBroadcast, true), "");
}
TEST(BinomialReduce, EveryWorldRootCountAndPlacement) {
  EXPECT_EQ(sweep(buildReduceBinomial, Collective::kReduce, true), "");
}
TEST(BinomialGather, EveryWorldRootCountAndPlacement) {
  EXPECT_EQ(sweep(buildGatherBinomial, Collective::kGather, true), "");
}
TEST(BinomialScatter, EveryWorldRootCountAndPlacement) {
  EXPECT_EQ(sweep(buildScatterBinomial, Collective::kScatter, true), "");
}
TEST(DoubleBinaryTreeBroadcast, EveryWorldRootCountAndPlacement) {
  EXPECT_EQ(sweep(buildBroadcastDoubleBinaryTree, Collective::kBroadcast, true), "");
}
TEST(DoubleBinaryTreeAllreduce, EveryWorldCountAndPlacement) {
  EXPECT_EQ(sweep(buildAllreduceDoubleBinaryTree, Collective::kAllReduce, false), "");
}
TEST(ReduceBcastAllreduce, EveryWorldCountAndPlacement) {
  EXPECT_EQ(sweep(buildAllreduceReduceBcast, Collective::kAllReduce, false), "");
}

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

TEST(BinomialGatherV, ZeroCountsScatteredDisplacementsAndGaps) {
  EXPECT_EQ(sweepV(buildGatherBinomial, Collective::kGatherV), "");
}
TEST(BinomialScatterV, ZeroCountsScatteredDisplacementsAndGaps) {
  EXPECT_EQ(sweepV(buildScatterBinomial, Collective::kScatterV), "");
}

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

// Measured messages and elements against the documented costs.
TEST(Trees, CostsMatchTheDocumentation) {
  for (int n : {2, 3, 5, 8, 13, 16}) {
    const int k = ceilLog2(n);
    const std::uint64_t count = 1000, segment = 100;  // 10 segments (5 per half)
    CollectiveSpec spec;
    spec.size = n;
    spec.count = count;
    spec.segmentCount = segment;
    spec.root = n - 1;
    test::SimStats st;
    auto total = [&](const std::vector<std::uint64_t>& v) {
      return std::accumulate(v.begin(), v.end(), std::uint64_t{0});
    };
    const auto root = static_cast<std::size_t>(spec.root);

    spec.kind = Collective::kBroadcast;
    ASSERT_EQ(runWorld(buildBroadcastBinomial, spec, &st), "");
    EXPECT_EQ(st.messagesSent[root], 10u * static_cast<unsigned>(k)) << "n=" << n;
    EXPECT_EQ(st.elementsSent[root], count * static_cast<unsigned>(k));
    EXPECT_EQ(total(st.messagesSent), 10u * static_cast<unsigned>(n - 1));

    ASSERT_EQ(runWorld(buildBroadcastDoubleBinaryTree, spec, &st), "");
    EXPECT_EQ(st.elementsSent[root], count) << "n=" << n;
    for (std::uint64_t e : st.elementsSent) EXPECT_LE(e, count) << "n=" << n;
    EXPECT_EQ(total(st.elementsSent), count * static_cast<unsigned>(n - 1));

    spec.kind = Collective::kReduce;
    ASSERT_EQ(runWorld(buildReduceBinomial, spec, &st), "");
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(st.elementsSent[static_cast<std::size_t>(r)], r == spec.root ? 0 : count);

    spec.kind = Collective::kAllReduce;
    ASSERT_EQ(runWorld(buildAllreduceDoubleBinaryTree, spec, &st), "");
    for (std::uint64_t e : st.elementsSent) EXPECT_LE(e, 2 * count) << "n=" << n;
    // Up: everyone but the root sends both halves once; down: n-1 receptions of each half.
    EXPECT_EQ(total(st.elementsSent), 2 * count * static_cast<unsigned>(n - 1));

    ASSERT_EQ(runWorld(buildAllreduceReduceBcast, spec, &st), "");
    EXPECT_EQ(total(st.messagesSent), 2u * 10u * static_cast<unsigned>(n - 1));
    EXPECT_EQ(st.elementsSent[0], count * static_cast<unsigned>(k));

    spec.kind = Collective::kGather;
    spec.count = 10;
    ASSERT_EQ(runWorld(buildGatherBinomial, spec, &st), "");
    EXPECT_EQ(st.elementsSent[root], 0u);
    // Every rank sends its subtree once: the sum of subtree sizes (the root's excepted).
    std::uint64_t subtrees = 0, messages = 0;
    for (int r = 0; r < n; ++r) {
      if (r == spec.root) continue;
      subtrees += static_cast<std::uint64_t>(binomialSubtreeSize(r, spec.root, n)) * spec.count;
      messages += st.messagesSent[static_cast<std::size_t>(r)];
    }
    EXPECT_EQ(total(st.elementsSent), subtrees);
    EXPECT_LE(messages, static_cast<std::uint64_t>(n)) << "n-1, plus one for a wrapping subtree";

    spec.kind = Collective::kScatter;
    ASSERT_EQ(runWorld(buildScatterBinomial, spec, &st), "");
    EXPECT_EQ(st.elementsSent[root], spec.count * static_cast<unsigned>(n - 1));
    EXPECT_LE(st.messagesSent[root], static_cast<std::uint64_t>(k) + 1);
  }
}

// The runner itself catches what it is there to catch.
TEST(ScheduleSim, CatchesMissingDependencyDeadlockAndWrongData) {
  CollectiveSpec spec;
  spec.kind = Collective::kBroadcast;
  spec.size = 3;
  spec.count = 4;
  std::vector<CollectiveSpec> specs(3, spec);
  for (int r = 0; r < 3; ++r) specs[static_cast<std::size_t>(r)].rank = r;
  // Rank 1 forwards to rank 2 without waiting for its own receive: a race.
  auto forward = [](bool dep) {
    ScheduleBuilder b(1, 3);
    StepId got = b.recv(0, {BufferKind::kOutput, 0, 4});
    if (dep)
      b.send(2, {BufferKind::kOutput, 0, 4}, {got});
    else
      b.send(2, {BufferKind::kOutput, 0, 4});
    return std::move(b).build();
  };
  auto rootSchedule = [] {
    ScheduleBuilder b(0, 3);
    b.copy({BufferKind::kInput, 0, 4}, {BufferKind::kOutput, 0, 4});
    b.send(1, {BufferKind::kInput, 0, 4});
    return std::move(b).build();
  };
  auto leaf = [] {
    ScheduleBuilder b(2, 3);
    b.recv(1, {BufferKind::kOutput, 0, 4});
    return std::move(b).build();
  };
  EXPECT_EQ(test::simulateSchedules(specs, {rootSchedule(), forward(true), leaf()}), "");
  EXPECT_NE(
      test::simulateSchedules(specs, {rootSchedule(), forward(false), leaf()}).find("conflict"),
      std::string::npos);
  // Rank 2 waits for data nobody sends.
  auto wrongPeer = [] {
    ScheduleBuilder b(2, 3);
    b.recv(0, {BufferKind::kOutput, 0, 4});
    return std::move(b).build();
  };
  EXPECT_NE(
      test::simulateSchedules(specs, {rootSchedule(), forward(true), wrongPeer()}).find("deadlock"),
      std::string::npos);
  // The root forgets its own output.
  auto noCopy = [] {
    ScheduleBuilder b(0, 3);
    b.send(1, {BufferKind::kInput, 0, 4});
    return std::move(b).build();
  };
  EXPECT_NE(test::simulateSchedules(specs, {noCopy(), forward(true), leaf()}).find("rank 0 output"),
            std::string::npos);
}

// The direct algorithms (already proven over TCP) pass the runner: a check of the runner.
TEST(ScheduleSim, AgreesWithTheDirectAlgorithms) {
  for (int n : {1, 2, 5}) {
    for (Collective kind : {Collective::kBroadcast, Collective::kReduce, Collective::kGather,
                            Collective::kScatter, Collective::kAllReduce}) {
      for (bool inPlace : {false, true}) {
        CollectiveSpec spec;
        spec.kind = kind;
        spec.size = n;
        spec.root = n - 1;
        spec.count = 7;
        spec.inPlace = inPlace;
        EXPECT_EQ(runWorld(buildDirect, spec), "");
      }
    }
  }
}

}  // namespace
}  // namespace tutti
