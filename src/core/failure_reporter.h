#pragma once
// FailureReporter: what a failed call does besides returning its error. It owns the flight
// recorder; on a failure it adds the hang report (once per communicator, when the first
// failure is a timeout), dumps the recorder (timeout, abort) and logs the WARN line; and it
// words the refusal of a call issued after the communicator failed. It must not run calls.

#include <atomic>
#include <memory>
#include <string>

#include "core/flight_recorder.h"
#include "core/op_request.h"
#include "executor/executor.h"
#include "topology/view.h"
#include "transport/link.h"
#include "tutti/store.h"

namespace tutti::detail {

class FailureReporter {
 public:
  struct Setup {
    std::string name;    // the communicator's
    int rank = 0;
    int size = 1;
    std::shared_ptr<Store> store;  // where the ranks post their hang positions
    std::string prefix;            // the communicator's store keys
    double hangReportSec = 3;      // TUTTI_HANG_REPORT_SEC (0: no report)
    std::size_t recorderSize = 256;  // TUTTI_FLIGHT_RECORDER_SIZE
    bool recorderSignal = true;      // TUTTI_FLIGHT_RECORDER_SIGNAL
    // The communicator's hosts (null: not known): a failure that names a rank on another
    // host names that host too, and the hang report the hosts of the ranks it misses.
    std::shared_ptr<const topo::View> view;
  };
  FailureReporter(Setup setup, Transport& transport);
  ~FailureReporter();
  FailureReporter(const FailureReporter&) = delete;
  FailureReporter& operator=(const FailureReporter&) = delete;

  FlightRecorder& recorder() { return recorder_; }

  /// A call issued after the communicator failed with `health`.
  Status refusal(const OpDescriber& what, const Status& health) const;
  /// What a failed call returns: `status`, with the hang report when the communicator's
  /// first failure is a timeout (once per communicator); logs it (a refused call only with
  /// its report) and dumps the recorder on a timeout or an abort. `refused`: the call was
  /// refused before it began (the hang report counts it late). Thread running calls.
  Status failed(const OpRequest& request, const OpDescriber& what, const Status& status,
                const ExecReport& report, bool refused);
  /// This rank passed an argument only it can see is invalid (`error`): fails the
  /// communicator, so that the peers stop waiting for this rank at once rather than at
  /// their deadline, naming this rank and the reason. Any thread.
  void invalidArgument(const OpRequest& request, const Status& error);
  /// Communicator::abort(): fails the communicator and dumps the recorder.
  void abort();
  /// Whether failed() ran: a call on this rank returned the communicator's failure, which
  /// destroying it (CommImpl::leave) then does not report again. Thread running calls, or
  /// any once none runs.
  bool reported() const { return reported_; }

 private:
  /// Dumps the flight recorder, the first time a failure asks for it.
  void dumpOnFailure(const char* reason);
  /// `status`, its message followed by "; rank 3 is on host 1 'b' at 10.0.0.2 (ranks 2-3)"
  /// where the rank it blames is on a host other than this rank's.
  Status withPeerHost(const Status& status) const;
  /// Per rank, its host's label where the communicator spans hosts; else empty.
  std::vector<std::string> hostLabels() const;

  const Setup setup_;
  Transport& transport_;
  FlightRecorder recorder_;
  std::atomic<bool> dumped_{false};  // a failure's dump is made once
  bool hangReported_ = false;        // touched only by the thread running calls
  bool reported_ = false;            // failed() ran (the same thread)
};

}  // namespace tutti::detail
