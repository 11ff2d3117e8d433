#pragma once
// What each collective means, as data: the description of one call on one rank
// (CollectiveSpec) and the shape of its buffers (BufferLayout). Algorithms build schedules
// from a spec; the verifier checks schedules against these definitions; the communicator
// validates users' arguments with the same layouts. Counts are elements, never bytes.
//
// Definitions (n ranks, rank q; in_r / out_r are rank r's input and output buffers):
//
//   allreduce       out_q[j] = op_r in_r[j]                       in: count      out: count
//   broadcast       out_q[j] = in_root[j]                         in: count@root out: count
//   reduce          out_root[j] = op_r in_r[j]                    in: count      out: count@root
//   allgather       out_q[b*count + j] = in_b[j]                  in: count      out: n*count
//   reducescatter   out_q[j] = op_r in_r[q*count + j]             in: n*count    out: count
//   gather          out_root[b*count + j] = in_b[j]               in: count      out: n*count@root
//   scatter         out_q[j] = in_root[q*count + j]               in: n*count@root out: count
//   alltoall        out_q[b*count + j] = in_b[q*count + j]        in: n*count    out: n*count
//   gatherv         out_root[displs[b] + j] = in_b[j], j < counts[b]
//   scatterv        out_q[j] = in_root[displs[q] + j], j < counts[q]
//   allgatherv      out_q[displs[b] + j] = in_b[j], j < counts[b]
//   reducescatterv  out_q[j] = op_r in_r[offset(q) + j], j < counts[q], offset = prefix sum
//   alltoallv       out_q[recvDispls[b] + j] = in_b[sendDispls_b[q] + j], j < recvCounts[b]
//   barrier         no data; no rank leaves before every rank has entered
//   send / recv     out_peer[j] = in_sender[j]
//
// ("@root": the buffer matters on the root only; elsewhere its length is 0.)
// Reductions apply the operator's finalization (kAvg: divide by n) exactly once per output
// element, after every contribution is in.
//
// In place: the input is a view into the output (NCCL's conventions): allreduce, broadcast,
// reduce and alltoall(v) use the same buffer; allgather(v) and gather(v) take the input at
// the rank's own block of the output; reducescatter(v) and scatter(v) write the output at
// the rank's own block of the input (there the *output* is the view into the input).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tutti/status.h"
#include "tutti/types.h"

namespace tutti {

/// What one call is on one rank, apart from its buffers and the v-collectives' arrays: the
/// one type the communicator's caches compare calls by (two calls with equal keys and equal
/// arrays are checked, chosen for and scheduled alike).
struct CallKey {
  Collective kind = Collective::kAllReduce;
  /// Uniform collectives: elements per rank block as the table above defines `count`.
  std::uint64_t count = 0;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;  // rooted collectives
  int peer = -1;  // send/recv
  bool inPlace = false;

  friend bool operator==(const CallKey&, const CallKey&) = default;
  friend auto operator<=>(const CallKey&, const CallKey&) = default;
  /// count elements of dtype, in bytes.
  std::uint64_t bytes() const;
};

/// True for send and recv.
inline bool isPointToPoint(Collective kind) {
  return kind == Collective::kSend || kind == Collective::kRecv;
}

/// Which host each rank of a communicator lives on (DESIGN.md 4, Hierarchy): what the
/// hierarchical algorithms read of the topology view. Hosts are numbered 0..H-1 in order of
/// their lowest rank, and each host's ranks are listed in ascending order, so every rank
/// builds the same map from the same view.
struct HostMap {
  std::vector<int> hostOf;               // per rank: its host
  std::vector<std::vector<int>> ranksOf;  // per host: its ranks, ascending
  std::vector<int> localIndex;            // per rank: its place among its host's ranks

