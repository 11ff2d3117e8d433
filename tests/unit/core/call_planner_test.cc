// CallPlanner: a call that repeats the last one checked is answered from memory, anything
// else is checked again (so that a loop of good calls followed by a bad one still gets the
// bad one's error); plans are kept per call shape and algorithm.

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/call_planner.h"
#include "core/message_ways.h"
#include "tuning/model.h"

namespace tutti::detail {
namespace {

constexpr int kRank = 1;
constexpr int kSize = 4;

CallPlanner::Setup setup() {
  CallPlanner::Setup s;
  s.rank = kRank;
  s.size = kSize;
  return s;
}

OpRequest allreduce(const void* in, void* out, std::uint64_t count) {
  OpRequest r;
  r.spec.kind = Collective::kAllReduce;
  r.spec.count = count;
  r.spec.dtype = DataType::kFloat32;
  r.spec.op = ReduceOp::kSum;
  r.input = in;
  r.output = out;
  return r;
}

// Checks `r` as the thread running calls does; *reused: whether memory answered.
Status check(CallPlanner& planner, OpRequest& r, bool* reused) {
  *reused = planner.recall(r);
  if (*reused) return Status::Ok();
  CallCheck verdict = planner.check(r);
  if (verdict.status.ok()) planner.remember(r);
  return verdict.status;
}

TEST(CallPlanner, RepeatedCallIsAnsweredWithTheSpecOfAFullCheck) {
  std::vector<float> a(8), b(8);
  CallPlanner cache(setup());
  bool reused = true;
  OpRequest first = allreduce(a.data(), b.data(), 8);
  ASSERT_TRUE(check(cache, first, &reused).ok());
  EXPECT_FALSE(reused);
  OpRequest again = allreduce(a.data(), b.data(), 8);
  again.spec.rank = 99;  // whatever the caller left there is overwritten, as checkCall does
  ASSERT_TRUE(check(cache, again, &reused).ok());
  EXPECT_TRUE(reused);
  EXPECT_EQ(again.spec.rank, kRank);
  EXPECT_EQ(again.spec.size, kSize);
  EXPECT_FALSE(again.spec.inPlace);

  // In place: the flag comes back set, from checkCall and from the cache alike.
  OpRequest inPlace = allreduce(a.data(), a.data(), 8);
  ASSERT_TRUE(check(cache, inPlace, &reused).ok());
  EXPECT_FALSE(reused);
  EXPECT_TRUE(inPlace.spec.inPlace);
  OpRequest inPlaceAgain = allreduce(a.data(), a.data(), 8);
  ASSERT_TRUE(check(cache, inPlaceAgain, &reused).ok());
  EXPECT_TRUE(reused);
  EXPECT_TRUE(inPlaceAgain.spec.inPlace);
}

TEST(CallPlanner, AnyChangedArgumentIsCheckedAgain) {
  std::vector<float> a(16), b(16);
  CallPlanner cache(setup());
  bool reused = false;
  OpRequest good = allreduce(a.data(), b.data(), 8);
  ASSERT_TRUE(check(cache, good, &reused).ok());

  // Overlapping buffers that are not in place: the same shape, other pointers.
  OpRequest overlap = allreduce(a.data(), a.data() + 4, 8);
  Status s = check(cache, overlap, &reused);
  EXPECT_FALSE(reused);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("overlap"), std::string::npos) << s.message();
  // The failed call is not remembered: the good one still is.
  OpRequest goodAgain = allreduce(a.data(), b.data(), 8);
  EXPECT_TRUE(check(cache, goodAgain, &reused).ok());
  EXPECT_TRUE(reused);

  // Each field on its own makes the cache answer no.
  auto refused = [&](auto change) {
    OpRequest r = allreduce(a.data(), b.data(), 8);
    change(r);
    return !cache.recall(r);
  };
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.kind = Collective::kBroadcast; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.count = 7; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.dtype = static_cast<DataType>(42); }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.op = ReduceOp::kMax; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.root = 2; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.peer = 3; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.tag = -1; }));
  EXPECT_TRUE(refused([&](OpRequest& r) { r.input = nullptr; }));
  EXPECT_TRUE(refused([&](OpRequest& r) { r.output = a.data(); }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.ownCount = 8; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.counts = {8, 8, 8, 8}; }));

  // A bad dtype after good calls of the same shape is still refused, naming the value.
  OpRequest badType = allreduce(a.data(), b.data(), 8);
  badType.spec.dtype = static_cast<DataType>(42);
  s = check(cache, badType, &reused);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dtype 42"), std::string::npos) << s.message();
}

