// The verifier's driver: checks that the specs describe one call, then runs the passes in
// the order that makes each one's assumptions hold. Structure first (the other passes
// index buffers and steps through it), matching next (the simulation follows partners),
// hazards before the simulation (a race-free schedule has one outcome, whatever order
// the simulation picks among ready steps), and the outputs last.
//
//   verify_common   buffers after aliasing, how steps are named in errors
//   verify_hazards  per-rank structure, bounds and data hazards
//   verify_progress message matching and the rendezvous simulation (deadlock, critical path)
//   verify_data     symbolic contents and the collective's definition; barrier knowledge
//   symbolic_buffer the interval representation of contents

#include "schedule/verifier.h"

#include "base/macros.h"
#include "base/strings.h"
#include "schedule/verify_common.h"
#include "schedule/verify_data.h"
#include "schedule/verify_hazards.h"
#include "schedule/verify_progress.h"

namespace tutti {
namespace {

// A rank left out of a point-to-point world (verifier.h).
bool idle(const CollectiveSpec& spec) {
  return isPointToPoint(spec.kind) && spec.peer < 0 && spec.count == 0;
}

Status checkPair(const std::vector<CollectiveSpec>& specs, const CollectiveSpec& s) {
  const CollectiveSpec& p = specs[static_cast<std::size_t>(s.peer)];
  const Collective partner = s.kind == Collective::kSend ? Collective::kRecv : Collective::kSend;
  TUTTI_CHECK_ARG(p.kind == partner && p.peer == s.rank && p.count == s.count,
                  "rank %d's %s with rank %d (count %llu) has no matching %s on rank %d (it "
                  "has %s with peer %d, count %llu)",
                  s.rank, collectiveName(s.kind), s.peer, static_cast<unsigned long long>(s.count),
                  collectiveName(partner), s.peer, collectiveName(p.kind), p.peer,
                  static_cast<unsigned long long>(p.count));
  return Status::Ok();
}

// Fields every rank of one collective call shares (alltoallv's arrays are per rank).
Status checkAgreement(const std::vector<CollectiveSpec>& specs, const CollectiveSpec& s) {
  const CollectiveSpec& a = specs[0];
  TUTTI_CHECK_ARG(s.kind == a.kind && s.count == a.count && s.root == a.root &&
                      s.inPlace == a.inPlace && s.op == a.op && s.dtype == a.dtype,
                  "rank %d's spec (%s, count %llu, root %d) disagrees with rank 0's (%s, count "
                  "%llu, root %d)",
                  s.rank, collectiveName(s.kind), static_cast<unsigned long long>(s.count), s.root,
                  collectiveName(a.kind), static_cast<unsigned long long>(a.count), a.root);
  if (s.kind != Collective::kAllToAllV) {
    TUTTI_CHECK_ARG(s.counts == a.counts && s.displs == a.displs,
                    "rank %d's counts or displacements differ from rank 0's", s.rank);
    return Status::Ok();
  }
  for (std::size_t b = 0; b < specs.size(); ++b) {
    TUTTI_CHECK_ARG(
        specs[b].counts[static_cast<std::size_t>(s.rank)] == s.recvCounts[b],
        "alltoallv: rank %zu sends %llu elements to rank %d, which expects %llu", b,
        static_cast<unsigned long long>(specs[b].counts[static_cast<std::size_t>(s.rank)]), s.rank,
        static_cast<unsigned long long>(s.recvCounts[b]));
  }
  return Status::Ok();
}

// kInvalidArgument when the inputs do not describe one call of one world.
Status checkSpecs(const std::vector<CollectiveSpec>& specs,
                  const std::vector<Schedule>& schedules) {
  TUTTI_CHECK_ARG(!specs.empty(), "no specs to verify");
  TUTTI_CHECK_ARG(schedules.size() == specs.size(), "%zu schedules for %zu specs", schedules.size(),
                  specs.size());
  const int n = static_cast<int>(specs.size());
  const bool p2p = isPointToPoint(specs[0].kind);
  for (int r = 0; r < n; ++r) {
    const CollectiveSpec& s = specs[static_cast<std::size_t>(r)];
    const Schedule& schedule = schedules[static_cast<std::size_t>(r)];
    TUTTI_CHECK_ARG(s.rank == r && s.size == n, "spec %d says rank %d of %d ranks", r, s.rank,
                    s.size);
    TUTTI_CHECK_ARG(schedule.rank == r && schedule.size == n,
                    "schedule %d was built for rank %d of %d ranks", r, schedule.rank,
                    schedule.size);
    TUTTI_CHECK_ARG(isPointToPoint(s.kind) == p2p,
                    "rank %d's %s cannot be verified together with rank 0's %s", r,
                    collectiveName(s.kind), collectiveName(specs[0].kind));
    if (idle(s)) continue;
    TUTTI_RETURN_IF_ERROR(validateSpec(s));
    TUTTI_RETURN_IF_ERROR(p2p ? checkPair(specs, s) : checkAgreement(specs, s));
  }
  return Status::Ok();
}

std::string describeCall(const CollectiveSpec& s) {
  std::string text = strFormat("%s on %d ranks", collectiveName(s.kind), s.size);
  if (!isPointToPoint(s.kind) && s.kind != Collective::kBarrier)
    text += strFormat(", count %llu, segment %llu", static_cast<unsigned long long>(s.count),
                      static_cast<unsigned long long>(s.segmentCount));
  if (isRooted(s.kind)) text += strFormat(", root %d", s.root);
  if (s.inPlace) text += ", in place";
  return text;
}

Status verifyAll(const std::vector<CollectiveSpec>& specs, const std::vector<Schedule>& schedules,
                 const VerifyOptions& options, VerifyStats* stats) {
  std::vector<verify::RankBuffers> buffers;
  buffers.reserve(specs.size());
  for (std::size_t r = 0; r < specs.size(); ++r) {
    buffers.emplace_back(specs[r], schedules[r].scratchCount);
    TUTTI_RETURN_IF_ERROR(verify::checkStructure(schedules[r], buffers[r]));
  }
  verify::Matching matching;
  TUTTI_RETURN_IF_ERROR(verify::matchMessages(schedules, &matching, stats));
  for (std::size_t r = 0; r < specs.size(); ++r)
    TUTTI_RETURN_IF_ERROR(verify::checkHazards(schedules[r], buffers[r]));

  verify::SymbolicRun data(specs, schedules, buffers);
  std::vector<verify::StepObserver*> observers{&data};
  const bool barrier = specs[0].kind == Collective::kBarrier;
  std::optional<verify::BarrierKnowledge> knowledge;
  if (barrier) observers.push_back(&knowledge.emplace(schedules, matching, options.inOrderIssue));
  TUTTI_RETURN_IF_ERROR(
      verify::simulateProgress(schedules, matching, options.maxInflight, observers, stats));
  TUTTI_RETURN_IF_ERROR(data.checkOutputs());
  return barrier ? knowledge->check() : Status::Ok();
}

}  // namespace

Status verifySchedules(const std::vector<CollectiveSpec>& specs,
                       const std::vector<Schedule>& schedules, const VerifyOptions& options,
                       VerifyStats* stats) {
  TUTTI_RETURN_IF_ERROR(checkSpecs(specs, schedules));
  VerifyStats measured;
  Status status = verifyAll(specs, schedules, options, &measured);
  if (!status.ok()) return status.withContext(describeCall(specs[0]));
  if (stats != nullptr) *stats = measured;
  return Status::Ok();
}

}  // namespace tutti
