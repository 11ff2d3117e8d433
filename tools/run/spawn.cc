#include "run/spawn.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/assert.h"
#include "base/macros.h"
#include "base/net.h"
#include "base/strings.h"

namespace tutti::run {
namespace {

// What the child needs, as raw pointers into memory prepared by the parent.
struct ChildSetup {
  pid_t parentPid;
  int devNull;
  int stdoutWrite;
  int stderrWrite;
  const std::vector<const char*>* candidates;
  char* const* argv;
  char* const* envp;
  bool bind;        // set the affinity to `cpus` before exec
  cpu_set_t cpus;
};

// Appends `text` to buf[*len..cap) without overflowing (async-signal-safe: no allocation).
void appendRaw(char* buf, std::size_t cap, std::size_t* len, const char* text) {
  while (*text != '\0' && *len + 1 < cap) buf[(*len)++] = *text++;
}

// Errors after which execvp(3) keeps searching PATH: the file is not at this entry.
bool tryNextCandidate(int err) {
  return err == ENOENT || err == ENOTDIR || err == ESTALE || err == ENODEV || err == ETIMEDOUT;
}

// Runs in the child between fork and exec. Only async-signal-safe calls are allowed here:
// the parent has other threads, whose locks (malloc's included) may be held forever.
[[noreturn]] void execChild(const ChildSetup& s) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The launcher may have died before prctl took effect; then no signal will ever come.
  if (::getppid() != s.parentPid) ::_exit(kExecFailedExitCode);
  // The launcher blocks the signals it reads through signalfd and ignores SIGPIPE; a rank
  // starts with the ordinary defaults (ignored dispositions survive exec, masks too).
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::signal(SIGPIPE, SIG_DFL);
  if (::dup2(s.devNull, STDIN_FILENO) < 0 || ::dup2(s.stdoutWrite, STDOUT_FILENO) < 0 ||
      ::dup2(s.stderrWrite, STDERR_FILENO) < 0) {
    ::_exit(kExecFailedExitCode);
  }
  if (s.bind && ::sched_setaffinity(0, sizeof(s.cpus), &s.cpus) != 0) {
    static const char kNote[] = "tutti-run: could not bind this rank to its CPU; it runs unbound\n";
    [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kNote, sizeof(kNote) - 1);
  }
  int err = ENOENT;
  bool sawAccess = false;
  for (const char* path : *s.candidates) {
    ::execve(path, s.argv, s.envp);
    err = errno;
    if (err == EACCES) sawAccess = true;
    if (!tryNextCandidate(err) && err != EACCES) break;
  }
  // As execvp: a PATH entry we could not access explains "not found" better than ENOENT.
  if (sawAccess && tryNextCandidate(err)) err = EACCES;
  char msg[1024];
  std::size_t len = 0;
  appendRaw(msg, sizeof(msg), &len, "tutti-run: cannot execute '");
  appendRaw(msg, sizeof(msg), &len, s.argv[0]);
  appendRaw(msg, sizeof(msg), &len, "': ");
  const char* reason = strerrordesc_np(err);
  appendRaw(msg, sizeof(msg), &len, reason != nullptr ? reason : "unknown error");
  appendRaw(msg, sizeof(msg), &len, "\n");
  ssize_t ignored = ::write(STDERR_FILENO, msg, len);
  (void)ignored;
  ::_exit(kExecFailedExitCode);
}

Status makePipe(UniqueFd* readEnd, UniqueFd* writeEnd) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return systemError("pipe2", errno, "rank output pipe");
  readEnd->reset(fds[0]);
  writeEnd->reset(fds[1]);
  return setNonBlocking(readEnd->get());
}

std::vector<char*> cStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

}  // namespace

JobEnvironment::JobEnvironment(const std::vector<std::string>& inherited,
                               const std::vector<std::pair<std::string, std::string>>& extra) {
  for (const std::string& entry : inherited) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;  // malformed entries are not passed on
    vars_.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  // A rank must never see the coordinates of an enclosing job (tutti-run started by a rank
  // of another tutti-run); forRank() sets them afresh.
  for (const std::string& name : launcherVariables()) vars_.erase(name);
  for (const auto& [name, value] : extra) vars_[name] = value;
}

std::string JobEnvironment::value(const std::string& name) const {
  auto it = vars_.find(name);
  return it == vars_.end() ? std::string() : it->second;
}

