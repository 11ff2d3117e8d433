#pragma once
// The job tutti-run supervises (launcher.h): its ranks, with --hosts its hosts and their
// agents, and the one thread that runs them. launcher.cc holds the job on this host and its
// stop sequence; job_hosts.cc the agents of --hosts (starting them, their frames, their
// exits). Internal to tutti-run.

#include <signal.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/fd.h"
#include "bootstrap/tcp_store.h"
#include "run/agent_protocol.h"
#include "run/launcher.h"
#include "run/output.h"
#include "run/report.h"
#include "run/spawn.h"
#include "tutti/deadline.h"

namespace tutti::run::detail {

using State = RankOutcome::State;

// epoll user data of the signalfd; pipes use rank * 2 + stream, and an agent's (--hosts)
// kHostTag | host * 2 + stream (0: its frames on stdout, 1: its stderr).
constexpr std::uint64_t kSignalTag = ~std::uint64_t{0};
constexpr std::uint64_t kHostTag = std::uint64_t{1} << 62;
// Seconds an agent gets to end after its ranks did (it exits as soon as it has reported
// them) or after it was told to kill them, before tutti-run kills it.
constexpr double kAgentEndSeconds = 3;
// One read() per ready pipe per loop turn keeps ranks fair; at exit a pipe is drained with at
// most this many reads so that a grandchild that keeps writing cannot hold tutti-run.
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr int kMaxDrainReads = 256;
// File descriptors per rank: two pipes and the rank's connection to the store.
constexpr long kFdsPerRank = 3;
constexpr long kFdsReserved = 64;

struct Stream {
  Stream(std::string prefix, int out) : prefixer(std::move(prefix)), outFd(out) {}
  UniqueFd fd;
  LinePrefixer prefixer;
  int outFd;
};

struct Rank {
  Rank(int r, bool tag)
      : streams{Stream(tag ? strFormat("[%d] ", r) : "", STDOUT_FILENO),
                Stream(tag ? strFormat("[%d] ", r) : "", STDERR_FILENO)} {
    outcome.rank = r;
  }
  RankOutcome outcome;
  bool running = false;
  bool signalled = false;  // tutti-run has sent it a signal
  int host = -1;           // index in Job::hosts_ with --hosts, else -1
  Stream streams[2];
};

// With --hosts: one host and the agent that runs its ranks there. The agent is our child
// (the launch command, e.g. ssh, or ip netns exec which becomes the agent itself).
struct Host {
  explicit Host(const std::string& n) : name(n), errPrefixer("[host " + n + "] ") {}
  std::string name;
  std::vector<int> ranks;
  std::vector<std::string> command;  // the launch command, for messages
  pid_t pid = -1;
  bool running = false;
  UniqueFd control;  // the agent's stdin: the job description, then signal records
  UniqueFd frames;   // the agent's stdout
  UniqueFd errors;   // the agent's stderr, relayed with errPrefixer
  AgentFrameReader reader;
  LinePrefixer errPrefixer;
  std::string agentFailure;  // the message of an "F" frame
};

// One job from start to summary. A single thread runs everything: one epoll set holds the
// signalfd and every rank's two pipes, and the stop sequence is a chain of deadlines
// (grace -> SIGTERM -> kill -> SIGKILL -> abandon) from which the epoll timeout is computed,
// so the loop sleeps until a pipe has data, a signal arrives or the next step is due.
class Job {
 public:
  explicit Job(const LaunchOptions& options) : options_(options) {}
  ~Job();

  // Starts everything, supervises to the end and prints the summary; see runJob().
  Result<int> run();

 private:
  // Signal handling, epoll set, /dev/null, descriptor limit, store and job id.
  Status setUp();
  // Forks every rank; stops at the first rank that cannot be started.
  Status spawnAll();
  // With --hosts: starts every host's agent and hands it its share of the job.
  Status spawnAgents();
  Status startAgent(std::size_t index, const std::vector<std::string>& agentEnv);
  // One read from an agent's stdout (frames) or stderr (relayed); false when nothing was read.
  bool readHost(std::size_t index, int stream);
  void drainHost(std::size_t index, int stream);
  void closeHost(std::size_t index, int stream);
  void onFrame(std::size_t index, const AgentFrame& frame);
  // An agent ended: its ranks that never reported an end are lost, a failure of the host
  // unless tutti-run was stopping them.
  void onHostExit(std::size_t index, int waitStatus);
  // Sends a control record to every running agent that has ranks still running.
  void sendToAgents(const std::string& record);
  void killAgents();
  // The event loop: returns when every rank is reaped or abandoned.
  void supervise();
  // Takes the steps of the stop sequence (and the --timeout) that are due.
  void handleDeadlines();
  void onSignal(const signalfd_siginfo& info);
  void drainSignals();
  void reapChildren();
  // Records a rank's end; the first unsuccessful end not caused by us arms the grace period.
  void onRankExit(Rank& rank, int waitStatus);
  // One read from a rank's pipe, relayed as whole lines; false when nothing was read.
  bool readStream(Rank& rank, int stream);
  // Reads until the pipe is empty (bounded by kMaxDrainReads).
  void drainStream(Rank& rank, int stream);
  // Closes the pipe and emits its partial last line.
  void closeStream(Rank& rank, int stream);
  // Sends `sig` to the process group of every running rank and marks them signalled.
  void signalRunning(int sig);
  std::vector<int> runningRanks() const;
  void finishOutput();
  double secondsSinceStart() const;
  // Writes "tutti-run: <message>" on stderr.
  void note(const std::string& message) const;

  const LaunchOptions& options_;
  std::vector<Rank> ranks_;
  std::unordered_map<pid_t, int> rankOfPid_;
  std::vector<Host> hosts_;
  std::unordered_map<pid_t, std::size_t> hostOfPid_;
  int agentsRunning_ = 0;
  std::string hostFailure_;
  int hostFailureExitCode_ = 0;
  // When agents still alive are killed: after their ranks all ended, or after SIGKILL.
  Deadline agentKill_ = Deadline::never();
  bool agentsReleased_ = false;  // their stdin closed once every rank had ended
  int running_ = 0;
  int firstFailure_ = -1;
  bool timedOut_ = false;
  int interruptSignal_ = 0;
  std::string abortReason_;
  std::chrono::steady_clock::time_point start_;
  // The pending steps of the stop sequence; never() when not armed.
  Deadline timeout_ = Deadline::never();
  Deadline grace_ = Deadline::never();
  Deadline kill_ = Deadline::never();
  Deadline abandon_ = Deadline::never();

  UniqueFd epoll_;
  UniqueFd signalFd_;
  UniqueFd devNull_;
  sigset_t oldMask_{};
  struct sigaction oldPipeAction_ {};
  bool signalsChanged_ = false;
  bool outputBroken_[2] = {false, false};
  std::unique_ptr<TcpStoreServer> store_;
  std::string storeAddress_;
  std::string jobId_;
  // The job secret the store and every connection between ranks prove they hold; it goes
  // to the ranks through their environment only, and is never printed.
  std::string secret_;
  std::vector<char> readBuf_ = std::vector<char>(kReadChunk);
  std::string outBuf_;
};


}  // namespace tutti::run::detail
