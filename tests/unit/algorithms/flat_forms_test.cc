// The flat forms of the registry's algorithms (AlgorithmInfo::flatBytes and flatFinish: a
// transport's flat exchange carries the algorithm's one round instead of messages, every
// rank reading every rank's whole contribution) checked in one process, without a transport:
// - data movement (all-gather(v), all-to-all): every rank's flat output equals what the same
//   algorithm's schedule leaves there, run on labelled data by data_sim.h, in and out of
//   place, for worlds of 1 to 9 ranks (allgatherv: blocks of differing sizes, some empty,
//   out of rank order with gaps between them);
// - reductions (all-reduce, reduce-scatter(v)): every element equals the collective's
//   definition computed by tools/bench/data.h, in every dtype and op.
// The multi-process worker (tests/multiproc/collective_worker.cc) runs the same forms over
// shared memory, bit for bit against the schedules' fold order.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "bench/data.h"
#include "bench/options.h"
#include "unit/algorithms/data_sim.h"

namespace tutti {
namespace {

using testing::inputLabel;
using testing::kGarbage;

// The registered algorithms of `kind` that have a flat form.
std::vector<const AlgorithmInfo*> flatForms(Collective kind) {
  std::vector<const AlgorithmInfo*> out;
  for (const AlgorithmInfo& info : algorithmRegistry())
    if (info.kind == kind && info.flatBytes != nullptr && info.flatFinish != nullptr)
      out.push_back(&info);
  return out;
}

std::string describe(const AlgorithmInfo& a, const CollectiveSpec& s) {
  return std::string(collectiveName(s.kind)) + " " + a.name + " n=" + std::to_string(s.size) +
         " count=" + std::to_string(s.count) + " " + dataTypeName(s.dtype) + " " +
         reduceOpName(s.op) + (s.inPlace ? " in place" : " out of place");
}

// allgatherv's blocks for `count`: rank r's holds (count + 5r) % 7 elements (some empty,
// sizes differ), placed out of rank order with a gap of r elements before each.
void makeAllgatherv(std::vector<CollectiveSpec>& specs, std::uint64_t count) {
  const auto n = specs.size();
  std::vector<std::uint64_t> counts(n), displs(n);
  std::uint64_t at = 0;
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t r = n - 1 - k;  // the last rank's block first
    counts[r] = (count + 5 * r) % 7;
    displs[r] = at + r;
    at = displs[r] + counts[r];
  }
  for (CollectiveSpec& s : specs) {
    s.count = 0;
    s.counts = counts;
    s.displs = displs;
  }
}

TEST(FlatForms, MoveDataExactlyAsTheirSchedules) {
  for (Collective kind : {Collective::kAllGather, Collective::kAllGatherV, Collective::kAllToAll}) {
    const auto forms = flatForms(kind);
    ASSERT_FALSE(forms.empty()) << collectiveName(kind);
    for (const AlgorithmInfo* a : forms) {
      for (int n = 1; n <= 9; ++n) {
        for (std::uint64_t count : {std::uint64_t{1}, std::uint64_t{3}, std::uint64_t{17}}) {
          for (bool inPlace : {false, true}) {
            // Labels are 8-byte elements: uint64 makes the flat form's bytes the labels'.
            auto specs = testing::uniformSpecs(kind, n, count, inPlace, DataType::kUint64);
            if (kind == Collective::kAllGatherV) makeAllgatherv(specs, count);
            const std::string what = describe(*a, specs[0]);
            std::vector<Schedule> schedules;
            for (const CollectiveSpec& s : specs) schedules.push_back(a->build(s));
            testing::SimResult sim;
            Status status = testing::simulateData(specs, schedules, {16, true, 1}, &sim);
            ASSERT_TRUE(status.ok()) << what << ": " << status.message();
            // What the flat exchange publishes: each rank's whole input.
            // allgatherv's differ in size: flatBytes is the largest, on every rank.
            std::vector<std::vector<std::uint64_t>> inputs;
            std::vector<const char*> views;
            std::size_t largest = 0;
            for (const CollectiveSpec& s : specs) {
              const BufferLayout l = bufferLayout(s);
              std::vector<std::uint64_t> in(l.inputCount);
              for (std::uint64_t j = 0; j < l.inputCount; ++j) in[j] = inputLabel(s.rank, j);
              const std::size_t bytes = l.inputCount * sizeof(std::uint64_t);
              largest = std::max(largest, bytes);
              if (a->flatRankBytes != nullptr) {
                for (const CollectiveSpec& other : specs)
                  ASSERT_EQ(a->flatRankBytes(other, s.rank), bytes) << what << " rank " << s.rank;
              } else {
                ASSERT_EQ(a->flatBytes(s), bytes) << what;
              }
              inputs.push_back(std::move(in));
            }
            for (const CollectiveSpec& s : specs) ASSERT_EQ(a->flatBytes(s), largest) << what;
            for (const auto& in : inputs) views.push_back(reinterpret_cast<const char*>(in.data()));
            for (const CollectiveSpec& s : specs) {
              // The output as the call finds it: garbage, or holding the input in place.
              const BufferLayout l = bufferLayout(s);
              std::vector<std::uint64_t> out(l.outputCount, kGarbage);
              if (l.inputInOutputAt) {
                for (std::uint64_t j = 0; j < l.inputCount; ++j)
                  out[*l.inputInOutputAt + j] = inputLabel(s.rank, j);
              }
              a->flatFinish(s, views.data(), out.data());
              EXPECT_EQ(out, sim.outputs[static_cast<std::size_t>(s.rank)])
                  << what << " rank " << s.rank;
              if (::testing::Test::HasFailure()) return;
            }
          }
        }
      }
    }
  }
}

// Rank r's block of a reduce-scatter(v) call: its first element in the input and its count.
struct Block {
  std::uint64_t first = 0;
  std::uint64_t count = 0;
};

Block blockOf(const CollectiveSpec& s, int r) {
  const auto ur = static_cast<std::uint64_t>(r);
  switch (s.kind) {
    case Collective::kReduceScatter: return {ur * s.count, s.count};
    case Collective::kReduceScatterV: {
      Block b{0, s.counts[ur]};
      for (std::uint64_t q = 0; q < ur; ++q) b.first += s.counts[q];
      return b;
    }
    default: return {0, s.count};  // all-reduce: the whole vector
  }
}

TEST(FlatForms, ReduceToTheDefinitionInEveryTypeAndOp) {
  for (Collective kind :
       {Collective::kAllReduce, Collective::kReduceScatter, Collective::kReduceScatterV}) {
    const auto forms = flatForms(kind);
    ASSERT_FALSE(forms.empty()) << collectiveName(kind);
    for (const AlgorithmInfo* a : forms) {
      for (int n : {1, 2, 3, 5, 8}) {
        for (std::uint64_t count : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{33}}) {
          for (DataType dtype : bench::allDataTypes()) {
            for (ReduceOp op : bench::allReduceOps()) {
              auto specs = testing::uniformSpecs(kind, n, count, false, dtype, op);
              std::uint64_t inputCount = count;
              if (kind == Collective::kReduceScatter)
                inputCount = count * static_cast<std::uint64_t>(n);
              if (kind == Collective::kReduceScatterV) {
                // Uneven blocks, some empty: rank r's is (count + 3r) % 5 elements.
                std::vector<std::uint64_t> counts;
                for (int r = 0; r < n; ++r)
                  counts.push_back((count + 3 * static_cast<std::uint64_t>(r)) % 5);
                inputCount = 0;
                for (std::uint64_t c : counts) inputCount += c;
                for (CollectiveSpec& s : specs) {
                  s.count = 0;
                  s.counts = counts;
                }
              }
              const std::string what = describe(*a, specs[0]);
              const std::size_t size = dataTypeSize(dtype);
              std::vector<std::vector<char>> inputs;
              std::vector<const char*> views;
              for (const CollectiveSpec& s : specs) {
                ASSERT_EQ(a->flatBytes(s), inputCount * size) << what;
                std::vector<char> in(inputCount * size + 1);
                bench::fillInput(in.data(), inputCount, s.rank, n, dtype, op);
                inputs.push_back(std::move(in));
              }
              for (const auto& in : inputs) views.push_back(in.data());
              for (const CollectiveSpec& s : specs) {
                const Block b = blockOf(s, s.rank);
                // One element past the block must stay as it was.
                std::vector<char> out((b.count + 1) * size, '\x5a'), want = out;
                bench::fillExpectedAllReduce(want.data(), b.count, n, dtype, op, b.first);
                a->flatFinish(s, views.data(), out.data());
                EXPECT_EQ(out, want) << what << " rank " << s.rank << ": "
                                     << bench::countWrong(out.data(), want.data(), b.count, dtype)
                                     << " of " << b.count << " elements wrong";
                if (::testing::Test::HasFailure()) return;
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace tutti
