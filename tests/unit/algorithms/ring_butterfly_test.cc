// Every algorithm of the collectives schedule_sim.h checks the results of (all-reduce,
// all-gather(v), reduce-scatter(v); the list from the registry, one test per entry), run
// on symbolic data for many worlds and shapes and under narrow windows; then the ring and
// butterfly algorithms' (allgather_ring.cc, reducescatter_ring.cc, allreduce_rs_ag.cc,
// allreduce_recursive_doubling.cc, allgather_recursive_doubling.cc,
// reducescatter_recursive_halving.cc, allreduce_rabenseifner.cc) measured costs against
// the numbers their header comments document.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "common/registry.h"
#include "schedule/verifier.h"
#include "unit/algorithms/schedule_sim.h"

namespace tutti {
namespace {

using testing::buildAndSimulate;
using testing::SimStats;

using test::RegisteredAlgorithm;

// The collectives whose results the simulator checks.
std::vector<RegisteredAlgorithm> simulated() {
  return test::registeredAlgorithms({Collective::kAllReduce, Collective::kAllGather,
                                     Collective::kAllGatherV, Collective::kReduceScatter,
                                     Collective::kReduceScatterV});
}

const AlgorithmInfo& lookup(const char* name, Collective kind) {
  const AlgorithmInfo* info = test::findAlgorithm(kind, name);
  return info != nullptr ? *info : algorithmRegistry().front();
}

bool isV(Collective kind) {
  return kind == Collective::kAllGatherV || kind == Collective::kReduceScatterV;
}

// Per-rank counts of the v-collectives: even, with zeros, one rank only, uneven.
std::vector<std::vector<std::uint64_t>> countPatterns(int n) {
  std::vector<std::vector<std::uint64_t>> out(
      5, std::vector<std::uint64_t>(static_cast<std::size_t>(n)));
  for (int i = 0; i < n; ++i) {
    const auto u = static_cast<std::uint64_t>(i);
    out[0][u] = 5;
    out[1][u] = u % 3;
    out[2][u] = i == n - 1 ? 7 : 0;
    out[3][u] = (u * 5 + 1) % 7;
    out[4][u] = static_cast<std::uint64_t>(n) - u + 10;
  }
  return out;
}

// allgatherv displacements: back to back, or in reverse rank order with gaps.
std::vector<std::uint64_t> displsFor(const std::vector<std::uint64_t>& counts, bool scattered) {
  std::vector<std::uint64_t> displs(counts.size());
  std::uint64_t at = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    const std::size_t i = scattered ? counts.size() - 1 - k : k;
    displs[i] = at;
    at += counts[i] + (scattered ? 2 : 0);
  }
  return displs;
}

// Every shape of one collective on an n-rank world that the tests run.
std::vector<CollectiveSpec> shapes(Collective kind, int n, bool small) {
  std::vector<CollectiveSpec> out;
  const auto un = static_cast<std::uint64_t>(n);
  std::vector<std::uint64_t> counts = {0, 1, un - 1, un, un + 1, 2 * un + 3, 101};
  if (small) counts = {0, 1, un + 1, 37};
  for (bool inPlace : {false, true}) {
    for (std::uint64_t segment : {std::uint64_t{1}, std::uint64_t{3}, std::uint64_t{1} << 20}) {
      CollectiveSpec spec;
      spec.kind = kind;
      spec.size = n;
      spec.inPlace = inPlace;
      spec.segmentCount = segment;
      spec.op = ReduceOp::kAvg;  // finalization must happen exactly once
      if (!isV(kind)) {
        for (std::uint64_t count : counts) {
          if (segment == 1 && count * un > 3000) continue;  // too many steps to be useful
          spec.count = count;
          out.push_back(spec);
        }
        continue;
      }
      for (const auto& pattern : countPatterns(n)) {
        spec.counts = pattern;
        spec.displs.clear();
        if (kind == Collective::kAllGatherV) {
          for (bool scattered : {false, true}) {
            spec.displs = displsFor(pattern, scattered);
            out.push_back(spec);
          }
        } else {
          out.push_back(spec);
        }
      }
    }
  }
  return out;
}

std::string describe(const CollectiveSpec& s) {
  std::string out = std::string(collectiveName(s.kind)) + " n=" + std::to_string(s.size) +
                    " count=" + std::to_string(s.count) +
                    " segment=" + std::to_string(s.segmentCount) +
                    (s.inPlace ? " in place" : " out of place");
  if (!s.counts.empty()) {
    out += " counts=";
    for (auto c : s.counts) out += std::to_string(c) + ",";
  }
  if (!s.displs.empty()) out += " displs[0]=" + std::to_string(s.displs[0]);
  return out;
}

class SimulatedAlgorithm : public ::testing::TestWithParam<RegisteredAlgorithm> {};

TEST_P(SimulatedAlgorithm, EveryShapeIsCorrect) {
  const RegisteredAlgorithm& e = GetParam();
  std::vector<int> worlds;
  for (int n = 1; n <= 17; ++n) worlds.push_back(n);
  for (int n : {24, 32, 33}) worlds.push_back(n);
  for (int n : worlds) {
    for (const CollectiveSpec& spec : shapes(e.kind, n, n > 17)) {
      ASSERT_TRUE(validateSpec(spec).ok()) << describe(spec);
      ASSERT_TRUE(e.info->unsupportedReason(spec).empty()) << describe(spec);
      const std::string err = buildAndSimulate(spec, e.info->build);
      ASSERT_EQ(err, "") << e.name << " " << describe(spec);
    }
  }
}

// Worlds of up to 12 ranks with the executor's smallest windows: a step that waits on a
// dependency blocks those after it, so narrow windows find ordering deadlocks.
TEST_P(SimulatedAlgorithm, NarrowWindowsDoNotDeadlock) {
  const RegisteredAlgorithm& e = GetParam();
  for (std::size_t window : {2u, 3u, 4u}) {
    testing::SimOptions options;
    options.window = window;
    options.checkHazards = false;
    for (int n : {2, 3, 5, 8, 12}) {
      for (const CollectiveSpec& spec : shapes(e.kind, n, true)) {
        const std::string err = buildAndSimulate(spec, e.info->build, options);
        ASSERT_EQ(err, "") << e.name << " window=" << window << " " << describe(spec);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, SimulatedAlgorithm, ::testing::ValuesIn(simulated()),
                         [](const ::testing::TestParamInfo<RegisteredAlgorithm>& param) {
                           return param.param.testName();
                         });

// Measured costs against the header comments.
SimStats measure(const char* name, Collective kind, int n, std::uint64_t count,
                 std::uint64_t segment) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.size = n;
  spec.count = count;
  spec.segmentCount = segment;
  SimStats stats;
  EXPECT_EQ(buildAndSimulate(spec, lookup(name, kind).build, {}, &stats), "") << name;
  // The schedule verifier measures the same costs independently.
  std::vector<CollectiveSpec> specs;
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    specs.push_back(spec);
    specs.back().rank = r;
    schedules.push_back(lookup(name, kind).build(specs.back()));
  }
  VerifyStats verified;
  EXPECT_TRUE(verifySchedules(specs, schedules, {}, &verified).ok()) << name;
  EXPECT_EQ(verified.messages, stats.messages) << name;
  EXPECT_EQ(verified.maxElementsSentByRank, stats.maxElementsSentByRank) << name;
  EXPECT_EQ(verified.maxMessagesSentByRank, stats.maxMessagesSentByRank) << name;
  // The critical paths differ in model: the simulator lets a send complete as soon as its
  // data is out (a chain of latencies), the verifier's rendezvous makes a sender wait for
  // its receiver too (the worst case). The header comments quote the verifier's.
  stats.criticalPathMessages = verified.criticalPathMessages;
  return stats;
}

TEST(RingButterflyCost, Rings) {
  // n-1 messages per segment, (n-1)/n of the data, a chain of n-1 messages.
  SimStats s = measure("ring", Collective::kAllGather, 8, 64, 1 << 20);
  EXPECT_EQ(s.maxMessagesSentByRank, 7u);
  EXPECT_EQ(s.maxElementsSentByRank, 7u * 64);
  EXPECT_EQ(s.criticalPathMessages, 7u);
  s = measure("ring", Collective::kAllGather, 8, 64, 16);  // 4 segments, pipelined
  EXPECT_EQ(s.maxMessagesSentByRank, 4u * 7);
  EXPECT_EQ(s.maxElementsSentByRank, 7u * 64);
  EXPECT_EQ(s.criticalPathMessages, 7u);
  s = measure("ring", Collective::kReduceScatter, 8, 64, 1 << 20);
  EXPECT_EQ(s.maxMessagesSentByRank, 7u);
  EXPECT_EQ(s.maxElementsSentByRank, 7u * 64);
  EXPECT_EQ(s.criticalPathMessages, 7u);
  EXPECT_EQ(s.maxScratch, 6u * 64);  // one slot per forwarding step: n-2 < 8
  s = measure("ring", Collective::kReduceScatter, 8, 64, 16);
  EXPECT_EQ(s.maxMessagesSentByRank, 4u * 7);
  EXPECT_EQ(s.maxElementsSentByRank, 7u * 64);
  EXPECT_EQ(s.maxScratch, 16u * 16);  // sixteen slots of one segment
  // 24 forwarding steps share 16 slots: a step that reuses a slot waits for the send of
  // its previous user, which in the verifier's model (every segment in flight at once,
  // rendezvous sends) lengthens the chain from n-1 = 7 to 11. The executor's own window
  // of 16 steps bounds the pipeline about as much.
  EXPECT_EQ(s.criticalPathMessages, 11u);
  // rs_ag: 2(n-1) messages per segment, 2(n-1)/n of the data, chains of 2(n-1).
  s = measure("rs_ag", Collective::kAllReduce, 8, 8 * 64, 1 << 20);
  EXPECT_EQ(s.maxMessagesSentByRank, 2u * 7);
  EXPECT_EQ(s.maxElementsSentByRank, 2u * 7 * 64);
  EXPECT_EQ(s.criticalPathMessages, 2u * 7);
  s = measure("rs_ag", Collective::kAllReduce, 8, 8 * 64, 16);
  EXPECT_EQ(s.maxMessagesSentByRank, 2u * 4 * 7);
  EXPECT_EQ(s.maxElementsSentByRank, 2u * 7 * 64);
}

TEST(RingButterflyCost, RecursiveDoublingAllreduce) {
  SimStats s = measure("recursive_doubling", Collective::kAllReduce, 8, 100, 1);
  EXPECT_EQ(s.maxMessagesSentByRank, 3u);  // log2 n rounds of the whole vector
  EXPECT_EQ(s.maxElementsSentByRank, 3u * 100);
  EXPECT_EQ(s.criticalPathMessages, 3u);
  s = measure("recursive_doubling", Collective::kAllReduce, 6, 100, 1);
  EXPECT_EQ(s.maxMessagesSentByRank, 3u);  // core rank with an extra: 2 rounds + the result
  EXPECT_EQ(s.criticalPathMessages, 4u);   // fold, log2 p rounds, unfold
}

TEST(RingButterflyCost, RecursiveDoublingAllgather) {
  SimStats s = measure("recursive_doubling", Collective::kAllGather, 8, 10, 1);
  EXPECT_EQ(s.maxMessagesSentByRank, 3u);
  EXPECT_EQ(s.maxElementsSentByRank, 7u * 10);
  EXPECT_EQ(s.criticalPathMessages, 3u);
  s = measure("recursive_doubling", Collective::kAllGather, 6, 10, 1);
  // Fold, log2 p rounds, unfold would be 4, but the extra ranks' blocks travel in the lower
  // half of the core only: ranks 2 and 3 hand ranks 0 and 1 their last-round data without
  // waiting for a fold, so the unfold overlaps it.
  EXPECT_EQ(s.criticalPathMessages, 3u);
  EXPECT_EQ(s.maxMessagesSentByRank, 6u);  // core + extra runs per round, two runs back
}

TEST(RingButterflyCost, RecursiveHalving) {
  SimStats s = measure("recursive_halving", Collective::kReduceScatter, 8, 10, 1);
  EXPECT_EQ(s.maxMessagesSentByRank, 3u);
  EXPECT_EQ(s.maxElementsSentByRank, 7u * 10);  // halves: 40 + 20 + 10
  EXPECT_EQ(s.criticalPathMessages, 3u);
  s = measure("recursive_halving", Collective::kReduceScatter, 6, 10, 1);
  EXPECT_EQ(s.criticalPathMessages, 4u);  // fold, log2 p rounds, unfold
  EXPECT_EQ(s.maxElementsSentByRank, 6u * 10);  // an extra rank sends its whole input
}

TEST(RingButterflyCost, Rabenseifner) {
  SimStats s = measure("rabenseifner", Collective::kAllReduce, 8, 8 * 10, 1);
  EXPECT_EQ(s.maxMessagesSentByRank, 6u);        // 2 log2 p
  EXPECT_EQ(s.maxElementsSentByRank, 2u * 7 * 10);  // 2(p-1)/p N
  EXPECT_EQ(s.criticalPathMessages, 6u);
  s = measure("rabenseifner", Collective::kAllReduce, 6, 4 * 10, 1);
  EXPECT_EQ(s.criticalPathMessages, 6u);  // fold, 2 log2 p, unfold
  EXPECT_EQ(s.maxElementsSentByRank, 2u * 3 * 10 + 40);  // core: 2(p-1)/p N + N to the extra
}

// The simulator itself finds what it is meant to find.
TEST(ScheduleSim, FindsMissingHazardDependency) {
  // Two ranks swap in place through the same region without ordering the receive after
  // the send.
  std::vector<CollectiveSpec> specs(2);
  std::vector<Schedule> schedules;
  for (int r = 0; r < 2; ++r) {
    specs[r].kind = Collective::kAllReduce;
    specs[r].size = 2;
    specs[r].rank = r;
    specs[r].count = 4;
    specs[r].inPlace = true;
    ScheduleBuilder b(r, 2);
    b.send(1 - r, {BufferKind::kOutput, 0, 4});
    b.recvReduce(1 - r, {BufferKind::kOutput, 0, 4}, {BufferKind::kOutput, 0, 4});
    schedules.push_back(std::move(b).build());
  }
  EXPECT_NE(testing::simulate(specs, schedules).find("not ordered"), std::string::npos);
}

TEST(ScheduleSim, FindsRendezvousDeadlockAndWrongResults) {
  std::vector<CollectiveSpec> specs(2);
  std::vector<Schedule> deadlock, wrong;
  for (int r = 0; r < 2; ++r) {
    specs[r].kind = Collective::kAllReduce;
    specs[r].size = 2;
    specs[r].rank = r;
    specs[r].count = 4;
    ScheduleBuilder b(r, 2);  // both receive first, then send: no buffering, no progress
    StepId got = b.recvReduce(1 - r, {BufferKind::kInput, 0, 4}, {BufferKind::kOutput, 0, 4});
    b.send(1 - r, {BufferKind::kInput, 0, 4}, {got});
    deadlock.push_back(std::move(b).build());
    ScheduleBuilder w(r, 2);  // no finalization, and rank 1 keeps its own input only
    if (r == 0) {
      w.recvReduce(1, {BufferKind::kInput, 0, 4}, {BufferKind::kOutput, 0, 4});
    } else {
      w.send(0, {BufferKind::kInput, 0, 4});
      w.copy({BufferKind::kInput, 0, 4}, {BufferKind::kOutput, 0, 4});
    }
    wrong.push_back(std::move(w).build());
  }
  EXPECT_NE(testing::simulate(specs, deadlock).find("deadlock"), std::string::npos);
  EXPECT_NE(testing::simulate(specs, wrong).find("output[0]"), std::string::npos);
}

}  // namespace
}  // namespace tutti
