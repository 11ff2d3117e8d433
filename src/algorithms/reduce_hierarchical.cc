// Hierarchical reduce (DESIGN.md 4, Hierarchy): each host reduces to a leader over shared
// memory (the root leads its own host, every other host its first rank), then the leaders
// reduce to the root across the network. Each host's link carries the vector once.
//
//   each host    --intra reduce-->  its leader (the root on the root's host)
//   the leaders  --inter reduce-->  the root
//
// A leader other than the root keeps its host's partial result in scratch (its output
// is the root's only). Vectors of several segments are cut into up to 4 pieces pipelined
// between the levels. The intra-host reductions are partial: the average's division
// happens once, in the inter-host phase.

#include "algorithms/algorithm.h"
#include "algorithms/hierarchy.h"

namespace tutti {
namespace {

// Piece [offset, offset + count); `carry` is scratch [0, spec.count) on a leader that is
// not the root, where the host's partial result waits for the inter-host phase.
std::vector<Schedule> piece(const CollectiveSpec& spec, const HostPlace& place,
                            std::uint64_t offset, std::uint64_t count) {
  const int rootHost = place.map->hostOf[static_cast<std::size_t>(spec.root)];
  std::vector<int> leaders;
  for (int h = 0; h < place.hosts(); ++h) leaders.push_back(place.leader(h, spec.root));
  const int leader = place.leader(place.host, spec.root);
  const bool isRoot = spec.rank == spec.root;
  const bool carries = spec.rank == leader && !isRoot;
  const std::uint64_t carry = carries ? spec.count : 0;  // below each phase's own scratch

  // 1. Reduce on the host to its leader; a leader other than the root into scratch.
  const std::vector<int>& hostRanks = place.ranksOf(place.host);
  // In place matters at the group's root only: on the root's host, where it is the root.
  CollectiveSpec rd = groupSpec(spec, Collective::kReduce, count, place.localSize(place.host),
                                place.local, spec.inPlace && place.host == rootHost, true);
  rd.root = indexIn(hostRanks, leader);
  Schedule intra = buildGroupPhase(rd, hostRanks, spec.size);
  clearFinalize(intra);
  shiftScratch(intra, carry);
  offsetRegions(intra, BufferKind::kInput, offset);
  offsetRegions(intra, BufferKind::kOutput, offset);
  if (carries) remapBuffer(intra, BufferKind::kOutput, BufferKind::kScratch);
  intra.scratchCount = std::max(intra.scratchCount, carry);

  // 2. The leaders reduce to the root: from the carry, in place in the root's output.
  Schedule inter = emptySchedule(spec);
  if (spec.rank == leader) {
    CollectiveSpec rd2 = groupSpec(spec, Collective::kReduce, count, place.hosts(), place.host,
                                   true, false);
    rd2.root = rootHost;
    inter = buildGroupPhase(rd2, leaders, spec.size);
    shiftScratch(inter, carry);
    offsetRegions(inter, BufferKind::kInput, offset);
    offsetRegions(inter, BufferKind::kOutput, offset);
    const BufferKind held = isRoot ? BufferKind::kOutput : BufferKind::kScratch;
    remapBuffer(inter, BufferKind::kInput, held);
    remapBuffer(inter, BufferKind::kOutput, held);
    inter.scratchCount = std::max(inter.scratchCount, carry);
  }

  std::vector<Schedule> phases;
  phases.push_back(std::move(intra));
  phases.push_back(std::move(inter));
  return phases;
}

}  // namespace

Schedule buildReduceHierarchical(const CollectiveSpec& spec) {
  if (spec.count == 0) return emptySchedule(spec);
  // A leader other than the root hands its host's partial result to the inter-host phase
  // in scratch [0, count).
  const HostPlace place(spec);
  const bool carries =
      spec.rank != spec.root && spec.rank == place.leader(place.host, spec.root);
  return buildInPieces(spec, piece, carries ? spec.count : 0);
}

}  // namespace tutti
