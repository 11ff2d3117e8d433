#pragma once
// Running real programs from tests (tutti-run and the helpers it starts): a child process
// with stdout and stderr captured through pipes, in its own process group, and every wait
// bounded by a deadline so that a misbehaving program can never hang the test suite.

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/fd.h"
#include "tutti/deadline.h"
#include "tutti/status.h"

namespace tutti::test {

/// How a process ended, as waitpid() reported it.
struct ProcessResult {
  std::string out;         ///< everything it wrote on stdout
  std::string err;         ///< everything it wrote on stderr
  int waitStatus = 0;      ///< raw waitpid() status (valid unless timedOut)
  bool timedOut = false;   ///< the outer deadline passed and the test killed it
  /// Exit status, 128 + signal when killed, or -1 after timedOut.
  int exitCode() const;
};

/// A running child. Not thread-safe. The destructor kills its process group (SIGKILL) and
/// reaps it if it is still running.
class Subprocess {
 public:
  /// Starts argv[0] (a path) with argv, in a new process group, stdin from /dev/null.
  /// kSystemError if the process cannot be created; a program that cannot be executed
  /// exits 127.
  static Result<std::unique_ptr<Subprocess>> start(const std::vector<std::string>& argv);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  pid_t pid() const { return pid_; }
  /// Output captured so far.
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

  /// Reads output until `done(out, err)` holds, the process has closed its output, or
  /// `deadline` passes. Returns whether `done` held.
  bool readUntil(const std::function<bool(const std::string&, const std::string&)>& done,
                 Deadline deadline);

  /// Sends `sig` to the process (not its group).
  void sendSignal(int sig);

  /// Reads output until the process exits and closes its pipes, or `deadline` passes, in
  /// which case its process group is killed (SIGKILL) and the result says timedOut.
  ProcessResult wait(Deadline deadline);

 private:
  Subprocess() = default;
  // Polls the pipes (and the pidfd) once for at most `deadline`; returns false when
  // nothing more can happen (pipes closed and process exited).
  bool pumpOnce(Deadline deadline);
  void killAndReap();

  pid_t pid_ = -1;
  bool reaped_ = false;
  int waitStatus_ = 0;
  UniqueFd outFd_;
  UniqueFd errFd_;
  UniqueFd pidFd_;
  std::string out_;
  std::string err_;
};

/// Runs argv to completion with an outer bound of `timeoutSeconds`.
ProcessResult runProcess(const std::vector<std::string>& argv, double timeoutSeconds);

/// Splits text into lines (without their '\n'); a trailing partial line is included.
std::vector<std::string> splitLines(const std::string& text);

/// How many lines of `text` contain `needle`.
int countLines(const std::string& text, const std::string& needle);

}  // namespace tutti::test
