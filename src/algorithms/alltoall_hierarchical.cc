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
//
// Blocks of several segments are cut into up to 4 pieces (every block alike), each run
// through the stages above as phases pipelined between the levels (assemblePipeline):
// 1 (packing), 2 (the host pairs' messages), 3 with 0 (the host's own exchange), and in
// place the move into the buffer. Piece p + 1 is packed while piece p crosses the network,
// which crosses while piece p - 1 is handed out on the hosts. Each piece has packs of its
// own: the pieces need no more scratch than whole blocks; one message per host pair and
// piece.

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/hierarchy.h"
#include "algorithms/partition.h"

namespace tutti {
namespace {

bool consecutive(const std::vector<int>& ranks) {
  for (std::size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i] != ranks[i - 1] + 1) return false;
  return true;
}

// One rank's scratch: the packs it aggregates (per destination host) and receives (per
// source host), each [source local][destination local] blocks, for every piece (piece p's
// packs hold its part of each block, after the earlier pieces' packs); then, in place,
// the received blocks staged until the buffer is free.
struct Scratch {
  std::vector<std::uint64_t> sendSlot, recvSlot;  // per host: first block slot of its pack
  std::uint64_t slots = 0;                        // block slots of one piece's packs
  std::uint64_t staged = 0;                       // where the staged blocks begin
  std::uint64_t total = 0;
};

struct Alltoall {
  const CollectiveSpec& spec;
  const HostPlace& place;
  const Scratch& scratch;
  std::uint64_t c;       // the whole block
  std::uint64_t at, pc;  // this piece of every block: [at, at + pc) of it

  int local(int h, int i) const { return place.ranksOf(h)[static_cast<std::size_t>(i)]; }
  int aggregator(int from, int to) const { return local(from, to % place.localSize(from)); }
  int receiver(int from, int to) const { return local(to, from % place.localSize(to)); }
  Region in(int q) const { return {BufferKind::kInput, static_cast<std::uint64_t>(q) * c + at, pc}; }
  // In place, blocks from other ranks land in scratch first.
  Region out(int q) const {
    const std::uint64_t offset = static_cast<std::uint64_t>(q) * c + at;
    if (spec.inPlace && q != spec.rank) return {BufferKind::kScratch, scratch.staged + offset, pc};
    return {BufferKind::kOutput, offset, pc};
  }
  // Blocks of this piece's pack that starts at block slot `slot`.
  Region packBlock(std::uint64_t slot, int dstLocalSize, int srcLocal, int dstLocal,
                   std::uint64_t blocks = 1) const {
    const auto index = slot + static_cast<std::uint64_t>(srcLocal * dstLocalSize + dstLocal);
    return {BufferKind::kScratch, scratch.slots * at + index * pc, blocks * pc};
  }
  ScheduleBuilder builder() const {
    ScheduleBuilder b(spec.rank, spec.size);
    b.reserveScratch(scratch.total);
    return b;
  }

