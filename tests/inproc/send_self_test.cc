// Sends from a rank to itself (issue 37, part 5), ranks as threads over the real transports:
// every order MPI allows, alone and in flight with messages to the neighbours, from 1 to 4
// ranks and from empty to large messages (tests/common/self_sends.h has the scenarios).
// Every element received is compared with what was sent.

#include <gtest/gtest.h>

#include <string>
#include <tuple>

#include "common/self_sends.h"
#include "common/threads.h"
#include "tutti/communicator.h"

namespace tutti {
namespace {

using test::joinFailures;
using test::runRanks;

class SendToSelf : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(SendToSelf, EveryOrderDeliversEveryElement) {
  const auto [n, transport] = GetParam();
  CommOptions options;
  options.transport = transport;
  options.timeout = std::chrono::seconds(30);  // a regression fails, it does not hang CI
  auto failures = runRanks(
      n,
      [](int, Communicator& comm) {
        std::string out;
        for (std::size_t count : test::kSelfCounts) out += test::checkSendsToSelf(comm, count);
        return out;
      },
      options);
  EXPECT_EQ(joinFailures(failures), "");
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, SendToSelf,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4),
                                            ::testing::Values("tcp", "shm")),
                         [](const auto& param) {
                           return std::get<1>(param.param) + "_n" +
                                  std::to_string(std::get<0>(param.param));
                         });

}  // namespace
}  // namespace tutti
