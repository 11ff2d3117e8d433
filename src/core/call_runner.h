#pragma once
// CallRunner: runs one planned call on the transport: through the flat exchange where its
// plan says so (FlatExchangeRunner), else through the executor with its messages' way
// (MessageWays). Owns the executor's pools and the schedules' scratch space; must not touch
// the queue, the planner's cache or the flight recorder.

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/call_planner.h"
#include "core/flat_runner.h"
#include "core/message_ways.h"
#include "core/op_request.h"
#include "executor/executor.h"
#include "transport/call_checker.h"

namespace tutti::detail {

class CallRunner {
 public:
  struct Setup {
    std::int64_t spinNs = 0;        // how long waits poll before blocking (TUTTI_SPIN_US)
    std::size_t maxInflight = 16;   // TUTTI_MAX_INFLIGHT
    MessagePath messagePath = MessagePath::kLearn;
    MessageRules messageRules;  // the machine model's (prefersCopy)
  };
  /// `flat`: the transport's flat exchange, or null.
  CallRunner(Setup setup, Transport& transport, CallChecker& checker, FlatExchangeRunner* flat);

  /// Runs `request` as `plan` says (the transport healthy when the call began).
  Status run(const OpRequest& request, const CallPlan& plan, const OpDescriber& what,
             ExecReport* report);
  /// Whether the call run last tried a way for its messages that their learner does not
  /// keep (message_ways.h): its time says little of its algorithm's.
  bool triedAnotherWay() const { return triedAnotherWay_; }
  /// The executor's parameters for `request` run with `plan`.
  ExecParams execParams(const OpRequest& request, const Plan& plan, const OpDescriber& what);

  /// Every rank's `count` values at `mine`, by rank, into `all` (size x count): what the
  /// ranks agree on before `request` runs where there is no flat exchange (the contenders'
  /// times, algorithm_learner.h). An all-gather through the executor on the tags of the
  /// call's own sequence number above any its schedule uses (kAgreementIndex), with the
  /// call registered for mismatch detection before its algorithm is chosen. Every rank must
  /// call it for the same call.
  Status agree(const OpRequest& request, const std::int64_t* mine, std::size_t count,
               std::int64_t* all, const OpDescriber& what, ExecReport* report);

 private:
  const Setup setup_;
  Transport& transport_;
  CallChecker& checker_;
  FlatExchangeRunner* const flat_;
  MessageWays ways_;
  ExecutorPool pool_;
  std::vector<char> scratch_;  // schedules' scratch space, pooled across calls
  Schedule agreement_;         // agree()'s, built for agreementCount_ values a rank
  std::size_t agreementCount_ = 0;
  bool triedAnotherWay_ = false;
};

}  // namespace tutti::detail
