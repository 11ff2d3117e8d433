// The view at creation (core/topology_setup.h): the gather through a store by ranks that
// are threads, and the HostMap the algorithms get from a view.
#include "core/topology_setup.h"

#include <gtest/gtest.h>

#include <thread>

#include "topology/view_json.h"

namespace tutti::detail {
namespace {

topo::View blocks(const std::vector<int>& perHost) {
  topo::View view;
  for (std::size_t h = 0; h < perHost.size(); ++h) {
    topo::HostInfo host;
    host.name = "h" + std::to_string(h);
    host.id = host.name;
    view.hosts.push_back(host);
    for (int i = 0; i < perHost[h]; ++i) {
      topo::RankInfo r;
      r.host = static_cast<int>(h);
      r.localIndex = i;
      view.ranks.push_back(r);
    }
  }
  return view;
}

TEST(TopologySetup, HostMapOfUnevenHosts) {
  EXPECT_EQ(hostMapOf(blocks({4})), nullptr);  // one host: none
  const auto map = hostMapOf(blocks({3, 1, 2}));
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(map->toString(), "3 hosts: {0,1,2} {3} {4,5}");
  EXPECT_FALSE(map->even());
  EXPECT_EQ(map->localIndex[5], 1);
}

TEST(TopologySetup, SplitChildSeesItsRanksHosts) {
  // Ranks 0..5 on hosts of 3, 1, 2; a child of ranks {5, 0, 1} (new order) spans 2 hosts.
  const topo::View parent = blocks({3, 1, 2});
  const auto map = hostMapOf(topo::subView(parent, {5, 0, 1}));
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(map->toString(), "2 hosts: {0} {1,2}");
  EXPECT_EQ(hostMapOf(topo::subView(parent, {1, 2})), nullptr);
}

TEST(TopologySetup, RanksGatherOneViewThroughTheStore) {
  const auto store = makeMemoryStore();
  Config config = Config::defaults();
  constexpr int kRanks = 5;
  std::vector<std::shared_ptr<const topo::View>> views(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      // Two emulated hosts, told apart by their identity.
      TopologyRequest q{store.get(), "c/", "c", r, kRanks, r % 2 == 0 ? "even" : "odd",
                        "127.0.0.1", Deadline::afterSeconds(30)};
      TopologySetup setup(q, config, nullptr);
      ASSERT_TRUE(setup.publish().ok());
      auto view = setup.finish();
      ASSERT_TRUE(view.ok()) << view.status().message();
      views[static_cast<std::size_t>(r)] = *view;
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_NE(views[static_cast<std::size_t>(r)], nullptr);
    EXPECT_EQ(topo::toJson(*views[static_cast<std::size_t>(r)]), topo::toJson(*views[0]));
  }
  const auto map = hostMapOf(*views[0]);
  ASSERT_NE(map, nullptr);
  EXPECT_EQ(map->toString(), "2 hosts: {0,2,4} {1,3}");
  EXPECT_EQ(views[0]->ranks[3].nic, "lo");
}

TEST(TopologySetup, FileOfAnotherWorldSizeIsRefused) {
  const std::string path = ::testing::TempDir() + "tutti_setup_view.json";
  ASSERT_TRUE(topo::writeViewFile(path, blocks({2, 2})).ok());
  auto config = Config::fromMap({{"TUTTI_TOPO_FILE", path}});
  ASSERT_TRUE(config.ok());
  TopologyRequest q{nullptr, "c/", "c", 0, 3, "id", "127.0.0.1", Deadline::afterSeconds(5)};
  TopologySetup setup(q, *config, nullptr);
  ASSERT_TRUE(setup.publish().ok());  // nothing to publish: the file is the view
  auto view = setup.finish();
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.status().message(),
            "TUTTI_TOPO_FILE: topology file " + path + " describes 4 ranks, but communicator 'c' has 3");
  q.size = 4;
  q.rank = 3;
  TopologySetup good(q, *config, nullptr);
  auto loaded = good.finish();
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(hostMapOf(**loaded)->toString(), "2 hosts: {0,1} {2,3}");
}

}  // namespace
}  // namespace tutti::detail
