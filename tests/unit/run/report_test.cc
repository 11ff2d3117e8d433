#include "run/report.h"

#include <signal.h>

#include <gtest/gtest.h>

namespace tutti::run {
namespace {

// Wait statuses as the kernel encodes them (see <bits/waitstatus.h>).
int exited(int code) { return (code & 0xff) << 8; }
int killed(int sig) { return sig & 0x7f; }

using State = RankOutcome::State;

RankOutcome outcome(int rank, State state, int waitStatus, double seconds) {
  RankOutcome r;
  r.rank = rank;
  r.pid = 1000 + rank;
  r.state = state;
  r.waitStatus = waitStatus;
  r.endSeconds = seconds;
  return r;
}

TEST(Report, DescribesWaitStatuses) {
  EXPECT_EQ(describeWaitStatus(exited(0)), "exited with status 0");
  EXPECT_EQ(describeWaitStatus(exited(3)), "exited with status 3");
  EXPECT_EQ(describeWaitStatus(killed(SIGKILL)), "killed by signal 9 (SIGKILL)");
  EXPECT_EQ(describeWaitStatus(killed(SIGSEGV) | 0x80),
            "killed by signal 11 (SIGSEGV) (core dumped)");
  EXPECT_EQ(signalName(SIGTERM), "SIGTERM");
  EXPECT_EQ(signalName(200), "signal 200");
}

TEST(Report, ExitCodesFollowTheShellConvention) {
  EXPECT_TRUE(waitStatusSucceeded(exited(0)));
  EXPECT_FALSE(waitStatusSucceeded(exited(1)));
  EXPECT_FALSE(waitStatusSucceeded(killed(SIGTERM)));
  EXPECT_EQ(exitCodeOfWaitStatus(exited(0)), 0);
  EXPECT_EQ(exitCodeOfWaitStatus(exited(42)), 42);
  EXPECT_EQ(exitCodeOfWaitStatus(killed(SIGKILL)), 137);
}

TEST(Report, SuccessfulJobHasNoSummaryAndExitsZero) {
  JobOutcome job;
  job.ranks = {outcome(0, State::kSucceeded, exited(0), 0.1),
               outcome(1, State::kSucceeded, exited(0), 0.2)};
  EXPECT_EQ(jobExitCode(job), 0);
  EXPECT_EQ(formatSummary(job), "");
}

TEST(Report, FirstFailureDecidesExitCodeAndLeadsTheSummary) {
  JobOutcome job;
  job.ranks = {outcome(0, State::kFailed, exited(1), 0.50),
               outcome(1, State::kStopped, killed(SIGTERM), 3.50),
               outcome(2, State::kFailed, killed(SIGKILL), 0.25),
               outcome(3, State::kSucceeded, exited(0), 0.10),
               outcome(4, State::kSucceeded, exited(0), 0.10)};
  job.firstFailure = 2;
  EXPECT_EQ(jobExitCode(job), 137);
  const std::string summary = formatSummary(job);
  EXPECT_EQ(summary,
            "tutti-run: job failed: first failure: rank 2 (pid 1002) killed by signal 9 "
            "(SIGKILL) at 0.250 s\n"
            "tutti-run:   also failed: rank 0 (pid 1000) exited with status 1 at 0.500 s\n"
            "tutti-run:   stopped by tutti-run: rank 1 (pid 1001) killed by signal 15 "
            "(SIGTERM) at 3.500 s\n"
            "tutti-run:   succeeded: ranks 3-4\n"
            "tutti-run: exit status 137\n");
}

TEST(Report, FailureBeforeTimeoutWinsOverTimeout) {
  JobOutcome job;
  job.ranks = {outcome(0, State::kFailed, exited(5), 0.1),
               outcome(1, State::kStopped, killed(SIGTERM), 1.0)};
  job.firstFailure = 0;
  job.timedOut = true;
  EXPECT_EQ(jobExitCode(job), 5);
}

TEST(Report, TimeoutNamesStoppedRanksAndExits124) {
  JobOutcome job;
  job.ranks = {outcome(0, State::kSucceeded, exited(0), 0.1),
               outcome(1, State::kStopped, killed(SIGTERM), 2.0),
               outcome(2, State::kStopped, killed(SIGKILL), 4.0)};
  job.timedOut = true;
  job.timeoutSeconds = 2;
  EXPECT_EQ(jobExitCode(job), kTimeoutExitCode);
  const std::string summary = formatSummary(job);
  EXPECT_NE(summary.find("job timed out: --timeout 2 s expired"), std::string::npos) << summary;
  EXPECT_NE(summary.find("stopped by tutti-run: rank 1 (pid 1001)"), std::string::npos);
  EXPECT_NE(summary.find("stopped by tutti-run: rank 2 (pid 1002) killed by signal 9"),
            std::string::npos);
  EXPECT_NE(summary.find("exit status 124"), std::string::npos);
}

TEST(Report, InterruptExitsWith128PlusSignal) {
  JobOutcome job;
  job.ranks = {outcome(0, State::kStopped, killed(SIGINT), 1.0),
               outcome(1, State::kSucceeded, exited(0), 1.0)};
  job.interruptSignal = SIGINT;
  EXPECT_EQ(jobExitCode(job), 130);
  EXPECT_NE(formatSummary(job).find("received SIGINT"), std::string::npos);
}

TEST(Report, AbortByTheLauncherExitsOne) {
  JobOutcome job;
  job.ranks = {outcome(0, State::kStopped, killed(SIGKILL), 1.0)};
  job.abortReason = "epoll_wait: Bad file descriptor";
  EXPECT_EQ(jobExitCode(job), kLauncherErrorExitCode);
  EXPECT_NE(formatSummary(job).find("job aborted by tutti-run: epoll_wait: Bad file descriptor"),
            std::string::npos);
}

TEST(Report, UnreapedRanksAreNamed) {
  JobOutcome job;
  job.ranks = {outcome(0, State::kFailed, exited(2), 0.1), outcome(1, State::kRunning, 0, 0)};
  job.firstFailure = 0;
  EXPECT_NE(formatSummary(job).find("never exited: rank 1 (pid 1001) did not exit"),
            std::string::npos);
}

TEST(Report, LongCategoriesAreCutToRankRanges) {
  JobOutcome job;
  job.ranks.push_back(outcome(0, State::kFailed, exited(1), 0.1));
  for (int r = 1; r < 100; ++r) job.ranks.push_back(outcome(r, State::kStopped, killed(15), 3));
  job.firstFailure = 0;
  const std::string summary = formatSummary(job, 4);
  EXPECT_NE(summary.find("stopped by tutti-run: rank 4 (pid 1004)"), std::string::npos);
  EXPECT_EQ(summary.find("rank 5 (pid 1005)"), std::string::npos);
  EXPECT_NE(summary.find("stopped by tutti-run: 95 more: ranks 5-99"), std::string::npos)
      << summary;
}

}  // namespace
}  // namespace tutti::run