TEST(CallPlanner, PerRankArraysAreNeverKept) {
  std::vector<float> a(16), b(16);
  CallPlanner cache(setup());
  bool reused = false;
  OpRequest r;
  r.spec.kind = Collective::kAllGatherV;
  r.spec.count = 0;
  r.spec.dtype = DataType::kFloat32;
  r.spec.counts = {1, 2, 3, 4};
  r.spec.displs = {0, 1, 3, 6};
  r.input = a.data();
  r.output = b.data();
  ASSERT_TRUE(check(cache, r, &reused).ok());
  OpRequest same = r;
  EXPECT_FALSE(cache.recall(same));
  // And an unchecked cache answers nothing.
  CallPlanner empty(setup());
  OpRequest any = allreduce(a.data(), b.data(), 8);
  EXPECT_FALSE(empty.recall(any));
}

// The same shape and algorithm get the same plan, kept; another shape, another algorithm
// forced, or buffers the ranks agreed are mapped get their own.
TEST(CallPlanner, PlansAreKeptPerShapeAndAlgorithm) {
  std::vector<float> a(64), b(64);
  CallPlanner planner(setup());
  auto planOf = [&](OpRequest r, std::string_view forced = "") {
    EXPECT_TRUE(planner.check(r).status.ok());
    Status error;
    const CallPlan* plan = planner.plan(r, forced, &error);
    EXPECT_NE(plan, nullptr) << error.message();
    return plan != nullptr ? *plan : CallPlan{};
  };
  const CallPlan first = planOf(allreduce(a.data(), b.data(), 8));
  EXPECT_EQ(planOf(allreduce(a.data(), b.data(), 8)).plan, first.plan);
  EXPECT_EQ(planOf(allreduce(b.data(), a.data(), 8)).plan, first.plan);  // other buffers
  const CallPlan other = planOf(allreduce(a.data(), b.data(), 16));
  EXPECT_NE(other.plan, first.plan);
  EXPECT_EQ(planOf(allreduce(a.data(), b.data(), 8)).plan, first.plan);  // from the cache
  const CallPlan ring = planOf(allreduce(a.data(), b.data(), 8), "ring");
  EXPECT_STREQ(ring.algorithm->name, "ring");
  const CallPlan doubling = planOf(allreduce(a.data(), b.data(), 8), "recursive_doubling");
  EXPECT_STREQ(doubling.algorithm->name, "recursive_doubling");
  EXPECT_NE(ring.plan, doubling.plan);
  // An algorithm that does not exist is refused, naming it, however often the shape ran.
  OpRequest bad = allreduce(a.data(), b.data(), 8);
  ASSERT_TRUE(planner.check(bad).status.ok());
  Status error;
  EXPECT_EQ(planner.plan(bad, "no_such_algorithm", &error), nullptr);
  EXPECT_NE(error.message().find("no_such_algorithm"), std::string::npos) << error.message();
}

