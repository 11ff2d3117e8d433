// Bruck all-to-all: ceil(log2 n) rounds for any n, in three phases (patterns/bruck.h):
//
//   1. rotation: slot i of a staging array in scratch gets the input block for rank
//      (r + i) mod n (two copies: input blocks [r, n) then [0, r));
//   2. round k = 0 .. ceil(log2 n) - 1: the slots whose index has bit k set are packed into
//      one message (they form runs of 2^k slots: one copy per run), sent to r + 2^k, and
//      the message from r - 2^k is unpacked into the same slots;
//   3. inverse rotation: slot i now holds the block from rank (r - i) mod n, copied to its
//      place in the output (one copy per block: the order reverses).
//
// The pack and unpack buffers live in the output, free until phase 3 (in place too: phase 1
// has copied the input out of it first): floor(n/2) blocks each, side by side.
//
// Steps per rank: ceil(log2 n) sends and receives; about 2n copies for packing and n + 2
// for the rotations. Bytes on the wire per rank: up to floor(n/2) blocks per round,
// (N/2) log2 n for a power of two, N bytes of input.
// Cost (alpha-beta): ceil(log2 n) alpha + (N/2) ceil(log2 n) beta, against pairwise's
// (n-1) alpha + (n-1)/n N beta: Bruck sends log n messages instead of n - 1, but a block
// travels once per set bit of its distance, up to log n times, so it wins while alpha
// dominates (small blocks, many ranks) and loses for large blocks. It also needs n blocks
// of scratch and three local passes over the data.
//
//   n = 4, slots of rank 0 (xy: the block rank x sends to rank y):
//     after phase 1   00 01 02 03
//     round 0         00 30 02 32   slots 1, 3 went to rank 1; rank 3's slots 1, 3 came in
//     round 1         00 30 20 10   slots 2, 3 went to rank 2; rank 2's slots 2, 3 came in
//     phase 3         slot i to output block (0 - i) mod 4: out = 00 10 20 30
//
// Dependencies (local hazards, all declared): a round's packs wait for the previous
// round's send (same pack buffer) and unpacks (slots they read); its receive waits for the
// previous unpacks (same unpack buffer); in round 0 both wait for phase 1 instead (in place
// the pack buffers overwrite the input); unpacks wait for the receive and the pack of their
// slots; phase 3 waits for the last send and unpacks. Each round's unpacks form a chain, so
// "all the unpacks" is one step.

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/patterns/bruck.h"

namespace tutti {
namespace {

struct BruckLayout {
  std::uint64_t c;     // elements per block
  std::uint64_t half;  // floor(n/2): where the unpack buffer starts, in blocks
  Region slots(std::uint64_t first, std::uint64_t count) const {
    return {BufferKind::kScratch, first * c, count * c};
  }
  Region packed(std::uint64_t first, std::uint64_t count) const {
    return {BufferKind::kOutput, first * c, count * c};
  }
  Region unpacked(std::uint64_t first, std::uint64_t count) const {
    return {BufferKind::kOutput, (half + first) * c, count * c};
  }
};

// Round k: packs, send, receive, unpacks. `before` holds the steps the round must wait for
// (see the file comment) and is replaced by the ones the next round must wait for.
void bruckRound(ScheduleBuilder& b, const BruckLayout& l, int k, std::vector<StepId>* before) {
  const int n = b.size();
  const int runs = bruck::alltoallRunCount(n, k);
  std::vector<StepId> packs;
  std::uint64_t at = 0;
  for (int j = 0; j < runs; ++j) {
    const bruck::SlotRun run = bruck::alltoallRun(n, k, j);
    const auto len = static_cast<std::uint64_t>(run.length);
    packs.push_back(b.copy(l.slots(static_cast<std::uint64_t>(run.first), len), l.packed(at, len)));
    for (StepId d : *before) b.addDependency(packs.back(), d);
    at += len;
  }
  StepId send = b.send(bruck::alltoallSendPeer(n, b.rank(), k), l.packed(0, at));
  for (StepId p : packs) b.addDependency(send, p);
  StepId recv = b.recv(bruck::alltoallRecvPeer(n, b.rank(), k), l.unpacked(0, at));
  // Round 0: phase 1 (in place it reads this buffer); later: the previous round.
  for (StepId d : *before) b.addDependency(recv, d);
  std::vector<StepId> unpacks;
  at = 0;
  for (int j = 0; j < runs; ++j) {
    const bruck::SlotRun run = bruck::alltoallRun(n, k, j);
    const auto len = static_cast<std::uint64_t>(run.length);
    StepId unpack = b.copy(l.unpacked(at, len), l.slots(static_cast<std::uint64_t>(run.first), len),
                           {recv, packs[static_cast<std::size_t>(j)]});
    // Chained, so that the last unpack stands for all of them (copies run when issued: the
    // chain costs nothing) and the next round waits for 2 steps, not n/2: O(n) dependencies
    // per schedule instead of O(n^2).
    if (!unpacks.empty()) b.addDependency(unpack, unpacks.back());
    unpacks.push_back(unpack);
    at += len;
  }
  *before = {unpacks.back(), send};
}

}  // namespace

Schedule buildAlltoallBruck(const CollectiveSpec& spec) {
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
  const BruckLayout l{c, un / 2};
  b.reserveScratch(un * c);

  // Phase 1: slot i = input block (r + i) mod n.
  std::vector<StepId> before{
      b.copy({BufferKind::kInput, ur * c, (un - ur) * c}, l.slots(0, un - ur))};
  if (r > 0) before.push_back(b.copy({BufferKind::kInput, 0, ur * c}, l.slots(un - ur, ur)));
  // Phase 2.
  for (int k = 0; k < bruck::rounds(n); ++k) bruckRound(b, l, k, &before);
  // Phase 3: slot i = output block (r - i) mod n.
  for (int i = 0; i < n; ++i) {
    const auto block = static_cast<std::uint64_t>(bruck::alltoallOutputBlock(n, r, i));
    StepId copy =
        b.copy(l.slots(static_cast<std::uint64_t>(i), 1), {BufferKind::kOutput, block * c, c});
    for (StepId d : before) b.addDependency(copy, d);
  }
  return std::move(b).build();
}

}  // namespace tutti
