#include "bench/runner.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "bench/data.h"
#include "unit/bench/world.h"

namespace tutti::bench {
namespace {

// One call the fake saw.
struct Call {
  Collective kind;
  std::size_t count;
  DataType dtype;
  ReduceOp op;
  int root;
  std::string algorithm;
  double scalar;  // the value sent by a one-element float64 call
};

// A BenchComm without peers, standing for rank `rank` of a world of `size`. Data calls
// produce the correct result of the whole world: the peers' inputs are made by the table
// entry's own fillInput (as the peers would) and combined by the reference world
// (world.h). One-element int64 and float64 all-reduces (the runner's bookkeeping) behave
// as if every rank sent the same value. Knobs inject wrong results, failures and fixed
// times.
class FakeComm : public BenchComm {
 public:
  FakeComm(int rank, int size) : rank_(rank), size_(size) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status align() override {
    ++barriers;
    return Status::Ok();
  }
  Status barrier(const std::string& algorithm) override {
    return data(Collective::kBarrier, nullptr, nullptr, 0, DataType::kUint8, ReduceOp::kSum, -1,
                algorithm);
  }

  Status allreduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
                   const std::string& algorithm) override {
    // The runner's own calls (float64 and int64, which no test's data calls use here) leave
    // the algorithm to the library, as do the data calls of the library's choice.
    if (algorithm.empty() && (dtype == DataType::kFloat64 || dtype == DataType::kInt64)) {
      Call call{Collective::kAllReduce, count, dtype, op, -1, algorithm, 0.0};
      if (dtype == DataType::kFloat64) std::memcpy(&call.scalar, send, sizeof(double));
      calls.push_back(call);
      if (failAtCall == calls.size()) return failure();
      for (std::size_t i = 0; i < count; ++i) {
        const std::size_t at = i * dataTypeSize(dtype);
        bookkeeping(static_cast<const unsigned char*>(send) + at,
                    static_cast<unsigned char*>(recv) + at, dtype, op, i);
      }
      return Status::Ok();
    }
    return data(Collective::kAllReduce, send, recv, count, dtype, op, -1, algorithm);
  }
  Status broadcast(const void* send, void* recv, std::size_t count, DataType dtype, int root,
                   const std::string& algorithm) override {
    return data(Collective::kBroadcast, send, recv, count, dtype, ReduceOp::kSum, root, algorithm);
  }
  Status reduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
                int root, const std::string& algorithm) override {
    return data(Collective::kReduce, send, recv, count, dtype, op, root, algorithm);
  }
  Status allgather(const void* send, void* recv, std::size_t count, DataType dtype,
                   const std::string& algorithm) override {
    return data(Collective::kAllGather, send, recv, count, dtype, ReduceOp::kSum, -1, algorithm);
  }
  Status reduceScatter(const void* send, void* recv, std::size_t count, DataType dtype,
                       ReduceOp op, const std::string& algorithm) override {
    return data(Collective::kReduceScatter, send, recv, count, dtype, op, -1, algorithm);
  }
  Status gather(const void* send, void* recv, std::size_t count, DataType dtype, int root,
                const std::string& algorithm) override {
    return data(Collective::kGather, send, recv, count, dtype, ReduceOp::kSum, root, algorithm);
  }
  Status scatter(const void* send, void* recv, std::size_t count, DataType dtype, int root,
                 const std::string& algorithm) override {
    return data(Collective::kScatter, send, recv, count, dtype, ReduceOp::kSum, root, algorithm);
  }
  Status alltoall(const void* send, void* recv, std::size_t count, DataType dtype,
                  const std::string& algorithm) override {
    return data(Collective::kAllToAll, send, recv, count, dtype, ReduceOp::kSum, -1, algorithm);
  }
  Status sendRecv(const void* send, void* recv, std::size_t count, DataType dtype, int sendPeer,
                  int recvPeer, const std::string& algorithm) override {
    EXPECT_EQ(sendPeer, (rank_ + 1) % size_);
    EXPECT_EQ(recvPeer, (rank_ + size_ - 1) % size_);
    return data(Collective::kSend, send, recv, count, dtype, ReduceOp::kSum, -1, algorithm);
  }

  // Every algorithm is "fake"; --algo ring (ring@SEGMENT too) applies to all-reduce only.
  Result<std::string> algorithmFor(Collective kind, std::size_t, DataType,
                                   const std::string& forced) const override {
    if (forced.empty()) return std::string("fake");
    if ((forced == "ring" || forced.rfind("ring@", 0) == 0) && kind == Collective::kAllReduce)
      return std::string("ring");
    return Status(ErrorCode::kNotSupported, "no algorithm named '" + forced + "' for " +
                                                collectiveName(kind));
  }

