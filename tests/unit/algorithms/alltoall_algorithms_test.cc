// The schedules of pairwise (alltoall, alltoallv), bruck (allgather, alltoall) and the
// dissemination barrier, run on concrete data by data_sim.h for many worlds, counts and
// placements, in random completion orders under the executor's window: every output element
// must be what the collective's definition says, nothing outside the blocks may change, no
// order may deadlock, and each rank must send the messages and elements the file comments
// document. The symbolic verifier (verify_all_test.cc) proves the same schedules for
// every registry entry; this is an independent check on real values, plus the verifier's
// cost measurements against the documentation.

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/patterns/bruck.h"
#include "schedule/verifier.h"
#include "unit/algorithms/data_sim.h"

namespace tutti {
namespace {

using testing::inputLabel;
using testing::kGarbage;
using testing::SimResult;
using testing::uniformSpecs;

using Builder = Schedule (*)(const CollectiveSpec&);

std::vector<int> worlds() {
  std::vector<int> out;
  for (int n = 1; n <= 17; ++n) out.push_back(n);
  for (int n : {31, 32, 33, 64}) out.push_back(n);
  return out;
}

std::vector<std::uint64_t> countsFor(int n) {
  const auto un = static_cast<std::uint64_t>(n);
  return {0, 1, 2, 3, un - 1, un + 1, 37};
}

// What out_q must hold, element by element, per the definitions of collective.h; elements
// outside every block keep what they held before (`before`).
std::vector<std::uint64_t> expected(const std::vector<CollectiveSpec>& specs, int q,
                                    std::vector<std::uint64_t> before) {
  const CollectiveSpec& s = specs[static_cast<std::size_t>(q)];
  const auto uq = static_cast<std::uint64_t>(q);
  for (int b = 0; b < s.size; ++b) {
    const auto ub = static_cast<std::uint64_t>(b);
    const CollectiveSpec& sb = specs[ub];
    if (s.kind == Collective::kAllGather) {
      for (std::uint64_t j = 0; j < s.count; ++j) before[ub * s.count + j] = inputLabel(b, j);
    } else if (s.kind == Collective::kAllToAll) {
      for (std::uint64_t j = 0; j < s.count; ++j)
        before[ub * s.count + j] = inputLabel(b, uq * s.count + j);
    } else if (s.kind == Collective::kAllToAllV) {
      for (std::uint64_t j = 0; j < s.recvCounts[ub]; ++j)
        before[s.recvDispls[ub] + j] = inputLabel(b, sb.displs[uq] + j);
    }
  }
  return before;
}

// The output buffer of rank q before the call: garbage, or its input when in place.
std::vector<std::uint64_t> initialOutput(const CollectiveSpec& s) {
  BufferLayout l = bufferLayout(s);
  std::vector<std::uint64_t> out(l.outputCount, kGarbage);
  if (l.inputInOutputAt) {
    for (std::uint64_t j = 0; j < l.inputCount; ++j)
      out[*l.inputInOutputAt + j] = inputLabel(s.rank, j);
  }
  return out;
}

std::string describe(const CollectiveSpec& s, std::size_t window, std::uint64_t seed) {
  return std::string(collectiveName(s.kind)) + " n=" + std::to_string(s.size) +
         " count=" + std::to_string(s.count) + (s.inPlace ? " in place" : " out of place") +
         (window == 0 ? std::string(" out of order") : " window=" + std::to_string(window)) +
         " seed=" + std::to_string(seed);
}

// Builds every rank's schedule, runs it in order with windows 2 and 16 and out of order
// (dependencies only), two seeds each, checks every output; returns the per-rank statistics
// of the last run.
SimResult runAndCheck(Builder build, const std::vector<CollectiveSpec>& specs) {
  std::vector<Schedule> schedules;
  for (const CollectiveSpec& s : specs) schedules.push_back(build(s));
  SimResult result;
  for (std::size_t window : {std::size_t{2}, std::size_t{16}, std::size_t{0}}) {
    for (std::uint64_t seed : {1u, 2u}) {
      const std::string what = describe(specs[0], window, seed);
      testing::SimOptions options{window, window != 0, seed};
      Status status = testing::simulateData(specs, schedules, options, &result);
      EXPECT_TRUE(status.ok()) << what << ": " << status.message();
      if (!status.ok()) return result;
      for (std::size_t q = 0; q < specs.size(); ++q) {
        auto want = expected(specs, static_cast<int>(q), initialOutput(specs[q]));
        EXPECT_EQ(result.outputs[q], want) << what << " rank " << q;
        if (result.outputs[q] != want) return result;
      }
    }
  }
  return result;
}

TEST(AlltoallPairwise, EveryElementRightWithNMinus1MessagesPerRank) {
  for (int n : worlds()) {
    for (std::uint64_t count : countsFor(n)) {
      for (bool inPlace : {false, true}) {
        auto specs = uniformSpecs(Collective::kAllToAll, n, count, inPlace);
        SimResult res = runAndCheck(buildAlltoallPairwise, specs);
        if (::testing::Test::HasFailure()) return;
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(res.messagesSent[static_cast<std::size_t>(r)],
                    count > 0 ? static_cast<std::uint64_t>(n - 1) : 0u);
          EXPECT_EQ(res.elementsSent[static_cast<std::size_t>(r)],
                    static_cast<std::uint64_t>(n - 1) * count);
        }
      }
    }
  }
}

TEST(AlltoallPairwise, InPlaceScratchIsTheFirstHalfOfTheRounds) {
  // Rounds 1 .. floor(n/2) wait in scratch; the direct algorithm would keep n - 1 blocks.
  for (int n : {2, 3, 4, 7, 8}) {
    auto specs = uniformSpecs(Collective::kAllToAll, n, 5, true);
    EXPECT_EQ(buildAlltoallPairwise(specs[0]).scratchCount, static_cast<std::uint64_t>(n / 2) * 5)
        << n;
    specs = uniformSpecs(Collective::kAllToAll, n, 5, false);
    EXPECT_EQ(buildAlltoallPairwise(specs[0]).scratchCount, 0u) << n;
  }
}

// The round of each message of a pairwise schedule: sends to r+k and receives from r-k.
int pairwiseRound(const Schedule& s, const Step& step) {
  return step.op == OpCode::kSend ? (step.sendPeer - s.rank + s.size) % s.size
                                  : (s.rank - step.recvPeer + s.size) % s.size;
}

TEST(AlltoallPairwise, AtMostTwoRoundsInFlight) {
  // Every message of round k >= 3 waits for both messages of round k - 2, so the executor
  // can never have more than rounds k-1 and k of one rank posted.
  for (int n : {5, 8, 13}) {
    for (bool inPlace : {false, true}) {
      for (int r = 0; r < n; ++r) {
        Schedule s = buildAlltoallPairwise(
            uniformSpecs(Collective::kAllToAll, n, 4, inPlace)[static_cast<std::size_t>(r)]);
        std::vector<std::vector<StepId>> byRound(static_cast<std::size_t>(n));
        for (StepId i = 0; i < s.steps.size(); ++i) {
          if (s.steps[i].op == OpCode::kCopy) continue;
          byRound[static_cast<std::size_t>(pairwiseRound(s, s.steps[i]))].push_back(i);
        }
        for (int k = 1; k < n; ++k) {
          ASSERT_EQ(byRound[static_cast<std::size_t>(k)].size(), 2u);
          if (k < 3) continue;
          for (StepId i : byRound[static_cast<std::size_t>(k)]) {
            const Step& step = s.steps[i];
            std::vector<StepId> deps(s.deps.begin() + step.depBegin,
                                     s.deps.begin() + step.depBegin + step.depCount);
            for (StepId want : byRound[static_cast<std::size_t>(k - 2)])
              EXPECT_NE(std::find(deps.begin(), deps.end(), want), deps.end())
                  << "n=" << n << " rank " << r << " round " << k << "\n"
                  << s.toString();
          }
        }
      }
    }
  }
}

// alltoallv with a random count matrix (many zeros) and displacements with gaps, so that
// blocks are out of order in the buffers; symmetric for in place, as the spec requires.
std::vector<CollectiveSpec> alltoallvSpecs(int n, bool inPlace, std::mt19937_64& random) {
  const auto un = static_cast<std::size_t>(n);
  std::vector<std::vector<std::uint64_t>> c(un, std::vector<std::uint64_t>(un, 0));
  std::uniform_int_distribution<int> pick(0, 6);
  for (std::size_t a = 0; a < un; ++a) {
    for (std::size_t b = 0; b < un; ++b) {
      int v = pick(random);
      c[a][b] = v < 3 ? 0 : static_cast<std::uint64_t>(v * 3 - 8);
      if (inPlace && b < a) c[a][b] = c[b][a];
    }
  }
  // Displacements: blocks in reverse rank order, one element of gap after each.
  auto displs = [&](const std::vector<std::uint64_t>& counts) {
    std::vector<std::uint64_t> d(un, 0);
    std::uint64_t at = 0;
    for (std::size_t i = un; i-- > 0;) {
      d[i] = at;
      at += counts[i] + 1;
    }
    return d;
  };
  std::vector<CollectiveSpec> specs = uniformSpecs(Collective::kAllToAllV, n, 0, inPlace);
  for (std::size_t r = 0; r < un; ++r) {
    CollectiveSpec& s = specs[r];
    s.counts = c[r];
    for (std::size_t b = 0; b < un; ++b) s.recvCounts.push_back(c[b][r]);
    s.displs = displs(s.counts);
    s.recvDispls = displs(s.recvCounts);
    EXPECT_TRUE(validateSpec(s).ok()) << validateSpec(s).message();
  }
  return specs;
}

TEST(AlltoallvPairwise, RandomCountsWithZerosAndGaps) {
  std::mt19937_64 random(7);
  for (int n : worlds()) {
    for (int trial = 0; trial < 3; ++trial) {
      for (bool inPlace : {false, true}) {
        auto specs = alltoallvSpecs(n, inPlace, random);
        SimResult res = runAndCheck(buildAlltoallPairwise, specs);
        if (::testing::Test::HasFailure()) return;
        for (int r = 0; r < n; ++r) {
          std::uint64_t messages = 0, elements = 0;
          for (int b = 0; b < n; ++b) {
            const std::uint64_t c =
                specs[static_cast<std::size_t>(r)].counts[static_cast<std::size_t>(b)];
            if (b != r && c > 0) ++messages, elements += c;
          }
          EXPECT_EQ(res.messagesSent[static_cast<std::size_t>(r)], messages);
          EXPECT_EQ(res.elementsSent[static_cast<std::size_t>(r)], elements);
        }
      }
    }
  }
}

TEST(AlltoallBruck, EveryElementRightWithLogNMessagesPerRank) {
  for (int n : worlds()) {
    for (std::uint64_t count : countsFor(n)) {
      for (bool inPlace : {false, true}) {
        auto specs = uniformSpecs(Collective::kAllToAll, n, count, inPlace);
        SimResult res = runAndCheck(buildAlltoallBruck, specs);
        if (::testing::Test::HasFailure()) return;
        std::uint64_t blocks = 0;
        for (int k = 0; k < bruck::rounds(n); ++k)
          blocks += static_cast<std::uint64_t>(bruck::alltoallBlocks(n, k));
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(res.messagesSent[static_cast<std::size_t>(r)],
                    count > 0 ? static_cast<std::uint64_t>(bruck::rounds(n)) : 0u);
          EXPECT_EQ(res.elementsSent[static_cast<std::size_t>(r)], blocks * count);
        }
      }
    }
  }
}

