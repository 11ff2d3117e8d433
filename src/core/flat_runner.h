#pragma once
// FlatExchangeRunner: what core runs on the transport's flat exchange (FlatExchange,
// transport/extensions.h): the calls whose algorithm has a flat form (small all-reduces,
// all-gathers(v), all-to-alls, reduce-scatters(v), barriers), run without the executor, and
// the rounds in which the ranks agree on something per call (memAlloc buffers, a way for
// large messages). Owns the exchanges' count and views; must not touch the queue, the
// planner or the executor. Failures are worded and failed as the executor's are.

#include <cstdint>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/op_request.h"
#include "executor/executor.h"
#include "transport/extensions.h"

namespace tutti::detail {

class FlatExchangeRunner {
 public:
  FlatExchangeRunner(FlatExchange& flat, Transport& transport, CallChecker& checker,
                     std::int64_t spinNs);

  /// Bytes one rank may contribute to an exchange.
  std::size_t room() const { return room_; }

  /// One exchange of `bytes` at `data` for `request`, stamped `stamp`: on success every
  /// rank's contribution, by rank, in views(). `peerBytes`: FlatCall::peerBytes.
  Status exchange(const OpRequest& request, const CallStamp& stamp, const void* data,
                  std::size_t bytes, FlatStop* stop, const std::size_t* peerBytes = nullptr);
  /// The contributions of the last exchange, valid until the next.
  const std::vector<const char*>& views() const { return views_; }

  /// Runs `request` with `algorithm`'s flat form: `bytes` from its plan (CallPlan::flatBytes).
  Status run(const OpRequest& request, const AlgorithmInfo& algorithm, const CallStamp& stamp,
             std::size_t bytes, const OpDescriber& what, ExecReport* report);

  /// Sets request.spec.sharedBuffers to whether every rank's input and output of `request`
  /// lie in buffers that `mapped` says peers can map: one exchange of a byte per rank,
  /// stamped to agree with the call whatever algorithm the peers choose.
  Status agreeOnBuffers(OpRequest& request, const MappedBuffers& mapped,
                        const OpDescriber& what, ExecReport* report);

  /// A failed exchange worded as the executor words its failures (`stop`: where it
  /// stopped); fails the transport, as the executor does.
  Status failure(const OpDescriber& what, Status status, const FlatStop& stop,
                 ExecReport* report);

 private:
  FlatExchange& flat_;
  Transport& transport_;
  CallChecker& checker_;
  const std::size_t room_;
  const std::int64_t spinNs_;
  // Exchanges run so far (FlatCall::index: the same count on every rank).
  std::uint64_t calls_ = 0;
  std::vector<const char*> views_;
  std::vector<char> own_;                 // an in-place call's own contribution (run)
  std::vector<std::size_t> peerBytes_;    // per rank, where contributions differ (run)
};

}  // namespace tutti::detail
