#include "run/agent.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/cpus.h"
#include "base/fd.h"
#include "base/macros.h"
#include "base/net.h"
#include "base/strings.h"
#include "run/agent_protocol.h"
#include "run/launcher.h"
#include "run/output.h"
#include "run/report.h"
#include "run/spawn.h"
#include "tutti/deadline.h"

extern char** environ;  // NOLINT: POSIX

namespace tutti::run {
namespace {

constexpr std::uint64_t kSignalTag = ~std::uint64_t{0};
constexpr std::uint64_t kStdinTag = ~std::uint64_t{0} - 1;
constexpr std::size_t kReadChunk = 64 * 1024;
constexpr int kMaxDrainReads = 256;

struct LocalRank {
  int rank = 0;  // global
  pid_t pid = -1;
  bool running = false;
  UniqueFd streams[2];
};

class Agent {
 public:
  int run();

 private:
  Status readJob();
  Status setUpSignals();
  Status spawnAll();
  void supervise();
  void onStdin();
  void onSignals();
  void reap();
  bool readStream(LocalRank& rank, int stream);
  void drainStream(LocalRank& rank, int stream);
  void stopRanks(int sig);
  void send(char kind, int rank, std::string_view payload);
  void fail(const Status& status);
  void note(const std::string& message) const;

  AgentJob job_;
  NetstringReader stdin_;
  bool stdinOpen_ = true;
  bool stdoutBroken_ = false;
  std::vector<LocalRank> ranks_;
  std::unordered_map<pid_t, std::size_t> indexOfPid_;
  int running_ = 0;
  UniqueFd epoll_;
  UniqueFd signalFd_;
  UniqueFd devNull_;
  Deadline kill_ = Deadline::never();
  Deadline abandon_ = Deadline::never();
  std::vector<char> buf_ = std::vector<char>(kReadChunk);
  std::string out_;
};

void Agent::note(const std::string& message) const {
  const std::string host = job_.host.empty() ? "" : " on " + job_.host;
  writeAll(STDERR_FILENO, "tutti-run --agent" + host + ": " + message + "\n");
}

void Agent::send(char kind, int rank, std::string_view payload) {
  if (stdoutBroken_) return;
  out_.clear();
  appendAgentFrame(kind, rank, payload, &out_);
  if (!writeAll(STDOUT_FILENO, out_)) {
    // tutti-run is gone: nobody will hear of these ranks again, so they end now.
    stdoutBroken_ = true;
    stopRanks(SIGTERM);
  }
}

void Agent::fail(const Status& status) {
  note(status.toString());
  send('F', -1, status.toString());
}

Status Agent::readJob() {
  AgentJobDecoder decoder;
  while (true) {
    TUTTI_ASSIGN_OR_RETURN(const bool done, decoder.decode(stdin_));
    if (done) break;
    ssize_t n;
    do {
      n = ::read(STDIN_FILENO, buf_.data(), buf_.size());
    } while (n < 0 && errno == EINTR);
    if (n < 0) return systemError("read", errno, "the job description on stdin");
    TUTTI_CHECK_ARG(n > 0, "stdin ended before the whole job description arrived");
    stdin_.feed(std::string_view(buf_.data(), static_cast<std::size_t>(n)));
  }
  job_ = decoder.job();
  return Status::Ok();
}

Status Agent::setUpSignals() {
  sigset_t handled;
  sigemptyset(&handled);
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&handled, sig);
  if (::sigprocmask(SIG_BLOCK, &handled, nullptr) != 0) return systemError("sigprocmask", errno);
  ::signal(SIGPIPE, SIG_IGN);
  signalFd_.reset(::signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!signalFd_.valid()) return systemError("signalfd", errno);
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) return systemError("epoll_create1", errno);
  for (auto [fd, tag] : {std::pair{signalFd_.get(), kSignalTag}, std::pair{0, kStdinTag}}) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = tag;
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd, &ev) != 0) {
      return systemError("epoll_ctl", errno);
    }
  }
  devNull_.reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  if (!devNull_.valid()) return systemError("open", errno, "/dev/null");
  return Status::Ok();
}