// A call recall() answered is planned as the last call was, unless what was decided after
// the check differs: the algorithm forced, or the buffers the ranks agreed on.
TEST(CallPlanner, ARecalledCallGetsTheLastPlanUnlessTheChoiceDiffers) {
  std::vector<float> a(64), b(64);
  CallPlanner planner(setup());
  OpRequest first = allreduce(a.data(), b.data(), 8);
  bool reused = true;
  ASSERT_TRUE(check(planner, first, &reused).ok());
  Status error;
  const CallPlan kept = *planner.plan(first, "", &error);
  OpRequest again = allreduce(a.data(), b.data(), 8);
  ASSERT_TRUE(check(planner, again, &reused).ok());
  ASSERT_TRUE(reused);
  EXPECT_EQ(again.memo, first.memo);
  EXPECT_NE(again.memo, 0u);
  EXPECT_EQ(planner.plan(again, "", &error)->plan, kept.plan);
  OpRequest forced = allreduce(a.data(), b.data(), 8);
  ASSERT_TRUE(check(planner, forced, &reused).ok());
  ASSERT_TRUE(reused);
  const CallPlan* forcedPlan = planner.plan(forced, "ring", &error);
  ASSERT_NE(forcedPlan, nullptr) << error.message();
  const CallPlan ring = *forcedPlan;  // plan() answers in place: copied before the next
  EXPECT_STREQ(ring.algorithm->name, "ring");
  OpRequest shared = allreduce(a.data(), b.data(), 8);
  ASSERT_TRUE(check(planner, shared, &reused).ok());
  shared.spec.sharedBuffers = true;  // as if the ranks had agreed their buffers are mapped
  const CallPlan* other = planner.plan(shared, "ring", &error);
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->plan, ring.plan);  // the same algorithm and shape: the cached plan
}

// A recalled call is planned with the communicator's hosts as a checked one is: a
// hierarchical algorithm forced after another algorithm, on the same arguments, applies.
TEST(CallPlanner, ARecalledCallKeepsTheHostsForItsPlan) {
  std::vector<float> a(64), b(64);
  CallPlanner::Setup s = setup();
  s.hosts = std::make_shared<const HostMap>(HostMap::fromLabels({0, 0, 1, 1}));
  CallPlanner planner(s);
  bool reused = true;
  Status error;
  OpRequest first = allreduce(a.data(), b.data(), 8);
  ASSERT_TRUE(check(planner, first, &reused).ok());
  ASSERT_NE(planner.plan(first, "ring", &error), nullptr) << error.message();
  OpRequest again = allreduce(a.data(), b.data(), 8);
  ASSERT_TRUE(check(planner, again, &reused).ok());
  ASSERT_TRUE(reused);
  EXPECT_EQ(again.spec.hosts, s.hosts.get());
  const CallPlan* hier = planner.plan(again, "hier_rs_ag", &error);
  ASSERT_NE(hier, nullptr) << error.message();
  EXPECT_STREQ(hier->algorithm->name, "hier_rs_ag");
}

// While held (point-to-point calls in flight), no plan moves however many shapes come.
TEST(CallPlanner, HeldPlansStayWhereTheyAre) {
  std::vector<float> a(256), b(256);
  CallPlanner planner(setup());
  std::vector<const Plan*> plans;
  planner.hold(true);
  for (std::uint64_t count = 1; count <= 100; ++count) {
    OpRequest r = allreduce(a.data(), b.data(), count);
    ASSERT_TRUE(planner.check(r).status.ok());
    Status error;
    plans.push_back(planner.plan(r, "", &error)->plan);
  }
  for (std::uint64_t count = 1; count <= 100; ++count) {
    OpRequest r = allreduce(a.data(), b.data(), count);
    ASSERT_TRUE(planner.check(r).status.ok());
    Status error;
    EXPECT_EQ(planner.plan(r, "", &error)->plan, plans[count - 1]) << count;
  }
  planner.hold(false);
  EXPECT_EQ(std::set<const Plan*>(plans.begin(), plans.end()).size(), plans.size());
}