TEST(AlltoallBruck, ScheduleSizeIsLinearInTheWorld) {
  // One pack and one unpack per run (about n runs over all rounds), a send and a receive
  // per round, n + 2 rotation copies; dependencies stay O(n) because each round's unpacks
  // are chained (round 0 alone would need n/2 x n/4 otherwise).
  for (int n : {64, 1000, 1024}) {
    Schedule s = buildAlltoallBruck(uniformSpecs(Collective::kAllToAll, n, 1, false)[3]);
    std::size_t runs = 0;
    for (int k = 0; k < bruck::rounds(n); ++k)
      runs += static_cast<std::size_t>(bruck::alltoallRunCount(n, k));
    EXPECT_LE(runs, static_cast<std::size_t>(n));
    const auto rounds = static_cast<std::size_t>(bruck::rounds(n));
    EXPECT_EQ(s.steps.size(), 2 * runs + 2 * rounds + static_cast<std::size_t>(n) + 2) << n;
    EXPECT_LE(s.deps.size(), 16 * static_cast<std::size_t>(n)) << n;
    EXPECT_EQ(s.scratchCount, static_cast<std::uint64_t>(n));
  }
}

TEST(AlltoallBruck, BytesOnTheWireAreHalfTheBufferPerRoundForPowersOfTwo) {
  // (N/2) log2 n for a power of two, N the rank's input: the documented beta term.
  for (int n : {2, 4, 8, 64, 1024}) {
    std::uint64_t blocks = 0;
    for (int k = 0; k < bruck::rounds(n); ++k)
      blocks += static_cast<std::uint64_t>(bruck::alltoallBlocks(n, k));
    EXPECT_EQ(blocks, static_cast<std::uint64_t>(n / 2 * bruck::rounds(n))) << n;
  }
}

