// Real processes launched by the real tutti-run: all-reduce correctness for world sizes
// 1-8 (more ranks than cores is the normal case here), a rank killed in the middle of an
// all-reduce, and tutti-bench end to end. Every run has an outer bound far above its need.

#include <signal.h>

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "base/net.h"
#include "common/launch.h"
#include "common/subprocess.h"
#include "common/test_paths.h"

namespace tutti::test {
namespace {

constexpr double kOuterBoundSeconds = 240;

std::string transportName(const ::testing::TestParamInfo<std::tuple<int, std::string>>& info) {
  return std::get<1>(info.param) + "_n" + std::to_string(std::get<0>(info.param));
}

class CollectiveProcs : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

TEST_P(CollectiveProcs, AllreduceIsRightOnEveryRank) {
  const auto [n, transport] = GetParam();
  ProcessResult r = runProcess(launch(n, transport, {"--timeout", "200"},
                                      {testProgramPath("tutti_collective_worker"), "check"}),
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT OK"), n) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT FAILED"), 0) << r.out;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, CollectiveProcs,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 8),
                                            ::testing::ValuesIn(kTransports)),
                         transportName);

class EveryCollectiveProcs : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

// Every collective x algorithm in real processes, then on split sub-communicators.
TEST_P(EveryCollectiveProcs, EveryCollectiveAndSplitAreRight) {
  const auto [n, transport] = GetParam();
  ProcessResult r = runProcess(launch(n, transport, {"--timeout", "200"},
                                      {testProgramPath("tutti_collective_worker"), "every"}),
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT OK"), n) << r.out << r.err;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, EveryCollectiveProcs,
                         ::testing::Combine(::testing::Values(1, 3, 5, 8),
                                            ::testing::ValuesIn(kTransports)),
                         transportName);

class SendToSelfProcs : public ::testing::TestWithParam<std::tuple<int, std::string>> {};

// Every rank sends to itself in every order MPI allows (issue 37): blocking and async, alone
// and in flight with messages to its neighbours; every element checked.
TEST_P(SendToSelfProcs, EveryOrderDeliversEveryElement) {
  const auto [n, transport] = GetParam();
  ProcessResult r = runProcess(launch(n, transport, {"--timeout", "200"},
                                      {testProgramPath("tutti_collective_worker"), "self"}),
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_EQ(countLines(r.out, "RESULT OK"), n) << r.out << r.err;
}

INSTANTIATE_TEST_SUITE_P(WorldSizes, SendToSelfProcs,
                         ::testing::Combine(::testing::Values(1, 2, 3, 8),
                                            ::testing::ValuesIn(kTransports)),
                         transportName);

// tutti-bench's result rows of rank 0 with 0 wrong out of place and in place.
int rowsWithZeroWrong(const std::string& out) {
  const std::regex row("\\[0\\] +[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z]+ +-?[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[a-z_]+");
  int rows = 0;
  for (const std::string& l : splitLines(out)) rows += std::regex_match(l, row) ? 1 : 0;
  return rows;
}

// Large messages between two processes over shared memory: every collective, every element
// checked, out of place and in place; with the host's automatic rendezvous threshold (on a
// host whose kernel copy is slow, only the calls that learn their way try rendezvous for
// heap messages) and with 256K, where
// the rendezvous copy is shared between the ranks (process_vm_readv by the receiver,
// process_vm_writev by the sender).
TEST(CollectiveProcs, LargeMessagesOverSharedMemoryHaveZeroWrong) {
  for (const std::string cma : {"auto", "256K"}) {
    ProcessResult r = runProcess(
        launch(2, "shm", {"--timeout", "200", "-x", "TUTTI_SHM_CMA_BYTES=" + cma},
               {binPath("tutti-bench"), "all", "-b", "1M", "-e", "16M", "-f", "16", "-n", "2",
                "-w", "1", "-c", "1"}),
        kOuterBoundSeconds);
    ASSERT_FALSE(r.timedOut) << r.out << r.err;
    EXPECT_EQ(r.exitCode(), 0) << cma << "\n" << r.out << r.err;
    const int rows = rowsWithZeroWrong(r.out);
    // 8 collectives (sendrecv and barrier aside) x 2 sizes
    EXPECT_EQ(rows, 8 * 2) << cma << "\n" << r.out;
  }
}

// Both ways a large message can travel (TUTTI_MESSAGE_PATH), forced and learnt: every
// collective of 1 MiB, twelve calls each, the last eight checked. Learning, a shape's calls
// 4-6 go the other way than the rule's, and call 7 is the ranks' first decision
// (path_learner.h), so the checked calls cover both ways and a decision, which every rank
// logs for the all-gather. Any other value of TUTTI_MESSAGE_PATH is an error.
TEST(CollectiveProcs, LargeMessagesHaveZeroWrongEitherWay) {
  for (const std::string path : {"buffered", "direct", "learn"}) {
    ProcessResult r = runProcess(
        launch(2, "shm",
               {"--timeout", "200", "-x", "TUTTI_SHM_CMA_BYTES=256K", "-x",
                "TUTTI_MESSAGE_PATH=" + path, "-x", "TUTTI_DEBUG=DEBUG", "-x",
                "TUTTI_DEBUG_SUBSYS=TUNE"},
               {binPath("tutti-bench"), "all", "-b", "1M", "-e", "1M", "-n", "4", "-w", "0",
                "-c", "8"}),
        kOuterBoundSeconds);
    ASSERT_FALSE(r.timedOut) << r.out << r.err;
    EXPECT_EQ(r.exitCode(), 0) << path << "\n" << r.out << r.err;
    const int rows = rowsWithZeroWrong(r.out);
    EXPECT_EQ(rows, 8) << path << "\n" << r.out;  // 8 collectives (sendrecv and barrier aside)
    const std::string all = r.out + r.err;
    for (int rank = 0; rank < 2; ++rank) {
      const std::regex kept("rank " + std::to_string(rank) +
                            ": allgather of 524288 bytes now sends (through the buffers|directly)");
      EXPECT_EQ(std::regex_search(all, kept), path == "learn") << path << "\n" << all;
    }
  }
  // Any other value fails creation, naming the variable and the value.
  ProcessResult bad = runProcess(
      launch(2, "shm", {"--timeout", "200", "-x", "TUTTI_MESSAGE_PATH=sideways"},
             {binPath("tutti-bench"), "allgather", "-b", "1M", "-e", "1M", "-n", "1"}),
      kOuterBoundSeconds);
  ASSERT_FALSE(bad.timedOut) << bad.out << bad.err;
  EXPECT_NE(bad.exitCode(), 0);
  EXPECT_NE((bad.out + bad.err)
                .find("TUTTI_MESSAGE_PATH='sideways' is not allowed: one of learn, rule, "
                      "buffered, direct, streamed"),
            std::string::npos)
      << bad.out << bad.err;
}

// Large messages written past the caches (TUTTI_MESSAGE_PATH=streamed), and learnt among the
// ways: every collective of 1 MiB and of 8 MiB, whose messages reach the 256 KiB from which
// the shm transport streams them (where every rank has a core, as with 2 ranks on 2 CPUs;
// reductions learn it from there, the others from 4 MiB), six calls each (in and out of
// place: twelve of a shape, so learning includes a decision), the last four of each checked.
TEST(CollectiveProcs, StreamedMessagesHaveZeroWrong) {
  for (const std::string path : {"streamed", "learn"}) {
    ProcessResult r = runProcess(
        launch(2, "shm",
               {"--timeout", "200", "-x", "TUTTI_SHM_CMA_BYTES=256K", "-x",
                "TUTTI_MESSAGE_PATH=" + path},
               {binPath("tutti-bench"), "all", "-b", "1M", "-e", "8M", "-f", "8", "-n", "2",
                "-w", "0", "-c", "4"}),
        kOuterBoundSeconds);
    ASSERT_FALSE(r.timedOut) << r.out << r.err;
    EXPECT_EQ(r.exitCode(), 0) << path << "\n" << r.out << r.err;
    EXPECT_EQ(rowsWithZeroWrong(r.out), 16) << path << "\n" << r.out;
  }
}

// A rank that learns the way of large messages waits in each decision for every rank, so
// ranks that differ in it (here rank 1 alone sets TUTTI_MESSAGE_PATH=rule) fail creation at
// once, each naming both settings, rather than a call at its deadline.
TEST(CollectiveProcs, RanksThatDifferInMessagePathFailCreationNamingIt) {
  const std::string command = "if [ \"$TUTTI_RANK\" = 1 ]; then export TUTTI_MESSAGE_PATH=rule; "
                              "fi; exec " + binPath("tutti-bench") +
                              " allgather -b 1M -e 1M -n 2";
  ProcessResult r = runProcess(
      launch(2, "shm", {"--timeout", "200", "-x", "TUTTI_SHM_CMA_BYTES=256K"},
             {"/bin/sh", "-c", command}),
      kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_NE(r.exitCode(), 0);
  const std::string all = r.out + r.err;
  for (int rank = 0; rank < 2; ++rank) {
    // Streamed from 256 KiB where every rank has a core, 0 elsewhere.
    const std::string settings =
        "large messages directly from 262144 bytes and streamed from [0-9]+ \\(0: never\\)";
    const std::regex who(rank == 0 ? "rank 1 does not learn it, " + settings + ", but rank 0 learns"
                                   : "rank 0 learns which way large messages go, " + settings +
                                         ", but rank 1 does not learn it");
    EXPECT_NE(all.find("[" + std::to_string(rank) + "] "), std::string::npos) << all;
    EXPECT_TRUE(std::regex_search(all, who)) << "rank " << rank << "\n" << all;
  }
  EXPECT_NE(all.find("set TUTTI_MESSAGE_PATH, TUTTI_SHM_CMA_BYTES and TUTTI_SHM_STREAMED_BYTES "
                     "alike on every rank"),
            std::string::npos)
      << all;
}

class KilledRankProcs : public ::testing::TestWithParam<std::string> {};

// The victim (rank 2 of 4) dies in the middle of a 64 MiB all-reduce, or (small) instead of
// an 8-byte one (over shared memory, the survivors then wait in the flat exchange).
void expectVictimNamedByEverySurvivor(const std::string& transport, const char* size) {
  const int n = 4;
  const int victim = 2;
  // A generous --grace: survivors must get to report however loaded the machine is (a
  // sanitizer build on 2 cores can take seconds); only a real hang can exhaust it.
  ProcessResult r = runProcess(launch(n, transport, {"--timeout", "100", "--grace", "60"},
                                      {testProgramPath("tutti_collective_worker"), "die",
                                       std::to_string(victim), size}),
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

TEST_P(KilledRankProcs, KilledRankIsNamedByEverySurvivor) {
  expectVictimNamedByEverySurvivor(GetParam(), "large");
}

TEST_P(KilledRankProcs, RankKilledBeforeASmallCallIsNamedByEverySurvivor) {
  expectVictimNamedByEverySurvivor(GetParam(), "small");
}

// Rank 1 calls something else than ranks 0, 2 and 3 (MismatchProcs below).
struct MismatchCase {
  std::string how;
  std::string rank1;   // how rank 1's call is described
  std::string others;  // how the others' call is described
};

// gtest prints test parameters; the case's name is enough.
void PrintTo(const MismatchCase& c, std::ostream* os) { *os << c.how; }

class MismatchProcs
    : public ::testing::TestWithParam<std::tuple<MismatchCase, std::string>> {};

std::string mismatchName(const ::testing::TestParamInfo<MismatchProcs::ParamType>& param) {
  return std::get<0>(param.param).how + "_" + std::get<1>(param.param);
}

// Every rank fails with kMismatch and an error stating both calls, within the timeout:
// no hang, no silent success.
TEST_P(MismatchProcs, EveryRankReportsBothCalls) {
  const auto& [c, transport] = GetParam();
  const int n = 4;
  ProcessResult r = runProcess(launch(n, transport, {"--timeout", "100", "--grace", "60"},
                                      {testProgramPath("tutti_collective_worker"), "mismatch",
                                       c.how}),
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  for (int rank = 0; rank < n; ++rank) {
    const std::string prefix = "[" + std::to_string(rank) + "] EXPECTED-FAILURE code=mismatch";
    std::string line;
    for (const std::string& l : splitLines(r.out))
      if (l.rfind(prefix, 0) == 0) line = l;
    ASSERT_FALSE(line.empty()) << "rank " << rank << " did not fail with kMismatch:\n" << r.out << r.err;
    EXPECT_NE(line.find(c.rank1), std::string::npos) << line;
    EXPECT_NE(line.find(c.others), std::string::npos) << line;
    // The same words for both calls (they differ in a hash): both named.
    if (c.rank1 == c.others) {
      EXPECT_NE(line.find(c.rank1, line.find(c.rank1) + 1), std::string::npos) << line;
    }
    EXPECT_NE(line.find(" while rank "), std::string::npos) << line;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MismatchProcs,
    ::testing::Combine(
        ::testing::Values(
            MismatchCase{"count", "(count 1000 float32 sum", "(count 1024 float32 sum"},
            MismatchCase{"dtype", "(count 512 float64 sum", "(count 1024 float32 sum"},
            MismatchCase{"root", "broadcast #0 (count 1024 float32 root 1",
                         "broadcast #0 (count 1024 float32 root 0"},
            MismatchCase{"collective", "reduce #0 (count 1024 float32 sum root 0",
                         "broadcast #0 (count 1024 float32 root 0"},
            MismatchCase{"algorithm", "float32 sum, ring)", "float32 sum, recursive_doubling)"},
            // Over shared memory both in the flat exchange, then one there and one not.
            MismatchCase{"flat_count", "(count 3 float32 sum", "(count 2 float32 sum"},
            MismatchCase{"flat_mixed", "(count 1024 float32 sum", "(count 2 float32 sum"},
            // Rank 1 only receives, the others publish: their publications reach it.
            MismatchCase{"flat_bcast", "broadcast #0 (count 2 float32 root 0",
                         "allreduce #0 (count 2 float32 sum"},
            MismatchCase{"agree_bcast", "broadcast #0 (count 1048576 float32 root 0",
                         "allreduce #0 (count 1048576 float32 sum"},
            // allgatherv over shared memory: both flat with different blocks, or rank 1 past
            // the flat exchange (recursive doubling) while the others are in it. Both calls
            // are named with the hash of their counts.
            MismatchCase{"flat_allgatherv", "allgatherv #0 (per-rank counts hashing to 0x",
                         "allgatherv #0 (per-rank counts hashing to 0x"},
            MismatchCase{"allgatherv_mixed", "allgatherv #0 (per-rank counts hashing to 0x",
                         "allgatherv #0 (per-rank counts hashing to 0x"}),
        ::testing::ValuesIn(kTransports)),
    mismatchName);

TEST(CollectiveProcs, BenchmarkChecksEveryTypeWithZeroWrong) {
  ProcessResult r = runProcess({binPath("tutti-run"), "-n", "3", "--timeout", "200",
                                binPath("tutti-bench"), "allreduce", "-b", "8", "-e", "1M", "-f",
                                "16", "-n", "2", "-w", "1", "-c", "1", "-d", "all", "-o", "all"},
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_NE(r.out.find("# Out of bounds values : 0 OK"), std::string::npos) << r.out;
  // 10 types x 5 ops x 5 sizes rows, each with 0 wrong out of place and in place.
  std::regex row("\\[0\\] +[0-9]+ +[0-9]+ +[a-z0-9]+ +[a-z]+ +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +[a-z_]+");
  int rows = 0;
  for (const std::string& l : splitLines(r.out)) rows += std::regex_match(l, row) ? 1 : 0;
  EXPECT_EQ(rows, 10 * 5 * 5) << r.out;  // sizes 8, 128, 2K, 32K, 512K
}

TEST_P(KilledRankProcs, KillingABenchmarkRankEndsTheJobNamingIt) {
  auto job = Subprocess::start(launch(4, GetParam(), {"--verbose", "--timeout", "100", "--grace", "60"},
                                      {binPath("tutti-bench"), "allreduce", "-b", "32M", "-e",
                                       "32M", "-n", "100000", "-w", "1", "-c", "0"}));
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

INSTANTIATE_TEST_SUITE_P(Transports, KilledRankProcs, ::testing::ValuesIn(kTransports),
                         [](const auto& param) { return param.param; });

// A port that was free a moment ago, for launchers whose contract is a fixed port chosen in
// advance (torchrun's MASTER_PORT). The kernel hands out ephemeral ports at random over a
// wide range, so another process taking this one in the next milliseconds is unlikely; the
// test reports it plainly if it happens rather than retrying.
std::uint16_t freshPort() {
  auto fd = listenTcp("127.0.0.1", 0);
  if (!fd.ok()) return 0;
  auto addr = localAddress(fd->get());
  return addr.ok() ? addr->port : 0;
}

// Starts `n` worker processes directly (no tutti-run), each with the environment a foreign
// launcher would give it, and checks that every one of them computes right.
void runUnderForeignLauncher(int n, const std::function<std::vector<std::string>(int)>& envFor) {
  std::vector<std::unique_ptr<Subprocess>> ranks;
  for (int r = 0; r < n; ++r) {
    std::vector<std::string> argv = {"/usr/bin/env"};
    for (const std::string& kv : envFor(r)) argv.push_back(kv);
    argv.push_back(testProgramPath("tutti_collective_worker"));
    argv.push_back("check");
    auto p = Subprocess::start(argv);
    ASSERT_TRUE(p.ok()) << p.status().toString();
    ranks.push_back(std::move(p).value());
  }
  for (int r = 0; r < n; ++r) {
    ProcessResult res = ranks[static_cast<std::size_t>(r)]->wait(Deadline::afterSeconds(kOuterBoundSeconds));
    ASSERT_FALSE(res.timedOut) << "rank " << r << ": " << res.out << res.err;
    EXPECT_EQ(res.exitCode(), 0) << "rank " << r << ": " << res.out << res.err;
    EXPECT_NE(res.out.find("RESULT OK rank " + std::to_string(r) + " of " + std::to_string(n)),
              std::string::npos)
        << res.out << res.err;
  }
}

TEST(ForeignLaunchers, TorchrunEnvironment) {
  std::uint16_t port = freshPort();
  ASSERT_GT(port, 1);
  // tutti's store goes on MASTER_PORT + 1 (torch's own store holds MASTER_PORT).
  runUnderForeignLauncher(3, [&](int r) {
    return std::vector<std::string>{"RANK=" + std::to_string(r), "WORLD_SIZE=3",
                                    "LOCAL_RANK=" + std::to_string(r), "LOCAL_WORLD_SIZE=3",
                                    "MASTER_ADDR=127.0.0.1",
                                    "MASTER_PORT=" + std::to_string(port - 1)};
  });
}

TEST(ForeignLaunchers, OpenMpiEnvironmentWithStoreAddress) {
  std::uint16_t port = freshPort();
  ASSERT_GT(port, 0);
  runUnderForeignLauncher(2, [&](int r) {
    return std::vector<std::string>{"OMPI_COMM_WORLD_RANK=" + std::to_string(r),
                                    "OMPI_COMM_WORLD_SIZE=2",
                                    "OMPI_COMM_WORLD_LOCAL_RANK=" + std::to_string(r),
                                    "OMPI_COMM_WORLD_LOCAL_SIZE=2",
                                    "TUTTI_STORE_ADDR=127.0.0.1:" + std::to_string(port)};
  });
}

TEST(ForeignLaunchers, SlurmEnvironment) {
  std::uint16_t port = freshPort();
  ASSERT_GT(port, 0);
  runUnderForeignLauncher(2, [&](int r) {
    return std::vector<std::string>{"SLURM_PROCID=" + std::to_string(r), "SLURM_NTASKS=2",
                                    "SLURM_LOCALID=" + std::to_string(r),
                                    "SLURM_STEP_TASKS_PER_NODE=2", "SLURM_NODEID=0",
                                    "MASTER_ADDR=127.0.0.1", "MASTER_PORT=" + std::to_string(port)};
  });
}

TEST(ForeignLaunchers, NoLauncherRunsAsOneRank) {
  runUnderForeignLauncher(1, [&](int) { return std::vector<std::string>{}; });
}

}  // namespace
}  // namespace tutti::test
