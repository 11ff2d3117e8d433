// Hierarchical broadcast (DESIGN.md 4, Hierarchy): the root broadcasts to one leader per
// host across the network (the root leads its own host, every other host its first rank),
// then each leader broadcasts on its host over shared memory. The vector crosses each
// host's link once, where a flat tree may send it into a host several times.
//
//   root r (host 1)  --inter-->  leader of host 0, leader of host 2, ...
//   each leader      --intra-->  the other ranks of its host
//
// Vectors of several segments are cut into up to 4 pieces pipelined between the levels:
// piece p + 1 crosses the network while piece p spreads on the hosts. Each level by the
// group's default flat algorithm (a tree over the leaders; direct or a tree on a host).

#include "algorithms/algorithm.h"
#include "algorithms/hierarchy.h"

namespace tutti {
namespace {

std::vector<Schedule> piece(const CollectiveSpec& spec, const HostPlace& place,
                            std::uint64_t offset, std::uint64_t count) {
  const int rootHost = place.map->hostOf[static_cast<std::size_t>(spec.root)];
  std::vector<int> leaders;
  for (int h = 0; h < place.hosts(); ++h) leaders.push_back(place.leader(h, spec.root));
  const int leader = place.leader(place.host, spec.root);

  // 1. The root to the leaders.
  Schedule inter = emptySchedule(spec);
  if (spec.rank == leader) {
    CollectiveSpec bc = groupSpec(spec, Collective::kBroadcast, count, place.hosts(), place.host,
                                  spec.inPlace, false);
    bc.root = rootHost;
    inter = buildGroupPhase(bc, leaders, spec.size);
    offsetRegions(inter, BufferKind::kInput, offset);
    offsetRegions(inter, BufferKind::kOutput, offset);
  }

  // 2. Each leader on its host, in place in the output.
  const std::vector<int>& hostRanks = place.ranksOf(place.host);
  CollectiveSpec bc = groupSpec(spec, Collective::kBroadcast, count, place.localSize(place.host),
                                place.local, true, true);
  bc.root = indexIn(hostRanks, leader);
  Schedule intra = buildGroupPhase(bc, hostRanks, spec.size);
  offsetRegions(intra, BufferKind::kInput, offset);
  offsetRegions(intra, BufferKind::kOutput, offset);
  remapBuffer(intra, BufferKind::kInput, BufferKind::kOutput);

  std::vector<Schedule> phases;
  phases.push_back(std::move(inter));
  phases.push_back(std::move(intra));
  return phases;
}

}  // namespace

Schedule buildBroadcastHierarchical(const CollectiveSpec& spec) {
  return buildInPieces(spec, piece);
}

}  // namespace tutti
