// Recursive-doubling all-reduce: log2 p rounds in which each rank exchanges its whole
// partial result with the rank whose number differs in bit k, and both combine the two.
// Non-power-of-two worlds fold (patterns/butterfly.h): extra rank p+i sends its input to
// core rank i first and gets the result back at the end.
//
// Determinism: partners combine in the same operand order, the lower rank's data first, so
// both compute bit-for-bit the same value and after the last round every core rank holds
// the same expression tree; extra ranks receive a copy. The lower rank does
// recvReduce(src = its data): own + received. The higher rank receives into its other
// buffer and then reduce(src = its data, dst = received): received + own. The fold puts the
// extra rank (always the higher) second too.
//
//   n = 4:     round 0 (r ^ 1)          round 1 (r ^ 2)
//   rank 0     x0+x1                    (x0+x1)+(x2+x3)
//   rank 1     x0+x1                    (x0+x1)+(x2+x3)
//   rank 2     x2+x3                    (x0+x1)+(x2+x3)
//   rank 3     x2+x3                    (x0+x1)+(x2+x3)
//   n = 6 (p = 4): first 4 -> 0 and 5 -> 1 (rank 0 holds x0+x4, rank 1 x1+x5), then the
//   rounds above on ranks 0..3, then 0 -> 4 and 1 -> 5 send the result.
//
// Steps: log2 p rounds of one send and one receive (+ one local reduce on the higher rank),
// plus a fold receive and an unfold send on core ranks 0..n-p-1. Bytes on the wire per rank:
// log2(p) N on the core (+ N each way with an extra partner), N each way on extra ranks.
// Cost (alpha-beta-gamma), f = 1 when n is not a power of two: (log2 p + 2f) alpha +
// (log2 p + 2f) N beta + (log2 p + f) N gamma. Latency-optimal; for large N the log2 p
// factor on the bandwidth term makes ring or rabenseifner better.
//
// Buffers and hazards: a round sends the rank's current partial result and receives the
// partner's into a *different* buffer (a receive into the buffer being sent would have to
// wait for the send, and with two partners doing it neither send could complete). The
// partial result therefore alternates between the output and a scratch buffer of N
// elements, chosen so that the last round lands in the output; out of place the first
// round reads the input directly. Only in place with an odd number of reductions does the
// result end in scratch and need one local copy. Each write depends on the steps that read
// the previous contents of its buffer (the send and the reduction of two rounds before) and
// each read on the last write, tracked per buffer below.

#include <array>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/patterns/butterfly.h"
#include "base/assert.h"

namespace tutti {
namespace {

enum Buffer : int { kIn = 0, kOut = 1, kTmp = 2 };

// Per buffer, the last step that wrote it and the steps that read it since then.
class Hazards {
 public:
  explicit Hazards(ScheduleBuilder& b) : b_(b) {}

  void read(StepId step, Buffer buffer) {
    State& s = state_[buffer];
    if (s.written) b_.addDependency(step, s.writer);
    s.readers.push_back(step);
  }
  void write(StepId step, Buffer buffer) {
    State& s = state_[buffer];
    for (StepId reader : s.readers) {
      if (reader != step) b_.addDependency(step, reader);
    }
    if (s.written && s.writer != step) b_.addDependency(step, s.writer);
    s.readers.clear();
    s.writer = step;
    s.written = true;
  }

 private:
  struct State {
    std::vector<StepId> readers;
    StepId writer = 0;
    bool written = false;
  };
  ScheduleBuilder& b_;
  std::array<State, 3> state_;
};

}  // namespace

Schedule buildAllreduceRecursiveDoubling(const CollectiveSpec& spec) {
  const int n = spec.size;
  const int r = spec.rank;
  const std::uint64_t count = spec.count;
  ScheduleBuilder b(r, n);
  if (count == 0) return std::move(b).build();
  const std::array<Region, 3> region = {Region{BufferKind::kInput, 0, count},
                                        Region{BufferKind::kOutput, 0, count},
                                        Region{BufferKind::kScratch, 0, count}};
  if (n == 1) {
    b.setFinalize(b.copy(region[kIn], region[kOut]));  // in place: onto itself, for kAvg
    return std::move(b).build();
  }
  const int fold = butterfly::foldPartner(r, n);
  if (butterfly::isExtra(r, n)) {
    const StepId sent = b.send(fold, region[kIn]);
    b.recv(fold, region[kOut], {sent});  // in place the result overwrites what was sent
    return std::move(b).build();
  }

  // The ranks this one reduces with, in order: the folded extra rank (it only receives from
  // it), then the butterfly partners.
  std::vector<int> peers;
  if (fold >= 0) peers.push_back(fold);
  for (int k = 0; k < butterfly::rounds(n); ++k) peers.push_back(butterfly::doublingPartner(r, k));
  const int reductions = static_cast<int>(peers.size());
  // Reduction j writes the output when (reductions - 1 - j) is even, so the last one does;
  // in place with an odd count the first would write the buffer it reads: shift by one.
  const int shift = spec.inPlace && reductions % 2 == 1 ? 1 : 0;

  Hazards hazards(b);
  Buffer work = spec.inPlace ? kOut : kIn;
  StepId produced = 0;
  for (int j = 0; j < reductions; ++j) {
    const int peer = peers[static_cast<std::size_t>(j)];
    const Buffer dest = (reductions - 1 - j + shift) % 2 == 0 ? kOut : kTmp;
    TUTTI_ASSERT(dest != work);
    if (dest == kTmp) b.reserveScratch(count);
    if (peer != fold) hazards.read(b.send(peer, region[work]), work);
    if (r < peer) {
      produced = b.recvReduce(peer, region[work], region[dest]);  // own + received
    } else {
      const StepId got = b.recv(peer, region[dest]);
      hazards.write(got, dest);
      // received + own; it depends on `got` as the last writer of dest (below).
      produced = b.reduce(region[work], region[dest]);
    }
    hazards.read(produced, work);
    hazards.write(produced, dest);
    work = dest;
  }
  if (work != kOut) {
    produced = b.copy(region[work], region[kOut]);
    hazards.read(produced, work);
    hazards.write(produced, kOut);
  }
  b.setFinalize(produced);
  if (fold >= 0) hazards.read(b.send(fold, region[kOut]), kOut);
  return std::move(b).build();
}

}  // namespace tutti
