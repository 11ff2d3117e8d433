#include "algorithms/subtree_blocks.h"

#include "algorithms/patterns/binomial_tree.h"
#include "base/assert.h"

namespace tutti {

RankBlocks rankBlocks(const CollectiveSpec& spec) {
  TUTTI_ASSERT(spec.kind == Collective::kGather || spec.kind == Collective::kGatherV ||
               spec.kind == Collective::kScatter || spec.kind == Collective::kScatterV);
  const auto n = static_cast<std::size_t>(spec.size);
  const bool v = spec.kind == Collective::kGatherV || spec.kind == Collective::kScatterV;
  // Uniform kinds: block i at i * count; v-kinds: where counts/displs put it (the same
  // arrays on every rank, so every rank computes every other's layout).
  RankBlocks blocks;
  blocks.offset.resize(n);
  blocks.count.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    blocks.offset[i] = v ? spec.displs[i] : i * spec.count;
    blocks.count[i] = v ? spec.counts[i] : spec.count;
  }
  return blocks;
}

std::uint64_t SubtreeLayout::offsetOf(int relative) const {
  TUTTI_ASSERT(relative >= first && relative <= first + size);
  return packedOffset[static_cast<std::size_t>(relative - first)];
}

SubtreeLayout subtreeLayout(const RankBlocks& blocks, int rank, int root, int n) {
  // The subtree is relative ranks [first, first + size), packed in that order: the subtree
  // root's own block first, then each child's subtree, nearest child first.
  SubtreeLayout layout;
  layout.first = relativeRank(rank, root, n);
  layout.size = binomialSubtreeSize(rank, root, n);
  layout.packedOffset.resize(static_cast<std::size_t>(layout.size) + 1);
  std::uint64_t running = 0;
  for (int i = 0; i < layout.size; ++i) {
    layout.packedOffset[static_cast<std::size_t>(i)] = running;
    running += blocks.count[static_cast<std::size_t>(absoluteRank(layout.first + i, root, n))];
  }
  layout.packedOffset.back() = running;
  return layout;
}

std::vector<Piece> rootPieces(const RankBlocks& blocks, const SubtreeLayout& layout, int root,
                              int n) {
  // Walk the subtree in packed order and cut wherever the next block does not follow the
  // previous one in the root's buffer (the wrap past rank n-1, or v-displacements).
  std::vector<Piece> pieces;
  for (int i = 0; i < layout.size; ++i) {
    const auto a = static_cast<std::size_t>(absoluteRank(layout.first + i, root, n));
    const std::uint64_t count = blocks.count[a];
    if (count == 0) continue;
    const std::uint64_t packed = layout.packedOffset[static_cast<std::size_t>(i)];
    // Extend the current piece when this block follows it in the buffer too (packed, the
    // blocks always follow each other).
    if (!pieces.empty() && pieces.back().buffer + pieces.back().count == blocks.offset[a]) {
      TUTTI_ASSERT_CMP(pieces.back().packed + pieces.back().count, ==, packed);
      pieces.back().count += count;
      continue;
    }
    pieces.push_back({packed, blocks.offset[a], count});
  }
  return pieces;
}

}  // namespace tutti
