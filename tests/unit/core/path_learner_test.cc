// The path learner (core/path_learner.h), fed made-up call times: the cycles and which of
// their calls count, the short opening of long calls, keeping the faster way by the ranks'
// summed estimates, how often the other is tried by how much slower it was, following the
// machine when the other way becomes faster, keeping a way against a less than 3% faster
// one, deciding alike on every rank, taking turns over the other ways where there are
// three, which ways a call may learn among, marking each way's first call of a shape as a
// one-time cost, saying which calls try a way not kept, and what makes two calls the same
// shape.

#include "core/path_learner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "base/pool_growth.h"

namespace tutti::detail {
namespace {

constexpr std::uint32_t kShape = 7;
using Way = PathLearner::Way;
constexpr unsigned kTwoWays = PathLearner::bit(Way::kDirect) | PathLearner::bit(Way::kBuffered);
constexpr unsigned kThreeWays = kTwoWays | PathLearner::bit(Way::kStreamed);

struct Calls {
  std::vector<bool> ways;              // each call's way (true: through the buffers)
  std::vector<Way> all;                // each call's way
  std::vector<std::size_t> decisions;  // the calls that were decisions
  int changes = 0;
};

// Runs `count` calls of kShape on one learner that stands for `ranks` ranks with the same
// times (a decision gets its estimates times `ranks`); each call takes `buffered`, `direct`
// or `streamed` ns by its way, the first call of a shape and of a way after another `first`
// ns more. `ways`: the ways allowed.
void run(PathLearner& learner, Calls& calls, int count, std::int64_t buffered,
         std::int64_t direct, bool rule = false, int ranks = 2, std::int64_t first = 0,
         unsigned ways = kTwoWays, std::int64_t streamed = 0) {
  for (int i = 0; i < count; ++i) {
    PathLearner::Choice choice =
        learner.choose(kShape, rule ? Way::kBuffered : Way::kDirect, ways);
    if (choice.decides) {
      PathLearner::Times sums = learner.estimates(kShape);
      for (std::int64_t& t : sums) t = t < 0 ? -1 : t * ranks;
      bool changed = false;
      choice.way = learner.decide(kShape, sums, &changed);
      calls.changes += changed ? 1 : 0;
      calls.decisions.push_back(calls.all.size());
    }
    const bool switched = calls.all.empty() || calls.all.back() != choice.way;
    const std::int64_t ns = choice.way == Way::kBuffered ? buffered
                            : choice.way == Way::kDirect ? direct
                                                         : streamed;
    learner.record(kShape, ns + (switched ? first : 0));
    calls.ways.push_back(choice.way == Way::kBuffered);
    calls.all.push_back(choice.way);
  }
}

bool keepsBuffered(const PathLearner& learner, std::uint32_t shape = kShape) {
  return learner.kept(shape) == Way::kBuffered;
}

TEST(PathLearner, OpensWithTheRulesWayFourTimesThenTheOtherThreeTimes) {
  for (const bool rule : {false, true}) {
    PathLearner learner;
    Calls calls;
    run(learner, calls, 7, 100, 100, rule);
    const std::vector<bool> expected = {rule, rule, rule, rule, !rule, !rule, !rule};
    EXPECT_EQ(calls.ways, expected) << "rule " << rule;
    EXPECT_TRUE(calls.decisions.empty());
    EXPECT_EQ(keepsBuffered(learner), rule) << "before a decision, the rule's way";
  }
}

TEST(PathLearner, ACallTryingAWayNotKeptSaysSo) {
  // What the algorithm learner leaves out (algorithm_learner.h): the calls whose way is not
  // the one kept, in the opening and in every later cycle's tries.
  PathLearner learner;
  int trying = 0, tried = 0;
  for (int i = 0; i < 600; ++i) {
    PathLearner::Choice choice = learner.choose(kShape, Way::kDirect, kTwoWays);
    if (choice.decides) {
      PathLearner::Times sums = learner.estimates(kShape);
      bool changed = false;
      choice.way = learner.decide(kShape, sums, &changed);
      EXPECT_FALSE(choice.trying);
    }
    EXPECT_EQ(choice.trying, choice.way != learner.kept(kShape)) << "call " << i;
    trying += choice.trying ? 1 : 0;
    tried += choice.way == Way::kBuffered ? 1 : 0;
    learner.record(kShape, choice.way == Way::kBuffered ? 200 : 100);
  }
  // Direct is kept; the opening's three buffered calls and each cycle's three tried it.
  EXPECT_FALSE(keepsBuffered(learner));
  EXPECT_GE(trying, 6);
  EXPECT_EQ(trying, tried);
}

TEST(PathLearner, LongCallsOpenWithOneTimedCallOfEachWay) {
  for (const std::uint64_t message : {PathLearner::kLongFrom - 1, PathLearner::kLongFrom}) {
    const bool isLong = message >= PathLearner::kLongFrom;
    PathLearner learner;
    std::vector<Way> ways;
    std::vector<std::size_t> decisions;
    for (std::size_t n = 0; n < 12; ++n) {
      PathLearner::Choice choice = learner.choose(kShape, Way::kBuffered, kTwoWays, message);
      if (choice.decides) {
        bool changed = false;
        choice.way = learner.decide(kShape, learner.estimates(kShape), &changed);
        decisions.push_back(n);
      }
      if (isLong && n == 3) {
        // The decision saw the second call (the first is untimed) and the third, the other
        // way's first.
        EXPECT_EQ(learner.estimates(kShape), (PathLearner::Times{50, 100, -1}));
      }
      // The shape's first call takes 1000 times as long; the other way half as long.
      learner.record(kShape, n == 0 ? 100000 : choice.way == Way::kDirect ? 50 : 100);
      ways.push_back(choice.way);
    }
    const Way b = Way::kBuffered, d = Way::kDirect;
    if (isLong) {
      EXPECT_EQ(ways, (std::vector<Way>{b, b, d, d, d, d, d, d, d, d, d, d}));
      EXPECT_EQ(decisions, std::vector<std::size_t>{3});
      EXPECT_EQ(learner.kept(kShape), d);
    } else {
      EXPECT_EQ(ways, (std::vector<Way>{b, b, b, b, d, d, d, d, d, d, d, d}));
      EXPECT_EQ(decisions, std::vector<std::size_t>{7});
    }
  }
}

TEST(PathLearner, TimesNeitherAShapesFirstCallNorTheFirstOfAWayAfterTheOther) {
  PathLearner learner;
  Calls calls;
  // Those calls take 1000 times as long: none of them may reach an estimate.
  run(learner, calls, 7, 50, 70, false, 2, 70000);
  EXPECT_EQ(learner.estimates(kShape), (PathLearner::Times{70, 50, -1}));
}

TEST(PathLearner, KeepsTheFasterWayAndTriesTheOtherByHowMuchSlowerItWas) {
  struct Case {
    std::int64_t buffered, direct;
    std::uint64_t period;
  };
  // The other way 1.1, 1.4 and 2 times as long.
  for (const Case c : {Case{100, 110, PathLearner::kExplorePeriod},
                       Case{100, 140, PathLearner::kExploreFarPeriod},
                       Case{100, 200, PathLearner::kExploreFarthestPeriod},
                       Case{200, 100, PathLearner::kExploreFarthestPeriod}}) {
    PathLearner learner;
    Calls calls;
    run(learner, calls, 7 + 4 * 256, c.buffered, c.direct, false, 2, 1000);
    const bool best = c.buffered < c.direct;
    EXPECT_EQ(calls.changes, 1) << "kept one way once";
    EXPECT_EQ(keepsBuffered(learner), best);
    ASSERT_GE(calls.decisions.size(), 4u);
    EXPECT_EQ(calls.decisions[0], 7u);
    for (std::size_t d = 1; d < calls.decisions.size(); ++d)
      EXPECT_EQ(calls.decisions[d] - calls.decisions[d - 1], c.period);
    // Each cycle: the decision and the calls after it the kept way, its last three the other.
    for (std::size_t n = 7; n < calls.decisions.back(); ++n) {
      std::size_t next = 0;
      for (const std::size_t d : calls.decisions)
        if (d > n) {
          next = d;
          break;
        }
      EXPECT_EQ(calls.ways[n], next - n <= 3 ? !best : best)
          << "call " << n << ", buffered " << c.buffered << " direct " << c.direct;
    }
  }
}

TEST(PathLearner, FollowsTheMachineWhenTheOtherWayBecomesFaster) {
  PathLearner learner;
  Calls calls;
  run(learner, calls, 300, 50, 70);  // buffered wins
  ASSERT_TRUE(keepsBuffered(learner));
  ASSERT_EQ(calls.changes, 1);
  // The machine changes: buffered now takes 3 times as long as direct. The first decision
  // after a cycle's try of the direct way sees it: within two cycles.
  run(learner, calls, 2 * PathLearner::kExploreFarPeriod + 1, 150, 50);
  EXPECT_FALSE(keepsBuffered(learner));
  EXPECT_EQ(calls.changes, 2);
  EXPECT_FALSE(calls.ways.back());
  // And back again: direct is kept and buffered was 3 times as long, so within two of the
  // longest cycles.
  run(learner, calls, 2 * PathLearner::kExploreFarthestPeriod + 1, 40, 50);
  EXPECT_TRUE(keepsBuffered(learner));
  EXPECT_EQ(calls.changes, 3);
}

TEST(PathLearner, KeepsAWayAgainstOneLessThanThreePercentFaster) {
  PathLearner learner;
  Calls calls;
  run(learner, calls, 100, 100, 110);
  ASSERT_TRUE(keepsBuffered(learner));
  run(learner, calls, 200, 100, 98);  // direct 2% faster: kept
  EXPECT_TRUE(keepsBuffered(learner));
  run(learner, calls, 100, 100, 96);  // 4% faster: changed
  EXPECT_FALSE(keepsBuffered(learner));
  EXPECT_EQ(calls.changes, 2);
}

TEST(PathLearner, DecidesBySumsTheSameOnEveryRank) {
  // Two learners standing for two ranks, whose own times disagree: rank 0 finds buffered
  // faster, rank 1 direct, by more. Decided by the sums, both keep direct.
  PathLearner rank0, rank1;
  for (int n = 0; n < 7 + 200; ++n) {
    PathLearner::Choice c0 = rank0.choose(kShape, Way::kDirect, kTwoWays);
    PathLearner::Choice c1 = rank1.choose(kShape, Way::kDirect, kTwoWays);
    ASSERT_EQ(c0.decides, c1.decides);
    if (c0.decides) {
      const PathLearner::Times e0 = rank0.estimates(kShape), e1 = rank1.estimates(kShape);
      PathLearner::Times sums{};
      for (std::size_t w = 0; w < PathLearner::kWays; ++w)
        sums[w] = e0[w] < 0 || e1[w] < 0 ? -1 : e0[w] + e1[w];
      bool changed = false;
      c0.way = rank0.decide(kShape, sums, &changed);
      c1.way = rank1.decide(kShape, sums, &changed);
    }
    ASSERT_EQ(c0.way, c1.way) << "call " << n;
    rank0.record(kShape, c0.way == Way::kBuffered ? 50 : 60);
    rank1.record(kShape, c1.way == Way::kBuffered ? 100 : 70);
  }
  EXPECT_FALSE(keepsBuffered(rank0));
  EXPECT_FALSE(keepsBuffered(rank1));
}

TEST(PathLearner, WithThreeWaysTheCyclesTakeTurnsOverTheOtherTwo) {
  // Buffered is the rule's way; streamed is the fastest, direct the slowest.
  PathLearner learner;
  Calls calls;
  run(learner, calls, 7 + 4 * 256, 100, 300, true, 2, 1000, kThreeWays, 60);
  EXPECT_EQ(learner.kept(kShape), Way::kStreamed);
  // The opening tries the first other way (direct), the next cycle the other (streamed),
  // which the decision after it keeps; from then on the cycles try buffered and direct in
  // turn, each decision comparing streamed with the way its cycle tried.
  const std::vector<Way> opening = {Way::kBuffered, Way::kBuffered, Way::kBuffered,
                                    Way::kBuffered, Way::kDirect,   Way::kDirect,
                                    Way::kDirect};
  EXPECT_EQ(std::vector<Way>(calls.all.begin(), calls.all.begin() + 7), opening);
  ASSERT_GE(calls.decisions.size(), 4u);
  EXPECT_EQ(calls.all[calls.decisions[0]], Way::kBuffered);  // direct was slower
  EXPECT_EQ(calls.all[calls.decisions[1] - 1], Way::kStreamed);
  EXPECT_EQ(calls.all[calls.decisions[1]], Way::kStreamed);
  EXPECT_EQ(calls.changes, 2);  // buffered at the first decision, streamed at the second
  std::vector<Way> tried;
  for (std::size_t d = 2; d < calls.decisions.size(); ++d) {
    tried.push_back(calls.all[calls.decisions[d] - 1]);
    for (std::size_t n = calls.decisions[d - 1]; n + 3 < calls.decisions[d]; ++n)
      EXPECT_EQ(calls.all[n], Way::kStreamed) << "call " << n;
  }
  for (std::size_t i = 1; i < tried.size(); ++i) EXPECT_NE(tried[i], tried[i - 1]) << i;
  EXPECT_NE(std::find(tried.begin(), tried.end(), Way::kBuffered), tried.end());
  EXPECT_NE(std::find(tried.begin(), tried.end(), Way::kDirect), tried.end());
  EXPECT_EQ(std::find(tried.begin(), tried.end(), Way::kStreamed), tried.end());
}

TEST(PathLearner, EachWaysFirstCallOfAShapeIsMarkedAsAOneTimeCost) {
  // The first call of each way faults in that way's code, on a call the learner's schedule
  // picks: a test of the steady state must not judge the calls around it
  // (base/pool_growth.h). Later calls of a way mark nothing.
  PathLearner learner;
  Calls calls;
  std::vector<std::size_t> marked;
  for (std::size_t n = 0; n < 7 + 4 * 256; ++n) {
    const std::uint64_t before = poolGrowth().done;
    run(learner, calls, 1, 100, 300, true, 2, 1000, kThreeWays, 60);
    const std::uint64_t after = poolGrowth().done;
    ASSERT_LE(after - before, 1u) << "call " << n;
    if (after != before) marked.push_back(n);
  }
  ASSERT_EQ(marked.size(), 3u);
  for (std::size_t i = 0; i < marked.size(); ++i) {
    const Way way = calls.all[marked[i]];
    EXPECT_EQ(std::find(calls.all.begin(), calls.all.begin() + marked[i], way),
              calls.all.begin() + marked[i])
        << "call " << marked[i] << " is not its way's first";
  }
  EXPECT_EQ(marked[0], 0u);
  EXPECT_EQ(marked[1], 4u);  // the opening's other way
  // Another shape's first calls are its own.
  const std::uint64_t before = poolGrowth().done;
  (void)learner.choose(kShape + 1, Way::kBuffered, kTwoWays);
  EXPECT_EQ(poolGrowth().done, before + 1);
}

TEST(PathLearner, AWayNotAllowedIsNeverTaken) {
  // A reduction: buffered or streamed, never direct, however fast direct would be.
  PathLearner learner;
  Calls calls;
  const unsigned ways = PathLearner::bit(Way::kBuffered) | PathLearner::bit(Way::kStreamed);
  run(learner, calls, 300, 100, 1, true, 2, 0, ways, 120);
  EXPECT_EQ(std::find(calls.all.begin(), calls.all.end(), Way::kDirect), calls.all.end());
  EXPECT_EQ(learner.kept(kShape), Way::kBuffered);
  EXPECT_NE(std::find(calls.all.begin(), calls.all.end(), Way::kStreamed), calls.all.end());
}

TEST(PathLearner, WhichWaysACallMayLearnByItsCollectiveAndMessage) {
  const auto ways = PathLearner::waysFor;
  constexpr std::uint64_t kDirectFrom = 16 << 10, kStreamedFrom = 256 << 10;
  constexpr std::uint64_t kMoves = PathLearner::kMovesStreamedFrom;
  const unsigned direct = PathLearner::bit(Way::kDirect);
  const unsigned streamed = PathLearner::bit(Way::kStreamed);
  const unsigned twoCopied = PathLearner::bit(Way::kBuffered) | streamed;
  // Moves: directly from directFrom, streamed as well from 4 MiB (or streamedFrom, if larger).
  for (Collective kind : {Collective::kAllGather, Collective::kAllToAll, Collective::kBroadcast,
                          Collective::kGather, Collective::kScatter}) {
    SCOPED_TRACE(static_cast<int>(kind));
    EXPECT_EQ(ways(kind, kDirectFrom - 1, false, kDirectFrom, kStreamedFrom), 0u);
    EXPECT_EQ(ways(kind, kDirectFrom, false, kDirectFrom, kStreamedFrom), kTwoWays);
    EXPECT_EQ(ways(kind, kMoves - 1, false, kDirectFrom, kStreamedFrom), kTwoWays);
    EXPECT_EQ(ways(kind, kMoves, false, kDirectFrom, kStreamedFrom), kThreeWays);
    EXPECT_EQ(ways(kind, kMoves, true, kDirectFrom, kStreamedFrom), kThreeWays);
    EXPECT_EQ(ways(kind, kMoves, false, 0, kStreamedFrom), twoCopied);
    EXPECT_EQ(ways(kind, kMoves, false, kDirectFrom, 0), kTwoWays);
    EXPECT_EQ(ways(kind, 2 * kMoves - 1, false, kDirectFrom, 2 * kMoves), kTwoWays);
    EXPECT_EQ(ways(kind, 2 * kMoves, false, kDirectFrom, 2 * kMoves), kThreeWays);
  }
  // Reductions through the buffers: cached or streamed from streamedFrom; never directly.
  for (Collective kind : {Collective::kAllReduce, Collective::kReduceScatter,
                          Collective::kReduce}) {
    SCOPED_TRACE(static_cast<int>(kind));
    EXPECT_EQ(ways(kind, kStreamedFrom - 1, true, kDirectFrom, kStreamedFrom), 0u);
    EXPECT_EQ(ways(kind, kStreamedFrom, true, kDirectFrom, kStreamedFrom), twoCopied);
    EXPECT_EQ(ways(kind, kMoves * 64, true, kDirectFrom, kStreamedFrom), twoCopied);
    EXPECT_EQ(ways(kind, kMoves, true, kDirectFrom, 0), 0u);
    // A reduction whose rule reads in place keeps it.
    EXPECT_EQ(ways(kind, kMoves, false, kDirectFrom, kStreamedFrom), 0u);
  }
  // Nothing else learns.
  EXPECT_EQ(ways(Collective::kBarrier, kMoves, true, kDirectFrom, kStreamedFrom), 0u);
  EXPECT_EQ(ways(Collective::kAllToAll, kMoves, false, 0, 0) & direct, 0u);
}

TEST(PathLearner, ShapesAreTheCollectiveTypeAndPowerOfTwoOfTheBytesAndTheAlgorithm) {
  const auto shape = [](Collective kind, DataType dtype, std::uint64_t bytes,
                        std::uint32_t algorithm = 0) {
    return PathLearner::shapeOf(kind, dtype, bytes, algorithm);
  };
  const Collective ag = Collective::kAllGather;
  const DataType f32 = DataType::kFloat32;
  EXPECT_EQ(shape(ag, f32, 1u << 19), shape(ag, f32, (1u << 20) - 1));
  EXPECT_NE(shape(ag, f32, 1u << 19), shape(ag, f32, 1u << 20));
  EXPECT_NE(shape(ag, f32, 1u << 20), shape(ag, DataType::kFloat64, 1u << 20));
  EXPECT_NE(shape(ag, f32, 1u << 20), shape(Collective::kAllToAll, f32, 1u << 20));
  EXPECT_NE(shape(ag, f32, std::uint64_t{1} << 40), shape(ag, f32, 1u << 20));
  // Each algorithm learns apart.
  EXPECT_NE(shape(ag, f32, 1u << 20, 3), shape(ag, f32, 1u << 20, 4));
  EXPECT_EQ(shape(ag, f32, 1u << 20, 0), shape(ag, f32, 1u << 20));
  // Shapes learn apart.
  PathLearner learner;
  Calls calls;
  run(learner, calls, 40, 50, 70);
  EXPECT_EQ(learner.estimates(kShape + 1), (PathLearner::Times{-1, -1, -1}));
  EXPECT_EQ(learner.kept(kShape + 1), Way::kDirect);
}

}  // namespace
}  // namespace tutti::detail
