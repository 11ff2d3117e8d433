#pragma once
// Runs one collective on a communicator with data whose every element is known, and checks
// every element of the result against an expectation computed here — from the collective's
// definition and the data generator, never from the library's own code.
//
// Inputs come from tools/bench/data.h (exact for every dtype and op: reductions cannot
// round, so any combining order must give the expected bits). v-collectives get uneven
// per-rank counts with zeros and gaps between blocks.

#include <string>
#include <vector>

#include "schedule/collective.h"
#include "tutti/communicator.h"

namespace tutti::test {

struct CollectiveCase {
  Collective kind = Collective::kAllReduce;
  std::size_t count = 0;  // per rank block, as collective.h defines it (ignored by v-kinds)
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  bool inPlace = false;
  std::string algorithm;  // forced by name; empty lets tutti choose
  bool async = false;     // run through the ...Async call and wait
  // The ranks' hosts as the communicator sees them (owned by the caller); null: not known,
  // so that hierarchical algorithms do not apply (algorithmApplies).
  const HostMap* hosts = nullptr;
};

/// Per-rank counts used for v-collectives with base count `count` in a world of `n`:
/// uneven, some zero (deterministic).
std::vector<std::size_t> vCounts(std::size_t count, int n);
/// Displacements with a one-element gap after every block.
std::vector<std::size_t> vDispls(const std::vector<std::size_t>& counts);
/// Elements rank `from` sends rank `to` in the alltoallv cases.
std::size_t alltoallvCount(std::size_t count, int from, int to);

/// Runs the case on `comm` (all ranks must call it with the same case) and returns "" or
/// what was wrong on this rank, e.g. "allgather count=5 int32 ring out-of-place: 3 wrong
/// elements, first at 7 (got 12, expected 40)".
std::string runAndCheck(Communicator& comm, const CollectiveCase& c);

/// True when the case's forced algorithm applies on `rank` of a world of `n` (always when
/// no algorithm is forced): its registry entry's unsupportedReason() is empty.
bool algorithmApplies(const CollectiveCase& c, int rank, int n);

/// Human-readable name of a case, for messages.
std::string describeCase(const CollectiveCase& c);

}  // namespace tutti::test
