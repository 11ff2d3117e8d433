// The tuner across real processes (tutti-run, tutti-bench, shared memory): with
// TUTTI_TUNER=model every rank logs the same choice for every new shape (TUNE lines), and the
// calls run and check clean; a forced algorithm still runs. Each run takes about a second.

#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "common/test_paths.h"

namespace tutti::test {
namespace {

constexpr double kOuterBoundSeconds = 120;

ProcessResult runBench(const std::vector<std::string>& env, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"/usr/bin/env", "TUTTI_TRANSPORT=shm", "TUTTI_TUNER=model"};
  argv.insert(argv.end(), env.begin(), env.end());
  argv.push_back(binPath("tutti-run"));
  for (const char* a : {"-n", "4", "--timeout", "60"}) argv.emplace_back(a);
  argv.push_back(binPath("tutti-bench"));
  argv.insert(argv.end(), args.begin(), args.end());
  return runProcess(argv, kOuterBoundSeconds);
}

TEST(TunerProcs, EveryRankChoosesAlike) {
  ProcessResult r = runBench({"TUTTI_DEBUG=INFO", "TUTTI_DEBUG_SUBSYS=TUNE"},
                             {"allreduce", "-b", "8", "-e", "4M", "-f", "32", "-n", "2", "-w", "1",
                              "-c", "1"});
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  ASSERT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Out of bounds values : 0 OK"), std::string::npos) << r.out;
  // "[rank R] tutti INFO TUNE tuner.cc:L: SHAPE ...: model chose ..." per rank and shape.
  const std::regex tune(R"(\[rank (\d+)\] tutti INFO TUNE [a-z_.]+:\d+: (.*): (model chose .*))");
  std::map<std::string, std::map<int, std::string>> choices;  // shape -> rank -> choice
  for (const std::string& text : {r.out, r.err}) {
    for (auto it = std::sregex_iterator(text.begin(), text.end(), tune); it != std::sregex_iterator();
         ++it)
      choices[(*it)[2].str()][std::stoi((*it)[1].str())] = (*it)[3].str();
  }
  ASSERT_GE(choices.size(), 4u) << r.out << r.err;  // 8 B .. 4 MiB by 32, and the barrier
  for (const auto& [shape, byRank] : choices) {
    ASSERT_EQ(byRank.size(), 4u) << shape;
    for (const auto& [rank, choice] : byRank) EXPECT_EQ(choice, byRank.at(0)) << shape << " rank " << rank;
  }
}

TEST(TunerProcs, ForcedAlgorithmStillRuns) {
  ProcessResult r = runBench({"TUTTI_ALGO=allreduce:ring"},
                             {"allreduce", "-b", "64K", "-e", "1M", "-f", "16", "-n", "2", "-w", "1",
                              "-c", "1"});
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  ASSERT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_NE(r.out.find("Out of bounds values : 0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ring\n"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace tutti::test
