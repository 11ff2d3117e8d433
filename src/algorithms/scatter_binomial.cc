// Binomial-tree scatter and scatterv from any root: the gather run backwards.
//
// Ranks are numbered relative to the root (patterns/binomial_tree.h); every subtree is a
// contiguous run of relative ranks. The root sends each child, farthest first, the
// blocks of that child's whole subtree; every interior rank receives its subtree packed in
// relative-rank order into scratch (subtree_blocks.h), copies its own block (the first) to
// its output and sends each child its part of the packed subtree. A leaf receives its block
// straight into its output. From the root's input, a subtree that wraps past rank n-1 goes
// as two messages (two *pieces*); with scatterv's arbitrary displacements a subtree of more
// than two pieces is first copied together in the root's scratch and goes as one message.
//
// Steps: every rank but the root receives one message (two at most from the root) and
// sends one per child. Bytes on the wire: the root sends (n-1) N for N bytes per rank; the
// subtree of relative rank v holds min(lowbit(v), n-v) blocks, sent once.
// Cost: ceil(log2 n) alpha + (n-1) N beta (the root's link carries everything, in
// ceil(log2 n) messages instead of the direct scatter's n-1).
// Limitations: interior ranks need scratch for their subtree (up to half of the data for
// the root's largest child); scatterv's staged subtrees cost the root a copy. Blocks of
// zero elements take no space and subtrees without elements receive nothing.
//
//   n = 6, root 3 (relative ranks in brackets): the root sends b1 b2 to r1 [v4], b5 b0
//   to r5 [v2] (two pieces: the subtree wraps), b4 to r4 [v1]; r1 forwards b2 to r2 [v5]
//   and r5 forwards b0 to r0 [v3].
//
//          r3
//        /  |  \     (sent left to right)
//      r1  r5  r4
//      |    |
//      r2  r0
//
// Local hazards: an interior rank's copy and sends read the scratch its receive(s) wrote,
// so they depend on those receives. The root's staged sends depend on their copies.

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/patterns/binomial_tree.h"
#include "algorithms/subtree_blocks.h"
#include "base/assert.h"

namespace tutti {
namespace {

// The root: its own block (unless already in place), then every child's subtree.
Schedule scatterFromRoot(const CollectiveSpec& spec, const RankBlocks& blocks) {
  const int n = spec.size;
  const int root = spec.root;
  ScheduleBuilder b(root, n);
  const auto me = static_cast<std::size_t>(root);
  if (!spec.inPlace && blocks.count[me] > 0)
    b.copy({BufferKind::kInput, blocks.offset[me], blocks.count[me]},
           {BufferKind::kOutput, 0, blocks.count[me]});
  const int children = binomialChildCount(root, root, n);
  std::vector<std::vector<Piece>> pieces(static_cast<std::size_t>(children));
  std::vector<std::uint64_t> totals(pieces.size(), 0), stagedAt(pieces.size(), 0);
  std::vector<std::vector<StepId>> copies(pieces.size());
  std::uint64_t scratch = 0;
  // Staging copies first: they run as soon as they are issued and never hold up the sends.
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    const SubtreeLayout theirs =
        subtreeLayout(blocks, binomialChild(root, root, n, static_cast<int>(i)), root, n);
    pieces[i] = rootPieces(blocks, theirs, root, n);
    totals[i] = theirs.total();
    if (pieces[i].size() <= kMaxDirectPieces) continue;
    stagedAt[i] = scratch;
    for (const Piece& p : pieces[i])
      copies[i].push_back(b.copy({BufferKind::kInput, p.buffer, p.count},
                                 {BufferKind::kScratch, scratch + p.packed, p.count}));
    scratch += totals[i];
  }
  b.reserveScratch(scratch);
  for (std::size_t i = 0; i < pieces.size(); ++i) {  // farthest child first
    const int child = binomialChild(root, root, n, static_cast<int>(i));
    if (pieces[i].size() <= kMaxDirectPieces) {
      for (const Piece& p : pieces[i]) b.send(child, {BufferKind::kInput, p.buffer, p.count});
      continue;
    }
    StepId send = b.send(child, {BufferKind::kScratch, stagedAt[i], totals[i]});
    for (StepId d : copies[i]) b.addDependency(send, d);
  }
  return std::move(b).build();
}

}  // namespace

Schedule buildScatterBinomial(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  const int root = spec.root;
  const RankBlocks blocks = rankBlocks(spec);
  if (r == root) return scatterFromRoot(spec, blocks);
  ScheduleBuilder b(r, n);
  const SubtreeLayout mine = subtreeLayout(blocks, r, root, n);
  if (mine.total() == 0) return std::move(b).build();
  const int children = binomialChildCount(r, root, n);
  // A leaf's packed subtree is its own block, received in place; others unpack scratch.
  const BufferKind packed = children == 0 ? BufferKind::kOutput : BufferKind::kScratch;
  if (children > 0) b.reserveScratch(mine.total());
  const int parent = binomialParent(r, root, n);
  std::vector<Piece> pieces;
  if (parent == root) pieces = rootPieces(blocks, mine, root, n);
  if (parent != root || pieces.size() > kMaxDirectPieces) pieces = {Piece{0, 0, mine.total()}};
  std::vector<StepId> got;
  for (const Piece& p : pieces) got.push_back(b.recv(parent, {packed, p.packed, p.count}));
  if (children == 0) return std::move(b).build();
  auto afterReceives = [&](StepId step) {
    for (StepId d : got) b.addDependency(step, d);
  };
  const std::uint64_t own = blocks.count[static_cast<std::size_t>(r)];
  if (own > 0) afterReceives(b.copy({BufferKind::kScratch, 0, own}, {BufferKind::kOutput, 0, own}));
  for (int i = 0; i < children; ++i) {  // farthest child first
    const int child = binomialChild(r, root, n, i);
    const SubtreeLayout theirs = subtreeLayout(blocks, child, root, n);
    if (theirs.total() == 0) continue;
    afterReceives(
        b.send(child, {BufferKind::kScratch, mine.offsetOf(theirs.first), theirs.total()}));
  }
  return std::move(b).build();
}

}  // namespace tutti
