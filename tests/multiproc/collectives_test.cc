// Real processes launched by the real tutti-run: all-reduce correctness for world sizes
// 1-8 (more ranks than cores is the normal case here), a rank killed in the middle of an
// all-reduce, and tutti-bench end to end. Every run has an outer bound far above its need.

#include <signal.h>

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "common/test_paths.h"

namespace tutti::test {
namespace {

constexpr double kOuterBoundSeconds = 240;

int countLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (const std::string& line : splitLines(text))
    if (line.find(needle) != std::string::npos) ++n;
  return n;
}

class CollectiveProcs : public ::testing::TestWithParam<int> {};

TEST_P(CollectiveProcs, AllreduceIsRightOnEveryRank) {
  const int n = GetParam();
  ProcessResult r = runProcess({binPath("tutti-run"), "-n", std::to_string(n), "--timeout", "200",
                                testProgramPath("tutti_collective_worker"), "check"},
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT OK"), n) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT FAILED"), 0) << r.out;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CollectiveProcs, ::testing::Values(1, 2, 3, 4, 5, 8));

TEST(CollectiveProcs, KilledRankIsNamedByEverySurvivor) {
  const int n = 4;
  const int victim = 2;
  ProcessResult r = runProcess({binPath("tutti-run"), "-n", std::to_string(n), "--timeout", "100",
                                testProgramPath("tutti_collective_worker"), "die",
                                std::to_string(victim)},
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_NE(r.exitCode(), 0);
  // Every survivor reports a peer failure that names the victim.
  for (int rank = 0; rank < n; ++rank) {
    if (rank == victim) continue;
    std::regex line("\\[" + std::to_string(rank) + "\\] EXPECTED-FAILURE code=peer failure peer=" +
                    std::to_string(victim) + ": .*rank " + std::to_string(victim) + ".*");
    bool found = false;
    for (const std::string& l : splitLines(r.out)) found = found || std::regex_match(l, line);
    EXPECT_TRUE(found) << "rank " << rank << " did not name rank " << victim << ":\n" << r.out << r.err;
  }
  // tutti-run names the victim as the first failure.
  EXPECT_NE(r.err.find("rank " + std::to_string(victim)), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("SIGKILL"), std::string::npos) << r.err;
}

TEST(CollectiveProcs, BenchmarkChecksEveryTypeWithZeroWrong) {
  ProcessResult r = runProcess({binPath("tutti-run"), "-n", "3", "--timeout", "200",
                                binPath("tutti-bench"), "allreduce", "-b", "8", "-e", "1M", "-f",
                                "16", "-n", "2", "-w", "1", "-c", "1", "-d", "all", "-o", "all"},
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# Out of bounds values : 0 OK"), std::string::npos) << r.out;
  // 10 types x 5 ops x 5 sizes rows, each with 0 wrong out of place and in place.
  std::regex row("\\[0\\] +[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z]+ +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +ring");
  int rows = 0;
  for (const std::string& l : splitLines(r.out)) rows += std::regex_match(l, row) ? 1 : 0;
  EXPECT_EQ(rows, 10 * 5 * 5) << r.out;  // sizes 8, 128, 2K, 32K, 512K
}

TEST(CollectiveProcs, KillingABenchmarkRankEndsTheJobNamingIt) {
  auto job = Subprocess::start({binPath("tutti-run"), "-n", "4", "--verbose", "--timeout", "100",
                                binPath("tutti-bench"), "allreduce", "-b", "32M", "-e", "32M",
                                "-n", "100000", "-w", "1", "-c", "0"});
  ASSERT_TRUE(job.ok()) << job.status().toString();
  Subprocess& p = **job;
  std::smatch m;
  std::regex pidLine("tutti-run: rank 1: pid ([0-9]+)");
  // Wait until the benchmark runs (rank 0 printed its header), then kill rank 1.
  ASSERT_TRUE(p.readUntil(
      [&](const std::string& out, const std::string& err) {
        return std::regex_search(err, m, pidLine) && out.find("# Collective") != std::string::npos;
      },
      Deadline::afterSeconds(120)))
      << p.out() << p.err();
  std::string err = p.err();
  ASSERT_TRUE(std::regex_search(err, m, pidLine));
  ASSERT_EQ(::kill(std::stoi(m[1].str()), SIGKILL), 0);
  ProcessResult r = p.wait(Deadline::afterSeconds(120));
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_NE(r.exitCode(), 0);
  for (int rank : {0, 2, 3}) {
    std::regex named("\\[" + std::to_string(rank) + "\\] .*rank 1.*");
    bool found = false;
    for (const std::string& l : splitLines(r.out + r.err)) found = found || std::regex_match(l, named);
    EXPECT_TRUE(found) << "rank " << rank << " did not name rank 1\n" << r.out << r.err;
  }
}

}  // namespace
}  // namespace tutti::test
