// The tuner (src/tuning/tuner.h): its ranking on clear-cut shapes with wide margins, ties
// and segments, its cache, the shapes it leaves to the table, and forced choices. No
// timing: every number is a prediction over the models of tuning_models.h.

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tuning/tuner.h"
#include "unit/tuning/tuning_models.h"

namespace tutti::tuning {
namespace {

using test::fastModel;
using test::setupFor;
using test::slowNetworkModel;
using test::specFor;

std::string name(const Candidate& c) { return c.algorithm->name; }

bool hierarchical(const Candidate& c) { return name(c).rfind("hier", 0) == 0; }

// The best candidate that `pick` accepts.
const Candidate* bestOf(const std::vector<Candidate>& ranking, bool (*pick)(const Candidate&)) {
  for (const Candidate& c : ranking)
    if (pick(c)) return &c;
  return nullptr;
}

// An all-to-allv of 256 elements per pair on 4 ranks: a shape the model does not price.
CollectiveSpec allToAllvSpec(const TunerSetup& setup) {
  CollectiveSpec spec = specFor(setup, 1024, Collective::kAllToAllV);
  spec.counts.assign(4, 256);
  spec.displs = {0, 256, 512, 768};
  spec.recvCounts = spec.counts;
  spec.recvDispls = spec.displs;
  return spec;
}

TEST(Tuner, HierarchicalBeatsFlatAcrossHostsOnASlowNetwork) {
  const TunerSetup setup = setupFor(slowNetworkModel(), 8, 4, TransportKind::kHybrid);
  auto ranking = rankCandidates(specFor(setup, 64 << 20), setup);
  ASSERT_TRUE(ranking.ok()) << ranking.status().toString();
  EXPECT_TRUE(hierarchical(ranking->front())) << describe(ranking->front());
  const Candidate* flat = bestOf(*ranking, [](const Candidate& c) { return !hierarchical(c); });
  ASSERT_NE(flat, nullptr);
  EXPECT_GT(flat->seconds, 1.3 * ranking->front().seconds)
      << describe(*flat) << " against " << describe(ranking->front());
}

TEST(Tuner, FewRoundsBeatTheRingForEightBytes) {
  const TunerSetup setup = setupFor(fastModel(), 8, 8, TransportKind::kShm);
  auto ranking = rankCandidates(specFor(setup, 8), setup);
  ASSERT_TRUE(ranking.ok()) << ranking.status().toString();
  EXPECT_NE(name(ranking->front()), "ring");
  const Candidate* ring = bestOf(*ranking, [](const Candidate& c) { return name(c) == "ring"; });
  ASSERT_NE(ring, nullptr);
  EXPECT_GT(ring->seconds, 2 * ranking->front().seconds)
      << describe(*ring) << " against " << describe(ranking->front());
}

TEST(Tuner, EveryRankRanksAlike) {
  const TunerSetup setup = setupFor(fastModel(), 8, 4, TransportKind::kHybrid);
  for (std::uint64_t bytes : {8ull, 64ull << 10, 4ull << 20}) {
    auto first = rankCandidates(specFor(setup, bytes, Collective::kAllReduce, 0), setup);
    auto other = rankCandidates(specFor(setup, bytes, Collective::kAllReduce, 5), setup);
    ASSERT_TRUE(first.ok() && other.ok());
    ASSERT_EQ(first->size(), other->size());
    for (std::size_t i = 0; i < first->size(); ++i) {
      EXPECT_EQ((*first)[i].algorithm, (*other)[i].algorithm) << bytes << " #" << i;
      EXPECT_EQ((*first)[i].segmentBytes, (*other)[i].segmentBytes);
      EXPECT_EQ((*first)[i].seconds, (*other)[i].seconds);
    }
  }
}

TEST(Tuner, InPlaceOnOneRankDoesNotChangeTheChoice) {
  // A broadcast's root may call in place where the others do not: all must choose alike.
  Tuner tuner(setupFor(fastModel(), 4, 2, TransportKind::kHybrid));
  CollectiveSpec root = specFor(tuner.setup(), 8 << 20, Collective::kBroadcast, 0);
  root.inPlace = true;
  const CollectiveSpec other = specFor(tuner.setup(), 8 << 20, Collective::kBroadcast, 3);
  auto a = rankCandidates(root, tuner.setup());
  auto b = rankCandidates(other, tuner.setup());
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_EQ(a->size(), b->size());
  for (std::size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].algorithm, (*b)[i].algorithm) << i;
    EXPECT_EQ((*a)[i].seconds, (*b)[i].seconds) << i;
  }
  Status error;
  EXPECT_EQ(tuner.choose(root, &error).algorithm, tuner.choose(other, &error).algorithm);
}

