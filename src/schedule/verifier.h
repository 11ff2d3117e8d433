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
//     follows every other rank's first — is checked through the dependencies.
//
// Errors are kInternal (a wrong algorithm is our bug) with a message naming the rank, the
// step and what was wrong, e.g. "rank 3 output[12..16): holds rank 1's elements twice".
// The representation is interval-based (contiguous runs of elements that moved together),
// so 1,024 ranks verify in well under a second for the classic algorithms.

#include <cstdint>
#include <vector>

#include "schedule/collective.h"
#include "schedule/schedule.h"
#include "tutti/status.h"

namespace tutti {

struct VerifyOptions {
  /// The executor's window (TUTTI_MAX_INFLIGHT's default).
  std::size_t maxInflight = 16;
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
/// and for alltoallv in their own arrays). OK or the first problem found.
Status verifySchedules(const std::vector<CollectiveSpec>& specs,
                       const std::vector<Schedule>& schedules, const VerifyOptions& options = {},
                       VerifyStats* stats = nullptr);

}  // namespace tutti
