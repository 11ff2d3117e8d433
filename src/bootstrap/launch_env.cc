// LaunchEnv::detect: reads each launcher's variables from the Config snapshot (never from
// the environment directly) and validates them, naming the variable in every error.
//
// Launchers are described as data (one Source row each) so that precedence is the order of
// a table and every launcher goes through the same validation. A misconfigured launch is
// the commonest start-up failure on a cluster; an error naming the variable and its value
// saves the user from guessing which of five launchers' conventions applied.

#include "bootstrap/launch_env.h"

#include <charconv>
#include <climits>
#include <optional>
#include <string_view>

#include "base/log.h"
#include "base/macros.h"
#include "base/strings.h"

namespace tutti {
namespace {

// One launcher's rank, size and local variables, by name and value.
struct Source {
  Launcher launcher;
  const char* rankName;
  const std::string& rank;
  const char* sizeName;
  const std::string& size;
  const char* localRankName;
  const std::string& localRank;
  const char* localSizeName;  // nullptr: Slurm, whose local size is computed
  const std::string& localSize;
};

Status invalid(std::string message) {
  return Status(ErrorCode::kInvalidArgument, std::move(message));
}

// A rank-like integer; the error names the variable and quotes what it held.
Result<int> parseIntVar(const char* name, const std::string& text) {
  std::optional<std::int64_t> v = parseInt(text);
  if (!v) return invalid(strFormat("%s='%s' is not an integer", name, text.c_str()));
  if (*v < INT_MIN || *v > INT_MAX)
    return invalid(strFormat("%s=%s is out of range", name, text.c_str()));
  return static_cast<int>(*v);
}

// A strictly decimal count >= 1 (no sign, no spaces), as Slurm writes them.
std::optional<int> parseCount(std::string_view text) {
  int v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty() || text[0] == '-' ||
      v < 1)
    return std::nullopt;
  return v;
}

// Rank and size are mandatory once a launcher is detected: a rank without a size cannot be
// checked, and guessing the size would hang every rank at rendezvous instead of failing.
Status readRankSize(const Source& s, LaunchEnv* env) {
  if (s.size.empty())
    return invalid(strFormat("%s is set (%s), so %s launched this process, but %s is not set",
                             s.rankName, s.rank.c_str(), launcherName(s.launcher), s.sizeName));
  TUTTI_ASSIGN_OR_RETURN(env->rank, parseIntVar(s.rankName, s.rank));
  TUTTI_ASSIGN_OR_RETURN(env->size, parseIntVar(s.sizeName, s.size));
  if (env->size < 1)
    return invalid(strFormat("%s=%d: a job has at least 1 rank", s.sizeName, env->size));
  if (env->rank < 0 || env->rank >= env->size)
    return invalid(strFormat("%s=%d is out of range for %s=%d (need 0 <= rank < size)", s.rankName,
                             env->rank, s.sizeName, env->size));
  return Status::Ok();
}

// Sets the local rank and size; `localSize` is empty when the launcher did not tell it.
Status applyLocal(const char* localRankName, const std::string& localRankText,
                  std::optional<int> localSize, const std::string& localSizeWhat, LaunchEnv* env) {
  if (localRankText.empty() || !localSize) {
    TUTTI_INFO(kBootstrap, "%s and %s are not both known: treating rank %d as alone on its host",
               localRankName, localSizeWhat.c_str(), env->rank);
    env->localRank = 0;
    env->localSize = 1;
    return Status::Ok();
  }
  TUTTI_ASSIGN_OR_RETURN(int localRank, parseIntVar(localRankName, localRankText));
  if (*localSize < 1 || *localSize > env->size)
    return invalid(strFormat("%s=%d: ranks on a host must number between 1 and the job size %d",
                             localSizeWhat.c_str(), *localSize, env->size));
  if (localRank < 0 || localRank >= *localSize)
    return invalid(strFormat("%s=%d is out of range for %s=%d (need 0 <= local rank < local size)",
                             localRankName, localRank, localSizeWhat.c_str(), *localSize));
  env->localRank = localRank;
  env->localSize = *localSize;
  return Status::Ok();
}

// Local rank and size from the launcher's own variables, or Slurm's task layout.
Status readLocal(const Source& s, const Config& config, LaunchEnv* env) {
  if (s.localSizeName != nullptr) {
    std::optional<int> localSize;
    if (!s.localSize.empty()) {
      TUTTI_ASSIGN_OR_RETURN(localSize, parseIntVar(s.localSizeName, s.localSize));
    }
    return applyLocal(s.localRankName, s.localRank, localSize, s.localSizeName, env);
  }
  // Slurm gives no local size, only the step's task layout and this node's index in it.
  const std::string& layout = config.slurmStepTasksPerNode;
  std::string what = "SLURM_STEP_TASKS_PER_NODE at SLURM_NODEID";
  std::optional<int> localSize;
  if (!layout.empty() && !config.slurmNodeId.empty()) {
    TUTTI_ASSIGN_OR_RETURN(int nodeId, parseIntVar("SLURM_NODEID", config.slurmNodeId));
    TUTTI_ASSIGN_OR_RETURN(localSize, detail::slurmTasksOnNode(layout, nodeId));
    what = strFormat("SLURM_STEP_TASKS_PER_NODE='%s' at SLURM_NODEID=%d", layout.c_str(), nodeId);
  }
  return applyLocal("SLURM_LOCALID", s.localRank, localSize, what, env);
}

// Chooses the store address and whether this process serves it.
Status resolveStore(const Config& config, LaunchEnv* env) {
  bool torch = env->launcher == Launcher::kTorchrun;
  if (!config.storeAddr.empty()) {
    Result<HostPort> addr = parseHostPort(config.storeAddr);
    if (!addr.ok()) return invalid("TUTTI_STORE_ADDR: " + addr.status().message());
    env->storeAddress = std::move(addr).value();
  } else if (!config.masterAddr.empty() || !config.masterPort.empty()) {
    if (config.masterAddr.empty())
      return invalid(
          strFormat("MASTER_PORT is set (%s) but MASTER_ADDR is not", config.masterPort.c_str()));
    if (config.masterPort.empty())
      return invalid(
          strFormat("MASTER_ADDR is set (%s) but MASTER_PORT is not", config.masterAddr.c_str()));
    TUTTI_ASSIGN_OR_RETURN(int port, parseIntVar("MASTER_PORT", config.masterPort));
    // torch's own store holds MASTER_PORT, so ours takes the next port, which must exist.
    int maxPort = torch ? 65534 : 65535;
    if (port < 1 || port > maxPort)
      return invalid(strFormat("MASTER_PORT=%d is not a usable port (1..%d%s)", port, maxPort,
                               torch ? "; tutti's store goes on MASTER_PORT+1" : ""));
    env->storeAddress =
        HostPort{config.masterAddr, static_cast<std::uint16_t>(port + (torch ? 1 : 0))};
  } else if (env->size == 1) {
    // A one-rank job has nobody to meet: it serves a private store on an ephemeral port.
    env->storeAddress = HostPort{"127.0.0.1", 0};
    env->serveStore = true;
    return Status::Ok();
  } else {
    return invalid(
        strFormat("no store address for this %d-rank job launched by %s: set "
                  "TUTTI_STORE_ADDR=host:port to an address on rank 0's host "
                  "(rank 0 serves the store there and the other ranks connect to it)",
                  env->size, launcherName(env->launcher)));
  }
  env->serveStore = env->launcher != Launcher::kTuttiRun && env->rank == 0;
  return Status::Ok();
}

}  // namespace

