// Double-binary-tree broadcast from any root, pipelined in segments.
//
// Two binary trees rooted at the broadcast root (patterns/double_binary_tree.h) each carry
// half of the buffer. A rank forwards data (is interior) in at most one of them, so where a
// single binary tree would make an interior rank send 2 N, here every rank sends at most
// N: each interior rank forwards its tree's half to two children. Each half is cut into S
// segments of at most spec.segmentCount elements; for each segment a rank receives it from
// its parent in that tree and forwards it to its children there, so segments flow down
// both trees at once.
//
// Steps per rank: per segment and tree, one receive (none at the root) and one send per
// child (0..2). Bytes on the wire: the root sends N (N/2 into each tree), an interior rank
// N (N/2 to two children), a rank that is a leaf in both trees nothing.
// Cost, d = ceil(log2 n) (the trees' depth), S segments of N/(2S) bytes per tree:
//   about (S + d) * 2 * (alpha + N/(2S) beta), i.e. N beta + 2 (S + d) alpha for large N:
//   the bandwidth of a pipelined chain with a log-depth latency term, against the binomial
//   tree's ceil(log2 n) N beta at the root. Any n, any root.
//
//   n = 7, root 0 (positions of the two trees; rank = position in tree 0, sigma^-1 in 1):
//
//     tree 0:  r0 - r4 - {r2 - {r1, r3}, r6 - r5}      first half
//     tree 1:  r0 - r3 - {r5 - {r6, r4}, r1 - r2}      second half
//
//   r2, r4, r6 forward in tree 0 and are leaves of tree 1; r1, r3, r5 the other way round.
//
// Local hazards: a forwarding rank sends a segment from its output after its receive of
// that segment (a dependency). The root sends from its input; out of place a single copy
// fills its output, which no send reads. Messages are created in the same order by every
// rank, segment by segment and tree 0 before tree 1, so both ends of each link agree on
// message indices even when two ranks are linked in both trees.

#include <algorithm>

#include "algorithms/algorithm.h"
#include "algorithms/partition.h"
#include "algorithms/patterns/double_binary_tree.h"
#include "base/assert.h"

namespace tutti {

Schedule buildBroadcastDoubleBinaryTree(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  const int root = spec.root;
  ScheduleBuilder b(r, n);
  if (spec.count == 0) return std::move(b).build();
  TUTTI_ASSERT_CMP(spec.segmentCount, >=, 1u);
  const bool isRoot = r == root;
  if (isRoot && !spec.inPlace)
    b.copy({BufferKind::kInput, 0, spec.count}, {BufferKind::kOutput, 0, spec.count});
  const TreeLinks trees[2] = {dbtLinks(r, root, n, 0), dbtLinks(r, root, n, 1)};
  // Both halves get the same number of segments (the first half is the larger one).
  const std::uint64_t segments =
      std::max<std::uint64_t>(1, ceilDiv(partCount(spec.count, 2, 0), spec.segmentCount));
  for (std::uint64_t g = 0; g < segments; ++g) {
    for (int t = 0; t < 2; ++t) {
      const std::uint64_t half = partCount(spec.count, 2, static_cast<std::uint64_t>(t));
      const std::uint64_t count = partCount(half, segments, g);
      if (count == 0) continue;
      const std::uint64_t offset =
          partOffset(spec.count, 2, static_cast<std::uint64_t>(t)) + partOffset(half, segments, g);
      const TreeLinks& tree = trees[t];
      if (isRoot) {
        for (int i = 0; i < tree.childCount; ++i)
          b.send(tree.children[i], {BufferKind::kInput, offset, count});
        continue;
      }
      const Region out{BufferKind::kOutput, offset, count};
      const StepId got = b.recv(tree.parent, out);
      for (int i = 0; i < tree.childCount; ++i) b.send(tree.children[i], out, {got});
    }
  }
  return std::move(b).build();
}

}  // namespace tutti
