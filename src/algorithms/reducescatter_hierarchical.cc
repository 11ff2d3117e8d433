// Hierarchical reduce-scatter(v) (DESIGN.md 4, Hierarchy), the all-gather's mirror: blocks
// are first reduced on each host over shared memory, then across the network once per host,
// carried by every local rank.
//
//   1. intra: local rank j of host h collects, for every block it carries (hierarchy.h:
//      blocksServed: local rank c of every host, for each column c it serves), the host's
//      partial sum: it reduces its own input's block with every other local rank's, which
//      each sends one message per block (direct, round k from local rank j-k). The sums
//      lie in scratch, column by column, host by host;
//   2. inter: column c reduce-scatters those partial sums across the hosts by the group's
//      default flat algorithm, so local rank c of every host ends with its block reduced
//      over the world.
//
// Each host's link carries (H-1)/H of the input once, where a flat ring ordered by host
// carries (n-1)/n across each host boundary. The intra-host sums are partial; the average's
// division happens once, in the inter-host phase.
//
// Blocks of several segments are cut into up to 4 pieces (every rank's block alike), and
// the pieces are pipelined between the levels (assemblePipeline): piece p + 1 is summed on
// the host while piece p crosses the network. Each piece's sums have scratch of their own
// (piece by piece, column by column, host by host: every column's sums are one vector), so
// the pieces need no more scratch than the whole blocks.

#include <algorithm>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/block_layout.h"
#include "algorithms/hierarchy.h"
#include "algorithms/partition.h"

namespace tutti {
namespace {

// The two phases of the piece `pb` of every rank's block (blockPieces): its partial sums lie
// in the shared scratch [0, sharedScratch) from `carryBase`, and this rank's piece of its
// own block at `outputAt` of its output.
std::vector<Schedule> rsPiece(const CollectiveSpec& spec, const HostPlace& place,
                              const RankBlocks& pb, std::uint64_t carryBase,
                              std::uint64_t sharedScratch, std::uint64_t outputAt) {
  const std::vector<int>& hostRanks = place.ranksOf(place.host);
  const int localSize = static_cast<int>(hostRanks.size());
  const std::vector<int> mine = place.blocksServed(place.host, place.local);

  // Where each carried block's partial sum lies in scratch: column by column, host by
  // host, so that each column's sums are one vector.
  std::vector<std::uint64_t> carryAt(mine.size(), 0);
  std::uint64_t carry = carryBase;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    carryAt[i] = carry;
    carry += pb.countOf(mine[i]);
  }
  auto carried = [&](std::size_t i) {
    return Region{BufferKind::kScratch, carryAt[i], pb.countOf(mine[i])};
  };

  // 1. The host's partial sums of the blocks this rank carries.
  ScheduleBuilder b(spec.rank, spec.size);
  b.reserveScratch(sharedScratch);
  std::vector<StepId> last(mine.size());
  std::vector<bool> started(mine.size(), false);
  for (int k = 1; k < localSize; ++k) {
    const int toLocal = (place.local + k) % localSize;
    const int to = hostRanks[static_cast<std::size_t>(toLocal)];
    const int from = hostRanks[static_cast<std::size_t>((place.local - k + localSize) % localSize)];
    const std::vector<int> theirs = place.blocksServed(place.host, toLocal);
    for (std::size_t i = 0; i < std::max(mine.size(), theirs.size()); ++i) {
      if (i < theirs.size() && pb.countOf(theirs[i]) > 0)
        b.send(to, pb.region(BufferKind::kInput, theirs[i]));
      if (i >= mine.size() || pb.countOf(mine[i]) == 0) continue;
      // The first operand is this rank's own block, read where it lies.
      if (!started[i]) {
        last[i] = b.recvReduce(from, pb.region(BufferKind::kInput, mine[i]), carried(i));
        started[i] = true;
      } else {
        last[i] = b.recvReduce(from, carried(i), carried(i), {last[i]});
      }
    }
  }
  for (std::size_t i = 0; i < mine.size(); ++i)  // alone on its host
    if (localSize == 1 && pb.countOf(mine[i]) > 0)
      b.copy(pb.region(BufferKind::kInput, mine[i]), carried(i));

  // 2. Every column this rank serves, across the hosts: from its partial sums in scratch
  // into the owner's output.
  std::vector<Schedule> columns;
  std::uint64_t columnAt = carryBase;
  for (int c : place.columnsServed(place.host, place.local)) {
    CollectiveSpec rs = groupSpec(spec, Collective::kReduceScatterV, 0, place.hosts(), place.host,
                                  false, false);
    rs.counts.assign(static_cast<std::size_t>(place.hosts()), 0);
    std::uint64_t columnCount = 0;
    for (int k = 0; k < place.hosts(); ++k) {
      if (c >= place.localSize(k)) continue;
      rs.counts[static_cast<std::size_t>(k)] =
          pb.countOf(place.ranksOf(k)[static_cast<std::size_t>(c)]);
      columnCount += rs.counts[static_cast<std::size_t>(k)];
    }
    Schedule phase = buildGroupPhase(rs, place.column(c), spec.size);
    shiftScratch(phase, sharedScratch);
    offsetRegions(phase, BufferKind::kInput, columnAt);
    remapBuffer(phase, BufferKind::kInput, BufferKind::kScratch);
    // Only the column of this rank's own block writes output (elsewhere its count is 0).
    offsetRegions(phase, BufferKind::kOutput, outputAt);
    phase.scratchCount = std::max(phase.scratchCount, sharedScratch);
    columnAt += columnCount;
    columns.push_back(std::move(phase));
  }

  std::vector<Schedule> phases;
  phases.push_back(std::move(b).build());
  phases.push_back(sideBySide(spec, std::move(columns), sharedScratch));
  return phases;
}

}  // namespace

Schedule buildReducescatterHierarchical(const CollectiveSpec& spec) {
  const HostPlace place(spec);
  const RankBlocks blocks = rankBlocks(spec);  // of the input
  const std::vector<int> mine = place.blocksServed(place.host, place.local);
  // Every piece's partial sums have scratch of their own: as much as the whole blocks'.
  std::uint64_t carry = 0;
  for (int q : mine) carry += blocks.countOf(q);
  const auto pieces = static_cast<std::uint64_t>(pipelinePieces(spec, blocks.maxCount));
  const std::uint64_t own = blocks.countOf(spec.rank);
  std::vector<std::vector<Schedule>> all;
  std::uint64_t carryBase = 0;
  for (std::uint64_t p = 0; p < pieces; ++p) {
    const RankBlocks pb = blockPieces(blocks, pieces, p);
    all.push_back(rsPiece(spec, place, pb, carryBase, carry, partOffset(own, pieces, p)));
    for (int q : mine) carryBase += pb.countOf(q);
  }
  return assemblePipeline(spec, std::move(all), carry);
}

}  // namespace tutti
