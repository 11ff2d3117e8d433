// Hierarchical all-reduce (DESIGN.md 4, Hierarchy): an intra-host phase over shared memory,
// an inter-host phase in which each local rank carries its share over the network, and an
// intra-host phase again. Two forms:
//
// hier_rs_ag, for large vectors:
//   1. each host reduce-scatters the vector among its ranks: with P = the fewest ranks any
//      host holds, local rank i < P ends with chunk i of P reduced over its host (ranks
//      i >= P of a larger host contribute and get no chunk);
//   2. column i (local rank i of every host) all-reduces chunk i across the hosts;
//   3. each host all-gathers the P chunks.
//   Each host's network link carries 2 (H-1)/H N over its P columns: for 2 hosts N, where a
//   flat ring over n ranks ordered by host carries 2 (n-1)/n N across each host boundary
//   (1.5 N at 2 x 2). Cost: intra RS + AR(H ranks, N/P) + intra AG, each phase by the
//   group's default flat algorithm.
//
// hier_reduce_bcast, for small vectors: each host reduces to its first rank, those leaders
// all-reduce across the hosts, and each leader broadcasts on its host: one inter-host
// all-reduce of the whole vector, latency 2 intra-host trees + one all-reduce over H.
//
//   host 0: r0 r1 | host 1: r2 r3          RS      AR (columns)     AG
//      r0 [a0 a1]  r1 [b0 b1]   ->  r0: a0+b0   r0 <-> r2: chunk 0   r0, r1: all chunks
//      r2 [c0 c1]  r3 [d0 d1]   ->  r1: a1+b1   r1 <-> r3: chunk 1   ...
//
// Both cut vectors of several segments into up to 4 pieces pipelined between the levels
// (assemblePipeline): piece p + 1 reduces on the host while piece p crosses the network.
// Finalization (the average's division) happens once, in the inter-host phase; the
// intra-host reductions are partial.

#include "algorithms/algorithm.h"
#include "algorithms/hierarchy.h"
#include "algorithms/partition.h"

namespace tutti {
namespace {

// The three phases of hier_rs_ag for the piece [offset, offset + count) of the vector.
std::vector<Schedule> rsArAgPiece(const CollectiveSpec& spec, const HostPlace& place,
                                  std::uint64_t offset, std::uint64_t count) {
  const int localSize = place.localSize(place.host);
  const auto parts = static_cast<std::uint64_t>(place.minLocal());
  const std::vector<int>& hostRanks = place.ranksOf(place.host);
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(localSize), 0);
  std::vector<std::uint64_t> displs(static_cast<std::size_t>(localSize), 0);
  for (std::uint64_t i = 0; i < parts; ++i) {
    counts[i] = partCount(count, parts, i);
    displs[i] = partOffset(count, parts, i);
  }
  const auto mine = static_cast<std::size_t>(place.local);
  const std::uint64_t chunkAt = offset + displs[mine];

  // 1. Reduce-scatter on the host: chunk i into out[chunk i] of local rank i.
  CollectiveSpec rs = groupSpec(spec, Collective::kReduceScatterV, 0, localSize, place.local,
                                spec.inPlace, true);
  rs.counts = counts;
  Schedule reduceScatter = buildGroupPhase(rs, hostRanks, spec.size);
  clearFinalize(reduceScatter);
  offsetRegions(reduceScatter, BufferKind::kInput, offset);
  offsetRegions(reduceScatter, BufferKind::kOutput, chunkAt);

  // 2. All-reduce of the chunk across the hosts, in place in the output.
  Schedule allReduce = emptySchedule(spec);
  if (static_cast<std::uint64_t>(place.local) < parts) {
    CollectiveSpec ar = groupSpec(spec, Collective::kAllReduce, counts[mine], place.hosts(),
                                  place.host, true, false);
    allReduce = buildGroupPhase(ar, place.column(place.local), spec.size);
    offsetRegions(allReduce, BufferKind::kInput, chunkAt);
    offsetRegions(allReduce, BufferKind::kOutput, chunkAt);
    remapBuffer(allReduce, BufferKind::kInput, BufferKind::kOutput);
  }

  // 3. All-gather of the chunks on the host, in place in the output.
  CollectiveSpec ag = groupSpec(spec, Collective::kAllGatherV, 0, localSize, place.local, true,
                                true);
  ag.counts = counts;
  ag.displs = displs;
  Schedule allGather = buildGroupPhase(ag, hostRanks, spec.size);
  offsetRegions(allGather, BufferKind::kOutput, offset);
  offsetRegions(allGather, BufferKind::kInput, chunkAt);
  remapBuffer(allGather, BufferKind::kInput, BufferKind::kOutput);

  std::vector<Schedule> phases;
  phases.push_back(std::move(reduceScatter));
  phases.push_back(std::move(allReduce));
  phases.push_back(std::move(allGather));
  return phases;
}

// The three phases of hier_reduce_bcast for the piece [offset, offset + count).
std::vector<Schedule> reduceBcastPiece(const CollectiveSpec& spec, const HostPlace& place,
                                       std::uint64_t offset, std::uint64_t count) {
  const int localSize = place.localSize(place.host);
  const std::vector<int>& hostRanks = place.ranksOf(place.host);

  // 1. Reduce to the host's first rank (into its output).
  CollectiveSpec rd = groupSpec(spec, Collective::kReduce, count, localSize, place.local,
                                spec.inPlace, true);
  Schedule reduce = buildGroupPhase(rd, hostRanks, spec.size);
  clearFinalize(reduce);
  offsetRegions(reduce, BufferKind::kInput, offset);
  offsetRegions(reduce, BufferKind::kOutput, offset);

  // 2. The leaders all-reduce across the hosts, in place.
  Schedule allReduce = emptySchedule(spec);
  if (place.local == 0) {
    CollectiveSpec ar = groupSpec(spec, Collective::kAllReduce, count, place.hosts(), place.host,
                                  true, false);
    allReduce = buildGroupPhase(ar, place.column(0), spec.size);
    offsetRegions(allReduce, BufferKind::kInput, offset);
    offsetRegions(allReduce, BufferKind::kOutput, offset);
    remapBuffer(allReduce, BufferKind::kInput, BufferKind::kOutput);
  }

  // 3. Each leader broadcasts on its host, in place.
  CollectiveSpec bc = groupSpec(spec, Collective::kBroadcast, count, localSize, place.local, true,
                                true);
  Schedule broadcast = buildGroupPhase(bc, hostRanks, spec.size);
  offsetRegions(broadcast, BufferKind::kInput, offset);
  offsetRegions(broadcast, BufferKind::kOutput, offset);
  remapBuffer(broadcast, BufferKind::kInput, BufferKind::kOutput);

  std::vector<Schedule> phases;
  phases.push_back(std::move(reduce));
  phases.push_back(std::move(allReduce));
  phases.push_back(std::move(broadcast));
  return phases;
}

}  // namespace

Schedule buildAllreduceHierRsAg(const CollectiveSpec& spec) {
  return buildInPieces(spec, rsArAgPiece);
}

Schedule buildAllreduceHierReduceBcast(const CollectiveSpec& spec) {
  return buildInPieces(spec, reduceBcastPiece);
}

}  // namespace tutti
