#pragma once
// P2pGroupRunner: point-to-point calls issued back to back run together (the executor's
// RunGroup), so that an irecv followed by an isend completes on every rank of a ring; each
// call ends as a call run alone would (flight recorder, refusal, failure report).
// Collectives still run one at a time, in issue order. Owns the group and its per-call
// state, pooled so that a warm group allocates nothing; must not run collectives.

#include <memory>
#include <optional>
#include <vector>

#include "core/call_describer.h"
#include "core/call_planner.h"
#include "core/call_queue.h"
#include "core/call_runner.h"
#include "core/failure_reporter.h"
#include "executor/executor.h"

namespace tutti::detail {

class P2pGroupRunner {
 public:
  P2pGroupRunner(Transport& transport, CallPlanner& planner, CallRunner& runner,
                 FailureReporter& failures);
  ~P2pGroupRunner();

  /// CallQueue::Runner::runPointToPoint: runs `batch` (emptied) and then `blocking` (when
  /// not null) together; completes the batch's Work and returns the blocking call's status.
  /// `absorb`: calls queued there meanwhile join. The thread running calls.
  Status run(std::vector<OpRequest>& batch, OpRequest* blocking, CallQueue* absorb);

 private:
  struct Call;
  void add(OpRequest&& request, bool blocking);
  void start(Call& call);
  Status finish(Call& call);
  /// Ends the calls that ended, whatever their order; the blocking one's status goes to
  /// *blockingStatus.
  void reap(Status* blockingStatus);

  Transport& transport_;
  CallPlanner& planner_;
  CallRunner& runner_;
  FailureReporter& failures_;
  RunGroup group_;
  std::vector<Call*> running_;                 // in flight, owned
  std::vector<std::unique_ptr<Call>> spare_;
};

}  // namespace tutti::detail
