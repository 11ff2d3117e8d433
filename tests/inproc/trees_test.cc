// The tree algorithms over real TCP, ranks as threads, in the shapes the registry-wide test
// (collectives_test.cc) does not reach: buffers of many pipelining segments (several
// segments in flight down and up the trees at once), and gatherv/scatterv layouts whose
// blocks lie out of rank order, so the root stages subtrees in scratch. Every element is
// checked against an expectation computed here or by tests/common/collective_check.h.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/strings.h"
#include "common/collective_check.h"
#include "common/threads.h"
#include "tutti/communicator.h"

namespace tutti::test {
namespace {

// 3 MiB of float32 plus an odd tail: six 512 KiB segments (three per half for the double
// binary tree), with the last segments of unequal length.
constexpr std::size_t kLarge = (3u << 20) / 4 + 5;

TEST(Trees, LargeBuffersPipelineThroughManySegments) {
  for (int n : {3, 5, 8}) {
    std::vector<CollectiveCase> cases;
    auto add = [&](Collective kind, const char* algorithm, DataType dtype, ReduceOp op, int root,
                   bool inPlace) {
      CollectiveCase c;
      c.kind = kind;
      c.count = kLarge;
      c.dtype = dtype;
      c.op = op;
      c.root = root;
      c.inPlace = inPlace;
      c.algorithm = algorithm;
      cases.push_back(c);
    };
    add(Collective::kBroadcast, "binomial", DataType::kFloat32, ReduceOp::kSum, n - 1, false);
    add(Collective::kBroadcast, "double_binary_tree", DataType::kFloat32, ReduceOp::kSum, 1, true);
    add(Collective::kBroadcast, "scatter_allgather", DataType::kFloat64, ReduceOp::kSum, n / 2, true);
    add(Collective::kBroadcast, "scatter_allgather", DataType::kInt8, ReduceOp::kSum, n - 1, false);
    add(Collective::kReduce, "binomial", DataType::kFloat32, ReduceOp::kSum, n / 2, false);
    add(Collective::kReduce, "binomial", DataType::kInt32, ReduceOp::kMax, 0, true);
    add(Collective::kAllReduce, "double_binary_tree", DataType::kFloat32, ReduceOp::kSum, 0, false);
    add(Collective::kAllReduce, "double_binary_tree", DataType::kFloat32, ReduceOp::kAvg, 0, true);
    add(Collective::kAllReduce, "reduce_bcast", DataType::kInt32, ReduceOp::kMin, 0, true);
    auto failures = runRanks(n, [&](int, Communicator& comm) -> std::string {
      std::string out;
      for (const CollectiveCase& c : cases) out += runAndCheck(comm, c);
      return out;
    });
    EXPECT_EQ(joinFailures(failures), "") << "n=" << n;
  }
}

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

std::string gathervOnce(Communicator& comm, const VLayout& l, int root, bool inPlace) {
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
  options.algorithm = "binomial";
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

std::string scattervOnce(Communicator& comm, const VLayout& l, int root, bool inPlace) {
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
  options.algorithm = "binomial";
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

TEST(Trees, GathervAndScattervWithBlocksOutOfRankOrder) {
  for (int n : {1, 2, 3, 4, 5, 7, 8}) {
    const VLayout layout = reversedLayout(n);
    auto failures = runRanks(n, [&](int, Communicator& comm) -> std::string {
      std::string out;
      for (int root : {0, n - 1, n / 2}) {
        for (bool inPlace : {false, true}) {
          out += gathervOnce(comm, layout, root, inPlace);
          out += scattervOnce(comm, layout, root, inPlace);
        }
      }
      return out;
    });
    EXPECT_EQ(joinFailures(failures), "") << "n=" << n;
  }
}

}  // namespace
}  // namespace tutti::test
