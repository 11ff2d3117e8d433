// The simulator: exact predicted times of hand-built schedules on a hand-set model (each
// number below is worked out in its comment), and the symmetric fast path against the full
// run of real algorithms.
#include <gtest/gtest.h>

#include <cmath>

#include "topology/view.h"
#include "tuning/simulate.h"

namespace tutti::tuning {
namespace {

constexpr double kUs = 1e-6;
constexpr std::uint64_t kElems = 1000;  // float32: 4000 bytes

// The schedules the next prediction runs, one per rank (the builder takes no closure).
std::vector<Schedule>& handBuilt() {
  static std::vector<Schedule> schedules;
  return schedules;
}
std::string applies(const CollectiveSpec&) { return ""; }
Schedule buildHandBuilt(const CollectiveSpec& spec) {
  return handBuilt().at(static_cast<std::size_t>(spec.rank));
}
const AlgorithmInfo kHandBuilt{"hand_built", Collective::kAllReduce, "a test's schedules",
                               applies, buildHandBuilt};

Region in(std::uint64_t count = kElems) { return Region{BufferKind::kInput, 0, count}; }
Region out(std::uint64_t count = kElems) { return Region{BufferKind::kOutput, 0, count}; }

// Network: alpha 1 us, 1 GB/s (4 us per 4000 bytes), 0.5 us of CPU per message end.
// Shared memory the same but for alpha 0.2 us. Reductions and copies 1 GB/s.
MachineModel handModel() {
  MachineModel m;
  for (LinkCost& path : m.paths) path = LinkCost{0.2 * kUs, 1e-9, 0.5 * kUs};
  m.paths[static_cast<int>(PathClass::kNetwork)] = LinkCost{1 * kUs, 1e-9, 0.5 * kUs};
  m.gamma.fill(1e-9);
  m.copyBeta = 1e-9;
  m.nicBandwidth = 1e9;
  m.coresPerHost = 8;
  return m;
}

CollectiveSpec call(int n) {
  CollectiveSpec spec;
  spec.kind = Collective::kAllReduce;
  spec.count = kElems;
  spec.size = n;
  return spec;
}

// Rank 0 sends `count` float32 to rank 1.
std::vector<Schedule> sendReceive(std::uint64_t count = kElems) {
  ScheduleBuilder a(0, 2), b(1, 2);
  a.send(1, in(count));
  b.recv(0, out(count));
  std::vector<Schedule> pair;
  pair.push_back(std::move(a).build());
  pair.push_back(std::move(b).build());
  return pair;
}

double predictHandBuilt(std::vector<Schedule> schedules, const MachineModel& model,
                        const Placement& placement, const SimOptions& options = {}) {
  handBuilt() = std::move(schedules);
  auto p = predict(kHandBuilt, call(placement.size()), model, placement, Network::flat(), options);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? p->seconds : -1;
}

TEST(Simulate, SendReceivePair) {
  // Rank 0's send is posted after 0.5 us of CPU; its 4000 bytes take 4 us and 1 us of
  // latency: the message is in at 5.5 us, and the receive's 0.5 us of CPU then end at 6.
  auto placement = Placement::synthetic(2, 1, 1);
  ASSERT_TRUE(placement.ok());
  EXPECT_NEAR(predictHandBuilt(sendReceive(), handModel(), *placement), 6 * kUs, 1e-12);
}

TEST(Simulate, RingStepWithReduction) {
  // Each of 3 ranks (one per host) sends to the next and reduces what the previous sends:
  // its thread posts the send (0 - 0.5 us) and the receive; the message lands at 0.5 + 4 +
  // 1 = 5.5 us, and the receive's 0.5 us and the reduction's 4 follow: 10 us.
  std::vector<Schedule> ring;
  for (int r = 0; r < 3; ++r) {
    ScheduleBuilder b(r, 3);
    b.send((r + 1) % 3, in());
    b.recvReduce((r + 2) % 3, in(), out());
    ring.push_back(std::move(b).build());
  }
  auto placement = Placement::synthetic(3, 1, 1);
  ASSERT_TRUE(placement.ok());
  EXPECT_NEAR(predictHandBuilt(std::move(ring), handModel(), *placement), 10 * kUs, 1e-12);
}

TEST(Simulate, CopyThenReduction) {
  // One rank: a copy (4 us) and a reduction that depends on it (4 us).
  ScheduleBuilder b(0, 1);
  const StepId copy = b.copy(in(), out());
  b.reduce(in(), out(), {copy});
  auto placement = Placement::synthetic(1, 1, 1);
  ASSERT_TRUE(placement.ok());
  EXPECT_NEAR(predictHandBuilt({std::move(b).build()}, handModel(), *placement), 8 * kUs, 1e-12);
}

std::vector<Schedule> fanOut() {
  // Rank 0 sends to ranks 1 and 2, each on its own host.
  ScheduleBuilder a(0, 3), b(1, 3), c(2, 3);
  a.send(1, in());
  a.send(2, in());
  b.recv(0, out());
  c.recv(0, out());
  return {std::move(a).build(), std::move(b).build(), std::move(c).build()};
}

TEST(Simulate, TwoMessagesShareANic) {
  // Both sends are posted by 1 us (0.5 us of CPU each); the first holds rank 0's NIC from
  // 0.5 to 4.5 us, the second takes it then, until 8.5 us, and lands at 9.5 us; its
  // receive's 0.5 us end at 10.
  auto placement = Placement::synthetic(3, 1, 1);
  ASSERT_TRUE(placement.ok());
  EXPECT_NEAR(predictHandBuilt(fanOut(), handModel(), *placement), 10 * kUs, 1e-12);
  // With one step in flight, the second send waits for the first to be delivered (5.5 us),
  // then takes 0.5 + 4 + 1 us more, and its receive 0.5.
  SimOptions one;
  one.maxInflight = 1;
  EXPECT_NEAR(predictHandBuilt(fanOut(), handModel(), *placement, one), 11.5 * kUs, 1e-12);
}

TEST(Simulate, AShapedLinksBucketPassesBytesAtTheLinesRateNoFasterThanTheRateSustains) {
  // A bucket of 1 MB emptied at 4 GB/s on a link shaped to 1 GB/s (the network path's beta).
  MachineModel m = handModel();
  m.nicBurstBytes = 1000000;
  m.nicLineBandwidth = 4e9;
  auto placement = Placement::synthetic(2, 1, 1);
  ASSERT_TRUE(placement.ok());
  // With 10 us of latency, the 4000 bytes pass at the line's rate (1 us): 0.5 + 1 + 10 us
  // and the receive's 0.5, where the shaped rate alone gives 0.5 + 4 + 10 + 0.5.
  m.paths[static_cast<int>(PathClass::kNetwork)].alpha = 10 * kUs;
  EXPECT_NEAR(predictHandBuilt(sendReceive(), m, *placement), 12 * kUs, 1e-12);
  // With 1 us, that would be 3 us: but repeated back to back, the call cannot carry its
  // 4000 bytes faster than the rate refills the bucket, 4 us.
  m.paths[static_cast<int>(PathClass::kNetwork)].alpha = 1 * kUs;
  EXPECT_NEAR(predictHandBuilt(sendReceive(), m, *placement), 4 * kUs, 1e-12);
  // A bucket of 2000 bytes with no line limit: the first call passes 2000 bytes at once and
  // the rest at the rate (2 us), lands at 0.5 + 2 + 1 = 3.5 us and ends at 4 us, its bucket
  // empty at 2.5 us. The call after it starts then and posts its send at 0.5 us: 2 us of
  // refill, the whole bucket again: 4 us, as the rate's floor.
  m.nicBurstBytes = 2000;
  m.nicLineBandwidth = 0;
  EXPECT_NEAR(predictHandBuilt(sendReceive(), m, *placement), 4 * kUs, 1e-12);
  // 40000 bytes through that bucket: the call after the first takes 0.5 + 38 + 1 + 0.5 us
  // (2000 bytes of refill again), the rate's 40 us for its bytes.
  EXPECT_NEAR(predictHandBuilt(sendReceive(10 * kElems), m, *placement), 40 * kUs, 1e-12);
}

TEST(Simulate, RanksShareTheHostsCores) {
  // Four ranks on one host each copy 4000 bytes (4 us of CPU): on 4 cores at once, on 2
  // cores two after two.
  std::vector<Schedule> copies;
  for (int r = 0; r < 4; ++r) {
    ScheduleBuilder b(r, 4);
    b.copy(in(), out());
    copies.push_back(std::move(b).build());
  }
  auto four = Placement::synthetic(4, 4, 4);
  auto two = Placement::synthetic(4, 4, 2);
  ASSERT_TRUE(four.ok() && two.ok());
  EXPECT_NEAR(predictHandBuilt(copies, handModel(), *four), 4 * kUs, 1e-12);
  EXPECT_NEAR(predictHandBuilt(copies, handModel(), *two), 8 * kUs, 1e-12);
  // Unknown cores: the model's coresPerHost (1 here) applies.
  MachineModel oneCore = handModel();
  oneCore.coresPerHost = 1;
  auto unknown = Placement::synthetic(4, 4, 0);
  ASSERT_TRUE(unknown.ok());
  EXPECT_NEAR(predictHandBuilt(copies, oneCore, *unknown), 16 * kUs, 1e-12);
}

TEST(Simulate, RanksBoundToACoreTakeTurnsOnIt) {
  // Ranks 0 and 1 each copy 4000 bytes (4 us of CPU), ranks 2 and 3 have nothing to do, on
  // a host of 2 cores: free to run anywhere, the two copies run at once (4 us); bound in
  // blocks as tutti-run binds them (0 and 1 on the first core), one after the other (8 us).
  std::vector<Schedule> copies;
  for (int r = 0; r < 4; ++r) {
    ScheduleBuilder b(r, 4);
    if (r < 2) b.copy(in(), out());
    copies.push_back(std::move(b).build());
  }
  auto pool = Placement::synthetic(4, 4, 2);
  ASSERT_TRUE(pool.ok());
  EXPECT_NEAR(predictHandBuilt(copies, handModel(), *pool), 4 * kUs, 1e-12);
  topo::View view;
  topo::HostInfo host;
  host.name = host.id = "h";
  host.cores = host.pus = 2;
  view.hosts.push_back(host);
  for (int r = 0; r < 4; ++r) {
    topo::RankInfo rank;
    rank.localIndex = r;
    rank.cpus = r < 2 ? "0" : "1";
    view.ranks.push_back(rank);
  }
  auto bound = Placement::fromView(view);
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  EXPECT_NEAR(predictHandBuilt(copies, handModel(), *bound), 8 * kUs, 1e-12);
  // Bound one to each core, the two copies run at once again.
  view.ranks[1].cpus = "1";
  view.ranks[2].cpus = "0";
  bound = Placement::fromView(view);
  ASSERT_TRUE(bound.ok());
  EXPECT_NEAR(predictHandBuilt(copies, handModel(), *bound), 4 * kUs, 1e-12);
}

TEST(Simulate, PretendHostsOfOneMachineShareItsCores) {
  // Ranks 0, 2 and 4 each copy 4000 bytes (4 us of CPU) on three hosts of 2 ranks, every
  // rank bound to CPU 0 of its machine: hosts of their own run the copies at once (4 us);
  // where hosts 0 and 2 are pretend hosts of one machine (network namespaces on it), theirs
  // run on its one CPU in turn (8 us), host 1 on another machine beside them.
  std::vector<Schedule> copies;
  for (int r = 0; r < 6; ++r) {
    ScheduleBuilder b(r, 6);
    if (r % 2 == 0) b.copy(in(), out());
    copies.push_back(std::move(b).build());
  }
  topo::View view;
  for (const char* name : {"a", "b", "c"}) {
    topo::HostInfo host;
    host.name = host.id = name;
    host.cores = host.pus = 2;
    view.hosts.push_back(host);
  }
  for (int r = 0; r < 6; ++r) {
    topo::RankInfo rank;
    rank.host = r / 2;
    rank.localIndex = r % 2;
    rank.cpus = "0";
    view.ranks.push_back(rank);
  }
  auto apart = Placement::fromView(view);
  ASSERT_TRUE(apart.ok()) << apart.status().message();
  EXPECT_NEAR(predictHandBuilt(copies, handModel(), *apart), 4 * kUs, 1e-12);
  view.hosts[0].machine = view.hosts[2].machine = "one-machine";
  view.hosts[1].machine = "another";
  auto together = Placement::fromView(view);
  ASSERT_TRUE(together.ok()) << together.status().message();
  ASSERT_EQ(together->machineOf(2), 0);
  EXPECT_NEAR(predictHandBuilt(copies, handModel(), *together), 8 * kUs, 1e-12);
}

TEST(Simulate, AWokenRankPaysASwitchOnlyWhereRanksOutnumberCores) {
  // The pair of SendReceivePair on one host, where the ends' CPUs copy the message (the
  // path's beta is both copies one after the other: 2 us each) and a message has 0.2 us of
  // latency; the library adds 0.25 us per message end. The sender posts after 0.75 us and
  // copies in until 2.75; the first slot is there at 0.95, where the receiver (on its own
  // core) spends 0.75 us and copies out as the slots come, until 3.7 us. With 1 core for
  // both, it also pays a 2 us switch to run again, once the sender's copy leaves it the
  // core: 2.75 + 2 + 0.75 + 2 = 7.5 us.
  const std::vector<Schedule> pair = sendReceive();
  MachineModel m = handModel();
  m.messageOverhead = 0.25 * kUs;
  m.switchCost = 2 * kUs;
  auto cores = Placement::synthetic(2, 2, 2);
  auto shared = Placement::synthetic(2, 2, 1);
  ASSERT_TRUE(cores.ok() && shared.ok());
  EXPECT_NEAR(predictHandBuilt(pair, m, *cores), 3.7 * kUs, 1e-12);
  EXPECT_NEAR(predictHandBuilt(pair, m, *shared), 7.5 * kUs, 1e-12);
}

TEST(Simulate, AWaitThatYieldsPaysAYieldsHandOverRatherThanASwitch) {
  // The pair above on 1 core, where waits yield the core (yieldCost, shared memory's): the
  // receiver pays 1 us rather than the 2 us switch: 2.75 + 1 + 0.75 + 2 = 6.5 us.
  MachineModel m = handModel();
  m.messageOverhead = 0.25 * kUs;
  m.switchCost = 2 * kUs;
  m.yieldCost = 1 * kUs;
  auto shared = Placement::synthetic(2, 2, 1);
  ASSERT_TRUE(shared.ok());
  EXPECT_NEAR(predictHandBuilt(sendReceive(), m, *shared), 6.5 * kUs, 1e-12);
}

TEST(Simulate, AMessageFromAnotherHostWakesItsReceiverOnce) {
  // SendReceivePair between hosts of 2 ranks on 1 core (the others idle): the message is in
  // at 5.5 us; the receiver pays a 2 us switch and its 0.5 us: 8 us. Over the hybrid
  // transport too: its waiter reads the sockets itself.
  std::vector<Schedule> schedules;
  for (int r = 0; r < 4; ++r) {
    ScheduleBuilder b(r, 4);
    if (r == 0) b.send(2, in());
    if (r == 2) b.recv(0, out());
    schedules.push_back(std::move(b).build());
  }
  MachineModel m = handModel();
  m.switchCost = 2 * kUs;
  auto placement = Placement::synthetic(4, 2, 1);
  ASSERT_TRUE(placement.ok());
  EXPECT_NEAR(predictHandBuilt(schedules, m, *placement), 8 * kUs, 1e-12);
}

TEST(Simulate, AReceiverThatOnlyCopiesOutPaysItsOwnBeta) {
  // The pair above on 2 cores, where the receiver's end costs 0.25 ns a byte (recvBeta, as
  // over TCP on one host) and the sender's half the path's 1 ns: the sender posts after
  // 0.75 us and copies in until 2.75; the receiver, from the first slot at 0.95, spends
  // 0.75 us and 1 us copying out, until 2.7, but the last byte is there only at 2.95. With
  // the two ends alike it ends at 3.7 (AWokenRankPaysASwitchOnlyWhereRanksOutnumberCores).
  MachineModel m = handModel();
  m.messageOverhead = 0.25 * kUs;
  for (LinkCost& path : m.paths) path.recvBeta = 0.25e-9;
  m.paths[static_cast<int>(PathClass::kNetwork)].recvBeta = 0;
  auto cores = Placement::synthetic(2, 2, 2);
  ASSERT_TRUE(cores.ok());
  EXPECT_NEAR(predictHandBuilt(sendReceive(), m, *cores), 2.95 * kUs, 1e-12);
  // Where its end is the slower one, the receiver sets the pace: 0.95 + 0.75 + 4 = 5.7.
  for (LinkCost& path : m.paths) path.recvBeta = 1e-9;
  EXPECT_NEAR(predictHandBuilt(sendReceive(), m, *cores), 5.7 * kUs, 1e-12);
}

TEST(Simulate, AReceiverThatReducesOnlyAWholeMessageStartsAtItsLastByte) {
  // The receiver above (0.25 ns a byte, 1 us to copy out) reduces what it receives (4 us):
  // rank 0 posts after 0.75 us and copies in until 2.75, the first slot is there at 0.95
  // and the last byte at 2.95. Reducing the pieces as they come (shared memory's slots),
  // its 0.75 + 1 + 4 us run from 0.95 to 6.7; reducing only the whole message (TCP's
  // staging buffer, LinkCost::reducesWhole), the reduction starts at the last byte: 6.95.
  MachineModel m = handModel();
  m.messageOverhead = 0.25 * kUs;
  for (LinkCost& path : m.paths) path.recvBeta = 0.25e-9;
  m.paths[static_cast<int>(PathClass::kNetwork)].recvBeta = 0;
  auto reduction = [] {
    ScheduleBuilder a(0, 2), b(1, 2);
    a.send(1, in());
    b.recvReduce(0, in(), out());
    std::vector<Schedule> pair;
    pair.push_back(std::move(a).build());
    pair.push_back(std::move(b).build());
    return pair;
  };
  auto cores = Placement::synthetic(2, 2, 2);
  ASSERT_TRUE(cores.ok());
  EXPECT_NEAR(predictHandBuilt(reduction(), m, *cores), 6.7 * kUs, 1e-12);
  for (LinkCost& path : m.paths) path.reducesWhole = true;
  EXPECT_NEAR(predictHandBuilt(reduction(), m, *cores), 6.95 * kUs, 1e-12);
}

TEST(Simulate, AWokenRankWaitsForTheTurnsOfTheOtherWaitingRanksOfItsCore) {
  // The pair above on 1 core, and ranks 2 and 3, which wait for an empty message that rank 0
  // sends each once its first is delivered. When the first slot reaches rank 1 (0.95 us),
  // ranks 2 and 3 wait and rank 0 copies: 2 waiting ranks per core, so rank 1 pays 2
  // switches. The core is rank 0's until 2.75, then rank 1's: 2.75 + 4 + 0.75 + 2 = 9.5 us
  // (7.5 with 1 switch). Rank 0's two sends then cost 0.75 us each: 9.5-10.25 and
  // 10.25-11. Rank 2's message is in at 10.45, while rank 0 still works and rank 3 alone
  // waits: 1 switch, 2.75 us of CPU from 11 to 13.75. Rank 3's is in at 11.2 (nobody else
  // waits: 1 switch), 2.75 us from 13.75 to 16.5.
  std::vector<Schedule> schedules = sendReceive();
  {
    ScheduleBuilder a(0, 4);
    const StepId first = a.send(1, in());
    a.send(2, in(0), {first});
    a.send(3, in(0), {first});
    schedules[0] = std::move(a).build();
  }
  for (int r : {1, 2, 3}) {
    ScheduleBuilder b(r, 4);
    if (r == 1) b.recv(0, out());
    else b.recv(0, out(0));
    if (r == 1) schedules[1] = std::move(b).build();
    else schedules.push_back(std::move(b).build());
  }
  MachineModel m = handModel();
  m.messageOverhead = 0.25 * kUs;
  m.switchCost = 2 * kUs;
  auto shared = Placement::synthetic(4, 4, 1);
  ASSERT_TRUE(shared.ok());
  EXPECT_NEAR(predictHandBuilt(std::move(schedules), m, *shared), 16.5 * kUs, 1e-12);
}

TEST(Simulate, PastTheLastLevelCacheBytesMoveAtOneCoresShareOfMemory) {
  // The same pair: a 4000-byte message; of their buffers the ranks touch 8000 bytes (rank
  // 0's input, rank 1's output; the outputs and inputs they leave alone do not count). With
  // a 1 MiB cache, or one of those 8000 bytes, they fit and each end copies at half the
  // path's 1 ns a byte:
  // the sender from 0.5 to 2.5 us, the receiver from the first slot (0.7 us) after its 0.5
  // us, until 3.2 us. With a 4 KiB cache they do not: each end copies at its share of the
  // 0.5 GB/s two cores copy from memory, 2 / 0.5e9 = 4 ns a byte: the sender from 0.5 to
  // 16.5 us, the receiver from 1.2 to 17.2 us. The bus carries each copy's 4000 bytes in 8
  // us (the sender's from 0.5, the receiver's from 8.5), within their 16.
  const std::vector<Schedule> pair = sendReceive();
  MachineModel m = handModel();
  m.coresPerHost = 2;
  m.cacheBandwidth = 1e12;
  m.hostMemoryBandwidth = 0.5e9;
  m.llcBytes = 1 << 20;
  auto placement = Placement::synthetic(2, 2, 2);
  ASSERT_TRUE(placement.ok());
  EXPECT_NEAR(predictHandBuilt(pair, m, *placement), 3.2 * kUs, 1e-12);
  m.llcBytes = 8000;
  EXPECT_NEAR(predictHandBuilt(pair, m, *placement), 3.2 * kUs, 1e-12);
  m.llcBytes = 4096;
  EXPECT_NEAR(predictHandBuilt(pair, m, *placement), 17.2 * kUs, 1e-12);
  // A bus of 0.125 GB/s that one core's copies fill (coresPerHost 1: a core's share is
  // all of it, 8 ns a byte, 32 us a copy): the sender's copy holds it from 0.5 to 32.5 us,
  // the receiver's, which could run from 1.2 us on its own core, from then to 64.5.
  m.hostMemoryBandwidth = 0.125e9;
  m.coresPerHost = 1;
  EXPECT_NEAR(predictHandBuilt(pair, m, *placement), 64.5 * kUs, 1e-12);
}

TEST(Simulate, WhereTheKernelCopiesCheaplyALargeMessageIsCopiedOnceByItsReceiver) {
  // 1 MiB (262144 float32) on one host, path 1 ns a byte for both copies, local copies 1
  // GB/s: through the rings the sender copies in (0.5 + 524.288 us) and the receiver out as
  // the slots come, from the first's arrival, 0.2 us after the sender's 0.5: 0.5 + 0.2 +
  // 0.5 + 524.288 us. With a kernel copy 2x memcpy's (cheap), the receiver alone copies, at
  // the slower of its half of the path and 2x the local copy: 0.5 + 0.2 + 0.5 + 2097.152 us.
  constexpr std::uint64_t kMiB = 262144;
  const std::vector<Schedule> pair = sendReceive(kMiB);
  MachineModel m = handModel();
  auto placement = Placement::synthetic(2, 2, 2);
  ASSERT_TRUE(placement.ok());
  const double bytes = 4.0 * kMiB;
  EXPECT_NEAR(predictHandBuilt(pair, m, *placement), 1.2 * kUs + bytes * 0.5e-9, 1e-12);
  m.kernelCopyRatio = 2;
  EXPECT_NEAR(predictHandBuilt(pair, m, *placement), 1.2 * kUs + bytes * 2e-9, 1e-12);
  m.kernelCopyRatio = 4;  // costly: the rings again
  EXPECT_NEAR(predictHandBuilt(pair, m, *placement), 1.2 * kUs + bytes * 0.5e-9, 1e-12);
}

TEST(Simulate, ARootedCallIsPricedAsCallsBackToBackRun) {
  // Rank 0 sends to rank 1, which forwards to rank 2, each on its own host: one call alone
  // takes 12 us (0.5 + 4 + 1 to rank 1, its 0.5 of receiving, then 0.5 + 4 + 1 + 0.5). As a
  // broadcast, nothing makes rank 0 wait for rank 2: rank 0 starts its second call once its
  // first message is delivered (5.5 us), and its second message is in at 11; rank 1, done
  // with its first call at 11.5 (its forward delivered), receives it until 12 and forwards
  // it, delivered at 17.5; rank 2 has it at 18. Each rank's second call: 5.5, 6 and 6 us.
  auto chain = [] {
    ScheduleBuilder a(0, 3), b(1, 3), c(2, 3);
    a.send(1, in());
    const StepId got = b.recv(0, out());
    b.send(2, out(), {got});
    c.recv(1, out());
    std::vector<Schedule> three;
    three.push_back(std::move(a).build());
    three.push_back(std::move(b).build());
    three.push_back(std::move(c).build());
    return three;
  };
  auto placement = Placement::synthetic(3, 1, 1);
  ASSERT_TRUE(placement.ok());
  EXPECT_NEAR(predictHandBuilt(chain(), handModel(), *placement), 12 * kUs, 1e-12);
  const AlgorithmInfo rooted{"hand_built", Collective::kBroadcast, "a test's schedules", applies,
                             buildHandBuilt};
  handBuilt() = chain();
  CollectiveSpec spec = call(3);
  spec.kind = Collective::kBroadcast;
  auto p = predict(rooted, spec, handModel(), *placement, Network::flat());
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_NEAR(p->seconds, 6 * kUs, 1e-12);
  EXPECT_EQ(p->messages, 2u);
}

TEST(Simulate, MismatchedSchedulesAreAnError) {
  // Rank 1 waits for a message rank 0 never sends.
  ScheduleBuilder a(0, 2), b(1, 2);
  b.recv(0, out());
  handBuilt() = {std::move(a).build(), std::move(b).build()};
  auto placement = Placement::synthetic(2, 1, 1);
  ASSERT_TRUE(placement.ok());
  auto p = predict(kHandBuilt, call(2), handModel(), *placement, Network::flat());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kInternal);
  EXPECT_NE(p.status().message().find("hand_built: the schedules do not match"), std::string::npos)
      << p.status().message();
}

TEST(Simulate, FlatExchangeIsPricedAsOne) {
  // direct's all-reduce fits a flat exchange of 64 KiB: flatAlpha + flatBeta x what each
  // rank reads (4 ranks x 4000 bytes), the ranks sharing 4 cores.
  MachineModel m = handModel();
  m.flatAlpha = 3 * kUs;
  m.flatBeta = 1e-10;
  const AlgorithmInfo* direct = nullptr;
  for (const AlgorithmInfo& a : algorithmRegistry())
    if (a.kind == Collective::kAllReduce && std::string(a.name) == "direct") direct = &a;
  ASSERT_NE(direct, nullptr);
  auto placement = Placement::synthetic(4, 4, 4);
  ASSERT_TRUE(placement.ok());
  SimOptions options;
  options.flatRoom = 64 * 1024;
  auto p = predict(*direct, call(4), m, *placement, Network::flat(), options);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_NEAR(p->seconds, 3 * kUs + 16000 * 1e-10, 1e-12);
  EXPECT_EQ(p->messages, 0u);
  // On 2 cores the 4 ranks read in two turns (twice the reading), and each rank sees the
  // others' contributions after (4/2)^2 = 4 switches of 1 us.
  m.switchCost = 1 * kUs;
  auto twoCores = Placement::synthetic(4, 4, 2);
  ASSERT_TRUE(twoCores.ok());
  p = predict(*direct, call(4), m, *twoCores, Network::flat(), options);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_NEAR(p->seconds, 3 * kUs + 2 * 16000 * 1e-10 + 4 * kUs, 1e-12);
}

// --- the fast path against the full run ----------------------------------------------------

const AlgorithmInfo& allreduce(const std::string& name) {
  for (const AlgorithmInfo& a : algorithmRegistry())
    if (a.kind == Collective::kAllReduce && name == a.name) return a;
  ADD_FAILURE() << "no all-reduce algorithm " << name;
  return algorithmRegistry().front();
}

struct Case {
  const char* algorithm;
  int ranks;
  int perHost;
  const char* network;
  std::uint64_t bytes;
  bool expectFast;
};

TEST(Simulate, FastPathEqualsFullRun) {
  MachineModel m = handModel();
  m.paths[static_cast<int>(PathClass::kNetwork)] = LinkCost{5 * kUs, 1 / 12.5e9, 1 * kUs};
  m.nicBandwidth = 12.5e9;
  m.coresPerHost = 2;  // fewer than the ranks of a host: the cores are contended
  const Case cases[] = {
      {"ring", 32, 4, "flat", 1 << 20, true},
      {"ring", 48, 6, "fat-tree:hosts-per-leaf=2,oversub=2", 3 << 20, true},
      {"recursive_doubling", 32, 4, "flat", 64 << 10, false},
      {"rabenseifner", 64, 8, "flat", 1 << 20, true},
      {"double_binary_tree", 32, 4, "flat", 1 << 20, false},
      {"hier_rs_ag", 64, 4, "fat-tree:hosts-per-leaf=2,oversub=4", 16 << 20, true},
      {"hier_rs_ag", 32, 2, "rail:rails=2,spine-oversub=2", 8 << 20, true},
      // Its columns' all-reduce is recursive doubling here: not symmetric step by step.
      {"hier_rs_ag", 64, 8, "fat-tree:hosts-per-leaf=2,oversub=4", 4 << 20, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.algorithm) + " on " + std::to_string(c.ranks) + " ranks, " + c.network);
    auto placement = Placement::synthetic(c.ranks, c.perHost, 0);
    auto network = Network::parse(c.network);
    ASSERT_TRUE(placement.ok() && network.ok());
    CollectiveSpec spec = call(c.ranks);
    spec.count = c.bytes / 4;
    spec.segmentCount = 16 * 1024;
    SimOptions full;
    full.allowFastPath = false;
    auto fast = predict(allreduce(c.algorithm), spec, m, *placement, *network);
    auto slow = predict(allreduce(c.algorithm), spec, m, *placement, *network, full);
    ASSERT_TRUE(fast.ok()) << fast.status().message();
    ASSERT_TRUE(slow.ok()) << slow.status().message();
    EXPECT_FALSE(slow->fastPath);
    EXPECT_EQ(slow->ranksRun, c.ranks);
    if (c.expectFast) {
      EXPECT_TRUE(fast->fastPath);
      EXPECT_LT(fast->ranksRun, c.ranks);
    }
    EXPECT_GT(slow->seconds, 0);
    EXPECT_NEAR(fast->seconds, slow->seconds, 1e-9 * slow->seconds);
  }
}

