// Binomial-tree reduce to any root, pipelined in segments.
//
// The broadcast tree run backwards (patterns/binomial_tree.h): for each segment of at most
// spec.segmentCount elements, every rank combines its own input with the partial results of
// its children, nearest child (v + 1) first (a fixed order, so the result does not depend on
// timing), and sends the combination to its parent; the root's last combination finalizes
// (kAvg divides there, once). Segment g+1 climbs the tree while segment g is combined
// above it.
//
// Steps per rank, per segment: one recvReduce per child (the last one fused with the send
// to the parent as recvReduceSend), or one send for a leaf. Bytes on the wire: every rank
// but the root sends N once; the root receives ceil(log2 n) * N. Cost, k = ceil(log2 n):
//   unsegmented:  k (alpha + N beta + N gamma)
//   pipelined:    about (S + k - 1) * k * (alpha + N/S (beta + gamma)); for large N the
//                 root's k receives and combinations of every segment dominate.
// A latency algorithm, like the binomial broadcast. Any n, any root. The operator must be
// commutative (all of tutti's are): children's partial results cover non-adjacent ranks.
//
//   n = 4, root 0, one segment (v: relative rank; "+=" a recvReduce):
//
//     r3 --in3--> r2                 r2: acc = in2 + (in3)        --acc--> r0
//     r1 --in1--> r0                 r0: out = in0 + (in1); out = out + (acc), finalize
//
// Where the partial result lives: at the root in its output (in place, the input is the
// output, and the first recvReduce combines it with itself as source); on an interior rank
// in scratch of `count` elements (it has no output buffer); a leaf sends its input as is.
// Each combination of a segment depends on the previous one (the same accumulator).

#include <algorithm>

#include "algorithms/algorithm.h"
#include "algorithms/partition.h"
#include "algorithms/patterns/binomial_tree.h"
#include "base/assert.h"

namespace tutti {

Schedule buildReduceBinomial(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  const int root = spec.root;
  ScheduleBuilder b(r, n);
  if (spec.count == 0) return std::move(b).build();
  TUTTI_ASSERT_CMP(spec.segmentCount, >=, 1u);
  const bool isRoot = r == root;
  if (n == 1) {
    // Nothing to combine; the copy (in place: onto itself) carries the finalization.
    b.setFinalize(
        b.copy({BufferKind::kInput, 0, spec.count}, {BufferKind::kOutput, 0, spec.count}));
    return std::move(b).build();
  }
  const int parent = binomialParent(r, root, n);
  const int children = binomialChildCount(r, root, n);
  const BufferKind acc = isRoot ? BufferKind::kOutput : BufferKind::kScratch;
  if (!isRoot && children > 0) b.reserveScratch(spec.count);
  const std::uint64_t segments = std::max<std::uint64_t>(1, ceilDiv(spec.count, spec.segmentCount));
  for (std::uint64_t g = 0; g < segments; ++g) {
    const std::uint64_t offset = partOffset(spec.count, segments, g);
    const std::uint64_t count = partCount(spec.count, segments, g);
    const Region in{BufferKind::kInput, offset, count};
    if (children == 0) {
      b.send(parent, in);
      continue;
    }
    const Region dst{acc, offset, count};
    Region src = in;
    StepId last = 0;
    // Children in reverse index order: the nearest (v + 1, a leaf) first, as it is ready first.
    for (int i = children - 1; i >= 0; --i) {
      const int child = binomialChild(r, root, n, i);
      const bool first = i == children - 1;
      const bool forward = i == 0 && !isRoot;
      StepId step = forward ? b.recvReduceSend(child, parent, src, dst)
                            : b.recvReduce(child, src, dst);
      if (forward) b.setForwardOnly(step);  // a non-root's sum only goes to its parent
      if (!first) b.addDependency(step, last);
      last = step;
      src = dst;
    }
    if (isRoot) b.setFinalize(last);
  }
  return std::move(b).build();
}

}  // namespace tutti
