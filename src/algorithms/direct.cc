// Direct (flat) algorithms: every rank talks to every rank it must, in one round. The
// right choice for small worlds and small messages, where one round of n-1 messages beats
// log n rounds, and the baseline every other algorithm is compared with.
//
// Cost (n ranks, N bytes per rank's contribution):
//   broadcast/scatter(v)   root sends n-1 messages: alpha + (n-1) N beta at the root
//   reduce/gather(v)       root receives n-1:       alpha + (n-1) N (beta + gamma) at the root
//   allgather(v)           every rank sends and receives n-1: alpha + (n-1) N beta
//   reducescatter(v)       every rank sends n-1 blocks and reduces n-1: alpha + (n-1)/n N (beta+gamma)
//   allreduce              every rank sends its whole input to every other: alpha + (n-1) N beta,
//                          and needs (n-1) N of scratch
//   alltoall(v)            n-1 messages each way per rank: alpha + (n-1)/n N beta
//   barrier                n-1 empty messages each way per rank: alpha
// Limitations: O(n) messages per rank and O(n) connections in use at once; the root of a
// rooted collective is the bottleneck. Reductions combine contributions in rank order
// 0, 1, ..., n-1 on every rank, so floating-point results are the same on all ranks.
//
//   allgather, n = 3 (every arrow one message, all in the same round):
//     r0 --b0--> r1, r2     r1 --b1--> r0, r2     r2 --b2--> r0, r1

#include <vector>

#include "algorithms/algorithm.h"
#include "algorithms/block_layout.h"
#include "base/assert.h"

