// Every registered algorithm (but the barriers') forced by name and run for real at large
// counts, ranks as threads, over TCP and over shared memory, with every element checked
// against an independent expectation (tests/common/collective_check.h). The list comes from
// the registry (one test per algorithm and transport), so a new algorithm runs here the
// day it is registered. collectives_test.cc runs the same algorithms at small counts in
// more worlds and types; here the messages are large enough that the pipelined algorithms
// cut their chunks into several segments (the default segment is 512 KiB), that blocks
// exceed the sockets' buffers (sends wait for their receivers to read) and that shared
// memory's large messages take their rendezvous and fill its rings.

#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <string>
#include <vector>

#include "common/collective_check.h"
#include "common/registry.h"
#include "common/threads.h"
#include "schedule/collective.h"

namespace tutti::test {
namespace {

// 140,001 float32 elements per block: 560 KB, two segments of at most 512 KiB and an odd
// count. An all-reduce moves a block per rank (a ring's chunk is a block), plus a
// remainder; a broadcast or reduce six blocks (six segments in flight down and up a tree).
constexpr std::size_t kBlock = 140001;

std::size_t largeCount(Collective kind, int n) {
  if (kind == Collective::kAllReduce) return kBlock * static_cast<std::size_t>(n) + 3;
  if (kind == Collective::kBroadcast || kind == Collective::kReduce) return kBlock * 6 + 3;
  return kBlock;
}

struct LargeRun {
  RegisteredAlgorithm algorithm;
  std::string transport;
};

void PrintTo(const LargeRun& run, std::ostream* os) {
  *os << run.algorithm.testName() << " over " << run.transport;
}

std::vector<LargeRun> largeRuns() {
  std::vector<Collective> kinds = registeredCollectives();
  kinds.erase(std::remove(kinds.begin(), kinds.end(), Collective::kBarrier), kinds.end());
  std::vector<LargeRun> runs;
  for (const RegisteredAlgorithm& a : registeredAlgorithms(kinds)) {
    for (const char* transport : {"tcp", "shm"}) runs.push_back(LargeRun{a, transport});
  }
  return runs;
}

// Two calls back to back, so that the second call's messages must not meet the first's:
// out of place with the root last; then in place with the root in the middle, through the
// ...Async call, averaging where the collective reduces (the finalization once per element).
std::vector<CollectiveCase> casesFor(Collective kind, const std::string& algorithm, int n) {
  CollectiveCase c;
  c.kind = kind;
  c.algorithm = algorithm;
  c.dtype = DataType::kFloat32;
  c.count = largeCount(kind, n);
  c.root = n - 1;
  std::vector<CollectiveCase> cases = {c};
  c.inPlace = true;
  c.async = true;
  c.root = n / 2;
  if (isReduction(kind)) c.op = ReduceOp::kAvg;
  cases.push_back(c);
  return cases;
}

class LargeMessages : public ::testing::TestWithParam<LargeRun> {};

TEST_P(LargeMessages, EveryElementMatchesTheDefinition) {
  const LargeRun& run = GetParam();
  // Worlds of 1, odd and non-powers of two, and powers of two; 8 ranks, most of the time,
  // over shared memory only (collectives_test.cc runs every world over both at small
  // counts), 2 ranks over both (shared memory treats a pair apart: larger slots, exchanges).
  const std::vector<int> worlds = run.transport == "tcp" ? std::vector<int>{1, 2, 3, 4, 5, 7}
                                                         : std::vector<int>{2, 3, 5, 8};
  CommOptions options;
  options.transport = run.transport;
  for (const int n : worlds) {
    const std::vector<CollectiveCase> cases = casesFor(run.algorithm.kind, run.algorithm.name, n);
    auto failures = runRanks(n, [&](int rank, Communicator& comm) -> std::string {
      std::string out;
      for (const CollectiveCase& c : cases) {
        if (!algorithmApplies(c, rank, n)) return "not applicable: " + describeCase(c);
        out += runAndCheck(comm, c);
        if (out.size() > 4000) return out + "... (stopping)\n";
      }
      return out;
    }, options);
    EXPECT_EQ(joinFailures(failures), "") << n << " ranks over " << run.transport;
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, LargeMessages, ::testing::ValuesIn(largeRuns()),
                         [](const ::testing::TestParamInfo<LargeRun>& param) {
                           return param.param.algorithm.testName() + "_" + param.param.transport;
                         });

}  // namespace
}  // namespace tutti::test
