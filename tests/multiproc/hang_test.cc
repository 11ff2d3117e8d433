// Hangs in real processes (the SIGSTOP fault-injection case of STYLE.md 3.9): a rank frozen
// with SIGSTOP, a rank in another call, and a stopped rank that serves the store. Every rank
// in a call must fail with kTimeout and a hang report naming where the others were; the
// flight recorder is dumped on the timeout, and on SIGUSR1 by a rank blocked in a call.
// The victims wait outside tutti (or are stopped) until the test kills them, so nothing
// depends on timing; each run has an outer bound far above its need (about 7 s).

#include <signal.h>

#include <gtest/gtest.h>

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

constexpr double kOuterBoundSeconds = 120;

// The line rank `rank` printed (stdout, prefixed "[rank] " by tutti-run) that starts with
// `start`; empty when there is none.
std::string rankLine(const std::string& out, int rank, const std::string& start) {
  const std::string prefix = "[" + std::to_string(rank) + "] " + start;
  for (const std::string& l : splitLines(out))
    if (l.rfind(prefix, 0) == 0) return l;
  return "";
}

// The pid in rank `rank`'s "READY rank r pid p handler=..." line, or -1.
pid_t readyPid(const std::string& out, int rank) {
  std::smatch m;
  const std::string line = rankLine(out, rank, "READY rank ");
  if (!std::regex_search(line, m, std::regex("pid ([0-9]+)"))) return -1;
  return static_cast<pid_t>(std::stoi(m[1].str()));
}

// Kills a process the test stopped, however the test ends: a stopped rank never exits on
// its own, and tutti-run's ranks live in their own process groups.
class KillOnExit {
 public:
  void set(pid_t pid) { pid_ = pid; }
  ~KillOnExit() {
    if (pid_ > 0) ::kill(pid_, SIGKILL);
  }

 private:
  pid_t pid_ = -1;
};

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

std::string worker() { return testProgramPath("tutti_collective_worker"); }

class HangProcs : public ::testing::TestWithParam<std::string> {};

// Rank 3 is frozen (SIGSTOP) outside any call while ranks 0-2 run all-reduce #2 with a 3 s
// deadline: each of them says rank 3 did not report, and blames it.
TEST_P(HangProcs, AStoppedRankIsNamedByEveryOther) {
  const int victim = 3;
  auto job = Subprocess::start(launch(4, GetParam(), {"--timeout", "100", "--grace", "60"},
                                      {worker(), "hang", "absent", std::to_string(victim)}));
  ASSERT_TRUE(job.ok()) << job.status().toString();
  Subprocess& p = **job;
  KillOnExit cleanup;
  const Deadline deadline = Deadline::afterSeconds(kOuterBoundSeconds);
  ASSERT_TRUE(p.readUntil([&](const std::string& out, const std::string&) { return readyPid(out, victim) > 0; },
                          deadline))
      << p.out() << p.err();
  const pid_t pid = readyPid(p.out(), victim);
  cleanup.set(pid);
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);
  auto reported = [&](const std::string& out, const std::string&) {
    for (int rank = 0; rank < victim; ++rank)
      if (rankLine(out, rank, "EXPECTED-FAILURE").empty()) return false;
    return true;
  };
  ASSERT_TRUE(p.readUntil(reported, deadline)) << p.out() << p.err();
  ASSERT_EQ(::kill(pid, SIGKILL), 0);
  ProcessResult r = p.wait(deadline);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  for (int rank = 0; rank < victim; ++rank) {
    const std::string line = rankLine(r.out, rank, "EXPECTED-FAILURE");
    EXPECT_TRUE(contains(line, "EXPECTED-FAILURE code=timeout peer=3: ")) << line;
    EXPECT_TRUE(contains(line, "hang report: reached allreduce #2: ranks 0-2 (rank ")) << line;
    EXPECT_TRUE(contains(line, " s (stopped, dead, or outside any tutti call): rank 3")) << line;
    // The flight recorder went to the log with the timeout.
    EXPECT_TRUE(contains(r.err, "flight recorder of communicator 'world' rank " + std::to_string(rank) +
                                    " (timeout): 3 operations so far"))
        << r.err;
    EXPECT_TRUE(contains(r.err, "flight recorder 'world' rank " + std::to_string(rank) +
                                    ": op 2: allreduce #2 (count 1 float32 sum, "))
        << r.err;
  }
}

