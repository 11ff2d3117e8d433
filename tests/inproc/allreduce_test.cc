// All-reduce, barrier and point-to-point with ranks as threads over the real TCP transport.
// Every element of every rank's output is compared with an expectation computed
// independently of the library (tools/bench/data.h).

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <latch>
#include <thread>
#include <vector>

#include "bench/data.h"
#include "base/strings.h"
#include "common/threads.h"
#include "tutti/communicator.h"

namespace tutti {
namespace {

using test::joinFailures;
using test::runRanks;

constexpr DataType kAllTypes[] = {DataType::kInt8,    DataType::kUint8,    DataType::kInt32,
                                  DataType::kUint32,  DataType::kInt64,    DataType::kUint64,
                                  DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                  DataType::kFloat64};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                                ReduceOp::kAvg};

// Runs one all-reduce on `comm` and returns "" or a description of what was wrong.
std::string checkAllreduce(Communicator& comm, std::size_t count, DataType dtype, ReduceOp op,
                           bool inPlace, const CallOptions& options = {}) {
  const std::size_t bytes = count * dataTypeSize(dtype);
  std::vector<char> input(bytes + 1), output(bytes + 1), expected(bytes + 1);
  bench::fillInput(input.data(), count, comm.rank(), comm.size(), dtype, op);
  bench::fillExpectedAllReduce(expected.data(), count, comm.size(), dtype, op);
  std::memset(output.data(), 0xff, output.size());
  void* out = inPlace ? input.data() : output.data();
  Status s = comm.allreduce(input.data(), out, count, dtype, op, options);
  std::string what = strFormat("allreduce count=%zu %s %s %s", count, dataTypeName(dtype),
                               reduceOpName(op), inPlace ? "in-place" : "out-of-place");
  if (!s.ok()) return what + ": " + s.toString();
  std::uint64_t wrong = bench::countWrong(out, expected.data(), count, dtype);
  if (wrong != 0) return what + strFormat(": %llu wrong elements", static_cast<unsigned long long>(wrong));
  return "";
}

class AllreduceWorld : public ::testing::TestWithParam<int> {};

// Every dtype x op x placement at awkward counts: 0, 1, n-1, n+1 and a large odd count.
TEST_P(AllreduceWorld, EveryTypeOpAndCountMatchesTheDefinition) {
  const int n = GetParam();
  std::vector<std::size_t> counts = {0, 1, static_cast<std::size_t>(n) + 1, 10007};
  if (n > 1) counts.push_back(static_cast<std::size_t>(n) - 1);
  auto failures = runRanks(n, [&](int, Communicator& comm) -> std::string {
    std::string out;
    for (DataType dtype : kAllTypes)
      for (ReduceOp op : kAllOps)
        for (std::size_t count : counts)
          for (bool inPlace : {false, true}) out += checkAllreduce(comm, count, dtype, op, inPlace);
    return out;
  });
  EXPECT_EQ(joinFailures(failures), "");
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, AllreduceWorld, ::testing::Values(1, 2, 3, 4, 5, 7, 8));

TEST(Allreduce, LargeCountsPipelineInManySegments) {
  // 3 MiB of float32 with 64 KiB segments: dozens of segments per chunk in flight.
  auto failures = runRanks(3, [&](int, Communicator& comm) -> std::string {
    CallOptions options;
    return checkAllreduce(comm, (3u << 20) / 4 + 5, DataType::kFloat32, ReduceOp::kSum, false,
                          options) +
           checkAllreduce(comm, (1u << 20) + 3, DataType::kInt64, ReduceOp::kMax, true, options);
  });
  EXPECT_EQ(joinFailures(failures), "");
}

TEST(Allreduce, AsyncCallsCompleteInIssueOrderWithBlockingOnesBetween) {
  auto failures = runRanks(4, [&](int rank, Communicator& comm) -> std::string {
    const std::size_t count = 4099;
    std::vector<std::vector<std::int32_t>> bufs(6, std::vector<std::int32_t>(count));
    std::vector<Work> works;
    for (std::size_t k = 0; k < bufs.size(); ++k) {
      for (std::size_t i = 0; i < count; ++i)
        bufs[k][i] = static_cast<std::int32_t>(k * 1000003 + i * 7 + rank);
      if (k == 3) {
        Status s = comm.allreduce(bufs[k].data(), bufs[k].data(), count, DataType::kInt32,
                                  ReduceOp::kSum);
        if (!s.ok()) return "blocking: " + s.toString();
      } else {
        works.push_back(comm.allreduceAsync(bufs[k].data(), bufs[k].data(), count,
                                            DataType::kInt32, ReduceOp::kSum));
      }
    }
    for (Work& w : works) {
      Status s = w.wait();
      if (!s.ok()) return "async: " + s.toString();
    }
    const int n = comm.size();
    for (std::size_t k = 0; k < bufs.size(); ++k)
      for (std::size_t i = 0; i < count; ++i) {
        std::int64_t expect = 0;
        for (int r = 0; r < n; ++r) expect += static_cast<std::int64_t>(k * 1000003 + i * 7 + r);
        if (bufs[k][i] != static_cast<std::int32_t>(expect))
          return strFormat("buffer %zu element %zu: %d != %lld", k, i, bufs[k][i],
                           static_cast<long long>(expect));
      }
    return "";
  });
  EXPECT_EQ(joinFailures(failures), "");
}

TEST(Allreduce, ForcedAlgorithmByNameAndBadNameIsAClearError) {
  auto failures = runRanks(2, [&](int, Communicator& comm) -> std::string {
    CallOptions ring;
    ring.algorithm = "ring";
    std::string out = checkAllreduce(comm, 100, DataType::kFloat32, ReduceOp::kSum, false, ring);
    CallOptions bogus;
    bogus.algorithm = "bogus";
    float x = 1, y = 0;
    Status s = comm.allreduce(&x, &y, 1, DataType::kFloat32, ReduceOp::kSum, bogus);
    if (s.code() != ErrorCode::kInvalidArgument || s.message().find("ring") == std::string::npos)
      out += "bad algorithm name gave: " + s.toString();
    auto name = comm.algorithmFor(Collective::kAllReduce, 1 << 18, DataType::kFloat32);
    if (!name.ok() || *name != "ring") out += "algorithmFor(1 MiB) did not say ring";
    return out;
  });
  EXPECT_EQ(joinFailures(failures), "");
}

// The communicator answers a call that repeats the previous one's shape from what it chose
// then (argument checks, algorithm): each call must still run the algorithm it forces.
TEST(Allreduce, RepeatedShapeRunsEachCallsOwnForcedAlgorithm) {
  auto failures = runRanks(2, [&](int rank, Communicator& comm) -> std::string {
    std::string out;
    const char* cycle[] = {"ring", "bogus", "ring", "", "recursive_doubling", "bogus", ""};
    for (const char* name : cycle) {
      CallOptions options;
      options.algorithm = name;
      const std::string bad = checkAllreduce(comm, 64, DataType::kFloat32, ReduceOp::kSum,
                                             false, options);
      const bool refused = bad.find("no algorithm 'bogus'") != std::string::npos;
      if (std::string(name) == "bogus" ? !refused : !bad.empty())
        out += std::string("forcing '") + name + "': " + (bad.empty() ? "ran" : bad) + "\n";
    }
    // Same shape, different algorithms on the two ranks: a remembered choice would let both
    // run ring and agree; each runs its own, and the stamps say they differ.
    CallOptions ring;
    ring.algorithm = "ring";
    out += checkAllreduce(comm, 64, DataType::kFloat32, ReduceOp::kSum, false, ring);
    CallOptions mine;
    mine.algorithm = rank == 0 ? "ring" : "recursive_doubling";
    const std::string last = checkAllreduce(comm, 64, DataType::kFloat32, ReduceOp::kSum,
                                            false, mine);
    if (last.find("ring") == std::string::npos ||
        last.find("recursive_doubling") == std::string::npos)
      out += "different forced algorithms on the same shape gave: " + (last.empty() ? "ok" : last);
    return out;
  });
  EXPECT_EQ(joinFailures(failures), "");
}

TEST(Allreduce, BadArgumentsAreErrorsNotCrashes) {
  auto failures = runRanks(2, [&](int, Communicator& comm) -> std::string {
    std::string out;
    float buf[8] = {};
    auto expectInvalid = [&](Status s, const char* what) {
      if (s.code() != ErrorCode::kInvalidArgument) out += std::string(what) + ": " + s.toString() + "\n";
    };
    // Only arguments every rank passes alike: an error in a rank's own buffers or peer also
    // fails the communicator (bad_input_test.cc covers those).
    expectInvalid(comm.allreduce(buf, buf, 4, static_cast<DataType>(42), ReduceOp::kSum), "dtype");
    expectInvalid(comm.allreduce(buf, buf, 4, DataType::kFloat32, static_cast<ReduceOp>(9)), "op");
    expectInvalid(comm.allreduce(buf, buf, ~std::size_t{0} / 2, DataType::kFloat32, ReduceOp::kSum),
                  "overflowing count");
    expectInvalid(comm.send(buf, 1, DataType::kFloat32, 1 - comm.rank(), -3), "negative tag");
    // The communicator still works after refusing bad input.
    out += checkAllreduce(comm, 33, DataType::kFloat32, ReduceOp::kMax, true);
    return out;
  });
  EXPECT_EQ(joinFailures(failures), "");
}

TEST(Barrier, EveryWorldSizeCompletes) {
  for (int n : {1, 2, 3, 5, 8}) {
    auto failures = runRanks(n, [&](int, Communicator& comm) -> std::string {
      for (int i = 0; i < 20; ++i) {
        Status s = comm.barrier();
        if (!s.ok()) return s.toString();
      }
      Work w = comm.barrierAsync();
      Status s = w.wait();
      return s.ok() ? "" : s.toString();
    });
    EXPECT_EQ(joinFailures(failures), "") << "world " << n;
  }
}

TEST(PointToPoint, RingOfMessagesAndTagOrdering) {
  auto failures = runRanks(5, [&](int rank, Communicator& comm) -> std::string {
    const int n = comm.size();
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    std::vector<std::int64_t> out(1001), in(1001, -1);
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = rank * 100000 + static_cast<std::int64_t>(i);
    Work send = comm.sendAsync(out.data(), out.size(), DataType::kInt64, next, 3);
    Status s = comm.recv(in.data(), in.size(), DataType::kInt64, prev, 3);
    if (!s.ok()) return "recv: " + s.toString();
    s = send.wait();
    if (!s.ok()) return "send: " + s.toString();
    for (std::size_t i = 0; i < in.size(); ++i)
      if (in[i] != prev * 100000 + static_cast<std::int64_t>(i)) return strFormat("element %zu wrong", i);
    // Messages with different tags are matched by tag, not arrival order.
    if (rank == 0) {
      int a = 1, b = 2;
      Status s1 = comm.send(&a, 1, DataType::kInt32, 1, 10);
      Status s2 = comm.send(&b, 1, DataType::kInt32, 1, 20);
      if (!s1.ok() || !s2.ok()) return "tagged sends failed";
    } else if (rank == 1) {
      int a = 0, b = 0;
      Status s2 = comm.recv(&b, 1, DataType::kInt32, 0, 20);
      Status s1 = comm.recv(&a, 1, DataType::kInt32, 0, 10);
      if (!s1.ok() || !s2.ok() || a != 1 || b != 2) return "tag matching wrong";
    }
    return "";
  });
  EXPECT_EQ(joinFailures(failures), "");
}

TEST(PointToPoint, MismatchedSizesFailBothSidesWithMismatch) {
  auto failures = runRanks(2, [&](int rank, Communicator& comm) -> std::string {
    std::vector<float> buf(100);
    CallOptions quick;
    quick.timeout = std::chrono::seconds(20);
    Status s = rank == 0 ? comm.send(buf.data(), 100, DataType::kFloat32, 1, 0, quick)
                         : comm.recv(buf.data(), 64, DataType::kFloat32, 0, 0, quick);
    if (rank == 1 && (s.code() != ErrorCode::kMismatch || s.message().find("rank 0") == std::string::npos))
      return "receiver got: " + s.toString();
    // The receiver's communicator is now failed and says why.
    if (rank == 1) {
      Status again = comm.barrier(quick);
      if (again.ok() || again.message().find("failed earlier") == std::string::npos)
        return "later call gave: " + again.toString();
    }
    return "";
  });
  EXPECT_EQ(joinFailures(failures), "");
}

TEST(Timeout, AMissingPeerIsATimeoutNamingIt) {
  // Rank 2 never joins the collective, and stays until the others have returned: a rank
  // that destroyed the communicator instead would be named as never having called it.
  std::latch othersDone(2);
  auto failures = runRanks(3, [&](int rank, Communicator& comm) -> std::string {
    if (rank == 2) {
      othersDone.wait();
      return "";
    }
    struct Done {
      std::latch& latch;
      ~Done() { latch.count_down(); }
    } done{othersDone};
    CallOptions quick;
    quick.timeout = std::chrono::milliseconds(500);
    std::vector<float> buf(16);
    Status s = comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                              ReduceOp::kSum, quick);
    if (s.code() != ErrorCode::kTimeout && s.code() != ErrorCode::kPeerFailure)
      return "got " + s.toString();
    if (s.code() == ErrorCode::kTimeout && s.message().find("rank") == std::string::npos)
      return "timeout does not say who: " + s.toString();
    return "";
  });
  EXPECT_EQ(joinFailures(failures), "");
}

