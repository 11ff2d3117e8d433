// Placement (each rank's place and the path class of a pair) and Network (its syntax).
#include <gtest/gtest.h>

#include "topology/view.h"
#include "tuning/network.h"
#include "tuning/placement.h"

namespace tutti::tuning {
namespace {

TEST(Placement, SyntheticBlocksAndPathClasses) {
  // 2 hosts of 8 ranks; 8 cores in 2 packages of 2 L3 groups each (2 cores per group).
  auto p = Placement::synthetic(16, 8, HostShape{8, 2, 2});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->hostCount(), 2);
  EXPECT_TRUE(p->uniform());
  EXPECT_EQ(p->hosts().hostOf[9], 1);
  EXPECT_EQ(p->place(9).localIndex, 1);
  EXPECT_EQ(p->pathClass(0, 0), PathClass::kSameL3);
  EXPECT_EQ(p->pathClass(0, 1), PathClass::kSameL3);
  EXPECT_EQ(p->pathClass(0, 2), PathClass::kSameSocket);
  EXPECT_EQ(p->pathClass(0, 4), PathClass::kSameHost);
  EXPECT_EQ(p->pathClass(0, 8), PathClass::kNetwork);
  EXPECT_EQ(p->cores(1), 8);
  EXPECT_EQ(p->describe(), "16 ranks on 2 hosts (8 per host, 8 cores each)");
}

TEST(Placement, UnevenHostsAreNotUniform) {
  auto p = Placement::synthetic(10, 4, 4);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->hostCount(), 3);
  EXPECT_FALSE(p->uniform());
  EXPECT_FALSE(Placement::synthetic(0, 4, 4).ok());
  EXPECT_FALSE(Placement::synthetic(4, 0, 4).ok());
}

TEST(Placement, ReplicatedView) {
  topo::View view;
  topo::HostInfo host;
  host.name = "a";
  host.id = "a";
  host.cores = 4;
  host.packages = 2;
  view.hosts = {host};
  for (int r = 0; r < 2; ++r) {
    topo::RankInfo rank;
    rank.host = 0;
    rank.localIndex = r;
    rank.package = r;
    rank.l3Group = r;
    view.ranks.push_back(rank);
  }
  auto p = Placement::replicate(view, 3);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->size(), 6);
  EXPECT_EQ(p->hostCount(), 3);
  EXPECT_EQ(p->cores(2), 4);
  EXPECT_EQ(p->pathClass(0, 1), PathClass::kSameHost);
  EXPECT_EQ(p->pathClass(1, 3), PathClass::kNetwork);
  EXPECT_TRUE(p->uniform());
  auto same = Placement::fromView(view);
  ASSERT_TRUE(same.ok()) << same.status().message();
  EXPECT_EQ(same->size(), 2);
}

TEST(Placement, AHostsCoresAreAtMostTheCpusItsRanksMayRunOn) {
  // Two pretend hosts of one 4-core machine (2 hardware threads a core), each rank bound
  // to a CPU: two ranks on CPU 0, two on CPUs 2 and 3.
  topo::View view;
  for (const char* name : {"a", "b"}) {
    topo::HostInfo host;
    host.name = name;
    host.id = name;
    host.cores = 4;
    host.pus = 8;
    view.hosts.push_back(host);
  }
  const char* masks[] = {"0", "0", "2", "3"};
  for (int r = 0; r < 4; ++r) {
    topo::RankInfo rank;
    rank.host = r / 2;
    rank.localIndex = r % 2;
    rank.cpus = masks[r];
    view.ranks.push_back(rank);
  }
  auto p = Placement::fromView(view);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->cores(0), 1);
  EXPECT_EQ(p->cores(1), 1);  // 2 hardware threads: one core's worth
  EXPECT_EQ(p->place(0).core, p->place(1).core);
  auto replicated = Placement::replicate(view, 4);
  ASSERT_TRUE(replicated.ok());
  EXPECT_EQ(replicated->cores(2), 1);
  // Masks wider than the host, or one not known: the host's cores.
  view.ranks[2].cpus = "0-7";
  view.ranks[3].cpus = "0-7";
  view.ranks[1].cpus = "";
  p = Placement::fromView(view);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->cores(0), 4);
  EXPECT_EQ(p->cores(1), 4);
}