  // Records what would be verified; fails the call named by failVerifyKind.
  Status verifyCall(const CallShape& call, const std::string&) const override {
    verified.push_back(call);
    if (failVerify && call.kind == *failVerify)
      return Status(ErrorCode::kInternal, "rank 1 out[0..1) holds nothing");
    return Status::Ok();
  }

  mutable std::vector<CallShape> verified;
  std::optional<Collective> failVerify;
  std::vector<Call> calls;
  int barriers = 0;                    // runner's alignment barriers (no algorithm)
  std::size_t failAtCall = 0;          // 1-based; 0 never fails
  unsigned char corruptFirstByte = 0;  // xor-ed into element 0 of every data result
  bool dropOutput = false;             // data calls write nothing
  double fixedSeconds = 0;             // > 0: every rank "measured" this time
  std::vector<double> fixedTimes;      // element i of a time all-reduce, where given

 private:
  static Status failure() {
    return Status(ErrorCode::kPeerFailure, "rank 1 closed its connection", 1);
  }

  // A data call of the whole simulated world, seen from this rank.
  Status data(Collective kind, const void* send, void* recv, std::size_t count, DataType dtype,
              ReduceOp op, int root, const std::string& algorithm) {
    calls.push_back(Call{kind, count, dtype, op, root, algorithm, 0.0});
    if (failAtCall == calls.size()) return failure();
    if (dropOutput || kind == Collective::kBarrier) return Status::Ok();
    const CollectiveEntry& entry = world::entryOf(kind);
    const Counts counts = world::countsForParam(kind, count, size_);
    const DataContext context{rank_, size_, dtype, op, root};
    std::vector<world::Bytes> inputs;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) {
        // This rank's real input (read before the output is written: it may be in place).
        const auto* bytes = static_cast<const unsigned char*>(send);
        inputs.emplace_back(bytes, bytes + counts.send * dataTypeSize(dtype));
      } else {
        inputs.push_back(world::inputOf(entry, counts, context, r));
      }
    }
    const std::size_t defined = world::referenceOutput(kind, counts, context, inputs, recv);
    if (defined > 0) static_cast<unsigned char*>(recv)[0] ^= corruptFirstByte;
    return Status::Ok();
  }

  // Element `index` of a bookkeeping all-reduce.
  void bookkeeping(const void* send, void* recv, DataType dtype, ReduceOp op, std::size_t index) {
    if (dtype == DataType::kInt64) {
      std::int64_t v;
      std::memcpy(&v, send, sizeof v);
      v *= size_;
      std::memcpy(recv, &v, sizeof v);
      return;
    }
    double v;
    std::memcpy(&v, send, sizeof v);
    if (fixedSeconds > 0) v = fixedSeconds;
    if (index < fixedTimes.size()) v = fixedTimes[index];
    if (op == ReduceOp::kSum) v *= size_;
    std::memcpy(recv, &v, sizeof v);
  }

  int rank_;
  int size_;
};

BenchOptions smallOptions() {
  BenchOptions o;
  o.collectives = {&collectiveTable()[0]};
  o.minBytes = 0;
  o.maxBytes = 64;
  o.stepFactor = 2;
  o.iters = 3;
  o.warmupIters = 2;
  o.check = 1;
  return o;
}

// Runs with rank 0's output captured.
struct Captured {
  Result<RunSummary> summary;
  std::string output;
};

Captured runCaptured(FakeComm& comm, const BenchOptions& options) {
  std::FILE* file = std::tmpfile();
  EXPECT_NE(file, nullptr);
  Result<RunSummary> summary = runBenchmark(comm, options, file);
  std::string output;
  std::rewind(file);
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, file)) > 0;) output.append(buffer, n);
  std::fclose(file);
  return Captured{std::move(summary), std::move(output)};
}

