// Pairwise exchange all-to-all (alltoall and alltoallv): n - 1 rounds; in round k
// (1 <= k < n) rank r sends its block for (r + k) mod n and receives the block of
// (r - k) mod n (patterns/pairwise.h). Every round is a cyclic shift, so each rank sends
// one message and receives one per round: no rank is flooded by n - 1 senders at once, as
// it is with the direct algorithm, which is what makes this the bandwidth choice for large
// blocks. The shift schedule works for any n. The XOR schedule (partner r ^ k) needs a
// power of two; what it offers in exchange (one partner both ways per round, and in place a
// block of scratch per round in flight instead of half the buffer) does not pay for a
// second schedule and a fallback for other world sizes.
//
// Steps per rank: n - 1 sends and n - 1 receives (blocks of 0 elements are skipped, both
// sides agree on them), plus one local copy of the rank's own block.
// Bytes on the wire per rank: (n-1)/n * N for N bytes of input (each block moves once).
// Cost (alpha-beta): (n-1) alpha + (n-1)/n N beta, with at most kRoundsInFlight rounds
// overlapping, so the alpha terms of consecutive rounds hide behind each other's transfers:
// the longest chain of messages that must follow one another is n/2 (rounds k and k+1
// run side by side), which the verifier measures.
// Limitations: n - 1 latencies, so small messages prefer bruck (log n rounds).
//
//   n = 4 (a -> b: a sends its block for b):
//     round 1:  0->1  1->2  2->3  3->0
//     round 2:  0->2  1->3  2->0  3->1
//     round 3:  0->3  1->0  2->1  3->2
//
// Rounds in flight: the steps of round k depend on the steps of round k - kRoundsInFlight,
// so a rank has at most two rounds posted: one transferring while the next is set up, which
// keeps a link busy between rounds. Without it the executor's window would post eight
// rounds at once and a rank would take eight incoming streams, the incast pairwise exists to
// avoid, and peers could run many rounds ahead of a slow rank. (A round with nothing to move,
// alltoallv's zero blocks, passes its gate on to the next.)
//
// In place (the input is the output): the block received in round k lands on block
// (r - k), which is sent only in round n - k. For 2k <= n that block is first copied into
// scratch (its send, in round n - k, reads it there) and the receive lands in place after
// the copy; for 2k > n the send is already done, so it is received in place, ordered after
// that send. Scratch: the blocks of rounds 1..n/2, about half the buffer (the direct
// algorithm keeps n - 1 blocks). Stashing what is sent rather than receiving into scratch
// and copying home afterwards copies the same bytes, but from this rank's own cache rather
// than from lines another core has just written, and lets the message land in the output
// itself, which a peer writes through its mapping when it is a memAlloc buffer. 2 ranks,
// in place, against receiving into scratch: 64 KiB 0.78 and 1 MiB 0.72 of the time from the
// heap, 0.84 and 0.51 from memAlloc (docs/performance.md).
// In place the send goes first in its round: posted before the receive, its offer is out
// when the peer matches, so each end writes its own half of the exchange at once; the
// other order left one end idle until the other had written (2 ranks, 1 MiB: 1.5x the
// time). Out of place the receive still goes first (not re-measured; there the own
// block's copy follows the posts).

#include <initializer_list>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/patterns/pairwise.h"

namespace tutti {
namespace {

constexpr int kRoundsInFlight = 2;
constexpr StepId kNoStep = ~StepId{0};

// Offsets and counts of one rank's blocks, alltoall or alltoallv alike.
struct AlltoallBlocks {
  const CollectiveSpec& spec;
  bool v() const { return spec.kind == Collective::kAllToAllV; }
  Region send(int b) const {
    const auto i = static_cast<std::size_t>(b);
    return v() ? Region{BufferKind::kInput, spec.displs[i], spec.counts[i]}
               : Region{BufferKind::kInput, i * spec.count, spec.count};
  }
  Region recv(int b) const {
    const auto i = static_cast<std::size_t>(b);
    return v() ? Region{BufferKind::kOutput, spec.recvDispls[i], spec.recvCounts[i]}
               : Region{BufferKind::kOutput, i * spec.count, spec.count};
  }
};

void addDependencies(ScheduleBuilder& b, StepId step, std::initializer_list<StepId> on) {
  for (StepId d : on) {
    if (d != kNoStep) b.addDependency(step, d);
  }
}

constexpr std::size_t at(int i) { return static_cast<std::size_t>(i); }

// The rounds of one rank, with what later steps must wait for.
class PairwiseBuilder {
 public:
  PairwiseBuilder(const CollectiveSpec& spec, ScheduleBuilder& b)
      : spec_(spec),
        b_(b),
        blocks_{spec},
        n_(spec.size),
        r_(spec.rank),
        gate_(at(n_)),
        sendStep_(at(n_), kNoStep),
        slot_(at(n_), 0),
        stashed_(at(n_), 0),
        stashStep_(at(n_), kNoStep) {}

