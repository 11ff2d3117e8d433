#include "bench/collectives.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "bench/data.h"
#include "unit/bench/world.h"

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
    // sendrecv is a pair of point-to-point calls; every other entry is one library call.
    if (entry.name() != "sendrecv") {
      EXPECT_EQ(entry.name(), collectiveName(entry.kind));
    }
    EXPECT_NE(entry.fillInput, nullptr);
    EXPECT_NE(entry.fillExpected, nullptr);
    EXPECT_NE(entry.run, nullptr);
    for (std::string_view name : entry.names) {
      if (!name.empty()) {
        EXPECT_TRUE(names.insert(name).second) << name;
        EXPECT_EQ((*findCollective(name))->name(), entry.name());
      }
    }
  }
  // nccl-tests' collectives, in the order "all" runs them.
  std::vector<std::string_view> canonical;
  for (const CollectiveEntry& entry : collectiveTable()) canonical.push_back(entry.name());
  EXPECT_EQ(canonical, (std::vector<std::string_view>{"allreduce", "allgather", "reducescatter",
                                                      "broadcast", "reduce", "gather", "scatter",
                                                      "alltoall", "sendrecv", "barrier"}));
  for (const char* alias : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                            "send_recv", "bcast", "all-gather"}) {
    EXPECT_TRUE(findCollective(alias).ok()) << alias;
  }
  EXPECT_FALSE(findCollective("all").ok());  // a selection, not an entry
  ASSERT_TRUE(selectCollectives("all").ok());
  EXPECT_EQ(selectCollectives("all")->size(), collectiveTable().size());
}

TEST(BenchCollectives, EntryPropertiesFollowTheDefinitions) {
  for (const CollectiveEntry& entry : collectiveTable()) {
    const std::string_view name = entry.name();
    const bool reduces = name == "allreduce" || name == "reducescatter" || name == "reduce";
    const bool rooted = name == "broadcast" || name == "reduce" || name == "gather" ||
                        name == "scatter";
    EXPECT_EQ(entry.reduces, reduces) << name;
    EXPECT_EQ(entry.rooted, rooted) << name;
    EXPECT_EQ(entry.sized, name != "barrier") << name;
    EXPECT_EQ(entry.inPlace, name != "barrier" && name != "sendrecv") << name;
  }
}

TEST(BenchCollectives, NcclTestsCountsForEveryCollective) {
  // 10 elements on 4 ranks.
  const Counts gather = collectiveCounts(Collective::kGather, 10, 4);
  EXPECT_EQ(gather.send, 2u);
  EXPECT_EQ(gather.recv, 8u);
  EXPECT_EQ(gather.param, 2u);
  EXPECT_EQ(gather.sendInPlaceOffset, 2u);
  const Counts scatter = collectiveCounts(Collective::kScatter, 10, 4);
  EXPECT_EQ(scatter.send, 8u);
  EXPECT_EQ(scatter.recv, 2u);
  EXPECT_EQ(scatter.param, 2u);
  EXPECT_EQ(scatter.recvInPlaceOffset, 2u);
  for (const Collective kind : {Collective::kBroadcast, Collective::kReduce, Collective::kSend}) {
    const Counts c = collectiveCounts(kind, 10, 4);
    EXPECT_EQ(c.send, 10u);
    EXPECT_EQ(c.recv, 10u);
    EXPECT_EQ(c.param, 10u);
    EXPECT_EQ(c.sendInPlaceOffset + c.recvInPlaceOffset, 0u);
  }
  const Counts barrier = collectiveCounts(Collective::kBarrier, 1 << 20, 4);
  EXPECT_EQ(barrier.send + barrier.recv + barrier.param, 0u);
  // S for algbw: per-rank counts are multiplied out; broadcast, reduce and sendrecv are not.
  EXPECT_DOUBLE_EQ(algorithmBytes(Collective::kScatter, scatter, 4, 4), 32.0);
  EXPECT_DOUBLE_EQ(algorithmBytes(Collective::kGather, gather, 4, 4), 32.0);
  EXPECT_DOUBLE_EQ(algorithmBytes(Collective::kSend, collectiveCounts(Collective::kSend, 10, 4),
                                  4, 4),
                   40.0);
  EXPECT_DOUBLE_EQ(algorithmBytes(Collective::kReduce, collectiveCounts(Collective::kReduce, 10, 4),
                                  8, 4),
                   80.0);
}

// Every entry's expectation against the reference world: the inputs every rank's entry
// makes, combined by the collective's definition, on every rank of worlds of 1, 2, 3 and 5
// ranks, for every root, in a signed and an unsigned integer type and two floating types.
TEST(BenchCollectives, ExpectationsMatchTheDefinitionsOnEveryRank) {
  const DataType types[] = {DataType::kInt32, DataType::kUint8, DataType::kFloat16,
                            DataType::kFloat64};
  for (const CollectiveEntry& entry : collectiveTable()) {
    if (!entry.sized) continue;
    for (const int n : {1, 2, 3, 5}) {
      for (const DataType dtype : types) {
        for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
          if (!entry.reduces && op != ReduceOp::kSum) continue;
          for (int root = 0; root < (entry.rooted ? n : 1); ++root) {
            const Counts counts = collectiveCounts(entry.kind, 7 * static_cast<std::size_t>(n), n);
            DataContext context{0, n, dtype, op, entry.rooted ? root : -1};
            std::vector<world::Bytes> inputs;
            for (int r = 0; r < n; ++r) inputs.push_back(world::inputOf(entry, counts, context, r));
            for (int q = 0; q < n; ++q) {
              context.rank = q;
              const std::size_t bytes = counts.recv * dataTypeSize(dtype);
              world::Bytes wanted(bytes + 1), got(bytes + 1);
              const std::size_t defined =
                  world::referenceOutput(entry.kind, counts, context, inputs, wanted.data());
              EXPECT_EQ(entry.fillExpected(got.data(), counts, context), defined)
                  << entry.name() << " n=" << n << " q=" << q << " root=" << root;
              EXPECT_EQ(countWrong(got.data(), wanted.data(), defined, dtype), 0u)
                  << entry.name() << " " << dataTypeName(dtype) << " " << reduceOpName(op)
                  << " n=" << n << " q=" << q << " root=" << root;
            }
          }
        }
      }
    }
  }
}

// Data-movement inputs name their origin: ranks differ at every index, so a block taken
// from the wrong rank or offset cannot pass a check.
TEST(BenchCollectives, MovementValuesDifferBetweenRanksAndIndices) {
  for (const DataType dtype : {DataType::kInt8, DataType::kBFloat16, DataType::kFloat32}) {
    for (std::size_t i = 0; i < 64; ++i) {
      for (int a = 0; a < 5; ++a) {
        for (int b = a + 1; b < 5; ++b) {
          EXPECT_FALSE(sameElement(movementValue(a, i, dtype, 5), movementValue(b, i, dtype, 5)))
              << dataTypeName(dtype) << " " << i << " " << a << " " << b;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tutti::bench
