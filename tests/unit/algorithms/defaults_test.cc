// The default algorithm rules (src/algorithms/defaults.cc) where they depend on the world
// size and on whether every rank shares memory: large all-reduces on 2 ranks, and on more
// than 4 ranks of one host, differ from the network's choices.

#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "algorithms/algorithm.h"

namespace tutti {
namespace {

std::string defaultFor(Collective kind, int size, std::uint64_t bytes, bool sharedMemory,
                       bool sharedBuffers = false) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.size = size;
  spec.rank = size - 1;
  spec.dtype = DataType::kFloat32;
  spec.count = bytes / 4;  // all-gather: one rank's block
  spec.segmentCount = (512 << 10) / 4;
  spec.sharedMemory = sharedMemory;
  spec.sharedBuffers = sharedBuffers;
  const AlgorithmInfo* info = defaultAlgorithm(spec);
  return info == nullptr ? "none" : info->name;
}

// A v-collective of `total` bytes in all: the last rank's block holds what the others'
// (4 bytes each) leave.
std::string defaultForV(Collective kind, int size, std::uint64_t total, bool sharedMemory) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.size = size;
  spec.rank = 0;
  spec.dtype = DataType::kFloat32;
  spec.segmentCount = (512 << 10) / 4;
  spec.sharedMemory = sharedMemory;
  const auto n = static_cast<std::uint64_t>(size);
  spec.counts.assign(n, 1);
  spec.counts.back() = total / 4 - (n - 1);
  spec.displs.resize(n);
  for (std::uint64_t r = 1; r < n; ++r) spec.displs[r] = spec.displs[r - 1] + spec.counts[r - 1];
  const AlgorithmInfo* info = defaultAlgorithm(spec);
  return info == nullptr ? "none" : info->name;
}

std::string allreduceDefault(int size, std::uint64_t bytes, bool sharedMemory) {
  return defaultFor(Collective::kAllReduce, size, bytes, sharedMemory);
}

TEST(DefaultRules, TwoRanksTakeRabenseifnerAbove4MiBAndOnOneHostTheDirectPairAbove1MiB) {
  EXPECT_EQ(allreduceDefault(2, 1 << 20, false), "ring");
  EXPECT_EQ(allreduceDefault(2, 4 << 20, false), "ring");
  EXPECT_EQ(allreduceDefault(2, (4 << 20) + 4, false), "rabenseifner");
  EXPECT_EQ(allreduceDefault(2, 64 << 20, false), "rabenseifner");
  EXPECT_EQ(allreduceDefault(2, 1 << 20, true), "ring");
  EXPECT_EQ(allreduceDefault(2, (1 << 20) + 4, true), "direct_rs_ag");
  EXPECT_EQ(allreduceDefault(2, 4 << 20, true), "direct_rs_ag");
  EXPECT_EQ(allreduceDefault(2, (4 << 20) + 4, true), "rabenseifner");
  EXPECT_EQ(allreduceDefault(2, 64 << 20, true), "rabenseifner");
}

TEST(DefaultRules, TwoAndFourRanksOnOneHostSkipReduceBroadcastInTheMiddle) {
  EXPECT_EQ(allreduceDefault(2, 16 << 10, true), "recursive_doubling");
  EXPECT_EQ(allreduceDefault(2, 32 << 10, true), "recursive_doubling");
  EXPECT_EQ(allreduceDefault(2, (32 << 10) + 4, true), "ring");
  EXPECT_EQ(allreduceDefault(2, 128 << 10, true), "ring");
  EXPECT_EQ(allreduceDefault(4, 32 << 10, true), "recursive_doubling");
  EXPECT_EQ(allreduceDefault(4, 64 << 10, true), "reduce_bcast");
  EXPECT_EQ(allreduceDefault(8, 32 << 10, true), "recursive_doubling");
  EXPECT_EQ(allreduceDefault(8, 64 << 10, true), "reduce_bcast");
  // Not measured at 3 ranks; over a network reduce + broadcast stays.
  EXPECT_EQ(allreduceDefault(3, 16 << 10, true), "reduce_bcast");
  for (int size : {2, 4, 8}) EXPECT_EQ(allreduceDefault(size, 16 << 10, false), "reduce_bcast") << size;
  // 4 ranks of one host from the heap: Rabenseifner between reduce + broadcast and the ring.
  EXPECT_EQ(allreduceDefault(4, 256 << 10, true), "rabenseifner");
  EXPECT_EQ(allreduceDefault(4, 2 << 20, true), "rabenseifner");
  EXPECT_EQ(allreduceDefault(4, (2 << 20) + 4, true), "ring");
  EXPECT_EQ(allreduceDefault(4, 256 << 10, false), "ring");
}