Status Agent::spawnAll() {
  if (!job_.cwd.empty() && ::chdir(job_.cwd.c_str()) != 0) {
    const int err = errno;
    const char* home = ::getenv("HOME") != nullptr ? ::getenv("HOME") : "/";
    note(strFormat("cannot go to tutti-run's directory %s (%s); the ranks start in %s",
                   job_.cwd.c_str(), std::strerror(err), home));
    [[maybe_unused]] const int ignored = ::chdir(home);
  }
  std::vector<std::string> inherited;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) inherited.emplace_back(*e);
  const JobEnvironment env(inherited, job_.env);
  TUTTI_ASSIGN_OR_RETURN(const ExecPlan plan, planExec(job_.command, env.value("PATH")));
  const int local = static_cast<int>(job_.ranks.size());
  std::vector<int> cpus = job_.cpuBind == "none" ? std::vector<int>() : allowedCpuList();
  if (job_.cpuBind == "auto" && !autoBinds(local, cpus.size())) cpus.clear();
  ranks_.resize(job_.ranks.size());
  for (int l = 0; l < local; ++l) {
    LocalRank& rank = ranks_[static_cast<std::size_t>(l)];
    rank.rank = job_.ranks[static_cast<std::size_t>(l)];
    TUTTI_ASSIGN_OR_RETURN(
        SpawnedRank spawned,
        spawnRank(plan,
                  env.forRank(rank.rank, job_.worldSize, l, local, job_.storeAddress,
                              job_.jobId, job_.secret),
                  devNull_.get(), cpuForRank(l, local, cpus)));
    rank.pid = spawned.pid;
    rank.running = true;
    ++running_;
    indexOfPid_[spawned.pid] = static_cast<std::size_t>(l);
    rank.streams[0] = std::move(spawned.stdoutRead);
    rank.streams[1] = std::move(spawned.stderrRead);
    for (int s = 0; s < 2; ++s) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.u64 = static_cast<std::uint64_t>(l) * 2 + static_cast<std::uint64_t>(s);
      if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, rank.streams[s].get(), &ev) != 0) {
        return systemError("epoll_ctl", errno, strFormat("rank %d output", rank.rank));
      }
    }
    send('S', rank.rank, std::to_string(spawned.pid));
  }
  return Status::Ok();
}

void Agent::stopRanks(int sig) {
  for (LocalRank& rank : ranks_) {
    if (!rank.running) continue;
    if (::kill(-rank.pid, sig) != 0) ::kill(rank.pid, sig);
  }
  if (sig == SIGKILL) {
    abandon_ = Deadline::earliest(abandon_, Deadline::afterSeconds(kAbandonAfterSeconds));
  } else {
    kill_ = Deadline::earliest(kill_, Deadline::afterSeconds(kKillAfterSeconds));
  }
}

void Agent::onStdin() {
  ssize_t n;
  do {
    n = ::read(STDIN_FILENO, buf_.data(), buf_.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) {
    // tutti-run ended or gave up on this host: the ranks must not outlive it.
    stdinOpen_ = false;
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, STDIN_FILENO, nullptr);
    if (running_ > 0) stopRanks(SIGTERM);
    return;
  }
  stdin_.feed(std::string_view(buf_.data(), static_cast<std::size_t>(n)));
  std::string key;
  std::string value;
  while (true) {
    Result<bool> got = stdin_.next(&key);
    if (got.ok() && got.value()) {
      got = stdin_.next(&value);
      // A record is written whole, so its value is there whenever its key is.
      if (got.ok() && !got.value()) got = Status(ErrorCode::kInvalidArgument, "half a record");
    }
    if (!got.ok()) {
      note("tutti-run sent something unreadable (" + got.status().toString() +
           "); stopping the ranks");
      stdinOpen_ = false;
      ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, STDIN_FILENO, nullptr);
      stopRanks(SIGTERM);
      return;
    }
    if (!got.value()) return;
    const auto sig = parseInt(value);
    if (key == "signal" && sig.has_value() && *sig > 0 && *sig < NSIG) {
      stopRanks(static_cast<int>(*sig));
    } else {
      note("ignoring an unknown control record '" + key + "'");
    }
  }
}

