// All-reduce as the classic composition: a binomial reduce to rank 0, then a binomial
// broadcast from rank 0 (reduce_binomial.cc, broadcast_binomial.cc), joined by compose.h's
// concatenate. Rank 0 finalizes and every rank receives its bytes, so results are
// bit-identical on all ranks. Both phases are pipelined in segments; a rank starts its
// broadcast phase once its own reduce phase is done.
//
// Steps per segment: the reduce's and the broadcast's (k = ceil(log2 n) rounds each).
// Bytes on the wire: rank 0 receives k N and sends k N for N bytes; every other rank sends
// N up and receives N, and forwards N to each of its children.
// Cost against the ring (alpha-beta-gamma, N bytes, n ranks):
//   reduce_bcast, unsegmented:  2k alpha + 2k N beta + k N gamma
//   ring:                       2(n-1) alpha + 2 (n-1)/n N beta + (n-1)/n N gamma
// So reduce_bcast wins where latency dominates (small N, many ranks: 2 log2 n messages
// on the critical path against 2(n-1)), and loses by a factor of about log2 n in bandwidth
// for large N, where rank 0's links carry k N each way (ring, double_binary_tree).
// Any n; the operator must be commutative (all of tutti's are).
//
//   n = 4:   reduce  r1 -> r0, r3 -> r2 -> r0     then broadcast  r0 -> r2 -> r3, r0 -> r1
//
// Buffers: the reduce phase reads each rank's input and leaves the result in rank 0's
// output (non-root ranks combine in scratch); the broadcast phase, built in place, sends
// from its "input", remapped to the output that holds the result. Hazards between the
// phases need nothing more: concatenate starts the broadcast only after the reduce's last
// steps on this rank, which in place is also what frees the input for overwriting.

#include "algorithms/algorithm.h"
#include "schedule/compose.h"

namespace tutti {

Schedule buildAllreduceReduceBcast(const CollectiveSpec& spec) {
  CollectiveSpec reduce = spec;
  reduce.kind = Collective::kReduce;
  reduce.root = 0;
  CollectiveSpec broadcast = spec;
  broadcast.kind = Collective::kBroadcast;
  broadcast.root = 0;
  broadcast.inPlace = true;  // rank 0's result is already in its output
  Schedule second = buildBroadcastBinomial(broadcast);
  remapBuffer(second, BufferKind::kInput, BufferKind::kOutput);
  return concatenate(buildReduceBinomial(reduce), second);
}

}  // namespace tutti
