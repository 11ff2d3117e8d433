#pragma once
// LaunchEnv: who am I and where is the store, as told by whichever launcher started us:
// tutti-run, torchrun, Open MPI's mpirun, MPICH's hydra (PMI) or Slurm's srun.

#include <string>

#include "base/config.h"
#include "base/net.h"

namespace tutti {

/// The launcher a process was started by; kNone when no launcher's variables are set.
enum class Launcher { kTuttiRun, kTorchrun, kOpenMpi, kPmi, kSlurm, kNone };
/// "tutti-run", "torchrun", "Open MPI", "PMI", "Slurm", or "none".
const char* launcherName(Launcher launcher);

struct LaunchEnv {
  Launcher launcher = Launcher::kTuttiRun;
  int rank = 0;
  int size = 1;
  int localRank = 0;
  int localSize = 1;
  /// Where the store is (or must be served).
  HostPort storeAddress;
  /// True when this process must serve the store itself (rank 0 under launchers other
  /// than tutti-run, which serves it for everyone).
  bool serveStore = false;
  /// TUTTI_JOB_ID, else SLURM_JOB_ID under Slurm, else empty.
  std::string jobId;

  /// Reads the configuration snapshot. Precedence: tutti-run (TUTTI_RANK), torchrun
  /// (RANK/WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_*), PMI (PMI_RANK/PMI_SIZE), Slurm
  /// (SLURM_PROCID/SLURM_NTASKS). The store address is TUTTI_STORE_ADDR when set; under
  /// torchrun MASTER_ADDR:(MASTER_PORT+1), because torch's own store holds MASTER_PORT;
  /// otherwise MASTER_ADDR:MASTER_PORT. Errors name the variable that is missing or bad.
  ///
  /// Details and defaults:
  /// - The launcher is chosen by its rank variable; its size variable must then be set too.
  ///   Ranks and sizes must be decimal integers with size >= 1 and 0 <= rank < size, and
  ///   0 <= local rank < local size <= size.
  /// - Local rank and size come from the launcher's local variables (TUTTI_LOCAL_*,
  ///   LOCAL_RANK/LOCAL_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_*, MPI_LOCALRANKID/MPI_LOCALNRANKS;
  ///   under Slurm SLURM_LOCALID, with the local size read from SLURM_STEP_TASKS_PER_NODE
  ///   at index SLURM_NODEID, e.g. "4(x2),3" means 4, 4 and 3 tasks). When they are absent
  ///   the host's share is unknowable, and localRank = 0, localSize = 1 is used: every rank
  ///   then counts as alone on its host, which is always correct, only slower (no
  ///   shared-memory shortcuts). This is logged at INFO.
  /// - serveStore is false under tutti-run (it serves the store) and true on rank 0 under
  ///   every other launcher.
  /// - A one-rank job needs no rendezvous: without a store address it serves its own store
  ///   on 127.0.0.1 port 0 (serveStore = true).
  /// - With no launcher detected at all the process is a one-rank job: launcher kNone,
  ///   rank 0 of 1, serving its store on TUTTI_STORE_ADDR if set, else 127.0.0.1 port 0.
  /// - A job of more than one rank with no store address is kInvalidArgument explaining to
  ///   set TUTTI_STORE_ADDR=host:port (a host of rank 0's machine).
  static Result<LaunchEnv> detect(const Config& config);

  /// "rank 2/8 (local 0/4) launched by Slurm, store 10.0.0.1:29500 (served here)".
  std::string toString() const;
};

namespace detail {
/// The task count of node `nodeId` in a SLURM_STEP_TASKS_PER_NODE value such as
/// "4(x2),3" (nodes 0 and 1 run 4 tasks, node 2 runs 3). Repeats are walked, never
/// expanded, so a huge repeat count costs nothing. kInvalidArgument naming the variables
/// when the text does not parse or nodeId is outside it.
Result<int> slurmTasksOnNode(const std::string& tasksPerNode, int nodeId);
}  // namespace detail

}  // namespace tutti
