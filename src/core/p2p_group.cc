#include "core/p2p_group.h"

#include "base/assert.h"
#include "base/strings.h"
#include "core/work_state.h"

namespace tutti::detail {

// One call of the group: what a call run alone keeps on its stack, kept while it is in
// flight with others.
struct P2pGroupRunner::Call {
  OpRequest request;
  bool blocking = false;  // the caller's own call: its status is returned, not completed
  bool began = false;     // in the flight recorder
  bool refused = false;
  bool ended = false;
  std::optional<CallDescriber> what;
  FlightRecorder::Handle op;
  ExecParams params;
  ExecBuffers buffers;
  ExecReport report;
  ExecutorPool pool;
  Status status;
};

P2pGroupRunner::P2pGroupRunner(Transport& transport, CallPlanner& planner, CallRunner& runner,
                               FailureReporter& failures)
    : transport_(transport),
      planner_(planner),
      runner_(runner),
      failures_(failures),
      group_(transport) {}

P2pGroupRunner::~P2pGroupRunner() {
  for (Call* c : running_) delete c;
}

void P2pGroupRunner::start(Call& c) {
  const OpRequest& r = c.request;
  const CallPlan* plan = planner_.plan(r, r.algorithm, &c.status);
  if (plan == nullptr) {
    c.ended = true;
    return;
  }
  const char* name = plan->algorithm->name;
  c.what.emplace(r, name);
  c.op = failures_.recorder().begin(summarize(r, name), r.issued);
  c.began = true;
  const Status health = transport_.health();
  if (!health.ok()) {
    c.refused = true;
    c.status = failures_.refusal(*c.what, health);
    c.ended = true;
    return;
  }
  // Point to point needs no scratch; its plan stays put while the planner is held.
  TUTTI_ASSERT_CMP(plan->plan->schedule.scratchCount, ==, 0u);
  c.params = runner_.execParams(r, *plan->plan, *c.what);
  c.buffers = ExecBuffers{r.input, r.output, nullptr};
  group_.add(plan->plan->schedule, c.buffers, c.params, c.pool, &c.report, &c.status, &c.ended);
}

Status P2pGroupRunner::finish(Call& c) {
  if (c.began) failures_.recorder().end(c.op, c.status.code());
  if (c.status.ok() || !c.what.has_value()) return c.status;
  // As a call run alone words a failure.
  Status status = c.refused ? c.status
                            : c.status.withContext(strFormat("%s failed on rank %d",
                                                             c.what->describe().c_str(),
                                                             c.request.spec.rank));
  return failures_.failed(c.request, *c.what, status, c.report, c.refused);
}

void P2pGroupRunner::add(OpRequest&& r, bool blocking) {
  if (spare_.empty()) spare_.push_back(std::make_unique<Call>());
  std::unique_ptr<Call> call = std::move(spare_.back());
  spare_.pop_back();
  Call& c = *call;
  c.request = std::move(r);
  c.blocking = blocking;
  c.began = c.refused = c.ended = false;
  c.what.reset();
  c.status = Status::Ok();
  c.report = ExecReport{};
  running_.push_back(call.release());
  start(c);
}

void P2pGroupRunner::reap(Status* blockingStatus) {
  std::size_t kept = 0;
  for (Call* c : running_) {
    if (!c->ended) {
      running_[kept++] = c;
      continue;
    }
    Status status = finish(*c);
    if (c->blocking)
      *blockingStatus = std::move(status);
    else
      c->request.work->complete(std::move(status));
    c->request = OpRequest{};  // lets go of the Work and the arrays
    spare_.emplace_back(c);
  }
  running_.resize(kept);
}

Status P2pGroupRunner::run(std::vector<OpRequest>& batch, OpRequest* blocking,
                           CallQueue* absorb) {
  group_.begin();
  planner_.hold(true);
  Status blockingStatus;
  for (OpRequest& r : batch) add(std::move(r), false);
  batch.clear();
  if (blocking != nullptr) add(std::move(*blocking), true);
  reap(&blockingStatus);
  while (group_.active()) {
    // The snapshot comes before the look at the queue: a call queued after the look
    // interrupts the wait (CallQueue::submit), one queued before it is taken here.
    const std::uint32_t seen = transport_.progressSignal().snapshot();
    if (absorb != nullptr) {
      absorb->takeQueuedPointToPoint(batch);
      for (OpRequest& r : batch) add(std::move(r), false);
      batch.clear();
    }
    group_.turn(seen);
    reap(&blockingStatus);
  }
  reap(&blockingStatus);
  planner_.hold(false);
  group_.end();
  return blockingStatus;
}

}  // namespace tutti::detail
