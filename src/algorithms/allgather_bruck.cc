// Bruck all-gather: ceil(log2 n) rounds for any n (patterns/bruck.h). Rank r gathers into a
// staging array in scratch whose slot i holds block (r + i) mod n. It starts with its own
// block in slot 0; in round k it sends the slots it has, [0, b_k) with
// b_k = min(2^k, n - 2^k), to r - 2^k and receives r + 2^k's first b_k slots into
// [2^k, 2^k + b_k), so the gathered run doubles each round. A final local rotation copies
// the staging array to its place in the output (two copies: slots [0, n-r) to blocks
// [r, n), slots [n-r, n) to blocks [0, r)).
//
// Steps per rank: ceil(log2 n) sends and receives, one copy in and two out.
// Bytes on the wire per rank: (n-1)/n * N for N bytes of output: every block but its own
// reaches a rank exactly once, as in the ring.
// Cost (alpha-beta): ceil(log2 n) alpha + (n-1)/n N beta: the latency-optimal all-gather
// (the ring pays n - 1 alphas for the same bytes), at the price of n blocks of scratch and
// two local passes over the output. Rounds are not pipelined: it is the small-message
// choice; for large messages the ring keeps every link busy with far smaller steps.
//
//   n = 5, slots each rank holds after each round (block numbers):
//              start   round 0 (d=1)   round 1 (d=2)   round 2 (d=4, b=1)
//     rank 0   0       0 1             0 1 2 3         0 1 2 3 4
//     rank 1   1       1 2             1 2 3 4         1 2 3 4 0
//     rank 3   3       3 4             3 4 0 1         3 4 0 1 2
//   (rank 0 received 1 from rank 1, then 2 3 from rank 2, then 4 from rank 4)
//
// Dependencies: a send reads slots that earlier rounds' receives wrote, so it waits for
// all of them (the receives have none: they write slots no send reads yet, and posting them
// early lets data arrive while this rank still waits). The rotation waits for every receive.
// In place the input is the rank's own block of the output, which the rotation rewrites with
// the same data after the first copy has read it.

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/patterns/bruck.h"

namespace tutti {

Schedule buildAllgatherBruck(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  const std::uint64_t c = spec.count;
  ScheduleBuilder b(r, n);
  if (c == 0) return std::move(b).build();
  if (n == 1) {
    if (!spec.inPlace) b.copy({BufferKind::kInput, 0, c}, {BufferKind::kOutput, 0, c});
    return std::move(b).build();
  }
  const auto un = static_cast<std::uint64_t>(n);
  const auto ur = static_cast<std::uint64_t>(r);
  auto slots = [&](std::uint64_t first, std::uint64_t count) {
    return Region{BufferKind::kScratch, first * c, count * c};
  };
  b.reserveScratch(un * c);

  std::vector<StepId> written{b.copy({BufferKind::kInput, 0, c}, slots(0, 1))};
  for (int k = 0; k < bruck::rounds(n); ++k) {
    const auto d = static_cast<std::uint64_t>(bruck::distance(k));
    const auto blocks = static_cast<std::uint64_t>(bruck::allgatherBlocks(n, k));
    StepId recv = b.recv(bruck::allgatherRecvPeer(n, r, k), slots(d, blocks));
    StepId send = b.send(bruck::allgatherSendPeer(n, r, k), slots(0, blocks));
    for (StepId w : written) b.addDependency(send, w);
    written.push_back(recv);
  }
  // The rotation: slot i is block (r + i) mod n.
  StepId high = b.copy(slots(0, un - ur), {BufferKind::kOutput, ur * c, (un - ur) * c});
  for (StepId w : written) b.addDependency(high, w);
  if (r > 0) {
    StepId low = b.copy(slots(un - ur, ur), {BufferKind::kOutput, 0, ur * c});
    for (StepId w : written) b.addDependency(low, w);
  }
  return std::move(b).build();
}

}  // namespace tutti
