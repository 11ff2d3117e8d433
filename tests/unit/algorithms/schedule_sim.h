#pragma once
// A small reference runner for the tree algorithms' tests, until the symbolic verifier
// (schedule/verifier.h) lands: it runs every rank's schedule in one process, on element
// values that record where they came from, and checks each output element against the
// collective's definition (collective.h).
//
//  - Values: input element j of rank r is a 64-bit hash h(r, j) with one term. Reductions
//    add hashes and term counts; a finalized value that is combined again, or finalized
//    twice, is marked bad. Scratch and output start as garbage that never matches.
//  - Execution: the executor's policy (steps issued in order as their dependencies
//    complete, at most `window` in flight per rank) with unbuffered messages (a send
//    completes only with its matching receive, the worst case); no progress before every
//    step completes is a deadlock.
//  - Matching: message indices and element counts of each send and its receive agree.
//  - Hazards: two steps of one rank whose regions conflict (one writes what the other reads
//    or writes, with in-place aliasing resolved) must be ordered by dependencies.
// Returns "" or the first problem found.

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/collective.h"
#include "schedule/schedule.h"

namespace tutti::test {

struct SimStats {
  std::vector<std::uint64_t> messagesSent;  // per rank
  std::vector<std::uint64_t> elementsSent;  // per rank
};

/// Runs `schedules[r]`, built for `specs[r]`, and checks the results; "" when correct.
std::string simulateSchedules(const std::vector<CollectiveSpec>& specs,
                              const std::vector<Schedule>& schedules, std::size_t window = 16,
                              SimStats* stats = nullptr);

}  // namespace tutti::test
