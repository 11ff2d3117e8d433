// Binomial-tree broadcast from any root, pipelined in segments.
//
// Ranks are numbered relative to the root (patterns/binomial_tree.h). The buffer is cut into
// S segments of at most spec.segmentCount elements; for each segment every rank receives it
// from its parent and forwards it to its children, farthest first (the child whose subtree
// needs the most rounds), so segment g+1 leaves the root while segment g is still
// travelling down the tree.
//
// Steps per rank: S receives (none at the root) and S * children sends. Bytes on the wire:
// the root sends ceil(log2 n) * N for N bytes, an interior rank (children) * N, a leaf
// nothing. Cost (alpha-beta), with k = ceil(log2 n):
//   unsegmented (S = 1):  k (alpha + N beta)
//   pipelined:            about (S + k - 1) * k * (alpha + N/S beta); as S grows the root's
//                         k sends of every segment dominate: k N beta.
// So it is a latency algorithm: log n rounds, but the root sends the whole buffer k times
// (ring or double binary tree are better for large N). Any n, any root.
//
//   n = 6, root 2: relative ranks v = (r - 2) mod 6; the root sends each segment to
//   v = 4, 2, 1 (ranks 0, 4, 3) and v = 4, 2 forward it to v = 5, 3 (ranks 1, 5):
//
//        r2 (v0)
//       /   |   \     (sent in this order, left to right)
//     r0   r4   r3
//     |     |
//     r1   r5
//
// Local hazards: a forwarding rank sends a segment from its output, where the receive of
// that segment wrote it, so each send depends on that receive. The root sends from its input
// (in place, that is the output itself; out of place a copy fills its output, which no send
// reads).

#include "algorithms/algorithm.h"
#include "algorithms/partition.h"
#include "algorithms/patterns/binomial_tree.h"
#include "base/assert.h"

namespace tutti {

Schedule buildBroadcastBinomial(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  const int root = spec.root;
  ScheduleBuilder b(r, n);
  if (spec.count == 0) return std::move(b).build();
  TUTTI_ASSERT_CMP(spec.segmentCount, >=, 1u);
  const bool isRoot = r == root;
  if (isRoot && !spec.inPlace)
    b.copy({BufferKind::kInput, 0, spec.count}, {BufferKind::kOutput, 0, spec.count});
  const int parent = binomialParent(r, root, n);
  const int children = binomialChildCount(r, root, n);
  const std::uint64_t segments = std::max<std::uint64_t>(1, ceilDiv(spec.count, spec.segmentCount));
  for (std::uint64_t g = 0; g < segments; ++g) {
    const std::uint64_t offset = partOffset(spec.count, segments, g);
    const std::uint64_t count = partCount(spec.count, segments, g);
    if (isRoot) {
      for (int i = 0; i < children; ++i)
        b.send(binomialChild(r, root, n, i), {BufferKind::kInput, offset, count});
      continue;
    }
    const Region out{BufferKind::kOutput, offset, count};
    const StepId got = b.recv(parent, out);
    for (int i = 0; i < children; ++i) b.send(binomialChild(r, root, n, i), out, {got});
  }
  return std::move(b).build();
}

}  // namespace tutti
