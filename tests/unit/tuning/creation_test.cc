// The machine model at communicator creation (core/model_setup.h through CommImpl::create):
// every rank of a real communicator ends with the same parameters, rank 0's, and a split
// child keeps its parent's. Ranks are threads over a memory store and shared memory.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "bootstrap/tcp_store.h"
#include "core/comm_impl.h"
#include "reduce/reduce.h"
#include "tuning/model_json.h"

namespace tutti::detail {
namespace {

// The configuration is read once per process, at the first creation: the cache goes to a
// directory of this test's, never the user's.
const bool kCacheHere = [] {
  ::setenv("XDG_CACHE_HOME", (::testing::TempDir() + "tutti_creation_test_cache").c_str(), 1);
  return true;
}();

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
      CommImpl::InitParams params;
      params.store = store;
      params.rank = r;
      params.size = kRanks;
      params.options.name = "model";
      auto comm = CommImpl::create(std::move(params));
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

}  // namespace
}  // namespace tutti::detail