namespace tutti::run {
namespace {

// With --hosts a rank is named with its host, and a host whose agent ended first is the
// job's failure, with its launch command's status.
TEST(Report, NamesHostsOfRanksAndHostFailures) {
  JobOutcome job;
  job.ranks.push_back(RankOutcome{});
  job.ranks.push_back(RankOutcome{});
  job.ranks[0].rank = 0;
  job.ranks[0].pid = 41;
  job.ranks[0].host = "a";
  job.ranks[0].state = RankOutcome::State::kStopped;
  job.ranks[0].waitStatus = SIGTERM;
  job.ranks[1].rank = 1;
  job.ranks[1].host = "b";
  job.ranks[1].state = RankOutcome::State::kLost;
  job.hostFailure = "host b: the launcher exited with status 255 before its rank 1 finished";
  job.hostFailureExitCode = 255;
  EXPECT_EQ(jobExitCode(job), 255);
  const std::string summary = formatSummary(job);
  EXPECT_NE(summary.find("first failure: host b: the launcher exited with status 255"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("stopped by tutti-run: rank 0 on host a (pid 41) killed by signal 15"),
            std::string::npos)
      << summary;
  EXPECT_NE(summary.find("lost: rank 1 on host b was lost with its host's agent"),
            std::string::npos)
      << summary;

  // A rank that failed is the first failure whatever its host did next.
  job.ranks[1].state = RankOutcome::State::kFailed;
  job.ranks[1].pid = 7;
  job.ranks[1].waitStatus = 1 << 8;
  job.firstFailure = 1;
  EXPECT_EQ(jobExitCode(job), 1);
  EXPECT_NE(formatSummary(job).find("first failure: rank 1 on host b (pid 7) exited with status 1"),
            std::string::npos)
      << formatSummary(job);
}

}  // namespace
}  // namespace tutti::run
