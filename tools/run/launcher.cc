#include "run/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <memory>
#include <optional>
#include <unordered_map>

#include "base/assert.h"
#include "base/cpus.h"
#include "base/fd.h"
#include "base/macros.h"
#include "base/net.h"
#include "base/strings.h"
#include "bootstrap/auth.h"
#include "bootstrap/tcp_store.h"
#include "run/agent_protocol.h"
#include "run/hosts.h"
#include "run/output.h"
#include "run/report.h"
#include "run/spawn.h"
#include "tutti/deadline.h"

namespace tutti::run {
namespace {

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

// Builds a "%d-%016llx" identifier: the pid makes it unique on this host at any one time,
// the random part across hosts and time.
std::string makeJobId() {
  std::uint64_t random = 0;
  if (::getrandom(&random, sizeof(random), 0) != static_cast<ssize_t>(sizeof(random))) {
    random = static_cast<std::uint64_t>(
        std::chrono::steady_clock::now().time_since_epoch().count());
  }
  return strFormat("%d-%016llx", static_cast<int>(::getpid()),
                   static_cast<unsigned long long>(random));
}

// Raises the soft descriptor limit so that `needed` descriptors can be open at once.
Status ensureFdLimit(long needed) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return systemError("getrlimit", errno);
  if (limit.rlim_cur != RLIM_INFINITY && static_cast<long>(limit.rlim_cur) >= needed) {
    return Status::Ok();
  }
  if (limit.rlim_max != RLIM_INFINITY && static_cast<long>(limit.rlim_max) < needed) {
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("this job needs about %ld file descriptors but the hard limit is "
                            "%llu (see ulimit -Hn); start fewer ranks",
                            needed, static_cast<unsigned long long>(limit.rlim_max)));
  }
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) return systemError("setrlimit", errno);
  return Status::Ok();
}

// True for NAME in the -x sense: a C identifier, as shells accept.
bool validEnvName(const std::string& name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  for (char c : name) {
    const bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    (c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// One of a rank's two output streams: the pipe, its line cutter, and where lines go.
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

Job::~Job() {
  if (store_) store_->stop();
  if (signalsChanged_) {
    ::sigaction(SIGPIPE, &oldPipeAction_, nullptr);
    ::pthread_sigmask(SIG_SETMASK, &oldMask_, nullptr);
  }
}

double Job::secondsSinceStart() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Job::note(const std::string& message) const {
  writeAll(STDERR_FILENO, "tutti-run: " + message + "\n");
}

Status Job::setUp() {
  TUTTI_RETURN_IF_ERROR(ensureFdLimit(kFdsPerRank * options_.numRanks + kFdsReserved));
  // Signals are read through a signalfd, so they must be blocked in every thread: block them
  // before the store starts its thread, which inherits this mask.
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, sig);
  if (::pthread_sigmask(SIG_BLOCK, &handled, &oldMask_) != 0) {
    return systemError("pthread_sigmask", errno);
  }
  // A reader of our stdout that goes away must not kill the launcher (and with it the
  // ranks): writes then fail with EPIPE and output is dropped.
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &oldPipeAction_);
  signalsChanged_ = true;
  signalFd_.reset(::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signalFd_.valid()) return systemError("signalfd", errno);
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) return systemError("epoll_create1", errno);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kSignalTag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, signalFd_.get(), &ev) != 0) {
    return systemError("epoll_ctl", errno, "signalfd");
  }
  devNull_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devNull_.valid()) return systemError("open", errno, "/dev/null");

  // A fresh secret per job, whatever the environment says: a secret tutti-run did not make
  // might be shared with another job.
  TUTTI_ASSIGN_OR_RETURN(secret_, auth::generateSecret());
  TcpStoreServer::Options storeOptions;
  TUTTI_ASSIGN_OR_RETURN(storeOptions.key, auth::Key::fromSecret(secret_));
  // With --hosts the ranks reach the store from other hosts: not on loopback, unless the
  // user says so with --bind; a store on every interface is announced on the same address.
  std::string bindHost = options_.bindHost;
  std::string announced;
  if (!options_.hosts.empty()) {
    if (options_.pickStoreHost) {
      TUTTI_ASSIGN_OR_RETURN(bindHost, pickStoreHost());
    } else if (bindHost.empty() || bindHost == "*") {
      TUTTI_ASSIGN_OR_RETURN(announced, pickStoreHost());
    }
  }
  auto store = TcpStoreServer::start(bindHost, 0, storeOptions);
  if (!store.ok()) {
    return store.status().withContext(strFormat("starting the store on '%s'", bindHost.c_str()));
  }
  store_ = std::move(store).value();
  HostPort address = store_->address();
  if (!announced.empty()) address.host = announced;
  storeAddress_ = address.toString();
  jobId_ = makeJobId();
  return Status::Ok();
}

