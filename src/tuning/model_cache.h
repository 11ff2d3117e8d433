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
// the others wait for it (bounded) and read its result. Writes go through a temporary file
// renamed into place. An unwritable cache directory is a warning (the probe's result is
// used all the same), never an error; an unreadable or malformed TUTTI_TUNING_FILE is an
// error naming the file, the line and the key.

#include <memory>
#include <string>

#include "base/config.h"
#include "tuning/model.h"
#include "tuning/probe.h"
#include "tutti/status.h"

namespace tutti::tuning {

struct ModelSource {
  std::string tuningFile;  // TUTTI_TUNING_FILE; empty: the cache
  std::string cacheDir;    // the cache's directory; empty: none (probe, write nothing)
  std::string hostId;      // topo::hostIdentity() (or TUTTI_SHM_HOST)
  ProbeOptions probe;
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

/// loadHostModel for this process's configuration (TUTTI_TUNING_FILE, the cache directory,
/// `hostId`), remembered for the process: the ranks of one process (threads) and its later
/// communicators reuse it without reading the file again.
Result<std::shared_ptr<const MachineModel>> processHostModel(const Config& config,
                                                             const std::string& hostId);

}  // namespace tutti::tuning
