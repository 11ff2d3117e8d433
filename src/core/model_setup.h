#pragma once
// The machine model a communicator's tuner reads (tuning/model.h), agreed at creation:
// every rank ends with rank 0's parameters, so that the ranks rank the algorithms alike.
//
// Rank 0 obtains its host's model (tuning/model_cache.h: TUTTI_TUNING_FILE, the per-host
// cache, or a probe once per host) and sets it under one store key; every other rank reads
// that key. One set and n-1 gets, next to the topology's gather; only rank 0 ever reads a
// cache or probes, so ranks of one host never probe at once. A model rank 0 cannot obtain (a
// bad TUTTI_TUNING_FILE) is published as an error, and every rank's creation fails with it.

#include <memory>
#include <string>

#include "base/config.h"
#include "tuning/model.h"
#include "tutti/deadline.h"
#include "tutti/status.h"
#include "tutti/store.h"

namespace tutti::detail {

struct ModelRequest {
  Store* store = nullptr;
  std::string prefix;  // the communicator's store keys
  int rank = 0;
  int size = 1;
  std::string hostId;  // rank 0's host identity (topo::hostIdentity()), the cache's key
  Deadline deadline = Deadline::never();
};

/// Rank 0 publishes its model (model_setup.h's header says how it gets it); every other
/// rank reads it. A one-rank communicator uses tuning::defaults() and touches nothing.
Result<std::shared_ptr<const tuning::MachineModel>> agreeOnModel(const ModelRequest& request,
                                                                 const Config& config);

/// The store value: the origin on its first line, then the model as JSON; and back.
std::string encodeModel(const tuning::MachineModel& model);
Result<tuning::MachineModel> decodeModel(const std::string& value);

}  // namespace tutti::detail