TEST(BenchRunner, PlansRowsInNcclTestsOrderWithRounding) {
  BenchOptions o = smallOptions();
  o.dtypes = {DataType::kInt8, DataType::kFloat64};
  o.ops = {ReduceOp::kSum, ReduceOp::kMax};
  Result<std::vector<RowPlan>> plans = planRows(*o.collectives[0], o, *sizeSweep(o), 4);
  ASSERT_TRUE(plans.ok());
  // Sizes 0 1 2 4 8 16 32 64: int8 keeps all 8; float64 rounds 1 2 4 to 0 and drops them.
  ASSERT_EQ(plans->size(), 2u * 8 + 2u * 5);
  std::vector<std::uint64_t> int8Sum;
  for (std::size_t i = 0; i < 8; ++i) {
    EXPECT_EQ((*plans)[i].dtype, DataType::kInt8);
    EXPECT_EQ((*plans)[i].op, ReduceOp::kSum);
    EXPECT_EQ((*plans)[i].root, -1);
    int8Sum.push_back((*plans)[i].bytes);
  }
  EXPECT_EQ(int8Sum, (std::vector<std::uint64_t>{0, 1, 2, 4, 8, 16, 32, 64}));
  EXPECT_EQ((*plans)[8].op, ReduceOp::kMax);
  std::vector<std::uint64_t> doubleMax;
  for (std::size_t i = 21; i < 26; ++i) {
    EXPECT_EQ((*plans)[i].dtype, DataType::kFloat64);
    EXPECT_EQ((*plans)[i].op, ReduceOp::kMax);
    EXPECT_EQ((*plans)[i].counts.param * 8, (*plans)[i].bytes);
    doubleMax.push_back((*plans)[i].bytes);
  }
  EXPECT_EQ(doubleMax, (std::vector<std::uint64_t>{0, 8, 16, 32, 64}));
}

TEST(BenchRunner, OneRankEveryTypeAndOpChecksClean) {
  FakeComm comm(0, 1);
  BenchOptions o = smallOptions();
  o.dtypes = allDataTypes();
  o.ops = allReduceOps();
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
  EXPECT_EQ(run.summary->wrong, 0);
  for (const RowResult& row : run.summary->rows) {
    EXPECT_EQ(row.bytes % dataTypeSize(row.dtype), 0u);
    EXPECT_EQ(row.outOfPlace.wrong, 0);
    EXPECT_EQ(row.inPlace->wrong, 0);
    EXPECT_EQ(row.algorithm, "fake");
    EXPECT_EQ(row.ranks, 1);
  }
  EXPECT_NE(run.output.find("# Collective allreduce  ranks 1"), std::string::npos);
  EXPECT_NE(run.output.find("# Out of bounds values : 0 OK"), std::string::npos);
  // One output line per row.
  std::size_t rowLines = 0;
  std::istringstream in(run.output);
  for (std::string line; std::getline(in, line);) rowLines += !line.empty() && line[0] != '#';
  EXPECT_EQ(rowLines, run.summary->rows.size());
}

TEST(BenchRunner, CallsFollowWarmupTimingAndCheckCounts) {
  FakeComm comm(0, 1);
  BenchOptions o = smallOptions();
  o.minBytes = o.maxBytes = 64;
  o.check = 2;
  o.algorithms = {"ring"};
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
  ASSERT_EQ(run.summary->rows.size(), 1u);
  EXPECT_EQ(run.summary->rows[0].algorithm, "ring");
  // Per placement: 2 warm-up + 3 timed + 2 checked data calls, 1 time and 2 wrong-count
  // calls; one barrier before the timed loop.
  std::size_t data = 0;
  std::size_t bookkeeping = 0;
  for (const Call& call : comm.calls) {
    if (call.dtype == DataType::kFloat32) {
      ++data;
      EXPECT_EQ(call.count, 16u);
      EXPECT_EQ(call.algorithm, "ring");  // --algo reaches every data call
    } else {
      ++bookkeeping;
      EXPECT_EQ(call.algorithm, "");  // and no bookkeeping call
    }
  }
  EXPECT_EQ(data, 2u * (2 + 3 + 2));
  EXPECT_EQ(bookkeeping, 2u * (1 + 2));
  EXPECT_EQ(comm.barriers, 2);
}

