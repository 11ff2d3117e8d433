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
// The send of round k+1 depends on the receive of round k: that chain is the barrier.

#include "algorithms/algorithm.h"

namespace tutti {

Schedule buildBarrierDissemination(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  ScheduleBuilder b(r, n);
  const Region empty{BufferKind::kInput, 0, 0};
  bool first = true;
  StepId previousRecv = 0;
  for (int distance = 1; distance < n; distance *= 2) {
    StepId send = first ? b.send((r + distance) % n, empty)
                        : b.send((r + distance) % n, empty, {previousRecv});
    previousRecv = b.recv((r - distance % n + n) % n, empty);
    (void)send;
    first = false;
  }
  return std::move(b).build();
}

}  // namespace tutti
