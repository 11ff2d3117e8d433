#pragma once
// The Verifier (DESIGN.md 3): runs every rank's schedule symbolically, in one process, with
// no network, and proves a collective correct for a given world and shape:
//
//  1. Result: each element is tracked as the set of contributions it holds (which rank's
//     input element, possibly several reduced together, and whether the operator's
//     finalization was applied). When every schedule has completed, every output element on
//     every rank must hold exactly what the collective's definition (collective.h) says —
//     no contribution missing or counted twice, finalized exactly once where the collective
//     reduces.
//  2. Matching: every send meets exactly one receive on the peer, with the same message
//     index and the same element count; nothing is left unmatched.
//  3. Progress: executed with the executor's policy (steps issued in order as their
//     dependencies complete, at most `maxInflight` in flight per rank) and with *no*
//     buffering (a send completes only together with its matching receive — the worst
//     case), every rank completes: no order of completion can deadlock.
//  4. Bounds and hazards: every region lies inside its buffer (input, output, scratch, as
//     bufferLayout() sizes them, with in-place aliasing), no step partially overlaps its own
//     source and destination, and two steps whose regions conflict (one writes what the
//     other reads or writes) are ordered by dependencies, so no race is possible.
//  5. Barrier: the barrier's synchronisation property — each rank's last step causally
//     follows every other rank's first — is checked through messages, dependencies and
//     (unless VerifyOptions::inOrderIssue is false) the executor's in-order issue.
//
// Errors are kInternal (a wrong algorithm is our bug) with a message naming the rank, the
// step and what was wrong, e.g. "rank 3 out[12..16) holds in_0..2[j], but allreduce defines
// in_0..7[j], finalized: missing ranks 3..7". The representation is interval-based
// (contiguous runs of elements that moved together), so the cost is per step, never per
// element: about a microsecond per step, e.g. 1.5 s for the 2M steps of a 1,024-rank ring
// all-reduce.

#include <cstdint>
#include <vector>

#include "schedule/collective.h"
#include "schedule/schedule.h"
#include "tutti/status.h"

namespace tutti {

struct VerifyOptions {
  /// The executor's window (TUTTI_MAX_INFLIGHT's default).
  std::size_t maxInflight = 16;
  /// Barrier knowledge may flow through the executor's in-order issue: step i is issued
  /// only after step i - 1 was, which was after i - 1's dependencies had completed. (A
  /// dissemination barrier whose round-k send waited for the round k-1 receive only would
  /// rely on it; ours chains sends and receives so that it does not.) False checks
  /// dependencies alone, for an executor that could issue out of order.
  bool inOrderIssue = true;
};

/// What the verification measured, for checking an algorithm's documented costs.
struct VerifyStats {
  std::uint64_t messages = 0;             // matched send/receive pairs, all ranks
  std::uint64_t maxElementsSentByRank = 0;  // the largest total any one rank sent
  std::uint64_t maxMessagesSentByRank = 0;
  /// Length of the longest chain of messages that must happen one after another (the
  /// latency term: ring all-reduce has 2(n-1) per segment pipeline, a binomial tree log2 n).
  std::uint64_t criticalPathMessages = 0;
};

/// Verifies `schedules[r]`, built for `specs[r]`, r = 0..n-1 (the specs differ only in rank,
/// and for alltoallv in their own arrays). OK or the first problem found, as kInternal
/// prefixed with the call ("allreduce on 8 ranks, count 9, segment 7, in place: rank 3
/// step 12 (...): ..."); kInvalidArgument when the specs themselves are inconsistent.
///
/// Point-to-point: every rank's spec is a send or a receive, and the ranks pair up (a send
/// to d on rank s, a receive from s of the same count on rank d). A rank that takes no
/// part has a send or receive spec with peer -1 and count 0 (and, normally, an empty
/// schedule), so that odd worlds can be verified too.
///
/// Out of place, the input buffer is the caller's read-only data and no step may write
/// it; in place, the one buffer may be used freely. Cost: about linear in the steps of all
/// ranks (plus a sort of each rank's receives); no work per element.
Status verifySchedules(const std::vector<CollectiveSpec>& specs,
                       const std::vector<Schedule>& schedules, const VerifyOptions& options = {},
                       VerifyStats* stats = nullptr);

}  // namespace tutti