const char* launcherName(Launcher launcher) {
  switch (launcher) {
    case Launcher::kTuttiRun:
      return "tutti-run";
    case Launcher::kTorchrun:
      return "torchrun";
    case Launcher::kOpenMpi:
      return "Open MPI";
    case Launcher::kPmi:
      return "PMI";
    case Launcher::kSlurm:
      return "Slurm";
    case Launcher::kNone:
      return "none";
  }
  return "unknown";
}

namespace detail {

Result<int> slurmTasksOnNode(const std::string& tasksPerNode, int nodeId) {
  // Slurm's compressed form: comma-separated items "N" or "N(xR)" (N tasks on each of R
  // consecutive nodes). Strict digits only, as Slurm writes them; anything else is refused
  // rather than half-understood.
  auto bad = [&](const char* why) {
    return invalid(
        strFormat("SLURM_STEP_TASKS_PER_NODE='%s' does not parse: %s (expected e.g. 4(x2),3)",
                  tasksPerNode.c_str(), why));
  };
  if (nodeId < 0) return invalid(strFormat("SLURM_NODEID=%d is negative", nodeId));
  std::int64_t firstNode = 0;  // index of the first node the current item describes
  std::optional<int> found;
  for (const std::string& item : splitString(tasksPerNode, ',')) {
    std::string_view text = item;
    std::int64_t repeat = 1;
    auto paren = text.find('(');
    if (paren != std::string_view::npos) {
      std::string_view rep = text.substr(paren);
      if (rep.size() < 4 || rep.substr(0, 2) != "(x" || rep.back() != ')')
        return bad("a repeat must look like (xN)");
      std::optional<int> n = parseCount(rep.substr(2, rep.size() - 3));
      if (!n) return bad("a repeat count must be a whole number >= 1");
      repeat = *n;
      text = text.substr(0, paren);
    }
    std::optional<int> tasks = parseCount(text);
    if (!tasks) return bad("a task count must be a whole number >= 1");
    if (!found && nodeId < firstNode + repeat) found = *tasks;
    firstNode += repeat;
  }
  if (!found)
    return invalid(
        strFormat("SLURM_NODEID=%d is beyond the %lld nodes of SLURM_STEP_TASKS_PER_NODE='%s'",
                  nodeId, static_cast<long long>(firstNode), tasksPerNode.c_str()));
  return *found;
}

}  // namespace detail

