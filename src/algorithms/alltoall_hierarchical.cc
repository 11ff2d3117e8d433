// Hierarchical all-to-all, aggregated per host pair (DESIGN.md 4, Hierarchy): each host
// sends one message to each other host, where a flat all-to-all has L x L' messages cross
// between two hosts of L and L' ranks. For many small blocks between hosts, where each
// message's latency dominates.
//
// For hosts h and h', the aggregator of h -> h' is local rank h' mod L_h of h, and the
// receiver is local rank h mod L_h' of h'.
//   0. on the host: every rank sends each local rank its block directly;
//   1. every rank of h sends the aggregator of h -> h' its blocks for h''s ranks, which it
//      packs as [source local rank][destination local rank];
//   2. the aggregator sends the pack to the receiver: one message per host pair;
//   3. the receiver hands each local rank the blocks meant for it.
//
// Each block crosses the network once, as in the flat all-to-all, plus up to two copies
// through shared memory on the hosts. In place, the received blocks wait in scratch until
// every send has read the buffer, then move into it.

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/hierarchy.h"

namespace tutti {
namespace {

bool consecutive(const std::vector<int>& ranks) {
  for (std::size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i] != ranks[i - 1] + 1) return false;
  return true;
}

}  // namespace

Schedule buildAlltoallHierarchical(const CollectiveSpec& spec) {
  const HostPlace place(spec);
  const std::uint64_t c = spec.count;
  ScheduleBuilder b(spec.rank, spec.size);
  if (c == 0) return std::move(b).build();
  const int H = place.hosts();
  const std::vector<int>& hostRanks = place.ranksOf(place.host);
  const int L = static_cast<int>(hostRanks.size());
  auto in = [&](int q) { return Region{BufferKind::kInput, static_cast<std::uint64_t>(q) * c, c}; };
  // In place, blocks from other ranks land in scratch [staged, staged + n c) first.
  std::uint64_t staged = 0;
  auto out = [&](int q) {
    if (spec.inPlace && q != spec.rank)
      return Region{BufferKind::kScratch, staged + static_cast<std::uint64_t>(q) * c, c};
    return Region{BufferKind::kOutput, static_cast<std::uint64_t>(q) * c, c};
  };
  auto local = [&](int h, int i) { return place.ranksOf(h)[static_cast<std::size_t>(i)]; };
  auto aggregator = [&](int from, int to) { return local(from, to % place.localSize(from)); };
  auto receiver = [&](int from, int to) { return local(to, from % place.localSize(to)); };

  // Scratch: the packs this rank aggregates (per destination host) and receives (per
  // source host), each [source local][destination local] blocks of c.
  std::uint64_t scratch = 0;
  std::vector<std::uint64_t> sendPack(static_cast<std::size_t>(H), 0), recvPack(sendPack);
  for (int h = 0; h < H; ++h) {
    if (h == place.host) continue;
    const auto blocks = static_cast<std::uint64_t>(L * place.localSize(h));
    if (aggregator(place.host, h) == spec.rank) {
      sendPack[static_cast<std::size_t>(h)] = scratch;
      scratch += blocks * c;
    }
    if (receiver(h, place.host) == spec.rank) {
      recvPack[static_cast<std::size_t>(h)] = scratch;
      scratch += blocks * c;
    }
  }
  staged = scratch;
  if (spec.inPlace) scratch += static_cast<std::uint64_t>(spec.size) * c;
  b.reserveScratch(scratch);
  auto packBlock = [&](std::uint64_t base, int dstLocalSize, int srcLocal, int dstLocal,
                       std::uint64_t blocks = 1) {
    return Region{BufferKind::kScratch,
                  base + static_cast<std::uint64_t>(srcLocal * dstLocalSize + dstLocal) * c,
                  blocks * c};
  };

  // 0. On the host, directly.
  if (!spec.inPlace) b.copy(in(spec.rank), out(spec.rank));
  for (int k = 1; k < L; ++k) {
    const int from = hostRanks[static_cast<std::size_t>((place.local - k + L) % L)];
    b.recv(from, out(from));
    b.send(hostRanks[static_cast<std::size_t>((place.local + k) % L)],
           in(hostRanks[static_cast<std::size_t>((place.local + k) % L)]));
  }

  // 1. Blocks for each other host to its aggregator here, host by host, so that every
  // rank of the host works on the same destination host at a time.
  std::vector<std::vector<StepId>> filled(static_cast<std::size_t>(H));
  for (int h = 0; h < H; ++h) {
    if (h == place.host) continue;
    const int Lh = place.localSize(h);
    const std::vector<int>& dst = place.ranksOf(h);
    const int agg = aggregator(place.host, h);
    if (agg != spec.rank) {
      if (consecutive(dst)) {
        b.send(agg, {BufferKind::kInput, static_cast<std::uint64_t>(dst[0]) * c,
                     static_cast<std::uint64_t>(dst.size()) * c});
      } else {
        for (int q : dst) b.send(agg, in(q));
      }
      continue;
    }
    const std::uint64_t base = sendPack[static_cast<std::size_t>(h)];
    auto& steps = filled[static_cast<std::size_t>(h)];
    for (int j = 0; j < L; ++j) {
      const int src = hostRanks[static_cast<std::size_t>(j)];
      if (src == spec.rank) continue;
      if (consecutive(dst)) {
        steps.push_back(b.recv(src, packBlock(base, Lh, j, 0, static_cast<std::uint64_t>(Lh))));
      } else {
        for (int k = 0; k < Lh; ++k) steps.push_back(b.recv(src, packBlock(base, Lh, j, k)));
      }
    }
    for (int k = 0; k < Lh; ++k)
      steps.push_back(b.copy(in(local(h, k)), packBlock(base, Lh, place.local, k)));
  }

  // 2. One message per host pair, host by host: the pack from each other host (where this
  // rank receives it) and the pack to it (where this rank aggregates it).
  std::vector<StepId> arrived(static_cast<std::size_t>(H), 0);
  for (int h = 0; h < H; ++h) {
    if (h == place.host) continue;
    const auto blocks = static_cast<std::uint64_t>(L * place.localSize(h));
    if (receiver(h, place.host) == spec.rank)
      arrived[static_cast<std::size_t>(h)] =
          b.recv(aggregator(h, place.host),
                 {BufferKind::kScratch, recvPack[static_cast<std::size_t>(h)], blocks * c});
    if (aggregator(place.host, h) == spec.rank) {
      const StepId send =
          b.send(receiver(place.host, h),
                 {BufferKind::kScratch, sendPack[static_cast<std::size_t>(h)], blocks * c});
      for (StepId s : filled[static_cast<std::size_t>(h)]) b.addDependency(send, s);
    }
  }

  // 3. Each received pack's blocks to their local ranks; and this rank's own blocks from
  // the receiver of every other host's pack.
  for (int h = 0; h < H; ++h) {
    if (h == place.host) continue;
    const int Lh = place.localSize(h);
    const int from = receiver(h, place.host);
    if (from == spec.rank) {
      const std::uint64_t base = recvPack[static_cast<std::size_t>(h)];
      const StepId got = arrived[static_cast<std::size_t>(h)];
      for (int k = 0; k < L; ++k) {
        for (int j = 0; j < Lh; ++j) {
          if (hostRanks[static_cast<std::size_t>(k)] == spec.rank)
            b.copy(packBlock(base, L, j, k), out(local(h, j)), {got});
          else
            b.send(hostRanks[static_cast<std::size_t>(k)], packBlock(base, L, j, k), {got});
        }
      }
    } else {
      for (int j = 0; j < Lh; ++j) b.recv(from, out(local(h, j)));
    }
  }
  if (!spec.inPlace) return std::move(b).build();
  // In place: once every step is done (every send has read the buffer), the staged blocks
  // move into it.
  ScheduleAssembler whole(spec.rank, spec.size, scratch);
  const ScheduleAssembler::PartId exchange = whole.add(std::move(b).build());
  ScheduleBuilder settle(spec.rank, spec.size);
  for (int q = 0; q < spec.size; ++q)
    if (q != spec.rank) settle.copy(out(q), {BufferKind::kOutput, static_cast<std::uint64_t>(q) * c, c});
  whole.add(std::move(settle).build(), {exchange});
  return std::move(whole).build();
}

}  // namespace tutti
