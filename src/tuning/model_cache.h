#pragma once
// Where a host's machine model comes from (docs/tuning.md, "The cache"): TUTTI_TUNING_FILE
// where set; else the per-host cache file, written by the first process on the host that
// found none (probe.h, ~100 ms, once per host and library version); else, where the cache
// cannot be used, a probe kept for the process alone.
//
// The cache file is DIR/model-<library version>+probe<revision>-<hash of the host
// identity>.json (TUTTI_PROBE_REVISION, probe.h), DIR being
// $XDG_CACHE_HOME/tutti or ~/.cache/tutti, and records the library and host it belongs to: a
// file written by another library version or for another host (a copied home directory,
// another boot: the identity holds the boot id) is measured anew and replaced, and so is one
// measured more than kCacheMaxAgeSeconds (7 days) ago, one that does not record when it was
// measured (an older build's) and one that records an incomplete probe once it is
// kIncompleteRetrySeconds old. Processes starting together on a host probe once: the writer
// holds a lock file while it probes, and the others wait for it (bounded) and read its
// result. A probe the host was too busy to complete (a phase failed the probe's checks and
// took the nearest trusted class or the defaults: probe.h) is cached marked incomplete, so
// that a busy host is measured again every few minutes rather than at every creation, and
// its untrusted figures are never kept. `tutti-info tune --probe --save` measures and replaces the
// cache (saveHostModel). Writes go through a temporary file
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

/// How long a cached model is used before it is measured anew: a week, so that a host
/// whose load or hardware changed, or a measurement that passed the checks but was poor,
/// is not stuck with it.
inline constexpr double kCacheMaxAgeSeconds = 7 * 24 * 3600;
/// How long a cache that records an incomplete probe is used before the next process
/// measures again: the host may be quieter by then, and in the meantime the processes
/// starting there (a test suite, a job's many communicators) do not each pay ~100 ms.
inline constexpr double kIncompleteRetrySeconds = 10 * 60;

struct ModelSource {
  std::string tuningFile;  // TUTTI_TUNING_FILE; empty: the cache
  std::string cacheDir;    // the cache's directory; empty: none (probe, write nothing)
  std::string hostId;      // topo::hostIdentity(): the machine, whatever TUTTI_SHM_HOST says
  ProbeOptions probe;
  /// What measures the host: probeHost, or a stand-in (tests).
  std::function<ProbeReport(const ProbeOptions&)> prober = probeHost;
  /// How long to wait for another process's probe (the lock file) before probing anyway.
  double lockWaitSeconds = 2;
  /// A cache measured longer ago than this is measured anew and replaced.
  double maxAgeSeconds = kCacheMaxAgeSeconds;
};

/// $XDG_CACHE_HOME/tutti, else $HOME/.cache/tutti (from `config`), else empty.
std::string cacheDirectory(const Config& config);

/// "<library version>+probe<revision>": what a cache file records as its library and its
/// name carries, so that only this library and probe revision read it.
const char* cacheLibraryTag();

/// The cache file of `hostId` under `dir` for this library version.
std::string cacheFilePath(const std::string& dir, const std::string& hostId);

/// The host's model as the header describes; origin "file PATH", "cache PATH" or "probe"
/// ("probe, not cached: why" where it could not be written). Errors only from tuningFile.
Result<MachineModel> loadHostModel(const ModelSource& source);

/// What loadHostModel would use without probing: the file where given (its errors are
/// errors), else the cache where it holds this host's model, else nullopt.
Result<std::optional<MachineModel>> storedHostModel(const ModelSource& source);

/// Writes a probe's result as the cache of `source` (its directory made where missing),
/// replacing what was there, with the time of now: what `tutti-info tune --probe --save`
/// does. Returns the file's path. Errors: no cache directory, an incomplete probe (nothing
/// is written: the cache keeps only trusted figures), the file cannot be written.
Result<std::string> saveHostModel(const ModelSource& source, const ProbeReport& report);

/// The source this process's configuration names: TUTTI_TUNING_FILE, cacheDirectory(),
/// `hostId`.
ModelSource sourceFor(const Config& config, const std::string& hostId);

/// loadHostModel for this process's configuration (TUTTI_TUNING_FILE, the cache directory,
/// `hostId`), remembered for the process: the ranks of one process (threads) and its later
/// communicators reuse it without reading the file again.
Result<std::shared_ptr<const MachineModel>> processHostModel(const Config& config,
                                                             const std::string& hostId);

}  // namespace tutti::tuning
