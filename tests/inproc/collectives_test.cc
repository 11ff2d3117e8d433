// Every collective x every algorithm registered for it, run for real over shared memory and
// TCP with ranks as threads, for world sizes 1, 2, 3, 4, 5, 7 and 8 (oversubscribed on this
// machine). Each result element is compared with an independent expectation
// (tests/common/collective_check.h).
// The collectives and their algorithms come from the registry (common/registry.h), so a new
// algorithm is covered the day it is registered.

#include <gtest/gtest.h>

#include <string>
#include <chrono>
#include <thread>
#include <tuple>
#include <vector>

#include "algorithms/algorithm.h"
#include "common/collective_check.h"
#include "common/registry.h"
#include "common/threads.h"
#include "base/strings.h"
#include "schedule/collective.h"

namespace tutti::test {
namespace {

constexpr DataType kAllTypes[] = {DataType::kInt8,    DataType::kUint8,    DataType::kInt32,
                                  DataType::kUint32,  DataType::kInt64,    DataType::kUint64,
                                  DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                  DataType::kFloat64};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                                ReduceOp::kAvg};

std::vector<std::string> algorithmsFor(Collective kind) {
  std::vector<std::string> names = algorithmsOf(kind);
  names.emplace_back("");  // and whatever tutti picks by default
  return names;
}

// The cases for one collective in a world of n: every algorithm x placement x root, with
// every dtype x op at one awkward count and two dtypes at the others.
std::vector<CollectiveCase> casesFor(Collective kind, int n) {
  std::vector<CollectiveCase> cases;
  const std::size_t big = 1001;
  std::vector<std::size_t> counts = {0, 1, static_cast<std::size_t>(n) + 1, big};
  if (n > 1) counts.push_back(static_cast<std::size_t>(n) - 1);
  std::vector<int> roots = isRooted(kind) ? std::vector<int>{0, n - 1} : std::vector<int>{0};
  if (isRooted(kind) && n > 2) roots.push_back(n / 2);
  const bool reduces = isReduction(kind);
  for (const std::string& algorithm : algorithmsFor(kind)) {
    for (bool inPlace : {false, true}) {
      for (int root : roots) {
        for (std::size_t count : counts) {
          const bool full = count == static_cast<std::size_t>(n) + 1;
          for (DataType dtype : kAllTypes) {
            if (!full && dtype != DataType::kFloat32 && dtype != DataType::kInt8) continue;
            for (ReduceOp op : kAllOps) {
              if (!reduces && op != ReduceOp::kSum) continue;
              if (reduces && !full && op != ReduceOp::kSum && op != ReduceOp::kMax) continue;
              CollectiveCase c;
              c.kind = kind;
              c.count = count;
              c.dtype = dtype;
              c.op = op;
              c.root = root;
              c.inPlace = inPlace;
              c.algorithm = algorithm;
              c.async = (count % 2) == 1 && inPlace;  // exercise the ...Async path too
              cases.push_back(c);
            }
          }
        }
      }
    }
  }
  return cases;
}

class EveryCollective
    : public ::testing::TestWithParam<std::tuple<int, Collective, std::string>> {};

TEST_P(EveryCollective, EveryAlgorithmMatchesTheDefinition) {
  const auto [size, kind, transport] = GetParam();
  const int n = size;  // a plain variable: clang 14 lets no lambda capture a structured binding
  const std::vector<CollectiveCase> cases = casesFor(kind, n);
  CommOptions options;
  options.transport = transport;
  auto failures = runRanks(n, [&](int rank, Communicator& comm) -> std::string {
    std::string out;
    for (const CollectiveCase& c : cases) {
      if (!algorithmApplies(c, rank, n)) continue;
      out += runAndCheck(comm, c);
      if (out.size() > 4000) return out + "... (stopping)\n";
    }
    return out;
  }, options);
  EXPECT_EQ(joinFailures(failures), "") << cases.size() << " cases over " << transport;
}

std::string caseName(
    const ::testing::TestParamInfo<std::tuple<int, Collective, std::string>>& info) {
  return std::string(collectiveName(std::get<1>(info.param))) + "_n" +
         std::to_string(std::get<0>(info.param)) + "_" + std::get<2>(info.param);
}

INSTANTIATE_TEST_SUITE_P(
    Worlds, EveryCollective,
    ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 7, 8),
                       ::testing::ValuesIn(registeredCollectives()),
                       ::testing::Values(std::string("shm"), std::string("tcp"))),
    caseName);