void Agent::onSignals() {
  signalfd_siginfo info{};
  while (::read(signalFd_.get(), &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) {
    const int sig = static_cast<int>(info.ssi_signo);
    if (sig == SIGCHLD) {
      reap();
    } else {
      // The agent is being ended (an ssh hang-up, a kill): its ranks end with it.
      stopRanks(SIGTERM);
    }
  }
}

void Agent::reap() {
  while (true) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    auto it = indexOfPid_.find(pid);
    if (it == indexOfPid_.end()) continue;
    LocalRank& rank = ranks_[it->second];
    rank.running = false;
    --running_;
    // Its output first: tutti-run shows it before the end it reports.
    drainStream(rank, 0);
    drainStream(rank, 1);
    send('X', rank.rank, std::to_string(status));
  }
}

bool Agent::readStream(LocalRank& rank, int stream) {
  UniqueFd& fd = rank.streams[stream];
  if (!fd.valid()) return false;
  ssize_t n;
  do {
    n = ::read(fd.get(), buf_.data(), buf_.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
  if (n <= 0) {
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd.get(), nullptr);
    fd.reset();
    return false;
  }
  send(stream == 0 ? 'O' : 'E', rank.rank,
       std::string_view(buf_.data(), static_cast<std::size_t>(n)));
  return true;
}

void Agent::drainStream(LocalRank& rank, int stream) {
  for (int i = 0; i < kMaxDrainReads && readStream(rank, stream); ++i) {
  }
}

void Agent::supervise() {
  epoll_event events[64];
  while (running_ > 0) {
    if (kill_.expired()) {
      kill_ = Deadline::never();
      stopRanks(SIGKILL);
    }
    if (abandon_.expired()) {
      note(strFormat("%d rank(s) did not exit %g s after SIGKILL; giving up on them", running_,
                     kAbandonAfterSeconds));
      return;
    }
    const Deadline next = Deadline::earliest(kill_, abandon_);
    const int n = ::epoll_wait(epoll_.get(), events, 64, next.pollTimeoutMs());
    if (n < 0) {
      if (errno == EINTR) continue;
      note(systemError("epoll_wait", errno).toString() + "; killing the ranks");
      stopRanks(SIGKILL);
      continue;
    }
    for (int i = 0; i < n; ++i) {
      const std::uint64_t tag = events[i].data.u64;
      if (tag == kSignalTag) {
        onSignals();
      } else if (tag == kStdinTag) {
        onStdin();
      } else {
        readStream(ranks_[static_cast<std::size_t>(tag / 2)], static_cast<int>(tag % 2));
      }
    }
  }
}

int Agent::run() {
  // Before anything can fail: tutti-run reads frames from our stdout, nothing else may go there.
  if (Status s = readJob(); !s.ok()) {
    fail(s);
    return kLauncherErrorExitCode;
  }
  if (Status s = setUpSignals(); !s.ok()) {
    fail(s);
    return kLauncherErrorExitCode;
  }
  if (Status s = spawnAll(); !s.ok()) {
    fail(s.withContext("starting the ranks"));
    stopRanks(SIGKILL);
    supervise();
    return kLauncherErrorExitCode;
  }
  if (Status s = setNonBlocking(STDIN_FILENO); !s.ok()) note(s.toString());
  supervise();
  for (LocalRank& rank : ranks_) {
    drainStream(rank, 0);
    drainStream(rank, 1);
  }
  return 0;
}

}  // namespace

int runAgent() {
  Agent agent;
  return agent.run();
}

}  // namespace tutti::run
