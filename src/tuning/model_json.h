#pragma once
// A MachineModel as JSON: what the per-host cache (model_cache.h) and `tutti-info tune
// --json` write, what TUTTI_TUNING_FILE loads and what rank 0 publishes to the other ranks
// at creation. The format is docs/tuning.md's:
//
//   {"format": "tutti-machine-model", "version": 1, "library": "0.9.0", "host": "...",
//    "measured": 1796000000, "complete": true,
//    "paths": {"same_l3": {"alpha": 4e-07, "beta": 1e-10, "overhead": 2e-07}, ...},
//    "gamma": {"float32": 1.2e-10, ...}, "copy_beta": ..., "host_memory_bandwidth": ...,
//    "nic_bandwidth": ..., "cores_per_host": 2, "flat_alpha": ..., "flat_beta": ...}
//
// Reading is strict where a mistake would go unnoticed: a key the format does not know is
// refused (a misspelt one must not silently leave a default in place), and so is a value of
// the wrong type, a negative or non-finite number, or another format or version. A key left
// out keeps defaults()'s value, so that a file may give only what it wants to change, and
// files written before a parameter existed stay valid. Errors name the line and the key:
// "line 5: paths.same_l3.beta: a number from 0 expected, found -1".

#include <cstdint>
#include <string>
#include <string_view>

#include "tuning/model.h"
#include "tutti/status.h"

namespace tutti::tuning {

/// The document's "format" member, so that another JSON file is refused by name.
inline constexpr std::string_view kModelFormat = "tutti-machine-model";
/// Raised when a parameter changes meaning; new parameters with defaults keep it.
inline constexpr int kModelVersion = 1;

/// What a model file says besides the parameters: which library wrote it, for which host,
/// when it was measured and whether every phase of that probe was trusted. Empty, 0 and
/// true where the file does not say (a hand-written file needs none of them).
struct ModelFileInfo {
  std::string library;      // TUTTI_VERSION_STRING of the writer
  std::string host;         // topo::hostIdentity() of the host measured
  std::int64_t measured = 0;  // when, in seconds since the epoch (the cache's age); 0: unknown
  bool complete = true;     // the probe kept no phase's default (probe.h)
};

/// `model` as a JSON document (numbers written exactly: fromJson gives the same doubles).
/// model.origin is not written: it is where a model was read from, set by the reader.
std::string toJson(const MachineModel& model, const ModelFileInfo& info = {});

/// A model from a JSON document; keys left out keep defaults()'s values, origin is
/// "defaults" (callers set it). Errors are kInvalidArgument "line L: key: problem".
Result<MachineModel> fromJson(std::string_view text, ModelFileInfo* info = nullptr);

/// fromJson of the file at `path`, origin "file PATH"; errors name the file.
Result<MachineModel> loadModelFile(const std::string& path, ModelFileInfo* info = nullptr);

/// Writes toJson(model, info) to `path` through a temporary file in the same directory
/// renamed over it, so that a reader (another process starting) never sees half a model.
/// Errors (kSystemError) name the file.
Status writeModelFile(const std::string& path, const MachineModel& model,
                      const ModelFileInfo& info = {});

}  // namespace tutti::tuning