// Rank 3 waits in a receive nobody sends while ranks 0-2 run all-reduce #2: the others'
// timeout ends rank 3's call too, and every rank names the other side's call.
TEST_P(HangProcs, ARankInAnotherCallIsNamedWithItsCall) {
  ProcessResult r = runProcess(launch(4, GetParam(), {"--timeout", "100", "--grace", "60"},
                                      {worker(), "hang", "recv", "3"}),
                               kOuterBoundSeconds);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  for (int rank = 0; rank < 3; ++rank) {
    const std::string line = rankLine(r.out, rank, "EXPECTED-FAILURE");
    EXPECT_TRUE(contains(line, "EXPECTED-FAILURE code=timeout peer=3: ")) << line;
    EXPECT_TRUE(contains(line, "hang report: reached allreduce #2: ranks 0-2")) << line;
    EXPECT_TRUE(contains(line, "; in recv from rank 0 (tag 7, count 4 int32), not yet at allreduce #2: "
                               "rank 3 (rank 3: 0 of 1 steps done, waiting for data from rank 0"))
        << line;
    EXPECT_FALSE(contains(line, "did not report")) << line;
  }
  const std::string line = rankLine(r.out, 3, "EXPECTED-FAILURE");
  EXPECT_TRUE(contains(line, "EXPECTED-FAILURE code=timeout ")) << line;
  EXPECT_TRUE(contains(line, "hang report: in recv from rank 0 (tag 7, count 4 int32): rank 3")) << line;
  EXPECT_TRUE(contains(line, "; in allreduce #2 (count 1 float32 sum, ")) << line;
  EXPECT_TRUE(contains(line, "): ranks 0-2 (rank 0: ")) << line;
}

// SIGUSR1 to a rank blocked in a receive dumps its flight recorder, the running call last.
TEST_P(HangProcs, SigusrDumpsTheRecorderOfARankBlockedInACall) {
  auto job = Subprocess::start(launch(2, GetParam(), {"--timeout", "100", "--grace", "10"}, {worker(), "idle"}));
  ASSERT_TRUE(job.ok()) << job.status().toString();
  Subprocess& p = **job;
  const Deadline deadline = Deadline::afterSeconds(kOuterBoundSeconds);
  ASSERT_TRUE(p.readUntil(
      [&](const std::string& out, const std::string&) { return readyPid(out, 0) > 0 && readyPid(out, 1) > 0; },
      deadline))
      << p.out() << p.err();
  EXPECT_TRUE(contains(rankLine(p.out(), 0, "READY"), "handler=tutti")) << p.out();
  EXPECT_TRUE(contains(rankLine(p.out(), 1, "READY"), "handler=tutti")) << p.out();
  // READY comes before the receive is issued, so a signal may land before it is recorded:
  // signal again after each dump until the dump shows it (each dump is one header line).
  auto countDumps = [](const std::string& err) {
    std::size_t n = 0;
    for (std::size_t at = err.find("rank 1 (SIGUSR1)"); at != std::string::npos;
         at = err.find("rank 1 (SIGUSR1)", at + 1))
      ++n;
    return n;
  };
  auto showsRecv = [](const std::string& err) {
    return contains(err, "flight recorder 'world' rank 1: op 2: recv from rank 0 (tag 99, count 1 "
                         "int32) issued ");
  };
  for (std::size_t sent = 1; !showsRecv(p.err()); ++sent) {
    ASSERT_FALSE(deadline.expired()) << p.out() << p.err();
    ASSERT_EQ(::kill(readyPid(p.out(), 1), SIGUSR1), 0);
    ASSERT_TRUE(p.readUntil([&](const std::string&, const std::string& err) {
      return showsRecv(err) || countDumps(err) >= sent;
    }, deadline)) << p.out() << p.err();
  }
  p.sendSignal(SIGTERM);  // tutti-run forwards it: the job ends
  ProcessResult r = p.wait(deadline);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "flight recorder of communicator 'world' rank 1 (SIGUSR1): 3 operations so far"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "flight recorder 'world' rank 1: op 0: barrier #0 issued ")) << r.err;
  EXPECT_TRUE(contains(r.err, "flight recorder 'world' rank 1: op 1: allreduce #1 (count 1 int64 sum, ")) << r.err;
  EXPECT_TRUE(std::regex_search(r.err, std::regex("rank 1: op 2: recv from rank 0 \\(tag 99, count 1 int32\\) "
                                                  "issued [0-9.]+ s ago, running")))
      << r.err;
  EXPECT_FALSE(contains(r.err, "rank 0 (SIGUSR1)")) << r.err;  // only rank 1 was signalled
}

