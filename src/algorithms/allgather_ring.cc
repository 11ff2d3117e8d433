// Ring all-gather (allgather and allgatherv), pipelined in segments: every block travels
// once around the ring, forwarded by each rank as it arrives (recvCopySend), as the second
// half of allreduce_ring.cc.
//
// Nomenclature as in allreduce_ring.cc: block b of the output is rank b's *chunk*; each
// chunk is cut into S *segments* (S from the longest chunk and TUTTI_SEGMENT_BYTES, so all
// ranks agree), and the ring runs once per segment index, segment g+1 on the wire while
// segment g is being forwarded. allgatherv chunks are the per-rank counts; a zero count
// makes that chunk's steps vanish on every rank alike.
//
// Steps per segment: n-1 (one send, n-2 receive-and-forward, one receive). Bytes on the
// wire per rank: (n-1)/n * N for N bytes of output (allgatherv: everything but its own
// block, for rank r; the ring sends each block n-1 times in all).
// Cost (alpha-beta): (n-1) alpha + (n-1)/n N beta, plus (S-1) segment latencies of pipeline
// fill. Limitations: n-1 latencies, so small messages on large worlds favour
// recursive_doubling (log2 n latencies); uneven allgatherv counts make the ring as slow as
// its longest chunk times n-1.
//
// Step t on rank r (next = r+1, prev = r-1, chunks mod n), n = 4:
//
//   t=0        send(next, own chunk r)            (from the input; in place it is out[r])
//   t=1..n-2   recvCopySend(prev -> next): out[r-t] = recv; forward it
//   t=n-1      recv(prev): out[r-n+1] = out[r+1] = recv
//
//              t=0      t=1            t=2            t=3
//   rank 0     s b0     r b3, s b3     r b2, s b2     r b1
//   rank 1     s b1     r b0, s b0     r b3, s b3     r b2
//   rank 2     s b2     r b1, s b1     r b0, s b0     r b3
//   rank 3     s b3     r b2, s b2     r b1, s b1     r b0
//
// Local hazards: none. Every receive writes a block no other step of this rank touches, and
// the out-of-place copy of the own block writes out[r], which only it touches (the sends
// of the own block read the input).

#include <algorithm>

#include "algorithms/algorithm.h"
#include "algorithms/hierarchy.h"
#include "algorithms/block_layout.h"
#include "algorithms/partition.h"
#include "algorithms/patterns/ring.h"
#include "base/assert.h"

namespace tutti {

Schedule buildAllgatherRing(const CollectiveSpec& spec) {
  TUTTI_ASSERT(spec.kind == Collective::kAllGather || spec.kind == Collective::kAllGatherV);
  // Across hosts whose ranks are not numbered host by host, the ring runs in host order:
  // position v of the order plays rank v, with rank order[v]'s block (an all-gatherv).
  if (const std::vector<int> order = ringOrderByHost(spec); !order.empty()) {
    const RankBlocks real = rankBlocks(spec);
    CollectiveSpec ordered = spec;
    ordered.hosts = nullptr;
    ordered.kind = Collective::kAllGatherV;
    ordered.count = 0;
    ordered.rank = indexIn(order, spec.rank);
    ordered.counts.clear();
    ordered.displs.clear();
    for (int r : order) {
      ordered.counts.push_back(real.countOf(r));
      ordered.displs.push_back(real.offsetOf(r));
    }
    return embed(buildAllgatherRing(ordered), order, spec.size);
  }
  TUTTI_ASSERT_CMP(spec.segmentCount, >=, 1u);
  const int n = spec.size;
  const int r = spec.rank;
  const RankBlocks blocks = rankBlocks(spec);
  ScheduleBuilder b(r, n);
  const std::uint64_t own = blocks.countOf(r);
  if (!spec.inPlace && own > 0)
    b.copy({BufferKind::kInput, 0, own}, blocks.region(BufferKind::kOutput, r));
  if (n == 1) return std::move(b).build();

  const int next = ring::next(r, n);
  const int prev = ring::prev(r, n);
  const std::uint64_t segments =
      std::max<std::uint64_t>(1, ceilDiv(blocks.maxCount, spec.segmentCount));
  for (std::uint64_t g = 0; g < segments; ++g) {
    // Segment g of chunk c in the output.
    auto segment = [&](int c) {
      const std::uint64_t len = blocks.countOf(c);
      return Region{BufferKind::kOutput, blocks.offsetOf(c) + partOffset(len, segments, g),
                    partCount(len, segments, g)};
    };
    const Region mine{BufferKind::kInput, partOffset(own, segments, g),
                      partCount(own, segments, g)};
    if (mine.count > 0) b.send(next, mine);
    for (int t = 1; t <= n - 1; ++t) {
      const Region dst = segment(ring::allgatherChunk(r, n, t));
      if (dst.count == 0) continue;
      if (t < n - 1) b.recvCopySend(prev, next, dst);
      else b.recv(prev, dst);
    }
  }
  return std::move(b).build();
}

}  // namespace tutti