  // In place: scratch slots for the blocks that must wait for their send (rounds 2k <= n).
  void reserveScratch() {
    std::uint64_t total = 0;
    for (int k = 1; k < n_ && pairwise::inPlaceNeedsScratch(n_, k); ++k) {
      slot_[at(k)] = total;
      total += blocks_.send(pairwise::recvPeer(n_, r_, k)).count;
    }
    b_.reserveScratch(total);
  }

  void round(int k) {
    const int to = pairwise::sendPeer(n_, r_, k);
    const int from = pairwise::recvPeer(n_, r_, k);
    const std::vector<StepId> after =
        k > kRoundsInFlight ? gate_[at(k - kRoundsInFlight)] : std::vector<StepId>{};
    std::vector<StepId>& mine = gate_[at(k)];
    if (!spec_.inPlace) {
      receive(from, after, kNoStep, mine);
      send(to, after, mine);
    } else if (!pairwise::inPlaceNeedsScratch(n_, k)) {
      // `from`'s block lands on the block sent to `from` in round n - k, already posted.
      send(to, after, mine);
      receive(from, after, sendStep_[at(from)], mine);
    } else {
      // `from`'s block lands on the block this rank sends to `from` in round n - k (this
      // round when 2k = n): that block moves to scratch first, and is sent from there.
      // The send first unless it is that block: it does not wait for the copy.
      if (to != from) send(to, after, mine);
      StepId stash = kNoStep;
      const Region block = blocks_.send(from);
      if (block.count > 0) {
        stash = b_.copy(block, {BufferKind::kScratch, slot_[at(k)], block.count});
        stashed_[at(from)] = k;
        stashStep_[at(from)] = stash;
      }
      if (to == from) send(to, after, mine);
      receive(from, after, stash, mine);
    }
    if (mine.empty()) mine = gate_[at(k - 1)];  // nothing moved: pass the gate on
  }

 private:
  // This round's send to `to`; a block stashed in an earlier round (or this one) goes from
  // scratch.
  void send(int to, const std::vector<StepId>& after, std::vector<StepId>& mine) {
    Region src = blocks_.send(to);
    if (src.count == 0) return;
    const int stashedIn = stashed_[at(to)];
    if (stashedIn > 0) src = {BufferKind::kScratch, slot_[at(stashedIn)], src.count};
    StepId step = b_.send(to, src);
    for (StepId d : after) b_.addDependency(step, d);
    if (stashedIn > 0) b_.addDependency(step, stashStep_[at(to)]);
    sendStep_[at(to)] = step;
    mine.push_back(step);
  }

  // This round's receive from `from` into its block of the output, after `waitFor` too.
  void receive(int from, const std::vector<StepId>& after, StepId waitFor,
               std::vector<StepId>& mine) {
    const Region dst = blocks_.recv(from);
    if (dst.count == 0) return;
    StepId recv = b_.recv(from, dst);
    for (StepId d : after) b_.addDependency(recv, d);
    addDependencies(b_, recv, {waitFor});
    mine.push_back(recv);
  }

  const CollectiveSpec& spec_;
  ScheduleBuilder& b_;
  const AlltoallBlocks blocks_;
  const int n_;
  const int r_;
  std::vector<std::vector<StepId>> gate_;  // per round: the steps that have it behind them
  std::vector<StepId> sendStep_;           // per block: the send of it (kNoStep: none)
  std::vector<std::uint64_t> slot_;        // per round, in place: scratch offset
  std::vector<int> stashed_;               // per block, in place: the round that stashed it
  std::vector<StepId> stashStep_;          // per block, in place: the copy that stashed it
};

}  // namespace

Schedule buildAlltoallPairwise(const CollectiveSpec& spec) {
  ScheduleBuilder b(spec.rank, spec.size);
  const AlltoallBlocks blocks{spec};
  const Region own = blocks.recv(spec.rank);
  PairwiseBuilder rounds(spec, b);
  if (spec.inPlace) rounds.reserveScratch();
  for (int k = 1; k < spec.size; ++k) rounds.round(k);
  // Out of place, the own block last: no round touches it, and the copy then overlaps
  // with the exchanges instead of delaying the first of them.
  if (!spec.inPlace && own.count > 0)
    b.copy({BufferKind::kInput, blocks.send(spec.rank).offset, own.count}, own);
  return std::move(b).build();
}

}  // namespace tutti
