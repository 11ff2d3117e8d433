// The agents of tutti-run --hosts (job.h): one per host, started through the launch
// command, fed the job on its stdin, its frames relayed, its exit judged.

#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "base/assert.h"
#include "base/macros.h"
#include "base/net.h"
#include "base/strings.h"
#include "run/agent_protocol.h"
#include "run/hosts.h"
#include "run/job.h"

namespace tutti::run::detail {

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

}  // namespace tutti::run::detail