// With a tuner (TUTTI_TUNER=model), the planner runs the tuner's algorithm with the tuner's
// segment, and a forced algorithm with its best segment by the model.
TEST(CallPlanner, TheTunersChoiceAndSegmentArePlanned) {
  tuning::TunerSetup tuning;
  tuning.model = tuning::defaults();
  tuning.placement = *tuning::Placement::synthetic(kSize, kSize, 4);
  CallPlanner::Setup s = setup();
  s.sharedMemory = true;
  s.tuner = std::make_shared<tuning::Tuner>(tuning);
  CallPlanner planner(s);
  std::vector<float> a(1 << 20), b(1 << 20);
  OpRequest r = allreduce(a.data(), b.data(), a.size());
  ASSERT_TRUE(planner.check(r).status.ok());
  auto decision = s.tuner->explain(r.spec);
  ASSERT_TRUE(decision.ok());
  Status error;
  const CallPlan* plan = planner.plan(r, "", &error);
  ASSERT_NE(plan, nullptr) << error.toString();
  EXPECT_EQ(plan->algorithm, decision->chosen.algorithm);
  CollectiveSpec tuned = r.spec;
  tuned.segmentCount = decision->chosen.segmentBytes / 4;
  EXPECT_EQ(plan->plan->schedule.steps.size(), plan->algorithm->build(tuned).steps.size());

  const CallPlan* ring = planner.plan(r, "ring", &error);
  ASSERT_NE(ring, nullptr) << error.toString();
  EXPECT_STREQ(ring->algorithm->name, "ring");
  for (const tuning::Candidate& c : decision->ranking) {
    if (c.algorithm != ring->algorithm) continue;
    tuned.segmentCount = c.segmentBytes / 4;  // the ring's best segment comes first
    EXPECT_EQ(ring->plan->schedule.steps.size(), ring->algorithm->build(tuned).steps.size());
    break;
  }
}

// "NAME@SEGMENT" forces the segment with the algorithm, with a tuner or without; each
// segment has its own plan; a malformed one is refused, quoting it.
TEST(CallPlanner, AForcedSegmentRunsThePipelineAtIt) {
  tuning::TunerSetup tuning;
  tuning.model = tuning::defaults();
  tuning.placement = *tuning::Placement::synthetic(kSize, kSize, 4);
  for (const bool tuned : {false, true}) {
    CallPlanner::Setup s = setup();
    s.sharedMemory = true;
    if (tuned) s.tuner = std::make_shared<tuning::Tuner>(tuning);
    CallPlanner planner(s);
    std::vector<float> a(1 << 20), b(1 << 20);
    OpRequest r = allreduce(a.data(), b.data(), a.size());
    ASSERT_TRUE(planner.check(r).status.ok());
    Status error;
    std::map<std::uint64_t, const Plan*> plans;
    for (const std::uint64_t kib : {64, 256}) {
      const CallPlan* plan = planner.plan(r, "ring@" + std::to_string(kib) + "K", &error);
      ASSERT_NE(plan, nullptr) << error.toString();
      EXPECT_STREQ(plan->algorithm->name, "ring");
      CollectiveSpec spec = r.spec;
      spec.segmentCount = kib * 1024 / 4;
      EXPECT_EQ(plan->plan->schedule.steps.size(), plan->algorithm->build(spec).steps.size())
          << kib << " KiB, tuned " << tuned;
      plans[kib] = plan->plan;
    }
    EXPECT_NE(plans[64], plans[256]);
    EXPECT_EQ(planner.plan(r, "ring@64K", &error)->plan, plans[64]);  // kept
    for (const char* bad : {"ring@", "ring@0", "@64K", "ring@2G", "ring@64Q"}) {
      EXPECT_EQ(planner.plan(r, bad, &error), nullptr) << bad;
      EXPECT_NE(error.message().find(std::string("forced algorithm '") + bad +
                                     "': expected NAME or NAME@SEGMENT"),
                std::string::npos)
          << error.message();
    }
  }
}