Status Job::spawnAll() {
  if (!options_.hosts.empty()) return spawnAgents();
  const JobEnvironment env(options_.inheritedEnv, options_.extraEnv);
  TUTTI_ASSIGN_OR_RETURN(const ExecPlan plan, planExec(options_.command, env.value("PATH")));
  if (options_.verbose) {
    note(strFormat("job %s: store at %s; starting %d rank(s) of %s", jobId_.c_str(),
                   storeAddress_.c_str(), options_.numRanks, options_.command[0].c_str()));
  }
  ranks_.reserve(static_cast<std::size_t>(options_.numRanks));
  start_ = std::chrono::steady_clock::now();
  // The bound covers starting the ranks too (thousands of forks take seconds); it is
  // acted on once they are all started.
  if (options_.timeoutSeconds > 0) timeout_ = Deadline::afterSeconds(options_.timeoutSeconds);
  std::vector<int> cpus = options_.cpuBind == "none" ? std::vector<int>() : allowedCpuList();
  if (options_.cpuBind == "auto" && !autoBinds(options_.numRanks, cpus.size())) cpus.clear();
  for (int r = 0; r < options_.numRanks; ++r) {
    ranks_.emplace_back(r, options_.tagOutput);
    Rank& rank = ranks_.back();
    TUTTI_ASSIGN_OR_RETURN(
        SpawnedRank spawned,
        spawnRank(plan, env.forRank(r, options_.numRanks, storeAddress_, jobId_, secret_),
                  devNull_.get(), cpuForRank(r, options_.numRanks, cpus)));
    rank.outcome.pid = spawned.pid;
    rank.running = true;
    ++running_;
    rankOfPid_[spawned.pid] = r;
    rank.streams[0].fd = std::move(spawned.stdoutRead);
    rank.streams[1].fd = std::move(spawned.stderrRead);
    for (int s = 0; s < 2; ++s) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = static_cast<std::uint64_t>(r) * 2 + static_cast<std::uint64_t>(s);
      if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, rank.streams[s].fd.get(), &ev) != 0) {
        return systemError("epoll_ctl", errno, strFormat("rank %d output", r));
      }
    }
    if (options_.verbose) note(strFormat("rank %d: pid %d", r, static_cast<int>(spawned.pid)));
  }
  return Status::Ok();
}

std::vector<int> Job::runningRanks() const {
  std::vector<int> list;
  for (const Rank& rank : ranks_) {
    if (rank.running) list.push_back(rank.outcome.rank);
  }
  return list;
}

void Job::signalRunning(int sig) {
  if (!hosts_.empty()) {
    for (Rank& rank : ranks_) rank.signalled = rank.signalled || rank.running;
    sendToAgents(encodeSignalRecord(sig));
    // An agent that does not act on SIGKILL (stuck, or its host unreachable) is killed
    // itself: its ranks die with it (PDEATHSIG, or ssh's end of stdin).
    if (sig == SIGKILL) {
      agentKill_ = Deadline::earliest(agentKill_, Deadline::afterSeconds(kAgentEndSeconds));
    }
    return;
  }
  for (Rank& rank : ranks_) {
    if (!rank.running) continue;
    rank.signalled = true;
    const pid_t pid = rank.outcome.pid;
    // The whole group, so that whatever the rank started goes too; the rank alone if it
    // has moved itself to another group (setsid), leaving none behind under our pid.
    if (::kill(-pid, sig) != 0) ::kill(pid, sig);
  }
}

