// The host probe (tuning/probe.h): every parameter measured is finite, positive and
// plausible for some computer, never compared with a speed; and the choice of CPU pairs
// and the filling of classes a host lacks, on described machines.
#include "tuning/probe.h"
#include "tuning/probe_messages.h"
#include "tuning/probe_network.h"

#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "transport/tag.h"

namespace tutti::tuning {
namespace {

// Seconds per byte between 1 TB/s and 1 MB/s.
void expectPlausibleBeta(double beta, const std::string& what) {
  EXPECT_TRUE(std::isfinite(beta)) << what;
  EXPECT_GT(beta, 1e-12) << what;
  EXPECT_LT(beta, 1e-6) << what;
}

// Seconds between 1 ns and 100 ms.
void expectPlausibleTime(double seconds, const std::string& what) {
  EXPECT_TRUE(std::isfinite(seconds)) << what;
  EXPECT_GT(seconds, 1e-9) << what;
  EXPECT_LT(seconds, 0.1) << what;
}

TEST(Probe, EveryParameterIsFinitePositiveAndPlausible) {
  const ProbeReport report = probeHost({.budgetSeconds = 0.1});
  const MachineModel& m = report.model;
  EXPECT_EQ(m.origin, "probe");
  for (int c = 0; c < kNumPathClasses; ++c) {
    const std::string name = pathClassName(static_cast<PathClass>(c));
    expectPlausibleTime(m.paths[c].alpha, name + ".alpha");
    expectPlausibleBeta(m.paths[c].beta, name + ".beta");
    EXPECT_TRUE(std::isfinite(m.paths[c].overhead)) << name;
    EXPECT_GT(m.paths[c].overhead, 0) << name;
    EXPECT_LT(m.paths[c].overhead, 0.1) << name;
  }
  for (int t = 0; t < kNumDataTypes; ++t)
    expectPlausibleBeta(m.gamma[t], std::string("gamma.") + dataTypeName(static_cast<DataType>(t)));
  expectPlausibleBeta(m.copyBeta, "copy_beta");
  expectPlausibleBeta(1 / m.hostMemoryBandwidth, "host_memory_bandwidth");
  expectPlausibleBeta(1 / m.nicBandwidth, "nic_bandwidth");
  EXPECT_GE(m.coresPerHost, 1);
  EXPECT_LE(m.coresPerHost, 1 << 16);
  expectPlausibleTime(m.flatAlpha, "flat_alpha");
  expectPlausibleBeta(m.flatBeta, "flat_beta");
  expectPlausibleBeta(1 / m.cacheBandwidth, "cache_bandwidth");
  expectPlausibleTime(m.switchCost, "switch_cost");
  expectPlausibleTime(m.yieldCost, "yield_cost");
  expectPlausibleTime(m.messageOverhead, "message_overhead");
  expectPlausibleTime(m.loopback.overhead, "loopback.overhead");
  expectPlausibleBeta(m.loopback.beta, "loopback.beta");
  EXPECT_GE(m.loopback.alpha, 0);
  EXPECT_FALSE(report.notes.empty());
  EXPECT_GT(report.seconds, 0);
}

TEST(Probe, LoopbackMessagesAndASwitchAreMeasuredThroughTheirOwnPaths) {
  // Two TCP transports of this process over 127.0.0.1 (threads not pinned: a busy CPU
  // would only make them wait), and two threads on one CPU.
  std::string why;
  const auto loopback = measureLoopback(-1, -1, ProbeClock::now() + std::chrono::milliseconds(5), &why);
  ASSERT_TRUE(loopback.has_value()) << why;
  expectPlausibleTime(loopback->oneWay, "one way");
  EXPECT_TRUE(std::isfinite(loopback->beta));
  EXPECT_GE(loopback->beta, 0);
  const auto cost = measureSwitch(0, ProbeClock::now() + std::chrono::milliseconds(2));
  ASSERT_TRUE(cost.has_value());
  expectPlausibleTime(*cost, "switch");
  const auto yield = measureYield(0, ProbeClock::now() + std::chrono::milliseconds(2));
  ASSERT_TRUE(yield.has_value());
  expectPlausibleTime(*yield, "yield");
}

TEST(NetworkProbe, TwoTransportsMeasureAndLeaveNothingUnread) {
  // The probe between two TCP transports of this process over 127.0.0.1, as two ranks of
  // two hosts run it at creation; then a message of a first collective call crosses the
  // same link both ways, which a message the probe left unread would stand in front of.
  std::string why;
  auto pair = tcpPairOnLoopback(Deadline::afterSeconds(30), &why);
  ASSERT_TRUE(pair.has_value()) << why;
  const Deadline deadline = Deadline::afterSeconds(60);
  std::optional<NetworkCosts> costs;
  std::string leadWhy, followWhy;
  bool followed = false;
  std::thread follower([&] {
    (*pair)[1]->setDriving(true);
    followed = followNetworkProbe(*(*pair)[1], 0, deadline, &followWhy);
    (*pair)[1]->setDriving(false);
  });
  (*pair)[0]->setDriving(true);
  costs = leadNetworkProbe(*(*pair)[0], 1, deadline, &leadWhy);
  (*pair)[0]->setDriving(false);
  follower.join();
  ASSERT_TRUE(costs.has_value()) << leadWhy;
  ASSERT_TRUE(followed) << followWhy;
  EXPECT_EQ(implausibleNetwork(*costs), "");
  expectPlausibleTime(costs->oneWay, "one way");
  expectPlausibleBeta(costs->beta, "beta");
  EXPECT_GE(costs->roundBytes, std::size_t{256} << 10);
  EXPECT_GT(costs->seconds, 0);

  const Tag tag = collectiveTagBase(1, 1);
  std::uint64_t out = 0x1122334455667788ull, in = 0, back = 0;
  std::thread answer([&] {
    (*pair)[1]->setDriving(true);
    std::uint64_t got = 0;
    if (recvMessage(*(*pair)[1], 0, tag, &got, sizeof got, deadline, 0))
      (void)sendMessage(*(*pair)[1], 0, tag, &got, sizeof got, deadline, 0);
    in = got;
    (*pair)[1]->setDriving(false);
  });
  (*pair)[0]->setDriving(true);
  EXPECT_TRUE(sendMessage(*(*pair)[0], 1, tag, &out, sizeof out, deadline, 0));
  EXPECT_TRUE(recvMessage(*(*pair)[0], 1, tag, &back, sizeof back, deadline, 0));
  (*pair)[0]->setDriving(false);
  answer.join();
  EXPECT_EQ(in, out);
  EXPECT_EQ(back, out);
  for (auto& t : *pair) t->shutdown(Deadline::afterSeconds(1));
}

TEST(NetworkProbe, ItsFiguresBecomeTheNetworkPathExactly) {
  MachineModel m = defaults();
  m.loopback.overhead = 2e-6;
  const NetworkCosts costs{.oneWay = 30e-6, .beta = 8e-9};
  applyNetworkCosts(costs, m);
  const LinkCost& net = m.path(PathClass::kNetwork);
  // The one-way time less the two ends' CPU time per message (the TCP transport's, measured
  // over loopback); one stream's rate is the NIC's.
  EXPECT_DOUBLE_EQ(net.overhead, 2e-6);
  EXPECT_DOUBLE_EQ(net.alpha, 26e-6);
  EXPECT_DOUBLE_EQ(net.beta, 8e-9);
  EXPECT_DOUBLE_EQ(m.nicBandwidth, 1.25e8);
  // A one-way time under the two overheads leaves no latency, never a negative one.
  applyNetworkCosts({.oneWay = 3e-6, .beta = 8e-9}, m);
  EXPECT_DOUBLE_EQ(m.path(PathClass::kNetwork).alpha, 0);
}

// The rounds a stream of `bytes` each would take through a link of `rate` bytes/s shaped by
// a bucket of `burst` bytes (full at the start) emptied at `line` bytes/s, back to back.
std::vector<StreamRound> shapedRounds(const std::vector<std::uint64_t>& sizes, double rate,
                                      double burst, double line) {
  std::vector<StreamRound> out;
  double tokens = burst;
  for (std::uint64_t bytes : sizes) {
    const double n = static_cast<double>(bytes);
    const double lasts = tokens / (line - rate);  // seconds at the line's rate
    double seconds;
    if (n <= lasts * line) {
      seconds = n / line;
      tokens -= n - seconds * rate;
    } else {
      seconds = lasts + (n - lasts * line) / rate;
      tokens = 0;
    }
    out.push_back({bytes, seconds});
  }
  return out;
}

TEST(NetworkProbe, AShapedLinksBucketIsWhatTheRoundsCarriedBeyondTheRate) {
  // 1 Gbit/s shaped with a bucket of 1.25 MB emptied at 3.2 Gbit/s: the rounds of 256 KiB,
  // 1 MiB and 4 MiB, then the last again with the bucket drained.
  const double rate = 1.25e8, burst = 1.25e6, line = 4e8;
  std::vector<StreamRound> rounds = shapedRounds({256 << 10, 1 << 20, 4 << 20}, rate, burst, line);
  ASSERT_GT(rounds.front().rate(), 1.5 * rounds.back().rate());
  const double drained = static_cast<double>(4 << 20) / rate;
  NetworkCosts costs;
  applyRounds(rounds, drained, costs);
  EXPECT_DOUBLE_EQ(costs.beta, 1 / rate);
  EXPECT_EQ(costs.roundBytes, std::size_t{4} << 20);
  // Every byte the rounds carried was the bucket's or refilled at the rate: exactly the
  // bucket, to rounding.
  EXPECT_NEAR(static_cast<double>(costs.burstBytes), burst, 1.0);
  EXPECT_DOUBLE_EQ(costs.lineBeta, 1 / line);  // the first round fit in the bucket
  MachineModel m = defaults();
  m.nicBandwidth = 1e8;  // the NIC's speed, below what the rounds showed
  applyNetworkCosts(costs, m);
  EXPECT_EQ(m.nicBurstBytes, costs.burstBytes);
  EXPECT_DOUBLE_EQ(m.nicLineBandwidth, line);
  EXPECT_DOUBLE_EQ(m.nicBandwidth, rate);
  // A NIC's speed above the fastest round's rate (a floor of the line's) is the line's.
  m.nicBandwidth = 1.25e9;
  applyNetworkCosts(costs, m);
  EXPECT_DOUBLE_EQ(m.nicLineBandwidth, 1.25e9);

  // An unshaped link (the first rounds slower, in TCP's slow start; the last the same
  // again): no bucket.
  NetworkCosts plain;
  applyRounds({{256 << 10, 2.5e-3}, {1 << 20, 8.5e-3}, {4 << 20, 33.6e-3}}, 33.6e-3, plain);
  EXPECT_DOUBLE_EQ(plain.beta, 33.6e-3 / static_cast<double>(4 << 20));
  EXPECT_EQ(plain.burstBytes, 0u);
  EXPECT_EQ(plain.lineBeta, 0);
  applyNetworkCosts(plain, m);
  EXPECT_EQ(m.nicBurstBytes, 0u);
  EXPECT_EQ(m.nicLineBandwidth, 0);
  // The 4 MiB round held up 30 ms (its sender waited for a CPU): it took nothing from the
  // bucket, and the rounds before still show most of it (what they carried beyond the rate).
  std::vector<StreamRound> stalled = rounds;
  stalled.back().seconds += 30e-3;
  NetworkCosts held;
  applyRounds(stalled, drained, held);
  const double early = static_cast<double>((256 << 10) + (1 << 20)) -
                       rate * (rounds[0].seconds + rounds[1].seconds);
  EXPECT_NEAR(static_cast<double>(held.burstBytes), early, 1.0);
  EXPECT_GT(static_cast<double>(held.burstBytes), 0.5 * burst);
  // A bucket under 1 ms of the rate is a packet's worth: none.
  NetworkCosts small;
  applyRounds(shapedRounds({256 << 10, 1 << 20, 4 << 20}, rate, 64e3, line), drained, small);
  EXPECT_EQ(small.burstBytes, 0u);
}

TEST(NetworkProbe, FiguresNoNetworkGivesAreNamed) {
  EXPECT_EQ(implausibleNetwork({.oneWay = 30e-6, .beta = 8e-9}), "");
  EXPECT_NE(implausibleNetwork({.oneWay = 30e-6, .beta = 0}), "");
  EXPECT_NE(implausibleNetwork({.oneWay = 0, .beta = 8e-9}), "");
  EXPECT_NE(implausibleNetwork({.oneWay = std::nan(""), .beta = 8e-9}), "");
  EXPECT_NE(implausibleNetwork({.oneWay = 2.0, .beta = 8e-9}), "");
}

TEST(Probe, ATinyBudgetStillMeasuresEveryPhaseOnce) {
  // Each phase takes at least one sample, however short its share.
  const ProbeReport report = probeHost({.budgetSeconds = 1e-4});
  const MachineModel& m = report.model;
  expectPlausibleBeta(m.copyBeta, "copy_beta");
  expectPlausibleTime(m.path(PathClass::kSameL3).alpha, "same_l3.alpha");
  expectPlausibleTime(m.flatAlpha, "flat_alpha");
  EXPECT_EQ(m.origin, "probe");
}

TEST(Probe, AContendedPhaseIsNotUsedAndTheProbeIsIncomplete) {
  // Every phase of two threads reported contended (the stand-in for a busy host): none of
  // their figures is used, whatever they measured, so every host class and the flat
  // exchange keep the defaults.
  const ProbeReport report = probeHost(
      {.budgetSeconds = 0.01, .contended = [](std::string_view) { return true; }});
  EXPECT_FALSE(report.complete);
  const MachineModel d = defaults();
  for (const PathClass c : {PathClass::kSameL3, PathClass::kSameSocket, PathClass::kSameHost}) {
    EXPECT_EQ(report.model.path(c).alpha, d.path(c).alpha) << pathClassName(c);
    EXPECT_EQ(report.model.path(c).beta, d.path(c).beta) << pathClassName(c);
  }
  EXPECT_EQ(report.model.flatAlpha, d.flatAlpha);
  EXPECT_EQ(report.model.flatBeta, d.flatBeta);
  EXPECT_EQ(report.model.switchCost, d.switchCost);
  EXPECT_EQ(report.model.yieldCost, d.yieldCost);
  EXPECT_EQ(report.model.loopback.overhead, d.loopback.overhead);
  bool named = false;  // the notes say same_l3 was not used (untrusted, or did not answer)
  for (const std::string& note : report.notes)
    named = named || (note.rfind("same_l3: CPUs", 0) == 0 && note.find("not used") != std::string::npos) ||
            note.rfind("paths: the probe's time ran out", 0) == 0;
  EXPECT_TRUE(named);
}

TEST(Probe, ConsistencyRulesRefuseImpossibleFigures) {
  const double copy = 1e-10;  // a 10 GB/s local copy
  EXPECT_EQ(implausiblePair(0.3e-6, 2e-10, copy), "");
  EXPECT_NE(implausiblePair(37.7e-6, 2e-10, copy).find("latency 37.7 us is past 10 us"),
            std::string::npos);
  EXPECT_NE(implausiblePair(0.3e-6, 1 / 0.04e9, copy).find("bandwidth 0.04 GB/s is under 1/16"),
            std::string::npos);
  EXPECT_EQ(implausiblePair(0.3e-6, 1 / 0.04e9, 0), "");  // no local copy to compare with
}

// Two packages, each of two L3 groups of two CPUs: CPUs 0-3 in package 0, 4-7 in 1.
topo::Machine twoPackages() {
  topo::Machine m;
  m.packages = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  m.numaNodes = m.packages;
  m.l3Groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  m.cores = m.pus = 8;
  return m;
}

TEST(Probe, CpuPairsFollowTheMachine) {
  using Pair = std::pair<int, int>;
  auto pairs = cpuPairsByClass(twoPackages(), {0, 1, 2, 3, 4, 5, 6, 7});
  EXPECT_EQ(pairs[0], Pair(0, 1));
  EXPECT_EQ(pairs[1], Pair(0, 2));
  EXPECT_EQ(pairs[2], Pair(0, 4));
  // The mask decides which pairs exist.
  pairs = cpuPairsByClass(twoPackages(), {1, 6});
  EXPECT_FALSE(pairs[0]);
  EXPECT_FALSE(pairs[1]);
  EXPECT_EQ(pairs[2], Pair(1, 6));
  pairs = cpuPairsByClass(twoPackages(), {5});
  EXPECT_EQ(pairs[0], Pair(5, 5));  // two ranks on one CPU
  EXPECT_FALSE(pairs[2]);
  // A machine hwloc could not describe is one L3.
  topo::Machine unknown;
  unknown.error = "no hwloc";
  pairs = cpuPairsByClass(unknown, {0, 1, 2});
  EXPECT_EQ(pairs[0], Pair(0, 1));
  EXPECT_FALSE(pairs[1]);
  EXPECT_FALSE(cpuPairsByClass(twoPackages(), {})[0]);
}

TEST(Probe, MissingClassesTakeTheNearestMeasured) {
  const LinkCost l3{1, 2, 3};
  const LinkCost host{7, 8, 9};
  MachineModel m = defaults();
  auto filled = fillMissingClasses({l3, std::nullopt, std::nullopt}, m);
  EXPECT_EQ(m.path(PathClass::kSameSocket).alpha, 1);
  EXPECT_EQ(m.path(PathClass::kSameHost).beta, 2);
  EXPECT_EQ(filled, (std::vector<std::string>{"same_socket: as same_l3", "same_host: as same_l3"}));
  m = defaults();
  filled = fillMissingClasses({std::nullopt, std::nullopt, host}, m);
  EXPECT_EQ(m.path(PathClass::kSameL3).alpha, 7);
  EXPECT_EQ(m.path(PathClass::kSameSocket).overhead, 9);
  m = defaults();
  filled = fillMissingClasses({l3, std::nullopt, host}, m);
  EXPECT_EQ(m.path(PathClass::kSameSocket).alpha, 1);  // inner first at a tie
  // The network class is never touched; with nothing measured, the defaults stay.
  m = defaults();
  EXPECT_TRUE(fillMissingClasses({std::nullopt, std::nullopt, std::nullopt}, m).empty());
  EXPECT_EQ(m.path(PathClass::kSameL3).alpha, defaults().path(PathClass::kSameL3).alpha);
}

}  // namespace
}  // namespace tutti::tuning