TEST(DefaultRules, FourToEightRanksOnOneHostReduceByTreeAndPostEveryBlockAtOnce) {
  for (int size : {4, 8}) {
    EXPECT_EQ(defaultFor(Collective::kReduce, size, 1 << 10, true), "binomial") << size;
    EXPECT_EQ(defaultFor(Collective::kReduce, size, 1 << 10, false), "direct") << size;
    EXPECT_EQ(defaultFor(Collective::kAllToAll, size, 64 << 10, true), "direct") << size;
    EXPECT_EQ(defaultFor(Collective::kAllToAll, size, (64 << 10) + 4, true), "pairwise") << size;
    EXPECT_EQ(defaultFor(Collective::kAllToAll, size, 64, false), "bruck") << size;
  }
  // Where it was not measured, or measured level (2 ranks), the rules before stay.
  for (int size : {2, 3}) EXPECT_EQ(defaultFor(Collective::kReduce, size, 1 << 10, true), "direct") << size;
  for (int size : {3, 16}) EXPECT_NE(defaultFor(Collective::kAllToAll, size, 4 << 10, true), "direct") << size;
}

TEST(DefaultRules, ReduceScatterOnOneHostIsFlatWhileEveryInputFitsTheSlot) {
  // Blocks (bytes per rank's output) up to kFlatBytes / n, whatever n of 2 to 8.
  const std::pair<int, std::uint64_t> largest[] = {{2, 4 << 10}, {3, 2 << 10}, {4, 2 << 10},
                                                   {5, 1 << 10}, {8, 1 << 10}};
  for (const auto& [size, block] : largest) {
    EXPECT_EQ(defaultFor(Collective::kReduceScatter, size, 4, true), "direct") << size;
    EXPECT_EQ(defaultFor(Collective::kReduceScatter, size, block, true), "direct") << size;
    EXPECT_EQ(defaultFor(Collective::kReduceScatter, size, block + 4, true), "recursive_halving")
        << size;
    EXPECT_LE(block * static_cast<std::uint64_t>(size), 8192u) << size;
    EXPECT_EQ(defaultFor(Collective::kReduceScatter, size, 4, false), "recursive_halving") << size;
  }
  EXPECT_EQ(defaultFor(Collective::kReduceScatter, 16, 4, true), "recursive_halving");
}

TEST(DefaultRules, ReduceScatterVOnOneHostIsFlatWhileTheWholeInputFitsTheSlot) {
  // The size of a v-collective is the sum of its counts: here, floats.
  auto rsv = [](int size, std::uint64_t floats, bool sharedMemory) {
    CollectiveSpec spec;
    spec.kind = Collective::kReduceScatterV;
    spec.size = size;
    spec.rank = 0;
    spec.dtype = DataType::kFloat32;
    spec.segmentCount = (512 << 10) / 4;
    spec.sharedMemory = sharedMemory;
    spec.counts.assign(static_cast<std::size_t>(size), 0);
    spec.counts[0] = floats;  // uneven: everything on rank 0
    const AlgorithmInfo* info = defaultAlgorithm(spec);
    return std::string(info == nullptr ? "none" : info->name);
  };
  for (int size : {2, 3, 4, 8}) {
    EXPECT_EQ(rsv(size, 1, true), "direct") << size;
    EXPECT_EQ(rsv(size, 2048, true), "direct") << size;  // 8 KiB
    EXPECT_EQ(rsv(size, 2049, true), "recursive_halving") << size;
    EXPECT_EQ(rsv(size, 1, false), "recursive_halving") << size;
  }
  EXPECT_EQ(rsv(9, 1, true), "recursive_halving");
}

TEST(DefaultRules, TwoAndThreeRanksOnOneHostExchangeAllToAllFlatUpToTheSlot) {
  // Blocks up to 4 KiB (2 ranks) and 2 KiB (3): a rank's whole send buffer fits one flat
  // slot (kFlatBytes).
  for (const auto& [size, block] : {std::pair<int, std::uint64_t>{2, 4 << 10}, {3, 2 << 10}}) {
    EXPECT_EQ(defaultFor(Collective::kAllToAll, size, 16, true), "direct") << size;
    EXPECT_EQ(defaultFor(Collective::kAllToAll, size, block, true), "direct") << size;
    EXPECT_NE(defaultFor(Collective::kAllToAll, size, block + 4, true), "direct") << size;
    EXPECT_NE(defaultFor(Collective::kAllToAll, size, 16, false), "direct") << size;
  }
}

