#pragma once
// The machine model a communicator's tuner reads (tuning/model.h), agreed at creation:
// every rank ends with rank 0's parameters, so that the ranks rank the algorithms alike.
//
// Rank 0 obtains its host's model (tuning/model_cache.h: TUTTI_TUNING_FILE, the per-host
// cache, or a probe once per host) and sets it under one store key; every other rank reads
// that key. One set and n-1 gets, next to the topology's gather; only rank 0 ever reads a
// cache or probes, so ranks of one host never probe at once. A model rank 0 cannot obtain (a
// bad TUTTI_TUNING_FILE) is published as an error, and every rank's creation fails with it.
//
// Across hosts, once the transport is up, the model's network path is measured as well
// (agreeOnNetwork): rank 0 and the lowest rank of another host run tuning/probe_network.h
// through their own link, and rank 0 publishes the model with that path; a probe that
// fails fails every rank's creation.

#include <memory>
#include <string>

#include "base/config.h"
#include "topology/view.h"
#include "transport/link.h"
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

struct NetworkRequest {
  Store* store = nullptr;
  std::string prefix;
  int rank = 0;
  int size = 1;
  const topo::View* view = nullptr;    // the communicator's hosts
  Transport* transport = nullptr;      // up, no call made on it yet
  Deadline deadline = Deadline::never();
};

/// `model` with its network path measured (the header says how), the same on every rank;
/// `model` itself where the communicator has one host, or where rank 0 does not probe:
/// TUTTI_NET_PROBE off, a model from TUTTI_TUNING_FILE, a view from TUTTI_TOPO_FILE (whose
/// hosts need not be where the ranks run). Rank 0's probe figures that no network gives
/// are logged and left out. Every rank calls it (one store get for most).
Result<std::shared_ptr<const tuning::MachineModel>> agreeOnNetwork(
    const NetworkRequest& request, std::shared_ptr<const tuning::MachineModel> model,
    const Config& config);

/// The store value: the origin on its first line, then the model as JSON; and back.
std::string encodeModel(const tuning::MachineModel& model);
Result<tuning::MachineModel> decodeModel(const std::string& value);

}  // namespace tutti::detail