void Job::handleDeadlines() {
  if (timeout_.expired()) {
    timeout_ = Deadline::never();
    timedOut_ = true;
    note(strFormat("--timeout %g s expired; ranks still running: %s; stopping them (SIGTERM, "
                   "SIGKILL %g s later)",
                   options_.timeoutSeconds, formatRankList(runningRanks()).c_str(),
                   kKillAfterSeconds));
    signalRunning(SIGTERM);
    kill_ = Deadline::earliest(kill_, Deadline::afterSeconds(kKillAfterSeconds));
  }
  if (grace_.expired()) {
    grace_ = Deadline::never();
    if (running_ > 0) {
      note(strFormat("grace period of %g s over; stopping ranks %s (SIGTERM, SIGKILL %g s "
                     "later)",
                     options_.graceSeconds, formatRankList(runningRanks()).c_str(),
                     kKillAfterSeconds));
      signalRunning(SIGTERM);
      kill_ = Deadline::earliest(kill_, Deadline::afterSeconds(kKillAfterSeconds));
    }
  }
  if (kill_.expired()) {
    kill_ = Deadline::never();
    if (running_ > 0) {
      note(strFormat("killing ranks %s (SIGKILL)", formatRankList(runningRanks()).c_str()));
      signalRunning(SIGKILL);
      abandon_ = Deadline::earliest(abandon_, Deadline::afterSeconds(kAbandonAfterSeconds));
    }
  }
  if (!hosts_.empty() && running_ == 0 && !agentsReleased_) {
    // Every rank has ended: the agents exit by themselves; the end of their stdin tells
    // any that missed it.
    agentsReleased_ = true;
    for (Host& host : hosts_) host.control.reset();
    agentKill_ = Deadline::earliest(agentKill_, Deadline::afterSeconds(kAgentEndSeconds));
  }
  if (agentKill_.expired()) {
    agentKill_ = Deadline::never();
    if (agentsRunning_ > 0) {
      killAgents();
      abandon_ = Deadline::earliest(abandon_, Deadline::afterSeconds(kAbandonAfterSeconds));
    }
  }
}

void Job::onSignal(const signalfd_siginfo& info) {
  const int sig = static_cast<int>(info.ssi_signo);
  if (sig == SIGCHLD) {
    reapChildren();
    return;
  }
  if (interruptSignal_ == 0) {
    interruptSignal_ = sig;
    note(strFormat("received %s; forwarding it to ranks %s", signalName(sig).c_str(),
                   formatRankList(runningRanks()).c_str()));
    signalRunning(sig);
    // Ranks that ignore the signal are killed once they have had the grace period and the
    // usual SIGTERM-to-SIGKILL delay, so that one signal always ends the job.
    kill_ = Deadline::earliest(
        kill_, Deadline::afterSeconds(options_.graceSeconds + kKillAfterSeconds));
    return;
  }
  note(strFormat("received %s again; killing ranks %s (SIGKILL)", signalName(sig).c_str(),
                 formatRankList(runningRanks()).c_str()));
  signalRunning(SIGKILL);
  abandon_ = Deadline::earliest(abandon_, Deadline::afterSeconds(kAbandonAfterSeconds));
}

void Job::drainSignals() {
  signalfd_siginfo info{};
  while (true) {
    const ssize_t n = ::read(signalFd_.get(), &info, sizeof(info));
    if (n == static_cast<ssize_t>(sizeof(info))) {
      onSignal(info);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    // EAGAIN: nothing more queued. Several SIGCHLDs may have merged into one; reapChildren()
    // collects every exited child whatever the count.
    return;
  }
}

void Job::reapChildren() {
  // Collect every child that has exited, then record deaths by a signal before other ends:
  // a killed rank's peers exit with an error microseconds later, often reaped in the same
  // batch, and the job's first failure must be the death, not its consequence.
  std::vector<std::pair<int, int>> exited;  // rank, wait status
  while (true) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) break;  // 0: children remain but none has exited; -1: ECHILD
    if (auto host = hostOfPid_.find(pid); host != hostOfPid_.end()) {
      onHostExit(host->second, status);
      continue;
    }
    auto it = rankOfPid_.find(pid);
    if (it == rankOfPid_.end()) continue;  // not a rank (cannot happen: we start no others)
    exited.emplace_back(it->second, status);
  }
  std::stable_partition(exited.begin(), exited.end(),
                        [](const auto& e) { return WIFSIGNALED(e.second); });
  for (const auto& [rank, status] : exited) onRankExit(ranks_[static_cast<std::size_t>(rank)], status);
}