TEST(AllgatherBruck, EveryElementRightWithLogNMessagesPerRank) {
  for (int n : worlds()) {
    for (std::uint64_t count : countsFor(n)) {
      for (bool inPlace : {false, true}) {
        auto specs = uniformSpecs(Collective::kAllGather, n, count, inPlace);
        SimResult res = runAndCheck(buildAllgatherBruck, specs);
        if (::testing::Test::HasFailure()) return;
        for (int r = 0; r < n; ++r) {
          EXPECT_EQ(res.messagesSent[static_cast<std::size_t>(r)],
                    count > 0 ? static_cast<std::uint64_t>(bruck::rounds(n)) : 0u);
          EXPECT_EQ(res.elementsSent[static_cast<std::size_t>(r)],
                    static_cast<std::uint64_t>(n - 1) * count);
        }
      }
    }
  }
}

TEST(LargeWorlds, BruckAt1024RanksPairwiseAt256) {
  for (bool inPlace : {false, true}) {
    auto specs = uniformSpecs(Collective::kAllGather, 1024, 1, inPlace);
    std::vector<Schedule> schedules;
    for (const CollectiveSpec& s : specs) schedules.push_back(buildAllgatherBruck(s));
    SimResult res;
    Status status = testing::simulateData(specs, schedules, {16, true, 3}, &res);
    ASSERT_TRUE(status.ok()) << status.message();
    for (std::size_t q = 0; q < specs.size(); ++q)
      ASSERT_EQ(res.outputs[q], expected(specs, static_cast<int>(q), initialOutput(specs[q]))) << q;
    EXPECT_EQ(res.messagesSent[5], 10u);
  }
  // Pairwise at 256 ranks: its n(n-1) messages make 1024 slow for this simulator.
  for (Builder build : {buildAlltoallBruck, buildAlltoallPairwise}) {
    const bool bruck = build == buildAlltoallBruck;
    const int n = bruck ? 1024 : 256;
    auto specs = uniformSpecs(Collective::kAllToAll, n, 1, !bruck);
    std::vector<Schedule> schedules;
    for (const CollectiveSpec& s : specs) schedules.push_back(build(s));
    SimResult res;
    Status status = testing::simulateData(specs, schedules, {16, true, 3}, &res);
    ASSERT_TRUE(status.ok()) << status.message();
    for (std::size_t q = 0; q < specs.size(); ++q)
      ASSERT_EQ(res.outputs[q], expected(specs, static_cast<int>(q), initialOutput(specs[q]))) << q;
    EXPECT_EQ(res.messagesSent[5], bruck ? 10u : 255u);
    EXPECT_EQ(res.elementsSent[5], bruck ? 512u * 10u : 255u);
  }
}

