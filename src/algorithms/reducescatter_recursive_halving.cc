// Recursive-halving reduce-scatter (reducescatter and reducescatterv): log2 p rounds in
// which each rank sends the half of its current range of blocks that its partner keeps
// and reduces the partner's partial results into the half it keeps itself, so the data
// halves each round until a rank holds its own block, complete. Non-power-of-two worlds
// fold (patterns/butterfly.h): extra rank p+i first sends its whole input to core rank i,
// which then carries blocks i and p+i through the butterfly and at the end sends the
// complete block p+i to rank p+i.
//
//   n = 4, blocks each rank is responsible for (partials of all of them):
//              start          round 0 (r ^ 2)   round 1 (r ^ 1)
//   rank 0     c0 c1 c2 c3    c0 c1             c0 done
//   rank 1     c0 c1 c2 c3    c0 c1             c1 done
//   rank 2     c0 c1 c2 c3    c2 c3             c2 done
//   rank 3     c0 c1 c2 c3    c2 c3             c3 done
//   n = 6 (p = 4): 4 -> 0 and 5 -> 1 send everything first; a core rank's range of core
//   ranks [lo, hi) stands for blocks [lo, hi) and [p+lo, p+hi); at the end 0 -> 4, 1 -> 5.
//
// Distances halve (p/2 first) so that each range stays a contiguous run of blocks. A
// round sends at most two messages, the core blocks and the extra partners' blocks of the
// range it gives away (reducescatterv blocks lie back to back, so each is one region).
// Each output element is reduced on its owner only, so results are deterministic.
//
// Steps: log2 p rounds of up to two sends and two receive-reduces; plus the fold and
// unfold. Bytes on the wire per rank (N bytes of input): (p-1)/p N for even blocks (uneven
// reducescatterv blocks: the range given away), plus N from each extra rank to its partner.
// Cost (alpha-beta-gamma), f = 1 when n is not a power of two: (log2 p + 2f) alpha +
// ((p-1)/p + f) N (beta + gamma). Latency-optimal with the ring's bandwidth when n is a
// power of two; halves travel as whole messages, not segments.
// Limitations: commutative operators (all of tutti's); scratch space of the input's size
// when p >= 4 or the rank has an extra partner (the partial results; the input is
// read-only and, in place, only the rank's own block is ours to change).
//
// Buffers and hazards: partial results live in scratch at the same offsets as in the
// input. Round k reads the ranges round k-1 wrote (sends and receive-reduces alike) and
// depends on all of round k-1's reductions; its sends and reductions touch disjoint halves,
// so they run concurrently. The last round reduces the own block into the output
// (finalising it) and the extra partner's block into scratch (finalised, then sent).

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/block_layout.h"
#include "algorithms/patterns/butterfly.h"
#include "base/assert.h"

namespace tutti {
namespace {

// The region blocks [first, last) occupy in `buffer`: back to back, as for reducescatter(v).
Region blockRange(const RankBlocks& blocks, BufferKind buffer, int first, int last) {
  if (first >= last) return {buffer, 0, 0};
  const std::uint64_t begin = blocks.offsetOf(first);
  return {buffer, begin, blocks.offsetOf(last - 1) + blocks.countOf(last - 1) - begin};
}

// The two parts of a range of core ranks: their blocks, and their extra partners' blocks.
struct Parts {
  Region core, extra;
};

Parts partsOf(const RankBlocks& blocks, BufferKind buffer, int n, butterfly::RankRange range) {
  const int p = butterfly::coreSize(n);
  return {blockRange(blocks, buffer, range.begin, range.end),
          blockRange(blocks, buffer, std::min(n, p + range.begin), std::min(n, p + range.end))};
}

Region at(BufferKind buffer, Region region) { return {buffer, region.offset, region.count}; }

StepId afterAll(ScheduleBuilder& b, StepId step, const std::vector<StepId>& on) {
  for (StepId d : on) b.addDependency(step, d);
  return step;
}

}  // namespace

Schedule buildReducescatterRecursiveHalving(const CollectiveSpec& spec) {
  TUTTI_ASSERT(spec.kind == Collective::kReduceScatter || spec.kind == Collective::kReduceScatterV);
  const int n = spec.size;
  const int r = spec.rank;
  const RankBlocks blocks = rankBlocks(spec);
  const Region all = blockRange(blocks, BufferKind::kInput, 0, n);
  const Region out{BufferKind::kOutput, 0, blocks.countOf(r)};
  ScheduleBuilder b(r, n);
  if (n == 1) {
    // In place this copies the block onto itself: kept for the finalization (kAvg).
    if (out.count > 0) b.setFinalize(b.copy(blocks.region(BufferKind::kInput, r), out));
    return std::move(b).build();
  }
  const int p = butterfly::coreSize(n);
  const int rounds = butterfly::rounds(n);
  const int fold = butterfly::foldPartner(r, n);
  if (butterfly::isExtra(r, n)) {
    if (all.count > 0) {
      const StepId sent = b.send(fold, all);
      if (out.count > 0) b.recv(fold, out, {sent});  // in place: out lies inside what was sent
    }
    return std::move(b).build();
  }
  if (fold >= 0 || rounds >= 2) b.reserveScratch(all.count);

  BufferKind work = BufferKind::kInput;  // where the current partial results are
  std::vector<StepId> previous;          // the steps that wrote them
  if (fold >= 0 && all.count > 0) {
    previous.push_back(b.recvReduce(fold, all, at(BufferKind::kScratch, all)));  // own + extra's
    work = BufferKind::kScratch;
  }
  for (int k = 0; k < rounds; ++k) {
    const int partner = butterfly::halvingPartner(r, p, k);
    const Parts give = partsOf(blocks, work, n, butterfly::halvingRange(partner, p, k + 1));
    const Parts keep = partsOf(blocks, work, n, butterfly::halvingRange(r, p, k + 1));
    const bool last = k == rounds - 1;
    // Sends and receives alternate, so that two partners never fill the executor's window
    // with sends only (or receives only).
    std::vector<StepId> reduced;
    if (give.core.count > 0) afterAll(b, b.send(partner, give.core), previous);
    if (keep.core.count > 0) {
      const Region dst = last ? out : at(BufferKind::kScratch, keep.core);
      reduced.push_back(afterAll(b, b.recvReduce(partner, keep.core, dst), previous));
      if (last) b.setFinalize(reduced.back());
    }
    if (give.extra.count > 0) afterAll(b, b.send(partner, give.extra), previous);
    if (keep.extra.count > 0) {
      const Region dst = at(BufferKind::kScratch, keep.extra);
      reduced.push_back(afterAll(b, b.recvReduce(partner, keep.extra, dst), previous));
      if (last) {
        b.setFinalize(reduced.back());
        b.send(fold, at(BufferKind::kScratch, keep.extra), {reduced.back()});
      }
    }
    previous = std::move(reduced);
    work = BufferKind::kScratch;
  }
  return std::move(b).build();
}

}  // namespace tutti