namespace {
// How soon after a rank's error exit a death by a signal still counts as the root cause.
constexpr double kRootCauseWindowSeconds = 1.0;
}  // namespace

void Job::onRankExit(Rank& rank, int waitStatus) {
  TUTTI_ASSERT(rank.running);
  rank.running = false;
  --running_;
  RankOutcome& out = rank.outcome;
  out.waitStatus = waitStatus;
  out.endSeconds = secondsSinceStart();
  // What the rank wrote before it exited is in its pipes now: show it before any message
  // about its end.
  drainStream(rank, 0);
  drainStream(rank, 1);
  if (waitStatusSucceeded(waitStatus)) {
    out.state = State::kSucceeded;
  } else if (rank.signalled) {
    out.state = State::kStopped;
  } else {
    out.state = State::kFailed;
  }
  if (rank.host >= 0) {
    // A remote rank's output arrived before its end; only a partial last line is left.
    closeStream(rank, 0);
    closeStream(rank, 1);
  }
  const std::string where = out.host.empty() ? "" : " on host " + out.host;
  if (options_.verbose) {
    note(strFormat("rank %d%s (pid %d) %s at %.3f s", out.rank, where.c_str(), out.pid,
                   describeWaitStatus(waitStatus).c_str(), out.endSeconds));
  }
  if (out.state != State::kFailed) return;
  if (!hostFailure_.empty()) return;  // a host failed first
  if (firstFailure_ >= 0) {
    // A rank killed by a signal just after another exited with an error is the likelier
    // root cause: its peers see its sockets close before its exit is reported to us.
    const RankOutcome& first = ranks_[static_cast<std::size_t>(firstFailure_)].outcome;
    if (WIFSIGNALED(waitStatus) && !WIFSIGNALED(first.waitStatus) &&
        out.endSeconds - first.endSeconds < kRootCauseWindowSeconds)
      firstFailure_ = out.rank;
    return;
  }
  firstFailure_ = out.rank;
  if (running_ > 0) {
    note(strFormat("rank %d%s (pid %d) %s at %.3f s; the other ranks have %g s to finish",
                   out.rank, where.c_str(), out.pid, describeWaitStatus(waitStatus).c_str(),
                   out.endSeconds, options_.graceSeconds));
    grace_ = Deadline::afterSeconds(options_.graceSeconds);
  }
}

bool Job::readStream(Rank& rank, int stream) {
  Stream& s = rank.streams[stream];
  if (!s.fd.valid()) return false;
  ssize_t n;
  do {
    n = ::read(s.fd.get(), readBuf_.data(), readBuf_.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  if (n <= 0) {
    // EOF (every writer closed) or a read error, which we treat alike.
    closeStream(rank, stream);
    return false;
  }
  outBuf_.clear();
  s.prefixer.feed(std::string_view(readBuf_.data(), static_cast<std::size_t>(n)), &outBuf_);
  if (!outBuf_.empty() && !outputBroken_[stream]) {
    outputBroken_[stream] = !writeAll(s.outFd, outBuf_);
  }
  return true;
}

void Job::drainStream(Rank& rank, int stream) {
  for (int i = 0; i < kMaxDrainReads && readStream(rank, stream); ++i) {
  }
}

void Job::closeStream(Rank& rank, int stream) {
  Stream& s = rank.streams[stream];
  // A remote rank has no pipe here, only what its prefixer holds back.
  if (!s.fd.valid() && rank.host < 0) return;
  if (s.fd.valid()) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, s.fd.get(), nullptr);
  s.fd.reset();
  outBuf_.clear();
  s.prefixer.flush(&outBuf_);
  if (!outBuf_.empty() && !outputBroken_[stream]) {
    outputBroken_[stream] = !writeAll(s.outFd, outBuf_);
  }
}

void Job::supervise() {
  epoll_event events[64];
  while (running_ > 0 || agentsRunning_ > 0) {
    handleDeadlines();
    if (running_ == 0 && agentsRunning_ == 0) break;
    if (abandon_.expired()) {
      if (running_ > 0) {
        note(strFormat("ranks %s did not exit %g s after SIGKILL; giving up on them",
                       formatRankList(runningRanks()).c_str(), kAbandonAfterSeconds));
      } else {
        note(strFormat("%d host agent(s) did not exit %g s after SIGKILL; giving up on them",
                       agentsRunning_, kAbandonAfterSeconds));
      }
      break;
    }
    // Sleep until something happens or the next step of the stop sequence is due. Without
    // --timeout and before any failure nothing is due: the wait ends when a rank exits.
    const Deadline next = Deadline::earliest(
        Deadline::earliest(Deadline::earliest(timeout_, grace_),
                           Deadline::earliest(kill_, abandon_)),
        agentKill_);
    const int n = ::epoll_wait(epoll_.get(), events, 64, next.pollTimeoutMs());
    if (n < 0) {
      if (errno == EINTR) continue;
      // Cannot happen with valid arguments; end the job rather than spin.
      abortReason_ = systemError("epoll_wait", errno).toString();
      note(abortReason_ + "; killing all ranks");
      signalRunning(SIGKILL);
      abandon_ = Deadline::earliest(abandon_, Deadline::afterSeconds(kAbandonAfterSeconds));
      continue;
    }
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tag = events[i].data.u64;
      if (tag == kSignalTag) {
        drainSignals();
      } else if ((tag & kHostTag) != 0) {
        const std::uint64_t index = tag & ~kHostTag;
        readHost(static_cast<std::size_t>(index / 2), static_cast<int>(index % 2));
      } else {
        readStream(ranks_[static_cast<std::size_t>(tag / 2)], static_cast<int>(tag % 2));
      }
    }
  }
}

