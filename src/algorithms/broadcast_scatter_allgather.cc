// Broadcast as a scatter followed by an all-gather (van de Geijn's large-message
// broadcast, MPICH's choice for long messages): the root's vector of N elements is cut into
// n nearly equal chunks (partOffset/partCount); a binomial scatterv hands chunk b to rank b
// (scatter_binomial.cc), then a ring all-gatherv gives every rank every chunk
// (allgather_ring.cc). The two phases are joined with concatenate().
//
// Steps: the scatter's (one receive per rank, one send per child) then the ring's
// (n-1 sends and receives per segment). Bytes on the wire: the root sends (n-1)/n N in the
// scatter and every rank sends (n-1)/n N in the all-gather, so no link carries more than
// about 2 N, against k N (k = ceil(log2 n)) for the root of a binomial tree and (n-1) N for
// the direct broadcast's root.
// Cost (alpha-beta): scatter  k alpha + (n-1)/n N beta
//                    ring     (n-1) alpha + (n-1)/n N beta   (plus the pipeline's fill)
//                    total    (k + n - 1) alpha + 2 (n-1)/n N beta
// against the binomial tree's k (alpha + N beta): it wins for large N once log2 n > 2, and
// loses for small N (n - 1 more latencies). Any n and root; chunks of zero elements (N < n)
// are skipped by both phases.
//
//   n = 4, root 0, chunks c0..c3:
//     scatter   r0 -> r2: c2 c3, r0 -> r1: c1; r2 -> r3: c3
//     all-gather ring r -> r+1, 3 rounds:  every rank ends with c0 c1 c2 c3
//
// Buffers: the scatter's output (this rank's chunk) is placed at the chunk's offset in the
// output. At the root, in place, the vector already lies in the output: the scatter is
// built in place (no copy of the own chunk) and its input remapped to the output; out of
// place the scatter reads the input and copies the own chunk into the output. The
// all-gather is built in place on the output, its own-chunk input remapped there.
// concatenate() starts it only after this rank's scatter steps are done.

#include "algorithms/algorithm.h"
#include "algorithms/block_layout.h"
#include "algorithms/partition.h"
#include "schedule/compose.h"

namespace tutti {

Schedule buildBroadcastScatterAllgather(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  // One rank: the broadcast is a copy (or nothing in place), as the binomial tree does it.
  if (n == 1) return buildBroadcastBinomial(spec);
  if (spec.count == 0) return ScheduleBuilder(r, n).build();
  const std::uint64_t chunkOffset =
      partOffset(spec.count, static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(r));
  const bool rootInPlace = r == spec.root && spec.inPlace;

  // Phase 1: chunk r into out[chunk r]. Only the root's input matters; in place it is the
  // output, and the root's own chunk is already where it belongs.
  Schedule scatter =
      buildScatterBinomial(chunkPhaseSpec(spec, Collective::kScatterV, n, r, rootInPlace));
  offsetRegions(scatter, BufferKind::kOutput, chunkOffset);
  if (rootInPlace) remapBuffer(scatter, BufferKind::kInput, BufferKind::kOutput);

  // Phase 2: an in-place all-gatherv whose input (the own chunk) is out[chunk r].
  Schedule allGather =
      buildAllgatherRing(chunkPhaseSpec(spec, Collective::kAllGatherV, n, r, true));
  offsetRegions(allGather, BufferKind::kInput, chunkOffset);
  remapBuffer(allGather, BufferKind::kInput, BufferKind::kOutput);

  return concatenate(std::move(scatter), allGather);
}

}  // namespace tutti
