// Point-to-point calls issued back to back run together (CommImpl::runP2pGroup, the
// executor's RunGroup), so that an irecv followed by an isend completes on every rank of a
// ring; each call ends as CommImpl::execute() would end it.

#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "base/assert.h"
#include "base/strings.h"
#include "core/p2p_run.h"
#include "core/comm_impl.h"
#include "core/work_state.h"

namespace tutti::detail {

void CommImpl::takeQueuedP2pLocked(std::vector<OpRequest>& out) {
  while (!queue_.empty() && isPointToPoint(queue_.front())) {
    out.push_back(std::move(queue_.front()));
    queue_.pop_front();
  }
}

void CommImpl::startP2p(P2pRun& p) {
  const OpRequest& r = p.request;
  auto algorithm = chooseAlgorithm(r.spec, forcedAlgorithm(r.algorithm, r.spec.kind));
  if (!algorithm.ok()) {
    p.status = algorithm.status();
    p.ended = true;
    return;
  }
  p.what.emplace(*this, r, (*algorithm)->name);
  p.op = recorder_.begin(summarize(r, (*algorithm)->name), r.issued);
  p.began = true;
  const Status health = transport_->health();
  if (!health.ok()) {
    p.refused = true;
    p.status = refusal(*p.what, health);
    p.ended = true;
    return;
  }
  const Plan& plan = planFor(r.spec, **algorithm);
  TUTTI_ASSERT_CMP(plan.schedule.scratchCount, ==, 0u);  // point to point needs none
  p.schedule = &plan.schedule;
  p.params = execParams(r, plan, *p.what);
  p.buffers = ExecBuffers{r.input, r.output, nullptr};
  p2pGroup_->add(*p.schedule, p.buffers, p.params, p.pool, &p.report, &p.status, &p.ended);
}

Status CommImpl::finishP2p(P2pRun& p) {
  if (p.began) recorder_.end(p.op, p.status.code());
  if (p.status.ok() || !p.what.has_value()) return p.status;
  // As execute() and runSchedule() word a failure.
  Status status = p.refused ? p.status
                            : p.status.withContext(strFormat("%s failed on rank %d",
                                                             p.what->describe().c_str(), rank_));
  return failed(p.request, *p.what, status, p.report, p.refused);
}

Status CommImpl::runP2pGroup(std::vector<OpRequest>& batch, OpRequest* blocking, bool absorb) {
  if (p2pGroup_ == nullptr) p2pGroup_ = std::make_unique<RunGroup>(*transport_);
  p2pGroup_->begin();
  p2pGroupActive_ = true;
  std::vector<P2pRun*>& runs = p2pRuns_;
  Status blockingStatus;
  auto add = [&](OpRequest&& r, bool isBlocking) {
    if (spareRuns_.empty()) spareRuns_.push_back(std::make_unique<P2pRun>());
    std::unique_ptr<P2pRun> run = std::move(spareRuns_.back());
    spareRuns_.pop_back();
    P2pRun& p = *run;
    p.request = std::move(r);
    p.blocking = isBlocking;
    p.began = p.refused = p.ended = false;
    p.what.reset();
    p.status = Status::Ok();
    p.report = ExecReport{};
    runs.push_back(run.release());
    startP2p(p);
  };
  // Ended calls complete at once, whatever their order.
  auto reap = [&] {
    std::size_t kept = 0;
    for (P2pRun* p : runs) {
      if (!p->ended) {
        runs[kept++] = p;
        continue;
      }
      Status status = finishP2p(*p);
      if (p->blocking)
        blockingStatus = std::move(status);
      else
        p->request.work->complete(std::move(status));
      p->request = OpRequest{};  // lets go of the Work and the arrays
      spareRuns_.emplace_back(p);
    }
    runs.resize(kept);
  };
  for (OpRequest& r : batch) add(std::move(r), false);
  batch.clear();
  if (blocking != nullptr) add(std::move(*blocking), true);
  reap();
  while (p2pGroup_->active()) {
    // The snapshot comes before the look at the queue: a call queued after the look
    // interrupts the wait (submit), one queued before it is taken here.
    const std::uint32_t seen = transport_->progressSignal().snapshot();
    if (absorb) {
      {
        std::lock_guard<std::mutex> lock(queueMutex_);
        takeQueuedP2pLocked(batch);
      }
      for (OpRequest& r : batch) add(std::move(r), false);
      batch.clear();
    }
    p2pGroup_->turn(seen);
    reap();
  }
  reap();
  p2pGroupActive_ = false;
  p2pGroup_->end();
  return blockingStatus;
}

}  // namespace tutti::detail
