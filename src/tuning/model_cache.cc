// The per-host model cache and TUTTI_TUNING_FILE (model_cache.h).
#include "tuning/model_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include "base/fd.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/strings.h"
#include "tuning/model_json.h"
#include "tutti/build_config.h"

namespace tutti::tuning {

// What a cache file is keyed by besides the host: the library's version and the probe's
// revision (TUTTI_PROBE_REVISION), so that a probe measuring more than the cached one did is run
// again rather than its new parameters left at their defaults.
#define TUTTI_STR2(x) #x
#define TUTTI_STR(x) TUTTI_STR2(x)
const char* const kCacheLibrary = TUTTI_VERSION_STRING "+probe" TUTTI_STR(TUTTI_PROBE_REVISION);
#undef TUTTI_STR
#undef TUTTI_STR2

const char* cacheLibraryTag() { return kCacheLibrary; }
namespace {

// FNV-1a: a stable short name for a long identity (no security asked of it).
std::uint64_t fnv1a(const std::string& text) {
  std::uint64_t h = 14695981039346656037ull;
  for (const unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

// mkdir -p with 0700 for what it creates (the XDG base directories' mode).
Status makeDirectories(const std::string& dir) {
  for (std::size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/') continue;
    const std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
      return Status(ErrorCode::kSystemError,
                    strFormat("cannot create %s: %s", part.c_str(), std::strerror(errno)));
  }
  return Status::Ok();
}

std::int64_t nowSeconds() { return static_cast<std::int64_t>(std::time(nullptr)); }

// Why a cache of this host and library, measured at `info.measured`, is not to be used any
// more; empty where it is. A cache from the future (a clock set back) by more than an hour
// is as stale as an old one.
std::string staleness(const ModelFileInfo& info, double maxAgeSeconds) {
  if (info.measured <= 0) return "it does not record when it was measured (an older build wrote it)";
  const double age = static_cast<double>(nowSeconds() - info.measured);
  if (!info.complete && age > kIncompleteRetrySeconds)
    return strFormat("it records an incomplete probe, %.0f minutes old", age / 60);
  if (age > maxAgeSeconds)
    return strFormat("it was measured %.1f days ago (they expire after %.1f)", age / 86400,
                     maxAgeSeconds / 86400);
  if (age < -3600) return "it was measured after now (the clock was set back)";
  return "";
}

// The cache file's model where it belongs to this host and library and has not expired;
// nullopt where it is missing, another's (why at DEBUG), expired (why at INFO) or malformed
// (why in a warning where `warn`).
std::optional<MachineModel> readCache(const std::string& path, const std::string& hostId,
                                      double maxAgeSeconds, bool warn) {
  if (::access(path.c_str(), F_OK) != 0) return std::nullopt;
  ModelFileInfo info;
  auto model = loadModelFile(path, &info);
  if (!model.ok()) {
    if (warn)
      TUTTI_WARN(kTune, "the machine model cache %s is unusable, measuring anew: %s", path.c_str(),
                 model.status().message().c_str());
    return std::nullopt;
  }
  if (info.library != kCacheLibrary || info.host != hostId) {
    TUTTI_DEBUG(kTune, "the machine model cache %s belongs to library %s on host %s: measuring anew",
                path.c_str(), info.library.c_str(), info.host.c_str());
    return std::nullopt;
  }
  if (const std::string why = staleness(info, maxAgeSeconds); !why.empty()) {
    if (warn) TUTTI_INFO(kTune, "the machine model cache %s is measured anew: %s", path.c_str(), why.c_str());
    return std::nullopt;
  }
  model->origin = "cache " + path;
  return std::move(model).value();
}

// An exclusive lock on `path`, waited for at most `seconds`; an invalid fd where it could
// not be had (the caller probes without it).
UniqueFd lockFile(const std::string& path, double seconds) {
  UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return UniqueFd();
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(seconds));
  while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) return UniqueFd();
    if (std::chrono::steady_clock::now() >= until) return UniqueFd();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return fd;
}

ProbeReport probed(const ModelSource& source) {
  ProbeReport report = source.prober ? source.prober(source.probe) : probeHost(source.probe);
  TUTTI_INFO(kTune, "machine model probed on this host in %.0f ms%s", report.seconds * 1e3,
             report.complete ? "" : " (incomplete: the host was too busy for some phases)");
  for (const std::string& note : report.notes) TUTTI_DEBUG(kTune, "probe: %s", note.c_str());
  return report;
}

}  // namespace

std::string cacheDirectory(const Config& config) {
  if (!config.xdgCacheHome.empty() && config.xdgCacheHome[0] == '/')
    return config.xdgCacheHome + "/tutti";
  if (!config.home.empty()) return config.home + "/.cache/tutti";
  return "";
}

std::string cacheFilePath(const std::string& dir, const std::string& hostId) {
  return strFormat("%s/model-%s-%016llx.json", dir.c_str(), kCacheLibrary,
                   static_cast<unsigned long long>(fnv1a(hostId)));
}

Result<MachineModel> loadHostModel(const ModelSource& source) {
  if (!source.tuningFile.empty()) {
    auto model = loadModelFile(source.tuningFile);
    if (!model.ok()) return model.status().withContext("TUTTI_TUNING_FILE");
    return model;
  }
  if (source.cacheDir.empty()) {
    MachineModel model = probed(source).model;
    model.origin = "probe, not cached: no cache directory ($XDG_CACHE_HOME and $HOME unset)";
    return model;
  }
  const std::string path = cacheFilePath(source.cacheDir, source.hostId);
  if (auto cached = readCache(path, source.hostId, source.maxAgeSeconds, true))
    return std::move(*cached);
  const Status made = makeDirectories(source.cacheDir);
  if (!made.ok()) {
    TUTTI_WARN(kTune, "machine model cache: %s; the probe's result is used uncached",
               made.message().c_str());
    MachineModel model = probed(source).model;
    model.origin = "probe, not cached: " + made.message();
    return model;
  }
  // The first process here probes; the others wait for its file (bounded).
  const UniqueFd lock = lockFile(path + ".lock", source.lockWaitSeconds);
  if (lock.valid()) {
    if (auto cached = readCache(path, source.hostId, source.maxAgeSeconds, false))
      return std::move(*cached);
  }
  ProbeReport report = probed(source);
  MachineModel model = std::move(report.model);
  // An incomplete probe's untrusted figures are already replaced (probe.h); it is cached
  // marked incomplete, so that the processes starting on a busy host in the next
  // kIncompleteRetrySeconds use it rather than each probing again, and one after that
  // measures anew.
  const Status written = writeModelFile(
      path, model, {kCacheLibrary, source.hostId, nowSeconds(), report.complete});
  if (!written.ok()) {
    TUTTI_WARN(kTune, "machine model cache: %s; the probe's result is used uncached",
               written.message().c_str());
    model.origin = "probe, not cached: " + written.message();
    return model;
  }
  model.origin = report.complete ? "probe, cached in " + path
                                 : "probe, incomplete (the host was busy), cached in " + path;
  return model;
}

Result<std::optional<MachineModel>> storedHostModel(const ModelSource& source) {
  if (!source.tuningFile.empty()) {
    auto model = loadModelFile(source.tuningFile);
    if (!model.ok()) return model.status().withContext("TUTTI_TUNING_FILE");
    return std::optional<MachineModel>(std::move(model).value());
  }
  if (source.cacheDir.empty()) return std::optional<MachineModel>();
  return readCache(cacheFilePath(source.cacheDir, source.hostId), source.hostId,
                   source.maxAgeSeconds, true);
}

Result<std::string> saveHostModel(const ModelSource& source, const ProbeReport& report) {
  if (source.cacheDir.empty())
    return Status(ErrorCode::kInvalidUsage,
                  "no cache directory to save the machine model in ($XDG_CACHE_HOME and $HOME unset)");
  if (!report.complete)
    return Status(ErrorCode::kInvalidUsage,
                  "the probe was incomplete (the host was too busy for some phases: see the notes); "
                  "nothing saved, the cache is as it was");
  TUTTI_RETURN_IF_ERROR(makeDirectories(source.cacheDir));
  const std::string path = cacheFilePath(source.cacheDir, source.hostId);
  // Not while a communicator's probe writes it; past the wait, renaming over it is safe.
  const UniqueFd lock = lockFile(path + ".lock", source.lockWaitSeconds);
  TUTTI_RETURN_IF_ERROR(writeModelFile(path, report.model,
                                       {kCacheLibrary, source.hostId, nowSeconds(), true}));
  return path;
}

ModelSource sourceFor(const Config& config, const std::string& hostId) {
  ModelSource source;
  source.tuningFile = config.tuningFile;
  source.cacheDir = cacheDirectory(config);
  source.hostId = hostId;
  return source;
}

Result<std::shared_ptr<const MachineModel>> processHostModel(const Config& config,
                                                             const std::string& hostId) {
  const ModelSource source = sourceFor(config, hostId);
  // One load per source for the process; the mutex also keeps its ranks (threads) from
  // probing at once.
  static std::mutex mutex;
  static std::map<std::tuple<std::string, std::string, std::string>,
                  std::shared_ptr<const MachineModel>> loaded;
  const std::lock_guard<std::mutex> hold(mutex);
  auto key = std::make_tuple(source.tuningFile, source.cacheDir, hostId);
  if (auto it = loaded.find(key); it != loaded.end()) return it->second;
  TUTTI_ASSIGN_OR_RETURN(MachineModel model, loadHostModel(source));
  auto shared = std::make_shared<const MachineModel>(std::move(model));
  loaded.emplace(std::move(key), shared);
  return shared;
}

}  // namespace tutti::tuning
