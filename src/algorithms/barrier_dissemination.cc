// Dissemination barrier (Hensgen, Finkel and Manber): in round k every rank sends an empty
// message to rank r + 2^k and waits for one from rank r - 2^k. After ceil(log2 n) rounds
// every rank has heard, directly or transitively, from every other, so none can leave
// before all have arrived. Works for any n, no power of two needed.
//
// Steps: ceil(log2 n) rounds of one send and one receive. Bytes on the wire: headers only.
// Cost: ceil(log2 n) alpha.
//
//   n = 5, rank 0:  round 0: send 1, recv 4 | round 1: send 2, recv 3 | round 2: send 4, recv 1
//
// Dependencies: round k's send waits for round k-1's send and receive, and round k's
// receive for round k-1's receive. The dissemination argument needs a rank's round-k message
// to carry everything it has heard so far: after round k, rank r has heard, through chains
// of messages, from ranks r-1 ... r-(2^(k+1)-1) — its own earlier receives cover the first
// 2^k-1, and r-2^k's round-k message covers r-2^k itself (its send chain reaches back to its
// first step) and the 2^k-1 ranks behind it (its receive chain). So every rank's last step
// causally follows every other rank's first once 2^K >= n, through dependencies alone: the
// executor's in-order issue would also give it, but the schedule does not lean on that
// (the verifier checks it with VerifyOptions::inOrderIssue = false too). The receive is
// chained to the previous receive only, so it is posted while the send is in flight.

#include "algorithms/algorithm.h"

namespace tutti {

Schedule buildBarrierDissemination(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  ScheduleBuilder b(r, n);
  const Region empty{BufferKind::kInput, 0, 0};
  bool first = true;
  StepId previousSend = 0;
  StepId previousRecv = 0;
  for (int distance = 1; distance < n; distance *= 2) {
    if (first) {
      previousSend = b.send((r + distance) % n, empty);
      previousRecv = b.recv((r - distance + n) % n, empty);
    } else {
      previousSend = b.send((r + distance) % n, empty, {previousSend, previousRecv});
      previousRecv = b.recv((r - distance + n) % n, empty, {previousRecv});
    }
    first = false;
  }
  return std::move(b).build();
}

}  // namespace tutti
