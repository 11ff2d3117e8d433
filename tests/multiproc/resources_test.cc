// Resource release, in real processes launched by tutti-run (tests/multiproc/
// resource_worker.cc is the rank program): creating and destroying a communicator 1,000
// times, over shared memory and over TCP, alone and with three ranks, every tenth time
// aborted by one rank, leaves no descriptor, thread or shared-memory mapping behind in any
// rank; and a rank killed while it holds shared memory leaves nothing in /dev/shm (the
// segments are memfds, which the worker checks while they are mapped).

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <tuple>

#include "common/subprocess.h"
#include "common/test_paths.h"

namespace tutti::test {
namespace {

constexpr double kOuterBoundSeconds = 240;
constexpr int kCycles = 1000;
constexpr int kAbortEvery = 10;

// The names in /dev/shm that mention tutti. Other programs on this machine may create
// files there at any time, so only tutti's would be ours.
std::set<std::string> tuttiFilesInDevShm() {
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.find("tutti") != std::string::npos) names.insert(name);
  }
  return names;
}

class CreateDestroyProcs : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(CreateDestroyProcs, ThousandCyclesLeaveNoDescriptorThreadOrSegment) {
  const auto [n, transport] = GetParam();
  const std::set<std::string> before = tuttiFilesInDevShm();
  ProcessResult r = runProcess(
      {binPath("tutti-run"), "-n", std::to_string(n), "--timeout", "200", "-x",
       "TUTTI_TRANSPORT=" + transport, testProgramPath("tutti_resource_worker"), "cycles",
       std::to_string(kCycles), std::to_string(kAbortEvery), transport == "shm" ? "1" : "0"},
      kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT OK"), n) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT FAILED"), 0) << r.out;
  EXPECT_EQ(tuttiFilesInDevShm(), before);
}

std::string worldName(const ::testing::TestParamInfo<std::tuple<int, std::string>>& info) {
  return std::get<1>(info.param) + "_n" + std::to_string(std::get<0>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Worlds, CreateDestroyProcs,
                         ::testing::Combine(::testing::Values(1, 3),
                                            ::testing::Values("shm", "tcp")),
                         worldName);

TEST(ShmSegmentProcs, KilledRankLeavesNothingInDevShm) {
  const int n = 3;
  const int victim = 1;
  const std::set<std::string> before = tuttiFilesInDevShm();
  // Where the survivors say they left the first barrier (the victim waits for it).
  std::string dir = testing::TempDir() + "tutti_killed_XXXXXX";
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  ProcessResult r = runProcess({binPath("tutti-run"), "-n", std::to_string(n), "--timeout", "100",
                                "--grace", "60", "-x", "TUTTI_TRANSPORT=shm",
                                testProgramPath("tutti_resource_worker"), "killed",
                                std::to_string(victim), dir},
                               kOuterBoundSeconds);
  std::filesystem::remove_all(dir);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_NE(r.exitCode(), 0) << r.out << r.err;  // tutti-run reports the killed rank
  // Every rank, the victim included, mapped all n segments, as memfds, none from /dev/shm.
  const std::regex segments("SEGMENTS rank [0-9]+: fds [0-9]+ threads [0-9]+ segment-fds [0-9]+ "
                            "segment-mappings " + std::to_string(n) + " dev-shm-mappings 0");
  int mapped = 0;
  for (const std::string& line : splitLines(r.out)) mapped += std::regex_search(line, segments);
  EXPECT_EQ(mapped, n) << r.out << r.err;
  for (int rank = 0; rank < n; ++rank) {
    if (rank == victim) continue;
    const std::string survivor = "SURVIVOR rank " + std::to_string(rank) +
                                 ": code=peer failure peer=" + std::to_string(victim);
    EXPECT_EQ(countLines(r.out, survivor), 1) << r.out << r.err;
  }
  EXPECT_EQ(tuttiFilesInDevShm(), before);
}

}  // namespace
}  // namespace tutti::test
