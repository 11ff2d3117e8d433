// The flat forms of the registry's algorithms (AlgorithmInfo::flatBytes and flatFinish: a
// transport's flat exchange carries the algorithm's one round instead of messages, every
// rank reading every rank's whole contribution) checked in one process, without a transport:
// - data movement (all-gather, all-to-all): every rank's flat output equals what the same
//   algorithm's schedule leaves there, run on labelled data by data_sim.h, in and out of
//   place, for worlds of 1 to 9 ranks;
// - reductions (all-reduce, reduce-scatter): every element equals the collective's
//   definition computed by tools/bench/data.h, in every dtype and op.
// The multi-process worker (tests/multiproc/collective_worker.cc) runs the same forms over
// shared memory, bit for bit against the schedules' fold order.

#include <gtest/gtest.h>

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

TEST(FlatForms, MoveDataExactlyAsTheirSchedules) {
  for (Collective kind : {Collective::kAllGather, Collective::kAllToAll}) {
    const auto forms = flatForms(kind);
    ASSERT_FALSE(forms.empty()) << collectiveName(kind);
    for (const AlgorithmInfo* a : forms) {
      for (int n = 1; n <= 9; ++n) {
        for (std::uint64_t count : {std::uint64_t{1}, std::uint64_t{3}, std::uint64_t{17}}) {
          for (bool inPlace : {false, true}) {
            // Labels are 8-byte elements: uint64 makes the flat form's bytes the labels'.
            const auto specs = testing::uniformSpecs(kind, n, count, inPlace, DataType::kUint64);
            const std::string what = describe(*a, specs[0]);
            std::vector<Schedule> schedules;
            for (const CollectiveSpec& s : specs) schedules.push_back(a->build(s));
            testing::SimResult sim;
            Status status = testing::simulateData(specs, schedules, {16, true, 1}, &sim);
            ASSERT_TRUE(status.ok()) << what << ": " << status.message();
            // What the flat exchange publishes: each rank's whole input.
            std::vector<std::vector<std::uint64_t>> inputs;
            std::vector<const char*> views;
            for (const CollectiveSpec& s : specs) {
              const BufferLayout l = bufferLayout(s);
              std::vector<std::uint64_t> in(l.inputCount);
              for (std::uint64_t j = 0; j < l.inputCount; ++j) in[j] = inputLabel(s.rank, j);
              ASSERT_EQ(a->flatBytes(s), l.inputCount * sizeof(std::uint64_t)) << what;
              inputs.push_back(std::move(in));
            }
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

TEST(FlatForms, ReduceToTheDefinitionInEveryTypeAndOp) {
  for (Collective kind : {Collective::kAllReduce, Collective::kReduceScatter}) {
    const auto forms = flatForms(kind);
    ASSERT_FALSE(forms.empty()) << collectiveName(kind);
    for (const AlgorithmInfo* a : forms) {
      for (int n : {1, 2, 3, 5, 8}) {
        for (std::uint64_t count : {std::uint64_t{1}, std::uint64_t{7}, std::uint64_t{33}}) {
          for (DataType dtype : bench::allDataTypes()) {
            for (ReduceOp op : bench::allReduceOps()) {
              const auto specs = testing::uniformSpecs(kind, n, count, false, dtype, op);
              const std::string what = describe(*a, specs[0]);
              const std::size_t size = dataTypeSize(dtype);
              const std::uint64_t inputCount =
                  kind == Collective::kReduceScatter ? count * static_cast<std::uint64_t>(n)
                                                     : count;
              std::vector<std::vector<char>> inputs;
              std::vector<const char*> views;
              for (const CollectiveSpec& s : specs) {
                ASSERT_EQ(a->flatBytes(s), inputCount * size) << what;
                std::vector<char> in(inputCount * size);
                bench::fillInput(in.data(), inputCount, s.rank, n, dtype, op);
                inputs.push_back(std::move(in));
              }
              for (const auto& in : inputs) views.push_back(in.data());
              for (const CollectiveSpec& s : specs) {
                std::vector<char> out(count * size, '\x5a'), want(count * size);
                const std::size_t first =
                    kind == Collective::kReduceScatter ? static_cast<std::size_t>(s.rank) * count
                                                       : 0;
                bench::fillExpectedAllReduce(want.data(), count, n, dtype, op, first);
                a->flatFinish(s, views.data(), out.data());
                EXPECT_EQ(bench::countWrong(out.data(), want.data(), count, dtype), 0u)
                    << what << " rank " << s.rank;
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