TEST(DefaultRules, MoreThanFourRanksOnOneHostTakeTheRingAbove2MiB) {
  for (int size : {5, 8, 16}) {
    EXPECT_EQ(allreduceDefault(size, 1 << 20, true), "rabenseifner") << size;
    EXPECT_EQ(allreduceDefault(size, 2 << 20, true), "rabenseifner") << size;
    EXPECT_EQ(allreduceDefault(size, (2 << 20) + 4, true), "ring") << size;
    EXPECT_EQ(allreduceDefault(size, 64 << 20, true), "ring") << size;
    // Over a network the halving rounds keep winning.
    EXPECT_EQ(allreduceDefault(size, 64 << 20, false), "rabenseifner") << size;
  }
  // Up to 4 ranks the ring wherever they run.
  EXPECT_EQ(allreduceDefault(4, 16 << 20, true), "ring");
  EXPECT_EQ(allreduceDefault(4, 16 << 20, false), "ring");
}

TEST(DefaultRules, ThreeToEightRanksWhoseBuffersAreAllSharedReadPeersInPlace) {
  for (int size : {3, 4, 8}) {
    EXPECT_EQ(defaultFor(Collective::kAllReduce, size, 16 << 20, true, true), "direct_rs_ag") << size;
    EXPECT_EQ(defaultFor(Collective::kAllReduce, size, 1 << 20, true, true), "direct_rs_ag") << size;
    // Small calls look at nothing but the shape.
    EXPECT_NE(defaultFor(Collective::kAllReduce, size, 128 << 10, true, true), "direct_rs_ag") << size;
  }
  // Two ranks read their half in place already (Rabenseifner); past 8 the rule was not measured.
  EXPECT_EQ(defaultFor(Collective::kAllReduce, 2, 16 << 20, true, true), "rabenseifner");
  EXPECT_EQ(defaultFor(Collective::kAllReduce, 16, 16 << 20, true, true), "ring");
  EXPECT_EQ(defaultFor(Collective::kAllReduce, 4, 16 << 20, true, false), "ring");
}

TEST(DefaultRules, SmallCallsOnOneHostTakeTheFlatExchange) {
  for (int size : {2, 3, 8, 32}) {
    EXPECT_EQ(defaultFor(Collective::kAllReduce, size, 992, true), "direct") << size;
    EXPECT_EQ(defaultFor(Collective::kAllGather, size, 992, true), "direct") << size;
    EXPECT_EQ(defaultFor(Collective::kBarrier, size, 0, true), "direct") << size;
  }
  // Up to 8 KiB per rank (the flat slot's room) from 2 to 8 ranks, as measured.
  for (int size : {2, 4, 8}) {
    EXPECT_EQ(defaultFor(Collective::kAllReduce, size, 8 << 10, true), "direct") << size;
    EXPECT_EQ(defaultFor(Collective::kAllGather, size, 8 << 10, true), "direct") << size;
    EXPECT_NE(defaultFor(Collective::kAllReduce, size, (8 << 10) + 4, true), "direct") << size;
    EXPECT_NE(defaultFor(Collective::kAllGather, size, (8 << 10) + 4, true), "direct") << size;
  }
  // allgatherv: up to 8 KiB in all (every block then fits the slot, however uneven).
  for (int size : {2, 4, 8}) {
    EXPECT_EQ(defaultForV(Collective::kAllGatherV, size, 8 << 10, true), "direct") << size;
    EXPECT_NE(defaultForV(Collective::kAllGatherV, size, (8 << 10) + 4, true), "direct") << size;
    EXPECT_NE(defaultForV(Collective::kAllGatherV, size, 64, false), "direct") << size;
  }
  EXPECT_NE(defaultForV(Collective::kAllGatherV, 16, 64, true), "direct");
  EXPECT_NE(defaultFor(Collective::kAllReduce, 16, 996, true), "direct");
  EXPECT_NE(defaultFor(Collective::kAllReduce, 2, 8 << 10, false), "direct");
  EXPECT_NE(defaultFor(Collective::kAllReduce, 64, 8, true), "direct");
  EXPECT_NE(defaultFor(Collective::kAllReduce, 4, 8, false), "direct");
  EXPECT_EQ(defaultFor(Collective::kBarrier, 4, 0, false), "dissemination");
}

