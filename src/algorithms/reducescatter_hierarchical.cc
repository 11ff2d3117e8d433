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

#include <algorithm>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/block_layout.h"
#include "algorithms/hierarchy.h"

namespace tutti {

Schedule buildReducescatterHierarchical(const CollectiveSpec& spec) {
  const HostPlace place(spec);
  const RankBlocks blocks = rankBlocks(spec);  // of the input
  const std::vector<int>& hostRanks = place.ranksOf(place.host);
  const int localSize = static_cast<int>(hostRanks.size());
  const std::vector<int> mine = place.blocksServed(place.host, place.local);

  // Where each carried block's partial sum lies in scratch.
  std::vector<std::uint64_t> carryAt(mine.size(), 0);
  std::uint64_t carry = 0;
  for (std::size_t i = 0; i < mine.size(); ++i) {
    carryAt[i] = carry;
    carry += blocks.countOf(mine[i]);
  }
  auto carried = [&](std::size_t i) {
    return Region{BufferKind::kScratch, carryAt[i], blocks.countOf(mine[i])};
  };
  ScheduleAssembler out(spec.rank, spec.size, carry);

  // 1. The host's partial sums of the blocks this rank carries.
  ScheduleBuilder b(spec.rank, spec.size);
  b.reserveScratch(carry);
  std::vector<StepId> last(mine.size());
  std::vector<bool> started(mine.size(), false);
  for (int k = 1; k < localSize; ++k) {
    const int toLocal = (place.local + k) % localSize;
    const int to = hostRanks[static_cast<std::size_t>(toLocal)];
    const int from = hostRanks[static_cast<std::size_t>((place.local - k + localSize) % localSize)];
    const std::vector<int> theirs = place.blocksServed(place.host, toLocal);
    for (std::size_t i = 0; i < std::max(mine.size(), theirs.size()); ++i) {
      if (i < theirs.size() && blocks.countOf(theirs[i]) > 0)
        b.send(to, blocks.region(BufferKind::kInput, theirs[i]));
      if (i >= mine.size() || blocks.countOf(mine[i]) == 0) continue;
      // The first operand is this rank's own block, read where it lies.
      if (!started[i]) {
        last[i] = b.recvReduce(from, blocks.region(BufferKind::kInput, mine[i]), carried(i));
        started[i] = true;
      } else {
        last[i] = b.recvReduce(from, carried(i), carried(i), {last[i]});
      }
    }
  }
  for (std::size_t i = 0; i < mine.size(); ++i)  // alone on its host
    if (localSize == 1 && blocks.countOf(mine[i]) > 0)
      b.copy(blocks.region(BufferKind::kInput, mine[i]), carried(i));
  std::vector<ScheduleAssembler::PartId> summed;
  if (b.stepCount() > 0) summed.push_back(out.add(std::move(b).build()));

  // 2. Every column this rank serves, across the hosts: from its partial sums in scratch
  // into the owner's output.
  std::uint64_t columnAt = 0;
  for (int c : place.columnsServed(place.host, place.local)) {
    CollectiveSpec rs = groupSpec(spec, Collective::kReduceScatterV, 0, place.hosts(), place.host,
                                  false, false);
    rs.counts.assign(static_cast<std::size_t>(place.hosts()), 0);
    std::uint64_t columnCount = 0;
    for (int k = 0; k < place.hosts(); ++k) {
      if (c >= place.localSize(k)) continue;
      rs.counts[static_cast<std::size_t>(k)] =
          blocks.countOf(place.ranksOf(k)[static_cast<std::size_t>(c)]);
      columnCount += rs.counts[static_cast<std::size_t>(k)];
    }
    Schedule phase = buildGroupPhase(rs, place.column(c), spec.size);
    shiftScratch(phase, carry);
    offsetRegions(phase, BufferKind::kInput, columnAt);
    remapBuffer(phase, BufferKind::kInput, BufferKind::kScratch);
    phase.scratchCount = std::max(phase.scratchCount, carry);
    columnAt += columnCount;
    if (!phase.steps.empty()) out.add(std::move(phase), summed);
  }
  return std::move(out).build();
}

}  // namespace tutti