// Where it learns, a shape whose tuner finds close contenders gets them, each runnable as
// a forced choice (NAME@SEGMENT) and planned with its algorithm and segment; a repeated
// call finds its shape by memory; in place or not, a call has the same shape (ranks may
// differ in it). Nothing is learnt without the setting, without a tuner, with an algorithm
// forced, or for per-rank arrays; algorithmFor answers what a decided shape keeps.
TEST(CallPlanner, ShapesWithCloseContendersLearnAmongThem) {
  tuning::TunerSetup tuning;
  tuning.model = tuning::defaults();
  tuning.placement = *tuning::Placement::synthetic(kSize, kSize, 4);
  tuning.contenderRatio = 100;  // every algorithm is close: contenders for any shape
  CallPlanner::Setup s = setup();
  s.sharedMemory = true;
  s.tuner = std::make_shared<tuning::Tuner>(tuning);
  s.learnsContenders = true;
  CallPlanner planner(s);
  std::vector<float> a(1 << 20), b(1 << 20);
  OpRequest r = allreduce(a.data(), b.data(), a.size());
  bool reused = false;
  ASSERT_TRUE(check(planner, r, &reused).ok());
  AlgorithmLearner::Shape* shape = planner.learning(r);
  ASSERT_NE(shape, nullptr);
  const std::vector<tuning::Choice> contenders = s.tuner->contenders(r.spec);
  ASSERT_EQ(shape->names().size(), contenders.size());
  ASSERT_GE(contenders.size(), 2u);
  // Tries as long as the model's choice allows.
  EXPECT_GT(contenders[0].seconds, 0);
  EXPECT_EQ(shape->timedCalls(), AlgorithmLearner::timedCallsFor(contenders[0].seconds * 1e9));
  for (std::size_t c = 0; c < contenders.size(); ++c) {
    const std::string& name = shape->names()[c];
    EXPECT_EQ(name, std::string(contenders[c].algorithm->name) + "@" +
                        std::to_string(contenders[c].segmentBytes));
    Status error;
    const CallPlan* plan = planner.plan(r, name, &error);
    ASSERT_NE(plan, nullptr) << name << ": " << error.toString();
    EXPECT_EQ(plan->algorithm, contenders[c].algorithm);
    CollectiveSpec spec = r.spec;
    spec.segmentCount = contenders[c].segmentBytes / 4;
    EXPECT_EQ(plan->plan->schedule.steps.size(), plan->algorithm->build(spec).steps.size());
  }
  // The same call again, by memory; in place, the same shape.
  OpRequest again = allreduce(a.data(), b.data(), a.size());
  ASSERT_TRUE(check(planner, again, &reused).ok());
  EXPECT_TRUE(reused);
  EXPECT_EQ(planner.learning(again), shape);
  OpRequest inPlace = allreduce(b.data(), b.data(), a.size());
  ASSERT_TRUE(check(planner, inPlace, &reused).ok());
  EXPECT_TRUE(inPlace.spec.inPlace);
  EXPECT_EQ(planner.learning(inPlace), shape);
  // Before a decision algorithmFor answers the model's choice; after, the one kept.
  auto before = planner.algorithmFor(Collective::kAllReduce, a.size(), DataType::kFloat32, "", false);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(*before, contenders[0].algorithm->name);
  AlgorithmLearner::Times sums;
  sums.fill(1000);
  sums[1] = 10;  // contender 1 measured fastest
  while (!AlgorithmLearner::choose(*shape).decides) {
  }
  bool changed = false;
  EXPECT_EQ(AlgorithmLearner::decide(*shape, sums, &changed), 1u);
  auto after = planner.algorithmFor(Collective::kAllReduce, a.size(), DataType::kFloat32, "", false);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(*after, contenders[1].algorithm->name);

  // Not learnt: forced by TUTTI_ALGO; without the setting; without a tuner.
  CallPlanner::Setup forced = s;
  forced.forced[static_cast<std::size_t>(Collective::kAllReduce)] = "ring";
  CallPlanner::Setup off = s;
  off.learnsContenders = false;
  CallPlanner::Setup table = s;
  table.tuner = nullptr;
  for (const CallPlanner::Setup& other : {forced, off, table}) {
    CallPlanner p(other);
    OpRequest call = allreduce(a.data(), b.data(), a.size());
    ASSERT_TRUE(check(p, call, &reused).ok());
    EXPECT_EQ(p.learning(call), nullptr);
  }
  // A shape with one candidate close to the choice has nothing to learn.
  tuning::TunerSetup strict = tuning;
  strict.contenderRatio = 1.0;
  strict.maxContenders = 1;
  CallPlanner::Setup one = s;
  one.tuner = std::make_shared<tuning::Tuner>(strict);
  CallPlanner single(one);
  OpRequest call = allreduce(a.data(), b.data(), a.size());
  ASSERT_TRUE(check(single, call, &reused).ok());
  EXPECT_EQ(single.learning(call), nullptr);
}

