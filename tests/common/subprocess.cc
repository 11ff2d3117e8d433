#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/macros.h"
#include "base/net.h"

namespace tutti::test {
namespace {

// Reads what is available on a non-blocking pipe into `sink`; closes it at EOF or error.
void readAvailable(UniqueFd* fd, std::string* sink) {
  char buf[65536];
  while (fd->valid()) {
    const ssize_t n = ::read(fd->get(), buf, sizeof(buf));
    if (n > 0) {
      sink->append(buf, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    fd->reset();  // EOF or error
  }
}

}  // namespace

int ProcessResult::exitCode() const {
  if (timedOut) return -1;
  if (WIFEXITED(waitStatus)) return WEXITSTATUS(waitStatus);
  if (WIFSIGNALED(waitStatus)) return 128 + WTERMSIG(waitStatus);
  return -1;
}

Result<std::unique_ptr<Subprocess>> Subprocess::start(const std::vector<std::string>& argv) {
  int outPipe[2];
  int errPipe[2];
  if (::pipe2(outPipe, O_CLOEXEC) != 0) return systemError("pipe2", errno);
  UniqueFd outRead(outPipe[0]), outWrite(outPipe[1]);
  if (::pipe2(errPipe, O_CLOEXEC) != 0) return systemError("pipe2", errno);
  UniqueFd errRead(errPipe[0]), errWrite(errPipe[1]);
  UniqueFd devNull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  std::vector<char*> cargv;
  for (const std::string& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) return systemError("fork", errno);
  if (pid == 0) {
    // Own group, so that a timeout can kill the whole tree the test started.
    ::setpgid(0, 0);
    ::dup2(devNull.get(), STDIN_FILENO);
    ::dup2(outWrite.get(), STDOUT_FILENO);
    ::dup2(errWrite.get(), STDERR_FILENO);
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that the group exists whichever runs first
  std::unique_ptr<Subprocess> p(new Subprocess());
  p->pid_ = pid;
  p->outFd_ = std::move(outRead);
  p->errFd_ = std::move(errRead);
  // A pidfd becomes readable when the process exits, so exit is awaited in poll() too.
  p->pidFd_.reset(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!p->pidFd_.valid()) return systemError("pidfd_open", errno);
  TUTTI_RETURN_IF_ERROR(setNonBlocking(p->outFd_.get()));
  TUTTI_RETURN_IF_ERROR(setNonBlocking(p->errFd_.get()));
  return p;
}

Subprocess::~Subprocess() { killAndReap(); }

void Subprocess::killAndReap() {
  if (reaped_ || pid_ < 0) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  // SIGKILL cannot be caught, so this wait ends as soon as the kernel tears it down.
  while (::waitpid(pid_, &waitStatus_, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
}

void Subprocess::sendSignal(int sig) {
  if (!reaped_) ::kill(pid_, sig);
}

bool Subprocess::pumpOnce(Deadline deadline) {
  if (!reaped_) {
    const pid_t r = ::waitpid(pid_, &waitStatus_, WNOHANG);
    if (r == pid_) reaped_ = true;
  }
  if (reaped_ && !outFd_.valid() && !errFd_.valid()) return false;
  pollfd fds[3];
  nfds_t n = 0;
  if (outFd_.valid()) fds[n++] = {outFd_.get(), POLLIN, 0};
  if (errFd_.valid()) fds[n++] = {errFd_.get(), POLLIN, 0};
  if (!reaped_) fds[n++] = {pidFd_.get(), POLLIN, 0};
  const int rc = ::poll(fds, n, deadline.pollTimeoutMs());
  if (rc < 0 && errno != EINTR) return false;
  readAvailable(&outFd_, &out_);
  readAvailable(&errFd_, &err_);
  return true;
}

bool Subprocess::readUntil(
    const std::function<bool(const std::string&, const std::string&)>& done, Deadline deadline) {
  while (!done(out_, err_)) {
    if (deadline.expired() || !pumpOnce(deadline)) return done(out_, err_);
  }
  return true;
}

ProcessResult Subprocess::wait(Deadline deadline) {
  ProcessResult result;
  while (!deadline.expired() && pumpOnce(deadline)) {
  }
  if (!reaped_ || outFd_.valid() || errFd_.valid()) {
    result.timedOut = true;
    killAndReap();
    // Collect what the killed tree had written; its pipes close as it dies.
    readAvailable(&outFd_, &out_);
    readAvailable(&errFd_, &err_);
  }
  result.waitStatus = waitStatus_;
  result.out = out_;
  result.err = err_;
  return result;
}

ProcessResult runProcess(const std::vector<std::string>& argv, double timeoutSeconds) {
  auto process = Subprocess::start(argv);
  if (!process.ok()) {
    ProcessResult failed;
    failed.timedOut = true;
    failed.err = process.status().toString();
    return failed;
  }
  return (*process)->wait(Deadline::afterSeconds(timeoutSeconds));
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

int countLines(const std::string& text, const std::string& needle) {
  int n = 0;
  for (const std::string& line : splitLines(text))
    if (line.find(needle) != std::string::npos) ++n;
  return n;
}

}  // namespace tutti::test
