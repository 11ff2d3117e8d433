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
// Dependencies: exact, block by block (BlockHistory below): each step depends directly on
// every earlier step that wrote a block it touches, and, when it writes, on those that have
// read the block since. So a round's packs wait for the unpacks that last filled their slots
// and for the previous round's pack buffer to be sent; its receive waits for the previous
// unpacks to empty the unpack buffer (in round 0 for phase 1, in place, which reads the
// same memory); an unpack waits for the receive and for the pack that read its slots; a
// phase-3 copy waits for the last writer of its slot and the last users of its output
// block. Nothing waits for a whole round it does not read, and every hazard is one
// dependency away, never left to a long chain of other steps (which keeps the verifier's
// proof of it local: a chain through 3n steps per rank made 1,024 ranks take a minute).

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/patterns/bruck.h"

namespace tutti {
namespace {

constexpr StepId kNoStep = ~StepId{0};

// The last writer of each block, and the steps that read it since, in the two spaces the
// algorithm writes: the staging slots (scratch) and the output (which, in place, is also
// the input). Blocks, not elements: every region here is whole blocks.
class BlockHistory {
 public:
  enum Space { kSlots = 0, kOutput = 1 };

  explicit BlockHistory(std::uint64_t blocks) {
    for (auto& space : blocks_) space.resize(blocks);
  }

  // Records that `step` reads (or writes) blocks [first, first + count) of `space`, and
  // makes it depend on every earlier step that wrote them (and, for a write, read them).
  void access(ScheduleBuilder& b, StepId step, Space space, std::uint64_t first,
              std::uint64_t count, bool write) {
    if (addedFor_.size() <= step) addedFor_.resize(step + 1, kNoStep);
    for (std::uint64_t i = first; i < first + count; ++i) {
      Block& block = blocks_[space][i];
      depend(b, step, block.writer);
      if (!write) {
        if (block.readers.empty() || block.readers.back() != step) block.readers.push_back(step);
        continue;
      }
      for (StepId reader : block.readers) depend(b, step, reader);
      block.readers.clear();
      block.writer = step;
    }
  }

 private:
  struct Block {
    StepId writer = kNoStep;
    std::vector<StepId> readers;
  };

  void depend(ScheduleBuilder& b, StepId step, StepId on) {
    if (on == kNoStep || on == step || addedFor_[on] == step) return;
    addedFor_[on] = step;  // once per (step, on) pair
    b.addDependency(step, on);
  }

  std::vector<Block> blocks_[2];
  std::vector<StepId> addedFor_;  // addedFor_[s] == t: step t already depends on s
};

// Steps over whole blocks, with their hazards recorded.
class BruckBuilder {
 public:
  BruckBuilder(ScheduleBuilder& b, const CollectiveSpec& spec)
      : b_(b),
        c_(spec.count),
        half_(static_cast<std::uint64_t>(spec.size) / 2),
        inPlace_(spec.inPlace),
        history_(static_cast<std::uint64_t>(spec.size)) {}

  // Copies `len` blocks; `from` in the input when `fromInput` (read-only out of place).
  void copy(BlockHistory::Space fromSpace, std::uint64_t from, BlockHistory::Space toSpace,
            std::uint64_t to, std::uint64_t len, bool fromInput = false) {
    const Region src =
        fromInput ? Region{BufferKind::kInput, from * c_, len * c_} : region(fromSpace, from, len);
    StepId step = b_.copy(src, region(toSpace, to, len));
    if (!fromInput || inPlace_) history_.access(b_, step, fromSpace, from, len, false);
    history_.access(b_, step, toSpace, to, len, true);
  }

  // Round k: packs, send, receive, unpacks (the pack buffer is the output's first half
  // blocks, the unpack buffer the next half).
  void round(int k) {
    const int n = b_.size();
    std::uint64_t at = 0;
    for (int j = 0; j < bruck::alltoallRunCount(n, k); ++j) {
      const bruck::SlotRun run = bruck::alltoallRun(n, k, j);
      const auto len = static_cast<std::uint64_t>(run.length);
      copy(BlockHistory::kSlots, static_cast<std::uint64_t>(run.first), BlockHistory::kOutput, at,
           len);
      at += len;
    }
    StepId send =
        b_.send(bruck::alltoallSendPeer(n, b_.rank(), k), region(BlockHistory::kOutput, 0, at));
    history_.access(b_, send, BlockHistory::kOutput, 0, at, false);
    StepId recv =
        b_.recv(bruck::alltoallRecvPeer(n, b_.rank(), k), region(BlockHistory::kOutput, half_, at));
    history_.access(b_, recv, BlockHistory::kOutput, half_, at, true);
    at = 0;
    for (int j = 0; j < bruck::alltoallRunCount(n, k); ++j) {
      const bruck::SlotRun run = bruck::alltoallRun(n, k, j);
      const auto len = static_cast<std::uint64_t>(run.length);
      copy(BlockHistory::kOutput, half_ + at, BlockHistory::kSlots,
           static_cast<std::uint64_t>(run.first), len);
      at += len;
    }
  }

 private:
  Region region(BlockHistory::Space space, std::uint64_t first, std::uint64_t len) const {
    return {space == BlockHistory::kSlots ? BufferKind::kScratch : BufferKind::kOutput, first * c_,
            len * c_};
  }

  ScheduleBuilder& b_;
  const std::uint64_t c_;     // elements per block
  const std::uint64_t half_;  // floor(n/2): where the unpack buffer starts, in blocks
  const bool inPlace_;        // the input is the output (then its reads are hazards too)
  BlockHistory history_;
};

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
  b.reserveScratch(un * c);
  BruckBuilder bruck(b, spec);
  using Space = BlockHistory::Space;
  // Phase 1: slot i = input block (r + i) mod n (in place the input is the output).
  bruck.copy(Space::kOutput, ur, Space::kSlots, 0, un - ur, true);
  if (r > 0) bruck.copy(Space::kOutput, 0, Space::kSlots, un - ur, ur, true);
  // Phase 2.
  for (int k = 0; k < bruck::rounds(n); ++k) bruck.round(k);
  // Phase 3: slot i = output block (r - i) mod n.
  for (int i = 0; i < n; ++i) {
    const auto block = static_cast<std::uint64_t>(bruck::alltoallOutputBlock(n, r, i));
    bruck.copy(Space::kSlots, static_cast<std::uint64_t>(i), Space::kOutput, block, 1);
  }
  return std::move(b).build();
}

}  // namespace tutti
