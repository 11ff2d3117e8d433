// Ring reduce-scatter (reducescatter and reducescatterv), pipelined in segments: the first
// half of allreduce_ring.cc. Each chunk's partial result travels once around the ring,
// every rank adding its own input as it passes (recvReduceSend), and arrives complete at
// its owner after n-1 hops.
//
// Nomenclature as in allreduce_ring.cc: block b of the input is rank b's *chunk*, cut into
// S *segments* (S from the longest chunk and TUTTI_SEGMENT_BYTES, so all ranks agree); the
// ring runs once per segment index. reducescatterv chunks are the per-rank counts; a zero
// count makes that chunk's steps vanish on every rank alike.
//
// Steps per segment: n-1 (one send, n-2 receive-reduce-and-forward, one receive-reduce).
// Bytes on the wire per rank: (n-1)/n * N for N bytes of input.
// Cost (alpha-beta-gamma): (n-1) alpha + (n-1)/n N beta + (n-1)/n N gamma, plus (S-1)
// segment latencies of pipeline fill. Limitations: the operator must be commutative (all of
// tutti's are: each chunk is reduced starting from a different rank); n-1 latencies.
//
// Step t on rank r (next = r+1, prev = r-1, chunks mod n), n = 4:
//
//   t=0        send(next, in[r-1])
//   t=1..n-2   recvReduceSend(prev -> next): tmp = in[r-1-t] + recv; send tmp on
//   t=n-1      recvReduce(prev) with finalize: out = in[r] + recv, complete (avg divides here)
//
//              t=0        t=1             t=2             t=3
//   rank 0     s c3       c2 += , s c2    c1 += , s c1    c0 done
//   rank 1     s c0       c3 += , s c3    c2 += , s c2    c1 done
//   rank 2     s c1       c0 += , s c0    c3 += , s c3    c2 done
//   rank 3     s c2       c1 += , s c1    c0 += , s c0    c3 done
//
// Scratch: the partial results a rank forwards cannot go into its output (one chunk long)
// nor into its input (read-only, and in place the other chunks of the input are not ours to
// change), so they go into a ring of kScratchSegments scratch slots of one segment each. A
// step that reuses a slot depends on the step that last used it (that step completes only
// when its send of the slot is done): the only local hazard. Sixteen slots, the executor's
// default window (TUTTI_MAX_INFLIGHT), let as many forwarding steps be in flight as the
// executor would anyway, without scratch proportional to the message (at most 16
// segments: 8 MiB at the default 512 KiB); a narrower pipeline waits for a slot, never
// deadlocks.

#include <algorithm>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/block_layout.h"
#include "algorithms/partition.h"
#include "algorithms/patterns/ring.h"
#include "base/assert.h"

namespace tutti {
namespace {

constexpr std::uint64_t kScratchSegments = 16;

// Hands out scratch slots round-robin and adds the dependency on each slot's previous user.
class ScratchSlots {
 public:
  ScratchSlots(std::uint64_t slots, std::uint64_t slotCount)
      : slotCount_(slotCount), lastUser_(slots), used_(slots, false) {}

  std::uint64_t slots() const { return lastUser_.size(); }

  // The region of the next slot, `count` elements long.
  Region next(std::uint64_t count) {
    TUTTI_ASSERT_CMP(count, <=, slotCount_);
    return {BufferKind::kScratch, current_ * slotCount_, count};
  }

  // Records that `step` uses the slot next() returned, after its previous user.
  void take(ScheduleBuilder& b, StepId step) {
    if (used_[current_]) b.addDependency(step, lastUser_[current_]);
    lastUser_[current_] = step;
    used_[current_] = true;
    current_ = (current_ + 1) % lastUser_.size();
  }

 private:
  std::uint64_t slotCount_;
  std::uint64_t current_ = 0;
  std::vector<StepId> lastUser_;
  std::vector<bool> used_;
};

// Forwarding steps of the whole schedule (non-empty segments of the chunks at t=1..n-2).
std::uint64_t forwardingSteps(const RankBlocks& blocks, int n, int r, std::uint64_t segments) {
  std::uint64_t steps = 0;
  for (int t = 1; t <= n - 2; ++t) {
    const std::uint64_t len = blocks.countOf(ring::reduceScatterChunk(r, n, t));
    steps += std::min(len, segments);  // segments of a chunk shorter than S are partly empty
  }
  return steps;
}

}  // namespace

Schedule buildReducescatterRing(const CollectiveSpec& spec) {
  TUTTI_ASSERT(spec.kind == Collective::kReduceScatter || spec.kind == Collective::kReduceScatterV);
  TUTTI_ASSERT_CMP(spec.segmentCount, >=, 1u);
  const int n = spec.size;
  const int r = spec.rank;
  const RankBlocks blocks = rankBlocks(spec);
  ScheduleBuilder b(r, n);
  const std::uint64_t own = blocks.countOf(r);
  if (n == 1) {
    // In place this copies the block onto itself: kept for the finalization (kAvg).
    if (own > 0)
      b.setFinalize(b.copy(blocks.region(BufferKind::kInput, r), {BufferKind::kOutput, 0, own}));
    return std::move(b).build();
  }
  const int next = ring::next(r, n);
  const int prev = ring::prev(r, n);
  const std::uint64_t segments =
      std::max<std::uint64_t>(1, ceilDiv(blocks.maxCount, spec.segmentCount));
  const std::uint64_t slotCount = ceilDiv(blocks.maxCount, segments);  // the longest segment
  const std::uint64_t forwarding = forwardingSteps(blocks, n, r, segments);
  ScratchSlots slots(std::clamp<std::uint64_t>(forwarding, 1, kScratchSegments), slotCount);
  if (forwarding > 0) b.reserveScratch(slots.slots() * slotCount);

  for (std::uint64_t g = 0; g < segments; ++g) {
    // Segment g of chunk c in the input.
    auto input = [&](int c) {
      const std::uint64_t len = blocks.countOf(c);
      return Region{BufferKind::kInput, blocks.offsetOf(c) + partOffset(len, segments, g),
                    partCount(len, segments, g)};
    };
    const Region first = input(ring::reduceScatterChunk(r, n, 0));
    if (first.count > 0) b.send(next, first);
    for (int t = 1; t <= n - 2; ++t) {
      const Region src = input(ring::reduceScatterChunk(r, n, t));
      if (src.count == 0) continue;
      const Region tmp = slots.next(src.count);
      const StepId step = b.recvReduceSend(prev, next, src, tmp);
      b.setForwardOnly(step);  // tmp only carries the partial sum on to the next rank
      slots.take(b, step);
    }
    const Region mine = input(r);
    if (mine.count > 0) {
      const Region out{BufferKind::kOutput, partOffset(own, segments, g), mine.count};
      b.setFinalize(b.recvReduce(prev, mine, out));
    }
  }
  return std::move(b).build();
}

}  // namespace tutti