TEST(Tuner, TiesGoToTheRegistryOrderThenTheSmallerSegment) {
  // Nothing costs anything: every prediction is 0, so the order is the order built.
  const TunerSetup setup = setupFor(MachineModel{}, 4, 4, TransportKind::kShm);
  const CollectiveSpec spec = specFor(setup, 4 << 20);
  auto ranking = rankCandidates(spec, setup);
  ASSERT_TRUE(ranking.ok()) << ranking.status().toString();
  std::vector<const AlgorithmInfo*> expected;
  for (const AlgorithmInfo& info : algorithmRegistry())
    if (info.kind == spec.kind && info.unsupportedReason(spec).empty()) expected.push_back(&info);
  std::vector<const AlgorithmInfo*> seen;
  std::uint64_t lastSegment = 0;
  for (const Candidate& c : *ranking) {
    EXPECT_EQ(c.seconds, 0) << describe(c);
    if (seen.empty() || seen.back() != c.algorithm) {
      seen.push_back(c.algorithm);
    } else {
      EXPECT_GT(c.segmentBytes, lastSegment) << describe(c);
    }
    lastSegment = c.segmentBytes;
  }
  EXPECT_EQ(seen, expected);
}

TEST(Tuner, SegmentsAreTriedWhereTheScheduleDependsOnThem) {
  TunerSetup setup = setupFor(fastModel(), 4, 4, TransportKind::kShm);
  auto ranking = rankCandidates(specFor(setup, 64 << 20), setup);
  ASSERT_TRUE(ranking.ok());
  int ring = 0;
  int doubling = 0;
  for (const Candidate& c : *ranking) {
    if (name(c) == "ring") {
      ++ring;
      EXPECT_TRUE(c.segmentMatters);
    }
    if (name(c) == "recursive_doubling") {
      ++doubling;
      EXPECT_FALSE(c.segmentMatters);
      EXPECT_EQ(c.segmentBytes, setup.defaultSegmentBytes);
    }
  }
  EXPECT_EQ(ring, static_cast<int>(setup.segmentCandidates.size()));
  EXPECT_EQ(doubling, 1);
  // TUTTI_SEGMENT_BYTES set: the communicator's segment only.
  setup.fixedSegment = true;
  setup.defaultSegmentBytes = 96 << 10;
  ranking = rankCandidates(specFor(setup, 64 << 20), setup);
  ASSERT_TRUE(ranking.ok());
  ring = 0;
  for (const Candidate& c : *ranking) {
    if (name(c) != "ring") continue;
    ++ring;
    EXPECT_EQ(c.segmentBytes, 96u << 10);
  }
  EXPECT_EQ(ring, 1);
}

TEST(Tuner, ChoosesTheBestAndKeepsIt) {
  Tuner tuner(setupFor(slowNetworkModel(), 8, 4, TransportKind::kHybrid));
  const CollectiveSpec spec = specFor(tuner.setup(), 64 << 20);
  auto explained = tuner.explain(spec);
  ASSERT_TRUE(explained.ok());
  EXPECT_EQ(explained->by, "model");
  Status error;
  const Choice first = tuner.choose(spec, &error);
  ASSERT_NE(first.algorithm, nullptr) << error.toString();
  EXPECT_EQ(first.algorithm, explained->ranking.front().algorithm);
  EXPECT_EQ(first.segmentBytes, explained->ranking.front().segmentBytes);
  const Choice again = tuner.choose(specFor(tuner.setup(), 64 << 20, Collective::kAllReduce, 3), &error);
  EXPECT_EQ(again.algorithm, first.algorithm);
  EXPECT_EQ(again.segmentBytes, first.segmentBytes);
}

TEST(Tuner, ShapesTheModelDoesNotPriceKeepTheTable) {
  Tuner tuner(setupFor(fastModel(), 4, 4, TransportKind::kShm));
  const CollectiveSpec spec = allToAllvSpec(tuner.setup());
  EXPECT_FALSE(rankable(spec));
  EXPECT_EQ(rankCandidates(spec, tuner.setup()).status().code(), ErrorCode::kNotSupported);
  Status error;
  const Choice choice = tuner.choose(spec, &error);
  ASSERT_NE(choice.algorithm, nullptr) << error.toString();
  EXPECT_EQ(choice.algorithm, defaultAlgorithm(spec));
  auto explained = tuner.explain(spec);
  ASSERT_TRUE(explained.ok());
  EXPECT_EQ(explained->by, "table");
}

