// direct.cc's one-round all-reduce, all-gather(v), all-to-all, reduce-scatter(v) and barrier in
// flat form: the output computed from every rank's whole contribution at once, for a
// transport's flat exchange (FlatExchange::flatExchange, AlgorithmInfo::flatBytes) to carry
// the round instead of messages.

#include <algorithm>
#include <cstring>

#include "algorithms/algorithm.h"
#include "base/assert.h"
#include "reduce/reduce.h"

namespace tutti {

// What direct.cc's one-round schedules compute, computed from every rank's whole
// contribution: all-reduce combines in rank order 0..n-1 as allreduce()'s steps do (the
// first combine reads two contributions where the schedule copies one and then reduces,
// the same operands in the same order); all-gather(v) places the blocks (allgatherv's
// contributions differ in size: each rank publishes its own block); all-to-all publishes
// the whole send buffer and takes block `rank` of every rank's; reduce-scatter(v) publishes
// the whole input and reduces block `rank` of every rank's; a barrier has none.
std::size_t flatBytesDirect(const CollectiveSpec& spec) {
  switch (spec.kind) {
    case Collective::kAllReduce:
    case Collective::kAllGather: return spec.bytes();
    case Collective::kAllToAll:
    case Collective::kReduceScatter:
      return spec.bytes() * static_cast<std::size_t>(spec.size);
    case Collective::kReduceScatterV: {
      // The whole input, the blocks back to back (the same counts on every rank).
      std::size_t count = 0;
      for (std::uint64_t c : spec.counts) count += c;
      return count * dataTypeSize(spec.dtype);
    }
    case Collective::kAllGatherV: {
      // The largest block: every rank computes the same, so all agree on going flat.
      std::uint64_t most = 0;
      for (std::uint64_t c : spec.counts) most = std::max(most, c);
      return most * dataTypeSize(spec.dtype);
    }
    case Collective::kBarrier: return 0;
    default: TUTTI_ASSERT(false && "no flat form for this collective"); return 0;
  }
}

std::size_t flatRankBytesDirect(const CollectiveSpec& spec, int rank) {
  if (spec.kind != Collective::kAllGatherV) return flatBytesDirect(spec);
  TUTTI_ASSERT(rank >= 0 && static_cast<std::size_t>(rank) < spec.counts.size());
  return spec.counts[static_cast<std::size_t>(rank)] * dataTypeSize(spec.dtype);
}

void flatFinishDirect(const CollectiveSpec& spec, const char* const* contributions,
                      void* output) {
  const std::size_t bytes = flatBytesDirect(spec);
  if (bytes == 0) return;
  char* out = static_cast<char*>(output);
  if (spec.kind == Collective::kAllToAll) {
    // In place, this rank's own contribution is a copy taken aside (runFlat), so writing
    // the output over the input loses nothing.
    const std::size_t block = bytes / static_cast<std::size_t>(spec.size);
    const std::size_t mine = static_cast<std::size_t>(spec.rank) * block;
    for (int r = 0; r < spec.size; ++r)
      std::memcpy(out + static_cast<std::size_t>(r) * block, contributions[r] + mine, block);
    return;
  }
  if (spec.kind == Collective::kReduceScatter || spec.kind == Collective::kReduceScatterV) {
    // Block `rank` of every contribution, combined in direct.cc's order: this rank's own,
    // then ranks rank-1, rank-2, ... (only the owner reduces its block, so the order is
    // this rank's alone; the same operands in the same order as the schedule).
    const std::size_t size = dataTypeSize(spec.dtype);
    const auto me = static_cast<std::size_t>(spec.rank);
    std::size_t count = spec.count;
    std::size_t first = me * spec.count;
    if (spec.kind == Collective::kReduceScatterV) {
      count = spec.counts[me];
      first = 0;
      for (std::size_t r = 0; r < me; ++r) first += spec.counts[r];
    }
    if (count == 0) return;
    const std::size_t mine = first * size;
    auto from = [&](int k) {
      return contributions[(spec.rank - k + spec.size) % spec.size] + mine;
    };
    if (spec.size == 1) {
      std::memcpy(out, from(0), count * size);
      return;
    }
    reduce::combine(out, from(0), from(1), count, spec.dtype, spec.op);
    for (int k = 2; k < spec.size; ++k)
      reduce::combine(out, out, from(k), count, spec.dtype, spec.op);
    if (spec.op == ReduceOp::kAvg) reduce::finalize(out, count, spec.dtype, spec.op, spec.size);
    return;
  }
  if (spec.kind == Collective::kAllGatherV) {
    // Each block at its displacement; the gaps between blocks are left as they are.
    const std::size_t size = dataTypeSize(spec.dtype);
    for (std::size_t r = 0; r < static_cast<std::size_t>(spec.size); ++r) {
      if (spec.counts[r] > 0)
        std::memcpy(out + spec.displs[r] * size, contributions[r], spec.counts[r] * size);
    }
    return;
  }
  if (spec.kind == Collective::kAllGather) {
    // In place, this rank's block is already there: copying it back changes nothing.
    for (int r = 0; r < spec.size; ++r)
      std::memcpy(out + static_cast<std::size_t>(r) * bytes, contributions[r], bytes);
    return;
  }
  if (spec.size == 1) {
    std::memcpy(out, contributions[0], bytes);
  } else {
    reduce::combine(out, contributions[0], contributions[1], spec.count, spec.dtype, spec.op);
    for (int r = 2; r < spec.size; ++r)
      reduce::combine(out, out, contributions[r], spec.count, spec.dtype, spec.op);
  }
  if (spec.op == ReduceOp::kAvg)
    reduce::finalize(out, spec.count, spec.dtype, spec.op, spec.size);
}

}  // namespace tutti
