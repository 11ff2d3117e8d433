// Recursive-doubling all-gather (allgather and allgatherv): log2 p rounds in which each
// rank swaps everything it has gathered so far with the rank whose number differs in bit k,
// so the blocks it holds double each round. Non-power-of-two worlds fold
// (patterns/butterfly.h): extra rank p+i first sends its block to core rank i, which then
// carries blocks i and p+i through the butterfly, and at the end sends extra rank p+i all
// the blocks but its own.
//
//   n = 4 (blocks held after each round):
//              start   round 0 (r ^ 1)   round 1 (r ^ 2)
//   rank 0     b0      b0 b1             b0 b1 b2 b3
//   rank 1     b1      b0 b1             b0 b1 b2 b3
//   rank 2     b2      b2 b3             b0 b1 b2 b3
//   rank 3     b3      b2 b3             b0 b1 b2 b3
//   n = 6 (p = 4): 4 -> 0 and 5 -> 1 first; in each round a core rank sends the blocks of
//   its aligned group of core ranks and of their extra partners; then 0 -> 4, 1 -> 5.
//
// Messages: a round sends a range of blocks as one message per contiguous run: one run
// (allgather, and allgatherv with back-to-back displacements) plus one for the extra
// partners' blocks when the world is not a power of two; scattered allgatherv displacements
// cost more messages per round, never more rounds.
// Steps: log2 p rounds of one or two sends and receives; plus the fold and unfold on core
// ranks 0..n-p-1 and extra ranks. Bytes on the wire per rank (N bytes of output): (p-1)/p N
// in the butterfly (uneven allgatherv blocks: what the partner's group holds), plus about
// N on core ranks with an extra partner.
// Cost (alpha-beta), f = 1 when n is not a power of two: (log2 p + 2f) alpha +
// ((n-1)/n + f) N beta. Latency-optimal; the blocks of a round travel in whole messages,
// not segments, so large messages favour the pipelined ring.
//
// Local hazards: a round sends what earlier steps wrote (the own block's copy, the extra
// partner's block, earlier rounds' receives) and depends on all of them; every receive
// writes blocks no earlier step touched, so receives depend on nothing; each round
// alternates receives and sends so that receives are posted while the sends wait.

#include <algorithm>
#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/block_layout.h"
#include "algorithms/patterns/butterfly.h"
#include "base/assert.h"

namespace tutti {
namespace {

// The output runs holding the blocks of core ranks [range) and of their extra partners.
std::vector<Region> heldRuns(const RankBlocks& blocks, int n, butterfly::RankRange range) {
  const int p = butterfly::coreSize(n);
  std::vector<Region> runs;
  appendRuns(blocks, BufferKind::kOutput, range.begin, range.end, runs);
  appendRuns(blocks, BufferKind::kOutput, std::min(n, p + range.begin), std::min(n, p + range.end),
             runs);
  return runs;
}

void dependOnAll(ScheduleBuilder& b, StepId step, const std::vector<StepId>& on) {
  for (StepId d : on) b.addDependency(step, d);
}

}  // namespace

Schedule buildAllgatherRecursiveDoubling(const CollectiveSpec& spec) {
  TUTTI_ASSERT(spec.kind == Collective::kAllGather || spec.kind == Collective::kAllGatherV);
  const int n = spec.size;
  const int r = spec.rank;
  const RankBlocks blocks = rankBlocks(spec);
  ScheduleBuilder b(r, n);
  const Region own{BufferKind::kInput, 0, blocks.countOf(r)};
  std::vector<StepId> written;  // steps that wrote the output so far
  const int fold = n == 1 ? -1 : butterfly::foldPartner(r, n);
  // A core rank without an extra partner sends exactly its own block in round 0: out of
  // place it sends it straight from the input, and copies it into the output after round
  // 0's steps (before any later round sends it from there), so the copy overlaps with the
  // first exchange instead of delaying it.
  const bool copyLate = !spec.inPlace && own.count > 0 && n > 1 && fold < 0;
  if (!spec.inPlace && own.count > 0 && !copyLate)
    written.push_back(b.copy(own, blocks.region(BufferKind::kOutput, r)));
  if (n == 1) return std::move(b).build();

  const int extra = butterfly::isExtra(r, n) ? r : fold;  // the extra rank of this pair
  std::vector<Region> allButExtra;  // what a core rank sends its extra partner at the end
  if (extra >= 0) {
    appendRuns(blocks, BufferKind::kOutput, 0, extra, allButExtra);
    appendRuns(blocks, BufferKind::kOutput, extra + 1, n, allButExtra);
  }
  if (butterfly::isExtra(r, n)) {
    if (own.count > 0) b.send(fold, own);
    for (const Region& run : allButExtra) b.recv(fold, run);
    return std::move(b).build();
  }
  if (fold >= 0 && blocks.countOf(fold) > 0)
    written.push_back(b.recv(fold, blocks.region(BufferKind::kOutput, fold)));

  for (int k = 0; k < butterfly::rounds(n); ++k) {
    const int partner = butterfly::doublingPartner(r, k);
    // Receives and sends alternate: a receive depends on nothing, so the executor (which
    // issues steps in order) posts it while the send after it waits for the previous
    // round; and with more runs than the executor's window, neither rank can fill its
    // window with receives (or sends) that only the other's unissued steps would match.
    const std::vector<Region> theirs = heldRuns(blocks, n, butterfly::doublingHeld(partner, k));
    const std::vector<Region> mine = heldRuns(blocks, n, butterfly::doublingHeld(r, k));
    std::vector<StepId> received;
    const bool fromInput = copyLate && k == 0;
    if (fromInput) TUTTI_ASSERT(mine.size() == 1 && mine[0].count == own.count);
    for (std::size_t i = 0; i < std::max(theirs.size(), mine.size()); ++i) {
      if (i < theirs.size()) received.push_back(b.recv(partner, theirs[i]));
      if (i < mine.size()) dependOnAll(b, b.send(partner, fromInput ? own : mine[i]), written);
    }
    written.insert(written.end(), received.begin(), received.end());
    if (fromInput) written.push_back(b.copy(own, blocks.region(BufferKind::kOutput, r)));
  }
  for (const Region& run : allButExtra) dependOnAll(b, b.send(fold, run), written);
  return std::move(b).build();
}

}  // namespace tutti
