#pragma once
// CommImpl::P2pRun, defined where CommImpl's destructor (comm_impl.cc) and the group code
// (p2p_group.cc) both see it.

#include <optional>

#include "core/call_describer.h"
#include "core/comm_impl.h"
#include "core/flight_recorder.h"
#include "executor/executor.h"

namespace tutti::detail {

// One point-to-point call of a group (runP2pGroup): what execute() keeps on its stack, kept
// here while the call is in flight with others. Pooled (spareRuns_): a warm group allocates
// nothing.
struct CommImpl::P2pRun {
  OpRequest request;
  bool blocking = false;  // the caller's own call: its status is returned, not completed
  bool began = false;     // in the flight recorder
  bool refused = false;
  bool ended = false;
  std::optional<CallDescriber> what;
  FlightRecorder::Handle op;
  const Schedule* schedule = nullptr;  // in cache_, which is not cleared meanwhile
  ExecParams params;
  ExecBuffers buffers;
  ExecReport report;
  ExecutorPool pool;
  Status status;
};

}  // namespace tutti::detail
