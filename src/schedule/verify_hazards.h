#pragma once
// The verifier's per-rank static checks (verifier.h, items 4 and part of 2): the shape of
// each step, region bounds, and data hazards between steps. No other rank is involved.

#include "schedule/schedule.h"
#include "schedule/verify_common.h"
#include "tutti/status.h"

namespace tutti::verify {

/// Checks each step of `schedule` on its own: a known op, peers that are other ranks of the
/// world, dependencies on earlier steps only, equal source and destination counts where
/// the op combines them, every region inside its buffer, source and destination either the
/// same elements or disjoint, no write to a read-only input, no finalize on a send.
/// kInternal naming the rank, the step and the problem.
Status checkStructure(const Schedule& schedule, const RankBuffers& buffers);

/// Checks that every two steps whose regions conflict (one writes elements the other reads
/// or writes, after in-place aliasing) are ordered by dependencies, directly or
/// transitively, so that no interleaving the executor allows can race. Requires
/// checkStructure() to have passed. kInternal naming both steps and the elements.
///
/// Cost: one sweep over the accesses in step order per address space (an interval map of
/// the last writer and the readers since), so linear in the steps for the usual schedules;
/// a step whose ordering is only transitive costs one bounded search of its ancestors.
Status checkHazards(const Schedule& schedule, const RankBuffers& buffers);

}  // namespace tutti::verify
