#pragma once
// Where the blocks of a binomial gather(v) or scatter(v) travel (gather_binomial.cc,
// scatter_binomial.cc). A binomial subtree is a contiguous run of relative ranks
// (patterns/binomial_tree.h), so a rank keeps its subtree's blocks *packed*: back to back, in
// relative-rank order, and moves them as one message. The root's buffer is in absolute-rank
// order (gather, scatter) or at arbitrary displacements (the v-variants), so where a child
// of the root meets that buffer its packed blocks are cut into *pieces*, maximal runs that
// also lie back to back in the root's buffer. Gather's and scatter's subtrees that wrap
// around rank n-1 make two pieces; a subtree with more pieces (v-variants with scattered
// displacements) travels as one message staged in the root's scratch space instead.

#include <cstdint>
#include <vector>

#include "schedule/collective.h"

namespace tutti {

/// Each absolute rank's block in the root's buffer: offset and count, in elements.
struct RankBlocks {
  std::vector<std::uint64_t> offset;
  std::vector<std::uint64_t> count;
};

/// The blocks of a gather, gatherv, scatter or scatterv call (from count, or counts/displs).
RankBlocks rankBlocks(const CollectiveSpec& spec);

/// The packed layout of one rank's subtree.
struct SubtreeLayout {
  int first = 0;  // relative rank of the subtree's root
  int size = 0;   // ranks in the subtree
  /// size + 1 entries: packed offset of relative rank first + i; the last is the total.
  std::vector<std::uint64_t> packedOffset;

  std::uint64_t total() const { return packedOffset.back(); }
  /// Packed offset of relative rank `relative`, first <= relative <= first + size.
  std::uint64_t offsetOf(int relative) const;
};

/// The packed layout of the subtree of `rank` in the binomial tree rooted at `root`.
SubtreeLayout subtreeLayout(const RankBlocks& blocks, int rank, int root, int n);

/// A run of packed elements that lies back to back in the root's buffer.
struct Piece {
  std::uint64_t packed = 0;  // offset in the packed subtree
  std::uint64_t buffer = 0;  // offset in the root's buffer
  std::uint64_t count = 0;
};

/// The pieces of `layout` (a subtree of a child of the root), in packed order; blocks of
/// zero elements belong to no piece. Empty when the subtree holds no elements.
std::vector<Piece> rootPieces(const RankBlocks& blocks, const SubtreeLayout& layout, int root,
                              int n);

/// The most pieces a child of the root exchanges as separate messages; with more, its
/// subtree travels as one message through the root's scratch space.
inline constexpr std::size_t kMaxDirectPieces = 2;

}  // namespace tutti
