#pragma once
// Where a host's machine model comes from (docs/tuning.md, "The cache"): TUTTI_TUNING_FILE
// where set; else the per-host cache file, written by the first process on the host that
// found none (probe.h, ~100 ms, once per host and library version); else, where the cache
// cannot be used, a probe kept for the process alone.
//
// The cache file is DIR/model-<library version>-<hash of the host identity>.json, DIR being
// $XDG_CACHE_HOME/tutti or ~/.cache/tutti, and records the library and host it belongs to: a
// file written by another library version or for another host (a copied home directory,
// another boot: the identity holds the boot id) is measured anew and replaced. Processes
// starting together on a host probe once: the writer holds a lock file while it probes, and
// the others wait for it (bounded) and read its result. A probe the host was too busy to
// complete (a phase kept a default) is used by its process but not cached. Writes go through a temporary file
// renamed into place. An unwritable cache directory is a warning (the probe's result is
// used all the same), never an error; an unreadable or malformed TUTTI_TUNING_FILE is an
// error naming the file, the line and the key.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "base/config.h"
#include "tuning/model.h"
#include "tuning/probe.h"
#include "tutti/status.h"

namespace tutti::tuning {

struct ModelSource {
  std::string tuningFile;  // TUTTI_TUNING_FILE; empty: the cache
  std::string cacheDir;    // the cache's directory; empty: none (probe, write nothing)
  std::string hostId;      // topo::hostIdentity(): the machine, whatever TUTTI_SHM_HOST says
  ProbeOptions probe;
  /// What measures the host: probeHost, or a stand-in (tests).
  std::function<ProbeReport(const ProbeOptions&)> prober = probeHost;
  /// How long to wait for another process's probe (the lock file) before probing anyway.
  double lockWaitSeconds = 2;
};

/// $XDG_CACHE_HOME/tutti, else $HOME/.cache/tutti (from `config`), else empty.
std::string cacheDirectory(const Config& config);

/// The cache file of `hostId` under `dir` for this library version.
std::string cacheFilePath(const std::string& dir, const std::string& hostId);

/// The host's model as the header describes; origin "file PATH", "cache PATH" or "probe"
/// ("probe, not cached: why" where it could not be written). Errors only from tuningFile.
Result<MachineModel> loadHostModel(const ModelSource& source);

/// What loadHostModel would use without probing: the file where given (its errors are
/// errors), else the cache where it holds this host's model, else nullopt.
Result<std::optional<MachineModel>> storedHostModel(const ModelSource& source);

/// The source this process's configuration names: TUTTI_TUNING_FILE, cacheDirectory(),
/// `hostId`.
ModelSource sourceFor(const Config& config, const std::string& hostId);

/// loadHostModel for this process's configuration (TUTTI_TUNING_FILE, the cache directory,
/// `hostId`), remembered for the process: the ranks of one process (threads) and its later
/// communicators reuse it without reading the file again.
Result<std::shared_ptr<const MachineModel>> processHostModel(const Config& config,
                                                             const std::string& hostId);

}  // namespace tutti::tuning
