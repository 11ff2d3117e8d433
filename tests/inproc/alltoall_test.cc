// Pairwise and Bruck over real TCP with blocks far larger than the sockets' buffers, so
// that sends block until their receivers read: the case the verifier's no-buffering
// progress check stands for, here for real. (collectives_test.cc runs every registered
// algorithm at small counts; this adds the large blocks and back-to-back calls.)

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "common/collective_check.h"
#include "common/threads.h"

namespace tutti::test {
namespace {

struct Forced {
  Collective kind;
  const char* algorithm;
};

constexpr Forced kForced[] = {
    {Collective::kAllToAll, "pairwise"},
    {Collective::kAllToAll, "bruck"},
    {Collective::kAllToAllV, "pairwise"},
    {Collective::kAllGather, "bruck"},
};

class LargeBlocks : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(LargeBlocks, EveryElementRightTwiceInARow) {
  const auto [n, which] = GetParam();
  const Forced forced = kForced[which];
  // 2^16 + 3 floats: about 256 KiB per block, odd so blocks do not align to pages.
  const std::size_t count = (std::size_t{1} << 16) + 3;
  auto failures = runRanks(n, [&](int, Communicator& comm) -> std::string {
    std::string out;
    for (bool inPlace : {false, true}) {
      CollectiveCase c;
      c.kind = forced.kind;
      c.count = count;
      c.inPlace = inPlace;
      c.algorithm = forced.algorithm;
      // Twice: the second call's messages must not meet the first call's.
      for (int repeat = 0; repeat < 2; ++repeat) {
        c.async = repeat == 1;
        out += runAndCheck(comm, c);
      }
    }
    return out;
  });
  EXPECT_EQ(joinFailures(failures), "");
}

std::string caseName(const ::testing::TestParamInfo<std::tuple<int, int>>& info) {
  const Forced forced = kForced[std::get<1>(info.param)];
  return std::string(collectiveName(forced.kind)) + "_" + forced.algorithm + "_n" +
         std::to_string(std::get<0>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Worlds, LargeBlocks,
                         ::testing::Combine(::testing::Values(2, 3, 5, 8),
                                            ::testing::Range(0,
                                                             static_cast<int>(std::size(kForced)))),
                         caseName);

}  // namespace
}  // namespace tutti::test
