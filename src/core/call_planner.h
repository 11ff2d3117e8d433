#pragma once
// CallPlanner: what a call runs. Owns the arguments' check, the algorithm's choice
// (TUTTI_ALGO, the defaults), the plans (schedule and stamp) cached by call shape, and the
// memory of the last call, so that a loop repeating one call skips all three. It must not
// touch the transport, the queue or any thread.
//
// The last call is remembered in two halves, each used by one thread: its arguments and
// their check's verdict by the thread that issues calls (recall, remember), its plan by the
// thread running calls (planned, plan). A generation number links them: remember() stamps
// the call with a new one, recall() with the one remembered, and plan() keeps the one of the
// call it planned, so a call whose number is the plan's has its arguments.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "algorithms/algorithm.h"
#include "core/algorithm_learner.h"
#include "core/call_checks.h"
#include "core/op_request.h"
#include "schedule/schedule.h"
#include "transport/link.h"
#include "tuning/tuner.h"
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
/// memAlloc (an all-reduce of `from` bytes or more among 3 to 8 ranks on one host): the
/// ranks then agree on it first (FlatExchangeRunner::agreeOnBuffers). The same on every
/// rank, `from` being the machine model's buffersAgreedFrom, which they agreed on. Its
/// default, 1 MiB, is where direct_rs_ag was measured: the agreement is a flat exchange of
/// a few microseconds, which heap buffers pay for nothing.
inline bool choiceNeedsBuffers(const CollectiveSpec& spec,
                               std::uint64_t from = std::uint64_t{1} << 20) {
  return spec.kind == Collective::kAllReduce && spec.sharedMemory && spec.size >= 3 &&
         spec.size <= 8 && spec.bytes() >= from;
}

class CallPlanner {
 public:
  /// What the communicator decided at creation that calls are planned with.
  struct Setup {
    int rank = 0;
    int size = 1;
    /// Every peer is reached through shared memory (CollectiveSpec::sharedMemory).
    bool sharedMemory = false;
    /// The communicator's ranks by host (CollectiveSpec::hosts); null: not known.
    std::shared_ptr<const HostMap> hosts;
    /// Bytes one rank may contribute to the transport's flat exchange; 0: it has none.
    std::size_t flatRoom = 0;
    /// The ring algorithms' segment (TUTTI_SEGMENT_BYTES, or a share of a one-host ring).
    std::uint64_t segmentBytes = 512 << 10;
    /// The executor's window (TUTTI_MAX_INFLIGHT), for verifyCall.
    std::size_t maxInflight = 16;
    /// choiceNeedsBuffers' size: the machine model's buffersAgreedFrom.
    std::uint64_t buffersAgreedFrom = std::uint64_t{1} << 20;
    /// TUTTI_ALGO: the algorithm forced per collective (empty: choose).
    std::array<std::string, kNumCollectives> forced;
    /// The model's tuner (TUTTI_TUNER=model), shared by the communicator's threads; null:
    /// the old table chooses (defaults.cc) with the segment above.
    std::shared_ptr<tuning::Tuner> tuner;
    /// Whether the tuner's close contenders are tried and the fastest kept
    /// (TUTTI_TUNER_LEARN; core/algorithm_learner.h).
    bool learnsContenders = false;
  };

  explicit CallPlanner(Setup setup);

  /// Checks every argument of `request` (call_checks.h) and fills in what the communicator
  /// adds to its spec: rank, size, in place, segment, shared memory. Pure: any thread.
  CallCheck check(OpRequest& request) const;
  /// For the thread issuing calls: true when `request` repeats the last call remembered
  /// (same arguments and buffers), whose check it then need not repeat; fills in its spec as
  /// check() would, with the remembered generation (OpRequest::memo). False: check it (and
  /// remember it if it passes).
  bool recall(OpRequest& request) const {
    // The API leaves the in-place flag unset: the check decides it.
    CollectiveSpec& s = request.spec;
    if (issued_.generation == 0 || request.tag != issued_.tag || request.input != issued_.input ||
        request.output != issued_.output || request.ownCount || !request.withoutArrays() ||
        !(static_cast<const CallKey&>(s) == issued_.arguments)) [[unlikely]]
      return false;
    // checkCall() is pure: the same arguments get the same verdict, and the same spec.
    s.rank = setup_.rank;
    s.size = setup_.size;
    s.inPlace = issued_.inPlace;
    s.segmentCount = segmentCounts_[static_cast<std::size_t>(s.dtype)];
    s.sharedMemory = setup_.sharedMemory;
    s.hosts = setup_.hosts.get();
    request.memo = issued_.generation;
    return true;
  }
  /// Remembers `request`, which check() has just passed, for recall(), under a new
  /// generation (a no-op for calls with per-rank arrays or a stated own count: comparing
  /// them costs what checking does). The thread issuing calls.
  void remember(OpRequest& request);

