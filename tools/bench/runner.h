#pragma once
// The benchmark driver shared by every collective: plans the rows, times them, checks
// their results and reports. It talks to a BenchComm, so it runs unchanged over
// tutti::Communicator (tutti_comm.h) and over the fakes of the unit tests.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "bench/bench_comm.h"
#include "bench/collectives.h"
#include "bench/options.h"
#include "bench/report.h"
#include "tutti/status.h"

namespace tutti::bench {

/// One row to run: one size of one (data type, operator, root).
struct RowPlan {
  DataType dtype = DataType::kFloat32;
  /// nullopt for collectives that take no operator.
  std::optional<ReduceOp> op;
  /// -1 for collectives without a root.
  int root = -1;
  Counts counts;
  /// The size column: rowBytes(counts, type size).
  std::uint64_t bytes = 0;
};

/// The rows of `entry` in nccl-tests' loop order: for each data type, each operator, each
/// root, each size of `sizes` (sizeSweep()). Sizes are rounded down to whole elements, and
/// to whole rank multiples where the collective splits its buffer by rank; consecutive
/// sizes that round to the same row are run once. A collective that moves no data
/// (barrier) has one row. kInvalidArgument when -r names a rank outside [0, nranks) for a
/// rooted collective.
Result<std::vector<RowPlan>> planRows(const CollectiveEntry& entry, const BenchOptions& options,
                                      const std::vector<std::uint64_t>& sizes, int nranks);

/// The outcome of a run that completed (possibly with wrong elements).
struct RunSummary {
  /// Every row of every collective run, in order.
  std::vector<RowResult> rows;
  /// Wrong elements over all rows, placements and ranks.
  std::int64_t wrong = 0;
  /// Mean bus bandwidth over rows and placements, GB/s.
  double avgBusbwGBs = 0;
};

/// Runs the whole sweep of every collective in options.collectives, in turn; every rank of
/// `comm` must call it with the same options. For each row and placement (out of place,
/// then in place where the collective has it): fills the input, runs the warm-up
/// operations, a barrier, then times `iters` operations back to back and combines the
/// per-operation time over ranks as -a says; then, -c times, fills the input afresh, runs
/// once and compares every output element the definition specifies on this rank with the
/// expectation, summing the wrong count over ranks. With several --algo candidates, a row
/// becomes one row per candidate: each candidate's warm-ups run in turn, then their timed
/// calls take turns in blocks (A B C, B C A, ..., each block after an untimed call of its
/// candidate and a barrier), then each is checked. Rank 0 prints, per collective, the
/// settings, the table and its summary to `out` (and a total line when there are several),
/// and writes options.jsonPath; other ranks print nothing.
/// Blocks in collective calls, each bounded by the communicator's deadlines. Errors: the
/// first failed call's Status with the row as context; an --algo the library rejects for
/// any row of any collective, or a lone collective the world is too small for (both before
/// anything runs); buffers that cannot be allocated; the JSON file's error. Wrong elements
/// are not an error: they are counted in the summary.
Result<RunSummary> runBenchmark(BenchComm& comm, const BenchOptions& options, std::FILE* out);

}  // namespace tutti::bench
