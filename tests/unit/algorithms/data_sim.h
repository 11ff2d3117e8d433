#pragma once
// A test-only executor of every rank's schedule on concrete data, in one process, with no
// network: input element j of rank r holds the label inputLabel(r, j), every other element
// starts as kGarbage, and the result is compared by the tests with the collective's
// definition. It complements the symbolic verifier (src/schedule/verifier.h) with a second,
// independent check of the data movement algorithms (no reductions).
//
// Execution follows the executor's policy (SimOptions::inOrder): per rank, steps are issued
// in order when their dependencies are complete and fewer than `window` are in flight; or,
// to expose undeclared hazards, any step is issued as soon as its own dependencies are
// complete (what the dependencies alone guarantee, which is all an algorithm may rely on).
// Copies run some time after they are issued and a send reads its source only when it meets
// its receive (no buffering: the worst case for deadlocks). Among the events possible at
// each moment one is chosen at random from `seed`, so a missing dependency shows up as
// wrong data in some orders.

#include <cstdint>
#include <vector>

#include "schedule/collective.h"
#include "schedule/schedule.h"
#include "tutti/status.h"

namespace tutti::testing {

/// Never a label: marks elements nothing wrote.
inline constexpr std::uint64_t kGarbage = ~std::uint64_t{0};

/// The value input element j of rank r starts with.
constexpr std::uint64_t inputLabel(int rank, std::uint64_t j) {
  return (static_cast<std::uint64_t>(rank) + 1) << 40 | j;
}

struct SimResult {
  std::vector<std::vector<std::uint64_t>> outputs;  // per rank, bufferLayout().outputCount
  std::vector<std::uint64_t> messagesSent;          // per rank
  std::vector<std::uint64_t> elementsSent;          // per rank
};

struct SimOptions {
  std::size_t window = 16;  // steps in flight per rank (inOrder only)
  bool inOrder = true;      // the executor's in-order issue; false: dependencies only
  std::uint64_t seed = 1;
};

/// One spec per rank of an n-rank world, equal but for the rank.
std::vector<CollectiveSpec> uniformSpecs(Collective kind, int n, std::uint64_t count,
                                         bool inPlace, DataType dtype = DataType::kFloat32,
                                         ReduceOp op = ReduceOp::kSum);

/// Runs `schedules[r]` for `specs[r]` (send, recv and copy steps only). Errors (kInternal)
/// name the rank and step: a region outside its buffer, a send meeting a receive of another
/// size, a deadlock (with what every rank waits for), an unsupported step.
Status simulateData(const std::vector<CollectiveSpec>& specs,
                    const std::vector<Schedule>& schedules, const SimOptions& options,
                    SimResult* result);

}  // namespace tutti::testing
