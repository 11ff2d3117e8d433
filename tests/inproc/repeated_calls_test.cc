// A loop that repeats one call skips the checks and choices after the first
// (CallPlanner::recall and planned): these tests make the repeats and then change one thing at a time
// (the data, the buffers, the operator, the count, the collective, the root, the peer), so
// that every repeat must still compute from this call's inputs, and a call that only looks
// like the last must take the full path. Small calls over shared memory repeat through the
// flat exchange (all-reduce, all-gather), the others through the executor (broadcast,
// reduce, send and receive). Then what the full path guarantees: a mismatch between ranks
// after many repeats is found and names both calls, and a repeat issued after a peer
// aborted fails naming it. Ranks are threads; every result is compared element by element
// with the sum, max or copy computed here. TCP runs the same calls through the executor.

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "base/strings.h"
#include "common/threads.h"

namespace tutti::test {
namespace {

class RepeatedCalls : public ::testing::TestWithParam<std::string> {
 protected:
  CommOptions options() const {
    CommOptions o;
    o.transport = GetParam();
    o.timeout = std::chrono::seconds(120);
    return o;
  }
};

// What rank r contributes to element i of call k.
std::int32_t value(int r, int k, std::size_t i) {
  return static_cast<std::int32_t>(r * 1000 + k * 7 + static_cast<int>(i) * 3 - 50);
}

std::string compare(const std::vector<std::int32_t>& got, const std::vector<std::int32_t>& want,
                    std::size_t count, const std::string& what) {
  for (std::size_t i = 0; i < count; ++i)
    if (got[i] != want[i])
      return strFormat("%s: element %zu is %d, expected %d\n", what.c_str(), i, got[i], want[i]);
  return "";
}

TEST_P(RepeatedCalls, EveryRepeatComputesFromItsOwnCall) {
  constexpr int kRanks = 3;
  constexpr int kRepeats = 40;
  auto failures = runRanks(kRanks, [&](int rank, Communicator& comm) -> std::string {
    const auto i32 = DataType::kInt32;
    std::vector<std::int32_t> in(16), out(64), other(16), want(64);
    std::string wrong;
    int k = 0;  // the call's number, for the data
    auto fill = [&](std::vector<std::int32_t>& buf, int r, std::size_t count) {
      for (std::size_t i = 0; i < count; ++i) buf[i] = value(r, k, i);
    };
    auto reduced = [&](std::size_t count, bool max) {
      for (std::size_t i = 0; i < count; ++i) {
        want[i] = max ? value(0, k, i) : 0;
        for (int r = 0; r < kRanks; ++r)
          want[i] = max ? std::max(want[i], value(r, k, i)) : want[i] + value(r, k, i);
      }
    };
    // The same buffers, new data each time, then the same call in place, then from another
    // input buffer: each must read this call's input and write this call's output.
    for (int j = 0; j < kRepeats && wrong.empty(); ++j, ++k) {
      fill(in, rank, 4);
      std::fill(out.begin(), out.end(), -1);
      Status s = comm.allreduce(in.data(), out.data(), 4, i32, ReduceOp::kSum);
      if (!s.ok()) return "allreduce: " + s.toString();
      reduced(4, false);
      wrong = compare(out, want, 4, strFormat("allreduce %d", j));
    }
    for (int j = 0; j < kRepeats && wrong.empty(); ++j, ++k) {
      fill(out, rank, 4);
      Status s = comm.allreduce(out.data(), out.data(), 4, i32, ReduceOp::kSum);
      if (!s.ok()) return "allreduce in place: " + s.toString();
      reduced(4, false);
      wrong = compare(out, want, 4, strFormat("allreduce in place %d", j));
    }
    for (int j = 0; j < kRepeats && wrong.empty(); ++j, ++k) {
      fill(j % 2 == 0 ? in : other, rank, 4);
      Status s = comm.allreduce(j % 2 == 0 ? in.data() : other.data(), out.data(), 4, i32,
                                ReduceOp::kSum);
      if (!s.ok()) return "allreduce from two inputs: " + s.toString();
      reduced(4, false);
      wrong = compare(out, want, 4, strFormat("allreduce from input %d, call %d", j % 2, j));
    }
    // Another operator, then another count, on the same buffers.
    for (int j = 0; j < kRepeats && wrong.empty(); ++j, ++k) {
      fill(in, rank, 4);
      Status s = comm.allreduce(in.data(), out.data(), 4, i32, ReduceOp::kMax);
      if (!s.ok()) return "allreduce max: " + s.toString();
      reduced(4, true);
      wrong = compare(out, want, 4, strFormat("allreduce max %d", j));
    }
    for (int j = 0; j < kRepeats && wrong.empty(); ++j, ++k) {
      const std::size_t count = 3 + static_cast<std::size_t>(j / 10) * 4;  // 3, 7, 11, 15
      fill(in, rank, count);
      std::fill(out.begin(), out.end(), -1);
      Status s = comm.allreduce(in.data(), out.data(), count, i32, ReduceOp::kSum);
      if (!s.ok()) return "allreduce of " + std::to_string(count) + ": " + s.toString();
      reduced(count, false);
      wrong = compare(out, want, count, strFormat("allreduce of %zu, call %d", count, j));
      if (wrong.empty() && out[count] != -1)
        wrong = strFormat("allreduce of %zu wrote element %zu\n", count, count);
    }
    // Another collective on the same buffers and count as the last all-reduces (15).
    for (int j = 0; j < kRepeats && wrong.empty(); ++j, ++k) {
      fill(in, rank, 15);
      Status s = comm.allgather(in.data(), out.data(), 15, i32);
      if (!s.ok()) return "allgather: " + s.toString();
      for (int r = 0; r < kRanks; ++r)
        for (std::size_t i = 0; i < 15; ++i) want[static_cast<std::size_t>(r) * 15 + i] = value(r, k, i);
      wrong = compare(out, want, 15 * kRanks, strFormat("allgather %d", j));
    }
    // Broadcast from one root, then from another.
    for (int j = 0; j < kRepeats && wrong.empty(); ++j, ++k) {
      const int root = j < kRepeats / 2 ? 1 : 2;
      if (rank == root) fill(in, rank, 4);
      else std::fill(in.begin(), in.end(), -1);
      Status s = comm.broadcast(in.data(), in.data(), 4, i32, root);
      if (!s.ok()) return "broadcast: " + s.toString();
      for (std::size_t i = 0; i < 4; ++i) want[i] = value(root, k, i);
      wrong = compare(in, want, 4, strFormat("broadcast from %d, call %d", root, j));
    }
    // Reduce to one root, then to another.
    for (int j = 0; j < kRepeats && wrong.empty(); ++j, ++k) {
      const int root = j < kRepeats / 2 ? 0 : 2;
      fill(in, rank, 4);
      std::fill(out.begin(), out.end(), -1);
      Status s = comm.reduce(in.data(), out.data(), 4, i32, ReduceOp::kSum, root);
      if (!s.ok()) return "reduce: " + s.toString();
      reduced(4, false);
      if (rank == root) wrong = compare(out, want, 4, strFormat("reduce to %d, call %d", root, j));
    }
    // Point to point, the same call repeated and then to or from another peer: 0 sends to
    // 1, then 0 to 2 (another peer for rank 0's send), then 2 to 1 (another for rank 1's
    // receive). Blocking calls: an async one would start the worker, which ends repeats. A
    // repeat that kept the old peer would leave a receive waiting: bounded.
    CallOptions bounded;
    bounded.timeout = std::chrono::seconds(20);
    for (int phase = 0; phase < 3 && wrong.empty(); ++phase) {
      const int from = phase == 2 ? 2 : 0, to = phase == 1 ? 2 : 1;
      for (int j = 0; j < kRepeats && wrong.empty(); ++j) {
        const int call = k + j;  // the same numbering on every rank
        auto sendTo = [&](int peer) {
          for (std::size_t i = 0; i < 4; ++i) in[i] = value(rank, call, i);
          return comm.send(in.data(), 4, i32, peer, /*tag=*/7, bounded);
        };
        auto recvFrom = [&](int peer) {
          std::fill(out.begin(), out.end(), -1);
          Status s = comm.recv(out.data(), 4, i32, peer, /*tag=*/7, bounded);
          for (std::size_t i = 0; i < 4; ++i) want[i] = value(peer, call, i);
          if (s.ok()) wrong = compare(out, want, 4, strFormat("receive from %d, call %d", peer, j));
          return s;
        };
        Status s;
        if (rank == from) s = sendTo(to);
        if (rank == to) s = recvFrom(from);
        if (!s.ok()) return strFormat("point to point, phase %d, call %d: ", phase, j) + s.toString();
      }
      k += kRepeats;
    }
    return wrong;
  }, options());
  EXPECT_EQ(joinFailures(failures), "");
}

// After many identical calls on every rank, rank 1's next call differs in one thing (the
// operator, the root, the collective) and keeps the buffers and count, so that it looks
// like the repeats: every rank fails with kMismatch naming the call by its number (so the
// repeats counted their calls) and both versions of it (for the root: the broadcast and
// whichever call of the other rank's met it).
TEST_P(RepeatedCalls, AMismatchAfterManyRepeatsNamesBothCalls) {
  constexpr int kRepeats = 30;
  const auto f32 = DataType::kFloat32;
  for (const std::string how : {"op", "root", "collective"}) {
    auto failures = runRanks(2, [&](int rank, Communicator& comm) -> std::string {
      float x[2] = {1, 2}, y[4] = {0, 0, 0, 0};
      auto call = [&](bool odd) {
        if (how == "root") return comm.broadcast(x, x, 2, f32, odd ? 1 : 0);
        if (how == "collective" && odd) return comm.allgather(x, y, 2, f32);
        return comm.allreduce(x, y, 2, f32, odd && how == "op" ? ReduceOp::kMax : ReduceOp::kSum);
      };
      for (int j = 0; j < kRepeats; ++j) {
        Status s = call(false);
        if (!s.ok()) return how + ", repeat " + std::to_string(j) + ": " + s.toString();
        if (how != "root" && (y[0] != 2 || y[1] != 4)) return how + ": a repeat computed a wrong sum";
      }
      Status s = call(rank == 1);
      // Two ranks that each call themselves the root only send: the next call that waits
      // for a message finds the other's (CallChecker). A flat call that does not wait
      // looks at no message, so this one is large enough to go by messages.
      std::vector<float> big(16384, 1.0f);
      if (s.ok()) s = comm.allreduce(big.data(), big.data(), big.size(), f32, ReduceOp::kSum);
      const std::string number = "#" + std::to_string(kRepeats);
      const char* mine = how == "op" ? "max" : how == "root" ? "root 1" : "allgather";
      const char* theirs = how == "op" ? "sum" : how == "root" ? "root 0" : "allreduce";
      if (s.code() != ErrorCode::kMismatch || s.message().find(number) == std::string::npos ||
          s.message().find(mine) == std::string::npos ||
          s.message().find(theirs) == std::string::npos)
        return how + ": the mismatched call gave " + s.toString();
      return "";
    }, options());
    EXPECT_EQ(joinFailures(failures), "");
  }
}

// After many identical calls on both ranks, rank 1 aborts; rank 0 then repeats the call
// once more, and it fails naming rank 1's abort (refused, or ended while it waited: the
// abort may land on either side of the call's start), as would any call. Rank 1 aborts
// only once rank 0 is through its repeats (an abort fails a call still under way).
TEST_P(RepeatedCalls, ARepeatAfterAPeerAbortedFailsNamingIt) {
  constexpr int kRepeats = 30;
  std::atomic<bool> repeated{false}, aborted{false};
  auto waitFor = [](const std::atomic<bool>& flag) {
    for (int spins = 0; !flag.load(); ++spins) {
      if (spins > 120000) return false;  // bounded: 2 minutes
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  };
  auto failures = runRanks(2, [&](int rank, Communicator& comm) -> std::string {
    std::int64_t x = rank + 1, y = 0;
    for (int j = 0; j < kRepeats; ++j) {
      Status s = comm.allreduce(&x, &y, 1, DataType::kInt64, ReduceOp::kSum);
      if (!s.ok()) return "repeat " + std::to_string(j) + ": " + s.toString();
      if (y != 3) return "repeat " + std::to_string(j) + " computed " + std::to_string(y);
    }
    if (rank == 1) {
      if (!waitFor(repeated)) return "rank 0 never finished its repeats";
      comm.abort();
      aborted.store(true);
      return "";
    }
    repeated.store(true);
    if (!waitFor(aborted)) return "rank 1 never aborted";
    Status s = comm.allreduce(&x, &y, 1, DataType::kInt64, ReduceOp::kSum);
    if (s.code() != ErrorCode::kAborted || s.peerRank() != 1 ||
        s.message().find("aborted by rank 1") == std::string::npos)
      return "the repeat after the abort gave " + s.toString();
    Status again = comm.allreduce(&x, &y, 1, DataType::kInt64, ReduceOp::kSum);
    if (again.code() != ErrorCode::kAborted || again.message().find("refused") == std::string::npos)
      return "the call after that gave " + again.toString();
    return "";
  }, options());
  EXPECT_EQ(joinFailures(failures), "");
}

// Once an async call has started the communicator's worker, a blocking call issued while
// the worker is idle still repeats the call before it without the checks; the async calls
// run between two repeats (more shapes than the plan cache holds, so it is cleared) and the
// blocking calls run while async ones are queued must leave nothing a repeat would reuse
// wrongly. Every result is checked.
TEST_P(RepeatedCalls, RepeatsAfterAsyncCallsThatEvictEveryPlanComputeRight) {
  constexpr int kRanks = 3;
  constexpr int kShapes = 80;  // above the plan cache's 64
  auto failures = runRanks(kRanks, [&](int rank, Communicator& comm) -> std::string {
    const auto i32 = DataType::kInt32;
    std::vector<std::int32_t> in(kShapes + 8), out(kShapes + 8), want(kShapes + 8);
    int k = 0;
    auto check = [&](std::size_t count, const std::string& what) {
      for (std::size_t i = 0; i < count; ++i) {
        std::int32_t sum = 0;
        for (int r = 0; r < kRanks; ++r) sum += value(r, k, i);
        if (out[i] != sum)
          return strFormat("%s: element %zu is %d, expected %d", what.c_str(), i, out[i], sum);
      }
      return std::string();
    };
    auto blocking = [&](std::size_t count, const std::string& what) {
      for (std::size_t i = 0; i < count; ++i) in[i] = value(rank, k, i);
      Status s = comm.allreduce(in.data(), out.data(), count, i32, ReduceOp::kSum);
      if (!s.ok()) return what + ": " + s.toString();
      std::string wrong = check(count, what);
      ++k;
      return wrong;
    };
    for (int round = 0; round < 3; ++round) {
      for (int j = 0; j < 5; ++j) {
        std::string wrong = blocking(4, strFormat("round %d repeat %d", round, j));
        if (!wrong.empty()) return wrong;
      }
      // Async calls of every shape, each waited for: the worker runs them.
      for (int shape = 1; shape <= kShapes; ++shape) {
        const auto count = static_cast<std::size_t>(shape);
        for (std::size_t i = 0; i < count; ++i) in[i] = value(rank, k, i);
        Status s = comm.allreduceAsync(in.data(), out.data(), count, i32, ReduceOp::kSum).wait();
        if (!s.ok()) return "async: " + s.toString();
        std::string wrong = check(count, strFormat("round %d async of %zu", round, count));
        if (!wrong.empty()) return wrong;
        ++k;
      }
      // A blocking call behind a queued async one (the worker path), then repeats again.
      std::vector<std::int32_t> asyncIn(8), asyncOut(8);
      for (std::size_t i = 0; i < 8; ++i) asyncIn[i] = value(rank, k, i);
      Work pending = comm.allreduceAsync(asyncIn.data(), asyncOut.data(), 8, i32, ReduceOp::kSum);
      const int pendingK = k++;
      std::string wrong = blocking(4, strFormat("round %d behind async", round));
      Status s = pending.wait();
      if (!s.ok()) return "queued async: " + s.toString();
      for (std::size_t i = 0; i < 8 && wrong.empty(); ++i) {
        std::int32_t sum = 0;
        for (int r = 0; r < kRanks; ++r) sum += value(r, pendingK, i);
        if (asyncOut[i] != sum) wrong = strFormat("queued async element %zu wrong", i);
      }
      if (!wrong.empty()) return wrong;
    }
    return "";
  }, options());
  EXPECT_EQ(joinFailures(failures), "");
}

INSTANTIATE_TEST_SUITE_P(Transports, RepeatedCalls, ::testing::Values("shm", "tcp"),
                         [](const auto& param) { return param.param; });

}  // namespace
}  // namespace tutti::test