// A call's deadline is taken from a coarse clock rounded up: it may end a tick late, never
// early. Two ranks of three wait for the third, which never calls; each must have waited
// its whole timeout before it reports the timeout.
TEST(Timeout, ACallNeverTimesOutBeforeItsTimeout) {
  constexpr auto kTimeout = std::chrono::milliseconds(60);
  std::atomic<int> finished{0};
  auto failures = runRanks(3, [&](int rank, Communicator& comm) -> std::string {
    if (rank == 2) {
      // Stays (a rank that left would be a peer failure, not a timeout) but never calls,
      // until both others are done (bounded: their calls are).
      const Deadline bound = Deadline::afterSeconds(60);
      while (finished.load() < 2 && !bound.expired()) std::this_thread::yield();
      return finished.load() == 2 ? "" : "the other ranks never finished";
    }
    CallOptions quick;
    quick.timeout = kTimeout;
    std::vector<float> buf(4);
    std::string out;
    for (int call = 0; call < 2; ++call) {  // the second is refused: the first failed
      const auto start = std::chrono::steady_clock::now();
      Status s = comm.allreduce(buf.data(), buf.data(), buf.size(), DataType::kFloat32,
                                ReduceOp::kSum, quick);
      const auto waited = std::chrono::steady_clock::now() - start;
      if (call == 0 && s.code() != ErrorCode::kTimeout) out += "got " + s.toString() + "\n";
      const auto waitedUs = std::chrono::duration_cast<std::chrono::microseconds>(waited);
      if (call == 0 && waited < kTimeout)
        out += strFormat("timed out after %lld us, before its %lld ms timeout\n",
                         static_cast<long long>(waitedUs.count()),
                         static_cast<long long>(kTimeout.count()));
      if (s.ok()) out += "call " + std::to_string(call) + " succeeded without rank 2\n";
    }
    finished.fetch_add(1);
    return out;
  });
  EXPECT_EQ(joinFailures(failures), "");
}

}  // namespace
}  // namespace tutti
