#include "algorithms/block_layout.h"

#include <algorithm>

#include "algorithms/partition.h"
#include "base/assert.h"

namespace tutti {

RankBlocks rankBlocks(const CollectiveSpec& spec) {
  const auto n = static_cast<std::size_t>(spec.size);
  RankBlocks b;
  b.offset.resize(n);
  b.count.resize(n);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i < n; ++i) {
    switch (spec.kind) {
      case Collective::kAllGatherV:
      case Collective::kGatherV:
      case Collective::kScatterV:
        b.offset[i] = spec.displs[i];
        b.count[i] = spec.counts[i];
        break;
      case Collective::kReduceScatterV:
        b.offset[i] = running;
        b.count[i] = spec.counts[i];
        running += spec.counts[i];
        break;
      default:
        b.offset[i] = i * spec.count;
        b.count[i] = spec.count;
        break;
    }
    b.maxCount = std::max(b.maxCount, b.count[i]);
  }
  return b;
}

void appendRuns(const RankBlocks& blocks, BufferKind buffer, int first, int last,
                std::vector<Region>& runs) {
  TUTTI_ASSERT_CMP(first, <=, last);
  for (int i = first; i < last; ++i) {
    const std::uint64_t count = blocks.countOf(i);
    if (count == 0) continue;
    const std::uint64_t offset = blocks.offsetOf(i);
    if (!runs.empty() && runs.back().buffer == buffer &&
        runs.back().offset + runs.back().count == offset) {
      runs.back().count += count;
    } else {
      runs.push_back({buffer, offset, count});
    }
  }
}

CollectiveSpec chunkPhaseSpec(const CollectiveSpec& whole, Collective kind, int size, int rank,
                              bool inPlace) {
  TUTTI_ASSERT(kind == Collective::kReduceScatterV || kind == Collective::kAllGatherV ||
               kind == Collective::kScatterV);
  CollectiveSpec phase = whole;
  phase.kind = kind;
  phase.size = size;
  phase.rank = rank;
  phase.inPlace = inPlace;
  phase.count = 0;
  const auto parts = static_cast<std::uint64_t>(size);
  phase.counts.resize(static_cast<std::size_t>(size));
  phase.displs.clear();
  for (std::uint64_t i = 0; i < parts; ++i) phase.counts[i] = partCount(whole.count, parts, i);
  if (kind != Collective::kReduceScatterV) {
    phase.displs.resize(static_cast<std::size_t>(size));
    for (std::uint64_t i = 0; i < parts; ++i)
      phase.displs[i] = partOffset(whole.count, parts, i);
  }
  return phase;
}

}  // namespace tutti
