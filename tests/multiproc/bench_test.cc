// tutti-bench end to end, for every collective, through the real tutti-run: every element of
// every rank's output checked (-c 1), the algorithm of every row reported, --algo refused
// where it does not apply. Every run has an outer bound far above its need.

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/launch.h"
#include "common/subprocess.h"
#include "common/test_paths.h"

namespace tutti::test {
namespace {

constexpr double kOuterBoundSeconds = 240;

ProcessResult runBench(int ranks, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {binPath("tutti-run"), "-n", std::to_string(ranks),
                                   "--timeout", "200", binPath("tutti-bench")};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProcess(argv, kOuterBoundSeconds);
}

// The table rows rank 0 printed, by collective: each row's whitespace-separated cells.
std::map<std::string, std::vector<std::vector<std::string>>> tableRows(const std::string& out) {
  std::map<std::string, std::vector<std::vector<std::string>>> rows;
  std::string collective;
  const std::regex header(R"(\[0\] # Collective ([a-z]+) .*)");
  for (const std::string& line : splitLines(out)) {
    std::smatch m;
    if (std::regex_match(line, m, header)) collective = m[1].str();
    if (line.rfind("[0] ", 0) != 0 || line.size() < 5 || line[4] == '#') continue;
    std::istringstream fields(line.substr(4));
    std::vector<std::string> cells;
    for (std::string cell; fields >> cell;) cells.push_back(cell);
    rows[collective].push_back(cells);
  }
  return rows;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Cells: size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong | algo
constexpr std::size_t kCells = 14;

TEST(BenchProcs, EveryCollectiveChecksCleanOnThreeRanks) {
  const std::string json = testing::TempDir() + "bench_procs_all.json";
  std::remove(json.c_str());
  ProcessResult r = runBench(3, {"all", "-b", "0", "-e", "64K", "-f", "8", "-c", "1", "--json",
                                 json});
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# All 10 collectives: out of bounds values : 0 OK"), std::string::npos)
      << r.out;
  const auto rows = tableRows(r.out);
  const std::set<std::string> expected = {"allreduce", "allgather", "reducescatter", "broadcast",
                                          "reduce",    "gather",    "scatter",       "alltoall",
                                          "sendrecv",  "barrier"};
  std::set<std::string> seen;
  for (const auto& [collective, table] : rows) {
    seen.insert(collective);
    for (const std::vector<std::string>& cells : table) {
      ASSERT_EQ(cells.size(), kCells) << collective;
      const bool barrier = collective == "barrier";
      const bool noInPlace = barrier || collective == "sendrecv";
      EXPECT_EQ(cells[8], barrier ? "N/A" : "0") << collective << " out of place";
      EXPECT_EQ(cells[12], noInPlace ? "N/A" : "0") << collective << " in place";
      EXPECT_FALSE(cells[13].empty()) << collective;
      // Rooted collectives name their root (-r defaults to 0); the others print -1.
      const bool rooted = collective == "broadcast" || collective == "reduce" ||
                          collective == "gather" || collective == "scatter";
      EXPECT_EQ(cells[4], rooted ? "0" : "-1") << collective;
    }
    // Sizes 0, 8, 64, 512, 4K, 32K; collectives that split the buffer by rank round 8 bytes
    // (2 floats) down to 0 elements per rank, the row of size 0 again; barrier has one row.
    const bool split = collective == "allgather" || collective == "reducescatter" ||
                       collective == "gather" || collective == "scatter" ||
                       collective == "alltoall";
    EXPECT_EQ(table.size(), collective == "barrier" ? 1u : split ? 5u : 6u) << collective;
  }
  EXPECT_EQ(seen, expected) << r.out;
  // The JSON holds every row with its algorithm: one object per row and placement.
  const std::string text = readFile(json);
  std::size_t objects = 0;
  const std::regex object(
      R"re(\{"collective": "([a-z]+)".*"algorithm": "([a-z_]+)".*"wrong": (0|null)\})re");
  for (const std::string& line : splitLines(text)) {
    std::smatch m;
    if (std::regex_search(line, m, object)) {
      ++objects;
      EXPECT_EQ(m[3].str(), m[1].str() == "barrier" ? "null" : "0") << line;
    }
  }
  // Two placements of 3 x 6 and 5 x 5 rows; sendrecv's 6 rows and barrier's 1 out of place.
  EXPECT_EQ(objects, 2u * (3 * 6 + 5 * 5) + 6 + 1) << text;
  std::remove(json.c_str());
}

// Every collective over TCP with four connections per pair: small messages on the first,
// those of 256 KiB and more striped across all four; every element checked.
TEST(BenchProcs, EveryCollectiveChecksCleanOverFourTcpStreams) {
  ProcessResult r = runProcess(
      launch(3, "tcp4", {"--timeout", "200"},
             {binPath("tutti-bench"), "all", "-b", "1K", "-e", "4M", "-f", "64", "-n", "2", "-w",
              "1", "-c", "1"}),
      kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# All 10 collectives: out of bounds values : 0 OK"), std::string::npos)
      << r.out;
}

// TUTTI_SOCKET_IFNAME picks the listener's interface by name (=lo: loopback, the only one
// these ranks can reach each other on here); a value matching no interface fails every rank
// with an error listing the interfaces.
TEST(BenchProcs, SocketIfnameChoosesTheInterfaceOrFailsListingThem) {
  const std::vector<std::string> bench = {binPath("tutti-bench"), "allreduce", "-b", "8",
                                          "-e",  "8",  "-n", "1", "-w", "0", "-c", "1"};
  ProcessResult good = runProcess(
      launch(2, "tcp", {"--timeout", "100", "-x", "TUTTI_SOCKET_IFNAME==lo"}, bench),
      kOuterBoundSeconds);
  ASSERT_FALSE(good.timedOut) << good.out << good.err;
  EXPECT_EQ(good.exitCode(), 0) << good.out << good.err;
  EXPECT_NE(good.out.find("# Out of bounds values : 0 OK"), std::string::npos) << good.out;
  ProcessResult bad = runProcess(
      launch(2, "tcp", {"--timeout", "100", "-x", "TUTTI_SOCKET_IFNAME=nosuchif"}, bench),
      kOuterBoundSeconds);
  ASSERT_FALSE(bad.timedOut) << bad.out << bad.err;
  EXPECT_NE(bad.exitCode(), 0);
  const std::string all = bad.out + bad.err;
  for (const char* rank : {"[0]", "[1]"}) {
    bool named = false;
    for (const std::string& line : splitLines(all)) {
      named = named || (line.rfind(rank, 0) == 0 &&
                        line.find("TUTTI_SOCKET_IFNAME='nosuchif' matches none of this host's "
                                  "interfaces (") != std::string::npos &&
                        line.find("lo 127.0.0.1") != std::string::npos);
    }
    EXPECT_TRUE(named) << rank << " did not say why\n" << all;
  }
}

TEST(BenchProcs, ReductionsCheckEveryTypeAndOperator) {
  ProcessResult r = runBench(3, {"reducescatter", "-b", "0", "-e", "64K", "-f", "8", "-c", "1",
                                 "-n", "2", "-w", "1", "-d", "all", "-o", "all"});
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# Out of bounds values : 0 OK"), std::string::npos) << r.out;
  const auto rows = tableRows(r.out);
  ASSERT_EQ(rows.count("reducescatter"), 1u) << r.out;
  std::set<std::string> types;
  std::set<std::string> ops;
  for (const std::vector<std::string>& cells : rows.at("reducescatter")) {
    ASSERT_EQ(cells.size(), kCells);
    types.insert(cells[2]);
    ops.insert(cells[3]);
    EXPECT_EQ(cells[8], "0");
    EXPECT_EQ(cells[12], "0");
  }
  EXPECT_EQ(types.size(), 10u);
  EXPECT_EQ(ops, (std::set<std::string>{"sum", "prod", "min", "max", "avg"}));
}

TEST(BenchProcs, EveryRootInTurnAndEveryTypeForDataMovement) {
  ProcessResult r = runBench(3, {"all", "-b", "8", "-e", "8K", "-f", "32", "-c", "1", "-n", "2",
                                 "-w", "1", "-r", "-1", "-d", "int8,bfloat16,double"});
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# All 10 collectives: out of bounds values : 0 OK"), std::string::npos)
      << r.out;
  for (const auto& [collective, table] : tableRows(r.out)) {
    std::set<std::string> roots;
    for (const std::vector<std::string>& cells : table) roots.insert(cells[4]);
    const bool rooted = collective == "broadcast" || collective == "reduce" ||
                        collective == "gather" || collective == "scatter";
    const std::set<std::string> expected =
        rooted ? std::set<std::string>{"0", "1", "2"} : std::set<std::string>{"-1"};
    EXPECT_EQ(roots, expected) << collective;
  }
}

TEST(BenchProcs, ForcedAlgorithmIsReportedOrRefusedClearly) {
  ProcessResult ok = runBench(2, {"broadcast", "-b", "64", "-e", "64", "-c", "1", "--algo",
                                  "direct"});
  ASSERT_FALSE(ok.timedOut) << ok.out << ok.err;
  EXPECT_EQ(ok.exitCode(), 0) << ok.out << ok.err;
  const auto rows = tableRows(ok.out);
  ASSERT_EQ(rows.count("broadcast"), 1u) << ok.out;
  EXPECT_EQ(rows.at("broadcast").at(0).back(), "direct");

  // "pairwise" names only all-to-all algorithms: refused for the first collective of "all"
  // (allreduce), before any table is printed, listing what does apply.
  ProcessResult refused = runBench(2, {"all", "-b", "64", "-e", "64", "--algo", "pairwise"});
  ASSERT_FALSE(refused.timedOut) << refused.out << refused.err;
  EXPECT_NE(refused.exitCode(), 0);
  EXPECT_NE(refused.err.find("--algo pairwise does not apply to allreduce"), std::string::npos)
      << refused.err;
  EXPECT_NE(refused.err.find("algorithms that apply:"), std::string::npos) << refused.err;
  EXPECT_EQ(refused.out.find("# Collective"), std::string::npos) << refused.out;
}

// Several candidates in one run: a row per size and candidate, in the order given, the
// library's choice marked "auto:", every one checked, in place and out of place.
TEST(BenchProcs, SeveralCandidatesRunInOneLaunchEachCheckedAndReported) {
  ProcessResult run = runBench(3, {"allreduce", "-b", "8", "-e", "64K", "-f", "8192", "-n", "7",
                                   "-w", "1", "-c", "1", "--algo", "auto,ring,rabenseifner",
                                   "--blocks", "3"});
  ASSERT_FALSE(run.timedOut) << run.out << run.err;
  ASSERT_EQ(run.exitCode(), 0) << run.out << run.err;
  const auto rows = tableRows(run.out);
  ASSERT_EQ(rows.count("allreduce"), 1u) << run.out;
  const auto& table = rows.at("allreduce");
  ASSERT_EQ(table.size(), 6u) << run.out;  // 8 B and 64 KiB, three candidates each
  for (std::size_t i = 0; i < table.size(); ++i) {
    ASSERT_EQ(table[i].size(), kCells) << run.out;
    EXPECT_EQ(table[i][0], i < 3 ? "8" : "65536");
    EXPECT_EQ(table[i][8], "0") << run.out;   // out of place
    EXPECT_EQ(table[i][12], "0") << run.out;  // in place
  }
  for (std::size_t i : {0u, 3u}) EXPECT_EQ(table[i].back().rfind("auto:", 0), 0u) << run.out;
  EXPECT_EQ(table[1].back(), "ring");
  EXPECT_EQ(table[5].back(), "rabenseifner");
  EXPECT_NE(run.out.find("# candidates: 3 in this one run"), std::string::npos) << run.out;
}

// --verify proves every row's schedules (all ranks', both placements) before running them;
// five ranks (not a power of two) and every root, so folding and rooted trees are covered.
TEST(BenchProcs, VerifyProvesEveryRowBeforeRunning) {
  ProcessResult r = runBench(5, {"all", "-b", "0", "-e", "1M", "-f", "64", "-c", "1", "-n", "1",
                                 "-w", "0", "-r", "-1", "--verify"});
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  const std::regex verified(R"(\[0\] # Schedules verified : ([0-9]+) calls.*)");
  std::size_t tables = 0;
  for (const std::string& line : splitLines(r.out)) {
    std::smatch m;
    if (!std::regex_match(line, m, verified)) continue;
    ++tables;
    EXPECT_GT(std::stoul(m[1].str()), 0u) << line;
  }
  EXPECT_EQ(tables, 10u) << r.out;
  // A forced algorithm is verified too, and one that does not apply is still refused.
  ProcessResult forced = runBench(3, {"allreduce", "-b", "8", "-e", "64K", "-f", "32", "-c", "1",
                                      "--algo", "rabenseifner", "--verify"});
  ASSERT_FALSE(forced.timedOut) << forced.out << forced.err;
  EXPECT_EQ(forced.exitCode(), 0) << forced.out << forced.err;
  EXPECT_NE(forced.out.find("# Schedules verified : 6 calls"), std::string::npos) << forced.out;
}

// -R 1: every buffer from tutti::memAlloc, so that the ranks' large messages are copied and
// reduced through mappings of each other's buffers (transport/shm/user_buffers.h). Sizes
// past the rendezvous threshold, three ranks, every collective, every element checked.
TEST(BenchProcs, BuffersFromMemAllocCheckCleanForEveryCollective) {
  ProcessResult r = runBench(3, {"all", "-b", "1M", "-e", "4M", "-f", "4", "-c", "1", "-n", "2",
                                 "-w", "1", "-R", "1"});
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_NE(r.out.find("buffers: memAlloc"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("# All 10 collectives: out of bounds values : 0 OK"), std::string::npos)
      << r.out;
  ProcessResult bad = runBench(2, {"allreduce", "-R", "2"});
  ASSERT_FALSE(bad.timedOut);
  EXPECT_NE(bad.exitCode(), 0);
  EXPECT_NE(bad.err.find("-R/--register must be 0 or 1, got 2"), std::string::npos) << bad.err;
}

// -z 1: every collective through its ...Async form, waited for at once (the waiting thread
// or the worker runs each), checks clean; and with --compute between issuing and waiting,
// where the worker takes calls nobody waits on yet.
TEST(BenchProcs, AsyncCallsCheckCleanForEveryCollective) {
  for (const char* compute : {"0", "300"}) {
    ProcessResult r = runBench(3, {"all", "-b", "8", "-e", "1M", "-f", "32", "-c", "1", "-n",
                                   "2", "-w", "1", "-z", "1", "--compute", compute});
    ASSERT_FALSE(r.timedOut) << r.out << r.err;
    EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
    EXPECT_NE(r.out.find("calls: async"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("# compute: 300 us") != std::string::npos, compute[0] == '3') << r.out;
    EXPECT_NE(r.out.find("# All 10 collectives: out of bounds values : 0 OK"), std::string::npos)
        << r.out;
  }
}

// At 3 to 8 ranks on one host an all-reduce of 1 MiB or more reads the peers' buffers in
// place (direct_rs_ag) when every rank's come from memAlloc, which the ranks agree on per
// call; from the heap it keeps the ring.
TEST(BenchProcs, AllReduceReadsPeersInPlaceOnlyWhenEveryRanksBuffersAreShared) {
  for (const char* shared : {"1", "0"}) {
    ProcessResult r = runBench(4, {"allreduce", "-b", "1M", "-e", "1M", "-c", "1", "-n", "2",
                                   "-w", "1", "-R", shared});
    ASSERT_FALSE(r.timedOut) << r.out << r.err;
    EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
    const auto rows = tableRows(r.out)["allreduce"];
    ASSERT_EQ(rows.size(), 1u) << r.out;
    ASSERT_EQ(rows[0].size(), kCells) << r.out;
    EXPECT_EQ(rows[0][8], "0") << r.out;
    EXPECT_EQ(rows[0][12], "0") << r.out;
    if (std::string(shared) == "1") EXPECT_EQ(rows[0][13], "direct_rs_ag") << r.out;
    else EXPECT_NE(rows[0][13], "direct_rs_ag") << r.out;
  }
}

// 2 ranks, all-to-all in place: the block each sends is stashed in scratch first and the
// peer's lands in place (alltoall_pairwise.cc), its send then leaving from scratch, the
// heap, into a memAlloc output written through the sender's mapping even when it is one
// piece. Sizes from the heap rendezvous threshold (16K blocks) to shared pieces, odd
// counts, both buffer kinds, every element checked in and out of place.
TEST(BenchProcs, TwoRankAlltoallInPlaceChecksCleanFromHeapAndMemAlloc) {
  for (const char* shared : {"0", "1"}) {
    ProcessResult r = runBench(2, {"alltoall", "-b", "32776", "-e", "2097664", "-f", "4", "-c",
                                   "1", "-n", "3", "-w", "1", "-R", shared});
    ASSERT_FALSE(r.timedOut) << r.out << r.err;
    EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
    const auto rows = tableRows(r.out)["alltoall"];
    ASSERT_EQ(rows.size(), 4u) << r.out;
    for (const auto& row : rows) {
      ASSERT_EQ(row.size(), kCells) << r.out;
      EXPECT_EQ(row[8], "0") << r.out;
      EXPECT_EQ(row[12], "0") << r.out;
    }
  }
}

// All-gather and all-to-all blocks of 32 MiB or more from the heap cross the rings
// (prefersCopy) and are written out with streaming stores (reduce::copy), as are the
// own blocks' local copies and the halves of a 2-rank all-reduce; from memAlloc the mapped
// reads stream too. 2 ranks, blocks just above the threshold and not a multiple of a cache
// line, every element checked, in and out of place, both buffer kinds.
TEST(BenchProcs, BlocksLargeEnoughToStreamCheckClean) {
  for (const char* shared : {"0", "1"}) {
    for (const std::string collective : {"allgather", "alltoall", "allreduce"}) {
      // 64 MiB + 40 B in all: blocks (all-reduce: halves) of 8388613 fp32 elements, 32 MiB
      // + 20 B.
      ProcessResult r = runBench(2, {collective, "-b", "67108904", "-e", "67108904", "-c", "1",
                                     "-n", "1", "-w", "0", "-R", shared});
      ASSERT_FALSE(r.timedOut) << r.out << r.err;
      EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
      const auto rows = tableRows(r.out)[collective];
      ASSERT_EQ(rows.size(), 1u) << r.out;
      ASSERT_EQ(rows[0].size(), kCells) << r.out;
      EXPECT_EQ(rows[0][1], collective == "allreduce" ? "16777226" : "8388613") << r.out;
      EXPECT_EQ(rows[0][8], "0") << collective << " out of place, -R " << shared << "\n" << r.out;
      EXPECT_EQ(rows[0][12], "0") << collective << " in place, -R " << shared << "\n" << r.out;
    }
  }
}

// Blocks of 256 and 512 KiB on 2 ranks from heap buffers: two-way exchanges that each
// sender writes whole (ShmTransport::leavesExchangeToSender, where each rank has a core),
// every element checked, out of place and in place, the call repeated.
TEST(BenchProcs, ExchangedBlocksCheckClean) {
  for (const std::string collective : {"allgather", "alltoall", "sendrecv"}) {
    ProcessResult r = runBench(2, {collective, "-b", "512K", "-e", "1M", "-f", "2", "-c", "1",
                                   "-n", "20", "-w", "2"});
    ASSERT_FALSE(r.timedOut) << r.out << r.err;
    EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
    const auto rows = tableRows(r.out)[collective];
    ASSERT_EQ(rows.size(), 2u) << r.out;
    for (const std::vector<std::string>& cells : rows) {
      ASSERT_EQ(cells.size(), kCells) << r.out;
      EXPECT_EQ(cells[8], "0") << collective << " out of place\n" << r.out;
      EXPECT_EQ(cells[12], collective == "sendrecv" ? "N/A" : "0")
          << collective << " in place\n" << r.out;
    }
  }
}

// TUTTI_SHM_CMA_BYTES is `auto` or a byte count. Blocks of 16 KiB on 2 ranks go by
// rendezvous under `auto` where each rank has a core and the kernel's copy is not costly
// (ShmTransport::autoCmaBytes), through the rings otherwise and under 64K and 0;
// anything else fails creation on every rank, naming the variable and the value.
TEST(BenchProcs, ShmCmaBytesIsAutoOrAByteCount) {
  auto run = [](const std::string& value) {
    return runProcess({binPath("tutti-run"), "-n", "2", "--timeout", "200", "-x",
                       "TUTTI_TRANSPORT=shm", "-x", "TUTTI_SHM_CMA_BYTES=" + value,
                       binPath("tutti-bench"), "allgather", "-b", "32K", "-e", "32K", "-c", "1",
                       "-n", "5", "-w", "1"},
                      kOuterBoundSeconds);
  };
  for (const std::string value : {"auto", "64K", "0"}) {
    ProcessResult r = run(value);
    ASSERT_FALSE(r.timedOut) << r.out << r.err;
    EXPECT_EQ(r.exitCode(), 0) << value << "\n" << r.out << r.err;
    const auto rows = tableRows(r.out)["allgather"];
    ASSERT_EQ(rows.size(), 1u) << r.out;
    EXPECT_EQ(rows[0][8], "0") << value << "\n" << r.out;
    EXPECT_EQ(rows[0][12], "0") << value << "\n" << r.out;
  }
  ProcessResult bad = run("12 parsecs");
  ASSERT_FALSE(bad.timedOut) << bad.out << bad.err;
  EXPECT_NE(bad.exitCode(), 0);
  EXPECT_NE(bad.err.find("TUTTI_SHM_CMA_BYTES='12 parsecs' is not allowed: auto, or a byte "
                         "count such as 4096, 64K or 16M"),
            std::string::npos)
      << bad.err;
}

// TUTTI_SHM_EXCHANGE_BYTES is `auto` or a byte count: with 16M, blocks of 1-4 MiB on 2
// ranks are each written whole by their sender (where each rank has a core); with 0 both
// ends share the copying. Every element checked; anything else fails creation, naming the
// variable and the value.
TEST(BenchProcs, ShmExchangeBytesIsAutoOrAByteCount) {
  auto run = [](const std::string& value, const std::string& collective) {
    return runProcess({binPath("tutti-run"), "-n", "2", "--timeout", "200", "-x",
                       "TUTTI_TRANSPORT=shm", "-x", "TUTTI_SHM_EXCHANGE_BYTES=" + value,
                       binPath("tutti-bench"), collective, "-b", "2M", "-e", "8M", "-f", "2",
                       "-c", "1", "-n", "3", "-w", "1"},
                      kOuterBoundSeconds);
  };
  for (const std::string value : {"16M", "0"}) {
    for (const std::string collective : {"allgather", "alltoall"}) {
      ProcessResult r = run(value, collective);
      ASSERT_FALSE(r.timedOut) << r.out << r.err;
      EXPECT_EQ(r.exitCode(), 0) << value << "\n" << r.out << r.err;
      const auto rows = tableRows(r.out)[collective];
      ASSERT_EQ(rows.size(), 3u) << r.out;
      for (const std::vector<std::string>& cells : rows) {
        ASSERT_EQ(cells.size(), kCells) << r.out;
        EXPECT_EQ(cells[8], "0") << value << " " << collective << "\n" << r.out;
        EXPECT_EQ(cells[12], "0") << value << " " << collective << "\n" << r.out;
      }
    }
  }
  ProcessResult bad = run("lots", "allgather");
  ASSERT_FALSE(bad.timedOut) << bad.out << bad.err;
  EXPECT_NE(bad.exitCode(), 0);
  EXPECT_NE(bad.err.find("TUTTI_SHM_EXCHANGE_BYTES='lots' is not allowed: auto, or a byte "
                         "count such as 4096, 64K or 16M"),
            std::string::npos)
      << bad.err;
}

// TUTTI_SHM_POLL_US bounds how long a waiter yields the core before it sleeps: with 0 it
// sleeps at once, with 200 ms it hardly ever does; 4 ranks (more than this machine's
// cores) get every element right either way. A negative value or one past 10 s fails
// creation on every rank, naming the variable and the value.
TEST(BenchProcs, ShmPollUsIsABoundedTime) {
  auto run = [](const std::string& value) {
    return runProcess({binPath("tutti-run"), "-n", "4", "--timeout", "200", "-x",
                       "TUTTI_TRANSPORT=shm", "-x", "TUTTI_SHM_POLL_US=" + value,
                       binPath("tutti-bench"), "allreduce", "-b", "8", "-e", "256K", "-f", "32",
                       "-c", "1", "-n", "3", "-w", "1"},
                      kOuterBoundSeconds);
  };
  for (const std::string value : {"0", "200000"}) {
    ProcessResult r = run(value);
    ASSERT_FALSE(r.timedOut) << r.out << r.err;
    EXPECT_EQ(r.exitCode(), 0) << value << "\n" << r.out << r.err;
    const auto rows = tableRows(r.out)["allreduce"];
    ASSERT_EQ(rows.size(), 4u) << r.out;  // 8 B, 256 B, 8 KiB, 256 KiB
    for (const std::vector<std::string>& cells : rows) {
      ASSERT_EQ(cells.size(), kCells) << r.out;
      EXPECT_EQ(cells[8], "0") << value << "\n" << r.out;
      EXPECT_EQ(cells[12], "0") << value << "\n" << r.out;
    }
  }
  for (const std::string value : {"-1", "10000001"}) {
    ProcessResult bad = run(value);
    ASSERT_FALSE(bad.timedOut) << bad.out << bad.err;
    EXPECT_NE(bad.exitCode(), 0);
    EXPECT_NE(bad.err.find("TUTTI_SHM_POLL_US=" + value +
                           " is out of range: 0 to 10000000 (microseconds)"),
              std::string::npos)
        << bad.err;
  }
}

// nccl-tests' sendrecv runs on one rank, which sends to itself (issue 37): so does tutti's,
// with every element checked, alone and as part of "all".
TEST(BenchProcs, SendRecvRunsOnOneRank) {
  ProcessResult alone = runBench(1, {"sendrecv", "-b", "8", "-e", "1M", "-f", "32", "-c", "1"});
  ASSERT_FALSE(alone.timedOut) << alone.out << alone.err;
  EXPECT_EQ(alone.exitCode(), 0) << alone.out << alone.err;
  EXPECT_NE(alone.out.find("# Out of bounds values : 0 OK"), std::string::npos) << alone.out;
  EXPECT_EQ(alone.out.find("needs at least"), std::string::npos) << alone.out;

  ProcessResult all = runBench(1, {"all", "-b", "64", "-e", "64", "-c", "1"});
  ASSERT_FALSE(all.timedOut) << all.out << all.err;
  EXPECT_EQ(all.exitCode(), 0) << all.out << all.err;
  EXPECT_EQ(all.out.find("# skipped"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("# All 10 collectives: out of bounds values : 0 OK"), std::string::npos)
      << all.out;
}

}  // namespace
}  // namespace tutti::test
