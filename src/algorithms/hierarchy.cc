#include "algorithms/hierarchy.h"

#include <algorithm>

#include "algorithms/algorithm.h"
#include "algorithms/partition.h"
#include "base/assert.h"
#include "base/strings.h"

namespace tutti {

std::string hierarchyUnsupported(const CollectiveSpec& spec) {
  if (spec.hosts == nullptr) return "no host map (the communicator's ranks share one host)";
  if (spec.hosts->size() != spec.size)
    return strFormat("the host map has %d ranks, the call %d", spec.hosts->size(), spec.size);
  if (spec.hosts->hostCount() < 2) return "every rank is on one host";
  return {};
}

bool isHierarchical(const AlgorithmInfo& info) {
  return info.unsupportedReason == &hierarchyUnsupported;
}

HostPlace::HostPlace(const CollectiveSpec& spec) : map(spec.hosts) {
  TUTTI_ASSERT(map != nullptr);
  host = map->hostOf[static_cast<std::size_t>(spec.rank)];
  local = map->localIndex[static_cast<std::size_t>(spec.rank)];
}

int HostPlace::minLocal() const {
  int least = localSize(0);
  for (int h = 1; h < hosts(); ++h) least = std::min(least, localSize(h));
  return least;
}

int HostPlace::maxLocal() const {
  int most = 0;
  for (int h = 0; h < hosts(); ++h) most = std::max(most, localSize(h));
  return most;
}

std::vector<int> HostPlace::column(int c) const {
  std::vector<int> ranks;
  ranks.reserve(static_cast<std::size_t>(hosts()));
  for (int h = 0; h < hosts(); ++h) ranks.push_back(columnRank(h, c));
  return ranks;
}

std::vector<int> HostPlace::columnsServed(int h, int j) const {
  std::vector<int> columns;
  for (int c = j; c < maxLocal(); c += localSize(h)) columns.push_back(c);
  return columns;
}

std::vector<int> HostPlace::blocksServed(int h, int j) const {
  std::vector<int> ranks;
  for (int c : columnsServed(h, j)) {
    for (int k = 0; k < hosts(); ++k)
      if (c < localSize(k)) ranks.push_back(ranksOf(k)[static_cast<std::size_t>(c)]);
  }
  return ranks;
}

CollectiveSpec groupSpec(const CollectiveSpec& whole, Collective kind, std::uint64_t count,
                         int groupSize, int index, bool inPlace, bool sharedMemory) {
  CollectiveSpec s;
  s.kind = kind;
  s.count = count;
  s.dtype = whole.dtype;
  s.op = whole.op;
  s.inPlace = inPlace;
  s.rank = index;
  s.size = groupSize;
  s.segmentCount = whole.segmentCount;
  s.sharedMemory = sharedMemory;
  return s;
}

Schedule buildGroupPhase(const CollectiveSpec& phase, const std::vector<int>& members,
                         int worldSize) {
  TUTTI_ASSERT_CMP(static_cast<std::size_t>(phase.size), ==, members.size());
  // The group's spec has no host map, so no hierarchical algorithm applies to it: the
  // choice is a flat one.
  const AlgorithmInfo* info = defaultAlgorithm(phase);
  TUTTI_ASSERT(info != nullptr);
  return embed(info->build(phase), members, worldSize);
}

std::vector<int> ringOrderByHost(const CollectiveSpec& spec) {
  if (spec.hosts == nullptr || spec.hosts->size() != spec.size) return {};
  std::vector<int> order;
  for (const auto& ranks : spec.hosts->ranksOf) order.insert(order.end(), ranks.begin(), ranks.end());
  for (std::size_t i = 0; i < order.size(); ++i)
    if (order[i] != static_cast<int>(i)) return order;
  return {};
}

Schedule emptySchedule(const CollectiveSpec& spec) {
  return std::move(ScheduleBuilder(spec.rank, spec.size)).build();
}

int indexIn(const std::vector<int>& members, int rank) {
  const auto it = std::find(members.begin(), members.end(), rank);
  return it == members.end() ? -1 : static_cast<int>(it - members.begin());
}

int pipelinePieces(const CollectiveSpec& spec, std::uint64_t count) {
  return static_cast<int>(
      std::clamp<std::uint64_t>(count / std::max<std::uint64_t>(spec.segmentCount, 1), 1, 4));
}

RankBlocks blockPieces(const RankBlocks& blocks, std::uint64_t pieces, std::uint64_t piece) {
  RankBlocks out;
  out.offset.resize(blocks.offset.size());
  out.count.resize(blocks.count.size());
  for (std::size_t q = 0; q < blocks.count.size(); ++q) {
    out.offset[q] = blocks.offset[q] + partOffset(blocks.count[q], pieces, piece);
    out.count[q] = partCount(blocks.count[q], pieces, piece);
    out.maxCount = std::max(out.maxCount, out.count[q]);
  }
  return out;
}

Schedule sideBySide(const CollectiveSpec& spec, std::vector<Schedule> parts,
                    std::uint64_t sharedScratch) {
  ScheduleAssembler out(spec.rank, spec.size, sharedScratch);
  for (Schedule& part : parts)
    if (!part.steps.empty()) out.add(std::move(part));
  return std::move(out).build();
}

Schedule assemblePipeline(const CollectiveSpec& spec, std::vector<std::vector<Schedule>> pieces,
                          std::uint64_t sharedScratch) {
  ScheduleAssembler out(spec.rank, spec.size, sharedScratch);
  std::size_t phases = 0;
  for (const auto& piece : pieces) phases = std::max(phases, piece.size());
  // Per piece: the part holding its last non-empty phase so far.
  std::vector<std::vector<ScheduleAssembler::PartId>> last(pieces.size());
  for (std::size_t wave = 0; wave + 1 < pieces.size() + phases; ++wave) {
    for (std::size_t p = 0; p < pieces.size() && p <= wave; ++p) {
      const std::size_t k = wave - p;
      if (k >= pieces[p].size() || pieces[p][k].steps.empty()) continue;
      last[p] = {out.add(std::move(pieces[p][k]), last[p])};
    }
  }
  return std::move(out).build();
}

Schedule buildInPieces(const CollectiveSpec& spec, PieceBuilder piece, std::uint64_t sharedScratch) {
  if (spec.count == 0) return emptySchedule(spec);
  const HostPlace place(spec);
  const auto pieces = static_cast<std::uint64_t>(pipelinePieces(spec, spec.count));
  std::vector<std::vector<Schedule>> all;
  for (std::uint64_t p = 0; p < pieces; ++p)
    all.push_back(piece(spec, place, partOffset(spec.count, pieces, p), partCount(spec.count, pieces, p)));
  return assemblePipeline(spec, std::move(all), sharedScratch);
}

}  // namespace tutti