TEST(Placement, PretendHostsOfOneMachineShareItsCores) {
  // Three pretend hosts of 2 ranks on a 2-core machine, as the multi-host tests bind them:
  // hosts a and b on CPU 0, host c on CPU 1; host d is another machine.
  topo::View view;
  for (const char* name : {"a", "b", "c", "d"}) {
    topo::HostInfo host;
    host.name = host.id = name;
    host.machine = name[0] == 'd' ? "other" : "vm";
    host.cores = host.pus = 2;
    view.hosts.push_back(host);
  }
  const char* masks[] = {"0", "0", "0", "0", "1", "1", "0", "0"};
  for (int r = 0; r < 8; ++r) {
    topo::RankInfo rank;
    rank.host = r / 2;
    rank.localIndex = r % 2;
    rank.cpus = masks[r];
    view.ranks.push_back(rank);
  }
  auto p = Placement::fromView(view);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->hostCount(), 4);
  EXPECT_EQ(p->machineCount(), 2);
  for (int h = 0; h < 3; ++h) EXPECT_EQ(p->machineOf(h), 0) << h;
  EXPECT_EQ(p->machineOf(3), 1);
  EXPECT_EQ(p->machineCores(0), 2);  // CPUs 0 and 1 between them
  EXPECT_EQ(p->machineCores(1), 1);
  for (int h = 0; h < 4; ++h) EXPECT_EQ(p->cores(h), 1) << h;  // each host's own masks
  // Bound cores are places among the machine's CPUs.
  for (int r = 0; r < 8; ++r) EXPECT_EQ(p->place(r).boundCore, r == 4 || r == 5 ? 1 : 0) << r;
  EXPECT_FALSE(p->uniform());  // the fast path would miss what the hosts share
  EXPECT_NE(p->describe().find("of 2 machines"), std::string::npos) << p->describe();
  // Without machines every host is its own; a replicated view is a cluster of such hosts.
  for (auto& host : view.hosts) host.machine.clear();
  p = Placement::fromView(view);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->machineCount(), 4);
  EXPECT_EQ(p->machineCores(2), 1);
  EXPECT_EQ(p->place(4).boundCore, 0);
  EXPECT_TRUE(p->uniform());
  view.hosts[0].machine = view.hosts[1].machine = "vm";
  auto replicated = Placement::replicate(view, 8);
  ASSERT_TRUE(replicated.ok());
  EXPECT_EQ(replicated->machineCount(), 8);
  EXPECT_EQ(replicated->machineOf(5), 5);
}

TEST(Placement, ARankWhoseMaskIsOneCpuIsBoundToItsCore) {
  // One 2-core host, four ranks bound in blocks as tutti-run binds them: 0 and 1 on CPU 0,
  // 2 and 3 on CPU 1.
  topo::View view;
  topo::HostInfo host;
  host.name = host.id = "h";
  host.cores = host.pus = 2;
  view.hosts.push_back(host);
  const char* masks[] = {"0", "0", "1", "1"};
  for (int r = 0; r < 4; ++r) {
    topo::RankInfo rank;
    rank.localIndex = r;
    rank.cpus = masks[r];
    view.ranks.push_back(rank);
  }
  auto p = Placement::fromView(view);
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->cores(0), 2);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(p->place(r).boundCore, r / 2) << r;
  auto replicated = Placement::replicate(view, 3);
  ASSERT_TRUE(replicated.ok());
  EXPECT_EQ(replicated->place(9).boundCore, 0);  // host 2's second rank
  EXPECT_EQ(replicated->place(11).boundCore, 1);
  EXPECT_TRUE(replicated->uniform());
  // A rank free to run on both CPUs is bound to neither; one mask not known binds nobody.
  view.ranks[1].cpus = "0-1";
  p = Placement::fromView(view);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->place(0).boundCore, 0);
  EXPECT_EQ(p->place(1).boundCore, -1);
  view.ranks[1].cpus = "";
  p = Placement::fromView(view);
  ASSERT_TRUE(p.ok());
  for (int r = 0; r < 4; ++r) EXPECT_EQ(p->place(r).boundCore, -1) << r;
  // Hardware threads are not cores: no binding is assumed on them.
  view.ranks[1].cpus = "0";
  view.hosts[0].pus = 4;
  p = Placement::fromView(view);
  ASSERT_TRUE(p.ok());
  for (int r = 0; r < 4; ++r) EXPECT_EQ(p->place(r).boundCore, -1) << r;
  // Synthetic placements bind nobody.
  auto synthetic = Placement::synthetic(4, 4, 2);
  ASSERT_TRUE(synthetic.ok());
  EXPECT_EQ(synthetic->place(3).boundCore, -1);
}

TEST(Network, Syntax) {
  auto flat = Network::parse("flat");
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->kind, Network::Kind::kFlat);
  auto tree = Network::parse("fat-tree:hosts-per-leaf=4,oversub=2,nic-gbps=100,hop-us=1");
  ASSERT_TRUE(tree.ok()) << tree.status().message();
  EXPECT_EQ(tree->hostsPerLeaf, 4);
  EXPECT_DOUBLE_EQ(tree->oversub, 2);
  EXPECT_DOUBLE_EQ(tree->nicBandwidth, 12.5e9);
  EXPECT_DOUBLE_EQ(tree->hopLatency, 1e-6);
  EXPECT_EQ(Network::parse(tree->describe())->hostsPerLeaf, 4);
  auto rail = Network::parse("rail:rails=8,spine-oversub=4");
  ASSERT_TRUE(rail.ok()) << rail.status().message();
  EXPECT_EQ(rail->rails, 8);
  for (const char* bad : {"torus", "fat-tree", "fat-tree:hosts-per-leaf=0",
                          "fat-tree:hosts-per-leaf=4,oversub=0.5", "rail:rails=x",
                          "fat-tree:hosts-per-leaf=4,rails=2", "flat:oversub"}) {
    auto r = Network::parse(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(r.status().message().find("network: "), std::string::npos) << r.status().message();
    }
  }
  EXPECT_FALSE(Network::fromArgument("/nonexistent/net.json").ok());
}

}  // namespace
}  // namespace tutti::tuning
