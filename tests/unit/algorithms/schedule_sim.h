#pragma once
// A test-only executor of schedules: runs every rank's schedule in one process on symbolic
// data and checks the collective's result, so that algorithm tests do not need the network.
//
// It follows the executor's policy (steps issued in order as their dependencies complete,
// at most `window` in flight per rank) with *rendezvous* messages: a send completes only
// together with its matching receive, the worst case for deadlocks. Each element is
// symbolic: its position in the input, the set of ranks whose contributions it holds (a
// bitmask, so worlds of at most 64 ranks) and a hash of the ordered expression tree that
// produced it, so that ranks of an all-reduce can be required to hold bit-identical
// results. It checks:
//  - messages: matching index, equal sizes, nothing left unmatched, no deadlock;
//  - bounds: every region inside its buffer (bufferLayout, scratchCount), no step whose
//    source and destination partially overlap;
//  - hazards: two steps of a rank whose regions conflict (one writes what the other reads
//    or writes, with in-place aliasing) are ordered by dependencies;
//  - results: allreduce, allgather(v) and reducescatter(v) outputs per collective.h, with
//    the finalization applied exactly once and only after every contribution (optional
//    over one rank, where it divides by 1);
//    allreduce results identical (same expression tree) on every rank.

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/collective.h"
#include "schedule/schedule.h"

namespace tutti::testing {

struct SimOptions {
  std::size_t window = 16;
  bool checkHazards = true;
};

/// What the run measured, for checking an algorithm's documented costs.
struct SimStats {
  std::uint64_t messages = 0;
  std::uint64_t maxElementsSentByRank = 0;
  std::uint64_t maxMessagesSentByRank = 0;
  std::uint64_t maxStepsByRank = 0;
  /// Longest chain of messages that must follow one another (through receives and
  /// dependencies).
  std::uint64_t criticalPathMessages = 0;
  std::uint64_t maxScratch = 0;
};

/// Runs schedules[r] (built for specs[r]) for every rank r and checks them. Returns an
/// empty string when everything holds, else the first problem found.
std::string simulate(const std::vector<CollectiveSpec>& specs,
                     const std::vector<Schedule>& schedules, const SimOptions& options = {},
                     SimStats* stats = nullptr);

/// Builds every rank's schedule of `spec` (its rank field is varied) and simulates them.
std::string buildAndSimulate(const CollectiveSpec& spec, Schedule (*build)(const CollectiveSpec&),
                             const SimOptions& options = {}, SimStats* stats = nullptr);

}  // namespace tutti::testing
