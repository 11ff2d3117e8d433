#pragma once
// The verifier's whole-world passes over messages (verifier.h, items 2 and 3): matching
// every send half with its receive half, and running all ranks together under the
// executor's issue policy with rendezvous sends, to prove that no rank can get stuck.
//
// Steps of all ranks are numbered globally: rank r's step i is Matching::base[r] + i.

#include <cstdint>
#include <vector>

#include "schedule/schedule.h"
#include "schedule/verifier.h"
#include "tutti/status.h"

namespace tutti::verify {

/// A step of some rank.
struct StepRef {
  std::int32_t rank = -1;
  StepId step = 0;
};

/// Who meets whom: for every step with a send half, the step that receives it, and for
/// every step with a receive half, the step that sent it (rank -1 where the step has no
/// such half).
struct Matching {
  std::vector<std::uint64_t> base;   // per rank: global number of its step 0
  std::vector<StepRef> sendPartner;  // per global step
  std::vector<StepRef> recvPartner;  // per global step
};

/// Pairs each send half (rank s, to d, message index k) with the receive half (rank d,
/// from s, index k), and checks that both carry the same element count. kInternal naming
/// both ranks and steps for a send or receive without partner, two steps using the same
/// index, or a count mismatch. Fills stats' message counts. Requires checkStructure() on
/// every schedule. Cost: a sort of each rank's receives, a binary search per send.
Status matchMessages(const std::vector<Schedule>& schedules, Matching* matching,
                     VerifyStats* stats);

/// Told about every step as the simulation runs it; a returned error stops the run.
class StepObserver {
 public:
  virtual ~StepObserver() = default;
  /// `rank` issues `step`: its dependencies are complete (called before anything else).
  virtual Status onIssue(int rank, StepId step) = 0;
  /// A local step (copy, reduce) runs to completion, including its finalize.
  virtual Status onLocal(int rank, StepId step) = 0;
  /// The message of `sender`'s `sendStep` reaches `receiver`'s `recvStep`, which computes
  /// (and finalizes) its result; a fused receiver sends it on afterwards.
  virtual Status onTransfer(int sender, StepId sendStep, int receiver, StepId recvStep) = 0;
};

/// Runs every rank's schedule together as the executor would: steps issued strictly in
/// order once their dependencies are complete and fewer than `maxInflight` steps are in
/// flight (0 counts as 1); local steps complete at issue; a send half completes only when
/// its receive half is posted (no buffering: the worst case), after which the receive
/// computes and a fused step posts its own send half. Event-driven (ranks are revisited
/// only when one of their steps completes), so the cost is linear in steps plus
/// dependencies. kInternal describing a few stuck ranks, what each waits for and on whom,
/// when the run stops with steps incomplete. Fills stats' critical path.
///
/// One run decides for every execution: issuing a step or completing one only ever enables
/// more (a posted half stays posted, a complete step stays complete), so every fair
/// execution reaches the same final state whatever order the events are taken in.
Status simulateProgress(const std::vector<Schedule>& schedules, const Matching& matching,
                        std::size_t maxInflight, const std::vector<StepObserver*>& observers,
                        VerifyStats* stats);

}  // namespace tutti::verify