TEST(Tuner, ForcedChoiceGetsItsBestSegment) {
  Tuner tuner(setupFor(slowNetworkModel(), 8, 4, TransportKind::kHybrid));
  const CollectiveSpec spec = specFor(tuner.setup(), 64 << 20);
  const AlgorithmInfo* ring = nullptr;
  for (const AlgorithmInfo& info : algorithmRegistry())
    if (info.kind == Collective::kAllReduce && std::string(info.name) == "ring") ring = &info;
  ASSERT_NE(ring, nullptr);
  auto explained = tuner.explain(spec);
  ASSERT_TRUE(explained.ok());
  std::uint64_t best = 0;
  for (const Candidate& c : explained->ranking) {
    if (c.algorithm == ring) {
      best = c.segmentBytes;
      break;
    }
  }
  EXPECT_EQ(tuner.checkForced(spec, *ring), best);
  EXPECT_EQ(tuner.checkForced(spec, *ring), best);  // from the cache, logged once
}

TEST(Tuner, ContendersAreTheChoiceAndTheOtherAlgorithmsPredictedClose) {
  Tuner tuner(setupFor(fastModel(), 4, 4, TransportKind::kShm));
  const TunerSetup& setup = tuner.setup();
  for (std::uint64_t bytes : {8ull, 64ull << 10, 4ull << 20, 64ull << 20}) {
    const CollectiveSpec spec = specFor(setup, bytes);
    auto explained = tuner.explain(spec);
    ASSERT_TRUE(explained.ok());
    const std::vector<Candidate> mine = contendersOf(*explained, setup);
    ASSERT_FALSE(mine.empty());
    ASSERT_LE(mine.size(), setup.maxContenders);
    // The choice first; each other one the best of its algorithm, within the ratio, in
    // the ranking's order, no algorithm twice.
    EXPECT_EQ(mine.front().algorithm, explained->chosen.algorithm);
    for (std::size_t i = 1; i < mine.size(); ++i) {
      EXPECT_LE(mine[i].seconds, setup.contenderRatio * mine.front().seconds) << bytes;
      EXPECT_GE(mine[i].seconds, mine[i - 1].seconds) << bytes;
      for (std::size_t j = 0; j < i; ++j) EXPECT_NE(mine[i].algorithm, mine[j].algorithm);
      const Candidate* best = nullptr;
      for (const Candidate& c : explained->ranking)
        if (c.algorithm == mine[i].algorithm && best == nullptr) best = &c;
      ASSERT_NE(best, nullptr);
      EXPECT_EQ(best->segmentBytes, mine[i].segmentBytes) << bytes;
    }
    // Every algorithm left out is slower than the ratio allows, or the list is full.
    if (mine.size() < setup.maxContenders) {
      for (const Candidate& c : explained->ranking) {
        const bool in = std::any_of(mine.begin(), mine.end(),
                                    [&](const Candidate& k) { return k.algorithm == c.algorithm; });
        if (!in) {
          EXPECT_GT(c.seconds, setup.contenderRatio * mine.front().seconds) << describe(c);
        }
      }
    }
    // What the communicator asks for: the same, as choices.
    const std::vector<Choice> asked = tuner.contenders(spec);
    ASSERT_EQ(asked.size(), mine.size());
    for (std::size_t i = 0; i < mine.size(); ++i) {
      EXPECT_EQ(asked[i].algorithm, mine[i].algorithm);
      EXPECT_EQ(asked[i].segmentBytes, mine[i].segmentBytes);
    }
  }
  // One ratio of 1: ties only, so a shape whose runner-up is predicted slower has none.
  TunerSetup strict = setup;
  strict.contenderRatio = 1.0;
  Tuner alone(strict);
  auto explained = alone.explain(specFor(strict, 8));
  ASSERT_TRUE(explained.ok());
  for (const Candidate& c : contendersOf(*explained, strict))
    EXPECT_EQ(c.seconds, explained->chosen.seconds);
}