  int hostCount() const { return static_cast<int>(ranksOf.size()); }
  int size() const { return static_cast<int>(hostOf.size()); }
  /// True when every host holds the same number of ranks.
  bool even() const;
  /// The map of ranks whose hosts are given by any labels (equal label: same host),
  /// renumbered as above.
  static HostMap fromLabels(const std::vector<int>& labels);
  /// Consecutive blocks of ranks: host h holds perHost[h] ranks (tests, the simulator).
  static HostMap blocks(const std::vector<int>& perHost);
  /// "2 hosts: {0,1} {2,3}" for messages.
  std::string toString() const;
};

/// Everything an algorithm needs to know about one call on one rank.
struct CollectiveSpec : CallKey {
  int rank = 0;
  int size = 1;
  /// Pipelining segment, in elements (>= 1).
  std::uint64_t segmentCount = 1;
  /// Every rank reaches every other through shared memory (one host). The same on every
  /// rank of a communicator; algorithm defaults may differ from a network's.
  bool sharedMemory = false;
  /// Every rank's input and output of this call come from tutti::memAlloc, so peers on the
  /// host can read them in place (agreed among the ranks for the call, so the same on
  /// every rank: FlatExchangeRunner::agreeOnBuffers, from 1 MiB). Only ever set with sharedMemory.
  bool sharedBuffers = false;
  /// The communicator's ranks by host, owned by the communicator (it outlives every spec
  /// of its calls; a plain pointer keeps copying a spec free of reference counts); null
  /// where no view was built (a communicator of one host, or tests of flat algorithms).
  /// Hierarchical algorithms need it, with size() == size.
  const HostMap* hosts = nullptr;
  /// v-collectives (one entry per rank). gatherv/scatterv/allgatherv: counts and displs of
  /// the gathered/scattered buffer (meaningful on every rank, as MPI requires them on the
  /// root only, tutti requires the same arrays on every rank). reducescatterv: counts only.
  /// alltoallv: counts/displs describe what this rank sends, recvCounts/recvDispls what it
  /// receives.
  std::vector<std::uint64_t> counts;
  std::vector<std::uint64_t> displs;
  std::vector<std::uint64_t> recvCounts;
  std::vector<std::uint64_t> recvDispls;
};

/// The shape of one rank's buffers for a call.
struct BufferLayout {
  std::uint64_t inputCount = 0;   // elements the input buffer must hold on this rank
  std::uint64_t outputCount = 0;  // elements the output buffer must hold on this rank
  /// In place: the input lives inside the output at this element offset...
  std::optional<std::uint64_t> inputInOutputAt;
  /// ...or the output lives inside the input at this element offset (reducescatter(v),
  /// scatter(v)).
  std::optional<std::uint64_t> outputInInputAt;
};

/// The buffer shape on spec.rank, including in-place aliasing when spec.inPlace.
BufferLayout bufferLayout(const CollectiveSpec& spec);

/// Checks the arguments that every rank taking part in the call passes alike: the data
/// type, operator, count and root of a collective, the counts and displacements the
/// v-collectives share (but alltoallv's, which are each rank's own), and the count, type
/// and size limit of a send and its receive. kInvalidArgument naming the argument and its
/// value. Every rank reaches the same verdict without communicating, as long as the ranks
/// do pass the same values; it cannot check that they do.
Status validateSharedArgs(const CollectiveSpec& spec);

/// Checks what is this rank's own, on a spec validateSharedArgs accepted: the peer of a
/// send or receive (another rank), alltoallv's arrays (sizes, limits, receive blocks that
/// do not overlap) and alltoallv in place (equal send and receive arrays).
/// kInvalidArgument naming the problem.
Status validateOwnArgs(const CollectiveSpec& spec);

/// The rule of calls in place that validateOwnArgs checks when spec.inPlace: alltoallv in
/// place sends and receives with the same arrays.
Status validateInPlaceArgs(const CollectiveSpec& spec);

/// validateSharedArgs, then validateOwnArgs: the spec's whole consistency.
Status validateSpec(const CollectiveSpec& spec);

/// The most elements any rank's buffer holds in this call (n * count for allgather, the
/// extent of the arrays for the v-collectives, ...). The same on every rank, but for
/// alltoallv, whose arrays are each rank's own. Call only on a spec whose arrays have one
/// entry per rank.
std::uint64_t largestBufferCount(const CollectiveSpec& spec);

/// True for the collectives that reduce (allreduce, reduce, reducescatter, reducescatterv).
bool isReduction(Collective kind);
/// True for the collectives with a root.
bool isRooted(Collective kind);

}  // namespace tutti