TEST(Collectives, AlgorithmThatDoesNotApplyIsAClearError) {
  auto failures = runRanks(2, [&](int, Communicator& comm) -> std::string {
    std::vector<float> in(4), out(8);
    CallOptions o;
    o.algorithm = "dissemination";  // a barrier algorithm, not an allgather one
    Status s = comm.allgather(in.data(), out.data(), 4, DataType::kFloat32, o);
    if (s.code() != ErrorCode::kInvalidArgument || s.message().find("direct") == std::string::npos)
      return "got " + s.toString();
    return "";
  });
  EXPECT_EQ(joinFailures(failures), "");
}

TEST(Collectives, BadArgumentsOfEveryKindAreErrors) {
  auto failures = runRanks(3, [&](int rank, Communicator& comm) -> std::string {
    std::string out;
    std::vector<float> buf(64);
    std::vector<std::size_t> displs = {0, 2, 4}, shortCounts = {2, 2};
    auto expect = [&](Status s, const char* what) {
      if (s.code() != ErrorCode::kInvalidArgument) out += std::string(what) + ": " + s.toString() + "\n";
    };
    // Only arguments every rank passes alike: an error in a rank's own buffers or counts
    // also fails the communicator (bad_input_test.cc covers those).
    expect(comm.broadcast(buf.data(), buf.data(), 4, DataType::kFloat32, 3), "root out of range");
    expect(comm.reduce(buf.data(), buf.data(), 4, DataType::kFloat32, ReduceOp::kSum, -1), "negative root");
    expect(comm.allgatherv(buf.data(), 2, buf.data() + 32, shortCounts, displs, DataType::kFloat32),
           "short counts array");
    expect(comm.scatter(buf.data(), buf.data(), 4, static_cast<DataType>(77), 0), "bad dtype");
    // Broadcast ignores the send buffer away from the root: a null one is fine there.
    Status ok = comm.broadcast(rank == 0 ? buf.data() : nullptr, buf.data(), 4, DataType::kFloat32, 0);
    if (!ok.ok()) out += "broadcast with null sendbuf off-root: " + ok.toString() + "\n";
    return out;
  });
  EXPECT_EQ(joinFailures(failures), "");
}

TEST(Collectives, TuttiAlgoStyleOverridesParse) {
  auto parsed = parseAlgorithmOverrides("allreduce:ring, bcast:binomial,all_gather:direct");
  ASSERT_TRUE(parsed.ok()) << parsed.status().toString();
  ASSERT_EQ(parsed->size(), 3u);
  EXPECT_EQ((*parsed)[1].first, Collective::kBroadcast);
  EXPECT_EQ((*parsed)[2].first, Collective::kAllGather);
  EXPECT_FALSE(parseAlgorithmOverrides("allreduce").ok());
  EXPECT_FALSE(parseAlgorithmOverrides("allsum:ring").ok());
  EXPECT_FALSE(parseAlgorithmOverrides("allreduce:").ok());
}

}  // namespace
}  // namespace tutti::test

