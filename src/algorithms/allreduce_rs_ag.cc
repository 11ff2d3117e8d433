// All-reduce as a ring reduce-scatter followed by a ring all-gather, built by those two
// algorithms (reducescatter_ring.cc, allgather_ring.cc) and joined with concatenate(): the
// classic unfused decomposition (DESIGN.md 3, "composition over copies").
//
// The vector of N elements is cut into n nearly equal chunks (partOffset/partCount), as the
// fused `ring` does. Phase 1 is a reducescatterv over those chunks that reads the input and
// writes each rank's complete chunk r into out[chunk r] (its output region is offset there;
// in place that is the chunk's own place in the input). Phase 2 is an in-place allgatherv
// over the same chunks that works on the output (its input, the own chunk, is remapped to
// out[chunk r]).
//
// Steps per segment: 2(n-1). Bytes on the wire per rank: 2(n-1)/n * N.
// Cost (alpha-beta-gamma): 2(n-1) alpha + 2(n-1)/n N beta + (n-1)/n N gamma, plus the fill
// of two pipelines: (S-1) segment latencies for each phase.
//
// Difference from the fused `ring` (allreduce_ring.cc): there, segment g of the all-gather
// starts as soon as segment g of the reduce-scatter is done, and the completed chunk is
// forwarded by the same recvReduceSend that finalises it. Here concatenate() makes the
// first all-gather step wait for the *whole* reduce-scatter on this rank, so each rank's
// link idles while the last segments drain and the all-gather's first segment refills the
// pipeline: a bubble of about n-1 segment latencies between the phases. Messages and bytes
// are the same (the completed chunk leaves in the all-gather's first send instead of in the
// second half of the step that completes it), but the reduce-scatter phase needs its
// scratch slots (16 segments) where the fused ring reduces into the output directly. It
// exists as the reference composition, to measure that bubble, and as a building block
// for hierarchical algorithms.
//
//   rank r:  [ reducescatterv ring: chunks -> out[r] complete ] | [ allgatherv ring on out ]
//                                                   all of phase 1 ^ before phase 2 starts
//
// Limitations: as both rings (commutative operators, n-1 latencies per phase).
//
// direct_rs_ag: the same two phases by the direct (flat) algorithms of direct.cc: each rank
// receives its chunk from every other rank and reduces it (in a fixed order), then sends
// its finished chunk to every other rank. One round per phase instead of n-1, n-1 messages
// per rank per phase; the bytes are the ring's. Over shared memory a message is read from
// the sender's buffer itself (rendezvous), so each rank reduces its chunk reading its peers'
// inputs in place, the node-local all-reduce of issue 4; where the buffers come from
// memAlloc those reads are plain loads through a mapping.
//
// Cost: 2 alpha + 2(n-1)/n N beta + (n-1)/n N gamma, with n-1 messages in flight per rank.

#include "algorithms/algorithm.h"
#include "algorithms/block_layout.h"
#include "algorithms/partition.h"
#include "schedule/compose.h"

namespace tutti {

namespace {

using PhaseBuilder = Schedule (*)(const CollectiveSpec&);

// The reduce-scatterv by `reduceScatter`, then the all-gatherv by `allGather`, over the
// chunks of partOffset/partCount.
Schedule buildRsAg(const CollectiveSpec& spec, PhaseBuilder reduceScatterPhase,
                   PhaseBuilder allGatherPhase) {
  const int n = spec.size;
  const int r = spec.rank;
  if (spec.count == 0) return ScheduleBuilder(r, n).build();
  const std::uint64_t chunkOffset =
      partOffset(spec.count, static_cast<std::uint64_t>(n), static_cast<std::uint64_t>(r));

  // Phase 1: the output of the reduce-scatterv is this rank's chunk of the output (in place,
  // out[chunk r] is also in[chunk r], exactly where an in-place reduce-scatterv puts it).
  Schedule reduceScatter = reduceScatterPhase(
      chunkPhaseSpec(spec, Collective::kReduceScatterV, n, r, spec.inPlace));
  offsetRegions(reduceScatter, BufferKind::kOutput, chunkOffset);

  // Phase 2: an in-place all-gatherv whose input (the own chunk) is out[chunk r].
  Schedule allGather = allGatherPhase(chunkPhaseSpec(spec, Collective::kAllGatherV, n, r, true));
  offsetRegions(allGather, BufferKind::kInput, chunkOffset);
  remapBuffer(allGather, BufferKind::kInput, BufferKind::kOutput);

  return concatenate(std::move(reduceScatter), allGather);
}

}  // namespace

Schedule buildAllreduceRsAg(const CollectiveSpec& spec) {
  return buildRsAg(spec, buildReducescatterRing, buildAllgatherRing);
}

Schedule buildAllreduceDirectRsAg(const CollectiveSpec& spec) {
  return buildRsAg(spec, buildDirect, buildDirect);
}

}  // namespace tutti
