#pragma once
// CallPlanner: what a call runs. Owns the arguments' check, the algorithm's choice
// (TUTTI_ALGO, the defaults), the plans (schedule and stamp) cached by call shape, and the
// memory of the last call, so that a loop repeating one call skips all three.
// It must not touch the transport, the queue or any thread: one thread at a time plans.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/call_checks.h"
#include "core/op_request.h"
#include "schedule/schedule.h"
#include "transport/link.h"
#include "tutti/types.h"

namespace tutti::detail {

/// A call shape's schedule and the stamp its messages carry (mismatch detection).
struct Plan {
  Schedule schedule;
  CallStamp stamp;
};

/// What a call of the flat exchange's carries (CallPlan::flatBytes) when the executor runs it.
inline constexpr std::size_t kNotFlat = ~std::size_t{0};

/// What the planner decided for one call: `algorithm` with `plan`, through the flat exchange
/// with `flatBytes` per rank unless kNotFlat.
struct CallPlan {
  const AlgorithmInfo* algorithm = nullptr;
  const Plan* plan = nullptr;
  std::size_t flatBytes = kNotFlat;
};

/// Whether the algorithm `spec` gets depends on whether every rank's buffers come from
/// memAlloc (an all-reduce of 1 MiB or more among 3 to 8 ranks on one host): the ranks then
/// agree on it first (FlatExchangeRunner::agreeOnBuffers). The same on every rank.
bool choiceNeedsBuffers(const CollectiveSpec& spec);

class CallPlanner {
 public:
  /// What the communicator decided at creation that calls are planned with.
  struct Setup {
    int rank = 0;
    int size = 1;
    /// Every peer is reached through shared memory (CollectiveSpec::sharedMemory).
    bool sharedMemory = false;
    /// Bytes one rank may contribute to the transport's flat exchange; 0: it has none.
    std::size_t flatRoom = 0;
    /// The ring algorithms' segment (TUTTI_SEGMENT_BYTES, or a share of a one-host ring).
    std::uint64_t segmentBytes = 512 << 10;
    /// The executor's window (TUTTI_MAX_INFLIGHT), for verifyCall.
    std::size_t maxInflight = 16;
    /// TUTTI_ALGO: the algorithm forced per collective (empty: choose).
    std::array<std::string, kNumCollectives> forced;
  };

  explicit CallPlanner(Setup setup);

  /// Checks every argument of `request` (call_checks.h) and fills in what the communicator
  /// adds to its spec: rank, size, in place, segment, shared memory. Pure: any thread.
  CallCheck check(OpRequest& request) const;
  /// The same for the thread running calls, which skips the check of a call repeating the
  /// last one it checked (same arguments and buffers).
  CallCheck checkRepeat(OpRequest& request);
  /// Whether checkRepeat() would answer `request` from memory.
  bool repeats(const OpRequest& request) const;

  /// The algorithm and plan of `request` (checked; its buffers agreed on where
  /// choiceNeedsBuffers), with `requested` the algorithm its options force: the last call's
  /// when this one has its shape, else chosen and planned now. kInvalidArgument where the
  /// algorithm forced does not apply. The thread running calls.
  Result<CallPlan> plan(const OpRequest& request, std::string_view requested);
  /// While held, plans stay where they are (point-to-point calls in flight hold theirs).
  void hold(bool held) { held_ = held; }

  /// The algorithm a call of this shape would run on this rank (Communicator::algorithmFor).
  Result<std::string> algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                   const std::string& forced, bool sharedBuffers) const;
  /// Whether every rank's schedule for `call` verifies (Communicator::verifyCall).
  Status verifyCall(const CallShape& call, const std::string& forced) const;

 private:
  // Plans by call shape and algorithm (registry entries live forever: their address is
  // their identity), with the v-collectives' arrays.
  struct PlanKey {
    CallKey call;
    const AlgorithmInfo* algorithm = nullptr;
    std::vector<std::uint64_t> counts, displs, recvCounts, recvDispls;
  };
  // A call's shape, looked up without copying its arrays into a key.
  struct PlanProbe {
    const CollectiveSpec* spec;
    const AlgorithmInfo* algorithm;
  };
  struct PlanLess {
    using is_transparent = void;
    bool operator()(const PlanKey& a, const PlanKey& b) const;
    bool operator()(const PlanKey& a, const PlanProbe& b) const;
    bool operator()(const PlanProbe& a, const PlanKey& b) const;
  };
  // The last call: its arguments and its check's verdict (checkRepeat), and its shape with
  // what plan() decided for it. Calls with per-rank arrays or a stated own count are not
  // kept: comparing them would cost what checking and looking them up does.
  struct LastCall {
    bool checked = false;
    CallKey arguments;  // in place unset: the check decides it
    int tag = 0;
    const void* input = nullptr;
    const void* output = nullptr;
    bool inPlace = false;
    bool planned = false;
    CallKey shape;
    bool sharedBuffers = false;
    std::string forced;
    CallPlan plan;
  };

  /// The algorithm a call of `kind` must run: `requested`, else TUTTI_ALGO's, else empty.
  std::string_view forcedAlgorithm(std::string_view requested, Collective kind) const;
  /// The plan of `spec` with `algorithm`: cached, or built now (and cached).
  const Plan& planFor(const CollectiveSpec& spec, const AlgorithmInfo& algorithm);
  std::size_t flatBytesFor(const CollectiveSpec& spec, const AlgorithmInfo& algorithm) const;
  /// The spec of `call` on `rank`, as verifyCall and algorithmFor build one.
  CollectiveSpec representativeSpec(const CallShape& call, int rank) const;

  const Setup setup_;
  // TUTTI_SEGMENT_BYTES in elements of each dtype, computed once rather than per call.
  std::array<std::uint64_t, kNumDataTypes> segmentCounts_{};
  std::map<PlanKey, Plan, PlanLess> plans_;
  bool held_ = false;
  LastCall last_;
};

}  // namespace tutti::detail