TEST(BenchRunner, IterBytesAndNoInPlaceShapeEachRowsCalls) {
  FakeComm comm(0, 1);
  BenchOptions o = smallOptions();
  o.sizeList = {16, 64};
  o.iters = 8;
  o.warmupIters = 3;
  o.iterBytes = 128;  // 16 B: min(8, 8) = 8 timed, 3 warm-ups; 64 B: 2 timed, 2 warm-ups
  o.inPlace = false;
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
  ASSERT_EQ(run.summary->rows.size(), 2u);
  EXPECT_EQ(run.summary->rows[0].iters, 8);
  EXPECT_EQ(run.summary->rows[0].warmupIters, 3);
  EXPECT_EQ(run.summary->rows[1].iters, 2);
  EXPECT_EQ(run.summary->rows[1].warmupIters, 2);
  std::map<std::size_t, int> dataCalls;  // per count, the data calls (out of place only)
  for (const Call& call : comm.calls)
    if (call.dtype == DataType::kFloat32) ++dataCalls[call.count];
  EXPECT_EQ(dataCalls[4], 3 + 8 + 1);
  EXPECT_EQ(dataCalls[16], 2 + 2 + 1);
  for (const RowResult& row : run.summary->rows) {
    EXPECT_FALSE(row.inPlace.has_value());
    EXPECT_EQ(row.outOfPlace.wrong, 0);
  }
  EXPECT_NE(run.output.find("# sizes: 16 64\n"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("# in place: not run"), std::string::npos) << run.output;
}

TEST(BenchRunner, TimesCombineAsAverageSays) {
  const std::pair<TimeAverage, ReduceOp> modes[] = {{TimeAverage::kMean, ReduceOp::kSum},
                                                    {TimeAverage::kRank0, ReduceOp::kSum},
                                                    {TimeAverage::kMin, ReduceOp::kMin},
                                                    {TimeAverage::kMax, ReduceOp::kMax}};
  for (const auto& [average, op] : modes) {
    FakeComm comm(1, 4);
    comm.fixedSeconds = 0.001;
    BenchOptions o = smallOptions();
    o.minBytes = o.maxBytes = 1 << 20;
    o.average = average;
    const Captured run = runCaptured(comm, o);
    ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
    EXPECT_EQ(run.output, "");  // only rank 0 prints
    const RowResult& row = run.summary->rows.at(0);
    // The fake sums four equal times: the mean divides again, rank 0 mode does not.
    const double seconds = average == TimeAverage::kRank0 ? 0.004 : 0.001;
    EXPECT_DOUBLE_EQ(row.outOfPlace.timeUs, seconds * 1e6);
    EXPECT_DOUBLE_EQ(row.outOfPlace.algbwGBs, (1 << 20) / seconds / 1e9);
    EXPECT_DOUBLE_EQ(row.outOfPlace.busbwGBs, row.outOfPlace.algbwGBs * 1.5);
    EXPECT_DOUBLE_EQ(run.summary->avgBusbwGBs, row.outOfPlace.busbwGBs);
    for (const Call& call : comm.calls) {
      if (call.dtype != DataType::kFloat64) continue;
      EXPECT_EQ(call.op, op);
      // Rank 0 mode: the other ranks contribute zero.
      if (average == TimeAverage::kRank0) {
        EXPECT_EQ(call.scalar, 0.0);
      } else {
        EXPECT_GT(call.scalar, 0.0);
      }
    }
  }
}

TEST(BenchRunner, WrongElementsAreCountedOverRanks) {
  FakeComm comm(0, 3);
  comm.corruptFirstByte = 1;
  BenchOptions o = smallOptions();
  o.minBytes = 4;
  o.maxBytes = 16;
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
  // One wrong element per call on each of the 3 (simulated) ranks, in both placements.
  for (const RowResult& row : run.summary->rows) {
    EXPECT_EQ(row.outOfPlace.wrong, 3);
    EXPECT_EQ(row.inPlace->wrong, 3);
  }
  EXPECT_EQ(run.summary->wrong, 3 * 2 * static_cast<std::int64_t>(run.summary->rows.size()));
  EXPECT_NE(run.output.find("FAILED"), std::string::npos);
}

TEST(BenchRunner, UnwrittenOutputIsCaught) {
  FakeComm comm(0, 1);
  comm.dropOutput = true;
  BenchOptions o = smallOptions();
  o.minBytes = 20;
  o.maxBytes = 40;
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok());
  ASSERT_EQ(run.summary->rows.size(), 2u);
  // In place, with one rank, the untouched input is the right answer.
  EXPECT_EQ(run.summary->rows[0].inPlace->wrong, 0);
  EXPECT_EQ(run.summary->rows[1].inPlace->wrong, 0);
  // Out of place the output is poisoned before the checked call; without that, the second
  // row would find the first row's in-place result, which is right for its first 5
  // elements, in the receive buffer.
  EXPECT_EQ(run.summary->rows[0].outOfPlace.wrong, 5);
  EXPECT_EQ(run.summary->rows[1].outOfPlace.wrong, 10);
}