TEST(DefaultRules, TwoRanksSharingMemoryAllGatherInOneExchange) {
  EXPECT_EQ(defaultFor(Collective::kAllGather, 2, 64 << 20, true), "recursive_doubling");
  EXPECT_EQ(defaultFor(Collective::kAllGather, 2, 64 << 20, false), "ring");
  EXPECT_EQ(defaultFor(Collective::kAllGather, 4, 64 << 20, true), "ring");
  EXPECT_EQ(defaultFor(Collective::kAllGather, 2, 1 << 20, false), "recursive_doubling");
}

}  // namespace
}  // namespace tutti

namespace tutti {
namespace {

// Across hosts every collective defaults to its hierarchical algorithm; the same calls without a host map keep the flat choices.
TEST(DefaultRules, AcrossHostsTheHierarchicalAlgorithms) {
  const HostMap twoByTwo = HostMap::blocks({2, 2});
  const HostMap oneHost = HostMap::blocks({4});
  auto chosen = [](Collective kind, std::uint64_t bytes, const HostMap* hosts, bool inPlace) {
    CollectiveSpec spec;
    spec.kind = kind;
    spec.size = 4;
    spec.rank = 1;
    spec.count = bytes / 4;
    spec.segmentCount = (512 << 10) / 4;
    spec.inPlace = inPlace;
    spec.hosts = hosts;
    if (kind == Collective::kAllGatherV || kind == Collective::kReduceScatterV ||
        kind == Collective::kGatherV || kind == Collective::kScatterV) {
      spec.counts.assign(4, spec.count);
      if (kind != Collective::kReduceScatterV) spec.displs = {0, spec.count, 2 * spec.count, 3 * spec.count};
      spec.count = 0;
    }
    const AlgorithmInfo* info = defaultAlgorithm(spec);
    return std::string(info == nullptr ? "none" : info->name);
  };
  EXPECT_EQ(chosen(Collective::kAllReduce, 8, &twoByTwo, false), "hier_reduce_bcast");
  EXPECT_EQ(chosen(Collective::kAllReduce, 64 << 10, &twoByTwo, false), "hier_reduce_bcast");
  EXPECT_EQ(chosen(Collective::kAllReduce, (64 << 10) + 4, &twoByTwo, false), "hier_rs_ag");
  EXPECT_EQ(chosen(Collective::kAllReduce, 64 << 20, &twoByTwo, true), "hier_rs_ag");
  for (Collective kind : {Collective::kBroadcast, Collective::kReduce, Collective::kAllGather,
                          Collective::kAllGatherV, Collective::kReduceScatter,
                          Collective::kReduceScatterV, Collective::kGather, Collective::kGatherV,
                          Collective::kScatter, Collective::kScatterV, Collective::kAllToAll}) {
    for (std::uint64_t bytes : {std::uint64_t{8}, std::uint64_t{64} << 20}) {
      EXPECT_EQ(chosen(kind, bytes, &twoByTwo, false), "hierarchical") << collectiveName(kind);
      EXPECT_NE(chosen(kind, bytes, nullptr, false), "hierarchical") << collectiveName(kind);
      EXPECT_NE(chosen(kind, bytes, &oneHost, false), "hierarchical") << collectiveName(kind);
    }
  }
  EXPECT_EQ(chosen(Collective::kAllToAll, 1 << 20, &twoByTwo, true), "hierarchical");
  EXPECT_EQ(chosen(Collective::kAllReduce, 64 << 20, nullptr, false), "ring");
}

// TUTTI_ALGO's pairs, a forced segment with them; a name is checked per call, a segment here.
TEST(AlgorithmOverrides, PairsWithTheirSegmentsAndClearErrors) {
  auto parsed = parseAlgorithmOverrides("allreduce:ring@256K, bcast:binomial");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0], std::make_pair(Collective::kAllReduce, std::string("ring@256K")));
  EXPECT_EQ((*parsed)[1], std::make_pair(Collective::kBroadcast, std::string("binomial")));
  auto forced = parseForcedChoice("ring@256K");
  ASSERT_TRUE(forced.ok());
  EXPECT_EQ(forced->algorithm, "ring");
  EXPECT_EQ(forced->segmentBytes, 256u << 10);
  EXPECT_EQ(parseForcedChoice("ring")->segmentBytes, 0u);
  auto bad = parseAlgorithmOverrides("allreduce:ring@0");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("algorithm override 'allreduce:ring@0'"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("expected NAME or NAME@SEGMENT"), std::string::npos)
      << bad.status().message();
  EXPECT_TRUE(parseAlgorithmOverrides("allreduce:no_such_name").ok());  // refused per call
}

}  // namespace
}  // namespace tutti
