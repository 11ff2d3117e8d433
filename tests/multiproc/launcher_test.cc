// Tests of tutti-run as users run it: the real binary starting real rank processes (the
// probe in launch_probe.cc), with every run bounded by an outer deadline far above what the
// job needs. Nothing here depends on timing except those outer bounds.

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/fd.h"
#include "common/subprocess.h"
#include "common/test_paths.h"

namespace tutti::test {
namespace {

// Bound on one tutti-run in these tests; the jobs themselves take at most a few seconds.
constexpr double kOuterBoundSeconds = 60;

std::vector<std::string> command(const std::vector<std::string>& launcherArgs,
                                 const std::vector<std::string>& probeArgs = {}) {
  std::vector<std::string> argv = {binPath("tutti-run")};
  argv.insert(argv.end(), launcherArgs.begin(), launcherArgs.end());
  argv.push_back(testProgramPath("tutti_launch_probe"));
  argv.insert(argv.end(), probeArgs.begin(), probeArgs.end());
  return argv;
}

ProcessResult launch(const std::vector<std::string>& launcherArgs,
                     const std::vector<std::string>& probeArgs = {}) {
  return runProcess(command(launcherArgs, probeArgs), kOuterBoundSeconds);
}

// Splits "[r] text" into r and text; false for a line without a rank tag.
bool splitTag(const std::string& line, int* rank, std::string* text) {
  if (line.size() < 4 || line[0] != '[') return false;
  const auto close = line.find("] ");
  if (close == std::string::npos || close == 1) return false;
  for (std::size_t i = 1; i < close; ++i) {
    if (line[i] < '0' || line[i] > '9') return false;
  }
  *rank = std::stoi(line.substr(1, close - 1));
  *text = line.substr(close + 2);
  return true;
}

// The "probe k=v ..." line of each rank, by the rank tag it came out under.
std::map<int, std::map<std::string, std::string>> probeLines(const std::string& out) {
  std::map<int, std::map<std::string, std::string>> byRank;
  for (const std::string& line : splitLines(out)) {
    int rank = -1;
    std::string text;
    if (!splitTag(line, &rank, &text) || text.rfind("probe ", 0) != 0) continue;
    std::map<std::string, std::string> fields;
    std::istringstream words(text.substr(6));
    std::string kv;
    while (words >> kv) {
      const auto eq = kv.find('=');
      if (eq != std::string::npos) fields[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    EXPECT_EQ(byRank.count(rank), 0u) << "rank " << rank << " printed its probe line twice";
    byRank[rank] = fields;
  }
  return byRank;
}

bool has(const std::string& text, const std::string& what) {
  return text.find(what) != std::string::npos;
}

int countLinesContaining(const std::string& text, const std::string& what) {
  int n = 0;
  for (const std::string& line : splitLines(text)) n += has(line, what) ? 1 : 0;
  return n;
}

class LauncherWorldSize : public ::testing::TestWithParam<int> {};

TEST_P(LauncherWorldSize, EveryRankGetsItsCoordinates) {
  const int n = GetParam();
  const ProcessResult r = launch({"-n", std::to_string(n)});
  ASSERT_FALSE(r.timedOut) << r.err;
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  const auto ranks = probeLines(r.out);
  ASSERT_EQ(static_cast<int>(ranks.size()), n) << r.out;
  const std::string store = ranks.at(0).at("store");
  const std::string job = ranks.at(0).at("job");
  const std::string keyId = ranks.at(0).at("key_id");
  EXPECT_NE(keyId, "none") << "tutti-run gave the ranks no secret";
  EXPECT_EQ(store.rfind("127.0.0.1:", 0), 0u) << store;
  EXPECT_NE(store, "127.0.0.1:0");
  EXPECT_FALSE(job.empty());
  for (int rank = 0; rank < n; ++rank) {
    ASSERT_EQ(ranks.count(rank), 1u) << "no output from rank " << rank << "\n" << r.out;
    const auto& f = ranks.at(rank);
    EXPECT_EQ(f.at("rank"), std::to_string(rank));
    EXPECT_EQ(f.at("size"), std::to_string(n));
    EXPECT_EQ(f.at("local_rank"), std::to_string(rank));
    EXPECT_EQ(f.at("local_size"), std::to_string(n));
    EXPECT_EQ(f.at("store"), store);
    EXPECT_EQ(f.at("job"), job);
    // One secret for the whole job: 32 random bytes in hex, the same for every rank.
    EXPECT_EQ(f.at("secret_len"), "64");
    EXPECT_EQ(f.at("key_id"), keyId);
  }
  // Every line is tagged, and nothing is printed when all ranks succeed.
  for (const std::string& line : splitLines(r.out)) {
    int rank = -1;
    std::string text;
    EXPECT_TRUE(splitTag(line, &rank, &text)) << "untagged line: " << line;
  }
  EXPECT_EQ(r.err, "");
}

INSTANTIATE_TEST_SUITE_P(Sizes, LauncherWorldSize, ::testing::Values(1, 2, 5, 8));

TEST(Launcher, RanksRendezvousThroughTheStore) {
  // Each rank adds itself to a counter on the store tutti-run serves and waits until the
  // last one has arrived, so every rank printing the full count proves the store works.
  for (int n : {1, 16}) {
    const ProcessResult r = launch({"-n", std::to_string(n)}, {"--store"});
    ASSERT_FALSE(r.timedOut) << r.err;
    ASSERT_EQ(r.exitCode(), 0) << r.err;
    EXPECT_EQ(countLinesContaining(r.out, "] store ok arrived=" + std::to_string(n)), n)
        << r.out;
  }
}

TEST(Launcher, JobIdsDifferBetweenJobs) {
  const ProcessResult a = launch({"-n", "1"});
  const ProcessResult b = launch({"-n", "1"});
  ASSERT_EQ(a.exitCode(), 0);
  ASSERT_EQ(b.exitCode(), 0);
  EXPECT_NE(probeLines(a.out).at(0).at("job"), probeLines(b.out).at(0).at("job"));
  EXPECT_NE(probeLines(a.out).at(0).at("key_id"), probeLines(b.out).at(0).at("key_id"))
      << "two jobs got the same secret";
}

TEST(Launcher, RanksGetAFreshSecretWhateverTheLauncherInherits) {
  // tutti-run started with a secret (and a secret file) of its own in the environment:
  // the ranks get neither, or they would not match the store tutti-run serves.
  const std::string inherited = "inherited-secret-that-must-not-be-used-0123";
  std::vector<std::string> argv = {"/usr/bin/env", "TUTTI_SECRET=" + inherited,
                                   "TUTTI_SECRET_FILE=/nonexistent/secret"};
  for (const std::string& arg : command({"-n", "3"}, {"--store"})) argv.push_back(arg);
  const ProcessResult r = runProcess(argv, kOuterBoundSeconds);
  ASSERT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_EQ(countLinesContaining(r.out, "] store ok arrived=3"), 3) << r.out;
  const auto ranks = probeLines(r.out);
  ASSERT_EQ(ranks.size(), 3u);
  for (const auto& [rank, fields] : ranks) EXPECT_EQ(fields.at("secret_len"), "64") << rank;
  EXPECT_FALSE(has(r.out + r.err, inherited));
}

// --config prints tutti's variables and exits without a program or -n; without --config,
// -n is required.
TEST(Launcher, ConfigPrintsTheVariablesAndNeedsNoProgram) {
  const ProcessResult r = runProcess({"/usr/bin/env", "TUTTI_TIMEOUT=7", binPath("tutti-run"),
                                      "--config"},
                                     kOuterBoundSeconds);
  ASSERT_EQ(r.exitCode(), 0) << r.out << r.err;
  EXPECT_TRUE(has(r.out, "TUTTI_TIMEOUT=7 (set; default 300)")) << r.out;
  EXPECT_TRUE(has(r.out, "TUTTI_ASYNC_PROGRESS (default auto)")) << r.out;
  const ProcessResult noRanks = runProcess({binPath("tutti-run"), "true"}, kOuterBoundSeconds);
  EXPECT_EQ(noRanks.exitCode(), 2) << noRanks.err;
  EXPECT_TRUE(has(noRanks.err, "-n/--np is required")) << noRanks.err;
}

TEST(Launcher, TheSecretIsNeverPrinted) {
  // Whatever tutti-run reports, and whatever the ranks' environment makes them log, holds
  // no 64-hex-digit run: the secret's shape (the job id's random part has 16).
  const ProcessResult r = launch({"-n", "2", "--verbose", "-x", "TUTTI_DEBUG=DEBUG"}, {"--store"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  const std::regex secretShape("[0-9a-f]{64}");
  EXPECT_FALSE(std::regex_search(r.out, secretShape)) << r.out;
  EXPECT_FALSE(std::regex_search(r.err, secretShape)) << r.err;
}

// --cpu-bind block: each rank runs bound to the CPU its block gets, as the kernel reports
// it; with none, ranks keep the launcher's whole set; auto (the default) binds as block
// where the ranks outnumber the CPUs and split evenly (4 ranks on the first 2 CPUs here),
// and not where there are as many CPUs as ranks. The launcher runs on at most 2 CPUs of
// the test's own, so that every case means the same on any machine.
TEST(Launcher, CpuBindBlockBindsEachRankToItsBlocksCpu) {
  cpu_set_t saved;
  CPU_ZERO(&saved);
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c) {
    if (CPU_ISSET(c, &saved)) {
      cpus.push_back(c);
      CPU_SET(c, &set);
    }
  }
  ASSERT_FALSE(cpus.empty());
  ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);  // tutti-run inherits it
  struct Restore {
    cpu_set_t* set;
    ~Restore() { sched_setaffinity(0, sizeof(*set), set); }
  } restore{&saved};
  const std::string probe = "grep '^Cpus_allowed_list:' /proc/self/status";
  struct Case {
    const char* mode;  // nullptr: the default
    int ranks;
    bool bound;
  };
  const int oversubscribed = 2 * static_cast<int>(cpus.size());
  for (const Case& c : {Case{"block", oversubscribed, true}, Case{"none", oversubscribed, false},
                        Case{nullptr, oversubscribed, true},
                        Case{"auto", static_cast<int>(cpus.size()), false}}) {
    SCOPED_TRACE(std::string("--cpu-bind ") + (c.mode != nullptr ? c.mode : "(default)") + ", " +
                 std::to_string(c.ranks) + " ranks");
    const int kRanks = c.ranks;
    const bool bind = c.bound;
    std::vector<std::string> argv = {binPath("tutti-run"), "-n", std::to_string(kRanks)};
    if (c.mode != nullptr) argv.insert(argv.begin() + 1, {"--cpu-bind", c.mode});
    argv.insert(argv.end(), {"/bin/sh", "-c", probe});
    const ProcessResult r = runProcess(argv, kOuterBoundSeconds);
    ASSERT_EQ(r.exitCode(), 0) << r.err;
    std::map<int, std::string> lists;
    for (const std::string& line : splitLines(r.out)) {
      int rank = -1;
      std::string text;
      ASSERT_TRUE(splitTag(line, &rank, &text)) << line;
      const auto tab = text.find_first_of("\t ");
      ASSERT_NE(tab, std::string::npos) << line;
      lists[rank] = text.substr(text.find_first_not_of("\t ", tab));
    }
    ASSERT_EQ(lists.size(), static_cast<std::size_t>(kRanks)) << r.out;
    for (int rank = 0; rank < kRanks; ++rank) {
      if (bind) {
        const std::size_t index = static_cast<std::size_t>(rank) * cpus.size() / kRanks;
        EXPECT_EQ(lists[rank], std::to_string(cpus[index])) << "rank " << rank;
      } else {
        EXPECT_EQ(CPU_COUNT(&set) == 1, lists[rank].find_first_of(",-") == std::string::npos)
            << "rank " << rank << " unbound: " << lists[rank];
      }
    }
  }
}

// Ranks bound one to a CPU each (as mpirun --bind-to core and srun --cpu-bind=cores bind
// them) see one CPU in their masks; from every local rank's mask the shared-memory
// transport still finds a core for each, where ranks bound two to a CPU have none. Read
// from its INFO line; the job runs on (at most) the first two CPUs of this process's mask.
TEST(Launcher, RanksBoundOneToACoreEachHaveACoreAndTwoToACoreDoNot) {
  cpu_set_t saved;
  CPU_ZERO(&saved);
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  if (CPU_COUNT(&saved) < 2) GTEST_SKIP() << "needs two CPUs in this process's mask";
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c = 0, found = 0; c < CPU_SETSIZE && found < 2; ++c) {
    if (CPU_ISSET(c, &saved)) {
      CPU_SET(c, &set);
      ++found;
    }
  }
  ASSERT_EQ(sched_setaffinity(0, sizeof(set), &set), 0);  // tutti-run inherits it
  struct Restore {
    cpu_set_t* set;
    ~Restore() { sched_setaffinity(0, sizeof(*set), set); }
  } restore{&saved};
  struct Case {
    std::vector<std::string> args;
    int ranks;
    const char* verdict;
  };
  // Over shared memory the transport's segments carry the masks; over TCP alone (no
  // segments) the store does, and the verdict must be the same.
  for (const std::string transport : {"shm", "tcp"}) {
    for (const Case& c : {Case{{"--cpu-bind", "block"}, 2, "a core for each rank"},
                          Case{{"--cpu-bind", "none"}, 2, "a core for each rank"},
                          Case{{"--cpu-bind", "block"}, 4, "more ranks than cores"},
                          Case{{"--cpu-bind", "none"}, 4, "more ranks than cores"}}) {
      SCOPED_TRACE(transport + ", " + c.args[1] + ", " + std::to_string(c.ranks) + " ranks");
      std::vector<std::string> argv = {binPath("tutti-run"), "-n", std::to_string(c.ranks)};
      argv.insert(argv.end(), c.args.begin(), c.args.end());
      argv.insert(argv.end(), {"-x", "TUTTI_DEBUG=INFO", "-x",
                               transport == "shm" ? "TUTTI_DEBUG_SUBSYS=SHM" : "TUTTI_DEBUG_SUBSYS=INIT",
                               "-x", "TUTTI_TRANSPORT=" + transport, binPath("tutti-bench"),
                               "allreduce", "-b", "64", "-e", "64", "-n", "2", "-w", "1"});
      const ProcessResult r = runProcess(argv, kOuterBoundSeconds);
      ASSERT_EQ(r.exitCode(), 0) << r.out << r.err;
      const std::string both = r.out + r.err;
      // Over shm the verdict follows the rendezvous threshold's parenthesis, which says more
      // where the kernel's copy measured slow (a loaded machine: "(0: never; only for calls
      // that learn their way)"); the verdict is what is checked.
      const std::regex line(transport == "shm"
                                ? std::string(" bytes \\(0: never[^)]*\\), ") + c.verdict
                                : std::string(": TCP only, ") + c.verdict);
      std::istringstream lines(both);
      int matching = 0;
      for (std::string text; std::getline(lines, text);)
        matching += std::regex_search(text, line) ? 1 : 0;
      EXPECT_EQ(matching, c.ranks) << both;
    }
  }
}

TEST(Launcher, EveryLineIsWholeAndTaggedWithItsRank) {
  constexpr int kRanks = 4;
  constexpr int kLines = 300;
  const ProcessResult r =
      launch({"-n", std::to_string(kRanks)}, {"--lines", std::to_string(kLines), "--partial",
                                              "tail-without-newline"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  std::set<std::string> seenOut;
  std::set<std::string> seenErr;
  int tails = 0;
  for (const std::string& line : splitLines(r.out)) {
    int rank = -1;
    std::string text;
    ASSERT_TRUE(splitTag(line, &rank, &text)) << line;
    if (text == "tail-without-newline") {
      ++tails;
    } else if (text.rfind("line ", 0) == 0) {
      // The text names its rank: it must have come out under that rank's tag.
      EXPECT_TRUE(has(text, " of rank " + std::to_string(rank))) << line;
      EXPECT_TRUE(seenOut.insert(line).second) << "duplicate: " << line;
    }
  }
  for (const std::string& line : splitLines(r.err)) {
    int rank = -1;
    std::string text;
    ASSERT_TRUE(splitTag(line, &rank, &text)) << line;
    EXPECT_EQ(text.rfind("err line ", 0), 0u) << line;
    EXPECT_TRUE(has(text, " of rank " + std::to_string(rank))) << line;
    EXPECT_TRUE(seenErr.insert(line).second) << "duplicate: " << line;
  }
  EXPECT_EQ(static_cast<int>(seenOut.size()), kRanks * kLines);
  EXPECT_EQ(static_cast<int>(seenErr.size()), kRanks * kLines);
  EXPECT_EQ(tails, kRanks);
}

TEST(Launcher, NoTagOutputLeavesLinesAlone) {
  const ProcessResult r = launch({"-n", "2", "--no-tag-output"}, {"--lines", "3"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    for (int i = 0; i < 3; ++i) {
      const std::string line = "line " + std::to_string(i) + " of rank " + std::to_string(rank);
      EXPECT_TRUE(has("\n" + r.out, "\n" + line + "\n")) << r.out;
    }
  }
  EXPECT_FALSE(has(r.out, "[0] "));
}

TEST(Launcher, VeryLongLinesAreSplitNotLost) {
  constexpr int kBytes = 200000;
  const ProcessResult r = launch({"-n", "2"}, {"--long", std::to_string(kBytes)});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  std::map<int, std::size_t> xs;
  std::map<int, int> pieces;
  for (const std::string& line : splitLines(r.out)) {
    int rank = -1;
    std::string text;
    ASSERT_TRUE(splitTag(line, &rank, &text));
    if (text.empty() || text.find_first_not_of('x') != std::string::npos) continue;
    EXPECT_LE(text.size(), 64u * 1024u);
    xs[rank] += text.size();
    ++pieces[rank];
  }
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_EQ(xs[rank], static_cast<std::size_t>(kBytes)) << "rank " << rank;
    EXPECT_GE(pieces[rank], 4) << "rank " << rank;
  }
}

TEST(Launcher, ExtraEnvironmentReachesEveryRank) {
  const ProcessResult r = launch({"-n", "3", "-x", "TUTTI_SPIN_US=7"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  const auto ranks = probeLines(r.out);
  ASSERT_EQ(ranks.size(), 3u);
  for (const auto& [rank, fields] : ranks) EXPECT_EQ(fields.at("spin_us"), "7") << rank;
}

TEST(Launcher, BadCommandLinesExitTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {},                                        // no -n
      {"-n", "0"},                               // out of range
      {"-n", "4097"},                            // out of range
      {"-n", "2", "-x", "NOEQUALS"},             // not NAME=VALUE
      {"-n", "2", "-x", "TUTTI_RANK=1"},         // reserved
      {"-n", "2", "--grace", "-1"},              // negative
      {"-n", "2", "--no-such-option"},           // unknown
  };
  for (const auto& args : bad) {
    const ProcessResult r = launch(args);
    EXPECT_EQ(r.exitCode(), 2) << "args: " << ::testing::PrintToString(args) << "\n" << r.err;
    EXPECT_FALSE(r.err.empty());
    EXPECT_EQ(countLinesContaining(r.out, "probe "), 0);
  }
  const ProcessResult noProgram =
      runProcess({binPath("tutti-run"), "-n", "2"}, kOuterBoundSeconds);
  EXPECT_EQ(noProgram.exitCode(), 2);
  EXPECT_TRUE(has(noProgram.err, "no program")) << noProgram.err;
}

TEST(Launcher, HelpDocumentsEveryOption) {
  const ProcessResult r = runProcess({binPath("tutti-run"), "--help"}, kOuterBoundSeconds);
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  for (const char* option : {"--np", "--timeout", "--grace", "--bind", "--no-tag-output", "-x",
                             "--verbose", "TUTTI_STORE_ADDR", "124"}) {
    EXPECT_TRUE(has(r.out, option)) << option;
  }
}

TEST(Launcher, ArgumentsAfterTheProgramBelongToIt) {
  // "-n 1" after the program must reach the probe, which rejects it as unknown: if
  // tutti-run had taken it, the job would run 1 rank successfully.
  const ProcessResult r = launch({"-n", "2"}, {"-n", "1"});
  EXPECT_EQ(r.exitCode(), 64) << r.err;
  EXPECT_TRUE(has(r.err, "[0] tutti_launch_probe: bad arguments: -n")) << r.err;
  // "--" ends the options too.
  const ProcessResult dashes = runProcess(
      {binPath("tutti-run"), "-n", "1", "--", testProgramPath("tutti_launch_probe")},
      kOuterBoundSeconds);
  EXPECT_EQ(dashes.exitCode(), 0) << dashes.err;
  EXPECT_EQ(probeLines(dashes.out).size(), 1u);
}

TEST(Launcher, VerboseReportsStoreJobAndPids) {
  const ProcessResult r = launch({"-n", "2", "--verbose"});
  ASSERT_EQ(r.exitCode(), 0) << r.err;
  const auto ranks = probeLines(r.out);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_TRUE(has(r.err, "job " + ranks.at(0).at("job") + ": store at " +
                             ranks.at(0).at("store") + "; starting 2 rank(s)"))
      << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string pid = ranks.at(rank).at("pid");
    EXPECT_TRUE(has(r.err, "rank " + std::to_string(rank) + ": pid " + pid)) << r.err;
    EXPECT_TRUE(has(r.err, "rank " + std::to_string(rank) + " (pid " + pid +
                               ") exited with status 0"))
        << r.err;
  }
}

TEST(Launcher, StoreThatCannotListenFailsTheLaunch) {
  // 192.0.2.1 (TEST-NET-1) is never an address of this host, so bind() fails.
  const ProcessResult r = launch({"-n", "2", "--bind", "192.0.2.1"});
  EXPECT_EQ(r.exitCode(), 1) << r.err;
  EXPECT_TRUE(has(r.err, "starting the store on '192.0.2.1'")) << r.err;
  EXPECT_EQ(countLinesContaining(r.out, "probe "), 0) << "no rank may start without a store";
}

TEST(Launcher, ExitStatusOfFirstFailurePropagates) {
  const ProcessResult r = launch({"-n", "3"}, {"--exit", "1:3"});
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode(), 3) << r.err;
  const std::string pid = probeLines(r.out).at(1).at("pid");
  EXPECT_TRUE(has(r.err, "first failure: rank 1 (pid " + pid + ") exited with status 3"))
      << r.err;
  EXPECT_TRUE(has(r.err, "succeeded: ranks 0,2")) << r.err;
}

TEST(Launcher, KilledRankIsTheFirstFailureAndOthersAreStopped) {
  const ProcessResult r =
      launch({"-n", "4", "--grace", "1"}, {"--signal", "2:9", "--block", "all"});
  ASSERT_FALSE(r.timedOut) << "the job must end well inside its bound\n" << r.err;
  EXPECT_EQ(r.exitCode(), 128 + SIGKILL) << r.err;
  const auto ranks = probeLines(r.out);
  ASSERT_EQ(ranks.size(), 4u) << r.out;
  EXPECT_TRUE(has(r.err, "first failure: rank 2 (pid " + ranks.at(2).at("pid") +
                             ") killed by signal 9 (SIGKILL)"))
      << r.err;
  for (int rank : {0, 1, 3}) {
    EXPECT_TRUE(has(r.err, "stopped by tutti-run: rank " + std::to_string(rank) + " (pid " +
                               ranks.at(rank).at("pid") + ") killed by signal 15 (SIGTERM)"))
        << r.err;
  }
}

TEST(Launcher, RankIgnoringSigtermIsKilledAfterGrace) {
  const ProcessResult r = launch({"-n", "3", "--grace", "0.5"},
                                 {"--ignore", "15", "--exit", "0:5", "--block", "all"});
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode(), 5) << r.err;
  EXPECT_TRUE(has(r.err, "first failure: rank 0")) << r.err;
  EXPECT_TRUE(has(r.err, "grace period of 0.5 s over; stopping ranks 1-2")) << r.err;
  EXPECT_TRUE(has(r.err, "killing ranks 1-2 (SIGKILL)")) << r.err;
  for (int rank : {1, 2}) {
    EXPECT_TRUE(has(r.err, "stopped by tutti-run: rank " + std::to_string(rank)));
  }
  EXPECT_EQ(countLinesContaining(r.err, "killed by signal 9 (SIGKILL)"), 2) << r.err;
}

TEST(Launcher, TimeoutNamesRunningRanksAndExits124) {
  const ProcessResult r = launch({"-n", "3", "--timeout", "1"}, {"--block", "all"});
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode(), 124) << r.err;
  EXPECT_TRUE(has(r.err, "--timeout 1 s expired; ranks still running: 0-2")) << r.err;
  EXPECT_EQ(countLinesContaining(r.err, "stopped by tutti-run: rank"), 3) << r.err;
}

TEST(Launcher, ProgramThatCannotBeExecutedGives127) {
  const ProcessResult r = runProcess(
      {binPath("tutti-run"), "-n", "2", "/nonexistent/tutti/program"}, kOuterBoundSeconds);
  EXPECT_EQ(r.exitCode(), 127) << r.err;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_TRUE(has(r.err, "[" + std::to_string(rank) +
                               "] tutti-run: cannot execute '/nonexistent/tutti/program': "
                               "No such file or directory"))
        << r.err;
  }
}

// Starts a job whose ranks all block, and waits until every one has said so.
std::unique_ptr<Subprocess> startBlockedJob(int ranks, const std::vector<std::string>& extra) {
  std::vector<std::string> probeArgs = extra;
  probeArgs.insert(probeArgs.end(), {"--block", "all"});
  auto started = Subprocess::start(command({"-n", std::to_string(ranks), "--grace", "30"},
                                           probeArgs));
  EXPECT_TRUE(started.ok()) << started.status().toString();
  if (!started.ok()) return nullptr;
  std::unique_ptr<Subprocess> job = std::move(started).value();
  const bool ready = job->readUntil(
      [&](const std::string& out, const std::string&) {
        return countLinesContaining(out, "] ready") == ranks;
      },
      Deadline::afterSeconds(kOuterBoundSeconds));
  EXPECT_TRUE(ready) << job->out() << job->err();
  return job;
}

bool processGone(const std::string& pid) {
  return ::kill(std::stoi(pid), 0) != 0 && errno == ESRCH;
}

TEST(Launcher, SigtermIsForwardedToEveryRank) {
  auto job = startBlockedJob(3, {});
  ASSERT_NE(job, nullptr);
  job->sendSignal(SIGTERM);
  const ProcessResult r = job->wait(Deadline::afterSeconds(kOuterBoundSeconds));
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode(), 128 + SIGTERM) << r.err;
  EXPECT_TRUE(has(r.err, "received SIGTERM; forwarding it to ranks 0-2")) << r.err;
  const auto ranks = probeLines(r.out);
  ASSERT_EQ(ranks.size(), 3u);
  for (const auto& [rank, fields] : ranks) {
    EXPECT_TRUE(has(r.err, "rank " + std::to_string(rank) + " (pid " + fields.at("pid") +
                               ") killed by signal 15 (SIGTERM)"))
        << r.err;
    EXPECT_TRUE(processGone(fields.at("pid"))) << "rank " << rank << " survived";
  }
}