void Job::finishOutput() {
  // Ranks are gone; whatever is still in their pipes (and any partial last line) is shown
  // now. A pipe still held open by something a rank started is not waited for.
  for (Rank& rank : ranks_) {
    for (int s = 0; s < 2; ++s) {
      drainStream(rank, s);
      closeStream(rank, s);
    }
  }
}

Status Job::spawnAgents() {
  char self[4096];
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (len <= 0) return systemError("readlink", errno, "/proc/self/exe");
  const std::string selfPath(self, static_cast<std::size_t>(len));
  char cwd[4096];
  const std::string workDir = ::getcwd(cwd, sizeof(cwd)) != nullptr ? cwd : "";
  // The agent runs with tutti-run's environment where the launch command passes it on
  // (ip netns exec does, ssh does not), never with the secret: that goes through its stdin.
  std::vector<std::string> agentEnv;
  // What every host's ranks get on top of their agent's environment: tutti's own
  // configuration variables as tutti-run sees them, then -x.
  std::vector<std::pair<std::string, std::string>> forwarded;
  const auto& reserved = JobEnvironment::launcherVariables();
  for (const std::string& entry : options_.inheritedEnv) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    const std::string name = entry.substr(0, eq);
    if (std::find(reserved.begin(), reserved.end(), name) != reserved.end()) continue;
    agentEnv.push_back(entry);
    if (name.rfind("TUTTI_", 0) == 0) forwarded.emplace_back(name, entry.substr(eq + 1));
  }
  forwarded.insert(forwarded.end(), options_.extraEnv.begin(), options_.extraEnv.end());

  ranks_.reserve(static_cast<std::size_t>(options_.numRanks));
  hosts_.reserve(options_.hosts.size());
  for (std::size_t h = 0; h < options_.hosts.size(); ++h) {
    hosts_.emplace_back(options_.hosts[h].name);
    for (int s = 0; s < options_.hosts[h].slots; ++s) {
      const int r = static_cast<int>(ranks_.size());
      ranks_.emplace_back(r, options_.tagOutput);
      ranks_.back().host = static_cast<int>(h);
      ranks_.back().outcome.host = options_.hosts[h].name;
      hosts_.back().ranks.push_back(r);
    }
  }
  if (options_.verbose) {
    note(strFormat("job %s: store at %s; starting %d rank(s) of %s on %zu host(s)",
                   jobId_.c_str(), storeAddress_.c_str(), options_.numRanks,
                   options_.command[0].c_str(), hosts_.size()));
  }
  start_ = std::chrono::steady_clock::now();
  if (options_.timeoutSeconds > 0) timeout_ = Deadline::afterSeconds(options_.timeoutSeconds);
  for (std::size_t h = 0; h < hosts_.size(); ++h) {
    Host& host = hosts_[h];
    TUTTI_ASSIGN_OR_RETURN(host.command,
                           launchCommand(options_.launcherWords, host.name, selfPath));
    std::string path;
    for (const std::string& entry : agentEnv) {
      if (entry.rfind("PATH=", 0) == 0) path = entry.substr(5);
    }
    TUTTI_ASSIGN_OR_RETURN(const ExecPlan plan, planExec(host.command, path));
    AgentJob job;
    job.host = host.name;
    job.cwd = workDir;
    job.worldSize = options_.numRanks;
    job.storeAddress = storeAddress_;
    job.jobId = jobId_;
    job.secret = secret_;
    job.cpuBind = options_.cpuBind;
    job.env = forwarded;
    job.command = options_.command;
    job.ranks = host.ranks;
    const std::string description = encodeAgentJob(job);

    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) return systemError("pipe2", errno, "an agent's stdin");
    UniqueFd controlRead(fds[0]);
    host.control.reset(fds[1]);
    // The whole description must fit in the pipe, so that writing it never waits for an
    // agent that does not read (a launch command stuck before starting it).
    const int capacity = ::fcntl(host.control.get(), F_GETPIPE_SZ);
    if (capacity >= 0 && static_cast<std::size_t>(capacity) < description.size() + 1024) {
      ::fcntl(host.control.get(), F_SETPIPE_SZ, static_cast<int>(description.size() + 1024));
    }
    TUTTI_RETURN_IF_ERROR(setNonBlocking(host.control.get()));
    TUTTI_ASSIGN_OR_RETURN(SpawnedRank agent, spawnRank(plan, agentEnv, controlRead.get()));
    host.pid = agent.pid;
    host.running = true;
    ++agentsRunning_;
    hostOfPid_[agent.pid] = h;
    for (int r : host.ranks) {
      ranks_[static_cast<std::size_t>(r)].running = true;
      ++running_;
    }
    host.frames = std::move(agent.stdoutRead);
    host.errors = std::move(agent.stderrRead);
    for (int s = 0; s < 2; ++s) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = kHostTag | (static_cast<std::uint64_t>(h) * 2 + static_cast<std::uint64_t>(s));
      if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, (s == 0 ? host.frames : host.errors).get(),
                      &ev) != 0) {
        return systemError("epoll_ctl", errno, "host " + host.name + " agent output");
      }
    }
    const ssize_t n = ::write(host.control.get(), description.data(), description.size());
    if (n != static_cast<ssize_t>(description.size())) {
      return Status(ErrorCode::kSystemError,
                    strFormat("host %s: could not hand the job description (%zu bytes) to the "
                              "agent's stdin",
                              host.name.c_str(), description.size()));
    }
    if (options_.verbose) {
      std::string words;
      for (const std::string& w : host.command) words += (words.empty() ? "" : " ") + w;
      note(strFormat("host %s: ranks %s through '%s' (pid %d)", host.name.c_str(),
                     formatRankList(host.ranks).c_str(), words.c_str(),
                     static_cast<int>(agent.pid)));
    }
  }
  return Status::Ok();
}

