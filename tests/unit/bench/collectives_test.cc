#include "bench/collectives.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace tutti::bench {
namespace {

TEST(BenchCollectives, BusBandwidthFactorsFollowNcclTests) {
  for (const int n : {1, 2, 3, 4, 8, 64}) {
    const double d = n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kAllReduce, n), 2 * (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kAllGather, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kReduceScatter, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kAllToAll, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kGather, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kScatter, n), (d - 1) / d) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kBroadcast, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kReduce, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kSend, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kBarrier, n), 0.0) << n;
  }
  // The documented example values.
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kAllReduce, 4), 1.5);
  EXPECT_DOUBLE_EQ(busBandwidthFactor(Collective::kAllGather, 4), 0.75);
}

TEST(BenchCollectives, CountsRoundToRankMultiplesWhereTheBufferIsSplit) {
  // 10 elements on 4 ranks: 2 per rank, 8 in all.
  const Counts allReduce = collectiveCounts(Collective::kAllReduce, 10, 4);
  EXPECT_EQ(allReduce.send, 10u);
  EXPECT_EQ(allReduce.recv, 10u);
  EXPECT_EQ(allReduce.param, 10u);
  EXPECT_EQ(allReduce.sendInPlaceOffset, 0u);
  EXPECT_EQ(allReduce.recvInPlaceOffset, 0u);

  const Counts allGather = collectiveCounts(Collective::kAllGather, 10, 4);
  EXPECT_EQ(allGather.send, 2u);
  EXPECT_EQ(allGather.recv, 8u);
  EXPECT_EQ(allGather.param, 2u);
  EXPECT_EQ(allGather.sendInPlaceOffset, 2u);
  EXPECT_EQ(allGather.recvInPlaceOffset, 0u);

  const Counts reduceScatter = collectiveCounts(Collective::kReduceScatter, 10, 4);
  EXPECT_EQ(reduceScatter.send, 8u);
  EXPECT_EQ(reduceScatter.recv, 2u);
  EXPECT_EQ(reduceScatter.param, 2u);
  EXPECT_EQ(reduceScatter.sendInPlaceOffset, 0u);
  EXPECT_EQ(reduceScatter.recvInPlaceOffset, 2u);

  const Counts allToAll = collectiveCounts(Collective::kAllToAll, 10, 4);
  EXPECT_EQ(allToAll.send, 8u);
  EXPECT_EQ(allToAll.recv, 8u);
  EXPECT_EQ(allToAll.param, 2u);

  const Counts broadcast = collectiveCounts(Collective::kBroadcast, 7, 4);
  EXPECT_EQ(broadcast.param, 7u);
  EXPECT_EQ(rowBytes(broadcast, 4), 28u);
  EXPECT_EQ(rowBytes(allGather, 4), 32u);
  EXPECT_EQ(rowBytes(reduceScatter, 4), 32u);
  // Fewer elements than ranks: nothing to split.
  EXPECT_EQ(collectiveCounts(Collective::kAllGather, 3, 4).recv, 0u);
}

TEST(BenchCollectives, AlgorithmBytesAndBandwidth) {
  const Counts allReduce = collectiveCounts(Collective::kAllReduce, 1000, 4);
  EXPECT_DOUBLE_EQ(algorithmBytes(Collective::kAllReduce, allReduce, 4, 4), 4000.0);
  // Per-rank counts: S is the whole array.
  const Counts allGather = collectiveCounts(Collective::kAllGather, 1000, 4);
  EXPECT_DOUBLE_EQ(algorithmBytes(Collective::kAllGather, allGather, 4, 4), 4000.0);
  EXPECT_DOUBLE_EQ(algorithmBytes(Collective::kBarrier, Counts{}, 4, 4), 0.0);
  EXPECT_DOUBLE_EQ(algorithmBandwidth(2e9, 1.0), 2.0);
  EXPECT_DOUBLE_EQ(algorithmBandwidth(1e6, 1e-3), 1.0);
  EXPECT_DOUBLE_EQ(algorithmBandwidth(1e6, 0.0), 0.0);
}

TEST(BenchCollectives, FindByNameOrAlias) {
  for (const char* name : {"allreduce", "all_reduce", "all-reduce"}) {
    Result<const CollectiveEntry*> entry = findCollective(name);
    ASSERT_TRUE(entry.ok()) << name;
    EXPECT_EQ((*entry)->kind, Collective::kAllReduce);
    EXPECT_EQ((*entry)->name(), "allreduce");
  }
  Result<const CollectiveEntry*> unknown = findCollective("allgatherv");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(unknown.status().message().find("'allgatherv'"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("allreduce (all_reduce, all-reduce)"),
            std::string::npos);
  EXPECT_FALSE(findCollective("").ok());
}

TEST(BenchCollectives, TableEntriesAreComplete) {
  std::set<std::string_view> names;
  for (const CollectiveEntry& entry : collectiveTable()) {
    EXPECT_FALSE(entry.name().empty());
    EXPECT_EQ(entry.name(), collectiveName(entry.kind));
    EXPECT_NE(entry.fillInput, nullptr);
    EXPECT_NE(entry.fillExpected, nullptr);
    EXPECT_NE(entry.run, nullptr);
    for (std::string_view name : entry.names) {
      if (!name.empty()) {
        EXPECT_TRUE(names.insert(name).second) << name;
      }
    }
  }
  EXPECT_FALSE(names.empty());
}

}  // namespace
}  // namespace tutti::bench