std::vector<Schedule> barrierSchedules(int n) {
  std::vector<Schedule> out;
  for (const CollectiveSpec& s : uniformSpecs(Collective::kBarrier, n, 0, false))
    out.push_back(buildBarrierDissemination(s));
  return out;
}

// The verifier's barrier check through dependencies alone (inOrderIssue = false): the
// barrier holds even for an executor that issued steps out of order.
TEST(BarrierDissemination, HoldsThroughDependenciesAlone) {
  VerifyOptions dependenciesOnly;
  dependenciesOnly.inOrderIssue = false;
  for (int n = 1; n <= 70; ++n) {
    auto schedules = barrierSchedules(n);
    auto specs = uniformSpecs(Collective::kBarrier, n, 0, false);
    Status status = verifySchedules(specs, schedules, dependenciesOnly);
    EXPECT_TRUE(status.ok()) << "n=" << n << ": " << status.message();
    for (const Schedule& s : schedules)
      EXPECT_EQ(s.steps.size(), 2u * static_cast<std::size_t>(bruck::rounds(n)));
  }
}

// With each send waiting only for the previous receive (the barrier's first version), the
// property rests on the executor's in-order issue: by dependencies alone rank 7 of 8 could
// finish before rank 2 started (rank 3's distance-4 message need not follow what rank 3
// heard from rank 2).
TEST(BarrierDissemination, SendsWaitingOnlyForThePreviousReceiveNeedInOrderIssue) {
  const int n = 8;
  std::vector<Schedule> schedules;
  for (int r = 0; r < n; ++r) {
    ScheduleBuilder b(r, n);
    const Region empty{BufferKind::kInput, 0, 0};
    StepId recv = 0;
    for (int d = 1; d < n; d *= 2) {
      if (d == 1)
        b.send((r + d) % n, empty);
      else
        b.send((r + d) % n, empty, {recv});
      recv = b.recv((r - d + n) % n, empty);
    }
    schedules.push_back(std::move(b).build());
  }
  auto specs = uniformSpecs(Collective::kBarrier, n, 0, false);
  EXPECT_TRUE(verifySchedules(specs, schedules).ok());
  VerifyOptions dependenciesOnly;
  dependenciesOnly.inOrderIssue = false;
  EXPECT_FALSE(verifySchedules(specs, schedules, dependenciesOnly).ok());
}