namespace tutti {
namespace {

Region input(std::uint64_t offset, std::uint64_t count) {
  return {BufferKind::kInput, offset, count};
}
Region output(std::uint64_t offset, std::uint64_t count) {
  return {BufferKind::kOutput, offset, count};
}

// Reduces n contributions into out[range] in rank order 0..n-1. `own` is this rank's
// operand; contributions of other ranks arrive as messages. Returns the last step.
StepId reduceInRankOrder(ScheduleBuilder& b, const CollectiveSpec& s, Region own, Region out,
                         std::initializer_list<StepId> firstDeps) {
  std::vector<StepId> after(firstDeps);
  StepId last = 0;
  for (int r = 0; r < s.size; ++r) {
    StepId step;
    if (r == 0) {
      step = r == s.rank ? b.copy(own, out) : b.recv(0, out);
    } else if (r == s.rank) {
      step = b.reduce(own, out, {last});
    } else {
      step = b.recvReduce(r, out, out, {last});
    }
    for (StepId d : after) b.addDependency(step, d);
    after.clear();
    last = step;
  }
  return last;
}

Schedule broadcast(const CollectiveSpec& s) {
  ScheduleBuilder b(s.rank, s.size);
  if (s.rank != s.root) {
    if (s.count > 0) b.recv(s.root, output(0, s.count));
    return std::move(b).build();
  }
  if (s.count == 0) return std::move(b).build();
  // Sends first: the local copy then overlaps with the peers' receiving (a peer that reads
  // the root's buffer directly is already at work while the root copies).
  for (int r = 0; r < s.size; ++r) {
    if (r != s.root) b.send(r, input(0, s.count));
  }
  if (!s.inPlace) b.copy(input(0, s.count), output(0, s.count));
  return std::move(b).build();
}

Schedule reduce(const CollectiveSpec& s) {
  ScheduleBuilder b(s.rank, s.size);
  if (s.count == 0) return std::move(b).build();
  if (s.rank != s.root) {
    b.send(s.root, input(0, s.count));
    return std::move(b).build();
  }
  // Rank 0's contribution must arrive first; the root's own is reduced in its turn.
  StepId last;
  if (s.size == 1) {
    last = b.copy(input(0, s.count), output(0, s.count));
  } else if (s.inPlace) {
    // The output holds the root's input: reduce the others into a copy in scratch first.
    b.reserveScratch(s.count);
    Region acc{BufferKind::kScratch, 0, s.count};
    StepId l = reduceInRankOrder(b, s, input(0, s.count), acc, {});
    last = b.copy(acc, output(0, s.count), {l});
  } else {
    last = reduceInRankOrder(b, s, input(0, s.count), output(0, s.count), {});
  }
  b.setFinalize(last);
  return std::move(b).build();
}

Schedule gather(const CollectiveSpec& s) {
  ScheduleBuilder b(s.rank, s.size);
  RankBlocks blocks = rankBlocks(s);
  const auto me = static_cast<std::size_t>(s.rank);
  if (s.rank != s.root) {
    if (blocks.count[me] > 0) b.send(s.root, input(0, blocks.count[me]));
    return std::move(b).build();
  }
  for (int r = 0; r < s.size; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (blocks.count[i] > 0 && r != s.rank) b.recv(r, output(blocks.offset[i], blocks.count[i]));
  }
  // The own block last, while the peers' blocks arrive (as scatter).
  if (blocks.count[me] > 0) b.copy(input(0, blocks.count[me]), output(blocks.offset[me], blocks.count[me]));
  return std::move(b).build();
}

Schedule scatter(const CollectiveSpec& s) {
  ScheduleBuilder b(s.rank, s.size);
  RankBlocks blocks = rankBlocks(s);
  const auto me = static_cast<std::size_t>(s.rank);
  if (s.rank != s.root) {
    if (blocks.count[me] > 0) b.recv(s.root, output(0, blocks.count[me]));
    return std::move(b).build();
  }
  for (int r = 0; r < s.size; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (blocks.count[i] > 0 && r != s.rank) b.send(r, input(blocks.offset[i], blocks.count[i]));
  }
  // The own block last, overlapping with the peers' receiving (as broadcast).
  if (blocks.count[me] > 0) b.copy(input(blocks.offset[me], blocks.count[me]), output(0, blocks.count[me]));
  return std::move(b).build();
}

// Round k pairs "send to r+k" with "receive from r-k": every round is a permutation, so
// with unbuffered sends and a bounded window no rank waits on a send nobody receives.
int toPeer(const CollectiveSpec& s, int k) { return (s.rank + k) % s.size; }
int fromPeer(const CollectiveSpec& s, int k) { return (s.rank - k % s.size + s.size) % s.size; }

Schedule allgather(const CollectiveSpec& s) {
  ScheduleBuilder b(s.rank, s.size);
  RankBlocks blocks = rankBlocks(s);
  const auto me = static_cast<std::size_t>(s.rank);
  // In place the input already is this rank's block of the output.
  if (blocks.count[me] > 0 && !s.inPlace)
    b.copy(input(0, blocks.count[me]), output(blocks.offset[me], blocks.count[me]));
  for (int k = 1; k < s.size; ++k) {
    if (blocks.count[me] > 0) b.send(toPeer(s, k), input(0, blocks.count[me]));
    const auto from = static_cast<std::size_t>(fromPeer(s, k));
    if (blocks.count[from] > 0)
      b.recv(static_cast<int>(from), output(blocks.offset[from], blocks.count[from]));
  }
  return std::move(b).build();
}

Schedule reduceScatter(const CollectiveSpec& s) {
  // Only the owner reduces its block, so any fixed order is deterministic: own block first,
  // then ranks r-1, r-2, ... as their rounds come.
  ScheduleBuilder b(s.rank, s.size);
  RankBlocks blocks = rankBlocks(s);
  const auto me = static_cast<std::size_t>(s.rank);
  const std::uint64_t mine = blocks.count[me];
  // In place the output is this rank's block of the input: accumulate in scratch, since the
  // block is also the first operand.
  Region acc = output(0, mine);
  if (s.inPlace && s.size > 1 && mine > 0) {
    b.reserveScratch(mine);
    acc = {BufferKind::kScratch, 0, mine};
  }
  // The first reduction reads the own block where it lies (dst = own (op) received), the
  // same operands in the same order as copying it into acc first, without the copy's pass.
  const Region own = input(blocks.offset[me], mine);
  StepId last = 0;
  if (mine > 0 && s.size == 1) last = b.copy(own, acc);
  for (int k = 1; k < s.size; ++k) {
    const auto to = static_cast<std::size_t>(toPeer(s, k));
    if (blocks.count[to] > 0) b.send(static_cast<int>(to), input(blocks.offset[to], blocks.count[to]));
    if (mine == 0) continue;
    last = k == 1 ? b.recvReduce(fromPeer(s, k), own, acc) : b.recvReduce(fromPeer(s, k), acc, acc, {last});
  }
  if (mine == 0) return std::move(b).build();
  if (acc.buffer == BufferKind::kScratch) last = b.copy(acc, output(0, mine), {last});
  b.setFinalize(last);
  return std::move(b).build();
}

Schedule allreduce(const CollectiveSpec& s) {
  // Every rank computes the whole result itself, so all must combine in the same order for
  // bit-identical floating point: peers' inputs land in scratch (in any order), then are
  // reduced in rank order 0, 1, ..., n-1.
  ScheduleBuilder b(s.rank, s.size);
  if (s.count == 0) return std::move(b).build();
  const auto n = static_cast<std::size_t>(s.size);
  const auto me = static_cast<std::size_t>(s.rank);
  // In place the output is this rank's input, overwritten by the first combine: keep the
  // own contribution in scratch too (slot n-1).
  b.reserveScratch((s.inPlace ? n : n - 1) * s.count);
  auto slot = [&](std::size_t r) {  // scratch slot of rank r's contribution
    if (r == me) return Region{BufferKind::kScratch, (n - 1) * s.count, s.count};
    return Region{BufferKind::kScratch, (r < me ? r : r - 1) * s.count, s.count};
  };
  StepId saved = 0;
  if (s.inPlace) saved = b.copy(input(0, s.count), slot(me));
  std::vector<StepId> sends, recvs(n, 0);
  for (int k = 1; k < s.size; ++k) {
    sends.push_back(b.send(toPeer(s, k), input(0, s.count)));
    const auto from = static_cast<std::size_t>(fromPeer(s, k));
    recvs[from] = b.recv(static_cast<int>(from), slot(from));
  }
  StepId last = 0;
  for (std::size_t r = 0; r < n; ++r) {
    Region contribution = r == me && !s.inPlace ? input(0, s.count) : slot(r);
    if (r == 0) {
      // In place the output is the input the sends read: write it only once they are done.
      last = b.copy(contribution, output(0, s.count));
      if (s.inPlace) {
        b.addDependency(last, saved);
        for (StepId d : sends) b.addDependency(last, d);
      }
    } else {
      last = b.reduce(contribution, output(0, s.count), {last});
    }
    if (r != me) b.addDependency(last, recvs[r]);
  }
  b.setFinalize(last);
  return std::move(b).build();
}

Schedule alltoall(const CollectiveSpec& s) {
  ScheduleBuilder b(s.rank, s.size);
  const auto n = static_cast<std::size_t>(s.size);
  const bool v = s.kind == Collective::kAllToAllV;
  auto sendOff = [&](std::size_t i) { return v ? s.displs[i] : i * s.count; };
  auto sendCnt = [&](std::size_t i) { return v ? s.counts[i] : s.count; };
  auto recvOff = [&](std::size_t i) { return v ? s.recvDispls[i] : i * s.count; };
  auto recvCnt = [&](std::size_t i) { return v ? s.recvCounts[i] : s.count; };
  const auto me = static_cast<std::size_t>(s.rank);
  // In place, received blocks land in scratch and are copied over once every send is done.
  std::uint64_t scratch = 0;
  std::vector<std::uint64_t> scratchOff(n, 0);
  if (s.inPlace) {
    for (std::size_t i = 0; i < n; ++i) {
      scratchOff[i] = scratch;
      if (i != me) scratch += recvCnt(i);
    }
    b.reserveScratch(scratch);
  }
  std::vector<StepId> sends, recvs;
  for (int k = 1; k < s.size; ++k) {
    const auto to = static_cast<std::size_t>(toPeer(s, k));
    const auto from = static_cast<std::size_t>(fromPeer(s, k));
    if (sendCnt(to) > 0) sends.push_back(b.send(static_cast<int>(to), input(sendOff(to), sendCnt(to))));
    if (recvCnt(from) == 0) continue;
    Region dst = s.inPlace ? Region{BufferKind::kScratch, scratchOff[from], recvCnt(from)}
                           : output(recvOff(from), recvCnt(from));
    recvs.push_back(b.recv(static_cast<int>(from), dst));
  }
  if (!s.inPlace && recvCnt(me) > 0) b.copy(input(sendOff(me), recvCnt(me)), output(recvOff(me), recvCnt(me)));
  if (s.inPlace) {
    for (std::size_t i = 0; i < n; ++i) {
      if (i == me || recvCnt(i) == 0) continue;
      StepId c = b.copy({BufferKind::kScratch, scratchOff[i], recvCnt(i)}, output(recvOff(i), recvCnt(i)));
      for (StepId d : sends) b.addDependency(c, d);
      for (StepId d : recvs) b.addDependency(c, d);
    }
  }
  return std::move(b).build();
}

Schedule barrier(const CollectiveSpec& s) {
  ScheduleBuilder b(s.rank, s.size);
  for (int k = 1; k < s.size; ++k) {
    b.send(toPeer(s, k), input(0, 0));
    b.recv(fromPeer(s, k), output(0, 0));
  }
  return std::move(b).build();
}

}  // namespace

Schedule buildDirect(const CollectiveSpec& spec) {
  switch (spec.kind) {
    case Collective::kBroadcast: return broadcast(spec);
    case Collective::kReduce: return reduce(spec);
    case Collective::kGather:
    case Collective::kGatherV: return gather(spec);
    case Collective::kScatter:
    case Collective::kScatterV: return scatter(spec);
    case Collective::kAllGather:
    case Collective::kAllGatherV: return allgather(spec);
    case Collective::kReduceScatter:
    case Collective::kReduceScatterV: return reduceScatter(spec);
    case Collective::kAllReduce: return allreduce(spec);
    case Collective::kAllToAll:
    case Collective::kAllToAllV: return alltoall(spec);
    case Collective::kBarrier: return barrier(spec);
    case Collective::kSend: return buildSendDirect(spec);
    case Collective::kRecv: return buildRecvDirect(spec);
  }
  TUTTI_ASSERT(false);
  return Schedule{};
}

}  // namespace tutti