const std::vector<std::string>& JobEnvironment::launcherVariables() {
  static const std::vector<std::string> names = {
      "TUTTI_RANK",       "TUTTI_WORLD_SIZE", "TUTTI_LOCAL_RANK", "TUTTI_LOCAL_WORLD_SIZE",
      "TUTTI_STORE_ADDR", "TUTTI_JOB_ID",     "TUTTI_SECRET",     "TUTTI_SECRET_FILE"};
  return names;
}

std::vector<std::string> JobEnvironment::forRank(int rank, int worldSize, int localRank,
                                                 int localSize,
                                                 const std::string& storeAddress,
                                                 const std::string& jobId,
                                                 const std::string& secret) const {
  std::vector<std::string> env;
  env.reserve(vars_.size() + launcherVariables().size());
  for (const auto& [name, value] : vars_) env.push_back(name + "=" + value);
  env.push_back(strFormat("TUTTI_RANK=%d", rank));
  env.push_back(strFormat("TUTTI_WORLD_SIZE=%d", worldSize));
  env.push_back(strFormat("TUTTI_LOCAL_RANK=%d", localRank));
  env.push_back(strFormat("TUTTI_LOCAL_WORLD_SIZE=%d", localSize));
  env.push_back("TUTTI_STORE_ADDR=" + storeAddress);
  env.push_back("TUTTI_JOB_ID=" + jobId);
  env.push_back("TUTTI_SECRET=" + secret);
  return env;
}

Result<ExecPlan> planExec(const std::vector<std::string>& command, const std::string& path) {
  TUTTI_CHECK_ARG(!command.empty() && !command[0].empty(), "no program to run was given");
  ExecPlan plan;
  plan.argv = command;
  const std::string& program = command[0];
  if (program.find('/') != std::string::npos) {
    plan.candidates.push_back(program);
    return plan;
  }
  const std::string searchPath = path.empty() ? "/bin:/usr/bin" : path;
  for (const std::string& dir : splitString(searchPath, ':')) {
    // An empty PATH entry means the current directory.
    plan.candidates.push_back((dir.empty() ? "." : dir) + "/" + program);
  }
  return plan;
}

bool autoBinds(int ranks, std::size_t cpus) {
  return cpus > 0 && ranks > 0 && static_cast<std::size_t>(ranks) > cpus &&
         static_cast<std::size_t>(ranks) % cpus == 0;
}

int cpuForRank(int rank, int ranks, const std::vector<int>& cpus) {
  if (cpus.empty() || ranks <= 0) return -1;
  const auto n = static_cast<long long>(cpus.size());
  const auto index = static_cast<std::size_t>(static_cast<long long>(rank) * n / ranks);
  return cpus[std::min(index, cpus.size() - 1)];
}

Result<SpawnedRank> spawnRank(const ExecPlan& plan, const std::vector<std::string>& env,
                              int devNull, int cpu) {
  TUTTI_ASSERT(!plan.candidates.empty());
  SpawnedRank rank;
  UniqueFd stdoutWrite;
  UniqueFd stderrWrite;
  TUTTI_RETURN_IF_ERROR(makePipe(&rank.stdoutRead, &stdoutWrite));
  TUTTI_RETURN_IF_ERROR(makePipe(&rank.stderrRead, &stderrWrite));

  // Everything the child touches is built now; it only reads it.
  std::vector<const char*> candidates;
  for (const std::string& c : plan.candidates) candidates.push_back(c.c_str());
  std::vector<char*> argv = cStrings(plan.argv);
  std::vector<char*> envp = cStrings(env);
  ChildSetup setup{::getpid(), devNull,        stdoutWrite.get(), stderrWrite.get(),
                   &candidates, argv.data(), envp.data(), cpu >= 0, {}};
  CPU_ZERO(&setup.cpus);
  if (cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, &setup.cpus);
  setup.bind = cpu >= 0 && cpu < CPU_SETSIZE;

  const pid_t pid = ::fork();
  if (pid < 0) return systemError("fork", errno, "starting a rank");
  if (pid == 0) execChild(setup);
  // Also set the group from the parent, so that it exists before we ever signal it
  // whichever process runs first. EACCES: the child has exec'd (and set it already).
  if (::setpgid(pid, pid) != 0) {
    const int err = errno;
    // ESRCH: the child has already exited. Anything else is a bug in this file.
    TUTTI_ASSERT(err == EACCES || err == ESRCH);
  }
  rank.pid = pid;
  return rank;
}

}  // namespace tutti::run