TEST(Tuner, ACallWithARootHasNoContenders) {
  // The model's choice alone, even where other algorithms are predicted within the ratio:
  // a rank's time in a loop of rooted calls does not measure the loop's pace.
  Tuner tuner(setupFor(fastModel(), 8, 8, TransportKind::kShm));
  const TunerSetup& setup = tuner.setup();
  int close = 0;  // shapes whose ranking would have given contenders
  for (const Collective kind : {Collective::kBroadcast, Collective::kReduce, Collective::kGather,
                                Collective::kScatter}) {
    for (std::uint64_t bytes : {8ull << 10, 64ull << 10, 1ull << 20, 4ull << 20, 64ull << 20}) {
      const CollectiveSpec spec = specFor(setup, bytes, kind);
      auto explained = tuner.explain(spec);
      ASSERT_TRUE(explained.ok()) << explained.status().message();
      for (const Candidate& c : explained->ranking)
        if (c.algorithm != explained->chosen.algorithm &&
            c.seconds <= setup.contenderRatio * explained->chosen.seconds) {
          ++close;
          break;
        }
      const std::vector<Choice> asked = tuner.contenders(spec);
      ASSERT_EQ(asked.size(), 1u) << collectiveName(kind) << " " << bytes;
      EXPECT_EQ(asked.front().algorithm, explained->chosen.algorithm);
    }
  }
  EXPECT_GT(close, 0);
  // An all-reduce of the same model still has them.
  EXPECT_GT(tuner.contenders(specFor(setup, 64ull << 20)).size(), 1u);
}

TEST(Tuner, APluginsOrTheTablesChoiceHasNoContenders) {
  Tuner tuner(setupFor(fastModel(), 4, 4, TransportKind::kShm));
  const CollectiveSpec spec = allToAllvSpec(tuner.setup());
  EXPECT_EQ(tuner.contenders(spec).size(), 1u);
  Decision byPlugin;
  byPlugin.by = "plugin test";
  auto explained = tuner.explain(specFor(tuner.setup(), 4 << 20));
  ASSERT_TRUE(explained.ok());
  byPlugin.ranking = explained->ranking;
  byPlugin.chosen = explained->ranking.back();
  const std::vector<Candidate> mine = contendersOf(byPlugin, tuner.setup());
  ASSERT_EQ(mine.size(), 1u);
  EXPECT_EQ(mine.front().algorithm, byPlugin.chosen.algorithm);
}

TEST(Tuner, TcpOnOneHostPricesTheHostLikeTheNetwork) {
  TunerSetup setup = setupFor(fastModel(), 4, 4, TransportKind::kTcp);
  const MachineModel m = effectiveModel(setup);
  EXPECT_EQ(m.path(PathClass::kSameL3).alpha, fastModel().path(PathClass::kNetwork).alpha);
  setup.transport = TransportKind::kShm;
  EXPECT_EQ(effectiveModel(setup).path(PathClass::kSameL3).alpha,
            fastModel().path(PathClass::kSameL3).alpha);
}

TEST(Tuner, OverTcpAWaitingRankSleepsAndOverSharedMemoryItYields) {
  MachineModel model = fastModel();
  model.switchCost = 4e-6;
  model.yieldCost = 1e-6;
  TunerSetup setup = setupFor(model, 4, 4, TransportKind::kTcp);
  EXPECT_EQ(effectiveModel(setup).yieldCost, 4e-6);
  setup.transport = TransportKind::kShm;
  EXPECT_EQ(effectiveModel(setup).yieldCost, 1e-6);
  setup.transport = TransportKind::kHybrid;
  EXPECT_EQ(effectiveModel(setup).yieldCost, 1e-6);
}

TEST(Tuner, TcpOnOneHostSendsAtTheLoopbackStreamsPaceAndReceivesAtTheKernelsCopy) {
  MachineModel model = fastModel();
  model.loopback = LinkCost{0, 3e-10, 5e-6};
  model.copyBeta = 2.5e-11;
  model.kernelCopyRatio = 4;
  TunerSetup setup = setupFor(model, 4, 4, TransportKind::kTcp);
  // The sender's end takes the stream's 0.3 ns a byte (half of beta), the receiver's the
  // kernel's copy, 4 x 0.025 ns.
  MachineModel m = effectiveModel(setup);
  EXPECT_DOUBLE_EQ(m.path(PathClass::kSameHost).beta, 6e-10);
  EXPECT_DOUBLE_EQ(m.path(PathClass::kSameHost).recvBeta, 1e-10);
  EXPECT_EQ(m.kernelCopyRatio, 0);  // no copy between processes over TCP
  // Never more than the stream's own pace; not known without the kernel's ratio.
  setup.model.kernelCopyRatio = 40;
  EXPECT_DOUBLE_EQ(effectiveModel(setup).path(PathClass::kSameHost).recvBeta, 3e-10);
  setup.model.kernelCopyRatio = 0;
  EXPECT_EQ(effectiveModel(setup).path(PathClass::kSameHost).recvBeta, 0);
  // Shared memory keeps the host's own paths, the two ends alike.
  setup.model.kernelCopyRatio = 4;
  setup.transport = TransportKind::kShm;
  EXPECT_EQ(effectiveModel(setup).path(PathClass::kSameHost).recvBeta, 0);
}

}  // namespace
}  // namespace tutti::tuning
