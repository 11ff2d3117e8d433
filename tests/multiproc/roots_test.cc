// Ranks that disagree on the root of a rooted collective (issue 37, part 4), in real
// processes launched by the real tutti-run, through the C API (tests/multiproc/root_worker.cc
// has the cases): rank 1 passes root 1 and the others root 0. Every rank must fail with
// tuttiMismatch: in the call, with an error naming both calls, or, where its call could
// complete without hearing from any peer (a root that only sends), at its next call or when
// it destroys the communicator. Never a silent success. Each job also runs every case with
// agreeing roots and checks every element.
//
// The matrix, kept to a few minutes on 2 cores: every algorithm of every rooted collective
// (from the registry) on 4 ranks, and the default algorithms on 1, 2, 3 and 8 ranks; small
// (16 elements) and large (100,000 elements per block) calls; shm, tcp and hybrid.

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "common/launch.h"
#include "common/registry.h"
#include "common/subprocess.h"
#include "common/test_paths.h"
#include "schedule/collective.h"

namespace tutti::test {
namespace {

constexpr double kOuterBoundSeconds = 280;
constexpr const char* kCounts = "16,100000";
constexpr const char* kModes = "match,destroy,next";
constexpr Collective kRooted[] = {Collective::kBroadcast, Collective::kScatter,
                                  Collective::kReduce,    Collective::kGather,
                                  Collective::kGatherV,   Collective::kScatterV};

// The `index`-th algorithm of every rooted collective that has one: the TUTTI_ALGO value
// forcing them, and the collectives it covers.
struct AlgorithmSet {
  std::string tuttiAlgo;
  std::string collectives;
};

AlgorithmSet algorithmSet(std::size_t index) {
  AlgorithmSet set;
  for (Collective kind : kRooted) {
    const std::vector<std::string> names = algorithmsOf(kind);
    if (index >= names.size()) continue;
    const std::string name = collectiveName(kind);
    set.tuttiAlgo += (set.tuttiAlgo.empty() ? "" : ",") + name + ":" + names[index];
    set.collectives += (set.collectives.empty() ? "" : ",") + name;
  }
  return set;
}

std::size_t mostAlgorithms() {
  std::size_t most = 0;
  for (Collective kind : kRooted) most = std::max(most, algorithmsOf(kind).size());
  return most;
}

std::string allRooted() {
  std::string out;
  for (Collective kind : kRooted) out += (out.empty() ? "" : ",") + std::string(collectiveName(kind));
  return out;
}

int countOf(const std::string& list) {
  int n = list.empty() ? 0 : 1;
  for (char c : list) n += c == ',' ? 1 : 0;
  return n;
}

// Runs the worker on `n` ranks and checks that every rank ran every case and none failed.
void expectEveryCaseRight(int n, const std::string& transport,
                          const std::vector<std::string>& env, const std::string& collectives,
                          const std::vector<std::string>& deviant = {}) {
  std::vector<std::string> options = {"--timeout", "250", "--grace", "30"};
  for (const std::string& kv : env) {
    options.push_back("-x");
    options.push_back(kv);
  }
  std::vector<std::string> program = {testProgramPath("tutti_root_worker"), collectives, kCounts,
                                      kModes};
  program.insert(program.end(), deviant.begin(), deviant.end());
  ProcessResult r = runProcess(launch(n, transport, options, program), kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  // match on every world; destroy and next where a rank can deviate.
  const int modes = n >= 2 ? 3 : 1;
  const int cases = countOf(collectives) * countOf(kCounts) * modes;
  for (int rank = 0; rank < n; ++rank) {
    const std::string done = "ROOTS DONE rank " + std::to_string(rank) + " of " +
                             std::to_string(n) + ": " + std::to_string(cases) + " cases, 0 failed";
    EXPECT_EQ(countLines(r.out, done), 1) << "rank " << rank << ":\n" << r.out << r.err;
  }
  EXPECT_EQ(countLines(r.out, "CASE FAIL"), 0) << r.out;
}

std::string name(const ::testing::TestParamInfo<std::tuple<int, std::string>>& info) {
  return std::get<1>(info.param) + "_" + std::to_string(std::get<0>(info.param));
}

class EveryAlgorithm : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

// The index-th algorithm of each rooted collective, forced with TUTTI_ALGO, on 4 ranks.
TEST_P(EveryAlgorithm, EveryRankFailsNamingBothRoots) {
  const auto [index, transport] = GetParam();
  const AlgorithmSet set = algorithmSet(static_cast<std::size_t>(index));
  ASSERT_FALSE(set.collectives.empty());
  SCOPED_TRACE("TUTTI_ALGO=" + set.tuttiAlgo);
  expectEveryCaseRight(4, transport, {"TUTTI_ALGO=" + set.tuttiAlgo}, set.collectives);
}

INSTANTIATE_TEST_SUITE_P(
    RootedCollectives, EveryAlgorithm,
    ::testing::Combine(::testing::Range(0, static_cast<int>(mostAlgorithms())),
                       ::testing::ValuesIn(kTransports)),
    [](const auto& param) {
      return std::get<1>(param.param) + "_algorithm" + std::to_string(std::get<0>(param.param));
    });

class WorldSizes : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

// The default algorithms; 1 rank has nothing to disagree on and runs the matching cases.
TEST_P(WorldSizes, EveryRankFailsNamingBothRoots) {
  const auto [n, transport] = GetParam();
  expectEveryCaseRight(n, transport, {}, allRooted());
}

INSTANTIATE_TEST_SUITE_P(RootedCollectives, WorldSizes,
                         ::testing::Combine(::testing::Values(1, 2, 3, 8),
                                            ::testing::ValuesIn(kTransports)),
                         name);

class OtherDeviant : public ::testing::TestWithParam<std::string> {};

// Rank 2 passes root 3, a rank that itself passes root 0: the deviant's root sends nothing
// as the root, and the deviant waits for a parent that follows the other call.
TEST_P(OtherDeviant, EveryRankFailsNamingBothRoots) {
  expectEveryCaseRight(4, GetParam(), {}, allRooted(), {"2", "3"});
}

INSTANTIATE_TEST_SUITE_P(RootedCollectives, OtherDeviant, ::testing::ValuesIn(kTransports),
                         [](const auto& param) { return param.param; });

}  // namespace
}  // namespace tutti::test
