#pragma once
// Measuring the machine model's parameters on this host (model.h), in about 100 ms: what
// the first communicator created on a host runs once, before the cache holds its result
// (model_cache.h), and what `tutti-info tune --probe` prints.
//
// Each parameter comes from a short repeated measurement of which the best (smallest) time
// is kept, so that a busy or oversubscribed host (a 2-vCPU VM running other work) gives the
// machine's cost rather than its neighbours'. Work of one thread alone is timed in that
// thread's CPU time, which preemption does not inflate; exchanges between two threads are
// timed in short batches, the best of many. Each phase has its share of the budget from when
// its buffers and threads are ready and takes at least one sample; past twice the budget the
// phases left keep their defaults (a host too busy to run anything). The notes say which.
//
//   copy_beta              reduce::copy of 1 MiB within one thread
//   gamma[dtype]           reduce::combine (sum) of 1 MiB operands, per dtype
//   host_memory_bandwidth  bytes copied per second by up to 4 threads at once through buffers
//                          that together hold twice the last-level cache, 2 MiB at a time
//                          with ordinary stores (from memory to memory)
//   cache_bandwidth        the same with 2 MiB buffers each (within the caches)
//   llc_bytes              the smallest L3 of the host's CPUs (sysfs; L2 where none)
//   loopback               two TCP transports of this process over 127.0.0.1 (probe_messages.h):
//                          half the best round trip of 8 bytes, CPU time half at each end
//                          (overhead), and 1 MiB messages (beta)
//   switch_cost            two threads on one CPU handing a futex word back and forth
//   yield_cost             the same two threads, each waiting for its turn by sched_yield
//   message_overhead       not measured (the executor runs above this layer): the default
//   paths[class]           two threads pinned to a pair of CPUs of the class: alpha is
//                          half a ping-pong's round trip through one cache line, beta what
//                          a 256 KiB message through a shared buffer (written in by one,
//                          copied out by the other, as the shared-memory rings do) costs per
//                          byte beyond that, overhead the sender's time to put a small
//                          message in and signal it. A class this host lacks (one L3
//                          group: no same_socket pair) takes the nearest measured class's.
//   paths[network],        the fastest NIC's speed (/sys/class/net/NAME/speed); latency
//   nic_bandwidth          and overhead are defaults (kDefaultNetworkAlpha): a probe on one
//                          host cannot see the network
//   cores_per_host         the host's CPUs a thread of this process may run on (the
//                          cpuset, capped by the cgroup's CPU quota), not the process's
//                          affinity mask: a launcher binding each rank to one CPU still
//                          runs the ranks of a host on all of them
//   flat_alpha, flat_beta  two threads in rounds of a flat exchange: each writes its
//                          contribution, meets the other at a counter, reads both (8 B and
//                          64 KiB contributions)
//
// The loopback, switch and yield phases are refused (defaults kept, the probe incomplete)
// where their figure is past what a running thread takes (500 us one way, 50 us a switch or
// a yield) or the test seam calls them contended ("loopback", "switch_cost", "yield_cost").
//
// A phase of two threads is trusted only where it passes two checks, else its figure is not
// used (the class takes the nearest trusted class's, or defaults(); flat keeps defaults())
// and the probe is incomplete, used by its process but never cached (model_cache.h):
//   - preemption: each batch reads both threads' time spent waiting for a CPU
//     (/proc/self/task/TID/schedstat, else their involuntary context switches) before and
//     after; only batches in which neither waited count, and a measurement with none is
//     contended;
//   - consistency: a pair's one-way latency past 10 us (longer than a futex wake-up: a thread
//     was not running), or a pair's copy bandwidth under 1/16 of the local copy's measured
//     by the same probe, cannot be the machine's.
//
// The pairs of CPUs come from the same set. Threads are pinned for their measurement only;
// the calling thread's affinity is never changed.

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "topology/machine.h"
#include "tuning/model.h"

/// The probe's revision: raised whenever it measures a parameter it did not, so that caches
/// written by an earlier probe are measured anew (model_cache.h). A macro: the cache's key
/// is built from it at compile time.
#define TUTTI_PROBE_REVISION 3

namespace tutti::tuning {

struct ProbeOptions {
  /// The whole probe's time, shared among its phases.
  double budgetSeconds = 0.1;
  /// A test's stand-in for a busy host: where it returns true for a phase of two threads
  /// ("same_l3", "same_socket", "same_host", "flat"), that phase counts as contended
  /// whatever it measured. Unset: only the probe's own checks judge.
  std::function<bool(std::string_view phase)> contended = nullptr;
};

struct ProbeReport {
  MachineModel model;              // origin "probe"
  std::vector<std::string> notes;  // how each parameter was found, one line each
  double seconds = 0;              // the probe's own time
  /// Every phase measured and trusted: none kept a default because the host was too busy
  /// or its figure failed the checks above. An incomplete probe is not worth caching
  /// (model_cache.h).
  bool complete = true;
};

/// Measures this host's parameters; never fails (what it cannot measure keeps defaults()).
ProbeReport probeHost(const ProbeOptions& options = {});

/// Two CPUs of `allowed` for each class of path on one host (kSameL3, kSameSocket,
/// kSameHost), as `machine` places them: nullopt where the host has no such pair. Two
/// distinct CPUs where there are; a lone CPU pairs with itself for kSameL3 (two ranks on
/// one CPU is what such a host runs). A machine hwloc could not describe counts as one L3.
std::array<std::optional<std::pair<int, int>>, 3> cpuPairsByClass(const topo::Machine& machine,
                                                                  const std::vector<int>& allowed);

/// Why a pair's one-way latency `alpha` and copy cost `beta` (seconds per byte) cannot be
/// the machine's beside the local copy's `copyBeta` measured by the same probe (0: none),
/// by the consistency rules above; empty where they can.
std::string implausiblePair(double alpha, double beta, double copyBeta);

/// Fills the host classes (not kNetwork) that `measured` lacks from the nearest one it has:
/// a missing kSameSocket takes kSameL3's else kSameHost's, and so on outwards and inwards;
/// where none is measured, defaults()'s remain. Returns the classes filled, by name.
std::vector<std::string> fillMissingClasses(const std::array<std::optional<LinkCost>, 3>& measured,
                                            MachineModel& model);

}  // namespace tutti::tuning
