#include "core/call_runner.h"

#include <chrono>
#include <functional>
#include <vector>

#include "base/log.h"
#include "base/macros.h"
#include "base/strings.h"
#include "core/call_stamp.h"
#include "transport/tag.h"

namespace tutti::detail {

CallRunner::CallRunner(Setup setup, Transport& transport, CallChecker& checker,
                       FlatExchangeRunner* flat)
    : setup_(setup),
      transport_(transport),
      checker_(checker),
      flat_(flat),
      ways_(setup.messagePath, transport.find<DirectCopy>(), flat, setup.messageRules) {}

ExecParams CallRunner::execParams(const OpRequest& r, const Plan& plan, const OpDescriber& what) {
  const CollectiveSpec& spec = r.spec;
  ExecParams params;
  params.dtype = spec.dtype;
  params.op = spec.op;
  params.worldSize = spec.size;
  params.tagBase = isPointToPoint(spec.kind) ? p2pTag(0, static_cast<std::uint32_t>(r.tag))
                                             : collectiveTagBase(0, r.seq);
  params.deadline = r.deadline;
  // A call still waiting this long probes the peers it waits for (executor.h).
  params.probeAt = Deadline::at(r.issued + kProbeAfter);
  params.spinNs = setup_.spinNs;
  params.maxInflight = setup_.maxInflight;
  params.what = &what;
  params.stamp = plan.stamp;
  // The run registers the call for mismatch detection once its first messages are out.
  params.checker = &checker_;
  params.seq = r.seq;
  return params;
}

Status CallRunner::agree(const OpRequest& r, const std::int64_t* mine, std::size_t count,
                         std::int64_t* all, const OpDescriber& what, ExecReport* report) {
  if (agreementCount_ != count) {
    // Bruck's all-gather: log2(size) rounds of one message each, whatever the hosts.
    CollectiveSpec spec;
    spec.kind = Collective::kAllGather;
    spec.count = count;
    spec.dtype = DataType::kInt64;
    spec.rank = r.spec.rank;
    spec.size = r.spec.size;
    spec.segmentCount = count;
    auto algorithm = selectAlgorithm(spec, "bruck");
    if (!algorithm.ok()) return algorithm.status();
    agreement_ = (*algorithm)->build(spec);
    agreementCount_ = count;
  }
  ExecParams params;
  params.dtype = DataType::kInt64;
  params.worldSize = r.spec.size;
  params.tagBase = collectiveTagBase(0, r.seq) + kAgreementIndex;
  params.deadline = r.deadline;
  params.probeAt = Deadline::at(r.issued + kProbeAfter);
  params.spinNs = setup_.spinNs;
  params.maxInflight = setup_.maxInflight;
  params.what = &what;
  // The call is registered with its algorithm open (as the flat exchange's agreements
  // register it), so that a peer's message or probe of another call shows as a mismatch
  // here; the call registers again, whole, when it runs. These messages carry no stamp: a
  // link carries no open bits, and one stamped without its algorithm would conflict with
  // the whole call at a peer that it reaches before that peer begins this call.
  TUTTI_RETURN_IF_ERROR(checker_.begin(r.seq, stampBeforeChoice(r.spec)));
  const std::size_t bytes = agreement_.scratchCount * sizeof(std::int64_t);
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  Status status = tutti::execute(transport_, agreement_, ExecBuffers{mine, all, scratch_.data()},
                                 params, pool_, report);
  if (status.ok()) return status;
  return status.withContext(strFormat("%s: agreeing on the contenders' times failed on rank %d",
                                      what.describe().c_str(), r.spec.rank));
}

Status CallRunner::run(const OpRequest& r, const CallPlan& plan, const OpDescriber& what,
                       ExecReport* report) {
  const Plan& p = *plan.plan;
  triedAnotherWay_ = false;
  if (plan.flatBytes != kNotFlat)
    return flat_->run(r, *plan.algorithm, p.stamp, plan.flatBytes, what, report);
  const Schedule& schedule = p.schedule;
  ExecParams params = execParams(r, p, what);
  std::optional<std::uint32_t> shape;
  // The learner keeps each algorithm's ways apart: its place in the registry (every
  // algorithm a call runs is one of the registry's).
  const std::vector<AlgorithmInfo>& registry = algorithmRegistry();
  const std::less<const AlgorithmInfo*> before;
  const auto algorithm =
      !before(plan.algorithm, registry.data()) && before(plan.algorithm, registry.data() + registry.size())
          ? static_cast<std::uint32_t>(plan.algorithm - registry.data())
          : 0xffu;
  TUTTI_RETURN_IF_ERROR(ways_.choose(r, p.stamp, what, algorithm, &params, &shape, report));
  triedAnotherWay_ = ways_.triedAnotherWay();
  if (schedule.scratchCount > 0) {
    // Pooled: grows to the largest need once, then every call reuses it.
    const std::size_t bytes = schedule.scratchCount * dataTypeSize(r.spec.dtype);
    if (scratch_.size() < bytes) scratch_.resize(bytes);
  }
  const ExecBuffers buffers{r.input, r.output, scratch_.data()};
  TUTTI_TRACE(kColl, "%s starting: %zu steps", what.describe().c_str(), schedule.steps.size());
  const auto start = shape ? std::chrono::steady_clock::now()
                           : std::chrono::steady_clock::time_point{};
  Status status = tutti::execute(transport_, schedule, buffers, params, pool_, report);
  if (shape && status.ok())
    ways_.record(*shape, std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::steady_clock::now() - start).count());
  if (status.ok()) return status;
  return status.withContext(
      strFormat("%s failed on rank %d", what.describe().c_str(), r.spec.rank));
}

}  // namespace tutti::detail
