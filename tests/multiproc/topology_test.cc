// TUTTI_TOPO_FILE in a real job: 4 processes on this machine presented as 2 hosts of 2 ranks.
// Every rank sees the file's hosts (its INFO/TOPO line), rank 0 dumps the view it used
// (TUTTI_TOPO_DUMP_FILE), and a checked all-reduce still runs over the real transports.

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "common/subprocess.h"
#include "common/test_paths.h"
#include "topology/view_json.h"

namespace tutti::test {
namespace {

TEST(TopologyProcs, FilePresentsTwoHostsOfTwoRanks) {
  const std::string dir = ::testing::TempDir();
  const std::string file = dir + "tutti_topo_2x2.json";
  const std::string dump = dir + "tutti_topo_2x2_dump.json";
  std::remove(dump.c_str());
  std::ofstream(file) << R"({"format": "tutti-topology", "version": 1,
    "hosts": [{"name": "node-a", "packages": 2}, {"name": "node-b", "packages": 2}],
    "ranks": [{"rank": 0, "host": 0, "package": 0}, {"rank": 1, "host": 0, "package": 1},
              {"rank": 2, "host": 1, "package": 0}, {"rank": 3, "host": 1, "package": 1}]})";
  const ProcessResult r = runProcess(
      {binPath("tutti-run"), "-n", "4", "--timeout", "60", "-x", "TUTTI_TOPO_FILE=" + file,
       "-x", "TUTTI_TOPO_DUMP_FILE=" + dump, "-x", "TUTTI_DEBUG=INFO", "-x",
       "TUTTI_DEBUG_SUBSYS=TOPO", binPath("tutti-bench"), "-b", "64K", "-e", "64K", "-n", "1",
       "-w", "0", "-c", "1", "allreduce"},
      90);
  ASSERT_EQ(r.exitCode(), 0) << r.out << r.err;
  const std::string all = r.out + r.err;
  for (int rank = 0; rank < 4; ++rank) {
    const std::string line = "[rank " + std::to_string(rank) +
                             "] tutti INFO TOPO topology_setup.cc";
    const auto at = all.find(line);
    ASSERT_NE(at, std::string::npos) << all;
    const std::string rest = all.substr(at, all.find('\n', at) - at);
    EXPECT_NE(rest.find("communicator 'world': 2 hosts: {0,1} {2,3} (from TUTTI_TOPO_FILE)"),
              std::string::npos) << rest;
    EXPECT_NE(rest.find(rank < 2 ? "'node-a'" : "'node-b'"), std::string::npos) << rest;
    EXPECT_NE(rest.find("package " + std::to_string(rank % 2)), std::string::npos) << rest;
  }
  auto dumped = topo::loadViewFile(dump);
  ASSERT_TRUE(dumped.ok()) << dumped.status().message();
  EXPECT_EQ(dumped->hostOfRanks(), (std::vector<int>{0, 0, 1, 1}));
  EXPECT_EQ(dumped->hosts[1].name, "node-b");
  // The bench's check (-c 1) passed: 0 wrong elements in its row.
  EXPECT_NE(r.out.find("allreduce"), std::string::npos);
}

TEST(TopologyProcs, DetectedViewIsDumped) {
  const std::string dump = ::testing::TempDir() + "tutti_topo_detected.json";
  std::remove(dump.c_str());
  const ProcessResult r = runProcess(
      {binPath("tutti-run"), "-n", "3", "--timeout", "60", "-x", "TUTTI_TOPO_DUMP_FILE=" + dump,
       binPath("tutti-bench"), "-b", "8", "-e", "8", "-n", "1", "-w", "0", "allreduce"},
      90);
  ASSERT_EQ(r.exitCode(), 0) << r.out << r.err;
  auto dumped = topo::loadViewFile(dump);
  ASSERT_TRUE(dumped.ok()) << dumped.status().message();
  ASSERT_EQ(dumped->size(), 3);
  ASSERT_EQ(dumped->hosts.size(), 1u);  // one machine
  EXPECT_GE(dumped->hosts[0].packages, 1);
  for (const topo::RankInfo& rank : dumped->ranks) {
    EXPECT_LT(rank.package, dumped->hosts[0].packages);
    EXPECT_FALSE(rank.cpus.empty());
    EXPECT_EQ(rank.nic, "lo");  // tutti-run's store is on the loopback
  }
}

TEST(TopologyProcs, FileOfAnotherSizeFailsEveryRankClearly) {
  const std::string file = ::testing::TempDir() + "tutti_topo_1.json";
  std::ofstream(file) << R"({"format": "tutti-topology", "version": 1,
    "hosts": [{"name": "a"}], "ranks": [{"rank": 0, "host": 0}]})";
  const ProcessResult r = runProcess(
      {binPath("tutti-run"), "-n", "2", "--timeout", "60", "-x", "TUTTI_TOPO_FILE=" + file,
       binPath("tutti-bench"), "-b", "8", "-e", "8", "-n", "1", "-w", "0", "allreduce"},
      90);
  EXPECT_NE(r.exitCode(), 0);
  const std::string all = r.out + r.err;
  const std::string want = "topology file " + file + " describes 1 ranks, but communicator 'world' has 2";
  EXPECT_NE(all.find("[0] tutti-bench: cannot join the group: invalid argument: TUTTI_TOPO_FILE: " + want),
            std::string::npos) << r.out << r.err;
  EXPECT_NE(all.find("[1] tutti-bench: cannot join the group: invalid argument: TUTTI_TOPO_FILE: " + want),
            std::string::npos) << r.out << r.err;
}

}  // namespace
}  // namespace tutti::test
