// The algorithm learner (core/algorithm_learner.h), fed made-up call times: the opening's
// calls (a warm-up, then a try of each) and which of them count, keeping the fastest contender by the ranks' summed
// estimates, ties to the model's order, tries as long as the model's prediction allows,
// estimates that are means (an alternating contender is not taken for its fast calls) with
// a descheduled call clipped, the first cycle's length and the later ones' by how much
// slower the other was, taking turns over the other contenders, following the machine when
// another becomes faster, keeping a contender against a less than 3% faster one, one
// without a time never kept over one with (and one kept without a time staying), deciding
// alike on ranks with different times, and each contender's first call marked as a
// one-time cost.

#include "core/algorithm_learner.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "base/pool_growth.h"

namespace tutti::detail {
namespace {

using Learner = AlgorithmLearner;
// The calls of a try of a shape made without a prediction.
constexpr std::uint64_t kTries = Learner::kMinTimed + 1;
// Its cycles, in calls.
constexpr std::uint64_t kPeriod = kTries * Learner::kExplorePeriod;
constexpr std::uint64_t kFarPeriod = kTries * Learner::kExploreFarPeriod;
constexpr std::uint64_t kFarthestPeriod = kTries * Learner::kExploreFarthestPeriod;

std::vector<std::string> names(std::size_t k) {
  std::vector<std::string> out;
  for (std::size_t c = 0; c < k; ++c) out.push_back("algo" + std::to_string(c) + "@65536");
  return out;
}

struct Calls {
  std::vector<std::size_t> ran;        // each call's contender
  std::vector<std::size_t> decisions;  // the calls that were decisions
  int changes = 0;
};

// The time of a contender's call, given the contender and how many calls of it ran before.
using TimeOf = std::function<std::int64_t(std::size_t contender, std::size_t before)>;

// Runs `count` calls of `shape`, standing for `ranks` ranks with the same times (a
// decision gets the estimates times `ranks`): each call of contender c takes time(c, ...);
// the first call of a contender after another `first` ns more.
void run(Learner::Shape& shape, Calls& calls, int count, const TimeOf& time, int ranks = 2,
         std::int64_t first = 0) {
  std::vector<std::size_t> before(Learner::kMaxContenders);
  for (int i = 0; i < count; ++i) {
    Learner::Pick pick = Learner::choose(shape);
    if (pick.decides) {
      Learner::Times sums = Learner::estimates(shape);
      for (std::int64_t& t : sums) t = t < 0 ? -1 : t * ranks;
      bool changed = false;
      pick.contender = Learner::decide(shape, sums, &changed);
      calls.changes += changed ? 1 : 0;
      calls.decisions.push_back(calls.ran.size());
    }
    const bool switched = calls.ran.empty() || calls.ran.back() != pick.contender;
    Learner::record(shape, time(pick.contender, before[pick.contender]++) + (switched ? first : 0));
    calls.ran.push_back(pick.contender);
  }
}

// Each call of contender c takes ns[c].
void run(Learner::Shape& shape, Calls& calls, int count, const std::vector<std::int64_t>& ns,
         int ranks = 2, std::int64_t first = 0) {
  run(shape, calls, count, [&ns](std::size_t c, std::size_t) { return ns[c]; }, ranks, first);
}

TEST(AlgorithmLearner, TheOpeningRunsEachContenderInTheModelsOrderThenKeepsTheFastest) {
  Learner::Shape shape(names(3));
  EXPECT_EQ(shape.openingCalls(), 4 * kTries);
  Calls calls;
  // The first call of each contender (untimed) takes 100 times as long: not counted.
  run(shape, calls, static_cast<int>(4 * kTries) + 1, {300, 100, 200}, 2, 30000);
  const std::vector<std::size_t> opening = {0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 1};
  EXPECT_EQ(calls.ran, opening);
  ASSERT_EQ(calls.decisions.size(), 1u);
  EXPECT_EQ(calls.decisions[0], 4 * kTries);
  EXPECT_TRUE(shape.decided());
  EXPECT_EQ(shape.kept(), 1u);
  EXPECT_EQ(calls.changes, 1);
}

TEST(AlgorithmLearner, TheShapesFirstCallsWarmUpAndAreNotCountedAgainstTheModelsChoice) {
  // The shape's first calls touch its buffers for the first time: its first kTries calls
  // take 50 times as long. They are the warm-up's (contender 0, untimed), and contender 0,
  // the fastest after them, is kept.
  Learner::Shape shape(names(3));
  Calls calls;
  run(shape, calls, static_cast<int>(shape.openingCalls()) + 1,
      [](std::size_t c, std::size_t before) -> std::int64_t {
        if (c == 0) return before < kTries ? 5000 : 100;
        return c == 1 ? 150 : 200;
      });
  ASSERT_EQ(calls.decisions.size(), 1u);
  EXPECT_EQ(shape.kept(), 0u);
  EXPECT_EQ(Learner::estimates(shape)[0], 100);
}

TEST(AlgorithmLearner, TiesGoToTheModelsOrder) {
  Learner::Shape shape(names(3));
  Calls calls;
  run(shape, calls, static_cast<int>(shape.openingCalls()) + 1, {200, 100, 100});
  EXPECT_EQ(shape.kept(), 1u);
}

TEST(AlgorithmLearner, TheFirstCycleIsShortThenTheOthersTakeTurnsAtItsEnd) {
  Learner::Shape shape(names(3));
  Calls calls;
  // Contender 0 is far the fastest: the first cycle is still kPeriod long, later ones
  // kFarthestPeriod.
  const int opening = static_cast<int>(shape.openingCalls());
  const int total = opening + static_cast<int>(kPeriod + 2 * kFarthestPeriod) + 1;
  run(shape, calls, total, {100, 1000, 1000});
  ASSERT_EQ(calls.decisions.size(), 4u);
  EXPECT_EQ(calls.decisions[1] - calls.decisions[0], kPeriod);
  EXPECT_EQ(calls.decisions[2] - calls.decisions[1], kFarthestPeriod);
  EXPECT_EQ(calls.decisions[3] - calls.decisions[2], kFarthestPeriod);
  // Each cycle's last kTries calls try another contender, in turn: 1, then 2, then 1.
  const std::size_t tried[] = {1, 2, 1};
  for (std::size_t d = 1; d < calls.decisions.size(); ++d) {
    const std::size_t end = calls.decisions[d];
    for (std::size_t i = calls.decisions[d - 1]; i < end; ++i) {
      const bool trying = i + kTries >= end;
      EXPECT_EQ(calls.ran[i], trying ? tried[d - 1] : 0u) << "call " << i;
    }
  }
  EXPECT_EQ(shape.kept(), 0u);
  EXPECT_EQ(calls.changes, 1);
}

TEST(AlgorithmLearner, CyclesLastLongerTheSlowerTheOtherWas) {
  const int opening = static_cast<int>(3 * kTries);  // two contenders: warm-up and 2 tries
  const struct {
    std::int64_t other;
    std::uint64_t period;
  } cases[] = {{120, kPeriod},
               {140, kFarPeriod},
               {300, kFarthestPeriod}};
  for (const auto& c : cases) {
    Learner::Shape shape(names(2));
    Calls calls;
    run(shape, calls, opening + static_cast<int>(2 * kPeriod + c.period), {100, c.other});
    ASSERT_GE(calls.decisions.size(), 3u) << c.other;
    EXPECT_EQ(calls.decisions[2] - calls.decisions[1], c.period) << c.other;
  }
}

TEST(AlgorithmLearner, FollowsTheMachineWhenAnotherBecomesFaster) {
  Learner::Shape shape(names(3));
  Calls calls;
  run(shape, calls, 400, {100, 150, 200});
  EXPECT_EQ(shape.kept(), 0u);
  // Contender 2 now takes half as long as 0: kept within two cycles (it is tried every
  // other cycle), far fewer calls than it takes to learn from scratch twice.
  run(shape, calls, 2 * static_cast<int>(kFarthestPeriod) + 1, {100, 150, 50});
  EXPECT_EQ(shape.kept(), 2u);
  EXPECT_EQ(calls.changes, 2);
}

TEST(AlgorithmLearner, KeepsItsContenderAgainstALessThanThreePercentFasterOne) {
  Learner::Shape shape(names(2));
  Calls calls;
  run(shape, calls, 100, {100, 110});
  ASSERT_EQ(shape.kept(), 0u);
  run(shape, calls, 300, {100, 98});
  EXPECT_EQ(shape.kept(), 0u);
  run(shape, calls, 300, {100, 96});
  EXPECT_EQ(shape.kept(), 1u);
}

TEST(AlgorithmLearner, AContenderWithoutATimeIsNotKeptOverOneWithATime) {
  Learner::Shape shape(names(2));
  // Contender 0's calls all failed somewhere (no time on some rank): -1 in the sums.
  for (std::uint64_t i = 0; i < shape.openingCalls(); ++i) {
    const Learner::Pick pick = Learner::choose(shape);
    ASSERT_FALSE(pick.decides);
    if (pick.contender == 1) Learner::record(shape, 500);
  }
  const Learner::Pick pick = Learner::choose(shape);
  ASSERT_TRUE(pick.decides);
  Learner::Times sums = Learner::estimates(shape);
  EXPECT_EQ(sums[0], -1);
  EXPECT_EQ(sums[1], 500);
  bool changed = false;
  EXPECT_EQ(Learner::decide(shape, sums, &changed), 1u);
  EXPECT_TRUE(changed);
}

TEST(AlgorithmLearner, AKeptContenderWithoutATimeStays) {
  // After the opening keeps contender 0, its calls before a try are all left out (their
  // messages tried another way): nothing was measured against it, and it stays.
  Learner::Shape shape(names(2));
  Calls calls;
  run(shape, calls, static_cast<int>(shape.openingCalls()) + 1, {100, 200});
  ASSERT_EQ(shape.kept(), 0u);
  for (std::uint64_t i = 0; i + 1 < kPeriod; ++i) {
    const Learner::Pick pick = Learner::choose(shape);
    ASSERT_FALSE(pick.decides);
    if (pick.contender == 1) Learner::record(shape, 50);
  }
  const Learner::Pick pick = Learner::choose(shape);
  ASSERT_TRUE(pick.decides);
  Learner::Times sums = Learner::estimates(shape);
  EXPECT_EQ(sums[0], -1);
  EXPECT_EQ(sums[1], 50);
  bool changed = false;
  EXPECT_EQ(Learner::decide(shape, sums, &changed), 0u);
  EXPECT_FALSE(changed);
}

TEST(AlgorithmLearner, RanksWithDifferentTimesDecideAlike) {
  // Each rank's own times differ, its estimates too; the sums every rank decides from
  // are the same, and so are the decisions.
  std::deque<Learner::Shape> ranks;
  for (int r = 0; r < 3; ++r) ranks.emplace_back(names(3));
  const std::vector<std::vector<std::int64_t>> ns = {{100, 90, 130}, {120, 125, 110}, {90, 100, 95}};
  std::vector<std::size_t> kept;
  for (int call = 0; call < 600; ++call) {
    std::vector<Learner::Pick> picks;
    for (auto& shape : ranks) picks.push_back(Learner::choose(shape));
    for (std::size_t r = 1; r < ranks.size(); ++r) {
      ASSERT_EQ(picks[r].decides, picks[0].decides) << call;
      if (!picks[0].decides) {
        ASSERT_EQ(picks[r].contender, picks[0].contender) << call;
      }
    }
    if (picks[0].decides) {
      Learner::Times sums{};
      for (auto& shape : ranks) {
        const Learner::Times mine = Learner::estimates(shape);
        for (std::size_t c = 0; c < sums.size(); ++c)
          sums[c] = sums[c] < 0 || mine[c] < 0 ? -1 : sums[c] + mine[c];
      }
      bool changed = false;
      for (std::size_t r = 0; r < ranks.size(); ++r)
        picks[r].contender = Learner::decide(ranks[r], sums, &changed);
      for (std::size_t r = 1; r < ranks.size(); ++r)
        ASSERT_EQ(picks[r].contender, picks[0].contender);
      kept.push_back(picks[0].contender);
    }
    for (std::size_t r = 0; r < ranks.size(); ++r)
      Learner::record(ranks[r], ns[r][picks[r].contender]);
  }
  ASSERT_FALSE(kept.empty());
  // Summed: 310, 315, 335: contender 0.
  EXPECT_EQ(kept.back(), 0u);
}

TEST(AlgorithmLearner, AtMostFourContendersAndEachOnesFirstCallIsAOneTimeCost) {
  Learner::Shape shape(names(6));
  EXPECT_EQ(shape.names().size(), Learner::kMaxContenders);
  const std::uint64_t before = poolGrowth().done;
  Calls calls;
  run(shape, calls, static_cast<int>(shape.openingCalls()) + 1, {100, 100, 100, 100});
  EXPECT_EQ(poolGrowth().done - before, Learner::kMaxContenders);
}

TEST(AlgorithmLearner, TriesLastAsManyCallsAsTheModelsPredictionAllows) {
  EXPECT_EQ(Learner::timedCallsFor(0), Learner::kMinTimed);
  EXPECT_EQ(Learner::timedCallsFor(Learner::kTryBudgetNs), Learner::kMinTimed);
  EXPECT_EQ(Learner::timedCallsFor(Learner::kTryBudgetNs / 10), 10u);
  EXPECT_EQ(Learner::timedCallsFor(Learner::kTryBudgetNs / 1000), Learner::kMaxTimed);
  // A try of 10 timed calls after 2 untimed: the opening runs 12 calls of the warm-up and
  // 12 of each contender; a cycle's last 12 try another, and the kept one's 10 before them
  // are timed (the first of each after another's: 1000 times slower, counted it would lose).
  Learner::Shape shape(names(2), 10);
  EXPECT_EQ(shape.timedCalls(), 10u);
  EXPECT_EQ(shape.tryCalls(), 12u);
  Calls calls;
  const int opening = 36;
  EXPECT_EQ(shape.openingCalls(), 36u);
  const int cycle = static_cast<int>(12 * Learner::kExplorePeriod);
  run(shape, calls, opening + cycle + 1, {100, 110}, 2, 100000);
  ASSERT_EQ(calls.decisions.size(), 2u);
  EXPECT_EQ(calls.decisions[0], 36u);
  EXPECT_EQ(calls.decisions[1], static_cast<std::size_t>(opening + cycle));
  for (int i = 0; i < opening; ++i) EXPECT_EQ(calls.ran[i], i < 24 ? 0u : 1u) << i;
  for (int i = opening; i < opening + cycle; ++i)
    EXPECT_EQ(calls.ran[i], i >= opening + cycle - 12 ? 1u : 0u) << i;
  EXPECT_EQ(shape.kept(), 0u);
  EXPECT_EQ(calls.changes, 1);
}

TEST(AlgorithmLearner, AnAlternatingContenderIsNotTakenForItsFastCalls) {
  // Contender 0's calls take 20 and 80 us in turn (its ranks take turns at waiting): a
  // loop of them runs at 50 us a call, slower than contender 1's steady 45.
  Learner::Shape shape(names(2), 8);
  Calls calls;
  run(shape, calls, static_cast<int>(shape.openingCalls()) + 1, [](std::size_t c, std::size_t before) -> std::int64_t {
    if (c == 1) return 45000;
    return before % 2 == 0 ? 20000 : 80000;
  });
  EXPECT_EQ(shape.kept(), 1u);
}

TEST(AlgorithmLearner, ADescheduledCallCountsAsASlowOneNotAsAHundred) {
  // One call of contender 0 took 100 times as long (its rank lost the core): clipped at
  // kClip times the median, its mean is 125 us, still faster than contender 1's 130.
  Learner::Shape shape(names(2), 8);
  Calls calls;
  const std::size_t warmup = shape.tryCalls();
  run(shape, calls, static_cast<int>(shape.openingCalls()) + 1, [warmup](std::size_t c, std::size_t before) -> std::int64_t {
    if (c == 1) return 130000;
    return before == warmup + 4 ? 10000000 : 100000;
  });
  EXPECT_EQ(shape.kept(), 0u);
  const Learner::Times estimates = Learner::estimates(shape);
  EXPECT_EQ(estimates[0], (7 * 100000 + Learner::kClip * 100000) / 8);
  EXPECT_EQ(estimates[1], 130000);
}

TEST(AlgorithmLearner, ADecisionNotMadeIsAskedForAgainByTheNextCall) {
  // A failed communicator's calls skip the agreement: the contenders stay in range and
  // each later call asks for the decision, which then runs as usual.
  Learner::Shape shape(names(2));
  for (std::uint64_t i = 0; i < shape.openingCalls(); ++i) {
    (void)Learner::choose(shape);
    Learner::record(shape, 100);
  }
  for (int skipped = 0; skipped < 3; ++skipped) {
    const Learner::Pick pick = Learner::choose(shape);
    EXPECT_TRUE(pick.decides);
    EXPECT_LT(pick.contender, shape.names().size());
  }
  Learner::Times sums = Learner::estimates(shape);
  bool changed = false;
  EXPECT_LT(Learner::decide(shape, sums, &changed), shape.names().size());
  EXPECT_TRUE(shape.decided());
  EXPECT_FALSE(Learner::choose(shape).decides);
}

}  // namespace
}  // namespace tutti::detail
