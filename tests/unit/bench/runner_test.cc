#include "bench/runner.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/data.h"

namespace tutti::bench {
namespace {

// One call the fake saw.
struct Call {
  std::size_t count;
  DataType dtype;
  ReduceOp op;
  std::string algorithm;
  double scalar;  // the value sent by a one-element float64 call
};

// A BenchComm without peers. Data calls produce the correct all-reduce of `size` ranks
// (the input itself for one rank; the expectation for more, as if the peers were there);
// one-element int64 and float64 calls (the runner's bookkeeping) behave as if every rank
// sent the same value. Knobs inject wrong results, failures and fixed times.
class FakeComm : public BenchComm {
 public:
  FakeComm(int rank, int size) : rank_(rank), size_(size) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  Status barrier() override {
    ++barriers;
    return Status::Ok();
  }

  Status allreduce(const void* send, void* recv, std::size_t count, DataType dtype, ReduceOp op,
                   const std::string& algorithm) override {
    Call call{count, dtype, op, algorithm, 0.0};
    if (count == 1 && dtype == DataType::kFloat64) std::memcpy(&call.scalar, send, sizeof(double));
    calls.push_back(call);
    if (failAtCall == calls.size()) {
      return Status(ErrorCode::kPeerFailure, "rank 1 closed its connection", 1);
    }
    if (count == 1 && (dtype == DataType::kFloat64 || dtype == DataType::kInt64)) {
      bookkeeping(send, recv, dtype, op);
      return Status::Ok();
    }
    if (dropOutput) return Status::Ok();
    if (size_ == 1) {
      std::memmove(recv, send, count * dataTypeSize(dtype));
    } else {
      fillExpectedAllReduce(recv, count, size_, dtype, op);
    }
    if (count > 0) static_cast<unsigned char*>(recv)[0] ^= corruptFirstByte;
    return Status::Ok();
  }

  Result<std::string> algorithmFor(Collective kind, std::size_t, DataType,
                                   const std::string& forced) const override {
    EXPECT_EQ(kind, Collective::kAllReduce);
    if (forced.empty()) return std::string("fake");
    if (forced == "ring") return forced;
    return Status(ErrorCode::kNotSupported, "no algorithm named '" + forced + "'");
  }

  std::vector<Call> calls;
  int barriers = 0;
  std::size_t failAtCall = 0;        // 1-based; 0 never fails
  unsigned char corruptFirstByte = 0;  // xor-ed into element 0 of every data result
  bool dropOutput = false;           // data calls write nothing
  double fixedSeconds = 0;           // > 0: every rank "measured" this time

 private:
  void bookkeeping(const void* send, void* recv, DataType dtype, ReduceOp op) {
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
    if (op == ReduceOp::kSum) v *= size_;
    std::memcpy(recv, &v, sizeof v);
  }

  int rank_;
  int size_;
};

BenchOptions smallOptions() {
  BenchOptions o;
  o.collective = collectiveTable().data();
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
  Result<std::vector<RowPlan>> plans = planRows(o, *sizeSweep(o), 4);
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
    EXPECT_EQ(row.inPlace.wrong, 0);
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
  o.algorithm = "ring";
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
    EXPECT_EQ(row.inPlace.wrong, 3);
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
  EXPECT_EQ(run.summary->rows[0].inPlace.wrong, 0);
  EXPECT_EQ(run.summary->rows[1].inPlace.wrong, 0);
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
  EXPECT_FALSE(run.summary->rows.at(0).inPlace.wrong.has_value());
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

TEST(BenchRunner, InapplicableAlgorithmIsAClearError) {
  FakeComm comm(0, 2);
  BenchOptions o = smallOptions();
  o.algorithm = "bogus";
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

}  // namespace
}  // namespace tutti::bench
