// Hierarchical gather(v) and scatter(v) (DESIGN.md 4, Hierarchy): one message per host
// crosses the network. Each host has a leader (the root on the root's host, the first rank
// elsewhere).
//
//   gather:  each rank sends its block to its host's leader; each leader other than the
//            root packs its host's blocks (in local order) and sends the pack to the root
//            in one message; the root places each pack's blocks.
//   scatter: the mirror: the root sends each other host's leader the pack of its ranks'
//            blocks, and each leader hands them out on its host.
//
// The root receives (sends) H - 1 messages over the network and L - 1 on its host, where a
// flat direct gather has n - 1 messages cross, most of them to other hosts. Where a host's
// blocks lie back to back in the root's buffer in local order (ranks numbered host by
// host), the pack is received into (sent from) the root's buffer itself; otherwise it goes
// through the root's scratch, one copy per block.

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/block_layout.h"
#include "algorithms/hierarchy.h"

namespace tutti {
namespace {

// Host h's blocks, packed in local order: where each starts in the pack, and the total.
struct Pack {
  std::vector<std::uint64_t> at;
  std::uint64_t count = 0;
  bool inPlaceAtRoot = true;  // the blocks lie back to back in the root's buffer
  std::uint64_t rootOffset = 0;
};

Pack packOf(const HostPlace& place, const RankBlocks& blocks, int h) {
  Pack pack;
  const std::vector<int>& ranks = place.ranksOf(h);
  pack.rootOffset = blocks.offsetOf(ranks[0]);
  for (int r : ranks) {
    pack.at.push_back(pack.count);
    if (blocks.offsetOf(r) != pack.rootOffset + pack.count && blocks.countOf(r) > 0)
      pack.inPlaceAtRoot = false;
    pack.count += blocks.countOf(r);
  }
  return pack;
}

Region scratch(std::uint64_t offset, std::uint64_t count) {
  return {BufferKind::kScratch, offset, count};
}

}  // namespace

Schedule buildGatherHierarchical(const CollectiveSpec& spec) {
  const HostPlace place(spec);
  const RankBlocks blocks = rankBlocks(spec);  // of the root's output
  const int leader = place.leader(place.host, spec.root);
  const std::uint64_t own = blocks.countOf(spec.rank);
  const Region input{BufferKind::kInput, 0, own};
  ScheduleBuilder b(spec.rank, spec.size);

  if (spec.rank != leader) {  // to the host's leader
    if (own > 0) b.send(leader, input);
    return std::move(b).build();
  }
  const std::vector<int>& hostRanks = place.ranksOf(place.host);
  if (spec.rank != spec.root) {  // a leader: pack the host's blocks, send the pack
    const Pack pack = packOf(place, blocks, place.host);
    b.reserveScratch(pack.count);
    std::vector<StepId> packed;
    for (std::size_t i = 0; i < hostRanks.size(); ++i) {
      const std::uint64_t count = blocks.countOf(hostRanks[i]);
      if (count == 0) continue;
      packed.push_back(hostRanks[i] == spec.rank ? b.copy(input, scratch(pack.at[i], count))
                                                 : b.recv(hostRanks[i], scratch(pack.at[i], count)));
    }
    if (pack.count > 0) {
      const StepId send = b.send(spec.root, scratch(0, pack.count));
      for (StepId s : packed) b.addDependency(send, s);
    }
    return std::move(b).build();
  }
  // The root: its own host's blocks straight into place, every other host's pack.
  if (!spec.inPlace && own > 0) b.copy(input, blocks.region(BufferKind::kOutput, spec.rank));
  for (int r : hostRanks)
    if (r != spec.rank && blocks.countOf(r) > 0) b.recv(r, blocks.region(BufferKind::kOutput, r));
  std::uint64_t staged = 0;
  for (int h = 0; h < place.hosts(); ++h) {
    if (h == place.host) continue;
    const Pack pack = packOf(place, blocks, h);
    if (pack.count == 0) continue;
    const int from = place.leader(h, spec.root);
    if (pack.inPlaceAtRoot) {
      b.recv(from, {BufferKind::kOutput, pack.rootOffset, pack.count});
      continue;
    }
    const StepId received = b.recv(from, scratch(staged, pack.count));
    const std::vector<int>& ranks = place.ranksOf(h);
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (blocks.countOf(ranks[i]) > 0)
        b.copy(scratch(staged + pack.at[i], blocks.countOf(ranks[i])),
               blocks.region(BufferKind::kOutput, ranks[i]), {received});
    staged += pack.count;
  }
  b.reserveScratch(staged);
  return std::move(b).build();
}

Schedule buildScatterHierarchical(const CollectiveSpec& spec) {
  const HostPlace place(spec);
  const RankBlocks blocks = rankBlocks(spec);  // of the root's input
  const int leader = place.leader(place.host, spec.root);
  const std::uint64_t own = blocks.countOf(spec.rank);
  const Region output{BufferKind::kOutput, 0, own};
  ScheduleBuilder b(spec.rank, spec.size);

  if (spec.rank != leader) {  // from the host's leader
    if (own > 0) b.recv(leader, output);
    return std::move(b).build();
  }
  const std::vector<int>& hostRanks = place.ranksOf(place.host);
  if (spec.rank != spec.root) {  // a leader: receive the host's pack, hand it out
    const Pack pack = packOf(place, blocks, place.host);
    b.reserveScratch(pack.count);
    if (pack.count == 0) return std::move(b).build();
    const StepId received = b.recv(spec.root, scratch(0, pack.count));
    for (std::size_t i = 0; i < hostRanks.size(); ++i) {
      const std::uint64_t count = blocks.countOf(hostRanks[i]);
      if (count == 0) continue;
      if (hostRanks[i] == spec.rank) b.copy(scratch(pack.at[i], count), output, {received});
      else b.send(hostRanks[i], scratch(pack.at[i], count), {received});
    }
    return std::move(b).build();
  }
  // The root: its own host's blocks straight from place, every other host's pack.
  if (!spec.inPlace && own > 0) b.copy(blocks.region(BufferKind::kInput, spec.rank), output);
  for (int r : hostRanks)
    if (r != spec.rank && blocks.countOf(r) > 0) b.send(r, blocks.region(BufferKind::kInput, r));
  std::uint64_t staged = 0;
  for (int h = 0; h < place.hosts(); ++h) {
    if (h == place.host) continue;
    const Pack pack = packOf(place, blocks, h);
    if (pack.count == 0) continue;
    const int to = place.leader(h, spec.root);
    if (pack.inPlaceAtRoot) {
      b.send(to, {BufferKind::kInput, pack.rootOffset, pack.count});
      continue;
    }
    const std::vector<int>& ranks = place.ranksOf(h);
    std::vector<StepId> packed;
    for (std::size_t i = 0; i < ranks.size(); ++i)
      if (blocks.countOf(ranks[i]) > 0)
        packed.push_back(b.copy(blocks.region(BufferKind::kInput, ranks[i]),
                                scratch(staged + pack.at[i], blocks.countOf(ranks[i]))));
    const StepId send = b.send(to, scratch(staged, pack.count));
    for (StepId s : packed) b.addDependency(send, s);
    staged += pack.count;
  }
  b.reserveScratch(staged);
  return std::move(b).build();
}

}  // namespace tutti