INSTANTIATE_TEST_SUITE_P(Transports, HangProcs, ::testing::ValuesIn(kTransports),
                         [](const auto& param) { return param.param; });

// TUTTI_FLIGHT_RECORDER_SIGNAL=0 leaves SIGUSR1 alone.
TEST(FlightRecorderProcs, TheSignalHandlerCanBeTurnedOff) {
  auto job = Subprocess::start(launch(2, "tcp", {"--timeout", "100", "--grace", "10", "-x",
                                                 "TUTTI_FLIGHT_RECORDER_SIGNAL=0"},
                                      {worker(), "idle"}));
  ASSERT_TRUE(job.ok()) << job.status().toString();
  Subprocess& p = **job;
  const Deadline deadline = Deadline::afterSeconds(kOuterBoundSeconds);
  ASSERT_TRUE(p.readUntil(
      [&](const std::string& out, const std::string&) { return readyPid(out, 0) > 0 && readyPid(out, 1) > 0; },
      deadline))
      << p.out() << p.err();
  EXPECT_TRUE(contains(rankLine(p.out(), 0, "READY"), "handler=other")) << p.out();
  EXPECT_TRUE(contains(rankLine(p.out(), 1, "READY"), "handler=other")) << p.out();
  p.sendSignal(SIGTERM);
  ProcessResult r = p.wait(deadline);
  ASSERT_FALSE(r.timedOut) << r.out << r.err;
}

// Under a foreign launcher rank 0 serves the store; stopped, it takes the store with it.
// Ranks 1 and 2 still fail by their deadline plus the report's wait, saying the store did
// not answer.
TEST(StoreProcs, AStoppedRankServingTheStoreCostsOnlyTheReportsWait) {
  auto listener = listenTcp("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok());
  auto address = localAddress(listener->get());
  ASSERT_TRUE(address.ok());
  const std::string port = std::to_string(address->port);
  listener->reset();  // rank 0 binds it again (a fixed port is the foreign launchers' contract)
  std::vector<std::unique_ptr<Subprocess>> ranks;
  for (int r = 0; r < 3; ++r) {
    auto p = Subprocess::start({"/usr/bin/env", "OMPI_COMM_WORLD_RANK=" + std::to_string(r),
                                "OMPI_COMM_WORLD_SIZE=3", "OMPI_COMM_WORLD_LOCAL_RANK=" + std::to_string(r),
                                "OMPI_COMM_WORLD_LOCAL_SIZE=3", "TUTTI_STORE_ADDR=127.0.0.1:" + port,
                                "TUTTI_TRANSPORT=tcp", worker(), "hang", "absent", "0"});
    ASSERT_TRUE(p.ok()) << p.status().toString();
    ranks.push_back(std::move(p).value());
  }
  const Deadline deadline = Deadline::afterSeconds(kOuterBoundSeconds);
  KillOnExit cleanup;
  Subprocess& store = *ranks[0];
  ASSERT_TRUE(store.readUntil([](const std::string& out, const std::string&) { return contains(out, "READY rank 0"); },
                              deadline))
      << store.out() << store.err();
  cleanup.set(store.pid());
  ASSERT_EQ(::kill(store.pid(), SIGSTOP), 0);
  for (int r = 1; r < 3; ++r) {
    ProcessResult res = ranks[static_cast<std::size_t>(r)]->wait(deadline);
    ASSERT_FALSE(res.timedOut) << res.out << res.err;
    EXPECT_EQ(res.exitCode(), 3) << res.out << res.err;
    EXPECT_TRUE(contains(res.out, "EXPECTED-FAILURE code=timeout ")) << res.out;
    EXPECT_TRUE(contains(res.out, "hang report: this rank could not post where it was (store at 127.0.0.1:" + port))
        << res.out;
  }
}

}  // namespace
}  // namespace tutti::test
