// Ring all-reduce, pipelined in segments: a reduce-scatter ring followed by an all-gather
// ring, fused as NCCL fuses them (recvReduceSend, then recvCopySend).
//
// Nomenclature (as Gloo's ring): the buffer is cut into n *chunks*, one owned by each rank at
// the end of the reduce-scatter; each chunk is cut into S *segments* of at most
// TUTTI_SEGMENT_BYTES, and the whole ring runs once per segment index, so segment g+1 is on
// the wire while segment g is being reduced.
//
// Steps per segment: 2(n-1). Bytes on the wire per rank: 2(n-1)/n * N for N bytes.
// Cost (alpha-beta-gamma): 2(n-1) alpha + 2(n-1)/n N beta + (n-1)/n N gamma, plus
// (S-1) segment latencies of pipeline fill. Limitations: the operator must be commutative
// (all of tutti's are); count < n leaves some ranks' chunks empty (their steps vanish).
//
// Time t on rank r (next = r+1, prev = r-1, chunks mod n), for n = 4:
//
//   t=0        send(next, in[r])
//   t=1..n-2   recvReduceSend(prev -> next): out[r-t] = in[r-t] + recv; send it on
//   t=n-1      recvReduceSend with finalize: out[r+1] is now complete (avg divides here)
//   t=n..2n-3  recvCopySend(prev -> next): out[r+n-t] = recv; forward it
//   t=2n-2     recv: out[r+2] = recv
//
//              t=0      t=1          t=2          t=3 (RS done)  t=4     t=5     t=6
//   rank 0     s c0     c3+=, s c3   c2+=, s c2   c1 done, s c1  r c0,s  r c3,s  r c2
//   rank 1     s c1     c0+=, s c0   c3+=, s c3   c2 done, s c2  r c1,s  r c0,s  r c3
//   rank 2     s c2     c1+=, s c1   c0+=, s c0   c3 done, s c3  r c2,s  r c1,s  r c0
//   rank 3     s c3     c2+=, s c2   c1+=, s c1   c0 done, s c0  r c3,s  r c2,s  r c1
//
// Local hazards: an all-gather receive overwrites out[c], which the reduce-scatter step on
// chunk c sent from (and, in place, in[r] which t=0 sent), so each all-gather step depends
// on the reduce-scatter step that last touched its chunk in the same segment.

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/hierarchy.h"
#include "algorithms/partition.h"
#include "base/assert.h"

namespace tutti {

Schedule buildAllreduceRing(const CollectiveSpec& spec) {
  // Across hosts whose ranks are not numbered host by host, the ring runs in host order
  // (position v of the order plays rank v; every rank ends with the whole vector alike).
  if (const std::vector<int> order = ringOrderByHost(spec); !order.empty()) {
    CollectiveSpec ordered = spec;
    ordered.hosts = nullptr;
    ordered.rank = indexIn(order, spec.rank);
    return embed(buildAllreduceRing(ordered), order, spec.size);
  }
  const int n = spec.size;
  const int r = spec.rank;
  ScheduleBuilder b(r, n);
  if (n == 1) {
    if (!spec.inPlace && spec.count > 0) {
      StepId s = b.copy({BufferKind::kInput, 0, spec.count}, {BufferKind::kOutput, 0, spec.count});
      b.setFinalize(s);  // kAvg over one rank divides by 1: kept for uniformity
    }
    return std::move(b).build();
  }
  TUTTI_ASSERT_CMP(spec.segmentCount, >=, 1u);
  const int next = (r + 1) % n;
  const int prev = (r + n - 1) % n;
  const auto parts = static_cast<std::uint64_t>(n);
  const std::uint64_t segments = std::max<std::uint64_t>(1, ceilDiv(ceilDiv(spec.count, parts),
                                                                    spec.segmentCount));
  auto chunkOf = [&](int t) { return static_cast<std::uint64_t>(((r - t) % n + n) % n); };
  std::vector<StepId> last(static_cast<std::size_t>(n), 0);

  for (std::uint64_t g = 0; g < segments; ++g) {
    // Region of segment g of chunk c, in the input or the output buffer.
    auto region = [&](BufferKind kind, std::uint64_t c) {
      std::uint64_t chunkLen = partCount(spec.count, parts, c);
      return Region{kind, partOffset(spec.count, parts, c) + partOffset(chunkLen, segments, g),
                    partCount(chunkLen, segments, g)};
    };
    auto in = [&](std::uint64_t c) { return region(BufferKind::kInput, c); };
    auto out = [&](std::uint64_t c) { return region(BufferKind::kOutput, c); };

    // Reduce-scatter.
    if (in(chunkOf(0)).count > 0) last[chunkOf(0)] = b.send(next, in(chunkOf(0)));
    for (int t = 1; t <= n - 1; ++t) {
      std::uint64_t c = chunkOf(t);
      if (in(c).count == 0) continue;
      last[c] = b.recvReduceSend(prev, next, in(c), out(c));
      // Before the last step out(c) is only the partial sum on its way to the next rank (the
      // all-gather overwrites it): it need not be stored.
      if (t == n - 1) b.setFinalize(last[c]);
      else b.setForwardOnly(last[c]);
    }
    // All-gather.
    for (int t = n; t <= 2 * n - 2; ++t) {
      std::uint64_t c = static_cast<std::uint64_t>(((r + n - t) % n + n) % n);
      if (out(c).count == 0) continue;
      if (t < 2 * n - 2) b.recvCopySend(prev, next, out(c), {last[c]});
      else b.recv(prev, out(c), {last[c]});
    }
  }
  return std::move(b).build();
}

}  // namespace tutti
