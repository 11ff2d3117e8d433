// Bad input through the C++ API, ranks as threads over shared memory and TCP. Every case
// asserts the exact code and a fragment of the message (which names the argument and its
// value), and that nothing crashes (run under the asan preset too) and nobody hangs:
//   - shared errors: every rank makes the same bad call, each refuses it alone, and the
//     communicator still works afterwards (a barrier and an all-reduce are checked);
//   - errors only the erring rank can see: rank 1 makes the bad call while the others make
//     the call it should have made, with a two-minute deadline. The others must fail with
//     kAborted naming rank 1 (not kTimeout: they learn from rank 1, not from their
//     deadline), in that call when it needs rank 1, else in the next;
//   - calls that look odd but are valid (null buffers with count 0 or where a buffer is not
//     read, every in-place form) succeed;
//   - a moved-from communicator, Work outliving its communicator, and split with a bad color.

#include <gtest/gtest.h>

#include <cctype>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "base/strings.h"
#include "common/threads.h"
#include "tutti/communicator.h"

namespace tutti::test {
namespace {

constexpr int kRanks = 3;
constexpr int kErring = 1;  // the rank that passes the bad argument in the only-here cases
constexpr DataType kF32 = DataType::kFloat32;
constexpr ReduceOp kSum = ReduceOp::kSum;

// Room for every call below (the largest needs 3 ranks x 4 elements per buffer), per rank.
struct Bufs {
  std::vector<float> a = std::vector<float>(64, 1.0f);
  std::vector<float> b = std::vector<float>(64, 0.0f);
  float* in() { return a.data(); }
  float* out() { return b.data(); }
};

// Long enough that a peer waiting for the erring rank could only end by being told.
CallOptions patient() {
  CallOptions options;
  options.timeout = std::chrono::seconds(120);
  return options;
}

using Sizes = std::vector<std::size_t>;
using Call = std::function<Status(Communicator&, Bufs&)>;

// "" when `s` has `code` and its message contains `fragment`, else what it was.
std::string expectStatus(const Status& s, ErrorCode code, const std::string& fragment,
                         const std::string& what) {
  if (s.code() == code && s.message().find(fragment) != std::string::npos) return "";
  return strFormat("%s: got %s, expected %s with '%s'\n", what.c_str(), s.toString().c_str(),
                   errorCodeName(code), fragment.c_str());
}

// ---- errors every rank sees alike ------------------------------------------------------

struct SharedCase {
  const char* name;
  Call call;  // every rank makes it (as a function of its rank where a call names a peer)
  std::string fragment;
};

std::vector<SharedCase> sharedCases() {
  const Sizes two = {2, 2, 2};
  const Sizes at = {0, 2, 4};
  const auto bigCount = ~std::size_t{0} / 2;
  return {
      {"dtype outside the enum",
       [](Communicator& c, Bufs& b) {
         return c.allreduce(b.in(), b.out(), 4, static_cast<DataType>(42), kSum);
       },
       "allreduce: dtype 42 is not a DataType (0 to 9)"},
      {"op outside the enum",
       [](Communicator& c, Bufs& b) {
         return c.allreduce(b.in(), b.out(), 4, kF32, static_cast<ReduceOp>(9));
       },
       "allreduce: op 9 is not a ReduceOp (0 to 4)"},
      {"reduce op outside the enum",
       [](Communicator& c, Bufs& b) {
         return c.reduce(b.in(), b.out(), 4, kF32, static_cast<ReduceOp>(200), 0);
       },
       "reduce: op 200 is not a ReduceOp"},
      {"count that overflows",
       [=](Communicator& c, Bufs& b) { return c.allreduce(b.in(), b.out(), bigCount, kF32, kSum); },
       strFormat("allreduce: count %zu is too large", bigCount)},
      {"count over the per-buffer limit",
       [](Communicator& c, Bufs& b) {
         return c.allreduce(b.in(), b.out(), (std::size_t{1} << 38) + 1, kF32, kSum);
       },
       "would hold 274877906945 float32 elements (1099511627780 bytes), above the "
       "1099511627776 bytes one buffer may hold (kMaxBufferBytes)"},
      {"allgather output over the limit (each input is within it)",
       [](Communicator& c, Bufs& b) {
         return c.allgather(b.in(), b.out(), std::size_t{1} << 37, kF32);
       },
       "allgather: a buffer of this call would hold 412316860416 float32 elements"},
      {"broadcast root = size",
       [](Communicator& c, Bufs& b) { return c.broadcast(b.in(), b.out(), 4, kF32, 3); },
       "broadcast: root 3 is not a rank of this 3-rank communicator"},
      {"reduce root -1",
       [](Communicator& c, Bufs& b) { return c.reduce(b.in(), b.out(), 4, kF32, kSum, -1); },
       "reduce: root -1 is not a rank"},
      {"gather root 7",
       [](Communicator& c, Bufs& b) { return c.gather(b.in(), b.out(), 4, kF32, 7); },
       "gather: root 7 is not a rank"},
      {"scatter root -2",
       [](Communicator& c, Bufs& b) { return c.scatter(b.in(), b.out(), 4, kF32, -2); },
       "scatter: root -2 is not a rank"},
      {"gatherv root 3",
       [=](Communicator& c, Bufs& b) { return c.gatherv(b.in(), 2, b.out(), two, at, kF32, 3); },
       "gatherv: root 3 is not a rank"},
      {"scatterv root -1",
       [=](Communicator& c, Bufs& b) { return c.scatterv(b.in(), two, at, b.out(), 2, kF32, -1); },
       "scatterv: root -1 is not a rank"},
      {"allgatherv counts array too short",
       [=](Communicator& c, Bufs& b) {
         return c.allgatherv(b.in(), 2, b.out(), Sizes{2, 2}, at, kF32);
       },
       "allgatherv: recvcounts has 2 entries for 3 ranks"},
      {"allgatherv with an empty recvcounts (NULL from C)",
       [=](Communicator& c, Bufs& b) { return c.allgatherv(b.in(), 2, b.out(), Sizes{}, at, kF32); },
       "allgatherv: recvcounts is empty or NULL; it needs one entry per rank (3)"},
      {"gatherv displacements too short",
       [=](Communicator& c, Bufs& b) {
         return c.gatherv(b.in(), 2, b.out(), two, Sizes{0, 2}, kF32, 0);
       },
       "gatherv: displs has 2 entries for 3 ranks"},
      {"reducescatterv counts array too long",
       [](Communicator& c, Bufs& b) {
         return c.reduceScatterv(b.in(), b.out(), Sizes{1, 1, 1, 1}, kF32, kSum);
       },
       "reducescatterv: recvcounts has 4 entries for 3 ranks"},
      {"allgatherv receive blocks that overlap",
       [=](Communicator& c, Bufs& b) {
         return c.allgatherv(b.in(), 2, b.out(), two, Sizes{0, 1, 4}, kF32);
       },
       "allgatherv: the receive buffer's blocks 0 (at 0, 2 elements) and 1 (at 1, 2 elements) "
       "overlap"},
      {"gatherv receive blocks that overlap, out of order",
       [=](Communicator& c, Bufs& b) {
         return c.gatherv(b.in(), 2, b.out(), two, Sizes{4, 0, 3}, kF32, 0);
       },
       "blocks 2 (at 3, 2 elements) and 0 (at 4, 2 elements) overlap"},
      {"gatherv count too large",
       [=](Communicator& c, Bufs& b) {
         return c.gatherv(b.in(), 2, b.out(), Sizes{2, std::size_t{1} << 60, 2}, at, kF32, 0);
       },
       "gatherv: recvcounts[1] = 1152921504606846976 is too large"},
      {"negative tag on both sides",
       [](Communicator& c, Bufs& b) {
         return c.rank() == 1 ? c.recv(b.out(), 1, kF32, 0, -3)
                              : c.send(b.in(), 1, kF32, (c.rank() + 1) % kRanks, -3);
       },
       "tag -3 is negative"},
      {"send dtype outside the enum",
       [](Communicator& c, Bufs& b) {
         return c.send(b.in(), 1, static_cast<DataType>(50), (c.rank() + 1) % kRanks);
       },
       "send: dtype 50 is not a DataType"},
      {"recv count that overflows",
       [](Communicator& c, Bufs& b) {
         return c.recv(b.out(), ~std::size_t{0}, kF32, (c.rank() + 2) % kRanks);
       },
       "recv: count 18446744073709551615 is too large"},
      {"async allreduce with a bad dtype",
       [](Communicator& c, Bufs& b) {
         return c.allreduceAsync(b.in(), b.out(), 4, static_cast<DataType>(10), kSum).wait();
       },
       "allreduce: dtype 10 is not a DataType"},
      {"async alltoall count that overflows",
       [=](Communicator& c, Bufs& b) { return c.alltoallAsync(b.in(), b.out(), bigCount, kF32).wait(); },
       "alltoall: count"},
  };
}

class SharedErrors : public ::testing::TestWithParam<std::string> {};

TEST_P(SharedErrors, EveryRankRefusesAloneAndTheCommunicatorStillWorks) {
  CommOptions options;
  options.transport = GetParam();
  const std::vector<SharedCase> cases = sharedCases();
  auto failures = runRanks(kRanks, [&](int rank, Communicator& comm) -> std::string {
    std::string out;
    Bufs bufs;
    for (const SharedCase& c : cases) {
      out += expectStatus(c.call(comm, bufs), ErrorCode::kInvalidArgument, c.fragment, c.name);
      // No rank waits on another over a refused call, so the ranks are still in step.
      Status barrier = comm.barrier();
      if (!barrier.ok()) out += strFormat("barrier after '%s': %s\n", c.name, barrier.toString().c_str());
    }
    if (!comm.lastError().ok()) out += "lastError: " + comm.lastError().toString() + "\n";
    float mine = static_cast<float>(rank + 1);
    float sum = 0;
    Status s = comm.allreduce(&mine, &sum, 1, kF32, kSum);
    if (!s.ok() || sum != 6.0f) out += "allreduce afterwards: " + s.toString() + "\n";
    return out;
  }, options);
  EXPECT_EQ(joinFailures(failures), "");
}

INSTANTIATE_TEST_SUITE_P(Transports, SharedErrors, ::testing::Values("shm", "tcp"),
                         [](const auto& param) { return param.param; });

// ---- errors only the erring rank sees ------------------------------------------------------

struct LocalCase {
  const char* name;
  Call bad;             // rank kErring's call
  Call good;            // what the others call (the call rank kErring should have made)
  const char* fragment;
  bool peersWait;       // the good call needs rank kErring, so it must fail itself
};

// What the other ranks call around a point-to-point case: they all wait on rank kErring.
Status recvFromErring(Communicator& c, Bufs& b) {
  return c.recv(b.out(), 4, kF32, kErring, 0, patient());
}

std::vector<LocalCase> localCases() {
  const Sizes two = {2, 2, 2};
  const Sizes at = {0, 2, 4};
  const Sizes ones = {1, 1, 1};
  const Sizes seq = {0, 1, 2};
  const Call allreduce = [](Communicator& c, Bufs& b) {
    return c.allreduce(b.in(), b.out(), 4, kF32, kSum, patient());
  };
  const Call alltoallv = [=](Communicator& c, Bufs& b) {
    return c.alltoallv(b.in(), ones, seq, b.out(), ones, seq, kF32, patient());
  };
  return {
      {"null sendbuf", [](Communicator& c, Bufs& b) { return c.allreduce(nullptr, b.out(), 4, kF32, kSum); },
       allreduce, "allreduce: the send buffer (sendbuf) is null, but this rank sends 4 elements", true},
      {"null recvbuf", [](Communicator& c, Bufs& b) { return c.allreduce(b.in(), nullptr, 4, kF32, kSum); },
       allreduce, "allreduce: the receive buffer (recvbuf) is null, but this rank receives 4", true},
      {"allreduce buffers that partly overlap",
       [](Communicator& c, Bufs& b) { return c.allreduce(b.in(), b.in() + 2, 4, kF32, kSum); },
       allreduce, "bytes) overlap without being in place; in place needs sendbuf == recvbuf + 0 elements",
       true},
      {"allgather input at another rank's block",
       [](Communicator& c, Bufs& b) { return c.allgather(b.out(), b.out(), 4, kF32); },
       [](Communicator& c, Bufs& b) { return c.allgather(b.in(), b.out(), 4, kF32, patient()); },
       "in place needs sendbuf == recvbuf + 4 elements", true},
      {"reducescatter output at another rank's block",
       [](Communicator& c, Bufs& b) { return c.reduceScatter(b.in(), b.in(), 4, kF32, kSum); },
       [](Communicator& c, Bufs& b) {
         return c.reduceScatter(b.in(), b.out(), 4, kF32, kSum, patient());
       },
       "in place needs recvbuf == sendbuf + 4 elements", true},
      {"alltoall buffers one element apart",
       [](Communicator& c, Bufs& b) { return c.alltoall(b.in(), b.in() + 1, 4, kF32); },
       [](Communicator& c, Bufs& b) { return c.alltoall(b.in(), b.out(), 4, kF32, patient()); },
       "overlap without being in place", true},
      {"broadcast root with a null sendbuf",
       [](Communicator& c, Bufs& b) { return c.broadcast(nullptr, b.out(), 4, kF32, kErring); },
       [](Communicator& c, Bufs& b) {
         return c.broadcast(nullptr, b.out(), 4, kF32, kErring, patient());
       },
       "broadcast: the send buffer (sendbuf) is null", true},
      {"gather root with a null recvbuf",
       [](Communicator& c, Bufs& b) { return c.gather(b.in(), nullptr, 4, kF32, kErring); },
       [](Communicator& c, Bufs& b) { return c.gather(b.in(), nullptr, 4, kF32, kErring, patient()); },
       "gather: the receive buffer (recvbuf) is null, but this rank receives 12", false},
      {"scatter root with a null sendbuf",
       [](Communicator& c, Bufs& b) { return c.scatter(nullptr, b.out(), 4, kF32, kErring); },
       [](Communicator& c, Bufs& b) { return c.scatter(nullptr, b.out(), 4, kF32, kErring, patient()); },
       "scatter: the send buffer (sendbuf) is null, but this rank sends 12", true},
      {"allgatherv own count differs from the array",
       [=](Communicator& c, Bufs& b) { return c.allgatherv(b.in(), 3, b.out(), two, at, kF32); },
       [=](Communicator& c, Bufs& b) {
         return c.allgatherv(b.in(), 2, b.out(), two, at, kF32, patient());
       },
       "allgatherv: sendcount 3 differs from this rank's entry recvcounts[1] = 2", true},
      {"gatherv own count differs from the array",
       [=](Communicator& c, Bufs& b) { return c.gatherv(b.in(), 5, b.out(), two, at, kF32, kErring); },
       [=](Communicator& c, Bufs& b) {
         return c.gatherv(b.in(), 2, b.out(), two, at, kF32, kErring, patient());
       },
       "gatherv: sendcount 5 differs from this rank's entry recvcounts[1] = 2", false},
      {"scatterv own count differs from the array",
       [=](Communicator& c, Bufs& b) { return c.scatterv(b.in(), two, at, b.out(), 1, kF32, kErring); },
       [=](Communicator& c, Bufs& b) {
         return c.scatterv(b.in(), two, at, b.out(), 2, kF32, kErring, patient());
       },
       "scatterv: recvcount 1 differs from this rank's entry sendcounts[1] = 2", true},
      {"alltoallv send counts too short",
       [=](Communicator& c, Bufs& b) {
         return c.alltoallv(b.in(), Sizes{1, 1}, Sizes{0, 1}, b.out(), ones, seq, kF32);
       },
       alltoallv, "alltoallv: sendcounts has 2 entries for 3 ranks", true},
      {"alltoallv receive blocks that overlap",
       [=](Communicator& c, Bufs& b) {
         return c.alltoallv(b.in(), ones, seq, b.out(), ones, Sizes{0, 0, 2}, kF32);
       },
       alltoallv, "the receive buffer's blocks 0 (at 0, 1 elements) and 1 (at 0, 1 elements) overlap",
       true},
      {"alltoallv in place with different arrays",
       [=](Communicator& c, Bufs& b) {
         return c.alltoallv(b.in(), ones, seq, b.in(), ones, Sizes{3, 4, 5}, kF32);
       },
       alltoallv, "alltoallv in place needs the same counts and displacements", true},
      {"buffer that wraps around the address space",
       [](Communicator& c, Bufs& b) {
         const void* end = reinterpret_cast<const void*>(UINTPTR_MAX - 7);
         return c.allreduce(end, b.out(), 4, kF32, kSum);
       },
       allreduce, "cannot hold 16 bytes (it would wrap around the address space)", true},
      {"send to a peer outside the communicator",
       [](Communicator& c, Bufs& b) { return c.send(b.in(), 4, kF32, 3); }, recvFromErring,
       "send: peer 3 is not a rank of this 3-rank communicator", true},
      {"recv from peer -1", [](Communicator& c, Bufs& b) { return c.recv(b.out(), 4, kF32, -1); },
       recvFromErring, "recv: peer -1 is not a rank", true},
      {"send from a null buffer", [](Communicator& c, Bufs&) { return c.send(nullptr, 4, kF32, 0); },
       recvFromErring, "send: the send buffer (sendbuf) is null", true},
      {"async allreduce with a null sendbuf",
       [](Communicator& c, Bufs& b) { return c.allreduceAsync(nullptr, b.out(), 4, kF32, kSum).wait(); },
       [](Communicator& c, Bufs& b) {
         return c.allreduceAsync(b.in(), b.out(), 4, kF32, kSum, patient()).wait();
       },
       "allreduce: the send buffer (sendbuf) is null", true},
  };
}

// The checks of one only-here case on one rank, after the call.
std::string checkLocalCase(const LocalCase& c, int rank, Communicator& comm, const Status& got) {
  std::string out;
  const std::string blame = strFormat("rank %d passed an invalid argument", kErring);
  if (rank == kErring) {
    out += expectStatus(got, ErrorCode::kInvalidArgument, c.fragment, "the erring rank");
  } else if (c.peersWait || !got.ok()) {
    out += expectStatus(got, ErrorCode::kAborted, blame, "a peer's call");
    if (got.peerRank() != kErring) out += strFormat("a peer's call blames rank %d\n", got.peerRank());
  }
  // Every rank, the erring one included, is refused from now on, naming the failure.
  Status later = comm.barrier(patient());
  out += expectStatus(later, ErrorCode::kAborted, blame, "the next call");
  if (later.peerRank() != kErring) out += strFormat("the next call blames rank %d\n", later.peerRank());
  out += expectStatus(comm.lastError(), ErrorCode::kAborted, blame, "lastError()");
  return out;
}

class OnlyHereErrors : public ::testing::TestWithParam<std::tuple<std::string, int>> {};

TEST_P(OnlyHereErrors, TheErringRankFailsAndThePeersLearnAtOnce) {
  const auto [transport, index] = GetParam();
  const LocalCase c = localCases()[static_cast<std::size_t>(index)];
  CommOptions options;
  options.transport = transport;
  auto failures = runRanks(kRanks, [&](int rank, Communicator& comm) -> std::string {
    Bufs bufs;
    const Status got = rank == kErring ? c.bad(comm, bufs) : c.good(comm, bufs);
    return checkLocalCase(c, rank, comm, got);
  }, options);
  EXPECT_EQ(joinFailures(failures), "") << c.name << " over " << transport;
}

std::string localCaseName(const ::testing::TestParamInfo<std::tuple<std::string, int>>& info) {
  std::string name = localCases()[static_cast<std::size_t>(std::get<1>(info.param))].name;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return std::get<0>(info.param) + "_" + name;
}

INSTANTIATE_TEST_SUITE_P(Cases, OnlyHereErrors,
                         ::testing::Combine(::testing::Values("shm", "tcp"),
                                            ::testing::Range(0, static_cast<int>(localCases().size()))),
                         localCaseName);

}  // namespace
}  // namespace tutti::test

