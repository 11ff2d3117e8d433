#pragma once
// The per-rank blocks of a collective's n-block buffer (the output of an all-gather or
// gather, the input of a reduce-scatter or scatter), and the contiguous runs a range of
// blocks occupies. Shared by every algorithm that moves whole blocks or ranges of them.

#include <cstdint>
#include <vector>

#include "schedule/collective.h"
#include "schedule/schedule.h"

namespace tutti {

/// Where rank b's block lies in the n-block buffer and how long it is.
struct RankBlocks {
  std::vector<std::uint64_t> offset;  // elements, per rank
  std::vector<std::uint64_t> count;   // elements, per rank
  std::uint64_t maxCount = 0;         // the longest block

  std::uint64_t offsetOf(int rank) const { return offset[static_cast<std::size_t>(rank)]; }
  std::uint64_t countOf(int rank) const { return count[static_cast<std::size_t>(rank)]; }
  /// The region of `buffer` holding rank's block.
  Region region(BufferKind buffer, int rank) const {
    return {buffer, offsetOf(rank), countOf(rank)};
  }
};

/// The blocks of spec's n-block buffer: uniform collectives i*count; allgatherv, gatherv and
/// scatterv their displacements; reducescatterv the prefix sums of the counts. Other
/// collectives: one block of `count` per rank.
RankBlocks rankBlocks(const CollectiveSpec& spec);

/// Appends to `runs` the regions of `buffer` that the non-empty blocks of ranks
/// [first, last) occupy, merging blocks that lie back to back (also with the last region
/// already in `runs`). One run per message keeps the message count of a range of blocks at
/// one when the layout is contiguous (allgather, reducescatter(v)).
void appendRuns(const RankBlocks& blocks, BufferKind buffer, int first, int last,
                std::vector<Region>& runs);

/// The spec of one phase of a collective whose vector is cut into blocks (an all-reduce as
/// reduce-scatter + all-gather, a broadcast as scatter + all-gather): a reducescatterv,
/// allgatherv or scatterv (`kind`) over `size` ranks (the whole world, or the power-of-two
/// core of a fold, whose ranks keep their numbers) on `rank`, with block i the i-th of
/// `size` nearly equal parts of `whole`'s vector (partOffset/partCount), and the given
/// placement. Other fields (root, dtype, op, segment) are `whole`'s.
CollectiveSpec chunkPhaseSpec(const CollectiveSpec& whole, Collective kind, int size, int rank,
                              bool inPlace);

}  // namespace tutti
