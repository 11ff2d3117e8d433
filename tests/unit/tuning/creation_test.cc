// The machine model at communicator creation (core/model_setup.h through CommImpl::create):
// every rank of a real communicator ends with the same parameters, rank 0's, and a split
// child keeps its parent's. Ranks are threads over a memory store and shared memory.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "bootstrap/tcp_store.h"
#include "core/comm_impl.h"
#include "reduce/reduce.h"
#include "topology/view.h"
#include "tuning/model_json.h"

namespace tutti::detail {
namespace {

// The configuration is read once per process, at the first creation: the cache goes to a
// directory of this test's, never the user's.
const bool kCacheHere = [] {
  ::setenv("XDG_CACHE_HOME", (::testing::TempDir() + "tutti_creation_test_cache").c_str(), 1);
  return true;
}();

// Rank `rank` of `size` of communicator `name` over `store` (a split child's `view` where
// given: the hosts it sees).
Result<std::unique_ptr<CommImpl>> createRank(const std::shared_ptr<Store>& store, int rank,
                                             int size, const std::string& name,
                                             std::shared_ptr<const topo::View> view = nullptr) {
  CommImpl::InitParams params;
  params.store = store;
  params.rank = rank;
  params.size = size;
  params.options.name = name;
  params.view = std::move(view);
  return CommImpl::create(std::move(params));
}

TEST(ModelAtCreation, EveryRankAndEverySplitChildHoldsRankZerosModel) {
  ASSERT_TRUE(kCacheHere);
  constexpr int kRanks = 3;
  const auto store = makeMemoryStore();
  std::vector<std::string> models(kRanks), children(kRanks);
  std::vector<std::string> origins(kRanks);
  std::vector<bool> sameAsParent(kRanks, false);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      auto comm = createRank(store, r, kRanks, "model");
      ASSERT_TRUE(comm.ok()) << comm.status().message();
      ASSERT_NE((*comm)->model(), nullptr);
      models[static_cast<std::size_t>(r)] = tuning::toJson(*(*comm)->model());
      origins[static_cast<std::size_t>(r)] = (*comm)->model()->origin;
      // The model's threshold of non-temporal stores holds for the process (reduce.h).
      EXPECT_EQ(reduce::streamingFrom(), (*comm)->model()->streamingStoresFrom);
      auto child = (*comm)->split(r == 1 ? 1 : 0, r, CommOptions{});
      ASSERT_TRUE(child.ok()) << child.status().message();
      ASSERT_NE(*child, nullptr);
      children[static_cast<std::size_t>(r)] = tuning::toJson(*(*child)->model());
      sameAsParent[static_cast<std::size_t>(r)] = (*child)->model() == (*comm)->model();
      EXPECT_TRUE((*child)->leave().ok());
      EXPECT_TRUE((*comm)->leave().ok());
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(models[static_cast<std::size_t>(r)], models[0]) << r;
    EXPECT_EQ(origins[static_cast<std::size_t>(r)], origins[0]) << r;
    EXPECT_EQ(children[static_cast<std::size_t>(r)], models[0]) << r;
    EXPECT_TRUE(sameAsParent[static_cast<std::size_t>(r)]) << r;
  }
  // Probed (the first run here) or read from the cache (later runs), never the defaults.
  EXPECT_TRUE(origins[0].rfind("probe", 0) == 0 || origins[0].rfind("cache ", 0) == 0) << origins[0];
}

// Two pretend hosts of two ranks each: the view a communicator over two machines has.
std::shared_ptr<const topo::View> twoHosts() {
  auto view = std::make_shared<topo::View>();
  for (int h = 0; h < 2; ++h) {
    topo::HostInfo host;
    host.name = "node" + std::to_string(h);
    host.id = "pretend-host-" + std::to_string(h);
    view->hosts.push_back(host);
  }
  for (int r = 0; r < 4; ++r) {
    topo::RankInfo rank;
    rank.host = r / 2;
    rank.localIndex = r % 2;
    view->ranks.push_back(rank);
  }
  return view;
}

TEST(ModelAtCreation, AcrossHostsEveryRankTakesTheNetworkRankZeroMeasured) {
  // Rank 0 and rank 2 (the lowest of the other host) probe their link (here the ranks'
  // shared memory, the hosts being pretend); every rank ends with the same model, its
  // network path the probe's, and a first all-reduce runs right after.
  ASSERT_TRUE(kCacheHere);
  constexpr int kRanks = 4;
  const auto store = makeMemoryStore();
  const auto view = twoHosts();
  std::vector<std::string> models(kRanks), origins(kRanks);
  std::vector<double> nic(kRanks), beta(kRanks), sums(kRanks);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      auto comm = createRank(store, r, kRanks, "network", view);
      ASSERT_TRUE(comm.ok()) << comm.status().message();
      const tuning::MachineModel& m = *(*comm)->model();
      const auto i = static_cast<std::size_t>(r);
      models[i] = tuning::toJson(m);
      origins[i] = m.origin;
      nic[i] = m.nicBandwidth;
      beta[i] = m.path(tuning::PathClass::kNetwork).beta;
      double mine = r + 1, sum = 0;
      OpRequest call;
      call.spec.kind = Collective::kAllReduce;
      call.spec.count = 1;
      call.spec.dtype = DataType::kFloat64;
      call.spec.op = ReduceOp::kSum;
      call.input = &mine;
      call.output = &sum;
      EXPECT_TRUE((*comm)->runBlocking(std::move(call), CallOptions{}).ok());
      sums[i] = sum;
      EXPECT_TRUE((*comm)->leave().ok());
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) {
    const auto i = static_cast<std::size_t>(r);
    EXPECT_EQ(models[i], models[0]) << r;
    EXPECT_EQ(origins[i], origins[0]) << r;
    EXPECT_EQ(sums[i], 10.0) << r;
    EXPECT_GT(beta[i], 0) << r;
    EXPECT_DOUBLE_EQ(nic[i] * beta[i], 1.0) << r;
  }
  EXPECT_NE(origins[0].find("network measured with rank 2"), std::string::npos) << origins[0];
}

}  // namespace
}  // namespace tutti::detail
