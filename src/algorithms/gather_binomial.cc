// Binomial-tree gather and gatherv to any root.
//
// Ranks are numbered relative to the root (patterns/binomial_tree.h); the subtree of every
// rank is a contiguous run of relative ranks. Each rank assembles its subtree's blocks, its
// own first, packed in relative-rank order (subtree_blocks.h): a leaf's subtree is just its
// input, an interior rank copies its input into scratch and receives each child's packed
// subtree right after the blocks before it. When all are in, it sends the packed subtree to
// its parent as one message. The root receives each child's subtree straight into its
// output: relative order is absolute order shifted by the root, so a subtree that wraps
// past rank n-1 arrives as two messages (two *pieces*); with gatherv's arbitrary
// displacements a subtree of more than two pieces arrives as one message in scratch and is
// copied out piece by piece.
//
// Steps: a rank with c children receives c messages and sends one (two at most to the
// root). Bytes on the wire: every rank sends its subtree once; the root receives (n-1) N
// for N bytes per rank, the subtree of relative rank v holds min(lowbit(v), n-v) blocks.
// Cost: ceil(log2 n) alpha + (n-1) N beta (the root's link carries everything; the alpha
// term is log n rounds instead of the direct gather's n-1 messages at the root).
// Limitations: interior ranks need scratch for their subtree (up to half of the gathered
// data for the root's largest child); gatherv's staged subtrees cost the root a copy.
// Blocks of zero elements take no space and subtrees without elements send nothing.
//
//   n = 5, root 3 (relative ranks in brackets); rank 2 (v4) and rank 0 (v2) gather:
//
//     r4 [v1] --b4---------------> r3 (root)
//     r0 [v2] <--b1-- r1 [v3]      r0 sends b0 b1 --> r3, one message
//     r2 [v4] --b2---------------> r3
//
//   With root 3, the root's child r2 [v4] is its own subtree; for n = 6 and root 3 the
//   child v4 holds v4, v5 = ranks 1, 2 and the child v2 holds v2, v3 = ranks 5, 0: that
//   subtree wraps, so r5 sends b5 and b0 as two messages, into output blocks 5 and 0.
//
// Local hazards: an interior rank's send reads the packed scratch, so it depends on the copy
// of its own block and on every receive from its children. The root's staged copies depend
// on their receive.

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/patterns/binomial_tree.h"
#include "algorithms/subtree_blocks.h"
#include "base/assert.h"

namespace tutti {
namespace {

// The root: its own block (unless already in place), then every child's subtree.
Schedule gatherAtRoot(const CollectiveSpec& spec, const RankBlocks& blocks) {
  const int n = spec.size;
  const int root = spec.root;
  ScheduleBuilder b(root, n);
  const auto me = static_cast<std::size_t>(root);
  if (!spec.inPlace && blocks.count[me] > 0)
    b.copy({BufferKind::kInput, 0, blocks.count[me]},
           {BufferKind::kOutput, blocks.offset[me], blocks.count[me]});
  struct Staged {
    StepId recv;
    std::uint64_t at;
    std::vector<Piece> pieces;
  };
  std::vector<Staged> staged;
  std::uint64_t scratch = 0;
  // Every receive first, so that all are posted at once; copies out of scratch after.
  for (int i = 0; i < binomialChildCount(root, root, n); ++i) {
    const int child = binomialChild(root, root, n, i);
    const SubtreeLayout theirs = subtreeLayout(blocks, child, root, n);
    std::vector<Piece> pieces = rootPieces(blocks, theirs, root, n);
    if (pieces.size() <= kMaxDirectPieces) {
      for (const Piece& p : pieces) b.recv(child, {BufferKind::kOutput, p.buffer, p.count});
      continue;
    }
    StepId recv = b.recv(child, {BufferKind::kScratch, scratch, theirs.total()});
    staged.push_back({recv, scratch, std::move(pieces)});
    scratch += theirs.total();
  }
  b.reserveScratch(scratch);
  for (const Staged& s : staged) {
    for (const Piece& p : s.pieces)
      b.copy({BufferKind::kScratch, s.at + p.packed, p.count},
             {BufferKind::kOutput, p.buffer, p.count}, {s.recv});
  }
  return std::move(b).build();
}

}  // namespace

Schedule buildGatherBinomial(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  const int root = spec.root;
  const RankBlocks blocks = rankBlocks(spec);
  if (r == root) return gatherAtRoot(spec, blocks);
  ScheduleBuilder b(r, n);
  const SubtreeLayout mine = subtreeLayout(blocks, r, root, n);
  if (mine.total() == 0) return std::move(b).build();
  const std::uint64_t own = blocks.count[static_cast<std::size_t>(r)];
  const int children = binomialChildCount(r, root, n);
  // A leaf's packed subtree is its input; an interior rank assembles its own in scratch.
  const BufferKind packed = children == 0 ? BufferKind::kInput : BufferKind::kScratch;
  std::vector<StepId> ready;
  if (children > 0) {
    b.reserveScratch(mine.total());
    if (own > 0)
      ready.push_back(b.copy({BufferKind::kInput, 0, own}, {BufferKind::kScratch, 0, own}));
    // Nearest child (v + 1) first: its subtree is the quickest to assemble.
    for (int i = children - 1; i >= 0; --i) {
      const int child = binomialChild(r, root, n, i);
      const SubtreeLayout theirs = subtreeLayout(blocks, child, root, n);
      if (theirs.total() == 0) continue;
      ready.push_back(
          b.recv(child, {BufferKind::kScratch, mine.offsetOf(theirs.first), theirs.total()}));
    }
  }
  const int parent = binomialParent(r, root, n);
  std::vector<Piece> pieces;
  if (parent == root) pieces = rootPieces(blocks, mine, root, n);
  if (parent != root || pieces.size() > kMaxDirectPieces) pieces = {Piece{0, 0, mine.total()}};
  for (const Piece& p : pieces) {
    StepId send = b.send(parent, {packed, p.packed, p.count});
    for (StepId d : ready) b.addDependency(send, d);
  }
  return std::move(b).build();
}

}  // namespace tutti
