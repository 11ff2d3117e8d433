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
#include "run/job.h"
#include "run/output.h"
#include "run/report.h"
#include "run/spawn.h"
#include "tutti/deadline.h"

namespace tutti::run {
namespace {


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
}  // namespace

namespace detail {

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

}  // namespace detail


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
  detail::Job job(options);
  return job.run();
}

}  // namespace tutti::run
