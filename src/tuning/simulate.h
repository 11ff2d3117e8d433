#pragma once
// The cost of a call, computed from its schedules (issue 39): a discrete-event run of every
// rank's real schedule (AlgorithmInfo::build) as the executor runs it, over the machine model
// (model.h), the ranks' placement (placement.h) and the network (network.h).
//
// Per rank, steps are issued in order while their dependencies are complete and fewer than
// maxInflight are in flight (executor.cc). Sends and receives match by (peer, message
// index). A message costs its pair's path class alpha + bytes x beta, plus the per-message
// overhead on the CPU of each end; reductions gamma[dtype] x bytes and copies copyBeta x
// bytes of CPU. Shared: a host's cores (CPU work waits while all are busy), its memory
// bandwidth, and the network's NICs and switch links (network.h). A call that a transport
// runs as one flat exchange (AlgorithmInfo::flatBytes, the call fits flatRoom) is priced by
// the model's flatAlpha/flatBeta, since that is what runs.
//
// Fast path: where the schedules are symmetric under a translation of the ranks by whole
// hosts (or leaf switches), only one period of ranks is built and run, and the messages
// they receive from the others are the images of their own sends; checked by comparing a
// few ranks' schedules relabelled. Without such a symmetry, every rank is run.

#include <cstddef>
#include <cstdint>

#include "algorithms/algorithm.h"
#include "schedule/collective.h"
#include "tuning/model.h"
#include "tuning/network.h"
#include "tuning/placement.h"
#include "tutti/status.h"

namespace tutti::tuning {

struct Prediction {
  double seconds = 0;          // the call's time: the last rank's finish
  bool fastPath = false;       // the symmetric fast path was used
  std::uint64_t messages = 0;  // messages simulated
  int ranksRun = 0;            // ranks whose schedules were built and run
};

struct SimOptions {
  int maxInflight = 16;  // TUTTI_MAX_INFLIGHT
  bool allowFastPath = true;
  /// The flat exchange's room in bytes (CallPlanner::Setup::flatRoom): a call of an
  /// algorithm with flatBytes <= flatRoom on one host is priced as a flat exchange. 0: none.
  std::size_t flatRoom = 0;
};

/// The predicted time of `spec` (rank and size from placement; spec.hosts set from it)
/// with `algorithm`, on `model` and `network`. Errors: the algorithm does not apply, the
/// schedules do not match (kInternal naming the algorithm).
Result<Prediction> predict(const AlgorithmInfo& algorithm, const CollectiveSpec& spec,
                           const MachineModel& model, const Placement& placement,
                           const Network& network, const SimOptions& options = {});

}  // namespace tutti::tuning
