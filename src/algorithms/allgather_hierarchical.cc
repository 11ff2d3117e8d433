// Hierarchical all-gather(v) (DESIGN.md 4, Hierarchy): blocks cross the network once per
// host, carried by every local rank, then spread on each host over shared memory.
//
//   1. inter: column c (local rank c of every host; see hierarchy.h for hosts with fewer
//      ranks) all-gathers its blocks across the hosts, by the group's default flat
//      algorithm: afterwards local rank c of host h holds the block of local rank c of
//      every host;
//   2. intra: each rank sends every block it holds to every other rank of its host, one
//      message per block (direct, round k to local rank j+k).
//
//   host 0: r0 r1   host 1: r2 r3       1. r0 <-> r2 (b0, b2)   r1 <-> r3 (b1, b3)
//                                        2. r0 -> r1: b0, b2     r1 -> r0: b1, b3 ...
//
// Each host's link carries (H-1)/H of the whole output in and out once, where a flat ring
// over n ranks ordered by host carries (n-1)/n across each host boundary (3/4 against 1/2
// of the output at 2 x 2). Cost: an all-gather over H ranks of one block each, then on the
// host every rank receives the H (L-1) blocks it lacks, in H (L-1) messages.
//
// Blocks of several segments are cut into up to 4 pieces (every rank's block alike), and
// the pieces are pipelined between the levels (assemblePipeline): piece p + 1 crosses the
// network while piece p spreads on the hosts. Out of place, each column's phase also copies
// the rank's own piece from its input.

#include <algorithm>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/block_layout.h"
#include "algorithms/hierarchy.h"
#include "algorithms/partition.h"

namespace tutti {
namespace {

// The two phases of the piece `pb` of every rank's block (blockPieces); this rank's piece
// of its own block lies at `inputAt` of its input (out of place).
std::vector<Schedule> agPiece(const CollectiveSpec& spec, const HostPlace& place,
                              const RankBlocks& pb, std::uint64_t inputAt) {
  // 1. Every column this rank serves, across the hosts, into the output. Out of place the
  // column's phase copies this rank's own piece from the input too (in the column of its
  // own block; in any other it has nothing to give).
  std::vector<Schedule> columns;
  for (int c : place.columnsServed(place.host, place.local)) {
    const std::vector<int> members = place.column(c);
    CollectiveSpec ag = groupSpec(spec, Collective::kAllGatherV, 0, place.hosts(), place.host,
                                  spec.inPlace, false);
    ag.counts.assign(members.size(), 0);
    ag.displs.assign(members.size(), 0);
    for (int k = 0; k < place.hosts(); ++k) {
      if (c >= place.localSize(k)) continue;  // host k has no local rank c
      const int owner = place.ranksOf(k)[static_cast<std::size_t>(c)];
      ag.counts[static_cast<std::size_t>(k)] = pb.countOf(owner);
      ag.displs[static_cast<std::size_t>(k)] = pb.offsetOf(owner);
    }
    Schedule phase = buildGroupPhase(ag, members, spec.size);
    if (spec.inPlace) {
      offsetRegions(phase, BufferKind::kInput, ag.displs[static_cast<std::size_t>(place.host)]);
      remapBuffer(phase, BufferKind::kInput, BufferKind::kOutput);
    } else {
      offsetRegions(phase, BufferKind::kInput, inputAt);
    }
    columns.push_back(std::move(phase));
  }

  // 2. On the host: every block this rank carries to every other local rank.
  const std::vector<int>& hostRanks = place.ranksOf(place.host);
  const int localSize = static_cast<int>(hostRanks.size());
  ScheduleBuilder b(spec.rank, spec.size);
  const std::vector<int> mine = place.blocksServed(place.host, place.local);
  for (int k = 1; k < localSize; ++k) {
    const int to = hostRanks[static_cast<std::size_t>((place.local + k) % localSize)];
    const int fromLocal = (place.local - k + localSize) % localSize;
    const int from = hostRanks[static_cast<std::size_t>(fromLocal)];
    // One block each way in turn, so that the sends to `to` and the receives from `from`
    // drain together whatever the window.
    const std::vector<int> theirs = place.blocksServed(place.host, fromLocal);
    for (std::size_t i = 0; i < std::max(mine.size(), theirs.size()); ++i) {
      if (i < mine.size() && pb.countOf(mine[i]) > 0)
        b.send(to, pb.region(BufferKind::kOutput, mine[i]));
      if (i < theirs.size() && pb.countOf(theirs[i]) > 0)
        b.recv(from, pb.region(BufferKind::kOutput, theirs[i]));
    }
  }

  std::vector<Schedule> phases;
  phases.push_back(sideBySide(spec, std::move(columns)));
  phases.push_back(std::move(b).build());
  return phases;
}

}  // namespace

Schedule buildAllgatherHierarchical(const CollectiveSpec& spec) {
  const HostPlace place(spec);
  const RankBlocks blocks = rankBlocks(spec);
  const auto pieces = static_cast<std::uint64_t>(pipelinePieces(spec, blocks.maxCount));
  const std::uint64_t own = blocks.countOf(spec.rank);
  std::vector<std::vector<Schedule>> all;
  for (std::uint64_t p = 0; p < pieces; ++p)
    all.push_back(agPiece(spec, place, blockPieces(blocks, pieces, p), partOffset(own, pieces, p)));
  return assemblePipeline(spec, std::move(all));
}

}  // namespace tutti
