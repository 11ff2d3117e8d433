// Double-binary-tree all-reduce (NCCL's tree algorithm), pipelined in segments.
//
// Two binary trees rooted at rank 0 (patterns/double_binary_tree.h) each carry half of the
// buffer; a rank is interior in at most one of them, so the load is even. For every segment
// of at most spec.segmentCount elements of a half:
//   up:   each rank combines its input with its children's partial results (child 0, then
//         child 1: a fixed order) into its output and sends that to its parent; the root's
//         last combination finalizes (kAvg divides there, once);
//   down: each rank receives the finished segment from its parent into its output and
//         forwards it to its children.
// Every rank ends up with the root's bytes, so results are bit-identical on all ranks.
//
// Order: every rank creates its steps in the same sequence of *units* — (up, tree 0,
// segment g), (up, tree 1, g), then (down, tree 0, g - L), (down, tree 1, g - L), for g =
// 0, 1, ... — and each message belongs to one unit on both of its ends, so both ends of a
// link agree on message indices even when two ranks are linked in both trees. The down
// phase lags L = 2 ceil(log2 n) segments behind the up phase, about the time a segment takes
// to climb to the root and come back, so that a rank waiting to forward a finished segment
// does not hold up the combination of the segments behind it (the executor issues steps in
// order).
//
// Steps per rank, per segment and tree: up, one recvReduce per child (the last fused with
// the send to the parent) or one send for a leaf; down, one receive (none at the root) and
// one send per child. Bytes on the wire per rank: about 2 N (N up, N down; interior ranks
// send N/2 to each of two children, every rank sends N/2 up each tree), against the ring's
// 2 (n-1)/n N. Cost, d = the trees' depth (<= ceil(log2 n)), S segments per half:
//   about 2 N beta + N gamma + (4 S + 2 d) alpha (a rank sends four messages per segment:
//   up each tree, and twice down the tree it is interior in): the latency term grows with
//   log n where the ring's 2 (n-1) alpha grows with n, at about the ring's bandwidth.
// The verifier's critical path (rendezvous sends) is 3d - 1 messages rather than 2d: a
// rank takes its second child's partial result only after its first (the fixed combining
// order); a transport that buffers early messages (TCP) hides most of that.
// Any n; the operator must be commutative (all of tutti's are).
//
//   n = 4 (tree 0 carries the first half, tree 1 the second; r0 is both roots):
//
//     tree 0:  r0 - r2 - {r1, r3}        r2 combines in2 + r1 + r3, sends to r0
//     tree 1:  r0 - r3 - {r2, r1}        r3 combines in3 + r2 + r1, sends to r0
//
// Local hazards: within a segment the up combinations chain through the output (each
// depends on the previous); the down receive overwrites the output (in place, the input)
// that the up phase sent from, so it depends on the up phase's last step of its segment;
// down sends depend on the down receive (at the root, on the finalizing combination).

#include <algorithm>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/partition.h"
#include "algorithms/patterns/binomial_tree.h"
#include "algorithms/patterns/double_binary_tree.h"
#include "base/assert.h"

namespace tutti {
namespace {

struct Segment {
  std::uint64_t offset = 0;
  std::uint64_t count = 0;
};

// Up: combine the children's partial results with this rank's input; returns the last step.
StepId reduceUp(ScheduleBuilder& b, const TreeLinks& tree, Segment seg) {
  const Region in{BufferKind::kInput, seg.offset, seg.count};
  const Region out{BufferKind::kOutput, seg.offset, seg.count};
  if (tree.childCount == 0) return b.send(tree.parent, in);
  Region src = in;
  StepId last = 0;
  for (int i = 0; i < tree.childCount; ++i) {
    const bool forward = i == tree.childCount - 1 && tree.parent >= 0;
    StepId step = forward ? b.recvReduceSend(tree.children[i], tree.parent, src, out)
                          : b.recvReduce(tree.children[i], src, out);
    // The partial sum goes up only: the way down overwrites out with the finished segment.
    if (forward) b.setForwardOnly(step);
    if (i > 0) b.addDependency(step, last);
    last = step;
    src = out;
  }
  if (tree.parent < 0) b.setFinalize(last);
  return last;
}

// Down: receive the finished segment (except at the root) and forward it.
void broadcastDown(ScheduleBuilder& b, const TreeLinks& tree, Segment seg, StepId upLast) {
  const Region out{BufferKind::kOutput, seg.offset, seg.count};
  const StepId ready = tree.parent < 0 ? upLast : b.recv(tree.parent, out, {upLast});
  for (int i = 0; i < tree.childCount; ++i) b.send(tree.children[i], out, {ready});
}

}  // namespace

Schedule buildAllreduceDoubleBinaryTree(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  ScheduleBuilder b(r, n);
  if (spec.count == 0) return std::move(b).build();
  TUTTI_ASSERT_CMP(spec.segmentCount, >=, 1u);
  if (n == 1) {
    b.setFinalize(
        b.copy({BufferKind::kInput, 0, spec.count}, {BufferKind::kOutput, 0, spec.count}));
    return std::move(b).build();
  }
  const TreeLinks trees[2] = {dbtLinks(r, 0, n, 0), dbtLinks(r, 0, n, 1)};
  const std::uint64_t segments =
      std::max<std::uint64_t>(1, ceilDiv(partCount(spec.count, 2, 0), spec.segmentCount));
  auto segment = [&](int t, std::uint64_t g) {
    const std::uint64_t half = partCount(spec.count, 2, static_cast<std::uint64_t>(t));
    return Segment{
        partOffset(spec.count, 2, static_cast<std::uint64_t>(t)) + partOffset(half, segments, g),
        partCount(half, segments, g)};
  };
  const auto lag = static_cast<std::uint64_t>(2 * ceilLog2(n));
  std::vector<StepId> upLast[2] = {std::vector<StepId>(segments), std::vector<StepId>(segments)};
  for (std::uint64_t unit = 0; unit < segments + lag; ++unit) {
    for (int t = 0; t < 2 && unit < segments; ++t) {
      const Segment seg = segment(t, unit);
      if (seg.count > 0) upLast[t][unit] = reduceUp(b, trees[t], seg);
    }
    if (unit < lag) continue;
    for (int t = 0; t < 2; ++t) {
      const Segment seg = segment(t, unit - lag);
      if (seg.count > 0) broadcastDown(b, trees[t], seg, upLast[t][unit - lag]);
    }
  }
  return std::move(b).build();
}

}  // namespace tutti