// The verifier's measured costs against the file comments: messages per rank, elements
// per rank and the latency chain.
TEST(Costs, VerifierMeasuresWhatTheCommentsDocument) {
  const std::uint64_t c = 3;
  for (int n : {2, 3, 5, 8, 13, 64}) {
    const auto un = static_cast<std::uint64_t>(n);
    const auto logn = static_cast<std::uint64_t>(bruck::rounds(n));
    std::uint64_t bruckBlocks = 0;
    for (int k = 0; k < bruck::rounds(n); ++k)
      bruckBlocks += static_cast<std::uint64_t>(bruck::alltoallBlocks(n, k));
    struct Case {
      Collective kind;
      Builder build;
      std::uint64_t messages, elements, chain;
    };
    for (const Case& t :
         {Case{Collective::kAllToAll, buildAlltoallPairwise, un - 1, (un - 1) * c, un / 2},
          Case{Collective::kAllToAll, buildAlltoallBruck, logn, bruckBlocks * c, logn},
          Case{Collective::kAllGather, buildAllgatherBruck, logn, (un - 1) * c, logn},
          Case{Collective::kBarrier, buildBarrierDissemination, logn, 0, logn}}) {
      auto specs = uniformSpecs(t.kind, n, t.kind == Collective::kBarrier ? 0 : c, false);
      std::vector<Schedule> schedules;
      for (const CollectiveSpec& s : specs) schedules.push_back(t.build(s));
      VerifyStats stats;
      Status status = verifySchedules(specs, schedules, {}, &stats);
      ASSERT_TRUE(status.ok()) << status.message();
      EXPECT_EQ(stats.maxMessagesSentByRank, t.messages) << collectiveName(t.kind) << " n=" << n;
      EXPECT_EQ(stats.messages, t.messages * un) << collectiveName(t.kind) << " n=" << n;
      EXPECT_EQ(stats.maxElementsSentByRank, t.elements) << collectiveName(t.kind) << " n=" << n;
      EXPECT_EQ(stats.criticalPathMessages, t.chain) << collectiveName(t.kind) << " n=" << n;
    }
  }
}

}  // namespace
}  // namespace tutti
