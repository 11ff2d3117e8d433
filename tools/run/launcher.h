#pragma once
// The job supervisor behind tutti-run: serves the rendezvous store, starts N ranks, relays
// their output with rank tags, forwards signals, and applies the failure policy of torchrun
// and mpirun (the first rank to fail names the job's failure; the others get a grace period,
// then SIGTERM, then SIGKILL).

#include <string>
#include <utility>
#include <vector>

#include "run/hosts.h"
#include "run/report.h"
#include "tutti/status.h"

namespace tutti::run {

/// Most ranks one tutti-run starts (the store serves at most this many clients).
inline constexpr int kMaxRanks = 4096;
/// Seconds between SIGTERM and SIGKILL when tutti-run stops ranks.
inline constexpr double kKillAfterSeconds = 2;
/// Seconds tutti-run waits for ranks to disappear after SIGKILL before giving up on them
/// (a process stuck in uninterruptible sleep); such ranks are reported as never exited.
inline constexpr double kAbandonAfterSeconds = 5;

struct LaunchOptions {
  /// Number of ranks, 1..kMaxRanks.
  int numRanks = 1;
  /// Bound on the whole job in seconds; 0 means none.
  double timeoutSeconds = 0;
  /// After the first failure, seconds the other ranks get to end on their own.
  double graceSeconds = 3;
  /// Address the store listens on ("" = every interface).
  std::string bindHost = "127.0.0.1";
  /// "none": ranks run wherever the kernel puts them; "block": each rank is bound to one
  /// CPU of tutti-run's own, consecutive ranks sharing a CPU when they outnumber them
  /// (cpuForRank in spawn.h); "auto": block where the ranks outnumber those CPUs and split
  /// evenly among them (autoBinds in spawn.h), none otherwise. 4 and 8 ranks on 2 cores
  /// bound, normal scheduler: 8-byte all-reduce 0.85-0.88 of the unbound time, 16 MiB
  /// 0.87-0.98 (compare.sh: faster at 8 B, level at 16 MiB); 3 ranks (two on one core, one
  /// alone) 1.07-1.14 slower at 1 and 16 MiB, hence even splits only (docs/performance.md).
  std::string cpuBind = "auto";
  /// Prefix every output line with "[rank] ".
  bool tagOutput = true;
  /// Report the store address, job id, pids and every exit on stderr.
  bool verbose = false;
  /// -x NAME=VALUE assignments, applied over the inherited environment.
  std::vector<std::pair<std::string, std::string>> extraEnv;
  /// tutti-run's own environment ("NAME=VALUE"), passed on to every rank.
  std::vector<std::string> inheritedEnv;
  /// The program and its arguments.
  std::vector<std::string> command;
  /// --hosts: the hosts and their ranks (numRanks is their total); empty: every rank on
  /// this host, started directly. With hosts, one agent per host (`tutti-run --agent`,
  /// agent.h) is started through `launcherWords` and starts that host's ranks.
  std::vector<HostSlots> hosts;
  /// The launch command template split into words (splitTemplate() in hosts.h); "{host}"
  /// in a word is replaced by the host's name.
  std::vector<std::string> launcherWords;
  /// With hosts: serve the store on pickStoreHost() (--bind was not given).
  bool pickStoreHost = false;
};

/// Checks the options: rank count in range, non-negative timeout and grace, a program, and
/// -x names that are well formed and not among the variables tutti-run sets itself.
/// kInvalidArgument naming the bad option otherwise.
Status validateOptions(const LaunchOptions& options);

/// Runs one job to its end and returns the exit status tutti-run should exit with (see
/// jobExitCode() in report.h): 0 when every rank succeeded, the first failure's status,
/// 124 on timeout, 128 + signal when interrupted. Rank output goes to this process's
/// stdout/stderr; launcher messages and the failure summary go to stderr.
///
/// Blocks until every rank has been reaped, bounded by --timeout (when given) plus the
/// stop sequence; a job without --timeout lasts as long as its ranks. Must be called from
/// the main thread of a process that runs one job at a time: it blocks SIGCHLD, SIGINT,
/// SIGTERM and SIGHUP and ignores SIGPIPE while it runs (restoring them afterwards).
///
/// Errors (the job could not start: invalid options, the store, pipes, fork, the
/// file-descriptor limit) are returned after any rank already started has been killed.
Result<int> runJob(const LaunchOptions& options);

}  // namespace tutti::run