void Job::sendToAgents(const std::string& record) {
  for (Host& host : hosts_) {
    if (!host.running || !host.control.valid()) continue;
    // Never blocks: an agent that does not read its stdin is killed in the end anyway.
    [[maybe_unused]] const ssize_t n = ::write(host.control.get(), record.data(), record.size());
  }
}

void Job::killAgents() {
  for (Host& host : hosts_) {
    if (!host.running) continue;
    note(strFormat("host %s: killing its agent (pid %d)", host.name.c_str(),
                   static_cast<int>(host.pid)));
    if (::kill(-host.pid, SIGKILL) != 0) ::kill(host.pid, SIGKILL);
  }
}

bool Job::readHost(std::size_t index, int stream) {
  Host& host = hosts_[index];
  UniqueFd& fd = stream == 0 ? host.frames : host.errors;
  if (!fd.valid()) return false;
  ssize_t n;
  do {
    n = ::read(fd.get(), readBuf_.data(), readBuf_.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  if (n <= 0) {
    closeHost(index, stream);
    return false;
  }
  const std::string_view data(readBuf_.data(), static_cast<std::size_t>(n));
  if (stream == 1) {
    outBuf_.clear();
    host.errPrefixer.feed(data, &outBuf_);
    if (!outBuf_.empty() && !outputBroken_[1]) outputBroken_[1] = !writeAll(STDERR_FILENO, outBuf_);
    return true;
  }
  host.reader.feed(data);
  AgentFrame frame;
  while (true) {
    Result<bool> got = host.reader.next(&frame);
    if (!got.ok()) {
      note(strFormat("host %s: its agent's output is not frames (%s); killing it",
                     host.name.c_str(), got.status().toString().c_str()));
      closeHost(index, 0);
      if (host.running && ::kill(-host.pid, SIGKILL) != 0) ::kill(host.pid, SIGKILL);
      break;
    }
    if (!got.value()) break;
    onFrame(index, frame);
  }
  return true;
}

void Job::drainHost(std::size_t index, int stream) {
  for (int i = 0; i < kMaxDrainReads && readHost(index, stream); ++i) {
  }
}

void Job::closeHost(std::size_t index, int stream) {
  Host& host = hosts_[index];
  UniqueFd& fd = stream == 0 ? host.frames : host.errors;
  if (!fd.valid()) return;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd.get(), nullptr);
  fd.reset();
  if (stream == 1) {
    outBuf_.clear();
    host.errPrefixer.flush(&outBuf_);
    if (!outBuf_.empty() && !outputBroken_[1]) outputBroken_[1] = !writeAll(STDERR_FILENO, outBuf_);
  }
}

void Job::onFrame(std::size_t index, const AgentFrame& frame) {
  Host& host = hosts_[index];
  if (frame.kind == 'F') {
    host.agentFailure = frame.payload;
    return;
  }
  if (frame.rank < 0 || frame.rank >= static_cast<int>(ranks_.size()) ||
      ranks_[static_cast<std::size_t>(frame.rank)].host != static_cast<int>(index)) {
    note(strFormat("host %s: its agent reports on rank %d, which is not one of its ranks; "
                   "ignored", host.name.c_str(), frame.rank));
    return;
  }
  Rank& rank = ranks_[static_cast<std::size_t>(frame.rank)];
  switch (frame.kind) {
    case 'S':
      rank.outcome.pid = static_cast<int>(parseInt(frame.payload).value_or(0));
      if (options_.verbose) {
        note(strFormat("rank %d on host %s: pid %d", rank.outcome.rank, host.name.c_str(),
                       rank.outcome.pid));
      }
      break;
    case 'O':
    case 'E': {
      Stream& s = rank.streams[frame.kind == 'O' ? 0 : 1];
      const int stream = frame.kind == 'O' ? 0 : 1;
      outBuf_.clear();
      s.prefixer.feed(frame.payload, &outBuf_);
      if (!outBuf_.empty() && !outputBroken_[stream]) {
        outputBroken_[stream] = !writeAll(s.outFd, outBuf_);
      }
      break;
    }
    case 'X':
      if (rank.running) {
        onRankExit(rank, static_cast<int>(parseInt(frame.payload).value_or(1 << 8)));
      }
      break;
    default: break;
  }
}

void Job::onHostExit(std::size_t index, int waitStatus) {
  Host& host = hosts_[index];
  // Its last frames (the ends of its ranks) and messages are in its pipes now.
  drainHost(index, 0);
  drainHost(index, 1);
  closeHost(index, 0);
  closeHost(index, 1);
  host.running = false;
  --agentsRunning_;
  host.control.reset();
  std::vector<int> lost;
  for (int r : host.ranks) {
    Rank& rank = ranks_[static_cast<std::size_t>(r)];
    if (!rank.running) continue;
    rank.running = false;
    --running_;
    rank.outcome.endSeconds = secondsSinceStart();
    rank.outcome.state = rank.signalled ? State::kStopped : State::kLost;
    closeStream(rank, 0);
    closeStream(rank, 1);
    if (!rank.signalled) lost.push_back(r);
  }
  if (options_.verbose) {
    note(strFormat("host %s: agent (pid %d) %s at %.3f s", host.name.c_str(),
                   static_cast<int>(host.pid), describeWaitStatus(waitStatus).c_str(),
                   secondsSinceStart()));
  }
  if (lost.empty()) return;
  std::string words;
  for (const std::string& w : host.command) words += (words.empty() ? "" : " ") + w;
  const std::string which =
      (lost.size() == 1 ? "rank " : "ranks ") + formatRankList(lost);
  const std::string what =
      host.agentFailure.empty()
          ? strFormat("host %s: the launcher %s before its %s finished ('%s', pid %d)",
                      host.name.c_str(), describeWaitStatus(waitStatus).c_str(), which.c_str(),
                      words.c_str(), static_cast<int>(host.pid))
          : strFormat("host %s: its agent could not run %s: %s", host.name.c_str(),
                      which.c_str(), host.agentFailure.c_str());
  if (firstFailure_ >= 0 || !hostFailure_.empty()) {
    note(what);
    return;
  }
  hostFailure_ = what;
  hostFailureExitCode_ = exitCodeOfWaitStatus(waitStatus);
  if (hostFailureExitCode_ == 0) hostFailureExitCode_ = kLauncherErrorExitCode;
  if (running_ > 0) {
    note(strFormat("%s; the other ranks have %g s to finish", what.c_str(), options_.graceSeconds));
    grace_ = Deadline::afterSeconds(options_.graceSeconds);
  } else {
    note(what);
  }
}

Result<int> Job::run() {
  TUTTI_RETURN_IF_ERROR(setUp());
  const Status spawned = spawnAll();
  if (!spawned.ok()) {
    // Ranks already running would wait forever for peers that never come.
    note(strFormat("could not start the job: %s; killing the ranks already started",
                   spawned.toString().c_str()));
    signalRunning(SIGKILL);
    timeout_ = Deadline::never();
    abandon_ = Deadline::afterSeconds(kAbandonAfterSeconds);
    supervise();
    finishOutput();
    return spawned;
  }
  supervise();
  finishOutput();
  store_->stop();

  JobOutcome job;
  job.firstFailure = firstFailure_;
  job.timedOut = timedOut_;
  job.timeoutSeconds = options_.timeoutSeconds;
  job.interruptSignal = interruptSignal_;
  job.abortReason = abortReason_;
  job.hostFailure = hostFailure_;
  job.hostFailureExitCode = hostFailureExitCode_;
  for (const Rank& rank : ranks_) job.ranks.push_back(rank.outcome);
  const std::string summary = formatSummary(job);
  if (!summary.empty()) writeAll(STDERR_FILENO, summary);
  return jobExitCode(job);
}

}  // namespace