TEST(BenchRunner, NoCheckingMeansNoWrongCount) {
  FakeComm comm(0, 2);
  comm.corruptFirstByte = 1;
  BenchOptions o = smallOptions();
  o.check = 0;
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok());
  EXPECT_EQ(run.summary->wrong, 0);
  EXPECT_FALSE(run.summary->rows.at(0).inPlace->wrong.has_value());
  EXPECT_NE(run.output.find("N/A"), std::string::npos);
}

TEST(BenchRunner, FailedCallStopsTheRunWithContext) {
  FakeComm comm(0, 2);
  comm.failAtCall = 4;
  const Captured run = runCaptured(comm, smallOptions());
  ASSERT_FALSE(run.summary.ok());
  EXPECT_EQ(run.summary.status().code(), ErrorCode::kPeerFailure);
  EXPECT_EQ(run.summary.status().peerRank(), 1);
  EXPECT_NE(run.summary.status().message().find("allreduce of 0 bytes (0 x float32, sum), out "
                                                "of place: rank 1 closed its connection"),
            std::string::npos)
      << run.summary.status().message();
  EXPECT_EQ(comm.calls.size(), 4u);
}

TEST(BenchRunner, CandidatesTakeTurnsInBlocksAndEachGetsItsRow) {
  FakeComm comm(0, 1);
  BenchOptions o = smallOptions();
  o.minBytes = o.maxBytes = 64;
  o.iters = 5;
  o.warmupIters = 1;
  o.inPlace = false;
  o.algorithms = {"", "ring"};
  o.blocks = 2;
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
  ASSERT_EQ(run.summary->rows.size(), 2u);
  EXPECT_EQ(run.summary->rows[0].algorithm, "fake");  // what the library chose
  EXPECT_EQ(run.summary->rows[0].candidate, "auto");
  EXPECT_EQ(run.summary->rows[1].algorithm, "ring");
  EXPECT_EQ(run.summary->rows[1].candidate, "ring");
  EXPECT_EQ(run.summary->rows[1].iters, 5);
  // Warm-ups in turn, then blocks of 3 and 2 timed calls in turn, then each one's check.
  std::string order;
  for (const Call& call : comm.calls) {
    // The library's choice runs unforced (the library may learn among its contenders).
    if (call.dtype == DataType::kFloat32) order += call.algorithm.empty() ? 'f' : 'r';
  }
  // Each block of a candidate starts with one untimed call; the second block starts with
  // the second candidate.
  EXPECT_EQ(order, "fr" "ffffrrrr" "rrrfff" "fr");
  EXPECT_EQ(comm.barriers, 4);  // before each block of each candidate
  EXPECT_NE(run.output.find("auto:fake"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("algorithm: auto,ring "), std::string::npos) << run.output;
  for (const RowResult& row : run.summary->rows) EXPECT_EQ(row.outOfPlace.wrong, 0);
}

TEST(BenchRunner, ACandidateForcedWithItsSegmentKeepsItInTheCallsAndTheRow) {
  FakeComm comm(0, 1);
  BenchOptions o = smallOptions();
  o.minBytes = o.maxBytes = 64;
  o.inPlace = false;
  o.algorithms = {"ring", "ring@64K"};
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
  ASSERT_EQ(run.summary->rows.size(), 2u);
  EXPECT_EQ(run.summary->rows[0].algorithm, "ring");
  EXPECT_EQ(run.summary->rows[1].algorithm, "ring@64K");
  EXPECT_EQ(run.summary->rows[1].candidate, "ring@64K");
  std::set<std::string> forced;
  for (const Call& call : comm.calls) {
    if (call.dtype == DataType::kFloat32) forced.insert(call.algorithm);
  }
  EXPECT_EQ(forced, (std::set<std::string>{"ring", "ring@64K"}));
}

TEST(BenchRunner, ACandidatesTimeIsItsBlocksMedianFromThreeBlocksElseTheirMean) {
  FakeComm comm(0, 1);
  BenchOptions o = smallOptions();
  o.minBytes = o.maxBytes = 64;
  o.iters = 5;
  o.inPlace = false;
  o.algorithms = {"", "ring"};
  o.blocks = 3;  // 2, 2 and 1 calls
  // Per operation, in the order the runner combines them: the blocks of each candidate.
  comm.fixedTimes = {1e-6, 9e-6, 2e-6, 3e-6, 3e-6, 30e-6};
  Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
  EXPECT_DOUBLE_EQ(run.summary->rows.at(0).outOfPlace.timeUs, 2.0);  // median of 1, 9, 2
  EXPECT_DOUBLE_EQ(run.summary->rows.at(1).outOfPlace.timeUs, 3.0);  // of 3, 3, 30
  o.blocks = 2;  // 3 and 2 calls: their mean per operation
  comm.fixedTimes = {1e-6, 2e-6, 4e-6, 4e-6};
  run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
  EXPECT_DOUBLE_EQ(run.summary->rows.at(0).outOfPlace.timeUs, (3 * 1.0 + 2 * 2.0) / 5);
  EXPECT_DOUBLE_EQ(run.summary->rows.at(1).outOfPlace.timeUs, 4.0);
}

TEST(BenchRunner, ACandidateThatDoesNotApplyStopsTheRunBeforeAnythingRuns) {
  FakeComm comm(0, 2);
  BenchOptions o = smallOptions();
  o.algorithms = {"", "ring", "bogus"};
  const Captured run = runCaptured(comm, o);
  ASSERT_FALSE(run.summary.ok());
  EXPECT_NE(run.summary.status().message().find("--algo bogus does not apply"), std::string::npos)
      << run.summary.status().message();
  EXPECT_TRUE(comm.calls.empty());
}

TEST(BenchRunner, InapplicableAlgorithmIsAClearError) {
  FakeComm comm(0, 2);
  BenchOptions o = smallOptions();
  o.algorithms = {"bogus"};
  const Captured run = runCaptured(comm, o);
  ASSERT_FALSE(run.summary.ok());
  EXPECT_EQ(run.summary.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(run.summary.status().message().find(
                "--algo bogus does not apply to allreduce of 0 bytes (0 x float32, sum): no "
                "algorithm named 'bogus'"),
            std::string::npos)
      << run.summary.status().message();
  EXPECT_TRUE(comm.calls.empty());
  EXPECT_EQ(run.output, "");  // refused before the table starts
}

TEST(BenchRunner, Rank0WritesJson) {
  const std::string path = testing::TempDir() + "bench_runner_test.json";
  std::remove(path.c_str());
  FakeComm other(1, 2);
  BenchOptions o = smallOptions();
  o.jsonPath = path;
  ASSERT_TRUE(runCaptured(other, o).summary.ok());
  EXPECT_FALSE(std::ifstream(path).good());  // only rank 0 writes

  FakeComm comm(0, 2);
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  const std::string json = text.str();
  std::size_t objects = 0;
  for (std::size_t at = 0; (at = json.find("\"collective\": \"allreduce\"", at)) != std::string::npos; ++at) {
    ++objects;
  }
  EXPECT_EQ(objects, 2 * run.summary->rows.size());
  EXPECT_NE(json.find("\"ranks\": 2"), std::string::npos);
  std::remove(path.c_str());
}

BenchOptions allOptions() {
  BenchOptions o = smallOptions();
  o.collectives.clear();
  for (const CollectiveEntry& entry : collectiveTable()) o.collectives.push_back(&entry);
  o.dtypes = {DataType::kInt32, DataType::kFloat16};
  o.ops = {ReduceOp::kSum, ReduceOp::kMax};
  o.root = -1;
  return o;
}

std::size_t rowsOf(const RunSummary& summary, const std::string& collective) {
  std::size_t n = 0;
  for (const RowResult& row : summary.rows) n += row.collective == collective ? 1 : 0;
  return n;
}

// Every collective, every rank of worlds of 1, 2, 3 and 5 ranks, every root: the data the
// runner makes, combined as the whole world would, is what the runner expects.
TEST(BenchRunner, EveryCollectiveChecksCleanOnEveryRankOfSimulatedWorlds) {
  for (const int n : {1, 2, 3, 5}) {
    for (int rank = 0; rank < n; ++rank) {
      FakeComm comm(rank, n);
      const Captured run = runCaptured(comm, allOptions());
      ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
      EXPECT_EQ(run.summary->wrong, 0) << "n=" << n << " rank=" << rank;
      for (const RowResult& row : run.summary->rows) {
        if (row.collective == "barrier") continue;
        EXPECT_EQ(row.outOfPlace.wrong, 0) << row.collective << " n=" << n << " rank=" << rank;
        if (row.inPlace) {
          EXPECT_EQ(row.inPlace->wrong, 0) << row.collective << " n=" << n;
        }
      }
      // Sizes 0..64 bytes in 2 types; 2 ops for reductions, n roots for rooted ones.
      EXPECT_EQ(rowsOf(*run.summary, "barrier"), 1u);
      // sendrecv rounds no counts, like broadcast for one root; one rank sends to itself.
      const std::size_t perRoot = rowsOf(*run.summary, "broadcast") / static_cast<std::size_t>(n);
      EXPECT_EQ(rowsOf(*run.summary, "sendrecv"), perRoot);
      EXPECT_EQ(rowsOf(*run.summary, "reduce"),
                rowsOf(*run.summary, "allreduce") * static_cast<std::size_t>(n));
      if (rank == 0) {
        EXPECT_NE(run.output.find("# Collective barrier  ranks " + std::to_string(n)),
                  std::string::npos);
        EXPECT_NE(run.output.find("out of bounds values : 0 OK"), std::string::npos) << run.output;
        EXPECT_EQ(run.output.find("# skipped"), std::string::npos) << run.output;
      }
    }
  }
}

TEST(BenchRunner, EachRowCallsItsCollectiveWithTheRowsShape) {
  FakeComm comm(1, 3);
  BenchOptions o = allOptions();
  o.minBytes = o.maxBytes = 48;  // 12 int32 elements: 4 per rank
  o.dtypes = {DataType::kInt32};
  o.ops = {ReduceOp::kMax};
  o.root = 2;
  o.warmupIters = 0;
  o.iters = 1;
  o.check = 0;
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
  std::vector<std::pair<Collective, std::size_t>> seen;
  for (const Call& call : comm.calls) {
    if (call.dtype == DataType::kFloat64) continue;  // time bookkeeping
    seen.emplace_back(call.kind, call.count);
    const bool rooted = call.kind == Collective::kBroadcast || call.kind == Collective::kReduce ||
                        call.kind == Collective::kGather || call.kind == Collective::kScatter;
    EXPECT_EQ(call.root, rooted ? 2 : -1) << collectiveName(call.kind);
    if (call.kind == Collective::kReduce || call.kind == Collective::kAllReduce ||
        call.kind == Collective::kReduceScatter) {
      EXPECT_EQ(call.op, ReduceOp::kMax);
    }
  }
  // One timed call per placement; sendrecv and barrier have no in-place form.
  using C = Collective;
  EXPECT_EQ(seen, (std::vector<std::pair<Collective, std::size_t>>{
                      {C::kAllReduce, 12}, {C::kAllReduce, 12}, {C::kAllGather, 4},
                      {C::kAllGather, 4}, {C::kReduceScatter, 4}, {C::kReduceScatter, 4},
                      {C::kBroadcast, 12}, {C::kBroadcast, 12}, {C::kReduce, 12},
                      {C::kReduce, 12}, {C::kGather, 4}, {C::kGather, 4}, {C::kScatter, 4},
                      {C::kScatter, 4}, {C::kAllToAll, 4}, {C::kAllToAll, 4}, {C::kSend, 12},
                      {C::kBarrier, 0}}));
  const RowResult& barrier = run.summary->rows.back();
  EXPECT_EQ(barrier.collective, "barrier");
  EXPECT_FALSE(barrier.sized);
  EXPECT_FALSE(barrier.inPlace.has_value());
  EXPECT_EQ(barrier.bytes, 0u);
  EXPECT_DOUBLE_EQ(barrier.outOfPlace.busbwGBs, 0.0);
  const RowResult& sendrecv = run.summary->rows[run.summary->rows.size() - 2];
  EXPECT_EQ(sendrecv.collective, "sendrecv");
  EXPECT_FALSE(sendrecv.inPlace.has_value());
  EXPECT_EQ(sendrecv.bytes, 48u);
}

TEST(BenchRunner, WrongDataMovementIsCaught) {
  for (const char* name : {"allgather", "broadcast", "gather", "scatter", "alltoall", "sendrecv",
                           "reducescatter", "reduce"}) {
    FakeComm comm(0, 3);
    comm.corruptFirstByte = 0x10;
    BenchOptions o = smallOptions();
    o.collectives = {*findCollective(name)};
    o.minBytes = o.maxBytes = 48;
    const Captured run = runCaptured(comm, o);
    ASSERT_TRUE(run.summary.ok()) << name << ": " << run.summary.status().toString();
    // Rank 0 is the root; the fake's wrong count stands for all 3 ranks alike.
    EXPECT_EQ(run.summary->rows.at(0).outOfPlace.wrong, 3) << name;
    EXPECT_NE(run.output.find("FAILED"), std::string::npos) << name;
  }
}

// nccl-tests' sendrecv runs on one rank, which sends to itself.
TEST(BenchRunner, SendRecvAloneRunsOnOneRank) {
  FakeComm comm(0, 1);
  BenchOptions o = smallOptions();
  o.collectives = {*findCollective("sendrecv")};
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
  EXPECT_EQ(run.summary->wrong, 0);
  EXPECT_FALSE(run.summary->rows.empty());
  EXPECT_FALSE(comm.calls.empty());
}

TEST(BenchRunner, ForcedAlgorithmMustApplyToEveryCollectiveBeforeAnythingRuns) {
  FakeComm comm(0, 2);
  BenchOptions o = allOptions();
  o.algorithms = {"ring"};
  const Captured run = runCaptured(comm, o);
  ASSERT_FALSE(run.summary.ok());
  EXPECT_EQ(run.summary.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(run.summary.status().message().find("--algo ring does not apply to allgather"),
            std::string::npos)
      << run.summary.status().message();
  EXPECT_TRUE(comm.calls.empty());
  EXPECT_EQ(run.output, "");
}

TEST(BenchRunner, EveryRootInTurnOrOne) {
  FakeComm comm(0, 4);
  BenchOptions o = smallOptions();
  o.collectives = {*findCollective("broadcast")};
  o.minBytes = o.maxBytes = 64;
  o.root = -1;
  Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok());
  std::vector<int> roots;
  for (const RowResult& row : run.summary->rows) roots.push_back(row.root);
  EXPECT_EQ(roots, (std::vector<int>{0, 1, 2, 3}));
  o.root = 4;
  run = runCaptured(comm, o);
  ASSERT_FALSE(run.summary.ok());
  EXPECT_NE(run.summary.status().message().find("-r/--root 4 is not a rank of 4"),
            std::string::npos);
  // Collectives without a root print -1 whatever -r says.
  o.collectives = {*findCollective("alltoall")};
  run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok());
  EXPECT_EQ(run.summary->rows.at(0).root, -1);
}

}  // namespace
}  // namespace tutti::bench

