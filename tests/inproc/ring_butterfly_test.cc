// The ring and butterfly algorithms forced by name and run for real over TCP (and the rings
// over shared memory too), ranks as threads, worlds 1, 2, 3, 4, 5, 7 and 8, with messages
// large enough that the rings cut
// their chunks into several segments (the default segment is 512 KiB; collectives_test.cc
// covers every registered algorithm at small counts) and the butterflies move halves of
// megabytes. Every element is checked against an independent expectation
// (tests/common/collective_check.h).

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "common/collective_check.h"
#include "common/threads.h"

namespace tutti::test {
namespace {

struct Entry {
  const char* algorithm;
  Collective kind;
};

constexpr Entry kEntries[] = {
    {"ring", Collective::kAllGather},
    {"ring", Collective::kAllGatherV},
    {"ring", Collective::kReduceScatter},
    {"ring", Collective::kReduceScatterV},
    {"ring", Collective::kAllReduce},
    {"rs_ag", Collective::kAllReduce},
    {"direct_rs_ag", Collective::kAllReduce},
    {"recursive_doubling", Collective::kAllReduce},
    {"recursive_doubling", Collective::kAllGather},
    {"recursive_doubling", Collective::kAllGatherV},
    {"recursive_halving", Collective::kReduceScatter},
    {"recursive_halving", Collective::kReduceScatterV},
    {"rabenseifner", Collective::kAllReduce},
};

// 140,001 float32 elements per rank block: 560 KB, two segments of at most 512 KiB and an
// odd count. An all-reduce's vector is one block per rank of that size plus a remainder, so
// its ring chunks are that long too.
constexpr std::size_t kBlock = 140001;

class RingButterflyRealRun : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(RingButterflyRealRun, LargeMessagesMatchTheDefinition) {
  const auto [n, transport] = GetParam();
  // Over shared memory the rings' steps hand each piece on as it lands and reduce the
  // intermediate partial sums straight into the next rank's ring (forward-only steps),
  // falling back to a staging buffer where that ring is full.
  const bool ringsOnly = transport == "shm";
  std::vector<CollectiveCase> cases;
  for (const Entry& e : kEntries) {
    if (ringsOnly && std::string(e.algorithm) != "ring") continue;
    for (bool inPlace : {false, true}) {
      const bool reduces = e.kind == Collective::kAllReduce ||
                           e.kind == Collective::kReduceScatter ||
                           e.kind == Collective::kReduceScatterV;
      CollectiveCase c;
      c.kind = e.kind;
      c.algorithm = e.algorithm;
      c.inPlace = inPlace;
      // In place also averages (finalization once per element) and goes through ...Async.
      c.op = reduces && inPlace ? ReduceOp::kAvg : ReduceOp::kSum;
      c.async = inPlace;
      c.dtype = DataType::kFloat32;
      c.count = kBlock;
      if (e.kind == Collective::kAllReduce) c.count = kBlock * static_cast<std::size_t>(n) + 3;
      cases.push_back(c);
    }
  }
  CommOptions options;
  options.transport = transport;
  auto failures = runRanks(n, [&](int rank, Communicator& comm) -> std::string {
    std::string out;
    for (const CollectiveCase& c : cases) {
      if (!algorithmApplies(c, rank, n)) return "not applicable: " + describeCase(c);
      out += runAndCheck(comm, c);
      if (out.size() > 4000) return out + "... (stopping)\n";
    }
    return out;
  }, options);
  EXPECT_EQ(joinFailures(failures), "");
}

INSTANTIATE_TEST_SUITE_P(Worlds, RingButterflyRealRun,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 7, 8),
                                            ::testing::Values(std::string("tcp"))));
INSTANTIATE_TEST_SUITE_P(SharedMemory, RingButterflyRealRun,
                         ::testing::Combine(::testing::Values(3, 5, 8),
                                            ::testing::Values(std::string("shm"))));

}  // namespace
}  // namespace tutti::test
