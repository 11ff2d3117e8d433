// Direct (flat) algorithms: every rank talks to every rank it must, in one round. The
// right choice for small worlds and small messages, where one round of n-1 messages beats
// log n rounds, and the baseline every other algorithm is compared with.
//
// Cost (n ranks, N bytes per rank's contribution):
//   broadcast/scatter(v)   root sends n-1 messages: alpha + (n-1) N beta at the root
//   reduce/gather(v)       root receives n-1:       alpha + (n-1) N (beta + gamma) at the root
//   allgather(v)           every rank sends and receives n-1: alpha + (n-1) N beta
//   reducescatter(v)       every rank sends n-1 blocks and reduces n-1: alpha + (n-1)/n N (beta+gamma)
//   allreduce              every rank sends its whole input to every other: alpha + (n-1) N beta
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
#include "base/assert.h"

namespace tutti {
namespace {

Region input(std::uint64_t offset, std::uint64_t count) {
  return {BufferKind::kInput, offset, count};
}
Region output(std::uint64_t offset, std::uint64_t count) {
  return {BufferKind::kOutput, offset, count};
}

// Per-rank block of a uniform or v-collective: (offset, count) in the n-block buffer.
struct Blocks {
  std::vector<std::uint64_t> offset, count;
};

Blocks blocksOf(const CollectiveSpec& s) {
  Blocks b;
  const auto n = static_cast<std::size_t>(s.size);
  b.offset.resize(n);
  b.count.resize(n);
  std::uint64_t running = 0;
  for (std::size_t i = 0; i < n; ++i) {
    switch (s.kind) {
      case Collective::kGatherV:
      case Collective::kScatterV:
      case Collective::kAllGatherV:
        b.offset[i] = s.displs[i];
        b.count[i] = s.counts[i];
        break;
      case Collective::kReduceScatterV:
        b.offset[i] = running;
        b.count[i] = s.counts[i];
        running += s.counts[i];
        break;
      default:
        b.offset[i] = i * s.count;
        b.count[i] = s.count;
        break;
    }
  }
  return b;
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
  if (!s.inPlace) b.copy(input(0, s.count), output(0, s.count));
  for (int r = 0; r < s.size; ++r) {
    if (r != s.root) b.send(r, input(0, s.count));
  }
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
  Blocks blocks = blocksOf(s);
  const auto me = static_cast<std::size_t>(s.rank);
  if (s.rank != s.root) {
    if (blocks.count[me] > 0) b.send(s.root, input(0, blocks.count[me]));
    return std::move(b).build();
  }
  for (int r = 0; r < s.size; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (blocks.count[i] == 0) continue;
    if (r == s.rank) b.copy(input(0, blocks.count[i]), output(blocks.offset[i], blocks.count[i]));
    else b.recv(r, output(blocks.offset[i], blocks.count[i]));
  }
  return std::move(b).build();
}

Schedule scatter(const CollectiveSpec& s) {
  ScheduleBuilder b(s.rank, s.size);
  Blocks blocks = blocksOf(s);
  const auto me = static_cast<std::size_t>(s.rank);
  if (s.rank != s.root) {
    if (blocks.count[me] > 0) b.recv(s.root, output(0, blocks.count[me]));
    return std::move(b).build();
  }
  for (int r = 0; r < s.size; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (blocks.count[i] == 0) continue;
    if (r == s.rank) b.copy(input(blocks.offset[i], blocks.count[i]), output(0, blocks.count[i]));
    else b.send(r, input(blocks.offset[i], blocks.count[i]));
  }
  return std::move(b).build();
}

Schedule allgather(const CollectiveSpec& s) {
  ScheduleBuilder b(s.rank, s.size);
  Blocks blocks = blocksOf(s);
  const auto me = static_cast<std::size_t>(s.rank);
  if (blocks.count[me] > 0) {
    b.copy(input(0, blocks.count[me]), output(blocks.offset[me], blocks.count[me]));
    for (int r = 0; r < s.size; ++r) {
      if (r != s.rank) b.send(r, input(0, blocks.count[me]));
    }
  }
  for (int r = 0; r < s.size; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (r != s.rank && blocks.count[i] > 0) b.recv(r, output(blocks.offset[i], blocks.count[i]));
  }
  return std::move(b).build();
}

Schedule reduceScatter(const CollectiveSpec& s) {
  ScheduleBuilder b(s.rank, s.size);
  Blocks blocks = blocksOf(s);
  const auto me = static_cast<std::size_t>(s.rank);
  std::vector<StepId> sends;
  for (int r = 0; r < s.size; ++r) {
    const auto i = static_cast<std::size_t>(r);
    if (r != s.rank && blocks.count[i] > 0) sends.push_back(b.send(r, input(blocks.offset[i], blocks.count[i])));
  }
  const std::uint64_t mine = blocks.count[me];
  if (mine == 0) return std::move(b).build();
  StepId last;
  if (s.inPlace && s.size > 1) {
    // The output is this rank's block of the input: accumulate in scratch, then copy.
    b.reserveScratch(mine);
    Region acc{BufferKind::kScratch, 0, mine};
    StepId l = reduceInRankOrder(b, s, input(blocks.offset[me], mine), acc, {});
    last = b.copy(acc, output(0, mine), {l});
  } else {
    last = reduceInRankOrder(b, s, input(blocks.offset[me], mine), output(0, mine), {});
  }
  b.setFinalize(last);
  return std::move(b).build();
}

Schedule allreduce(const CollectiveSpec& s) {
  ScheduleBuilder b(s.rank, s.size);
  if (s.count == 0) return std::move(b).build();
  std::vector<StepId> sends;
  for (int r = 0; r < s.size; ++r) {
    if (r != s.rank) sends.push_back(b.send(r, input(0, s.count)));
  }
  // In place, the input is the output: accumulate in scratch so the sends read intact data.
  Region acc = output(0, s.count);
  if (s.inPlace && s.size > 1) {
    b.reserveScratch(s.count);
    acc = {BufferKind::kScratch, 0, s.count};
  }
  StepId last = reduceInRankOrder(b, s, input(0, s.count), acc, {});
  if (acc.buffer == BufferKind::kScratch) {
    last = b.copy(acc, output(0, s.count), {last});
    for (StepId send : sends) b.addDependency(last, send);
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
  for (std::size_t i = 0; i < n; ++i) {
    if (i == me || sendCnt(i) == 0) continue;
    sends.push_back(b.send(static_cast<int>(i), input(sendOff(i), sendCnt(i))));
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (i == me || recvCnt(i) == 0) continue;
    Region dst = s.inPlace ? Region{BufferKind::kScratch, scratchOff[i], recvCnt(i)}
                           : output(recvOff(i), recvCnt(i));
    recvs.push_back(b.recv(static_cast<int>(i), dst));
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
  for (int r = 0; r < s.size; ++r) {
    if (r != s.rank) b.send(r, input(0, 0));
  }
  for (int r = 0; r < s.size; ++r) {
    if (r != s.rank) b.recv(r, output(0, 0));
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