  std::vector<Schedule> phases() const;
};

std::vector<Schedule> Alltoall::phases() const {
  const int H = place.hosts();
  const std::vector<int>& hostRanks = place.ranksOf(place.host);
  const int L = static_cast<int>(hostRanks.size());

  // 1. Blocks for each other host to its aggregator here, host by host, so that every
  // rank of the host works on the same destination host at a time.
  ScheduleBuilder pack = builder();
  for (int h = 0; h < H; ++h) {
    if (h == place.host) continue;
    const int Lh = place.localSize(h);
    const std::vector<int>& dst = place.ranksOf(h);
    const int agg = aggregator(place.host, h);
    if (agg != spec.rank) {
      if (consecutive(dst) && at == 0 && pc == c) {
        pack.send(agg, {BufferKind::kInput, static_cast<std::uint64_t>(dst[0]) * c,
                        static_cast<std::uint64_t>(dst.size()) * c});
      } else {
        for (int q : dst) pack.send(agg, in(q));
      }
      continue;
    }
    const std::uint64_t slot = scratch.sendSlot[static_cast<std::size_t>(h)];
    for (int j = 0; j < L; ++j) {
      const int src = hostRanks[static_cast<std::size_t>(j)];
      if (src == spec.rank) continue;
      if (consecutive(dst) && at == 0 && pc == c) {
        pack.recv(src, packBlock(slot, Lh, j, 0, static_cast<std::uint64_t>(Lh)));
      } else {
        for (int k = 0; k < Lh; ++k) pack.recv(src, packBlock(slot, Lh, j, k));
      }
    }
    for (int k = 0; k < Lh; ++k) pack.copy(in(local(h, k)), packBlock(slot, Lh, place.local, k));
  }

  // 2. One message per host pair, host by host: the pack from each other host (where this
  // rank receives it) and the pack to it (where this rank aggregates it).
  ScheduleBuilder exchange = builder();
  for (int h = 0; h < H; ++h) {
    if (h == place.host) continue;
    const auto blocks = static_cast<std::uint64_t>(L * place.localSize(h));
    if (receiver(h, place.host) == spec.rank)
      exchange.recv(aggregator(h, place.host),
                    packBlock(scratch.recvSlot[static_cast<std::size_t>(h)], 0, 0, 0, blocks));
    if (aggregator(place.host, h) == spec.rank)
      exchange.send(receiver(place.host, h),
                    packBlock(scratch.sendSlot[static_cast<std::size_t>(h)], 0, 0, 0, blocks));
  }

  // 0. On the host, directly; then 3. each received pack's blocks to their local ranks,
  // and this rank's own blocks from the receiver of every other host's pack.
  ScheduleBuilder hand = builder();
  if (!spec.inPlace) hand.copy(in(spec.rank), out(spec.rank));
  for (int k = 1; k < L; ++k) {
    const int from = hostRanks[static_cast<std::size_t>((place.local - k + L) % L)];
    hand.recv(from, out(from));
    const int to = hostRanks[static_cast<std::size_t>((place.local + k) % L)];
    hand.send(to, in(to));
  }
  for (int h = 0; h < H; ++h) {
    if (h == place.host) continue;
    const int Lh = place.localSize(h);
    const int from = receiver(h, place.host);
    if (from == spec.rank) {
      const std::uint64_t slot = scratch.recvSlot[static_cast<std::size_t>(h)];
      for (int k = 0; k < L; ++k) {
        for (int j = 0; j < Lh; ++j) {
          if (hostRanks[static_cast<std::size_t>(k)] == spec.rank)
            hand.copy(packBlock(slot, L, j, k), out(local(h, j)));
          else
            hand.send(hostRanks[static_cast<std::size_t>(k)], packBlock(slot, L, j, k));
        }
      }
    } else {
      for (int j = 0; j < Lh; ++j) hand.recv(from, out(local(h, j)));
    }
  }

  std::vector<Schedule> phases;
  phases.push_back(std::move(pack).build());
  phases.push_back(std::move(exchange).build());
  phases.push_back(std::move(hand).build());
  if (spec.inPlace) {
    // Once this piece's steps are done (its sends have read the buffer), its staged
    // blocks move into it.
    ScheduleBuilder settle = builder();
    for (int q = 0; q < spec.size; ++q)
      if (q != spec.rank)
        settle.copy(out(q), {BufferKind::kOutput, static_cast<std::uint64_t>(q) * c + at, pc});
    phases.push_back(std::move(settle).build());
  }
  return phases;
}

}  // namespace

Schedule buildAlltoallHierarchical(const CollectiveSpec& spec) {
  const std::uint64_t c = spec.count;
  if (c == 0) return emptySchedule(spec);
  const HostPlace place(spec);
  const int L = place.localSize(place.host);
  Scratch scratch;
  scratch.sendSlot.assign(static_cast<std::size_t>(place.hosts()), 0);
  scratch.recvSlot = scratch.sendSlot;
  Alltoall whole{spec, place, scratch, c, 0, c};
  for (int h = 0; h < place.hosts(); ++h) {
    if (h == place.host) continue;
    const auto blocks = static_cast<std::uint64_t>(L * place.localSize(h));
    if (whole.aggregator(place.host, h) == spec.rank) {
      scratch.sendSlot[static_cast<std::size_t>(h)] = scratch.slots;
      scratch.slots += blocks;
    }
    if (whole.receiver(h, place.host) == spec.rank) {
      scratch.recvSlot[static_cast<std::size_t>(h)] = scratch.slots;
      scratch.slots += blocks;
    }
  }
  scratch.staged = scratch.slots * c;
  scratch.total = scratch.staged + (spec.inPlace ? static_cast<std::uint64_t>(spec.size) * c : 0);

  const auto pieces = static_cast<std::uint64_t>(pipelinePieces(spec, c));
  std::vector<std::vector<Schedule>> all;
  for (std::uint64_t p = 0; p < pieces; ++p) {
    const Alltoall piece{spec, place, scratch, c, partOffset(c, pieces, p), partCount(c, pieces, p)};
    all.push_back(piece.phases());
  }
  return assemblePipeline(spec, std::move(all), scratch.total);
}

}  // namespace tutti