TEST(Launcher, RanksDieWithTheLauncher) {
  auto job = startBlockedJob(3, {"--ignore", "15"});
  ASSERT_NE(job, nullptr);
  const auto ranks = probeLines(job->out());
  ASSERT_EQ(ranks.size(), 3u);
  // A pidfd works for processes that are not our children and becomes readable when the
  // process is gone, so the ranks' end is awaited without polling in a loop.
  std::vector<UniqueFd> pidFds;
  for (const auto& [rank, fields] : ranks) {
    pidFds.emplace_back(static_cast<int>(::syscall(SYS_pidfd_open, std::stoi(fields.at("pid")), 0)));
    ASSERT_TRUE(pidFds.back().valid()) << "rank " << rank << ": " << std::strerror(errno);
  }
  // SIGKILL leaves tutti-run no chance to stop them: only PR_SET_PDEATHSIG can.
  job->sendSignal(SIGKILL);
  const ProcessResult r = job->wait(Deadline::afterSeconds(kOuterBoundSeconds));
  EXPECT_EQ(r.exitCode(), 128 + SIGKILL);
  const Deadline deadline = Deadline::afterSeconds(kOuterBoundSeconds);
  for (std::size_t i = 0; i < pidFds.size(); ++i) {
    pollfd pfd{pidFds[i].get(), POLLIN, 0};
    EXPECT_EQ(::poll(&pfd, 1, deadline.pollTimeoutMs()), 1) << "rank " << i << " survived";
  }
}

TEST(Launcher, SecondSigintKillsRanksThatIgnoreTheFirst) {
  auto job = startBlockedJob(2, {"--ignore", "2"});
  ASSERT_NE(job, nullptr);
  job->sendSignal(SIGINT);
  ASSERT_TRUE(job->readUntil(
      [](const std::string&, const std::string& err) { return has(err, "forwarding it"); },
      Deadline::afterSeconds(kOuterBoundSeconds)))
      << job->err();
  job->sendSignal(SIGINT);
  const ProcessResult r = job->wait(Deadline::afterSeconds(kOuterBoundSeconds));
  ASSERT_FALSE(r.timedOut) << r.err;
  EXPECT_EQ(r.exitCode(), 128 + SIGINT) << r.err;
  EXPECT_TRUE(has(r.err, "received SIGINT again; killing ranks 0-1 (SIGKILL)")) << r.err;
  EXPECT_EQ(countLinesContaining(r.err, "killed by signal 9 (SIGKILL)"), 2) << r.err;
}

}  // namespace
}  // namespace tutti::test