namespace tutti::bench {
namespace {

TEST(BenchRunner, VerifyProvesEveryRowAndPlacementBeforeAnythingRuns) {
  FakeComm comm(0, 4);
  BenchOptions o = allOptions();
  o.verify = true;
  o.root = -1;
  const Captured run = runCaptured(comm, o);
  ASSERT_TRUE(run.summary.ok()) << run.summary.status().toString();
  // One verified call per row and placement, each with the row's shape.
  std::size_t expected = 0;
  for (const RowResult& row : run.summary->rows) expected += row.inPlace ? 2 : 1;
  ASSERT_EQ(comm.verified.size(), expected);
  std::size_t i = 0;
  for (const RowResult& row : run.summary->rows) {
    for (const bool inPlace : {false, true}) {
      if (inPlace && !row.inPlace) continue;
      const CallShape& call = comm.verified[i++];
      EXPECT_EQ(collectiveName(call.kind), row.collective == "sendrecv" ? std::string("send")
                                                                         : row.collective);
      EXPECT_EQ(call.count, row.count);
      EXPECT_EQ(call.dtype, row.dtype);
      EXPECT_EQ(call.inPlace, inPlace);
      EXPECT_EQ(call.root, std::max(row.root, 0));
    }
  }
  EXPECT_NE(run.output.find("# Schedules verified : "), std::string::npos);
}

TEST(BenchRunner, VerifierFindingStopsTheRunBeforeAnyCall) {
  FakeComm comm(0, 4);
  BenchOptions o = allOptions();
  o.verify = true;
  comm.failVerify = Collective::kReduceScatter;
  const Captured run = runCaptured(comm, o);
  ASSERT_FALSE(run.summary.ok());
  EXPECT_EQ(run.summary.status().code(), ErrorCode::kInternal);
  const std::string& message = run.summary.status().message();
  EXPECT_NE(message.find("--verify: reducescatter"), std::string::npos) << message;
  EXPECT_NE(message.find("rank 1 out[0..1) holds nothing"), std::string::npos) << message;
  EXPECT_TRUE(comm.calls.empty());
  EXPECT_EQ(run.output, "");
}

TEST(BenchRunner, NoVerifyNoVerifierCalls) {
  FakeComm comm(0, 2);
  const Captured run = runCaptured(comm, smallOptions());
  ASSERT_TRUE(run.summary.ok());
  EXPECT_TRUE(comm.verified.empty());
  EXPECT_EQ(run.output.find("Schedules verified"), std::string::npos);
}

}  // namespace
}  // namespace tutti::bench
