#pragma once
// Command line of tutti-bench, with nccl-tests' flags and defaults:
//   tutti-bench allreduce -b 8 -e 16M -f 4 -n 20 -w 5 -c 1 -d float -o sum --json r.json
//   tutti-bench all -b 0 -e 64K -f 8 -r -1     (every collective in turn; every root)
//   tutti-bench allreduce --sizes 8,64K,4M,256M -n 200 --iter-bytes 1G --no-in-place
// Without -b/-e the benchmark runs one row of 32 MiB, as nccl-tests does.

#include <cstdint>
#include <string>
#include <vector>

#include "bench/collectives.h"
#include "tutti/status.h"
#include "tutti/types.h"

namespace tutti::bench {

/// How per-rank times are combined into the reported time (-a, nccl-tests' meaning).
enum class TimeAverage : int { kRank0 = 0, kMean = 1, kMin = 2, kMax = 3 };

/// "rank0", "avg", "min" or "max".
const char* timeAverageName(TimeAverage average);

inline constexpr std::uint64_t kDefaultMinBytes = 32ull << 20;
inline constexpr std::uint64_t kDefaultMaxBytes = 32ull << 20;
inline constexpr std::uint64_t kDefaultStepBytes = 1ull << 20;
/// The most sizes one sweep may have, so that a small -i on a large range is an error
/// rather than a run that never ends.
inline constexpr std::size_t kMaxSweepSizes = 1 << 16;
/// Blocks per row when several --algo candidates take turns and --blocks is not given.
inline constexpr int kDefaultBlocks = 5;

/// Everything the command line sets.
struct BenchOptions {
  /// The collectives to run, in order (entries of collectiveTable()); "all" selects every one.
  std::vector<const CollectiveEntry*> collectives;
  std::uint64_t minBytes = kDefaultMinBytes;  ///< -b
  std::uint64_t maxBytes = kDefaultMaxBytes;  ///< -e
  std::uint64_t stepBytes = kDefaultStepBytes;  ///< -i, added when stepFactor is 1
  std::uint64_t stepFactor = 1;               ///< -f, multiplies when > 1
  /// --sizes: the sizes to run, ascending, in place of the sweep of -b/-e/-f/-i (which
  /// then hold its first and last size for the report); empty: the sweep.
  std::vector<std::uint64_t> sizeList;
  int iters = 20;                             ///< -n, timed operations per row
  /// --iter-bytes: a row of S bytes times itersFor() operations, at most -n, so that the
  /// large sizes of a sweep take about as long as the small ones; 0: every row times -n.
  std::uint64_t iterBytes = 0;
  /// false (--no-in-place): only the out-of-place form of each row is timed and checked.
  bool inPlace = true;
  int warmupIters = 5;                        ///< -w, untimed operations before them
  /// --min-warmup: at least this many untimed operations per row, whatever --iter-bytes
  /// leaves of -w (a communicator's first calls of a shape still learn how its large
  /// messages go: core/path_learner.h).
  int minWarmupIters = 0;
  int check = 1;                              ///< -c, checked operations per row (0: none)
  std::vector<DataType> dtypes{DataType::kFloat32};  ///< -d, in loop order
  std::vector<ReduceOp> ops{ReduceOp::kSum};         ///< -o, in loop order
  int root = 0;                               ///< -r, for rooted collectives; -1: each in turn
  TimeAverage average = TimeAverage::kMean;   ///< -a
  /// --algo: the candidates every row runs, in order; "" (written "auto") lets the library
  /// choose. One candidate, the library's choice, by default. With several, each row runs
  /// all of them in one process, their timed calls interleaved (--blocks), so that they are
  /// compared under the same conditions (the machine's state drifts between launches).
  std::vector<std::string> algorithms{std::string()};
  /// --blocks: into how many blocks each candidate's timed calls of a row are split, the
  /// candidates taking turns block by block; 0: kDefaultBlocks with several candidates, 1
  /// with one (blocksFor()).
  int blocks = 0;
  bool verify = false;                        ///< --verify: prove each row's schedules first
  /// -R: 1 allocates the buffers with tutti::memAlloc (peers on this host map them), as
  /// nccl-tests' -R registers its buffers; 0 (default) with the heap.
  int registerBuffers = 0;
  /// -z: 1 issues every collective as its ...Async form and waits for it (the path of
  /// frameworks that make every collective async work, PyTorch's process groups); 0
  /// (default) makes blocking calls.
  int async = 0;
  /// --compute: microseconds of busy work after issuing each collective (with -z 1 before
  /// waiting for it, else after it returns): how much of a call a computation hides.
  double computeUs = 0;
  std::string jsonPath;                       ///< --json, empty: no JSON file
  std::string commandLine;                    ///< argv joined, for the report header
};

/// The result of parsing: options to run with, or a help text to print (exit status 0).
struct ParsedArgs {
  BenchOptions options;
  bool helpRequested = false;
  std::string helpText;
};

/// Parses argv (argv[0] is the program). Errors are kInvalidArgument with a message naming
/// the flag and value: unknown flags, malformed numbers or sizes, -b > -e, unknown
/// collective, data type or operator (listing the known ones), out-of-range values.
/// Never throws and never prints.
Result<ParsedArgs> parseArgs(int argc, const char* const* argv);

/// The nominal byte sizes of the sweep, before any rounding to the data type: --sizes where
/// given; else from -b to -e, multiplying by -f when it is above 1 and adding -i otherwise.
/// After a size of 0 the sweep continues at 1 (a product would stay 0). kInvalidArgument when -b > -e, when the
/// step cannot advance, or when the sweep would exceed kMaxSweepSizes.
Result<std::vector<std::uint64_t>> sizeSweep(const BenchOptions& options);

/// The timed operations of a row of `rowBytes`: -n, or with --iter-bytes B,
/// min(-n, max(1, B / rowBytes)) (a row of no bytes times -n). The same on every rank.
int itersFor(const BenchOptions& options, std::uint64_t rowBytes);

/// The warm-up operations of a row: -w, but never more than the row's timed ones.
int warmupItersFor(const BenchOptions& options, std::uint64_t rowBytes);

/// The blocks a row of `iters` timed calls per candidate is split into: --blocks (or its
/// default), at most `iters`, at least 1.
int blocksFor(const BenchOptions& options, int iters);

/// The --algo entry as written: the name, or "auto" for the library's choice.
std::string candidateName(const std::string& algorithm);

/// Data types in nccl-tests' order for "-d all": int8 uint8 int32 uint32 int64 uint64
/// float16 float32 float64 bfloat16.
std::vector<DataType> allDataTypes();

/// Operators in nccl-tests' order for "-o all": sum prod max min avg.
std::vector<ReduceOp> allReduceOps();

}  // namespace tutti::bench
