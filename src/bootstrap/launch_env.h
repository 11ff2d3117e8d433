#pragma once
// LaunchEnv: who am I and where is the store, as told by whichever launcher started us:
// tutti-run, torchrun, Open MPI's mpirun, MPICH's hydra (PMI) or Slurm's srun.

#include <string>

#include "base/config.h"
#include "base/net.h"

namespace tutti {

enum class Launcher { kTuttiRun, kTorchrun, kOpenMpi, kPmi, kSlurm };
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
  std::string jobId;

  /// Reads the configuration snapshot. Precedence: tutti-run (TUTTI_RANK), torchrun
  /// (RANK/WORLD_SIZE), Open MPI (OMPI_COMM_WORLD_*), PMI (PMI_RANK/PMI_SIZE), Slurm
  /// (SLURM_PROCID/SLURM_NTASKS). The store address is TUTTI_STORE_ADDR when set; under
  /// torchrun MASTER_ADDR:(MASTER_PORT+1), because torch's own store holds MASTER_PORT;
  /// otherwise MASTER_ADDR:MASTER_PORT. Errors name the variable that is missing or bad.
  static Result<LaunchEnv> detect(const Config& config);
};

}  // namespace tutti
