// Rabenseifner's all-reduce: a recursive-halving reduce-scatter followed by a
// recursive-doubling all-gather over the power-of-two core, built by those two algorithms
// (reducescatter_recursive_halving.cc, allgather_recursive_doubling.cc) and joined with
// concatenate(). Bandwidth-optimal like the ring with log-latency: the algorithm of choice
// for medium and large messages on large worlds.
//
// Non-power-of-two worlds fold around the whole composition, as Rabenseifner and Thakur
// do: extra rank p+i sends its input to core rank i, which adds it to its own (into the
// output), the p core ranks run the two phases over p chunks of the vector, and core rank i
// sends the result to rank p+i. (Folding inside each phase instead would cut the vector
// into n chunks and move the extra ranks' chunks twice.) Core ranks keep their numbers, so
// the phases are built for a world of p ranks and run unchanged inside the world of n.
//
//   n = 4, chunks c0..c3 of the vector:
//     reduce-scatter (halving)           all-gather (doubling)
//     round 0 (r ^ 2): r0,r1 keep c0 c1   round 0 (r ^ 1): r0,r1 hold c0 c1
//     round 1 (r ^ 1): r0 has c0 done     round 1 (r ^ 2): every rank holds c0..c3
//   n = 6 (p = 4): 4 -> 0 and 5 -> 1 first, the above on ranks 0..3, then 0 -> 4, 1 -> 5.
//
// Phases and buffers: phase 1 is a reducescatterv over p nearly equal chunks
// (partOffset/partCount) whose output is out[chunk r] (its output region is offset there;
// in place, or after a fold, its input is the output); phase 2 is an in-place allgatherv
// over the same chunks on the output. concatenate() makes each phase wait for the one
// before it on this rank.
// Steps: 2 log2 p rounds (+ a fold receive and an unfold send on core ranks with an extra
// partner; one send and one receive on extra ranks). Bytes on the wire per core rank:
// 2(p-1)/p N, plus N each way with an extra partner.
// Cost (alpha-beta-gamma), f = 1 when n is not a power of two: (2 log2 p + 2f) alpha +
// (2(p-1)/p + 2f) N beta + ((p-1)/p + f) N gamma.
// Limitations: commutative operators (all of tutti's); scratch of N elements (the
// reduce-scatter's partial results); halves travel as whole messages, not segments.
// Results are bit-identical on every rank: each chunk is reduced on its owner only.

#include "algorithms/algorithm.h"
#include "algorithms/block_layout.h"
#include "algorithms/partition.h"
#include "algorithms/patterns/butterfly.h"
#include "schedule/compose.h"

namespace tutti {

Schedule buildAllreduceRabenseifner(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  const Region in{BufferKind::kInput, 0, spec.count};
  const Region out{BufferKind::kOutput, 0, spec.count};
  ScheduleBuilder fold(r, n);
  if (spec.count == 0) return std::move(fold).build();
  if (n == 1) {
    fold.setFinalize(fold.copy(in, out));  // in place: onto itself, for kAvg
    return std::move(fold).build();
  }
  const int p = butterfly::coreSize(n);
  const int partner = butterfly::foldPartner(r, n);
  if (butterfly::isExtra(r, n)) {
    const StepId sent = fold.send(partner, in);
    fold.recv(partner, out, {sent});  // in place the result overwrites what was sent
    return std::move(fold).build();
  }
  const bool folded = partner >= 0;
  if (folded) fold.recvReduce(partner, in, out);  // own + extra's (in place: onto itself)

  // Phase 1 reads the input, or the output where the fold put the sums.
  Schedule reduceScatter = buildReducescatterRecursiveHalving(
      chunkPhaseSpec(spec, Collective::kReduceScatterV, p, r, spec.inPlace || folded));
  const std::uint64_t chunkOffset =
      partOffset(spec.count, static_cast<std::uint64_t>(p), static_cast<std::uint64_t>(r));
  reduceScatter.size = n;  // built for the core: its ranks are the same in the world
  offsetRegions(reduceScatter, BufferKind::kOutput, chunkOffset);
  if (folded) remapBuffer(reduceScatter, BufferKind::kInput, BufferKind::kOutput);

  // Phase 2: an in-place all-gatherv whose input (the own chunk) is out[chunk r].
  Schedule allGather = buildAllgatherRecursiveDoubling(
      chunkPhaseSpec(spec, Collective::kAllGatherV, p, r, true));
  allGather.size = n;
  offsetRegions(allGather, BufferKind::kInput, chunkOffset);
  remapBuffer(allGather, BufferKind::kInput, BufferKind::kOutput);

  Schedule result = concatenate(concatenate(std::move(fold).build(), reduceScatter), allGather);
  if (!folded) return result;
  ScheduleBuilder unfold(r, n);
  unfold.send(partner, out);
  return concatenate(std::move(result), std::move(unfold).build());
}

}  // namespace tutti
