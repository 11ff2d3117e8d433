#include "run/report.h"

#include <sys/wait.h>

#include <algorithm>
#include <cstring>

#include "base/assert.h"
#include "base/strings.h"
#include "run/output.h"

namespace tutti::run {
namespace {

using State = RankOutcome::State;

std::string describeRank(const RankOutcome& r) {
  std::string text;
  if (r.host.empty()) {
    text = strFormat("rank %d (pid %d)", r.rank, r.pid);
  } else if (r.pid > 0) {
    text = strFormat("rank %d on host %s (pid %d)", r.rank, r.host.c_str(), r.pid);
  } else {  // lost before its agent reported its pid
    text = strFormat("rank %d on host %s", r.rank, r.host.c_str());
  }
  if (r.state == State::kRunning) return text + " did not exit";
  if (r.state == State::kLost) return text + " was lost with its host's agent";
  return text + strFormat(" %s at %.3f s", describeWaitStatus(r.waitStatus).c_str(), r.endSeconds);
}

// Appends one line per rank in `list` (at most maxListed) under `title`, and the rest as
// rank ranges, so that a 4096-rank job does not print 4096 summary lines.
void appendCategory(const char* title, std::vector<const RankOutcome*> list, int maxListed,
                    std::string* out) {
  if (list.empty()) return;
  const std::size_t shown = std::min(list.size(), static_cast<std::size_t>(maxListed));
  for (std::size_t i = 0; i < shown; ++i) {
    *out += strFormat("tutti-run:   %s: %s\n", title, describeRank(*list[i]).c_str());
  }
  if (shown < list.size()) {
    std::vector<int> rest;
    for (std::size_t i = shown; i < list.size(); ++i) rest.push_back(list[i]->rank);
    std::sort(rest.begin(), rest.end());
    *out += strFormat("tutti-run:   %s: %zu more: ranks %s\n", title, rest.size(),
                      formatRankList(rest).c_str());
  }
}

std::string headline(const JobOutcome& job) {
  if (job.firstFailure >= 0) {
    const RankOutcome& first = job.ranks.at(static_cast<std::size_t>(job.firstFailure));
    return strFormat("tutti-run: job failed: first failure: %s\n", describeRank(first).c_str());
  }
  if (!job.hostFailure.empty()) {
    return strFormat("tutti-run: job failed: first failure: %s\n", job.hostFailure.c_str());
  }
  if (job.timedOut) {
    return strFormat("tutti-run: job timed out: --timeout %g s expired\n", job.timeoutSeconds);
  }
  if (job.interruptSignal != 0) {
    return strFormat("tutti-run: job interrupted: tutti-run received %s and forwarded it\n",
                     signalName(job.interruptSignal).c_str());
  }
  if (!job.abortReason.empty()) {
    return strFormat("tutti-run: job aborted by tutti-run: %s\n", job.abortReason.c_str());
  }
  return "";
}

}  // namespace

std::string signalName(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  if (abbrev == nullptr) return strFormat("signal %d", sig);
  return std::string("SIG") + abbrev;
}

std::string describeWaitStatus(int waitStatus) {
  if (WIFEXITED(waitStatus)) return strFormat("exited with status %d", WEXITSTATUS(waitStatus));
  if (WIFSIGNALED(waitStatus)) {
    const int sig = WTERMSIG(waitStatus);
    return strFormat("killed by signal %d (%s)%s", sig, signalName(sig).c_str(),
                     WCOREDUMP(waitStatus) ? " (core dumped)" : "");
  }
  // waitpid without WUNTRACED/WCONTINUED reports only the two cases above.
  return strFormat("ended with wait status 0x%x", static_cast<unsigned>(waitStatus));
}

bool waitStatusSucceeded(int waitStatus) {
  return WIFEXITED(waitStatus) && WEXITSTATUS(waitStatus) == 0;
}

int exitCodeOfWaitStatus(int waitStatus) {
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  if (WIFSIGNALED(waitStatus)) return 128 + WTERMSIG(waitStatus);
  return 1;
}

int jobExitCode(const JobOutcome& job) {
  if (job.firstFailure >= 0) {
    const RankOutcome& first = job.ranks.at(static_cast<std::size_t>(job.firstFailure));
    TUTTI_ASSERT(first.state == State::kFailed);
    const int code = exitCodeOfWaitStatus(first.waitStatus);
    TUTTI_ASSERT_CMP(code, !=, 0);
    return code;
  }
  if (!job.hostFailure.empty()) return job.hostFailureExitCode != 0 ? job.hostFailureExitCode : 1;
  if (job.timedOut) return kTimeoutExitCode;
  if (job.interruptSignal != 0) return 128 + job.interruptSignal;
  if (!job.abortReason.empty()) return kLauncherErrorExitCode;
  // Without a failure, a timeout, an interrupt or an abort tutti-run signals nobody, so
  // every rank must have succeeded.
  for (const RankOutcome& r : job.ranks) TUTTI_ASSERT(r.state == State::kSucceeded);
  return 0;
}

std::string formatSummary(const JobOutcome& job, int maxListed) {
  std::string out = headline(job);
  if (out.empty()) return out;
  std::vector<const RankOutcome*> failed;
  std::vector<const RankOutcome*> stopped;
  std::vector<const RankOutcome*> running;
  std::vector<const RankOutcome*> lost;
  std::vector<int> succeeded;
  for (const RankOutcome& r : job.ranks) {
    switch (r.state) {
      case State::kFailed:
        if (r.rank != job.firstFailure) failed.push_back(&r);
        break;
      case State::kStopped: stopped.push_back(&r); break;
      case State::kRunning: running.push_back(&r); break;
      case State::kLost: lost.push_back(&r); break;
      case State::kSucceeded: succeeded.push_back(r.rank); break;
    }
  }
  // Later failures in the order they happened: they usually report the first one.
  std::stable_sort(failed.begin(), failed.end(), [](const RankOutcome* a, const RankOutcome* b) {
    return a->endSeconds < b->endSeconds;
  });
  appendCategory("also failed", failed, maxListed, &out);
  appendCategory("stopped by tutti-run", stopped, maxListed, &out);
  appendCategory("never exited", running, maxListed, &out);
  appendCategory("lost", lost, maxListed, &out);
  if (!succeeded.empty()) {
    out += strFormat("tutti-run:   succeeded: ranks %s\n", formatRankList(succeeded).c_str());
  }
  out += strFormat("tutti-run: exit status %d\n", jobExitCode(job));
  return out;
}

}  // namespace tutti::run
