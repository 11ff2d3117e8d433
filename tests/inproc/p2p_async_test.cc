// Point-to-point calls in flight together, ranks as threads over the real TCP transport:
// the patterns MPI programs write with Irecv/Isend/Waitall. Each completes only when the
// calls issued back to back run at once (P2pGroupRunner::run), not one after the other.
// Every element received is compared with what its sender wrote.

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/strings.h"
#include "common/threads.h"
#include "tutti/communicator.h"

namespace tutti {
namespace {

using test::joinFailures;
using test::runRanks;

constexpr std::size_t kCount = 5000;
constexpr auto kU32 = DataType::kUint32;

// What rank `from` sends to rank `to` as message `k`: distinct per pair and message.
std::vector<std::uint32_t> payload(int from, int to, int k) {
  std::vector<std::uint32_t> v(kCount);
  for (std::size_t i = 0; i < kCount; ++i)
    v[i] = static_cast<std::uint32_t>(from * 1000003u + to * 7919u + k * 104729u + i);
  return v;
}

std::string compare(const std::vector<std::uint32_t>& got, int from, int to, int k) {
  const std::vector<std::uint32_t> want = payload(from, to, k);
  for (std::size_t i = 0; i < kCount; ++i) {
    if (got[i] != want[i])
      return strFormat("message %d from rank %d: element %zu is %u, expected %u\n", k, from, i,
                       got[i], want[i]);
  }
  return "";
}

std::string failureOf(const Status& s, const char* what) {
  return s.ok() ? "" : std::string(what) + ": " + s.toString() + "\n";
}

CommOptions shortTimeout() {
  CommOptions options;
  options.timeout = std::chrono::seconds(20);  // a regression fails, it does not hang CI
  return options;
}

class P2pAsync : public ::testing::TestWithParam<int> {};

// 20 rounds of a ring in which every rank receives from the left (recvAsync) before it
// sends to the right, with sendAsync or a blocking send. One at a time, every receive would
// wait for a send queued behind its peer's own receive.
std::string ringRounds(int rank, Communicator& comm, bool blockingSend) {
  const int n = comm.size(), next = (rank + 1) % n, prev = (rank + n - 1) % n;
  const int tag = blockingSend ? 9 : 4;
  std::string out;
  for (int round = 0; round < 20; ++round) {
    std::vector<std::uint32_t> in(kCount), mine = payload(rank, next, round);
    Work r = comm.recvAsync(in.data(), kCount, kU32, prev, tag);
    if (blockingSend) {
      out += failureOf(comm.send(mine.data(), kCount, kU32, next, tag), "send");
    } else {
      Work s = comm.sendAsync(mine.data(), kCount, kU32, next, tag);
      out += failureOf(s.wait(), "send");
    }
    out += failureOf(r.wait(), "recv");
    if (!out.empty()) return out;
    out += compare(in, prev, rank, round);
  }
  return out;
}

TEST_P(P2pAsync, ReceiveFromTheLeftThenSendToTheRightThenWaitOnBoth) {
  auto failures = runRanks(GetParam(), [](int rank, Communicator& comm) {
    return ringRounds(rank, comm, false);
  }, shortTimeout());
  EXPECT_EQ(joinFailures(failures), "");
}

// The blocking send joins the receive queued before it.
TEST_P(P2pAsync, ReceiveAsyncThenBlockingSend) {
  auto failures = runRanks(GetParam(), [](int rank, Communicator& comm) {
    return ringRounds(rank, comm, true);
  }, shortTimeout());
  EXPECT_EQ(joinFailures(failures), "");
}

// An all-to-all by hand: a receive from every peer, then a send to every peer, then a wait
// on all of them; two messages per pair under one tag, which must match in order.
TEST_P(P2pAsync, ReceivesFromEveryPeerThenSendsThenWaitAllInOrder) {
  auto failures = runRanks(GetParam(), [](int rank, Communicator& comm) {
    const int n = comm.size();
    std::string out;
    std::vector<std::vector<std::uint32_t>> in(2 * n, std::vector<std::uint32_t>(kCount));
    std::vector<std::vector<std::uint32_t>> mine;
    std::vector<Work> works;
    for (int k = 0; k < 2; ++k)
      for (int p = 0; p < n; ++p)
        if (p != rank) works.push_back(comm.recvAsync(in[k * n + p].data(), kCount, kU32, p, 2));
    for (int k = 0; k < 2; ++k)
      for (int p = 0; p < n; ++p)
        if (p != rank) mine.push_back(payload(rank, p, k));
    std::size_t m = 0;
    for (int k = 0; k < 2; ++k)
      for (int p = 0; p < n; ++p)
        if (p != rank) works.push_back(comm.sendAsync(mine[m++].data(), kCount, kU32, p, 2));
    for (Work& w : works) out += failureOf(w.wait(), "wait");
    if (!out.empty()) return out;
    for (int k = 0; k < 2; ++k)
      for (int p = 0; p < n; ++p)
        if (p != rank) out += compare(in[k * n + p], p, rank, k);
    // The communicator is still in step: a collective after the group.
    out += failureOf(comm.barrier(), "barrier");
    return out;
  }, shortTimeout());
  EXPECT_EQ(joinFailures(failures), "");
}

INSTANTIATE_TEST_SUITE_P(Worlds, P2pAsync, ::testing::Values(2, 3, 4));

// A receive nobody sends to still ends, with an error, and the send issued with it in the
// same group completes first.
TEST(P2pAsyncFailure, AnUnmatchedReceiveInAGroupTimesOut) {
  auto failures = runRanks(2, [](int rank, Communicator& comm) {
    std::vector<std::uint32_t> in(kCount), mine = payload(rank, 1 - rank, 0);
    std::string out;
    if (rank == 0) {
      CallOptions shortCall;
      shortCall.timeout = std::chrono::milliseconds(500);
      Work r = comm.recvAsync(in.data(), kCount, kU32, 1, 77, shortCall);
      Work s = comm.sendAsync(mine.data(), kCount, kU32, 1, 5);
      out += failureOf(s.wait(), "send");
      // Its deadline, or rank 1 leaving first (it is done once its receive is).
      Status late = r.wait();
      if (late.code() != ErrorCode::kTimeout && late.code() != ErrorCode::kPeerFailure)
        out += "the unmatched receive ended with: " + late.toString() + "\n";
    } else {
      out += failureOf(comm.recv(in.data(), kCount, kU32, 0, 5), "recv");
      if (out.empty()) out += compare(in, 0, 1, 0);
    }
    return out;
  }, shortTimeout());
  EXPECT_EQ(failures[0], "");
  EXPECT_EQ(failures[1], "");
}

}  // namespace
}  // namespace tutti
