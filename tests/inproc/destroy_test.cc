// Communicator::destroy() (issue 37): destroying is collective, and it is where a rank whose
// calls all succeeded learns of a mismatch no call could show it (a broadcast root only
// sends). Ranks as threads over the real transports.

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "common/threads.h"
#include "tutti/communicator.h"

namespace tutti {
namespace {

using test::joinFailures;
using test::runRanks;

CommOptions over(const std::string& transport) {
  CommOptions options;
  options.transport = transport;
  options.timeout = std::chrono::seconds(30);  // a regression fails, it does not hang CI
  return options;
}

bool namesBoth(const Status& s) {
  const std::string& m = s.message();
  return s.code() == ErrorCode::kMismatch && m.find("broadcast #0 (count 16 int32 root 1") !=
                                                 std::string::npos &&
         m.find("broadcast #0 (count 16 int32 root 0") != std::string::npos;
}

class Destroy : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

// Rank 1 passes root 1, the others root 0: each rank's call fails naming both calls, or its
// destroy() does; a rank whose call reported it is not told again.
TEST_P(Destroy, ReportsTheMismatchNoCallReturned) {
  const auto [n, transport] = GetParam();
  auto failures = runRanks(
      n,
      [](int rank, Communicator& comm) -> std::string {
        std::vector<std::int32_t> buf(16, rank);
        Status call = comm.broadcast(buf.data(), buf.data(), buf.size(), DataType::kInt32,
                                     rank == 1 ? 1 : 0);
        Status destroyed = comm.destroy();
        if (call.ok() && namesBoth(destroyed)) return "";
        if (namesBoth(call) && destroyed.ok()) return "";
        return "call: " + call.toString() + "; destroy: " + destroyed.toString();
      },
      over(transport));
  EXPECT_EQ(joinFailures(failures), "");
}

// Calls that agree: destroy() is OK on every rank, and the object is then empty.
TEST_P(Destroy, IsOkAfterCallsThatAgree) {
  const auto [n, transport] = GetParam();
  auto failures = runRanks(
      n,
      [](int rank, Communicator& comm) -> std::string {
        std::vector<std::int32_t> buf(16, rank);
        Status call = comm.broadcast(buf.data(), buf.data(), buf.size(), DataType::kInt32, 0);
        Status destroyed = comm.destroy();
        Status again = comm.destroy();
        if (!call.ok() || !destroyed.ok()) return call.toString() + "; " + destroyed.toString();
        if (buf != std::vector<std::int32_t>(16, 0)) return "wrong broadcast result";
        if (again.code() != ErrorCode::kInvalidUsage || comm.rank() != -1)
          return "a destroyed communicator: " + again.toString();
        return "";
      },
      over(transport));
  EXPECT_EQ(joinFailures(failures), "");
}

// Rank 0 destroys the communicator while the others wait in an all-reduce it never called:
// they learn so from its farewell (their probes reach a closed call checker), not from
// their deadline, and every rank names the call rank 0 never made.
TEST_P(Destroy, APeerStillInACallLearnsThatTheDestroyerNeverCalledIt) {
  const auto [n, transport] = GetParam();
  auto failures = runRanks(
      n,
      [](int rank, Communicator& comm) -> std::string {
        auto neverCalled = [](const Status& s) {
          return s.code() == ErrorCode::kMismatch &&
                 s.message().find("which rank 0 never called") != std::string::npos &&
                 s.message().find("allreduce") != std::string::npos;
        };
        if (rank == 0) {
          Status destroyed = comm.destroy();
          return neverCalled(destroyed) ? "" : "destroy: " + destroyed.toString();
        }
        std::vector<std::int32_t> buf(16, rank);
        Status call = comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::kInt32,
                                     ReduceOp::kSum);
        Status destroyed = comm.destroy();
        if (neverCalled(call) && destroyed.ok()) return "";
        return "call: " + call.toString() + "; destroy: " + destroyed.toString();
      },
      over(transport));
  EXPECT_EQ(joinFailures(failures), "");
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, Destroy,
                         ::testing::Combine(::testing::Values(2, 4),
                                            ::testing::Values("tcp", "shm")),
                         [](const auto& param) {
                           return std::get<1>(param.param) + "_n" +
                                  std::to_string(std::get<0>(param.param));
                         });

}  // namespace
}  // namespace tutti