// The thresholds measured on one machine are the machine model's parameters: their
// defaults here are the model's defaults, so a host without a model file decides as before.
TEST(MeasuredThresholds, DefaultToTheModelsDefaults) {
  const tuning::MachineModel d = tuning::defaults();
  EXPECT_EQ(CallPlanner::Setup{}.buffersAgreedFrom, d.buffersAgreedFrom);
  EXPECT_EQ(MessageRules{}.ringBlocksFrom, d.ringBlocksFrom);
  EXPECT_EQ(MessageRules{}.pairAllReduceRingsUpTo, d.pairAllReduceRingsUpTo);
}

// choiceNeedsBuffers: an all-reduce among 3 to 8 ranks over shared memory, from the model's
// size on.
TEST(MeasuredThresholds, BuffersAreAgreedFromTheModelsSize) {
  CollectiveSpec spec;
  spec.kind = Collective::kAllReduce;
  spec.dtype = DataType::kFloat32;
  spec.sharedMemory = true;
  spec.size = 4;
  spec.count = (1u << 20) / 4;
  EXPECT_TRUE(choiceNeedsBuffers(spec));
  spec.count -= 1;
  EXPECT_FALSE(choiceNeedsBuffers(spec));
  EXPECT_TRUE(choiceNeedsBuffers(spec, 64u << 10));
  CallPlanner::Setup s = setup();
  s.buffersAgreedFrom = 256u << 10;
  const CallPlanner planner(s);
  spec.count = (256u << 10) / 4;
  EXPECT_TRUE(planner.needsBuffers(spec));
  spec.count -= 1;
  EXPECT_FALSE(planner.needsBuffers(spec));
  spec.count = 1u << 20;
  spec.size = 2;  // 2 ranks: never
  EXPECT_FALSE(planner.needsBuffers(spec));
}

// prefersCopy: reductions always; a 2-rank all-reduce up to pairAllReduceRingsUpTo and from
// halves of ringBlocksFrom; all-gather and all-to-all from blocks of ringBlocksFrom.
TEST(MeasuredThresholds, PrefersCopyDecidesByTheModelsSizes) {
  auto spec = [](Collective kind, int size, std::uint64_t bytes) {
    CollectiveSpec s;
    s.kind = kind;
    s.dtype = DataType::kUint8;
    s.size = size;
    s.count = bytes;
    return s;
  };
  const std::uint64_t MiB = 1u << 20;
  EXPECT_TRUE(prefersCopy(spec(Collective::kReduceScatter, 2, 1)));
  EXPECT_FALSE(prefersCopy(spec(Collective::kBroadcast, 2, 256 * MiB)));
  // The defaults: 4 MiB and 32 MiB.
  EXPECT_TRUE(prefersCopy(spec(Collective::kAllReduce, 2, 4 * MiB)));
  EXPECT_FALSE(prefersCopy(spec(Collective::kAllReduce, 2, 4 * MiB + 1)));
  EXPECT_FALSE(prefersCopy(spec(Collective::kAllReduce, 2, 64 * MiB - 2)));
  EXPECT_TRUE(prefersCopy(spec(Collective::kAllReduce, 2, 64 * MiB)));
  EXPECT_TRUE(prefersCopy(spec(Collective::kAllReduce, 3, 8 * MiB)));
  EXPECT_FALSE(prefersCopy(spec(Collective::kAllGather, 2, 32 * MiB - 1)));
  EXPECT_TRUE(prefersCopy(spec(Collective::kAllToAll, 2, 32 * MiB)));
  // Another machine's.
  const MessageRules rules{8 * MiB, 1 * MiB};
  EXPECT_TRUE(prefersCopy(spec(Collective::kAllReduce, 2, 1 * MiB), rules));
  EXPECT_FALSE(prefersCopy(spec(Collective::kAllReduce, 2, 2 * MiB), rules));
  EXPECT_TRUE(prefersCopy(spec(Collective::kAllReduce, 2, 16 * MiB), rules));
  EXPECT_FALSE(prefersCopy(spec(Collective::kAllGather, 2, 8 * MiB - 1), rules));
  EXPECT_TRUE(prefersCopy(spec(Collective::kAllGather, 2, 8 * MiB), rules));
}

}  // namespace
}  // namespace tutti::detail
