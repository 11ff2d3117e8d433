#pragma once
// The model of the machine (DESIGN.md 4, Choosing an algorithm): what a message, a copy and
// a reduction cost on each class of path between two ranks, and what they share. The
// parameters are measured on the host by short probes (probe.h) and cached per host, or
// loaded from a file (TUTTI_TUNING_FILE); every rank of a communicator uses the same
// parameters (agreed at creation), so that the tuner decides alike on every rank.
//
// The simulator (simulate.h) runs the real schedules over this model, so every algorithm is
// priced the same way; nothing here knows an algorithm.
//
// Units: seconds and bytes throughout. New parameters are added with a default that leaves
// earlier model files valid.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tutti/types.h"

namespace tutti::tuning {

/// How one rank reaches another, nearest first. Placement (simulate.h) decides a pair's
/// class from the topology view: the same host, package and L3 group, or another host.
enum class PathClass : std::uint8_t {
  kSameL3 = 0,      // one host, cores sharing an L3 cache (or the same core)
  kSameSocket = 1,  // one host and package, different L3 groups
  kSameHost = 2,    // one host, different packages
  kNetwork = 3,     // different hosts, through their NICs
};
inline constexpr int kNumPathClasses = 4;

/// "same_l3", "same_socket", "same_host", "network": the model file's names too.
const char* pathClassName(PathClass path);
/// The class named `name` (pathClassName's text), or nullopt.
std::optional<PathClass> parsePathClass(std::string_view name);

/// The network path's latency where nothing measures it (a probe sees only its own host,
/// and a NIC's speed says nothing of its latency): a TCP message through two kernels and
/// one switch, ~25 us.
inline constexpr double kDefaultNetworkAlpha = 25e-6;

/// What one message costs on a class of path.
struct LinkCost {
  /// From the send's start to the receiver seeing the first byte, without contention.
  double alpha = 0;
  /// Seconds per byte of one message alone on the path (its inverse bandwidth).
  double beta = 0;
  /// CPU time each end spends per message (posting, matching, the copy's set-up), which
  /// occupies a core where alpha's wait does not.
  double overhead = 0;
  /// On a host path, the receiver's CPU seconds per byte where its end costs less than the
  /// sender's (0: the two ends alike, beta / 2 each). Not in a model file: the tuner derives
  /// it for TCP between ranks of one host (effectiveModel), whose receiver only copies out.
  double recvBeta = 0;
  /// The receiver reduces a message once the whole of it is in (it lands in a staging
  /// buffer first, as over TCP), not piece by piece as it arrives (as shared memory's
  /// slots are). Not in a model file: the tuner sets it for the paths TCP carries
  /// (effectiveModel).
  bool reducesWhole = false;
};

/// The parameters of one host (every host of a communicator is assumed alike; the view
/// says how many ranks and cores each has).
struct MachineModel {
  std::array<LinkCost, kNumPathClasses> paths{};
  /// Reduction: seconds per byte of one operand combined into another (op_sum), per dtype.
  std::array<double, kNumDataTypes> gamma{};
  /// A local copy (copy steps, a receive copied out of a transport's buffer), s/byte.
  double copyBeta = 0;
  /// Memory bandwidth a host's copies and reductions share, bytes/s (0: no limit), for
  /// buffers larger than the last-level cache (from memory to memory).
  double hostMemoryBandwidth = 0;
  /// One NIC's bandwidth in each direction, bytes/s, shared by the messages crossing it
  /// (0: the network path's beta alone).
  double nicBandwidth = 0;
  /// A shaped link's bucket (a token-bucket shaper, as tc tbf or a cloud NIC's burst
  /// allowance): up to this many bytes pass at nicLineBandwidth once the link has been idle,
  /// refilled at nicBandwidth; messages beyond it pass at nicBandwidth. 0: no bucket (a
  /// NIC's own rate holds for every byte).
  std::uint64_t nicBurstBytes = 0;
  /// The rate a shaped link's bucket empties at, bytes/s (0: not known, no limit but the
  /// network path's latency). Meaningful with nicBurstBytes only.
  double nicLineBandwidth = 0;
  /// Cores the ranks of one host share: CPU work beyond this many at once waits (the
  /// oversubscribed case, ranks > cores).
  int coresPerHost = 1;
  /// One round of a transport's flat exchange on one host (FlatExchange: every rank writes
  /// its contribution once, every rank reads every contribution in place): a fixed cost
  /// and seconds per byte read.
  double flatAlpha = 0;
  double flatBeta = 0;
  /// The library's own CPU time per message at each end, beyond its path's overhead: the
  /// executor's step (issue, dependencies, completion) and the transport's posting and
  /// matching. Not measured by the probe (the executor runs above this layer): defaults()'s
  /// figure, or a model file's.
  double messageOverhead = 0;
  /// What a rank that waits for a message pays to run again on a host with more ranks than
  /// cores (it slept and another ran in its place): a context switch, in CPU time.
  double switchCost = 0;
  /// The same where the waiting rank yields its core rather than sleeping, as waits over
  /// shared memory do on such a host (ShmTransport: for TUTTI_SHM_POLL_US): another rank's
  /// sched_yield handing it the core, in CPU time. 0: switchCost. TCP's waits sleep in
  /// epoll, so over TCP the tuner prices them at switchCost (effectiveModel).
  double yieldCost = 0;
  /// The host's last-level cache, bytes (0: not known). A call whose buffers on a host
  /// together fit in it moves its bytes at cacheBandwidth, a larger one at
  /// hostMemoryBandwidth.
  std::uint64_t llcBytes = 0;
  /// Bytes/s the host's cores copy at once between buffers that stay in the caches (0: the
  /// same as hostMemoryBandwidth).
  double cacheBandwidth = 0;
  /// The kernel's copy between processes (process_vm_readv) over memcpy's time for the same
  /// bytes (base/host_props.h's kernelCopyRatio; 0: not known). Where it is cheap (at most
  /// kCostlyKernelCopyRatio), a large message on a host is copied once, by its receiver;
  /// elsewhere twice, through the shared-memory rings.
  double kernelCopyRatio = 0;
  /// TCP between two ranks of one host, through the kernel's loopback (what the ranks of
  /// one host pay over TUTTI_TRANSPORT=tcp), measured through the TCP transport.
  LinkCost loopback{};
  /// Thresholds measured on one machine that no property of the host read so far predicts
  /// (docs/host-rules.md, "Model parameters"). Their defaults are the values measured; no
  /// probe measures them yet, and a model file (TUTTI_TUNING_FILE) may set them. Bytes.
  ///
  /// Outputs (a reduction's, a copy's) of at least this many bytes in a buffer of their own
  /// are written with non-temporal stores, past the caches (reduce::setStreamingFrom).
  std::uint64_t streamingStoresFrom = std::uint64_t{8} << 20;
  /// All-gather and all-to-all blocks of at least this many bytes, and the halves of a
  /// 2-rank all-reduce, go through shared-memory rings rather than by the kernel's copy
  /// (core/message_ways.h, prefersCopy).
  std::uint64_t ringBlocksFrom = std::uint64_t{32} << 20;
  /// A 2-rank all-reduce of at most this many bytes goes through the rings (prefersCopy).
  std::uint64_t pairAllReduceRingsUpTo = std::uint64_t{4} << 20;
  /// From this many bytes, an all-reduce among 3 to 8 ranks on one host first agrees on
  /// whether every rank's buffers come from memAlloc (core/call_planner.h,
  /// choiceNeedsBuffers): below it the agreement costs more than it can win.
  std::uint64_t buffersAgreedFrom = std::uint64_t{1} << 20;
  /// Where the parameters came from: "probe", "cache PATH", "file PATH", "defaults".
  std::string origin = "defaults";

  const LinkCost& path(PathClass c) const { return paths[static_cast<int>(c)]; }
};

/// The model used where nothing was measured or loaded (origin "defaults"): round figures
/// of a small two-socket server with a 10 Gbit/s NIC, so that the algorithms still rank
/// sensibly (model.cc gives each figure). A probe or a file replaces every one of them.
MachineModel defaults();

}  // namespace tutti::tuning