  /// The algorithm and plan of `request` (checked; its buffers agreed on where
  /// choiceNeedsBuffers), with `requested` the algorithm its options force: the last call's
  /// when this one has its shape, else chosen and planned now. Valid until the next plan().
  /// Null, with *error set (kInvalidArgument), where the algorithm forced does not apply.
  /// The thread running calls.
  const CallPlan* plan(const OpRequest& request, std::string_view requested, Status* error);
  /// Whether `spec`'s ranks agree on their buffers before it is planned (choiceNeedsBuffers
  /// from Setup::buffersAgreedFrom).
  bool needsBuffers(const CollectiveSpec& spec) const {
    return choiceNeedsBuffers(spec, setup_.buffersAgreedFrom);
  }
  /// plan()'s answer where it is known without a look: `request` has the arguments of the
  /// call planned last (the same generation), it requests what that call requested, and
  /// the ranks agreed as then. Null: ask plan().
  const CallPlan* planned(const OpRequest& request, std::string_view requested) const {
    return request.memo != 0 && request.memo == last_.memo &&
                   request.spec.sharedBuffers == last_.sharedBuffers &&
                   requested == last_.requested
               ? &last_.plan
               : nullptr;
  }
  /// The contenders `request` (checked, its buffers agreed on) takes turns between while
  /// its shape learns which runs fastest (algorithm_learner.h), or null: the call runs what
  /// plan() chooses. Null where nothing is learnt: a forced algorithm, a shape the tuner
  /// does not price or finds no close contender for, a call with per-rank arrays. The
  /// same answer on every rank. The thread running calls.
  AlgorithmLearner::Shape* learning(const OpRequest& request);

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
    std::uint64_t segmentCount = 0;  // the tuner's segment may differ per shape
    std::vector<std::uint64_t> counts, displs, recvCounts, recvDispls;
  };
  // A call's shape, looked up without copying its arrays into a key.
  struct PlanProbe {
    const CollectiveSpec* spec;
    const AlgorithmInfo* algorithm;
    std::uint64_t segmentCount;  // the one to plan with, which may not be spec's
  };
  struct PlanLess {
    using is_transparent = void;
    bool operator()(const PlanKey& a, const PlanKey& b) const;
    bool operator()(const PlanKey& a, const PlanProbe& b) const;
    bool operator()(const PlanProbe& a, const PlanKey& b) const;
  };
  // The last call remembered by the thread issuing calls: its arguments and its check's
  // verdict. Calls with per-rank arrays or a stated own count are not kept: comparing them
  // would cost what checking them does. Generation 0: none.
  struct IssuedCall {
    std::uint64_t generation = 0;
    CallKey arguments;  // in place unset: the check decides it
    int tag = 0;
    const void* input = nullptr;
    const void* output = nullptr;
    bool inPlace = false;
  };
  // The last call planned by the thread running calls, and what plan() decided for it.
  struct PlannedCall {
    bool valid = false;
    std::uint64_t memo = 0;  // its generation (OpRequest::memo); 0: not remembered
    CallKey shape;
    bool sharedBuffers = false;
    std::string requested;  // the algorithm the call's options forced (empty: none)
    std::string forced;     // what forced it: requested, else TUTTI_ALGO's (empty: none)
    CallPlan plan;
  };

  /// The algorithm a call of `kind` must run: `requested`, else TUTTI_ALGO's, else empty.
  std::string_view forcedAlgorithm(std::string_view requested, Collective kind) const;
  /// What a call runs: the algorithm and the segment, in elements.
  struct Chosen {
    const AlgorithmInfo* algorithm = nullptr;
    std::uint64_t segmentCount = 1;
  };
  /// The algorithm `spec` runs (`forced`, else the tuner's or the table's choice) and its
  /// segment.
  Result<Chosen> choose(const CollectiveSpec& spec, std::string_view forced) const;
  /// The plan of `spec` with `algorithm`: cached, or built now (and cached).
  /// (with `segmentCount`, the tuner's, in place of the spec's: a v-collective's calls are
  /// planned every time, and a copy of the spec would copy its arrays each time)
  const Plan& planFor(const CollectiveSpec& spec, const AlgorithmInfo& algorithm,
                      std::uint64_t segmentCount);
  std::size_t flatBytesFor(const CollectiveSpec& spec, const AlgorithmInfo& algorithm) const;
  /// The spec of `call` on `rank`, as verifyCall and algorithmFor build one.
  CollectiveSpec representativeSpec(const CallShape& call, int rank) const;

  const Setup setup_;
  // TUTTI_SEGMENT_BYTES in elements of each dtype, computed once rather than per call.
  std::array<std::uint64_t, kNumDataTypes> segmentCounts_{};
  std::map<PlanKey, Plan, PlanLess> plans_;
  bool held_ = false;
  IssuedCall issued_;          // the thread issuing calls'
  std::uint64_t generations_ = 0;  // the thread issuing calls'
  PlannedCall last_;           // the thread running calls'
  // The shapes learning their contenders (and those with none: null), by their call (in
  // place cleared: it may differ between ranks) and whether their buffers are shared; the
  // last one looked up, by its generation. The thread running calls'.
  // Changed by the thread running calls under learnMutex_, which algorithmFor() takes to
  // read it from any thread.
  std::map<std::pair<CallKey, bool>, std::unique_ptr<AlgorithmLearner::Shape>> learning_;
  mutable std::mutex learnMutex_;
  std::uint64_t learnMemo_ = 0;
  bool learnShared_ = false;
  AlgorithmLearner::Shape* learnShape_ = nullptr;

};

}  // namespace tutti::detail