Status validateOptions(const LaunchOptions& options) {
  TUTTI_CHECK_ARG(options.numRanks >= 1 && options.numRanks <= kMaxRanks,
                  "-n %d is out of range: tutti-run starts 1 to %d ranks", options.numRanks,
                  kMaxRanks);
  TUTTI_CHECK_ARG(options.timeoutSeconds >= 0, "--timeout %g must not be negative",
                  options.timeoutSeconds);
  TUTTI_CHECK_ARG(options.graceSeconds >= 0, "--grace %g must not be negative",
                  options.graceSeconds);
  TUTTI_CHECK_ARG(!options.command.empty() && !options.command[0].empty(),
                  "no program to run was given");
  TUTTI_CHECK_ARG(options.cpuBind == "none" || options.cpuBind == "block" ||
                      options.cpuBind == "auto",
                  "--cpu-bind %s: expected none, block or auto", options.cpuBind.c_str());
  if (!options.hosts.empty()) {
    TUTTI_CHECK_ARG(totalSlots(options.hosts) == options.numRanks,
                    "-n %d does not match --hosts, which gives %d ranks", options.numRanks,
                    totalSlots(options.hosts));
    TUTTI_CHECK_ARG(!options.launcherWords.empty(), "--launcher has no command");
  }
  for (const auto& [name, value] : options.extraEnv) {
    TUTTI_CHECK_ARG(validEnvName(name), "-x %s=%s: '%s' is not a valid variable name",
                    name.c_str(), value.c_str(), name.c_str());
    for (const std::string& reserved : JobEnvironment::launcherVariables()) {
      TUTTI_CHECK_ARG(name != reserved, "-x %s: tutti-run decides %s itself for every rank",
                      name.c_str(), name.c_str());
    }
  }
  return Status::Ok();
}

Result<int> runJob(const LaunchOptions& options) {
  TUTTI_RETURN_IF_ERROR(validateOptions(options));
  Job job(options);
  return job.run();
}

}  // namespace tutti::run
