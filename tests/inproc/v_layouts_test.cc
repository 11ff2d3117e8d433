// Gatherv and scatterv with every registered algorithm of theirs (the list from the
// registry, one test per algorithm), ranks as threads, in layouts whose blocks lie out of
// rank order with zero counts and gaps, so a tree's root stages subtrees in scratch; every
// root class, in place and not, worlds of 1 to 8 ranks. Every element is checked against an expectation
// computed here. (large_messages_test.cc runs every algorithm at large counts.)

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/strings.h"
#include "common/collective_check.h"
#include "common/registry.h"
#include "common/threads.h"
#include "tutti/communicator.h"

namespace tutti::test {
namespace {

// Counts with zeros, displacements in reverse rank order with gaps: a subtree's blocks fall
// in many pieces of the root's buffer.
struct VLayout {
  std::vector<std::size_t> counts, displs;
  std::size_t extent = 0;
};

VLayout reversedLayout(int n) {
  VLayout l;
  const auto size = static_cast<std::size_t>(n);
  l.counts.resize(size);
  l.displs.resize(size);
  for (std::size_t i = 0; i < size; ++i) l.counts[i] = (i * 3 + 1) % 4 * 5;  // 5, 20, 15, 0, ...
  for (std::size_t i = size; i-- > 0;) {
    l.displs[i] = l.extent;
    l.extent += l.counts[i] + 2;
  }
  return l;
}

std::int32_t valueOf(int rank, std::size_t j) {
  return rank * 100000 + static_cast<std::int32_t>(j) + 1;
}

std::string gathervOnce(Communicator& comm, const std::string& algorithm, const VLayout& l,
                        int root, bool inPlace) {
  const int me = comm.rank();
  const auto m = static_cast<std::size_t>(me);
  std::vector<std::int32_t> input(l.counts[m]), output(l.extent, -1);
  for (std::size_t j = 0; j < input.size(); ++j) input[j] = valueOf(me, j);
  const std::int32_t* send = input.data();
  if (inPlace && me == root) {
    std::copy(input.begin(), input.end(),
              output.begin() + static_cast<std::ptrdiff_t>(l.displs[m]));
    send = output.data() + l.displs[m];
  }
  CallOptions options;
  options.algorithm = algorithm;
  Status s = comm.gatherv(send, l.counts[m], output.data(), l.counts, l.displs, DataType::kInt32,
                          root, options);
  const std::string what =
      strFormat("gatherv root=%d %s", root, inPlace ? "in-place" : "out-of-place");
  if (!s.ok()) return what + ": " + s.toString() + "\n";
  if (me != root) return "";
  for (int b = 0; b < comm.size(); ++b) {
    const auto i = static_cast<std::size_t>(b);
    for (std::size_t j = 0; j < l.counts[i]; ++j) {
      if (output[l.displs[i] + j] != valueOf(b, j))
        return what + strFormat(": block %d element %zu is %d\n", b, j, output[l.displs[i] + j]);
    }
  }
  return "";
}

std::string scattervOnce(Communicator& comm, const std::string& algorithm, const VLayout& l,
                         int root, bool inPlace) {
  const int me = comm.rank();
  const auto m = static_cast<std::size_t>(me);
  std::vector<std::int32_t> input(me == root ? l.extent : 0, -1), output(l.counts[m], -1);
  if (me == root) {
    for (int b = 0; b < comm.size(); ++b) {
      const auto i = static_cast<std::size_t>(b);
      for (std::size_t j = 0; j < l.counts[i]; ++j) input[l.displs[i] + j] = valueOf(b, j);
    }
  }
  std::int32_t* recv = (inPlace && me == root) ? input.data() + l.displs[m] : output.data();
  CallOptions options;
  options.algorithm = algorithm;
  Status s = comm.scatterv(input.data(), l.counts, l.displs, recv, l.counts[m], DataType::kInt32,
                           root, options);
  const std::string what =
      strFormat("scatterv root=%d %s", root, inPlace ? "in-place" : "out-of-place");
  if (!s.ok()) return what + ": " + s.toString() + "\n";
  for (std::size_t j = 0; j < l.counts[m]; ++j) {
    if (recv[j] != valueOf(me, j)) return what + strFormat(": element %zu is %d\n", j, recv[j]);
  }
  return "";
}

class VLayouts : public ::testing::TestWithParam<RegisteredAlgorithm> {};

TEST_P(VLayouts, BlocksOutOfRankOrderArriveWhereTheirDisplacementsSay) {
  const RegisteredAlgorithm& a = GetParam();
  for (int n : {1, 2, 3, 4, 5, 7, 8}) {
    const VLayout layout = reversedLayout(n);
    auto failures = runRanks(n, [&](int, Communicator& comm) -> std::string {
      std::string out;
      for (int root : {0, n - 1, n / 2}) {
        for (bool inPlace : {false, true}) {
          out += a.kind == Collective::kGatherV ? gathervOnce(comm, a.name, layout, root, inPlace)
                                                : scattervOnce(comm, a.name, layout, root, inPlace);
        }
      }
      return out;
    });
    EXPECT_EQ(joinFailures(failures), "") << "n=" << n;
  }
}

INSTANTIATE_TEST_SUITE_P(Registry, VLayouts,
                         ::testing::ValuesIn(registeredAlgorithms(
                             {Collective::kGatherV, Collective::kScatterV})),
                         [](const ::testing::TestParamInfo<RegisteredAlgorithm>& param) {
                           return param.param.testName();
                         });

}  // namespace
}  // namespace tutti::test
