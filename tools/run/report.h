#pragma once
// How tutti-run describes the end of a job: a rank's wait status in words, the exit status
// the launcher returns, and the summary printed when a job does not succeed. Pure
// functions of the recorded outcome, so that they are tested without processes.

#include <string>
#include <vector>

namespace tutti::run {

/// "SIGKILL" for 9; "signal 77" for numbers without a name.
std::string signalName(int sig);

/// A waitpid() status in words: "exited with status 3", "killed by signal 9 (SIGKILL)",
/// with " (core dumped)" appended when the kernel says so.
std::string describeWaitStatus(int waitStatus);

/// True for a rank that exited with status 0.
bool waitStatusSucceeded(int waitStatus);

/// The shell convention for a wait status: the exit status, or 128 + the signal number.
int exitCodeOfWaitStatus(int waitStatus);

/// Exit status of tutti-run when --timeout expires (as timeout(1)).
inline constexpr int kTimeoutExitCode = 124;

/// What became of one rank by the end of the job.
struct RankOutcome {
  enum class State {
    kRunning,    ///< never reaped (it ignored even SIGKILL for longer than tutti-run waits)
    kSucceeded,  ///< exited with status 0
    kFailed,     ///< ended unsuccessfully on its own (before tutti-run signalled it)
    kStopped,    ///< ended after tutti-run signalled it (grace expired, timeout, forwarded signal)
    kLost,       ///< on another host, whose agent ended before reporting the rank's end
  };
  int rank = 0;
  int pid = 0;  ///< on its own host
  std::string host;  ///< the --hosts name of its host; empty for a job on this host only
  State state = State::kRunning;
  int waitStatus = 0;     ///< valid unless kRunning
  double endSeconds = 0;  ///< when it was reaped, in seconds since the job started
};

/// The whole job as tutti-run saw it.
struct JobOutcome {
  std::vector<RankOutcome> ranks;  ///< indexed by rank
  int firstFailure = -1;           ///< rank that failed first on its own, or -1
  bool timedOut = false;           ///< --timeout expired while ranks were still running
  double timeoutSeconds = 0;       ///< the --timeout value, for the message
  int interruptSignal = 0;         ///< first SIGINT/SIGTERM/SIGHUP tutti-run received, or 0
  std::string abortReason;         ///< why tutti-run itself stopped the ranks, if it did
  /// With --hosts: the first failure when it was a host's launch command or agent ending
  /// before its ranks did (no rank failed before it), e.g. "host h2: the launcher exited with
  /// status 255 before its ranks finished"; and the exit status tutti-run then returns.
  std::string hostFailure;
  int hostFailureExitCode = 0;
};

/// Exit status of tutti-run when it could not start or had to abort the job itself.
inline constexpr int kLauncherErrorExitCode = 1;

/// tutti-run's exit status: the first failure's exit code (128 + signal when it was killed),
/// else hostFailureExitCode after a host failure,
/// else 124 after a timeout, else 128 + the signal that interrupted tutti-run, else
/// kLauncherErrorExitCode when tutti-run aborted the job, else 0.
int jobExitCode(const JobOutcome& job);

/// Lines (each ending in '\n', each starting "tutti-run: ") naming the first failure, how
/// and when it failed, and the ranks that failed, were stopped or never ended. At most
/// `maxListed` ranks are listed one by one per category; the rest are given as rank ranges.
/// Empty when every rank succeeded and nothing interrupted the job.
std::string formatSummary(const JobOutcome& job, int maxListed = 16);

}  // namespace tutti::run