Result<LaunchEnv> LaunchEnv::detect(const Config& c) {
  const Source sources[] = {
      {Launcher::kTuttiRun, "TUTTI_RANK", c.rank, "TUTTI_WORLD_SIZE", c.worldSize,
       "TUTTI_LOCAL_RANK", c.localRank, "TUTTI_LOCAL_WORLD_SIZE", c.localWorldSize},
      {Launcher::kTorchrun, "RANK", c.torchRank, "WORLD_SIZE", c.torchWorldSize, "LOCAL_RANK",
       c.torchLocalRank, "LOCAL_WORLD_SIZE", c.torchLocalWorldSize},
      {Launcher::kOpenMpi, "OMPI_COMM_WORLD_RANK", c.ompiRank, "OMPI_COMM_WORLD_SIZE", c.ompiSize,
       "OMPI_COMM_WORLD_LOCAL_RANK", c.ompiLocalRank, "OMPI_COMM_WORLD_LOCAL_SIZE",
       c.ompiLocalSize},
      {Launcher::kPmi, "PMI_RANK", c.pmiRank, "PMI_SIZE", c.pmiSize, "MPI_LOCALRANKID",
       c.mpiLocalRank, "MPI_LOCALNRANKS", c.mpiLocalSize},
      {Launcher::kSlurm, "SLURM_PROCID", c.slurmRank, "SLURM_NTASKS", c.slurmSize, "SLURM_LOCALID",
       c.slurmLocalRank, nullptr, c.slurmLocalRank},
  };
  // The first launcher whose rank variable is set wins. tutti-run comes first because it
  // may itself run under another launcher whose variables leak into the environment.
  const Source* chosen = nullptr;
  for (const Source& s : sources) {
    if (!s.rank.empty()) {
      chosen = &s;
      break;
    }
  }
  LaunchEnv env;
  if (chosen == nullptr) {
    env.launcher = Launcher::kNone;  // rank 0 of 1, alone on its host (the defaults)
  } else {
    env.launcher = chosen->launcher;
    TUTTI_RETURN_IF_ERROR(readRankSize(*chosen, &env));
    TUTTI_RETURN_IF_ERROR(readLocal(*chosen, c, &env));
  }
  env.jobId = c.jobId;
  if (env.jobId.empty() && env.launcher == Launcher::kSlurm) env.jobId = c.slurmJobId;
  TUTTI_RETURN_IF_ERROR(resolveStore(c, &env));
  TUTTI_INFO(kBootstrap, "%s", env.toString().c_str());
  return env;
}

std::string LaunchEnv::toString() const {
  return strFormat("rank %d/%d (local %d/%d) launched by %s, store %s%s%s%s", rank, size, localRank,
                   localSize, launcherName(launcher), storeAddress.toString().c_str(),
                   serveStore ? " (served here)" : "", jobId.empty() ? "" : ", job ",
                   jobId.c_str());
}

}  // namespace tutti