namespace tutti::test {
namespace {

// Communicator::verifyCall proves, with no communication, the schedules every rank would
// run: the default choice at sizes where it changes, forced names, both placements, every
// root, and point-to-point as pairs in odd worlds.
TEST(Collectives, VerifyCallProvesWhatWouldRun) {
  for (const int n : {1, 2, 5}) {
    auto failures = runRanks(n, [&](int rank, Communicator& comm) -> std::string {
      if (rank != 0) return "";
      std::string out;
      for (int k = 0; k < kNumCollectives; ++k) {
        const auto kind = static_cast<Collective>(k);
        const bool p2p = kind == Collective::kSend || kind == Collective::kRecv;
        for (const std::size_t count : {0ul, 1ul, 7ul, 1000ul, 300000ul}) {
          for (const bool inPlace : {false, true}) {
            for (int root = 0; root < (isRooted(kind) ? n : 1); ++root) {
              CallShape call;
              call.kind = kind;
              call.count = kind == Collective::kBarrier ? 0 : count;
              call.dtype = DataType::kInt32;
              call.op = ReduceOp::kMax;
              call.root = root;
              call.inPlace = inPlace;
              Status s = comm.verifyCall(call);
              const bool expectRefused = p2p && n == 1;
              if (s.ok() == expectRefused) {
                out += strFormat("%s count %zu root %d%s: %s\n", collectiveName(kind), count,
                                 root, inPlace ? " in place" : "", s.toString().c_str());
              }
            }
          }
        }
      }
      // Every registered algorithm, forced by name.
      for (const Collective kind : registeredCollectives()) {
        for (const std::string& name : algorithmsOf(kind)) {
          CallShape call;
          call.kind = kind;
          call.count = kind == Collective::kBarrier ? 0 : 1001;
          call.root = n - 1;
          Status s = comm.verifyCall(call, name);
          if (!s.ok()) out += strFormat("%s %s: %s\n", collectiveName(kind), name.c_str(),
                                        s.toString().c_str());
        }
      }
      CallShape allreduce;
      allreduce.count = 1001;
      Status bogus = comm.verifyCall(allreduce, "pairwise");
      if (bogus.code() != ErrorCode::kInvalidArgument ||
          bogus.message().find("algorithms that apply") == std::string::npos)
        out += "a forced name that does not apply gave: " + bogus.toString() + "\n";
      return out;
    });
    EXPECT_EQ(joinFailures(failures), "") << n << " ranks";
  }
}

}  // namespace
}  // namespace tutti::test

namespace tutti::test {
namespace {

class Abort : public ::testing::TestWithParam<std::string> {};

// Rank 0 aborts; the others, in an all-reduce that rank 0 never joins (with a two-minute
// deadline), fail with kAborted naming rank 0, and later calls are refused.
TEST_P(Abort, EveryPeerFailsNamingTheAbortingRank) {
  CommOptions options;
  options.transport = GetParam();
  auto failures = runRanks(3, [&](int rank, Communicator& comm) -> std::string {
    // No barrier first: the abort may reach a peer before or during its call, and both
    // must give the same error.
    float x = 1, y = 0;
    CallOptions patient;
    patient.timeout = std::chrono::seconds(120);
    if (rank == 0) {
      comm.abort();
      comm.abort();  // idempotent
    } else {
      Status s = comm.allreduce(&x, &y, 1, DataType::kFloat32, ReduceOp::kSum, patient);
      if (s.code() != ErrorCode::kAborted || s.peerRank() != 0 ||
          s.message().find("aborted by rank 0") == std::string::npos)
        return "waiting allreduce gave " + s.toString();
    }
    Status later = comm.allreduce(&x, &y, 1, DataType::kFloat32, ReduceOp::kSum, patient);
    if (later.code() != ErrorCode::kAborted || later.message().find("refused") == std::string::npos)
      return "a call after the abort gave " + later.toString();
    if (comm.lastError().code() != ErrorCode::kAborted) return "lastError: " + comm.lastError().toString();
    return "";
  }, options);
  EXPECT_EQ(joinFailures(failures), "");
}

// abort() from another thread ends a call blocked on this rank (here rank 1 waits for a
// rank 0 that never calls): whether it lands before or during the call, the call fails
// with kAborted.
TEST_P(Abort, FromAnotherThreadEndsABlockedCall) {
  CommOptions options;
  options.transport = GetParam();
  auto failures = runRanks(2, [&](int rank, Communicator& comm) -> std::string {
    if (rank == 0) {
      // Waits for rank 1's abort to reach it, then leaves.
      Status s = comm.barrier();
      return s.code() == ErrorCode::kAborted ? "" : "rank 0's barrier gave " + s.toString();
    }
    float x = 1, y = 0;
    CallOptions patient;
    patient.timeout = std::chrono::seconds(120);
    Status blocked;
    std::thread caller([&] {
      blocked = comm.recv(&y, 1, DataType::kFloat32, 0, /*tag=*/5, patient);
    });
    comm.abort();
    caller.join();
    (void)x;
    return blocked.code() == ErrorCode::kAborted ? "" : "blocked recv gave " + blocked.toString();
  }, options);
  EXPECT_EQ(joinFailures(failures), "");
}

INSTANTIATE_TEST_SUITE_P(Transports, Abort, ::testing::Values("shm", "tcp"),
                         [](const auto& param) { return param.param; });

}  // namespace
}  // namespace tutti::test