TEST(Simulate, RefusesWhatDoesNotApply) {
  auto placement = Placement::synthetic(6, 3, 0);
  ASSERT_TRUE(placement.ok());
  // Broadcast's algorithm for an all-reduce call.
  const AlgorithmInfo* bcast = nullptr;
  for (const AlgorithmInfo& a : algorithmRegistry())
    if (a.kind == Collective::kBroadcast) bcast = &a;
  ASSERT_NE(bcast, nullptr);
  auto p = predict(*bcast, call(6), handModel(), *placement, Network::flat());
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), ErrorCode::kInvalidArgument);
}

TEST(Simulate, ALoopOfCallsWithARootPaysNoHandOverOnceItsReceiversFallBehind) {
  // A broadcast by hand on 3 ranks and 2 cores: rank 0 sends 4 bytes to ranks 1 and 2, each
  // of which receives it (0.75 us, and 2 ns to copy it out) and then copies 4000 bytes (4
  // us). The root's call takes 1.504 us of CPU (2 ns to copy each message in): 11.008 us
  // per call in all, 5.504 us of the 2 cores. The receivers fall behind the root and find
  // each later call's message waiting as they finish the call before, so they pay no
  // hand-over of their core for it: the calls after the first run at the cores' pace (the
  // first's stragglers aside), where a yield_cost of 1 us per message would add 1 us.
  const AlgorithmInfo broadcast{"hand_built", Collective::kBroadcast, "a test's schedules",
                                applies, buildHandBuilt};
  ScheduleBuilder a(0, 3), b(1, 3), c(2, 3);
  a.send(1, in(1));
  a.send(2, in(1));
  for (ScheduleBuilder* receiver : {&b, &c}) {
    const StepId got = receiver->recv(0, out(1));
    receiver->copy(in(), out(), {got});
  }
  handBuilt() = {std::move(a).build(), std::move(b).build(), std::move(c).build()};
  MachineModel m = handModel();
  m.messageOverhead = 0.25 * kUs;
  m.yieldCost = 1 * kUs;
  auto placement = Placement::synthetic(3, 3, 2);
  ASSERT_TRUE(placement.ok());
  CollectiveSpec spec = call(3);
  spec.kind = Collective::kBroadcast;
  auto p = predict(broadcast, spec, m, *placement, Network::flat());
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_GE(p->seconds, 5.5 * kUs);
  EXPECT_LT(p->seconds, 5.55 * kUs);
}

}  // namespace
}  // namespace tutti::tuning
