#pragma once
// The collective table: one small entry per collective the benchmark can run, after
// nccl-tests' `struct testColl`. An entry says how a row's size maps to the call's counts,
// how to fill inputs and expected outputs, and how to issue the call; the driver
// (runner.h) is shared by all of them, so adding a collective means adding an entry (and
// its BenchComm method), not a new code path.

#include <array>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_comm.h"
#include "tutti/status.h"
#include "tutti/types.h"

namespace tutti::bench {

/// Element counts of one call, derived from a row's nominal element count (bytes / type
/// size) as nccl-tests does, including its rounding to a multiple of the rank count for
/// collectives that split the buffer by rank.
struct Counts {
  /// Elements of each rank's input.
  std::size_t send = 0;
  /// Elements of each rank's output.
  std::size_t recv = 0;
  /// The `count` argument of the call.
  std::size_t param = 0;
  /// In place, the input starts at output buffer + rank * sendInPlaceOffset elements ...
  std::size_t sendInPlaceOffset = 0;
  /// ... and the output at output buffer + rank * recvInPlaceOffset elements.
  std::size_t recvInPlaceOffset = 0;
};

/// Counts of collective `kind` for a row of `count` elements on `nranks` ranks.
Counts collectiveCounts(Collective kind, std::size_t count, int nranks);

/// Bytes of a row as printed in the size column: the larger of input and output.
std::size_t rowBytes(const Counts& counts, std::size_t typeSize);

/// S in algbw = S / t (nccl-tests doc/PERFORMANCE.md): the whole array in bytes, which for
/// collectives whose count is per rank (all-gather, reduce-scatter, all-to-all, gather,
/// scatter) is count * type size * nranks.
double algorithmBytes(Collective kind, const Counts& counts, std::size_t typeSize, int nranks);

/// algbw in GB/s (1e9 bytes per second) for `bytes` in `seconds`; 0 when seconds <= 0, so
/// that a clock too coarse for a tiny row never prints infinity.
double algorithmBandwidth(double bytes, double seconds);

/// busbw = algbw * factor: 2(n-1)/n for all-reduce; (n-1)/n for all-gather,
/// reduce-scatter, all-to-all, gather and scatter; 1 for broadcast, reduce, send and
/// recv (sendrecv); 0 for barrier, which moves no data.
double busBandwidthFactor(Collective kind, int nranks);

/// Who is filling or checking data, and for which call.
struct DataContext {
  int rank = 0;
  int nranks = 1;
  DataType dtype = DataType::kFloat32;
  /// kSum for collectives that take no operator.
  ReduceOp op = ReduceOp::kSum;
  /// The root of rooted collectives, -1 otherwise.
  int root = -1;
};

/// The arguments of one call, with buffers already placed (in place or not).
struct CallArgs {
  const void* send = nullptr;
  void* recv = nullptr;
  /// The call's count argument (Counts::param).
  std::size_t count = 0;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = -1;
};

/// One collective the benchmark knows.
struct CollectiveEntry {
  /// Accepted names; the first is canonical, unused slots are empty.
  std::array<std::string_view, 3> names;
  /// The operation, for algorithmFor() and the bandwidth maths (kSend for sendrecv, whose
  /// algorithm is the send's).
  Collective kind;
  /// Takes a reduction operator, so rows loop over -o.
  bool reduces;
  /// Takes a root, so rows loop over -r.
  bool rooted;
  /// Moves data; false for barrier, which has one row whatever the sizes and types, with
  /// a time only.
  bool sized;
  /// Has an in-place form (NCCL's conventions, Counts' offsets); sendrecv and barrier do not.
  bool inPlace;
  /// Writes this rank's input (counts.send elements) at `input`.
  void (*fillInput)(void* input, const Counts& counts, const DataContext& context);
  /// Writes the output this rank must receive at `expected` and returns how many leading
  /// elements of the output that is: counts.recv, or 0 where the definition leaves the
  /// output unspecified (a rooted collective's output on the other ranks).
  std::size_t (*fillExpected)(void* expected, const Counts& counts, const DataContext& context);
  /// Issues the call and waits for it; `algorithm` empty lets the library choose.
  Status (*run)(BenchComm& comm, const CallArgs& call, const std::string& algorithm);

  /// The canonical name, e.g. "allreduce".
  std::string_view name() const { return names[0]; }
};

/// Every collective the benchmark can run.
std::span<const CollectiveEntry> collectiveTable();

/// The entry with this name or alias; kInvalidArgument listing the known names otherwise.
Result<const CollectiveEntry*> findCollective(std::string_view name);

/// The entries a command-line name selects: every entry, in table order, for "all"; else
/// the one findCollective() finds.
Result<std::vector<const CollectiveEntry*>> selectCollectives(std::string_view name);

/// "allreduce (all_reduce, all-reduce)", one entry per collective, comma separated.
std::string knownCollectives();

}  // namespace tutti::bench
