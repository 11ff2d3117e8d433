// tools/sim: the sweep's sizes, and tutti-sim run as a user runs it.
#include <gtest/gtest.h>

#include <sstream>

#include "common/subprocess.h"
#include "common/test_paths.h"
#include "sim/sweep.h"

namespace tutti::test {
namespace {

TEST(TuttiSim, Sizes) {
  auto one = sim::parseSizes("64M");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, std::vector<std::uint64_t>{64u << 20});
  auto range = sim::parseSizes("8:64");
  ASSERT_TRUE(range.ok());
  EXPECT_EQ(*range, (std::vector<std::uint64_t>{8, 16, 32, 64}));
  EXPECT_FALSE(sim::parseSizes("64:8").ok());
  EXPECT_FALSE(sim::parseSizes("lots").ok());
  EXPECT_FALSE(sim::parseSizes("0:8").ok());
}

TEST(TuttiSim, PredictsEveryAlgorithm) {
  const ProcessResult r = runProcess(
      {binPath("tutti-sim"), "allreduce", "1M", "--ranks", "16", "--ranks-per-host", "4", "--net",
       "fat-tree:hosts-per-leaf=2,oversub=2"},
      60);
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  // One row per all-reduce algorithm that applies: size, algorithm, time, algbw, busbw, ...
  std::istringstream lines(r.out);
  std::string line;
  int rows = 0;
  bool ring = false;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#' || line.find("size(B)") != std::string::npos) continue;
    std::istringstream cells(line);
    unsigned long long bytes = 0;
    std::string algorithm;
    double us = 0, algbw = 0, busbw = 0;
    ASSERT_TRUE(cells >> bytes >> algorithm >> us >> algbw >> busbw) << line;
    EXPECT_EQ(bytes, 1u << 20) << line;
    EXPECT_GT(us, 0) << line;
    EXPECT_NEAR(busbw, algbw * 2 * 15 / 16, 0.002 + 1e-3 * busbw) << line;
    if (algorithm == "ring" || algorithm == "*ring") ring = true;
    ++rows;
  }
  EXPECT_GE(rows, 5) << r.out;
  EXPECT_TRUE(ring) << r.out;
}

TEST(TuttiSim, BadArgumentsAreNamed) {
  const ProcessResult r = runProcess(
      {binPath("tutti-sim"), "allreduce", "1M", "--ranks", "16", "--net", "torus"}, 60);
  EXPECT_NE(r.exitCode(), 0);
  EXPECT_NE(r.err.find("unknown network 'torus'"), std::string::npos) << r.err;
  const ProcessResult algo = runProcess(
      {binPath("tutti-sim"), "allreduce", "1M", "--ranks", "4", "--algo", "nope"}, 60);
  EXPECT_NE(algo.exitCode(), 0);
  EXPECT_NE(algo.err.find("no algorithm 'nope'"), std::string::npos) << algo.err;
}

}  // namespace
}  // namespace tutti::test
