// The C API from C (tests/capi/capi_smoke.c and capi_errors.c) under the real tutti-run,
// for worlds of 1, 2, 3 and 5 ranks: every collective blocking and non-blocking, split,
// error paths, a timeout, a second world joined through tuttiCommInitRank, and bad input of
// every kind. Each rank prints "CAPI OK" (or "ERRORS OK") only when all its checks passed.
// Every run has an outer bound far above its need.

#include <gtest/gtest.h>

#include <string>

#include "base/net.h"
#include "common/subprocess.h"
#include "common/test_paths.h"

namespace tutti::test {
namespace {

constexpr double kOuterBoundSeconds = 240;

// A port that was free a moment ago, for tuttiCommInitRank's contract (rank 0 serves the
// store at an address every rank knows in advance). Another process taking it in the next
// milliseconds is unlikely (ephemeral ports are handed out at random over a wide range);
// the test reports it plainly if it happens.
std::uint16_t freshPort() {
  auto fd = listenTcp("127.0.0.1", 0);
  if (!fd.ok()) return 0;
  auto addr = localAddress(fd->get());
  return addr.ok() ? addr->port : 0;
}

class CapiProcs : public ::testing::TestWithParam<int> {};

TEST_P(CapiProcs, EveryCallFromCIsRightOnEveryRank) {
  const int n = GetParam();
  const std::uint16_t port = freshPort();
  ASSERT_GT(port, 0);
  ProcessResult r = runProcess({binPath("tutti-run"), "-n", std::to_string(n), "--timeout", "200",
                                testProgramPath("tutti_capi_smoke"), std::to_string(port)},
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  for (int rank = 0; rank < n; ++rank) {
    const std::string ok = "CAPI OK rank " + std::to_string(rank) + " of " + std::to_string(n);
    EXPECT_EQ(countLines(r.out, ok), 1) << r.out << r.err;
  }
  EXPECT_EQ(countLines(r.out, "CAPI FAIL"), 0) << r.out;
}

// Bad input of every kind from C (tests/capi/capi_errors.c): exact codes and messages, and
// a rank's own bad argument fails the others' calls at once instead of at their timeout.
TEST_P(CapiProcs, BadInputIsRefusedWithTheRightCodeOnEveryRank) {
  const int n = GetParam();
  ProcessResult r = runProcess({binPath("tutti-run"), "-n", std::to_string(n), "--timeout", "200",
                                testProgramPath("tutti_capi_errors")},
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  for (int rank = 0; rank < n; ++rank) {
    const std::string ok = "ERRORS OK rank " + std::to_string(rank) + " of " + std::to_string(n);
    EXPECT_EQ(countLines(r.out, ok), 1) << r.out << r.err;
  }
  EXPECT_EQ(countLines(r.out, "ERRORS FAIL"), 0) << r.out;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CapiProcs, ::testing::Values(1, 2, 3, 5));

}  // namespace
}  // namespace tutti::test