namespace tutti::test {
namespace {

// ---- valid calls that look odd ------------------------------------------------------------

struct ValidCase {
  const char* name;
  Call call;  // every rank makes it
};

std::vector<ValidCase> validCases() {
  const Sizes zero = {0, 0, 0};
  const Sizes two = {2, 2, 2};
  const Sizes at = {0, 2, 4};
  return {
      {"null buffers with count 0",
       [](Communicator& c, Bufs&) { return c.allreduce(nullptr, nullptr, 0, kF32, kSum); }},
      {"allgather of 0 with null buffers",
       [](Communicator& c, Bufs&) { return c.allgather(nullptr, nullptr, 0, kF32); }},
      {"alltoallv of nothing with null buffers",
       [=](Communicator& c, Bufs&) { return c.alltoallv(nullptr, zero, zero, nullptr, zero, zero, kF32); }},
      {"send and recv of 0 with null buffers",
       [](Communicator& c, Bufs&) {
         if (c.rank() == 2) return Status::Ok();
         return c.rank() == 0 ? c.send(nullptr, 0, kF32, 1) : c.recv(nullptr, 0, kF32, 0);
       }},
      {"broadcast with a null sendbuf off the root",
       [](Communicator& c, Bufs& b) {
         return c.broadcast(c.rank() == 0 ? b.in() : nullptr, b.out(), 4, kF32, 0);
       }},
      {"reduce with a null recvbuf off the root",
       [](Communicator& c, Bufs& b) {
         return c.reduce(b.in(), c.rank() == 2 ? b.out() : nullptr, 4, kF32, kSum, 2);
       }},
      {"gather with a null recvbuf off the root",
       [](Communicator& c, Bufs& b) {
         return c.gather(b.in(), c.rank() == 1 ? b.out() : nullptr, 4, kF32, 1);
       }},
      {"scatter with a null sendbuf off the root",
       [](Communicator& c, Bufs& b) {
         return c.scatter(c.rank() == 0 ? b.in() : nullptr, b.out(), 4, kF32, 0);
       }},
      {"avg of integers (integer division)",
       [](Communicator& c, Bufs&) {
         std::int32_t mine = 10 * (c.rank() + 1), avg = 0;
         Status s = c.allreduce(&mine, &avg, 1, DataType::kInt32, ReduceOp::kAvg);
         if (s.ok() && avg != 20) return Status(ErrorCode::kInternal, strFormat("avg %d", avg));
         return s;
       }},
      {"allreduce in place", [](Communicator& c, Bufs& b) { return c.allreduce(b.in(), b.in(), 4, kF32, kSum); }},
      {"allgather in place (input at this rank's block)",
       [](Communicator& c, Bufs& b) { return c.allgather(b.out() + 4 * c.rank(), b.out(), 4, kF32); }},
      {"reducescatter in place (output at this rank's block)",
       [](Communicator& c, Bufs& b) {
         return c.reduceScatter(b.in(), b.in() + 4 * c.rank(), 4, kF32, kSum);
       }},
      {"gather in place at the root",
       [](Communicator& c, Bufs& b) {
         return c.gather(c.rank() == 0 ? b.out() : b.in(), b.out(), 4, kF32, 0);
       }},
      {"scatter in place at the root",
       [](Communicator& c, Bufs& b) {
         return c.scatter(b.in(), c.rank() == 2 ? b.in() + 8 : b.out(), 4, kF32, 2);
       }},
      {"allgatherv in place",
       [=](Communicator& c, Bufs& b) {
         return c.allgatherv(b.out() + 2 * c.rank(), 2, b.out(), two, at, kF32);
       }},
      {"alltoall in place", [](Communicator& c, Bufs& b) { return c.alltoall(b.in(), b.in(), 4, kF32); }},
      {"scatterv blocks that overlap (they are only read)",
       [](Communicator& c, Bufs& b) {
         return c.scatterv(b.in(), Sizes{2, 2, 2}, Sizes{0, 1, 1}, b.out(), 2, kF32, 0);
       }},
  };
}

class ValidCalls : public ::testing::TestWithParam<std::string> {};

TEST_P(ValidCalls, SucceedOnEveryRank) {
  CommOptions options;
  options.transport = GetParam();
  const std::vector<ValidCase> cases = validCases();
  auto failures = runRanks(kRanks, [&](int, Communicator& comm) -> std::string {
    std::string out;
    Bufs bufs;
    for (const ValidCase& c : cases) {
      Status s = c.call(comm, bufs);
      if (!s.ok()) out += strFormat("%s: %s\n", c.name, s.toString().c_str());
    }
    return out;
  }, options);
  EXPECT_EQ(joinFailures(failures), "");
}

INSTANTIATE_TEST_SUITE_P(Transports, ValidCalls, ::testing::Values("shm", "tcp"),
                         [](const auto& param) { return param.param; });

// ---- communicators that are gone -------------------------------------------------------------

// Every call on a moved-from communicator is kInvalidUsage naming the call; the one it moved
// to works.
TEST(Lifetime, MovedFromCommunicatorRefusesEveryCall) {
  auto failures = runRanks(2, [&](int rank, Communicator& comm) -> std::string {
    Communicator live = std::move(comm);
    std::string out;
    Bufs b;
    const Sizes ones = {1, 1};
    const Sizes seq = {0, 1};
    const std::string moved = "on a moved-from Communicator";
    auto expect = [&](const Status& s, const char* what) {
      out += expectStatus(s, ErrorCode::kInvalidUsage, std::string(what) + " " + moved, what);
    };
    expect(comm.allreduce(b.in(), b.out(), 1, kF32, kSum), "allreduce");
    expect(comm.allreduceAsync(b.in(), b.out(), 1, kF32, kSum).wait(), "allreduce");
    expect(comm.barrier(), "barrier");
    expect(comm.send(b.in(), 1, kF32, 1 - rank), "send");
    expect(comm.recvAsync(b.out(), 1, kF32, 1 - rank).wait(), "recv");
    expect(comm.allgatherv(b.in(), 1, b.out(), ones, seq, kF32), "allgatherv");
    expect(comm.scattervAsync(b.in(), ones, seq, b.out(), 1, kF32, 0).wait(), "scatterv");
    expect(comm.alltoallv(b.in(), ones, seq, b.out(), ones, seq, kF32), "alltoallv");
    expect(comm.split(0, 0).status(), "split");
    expect(comm.algorithmFor(Collective::kAllReduce, 4, kF32).status(), "algorithmFor");
    expect(comm.verifyCall(CallShape{}), "verifyCall");
    expect(comm.lastError(), "lastError()");
    comm.abort();  // nothing to abort: no effect on `live`
    if (comm.rank() != -1 || comm.size() != 0 || !comm.name().empty())
      out += strFormat("moved-from rank %d size %d name '%s'\n", comm.rank(), comm.size(),
                       comm.name().c_str());
    float mine = 1, sum = 0;
    Status s = live.allreduce(&mine, &sum, 1, kF32, kSum);
    if (!s.ok() || sum != 2.0f) out += "the moved-to communicator: " + s.toString() + "\n";
    return out;
  });
  EXPECT_EQ(joinFailures(failures), "");
}

// A Work handle outlives its communicator: the destructor lets issued operations finish, so
// waiting afterwards gives their result.
TEST(Lifetime, WorkOutlivesItsCommunicator) {
  auto failures = runRanks(3, [&](int rank, Communicator& comm) -> std::string {
    float mine = static_cast<float>(rank), sum = -1;
    Work work;
    {
      Communicator owned = std::move(comm);
      work = owned.allreduceAsync(&mine, &sum, 1, kF32, kSum);
    }  // destroyed here
    Status s = work.wait();
    if (!s.ok() || sum != 3.0f) return strFormat("%s, sum %g", s.toString().c_str(), sum);
    return work.test() ? "" : "test() after the wait says not done";
  });
  EXPECT_EQ(joinFailures(failures), "");
}

// Colors are exchanged before they are checked, so a bad color on one rank is an error on
// every rank (nobody waits for a communicator that is never made), and the parent works on.
TEST(Split, ColorBelowNoColorOnOneRankIsAnErrorEverywhere) {
  auto failures = runRanks(3, [&](int rank, Communicator& comm) -> std::string {
    auto child = comm.split(rank == 2 ? -5 : 0, rank);
    std::string out = expectStatus(child.status(), ErrorCode::kInvalidArgument,
                                   "split: rank 2 passed color -5 (a color is >= 0, or kNoColor "
                                   "= -1)",
                                   "split");
    auto again = comm.split(rank == 0 ? Communicator::kNoColor : 1, -rank);
    if (!again.ok()) return out + "a good split afterwards: " + again.status().toString();
    if (again->has_value() != (rank != 0)) out += "a good split afterwards gave the wrong groups\n";
    return out;
  });
  EXPECT_EQ(joinFailures(failures), "");
}

}  // namespace
}  // namespace tutti::test
