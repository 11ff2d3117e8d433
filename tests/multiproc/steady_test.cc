// The steady state, in real processes launched by tutti-run (tests/multiproc/steady_worker.cc
// is the rank program): once warm, repeated calls of every collective, point-to-point
// messages and asynchronous calls allocate nothing, map nothing and fault no page in, on
// every rank, over shared memory (heap and memAlloc buffers), over TCP, and over both at
// once (hybrid, two ranks per host) (issue 4: scratch and staging pooled per communicator
// and reused). Pools that fill up to what a pattern of calls needs, at moments timing
// decides (buffers for messages that arrive early, mappings of peers' buffers), mark their
// growth (base/pool_growth.h); the worker judges the first window of calls in which none
// grew.

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "common/launch.h"
#include "common/subprocess.h"
#include "common/test_paths.h"

namespace tutti::test {
namespace {

constexpr double kOuterBoundSeconds = 240;

using World = std::tuple<int, std::string, std::string>;  // ranks, transport, buffers

class SteadyStateProcs : public ::testing::TestWithParam<World> {};

TEST_P(SteadyStateProcs, RepeatedCallsAllocateMapAndFaultNothing) {
  const auto [n, transport, buffers] = GetParam();
  ProcessResult r = runProcess(launch(n, transport, {"--timeout", "200"},
                                      {testProgramPath("tutti_steady_worker"), buffers}),
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT OK"), n) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT FAILED"), 0) << r.out;
}

std::string worldName(const ::testing::TestParamInfo<World>& info) {
  return std::get<1>(info.param) + "_" + std::get<2>(info.param) + "_n" +
         std::to_string(std::get<0>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Worlds, SteadyStateProcs,
                         ::testing::Values(World{2, "shm", "heap"}, World{4, "shm", "heap"},
                                           World{3, "shm", "shared"}, World{2, "tcp", "heap"},
                                           World{3, "tcp", "heap"}, World{4, "hybrid", "heap"}),
                         worldName);

}  // namespace
}  // namespace tutti::test
