#pragma once
// Starting one rank: resolving the program on PATH, building each rank's environment, and
// fork + exec with the child set up as tutti-run needs it (own process group, killed with
// the launcher, output through pipes, stdin from /dev/null).

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "base/fd.h"
#include "tutti/status.h"

namespace tutti::run {

/// Exit status of a child that could not execute the program (as the shells use).
inline constexpr int kExecFailedExitCode = 127;

/// The environment every rank starts from: tutti-run's own environment (passed through
/// unchanged, as mpirun and torchrun do), then the -x overrides.
class JobEnvironment {
 public:
  /// `inherited` holds "NAME=VALUE" strings; `extra` the -x assignments, which win.
  JobEnvironment(const std::vector<std::string>& inherited,
                 const std::vector<std::pair<std::string, std::string>>& extra);

  /// The value of `name` in the rank environment, or "" when absent.
  std::string value(const std::string& name) const;

  /// "NAME=VALUE" strings for one rank: the base environment plus TUTTI_RANK,
  /// TUTTI_WORLD_SIZE, TUTTI_LOCAL_RANK, TUTTI_LOCAL_WORLD_SIZE, TUTTI_STORE_ADDR,
  /// TUTTI_JOB_ID (all ranks run on this host, so local rank = rank) and TUTTI_SECRET, the
  /// job secret: the environment is the only place a secret goes (never a command line).
  std::vector<std::string> forRank(int rank, int worldSize, const std::string& storeAddress,
                                   const std::string& jobId, const std::string& secret) const {
    return forRank(rank, worldSize, rank, worldSize, storeAddress, jobId, secret);
  }

  /// The same for a rank that shares its host with `localSize` ranks (tutti-run --hosts).
  std::vector<std::string> forRank(int rank, int worldSize, int localRank, int localSize,
                                   const std::string& storeAddress, const std::string& jobId,
                                   const std::string& secret) const;

  /// The variables tutti-run decides per rank; -x may not set them, and inherited values
  /// are dropped. TUTTI_SECRET_FILE is among them: a rank gets tutti-run's secret only.
  static const std::vector<std::string>& launcherVariables();

 private:
  std::map<std::string, std::string> vars_;
};

/// Everything exec needs, worked out before fork: after fork in a process with threads (the
/// store server runs one) the child may only make async-signal-safe calls.
struct ExecPlan {
  /// Paths to try in order: the program itself when it contains '/', else each PATH entry.
  std::vector<std::string> candidates;
  /// argv[0] is the program as the user typed it.
  std::vector<std::string> argv;
};

/// Resolves `command` (program and arguments) against `path` (a PATH value; "" means the
/// default "/bin:/usr/bin"). Fails only on an empty command: a program that cannot be
/// executed is reported by the child, per rank, with exit status 127.
Result<ExecPlan> planExec(const std::vector<std::string>& command, const std::string& path);

/// A started rank and the read ends of its stdout/stderr pipes (non-blocking, close-on-exec).
struct SpawnedRank {
  pid_t pid = -1;
  UniqueFd stdoutRead;
  UniqueFd stderrRead;
};

/// The CPU `rank` of `ranks` is bound to with --cpu-bind block: the ranks split into
/// consecutive blocks of (nearly) equal size, one block per CPU of `cpus`, so that
/// neighbouring ranks share a core when ranks outnumber cores (ranks 0-1 on the first CPU,
/// 2-3 on the second for 4 ranks on 2). One rank per CPU when there are enough. -1 when
/// `cpus` is empty.
int cpuForRank(int rank, int ranks, const std::vector<int>& cpus);

/// Whether --cpu-bind auto binds `ranks` ranks to `cpus` CPUs as block does: when the ranks
/// outnumber the CPUs and split evenly among them (every CPU then runs the same number of
/// ranks, and consecutive ranks hand the core to each other). An uneven split would leave
/// one core with more ranks than another for the whole job; the kernel balances them better.
bool autoBinds(int ranks, std::size_t cpus);

/// Forks and execs one rank with environment `env`. In the child: a new process group led by
/// the child (so that signals reach the rank and what it starts), PR_SET_PDEATHSIG=SIGKILL
/// (the rank dies if tutti-run dies), an empty signal mask, default SIGPIPE, stdin from
/// `devNull`, stdout/stderr into the pipes. When no candidate can be executed the child
/// writes the reason to its stderr and exits with kExecFailedExitCode. Errors: pipe() or
/// fork() failing (kSystemError). Must be called from the thread that lives as long as the
/// job, because the kernel delivers PDEATHSIG when the forking *thread* exits. `cpu` >= 0:
/// the child is bound to that CPU before exec (a failure to bind is written to its stderr
/// and the rank runs unbound).
Result<SpawnedRank> spawnRank(const ExecPlan& plan, const std::vector<std::string>& env,
                              int devNull, int cpu = -1);

}  // namespace tutti::run
