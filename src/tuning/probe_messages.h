#pragma once
// The parts of the machine model that only the library's own code paths show (probe.h lists
// every parameter and how it is found): what a message costs through the TCP transport over
// the kernel's loopback, between two threads of this process standing for two ranks, and
// what a context switch costs where a host runs more ranks than cores.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "transport/link.h"
#include "tuning/probe.h"
#include "tutti/deadline.h"

namespace tutti::tuning {

using ProbeClock = std::chrono::steady_clock;

/// What the messages between two threads cost, each the best of several batches.
struct MessageCosts {
  /// Seconds: half the round trip of an 8-byte message and its 8-byte answer.
  double oneWay = 0;
  /// Seconds per byte of a 1 MiB message beyond an 8-byte one's time.
  double beta = 0;
};

/// Waits, driving `t`'s progress (the caller drives: Transport::setDriving), until `request`
/// is done, polling for about `spinNs` before each block. False where it failed or
/// `deadline` passed first (the request is then still pending).
bool awaitRequest(Transport& t, TransferRequest& request, Deadline deadline, std::int64_t spinNs);

/// One message to or from `peer` under `tag`, waited for as awaitRequest does; false where
/// it failed or `deadline` passed (a request still pending is cancelled).
bool sendMessage(Transport& t, int peer, Tag tag, const void* data, std::size_t bytes,
                 Deadline deadline, std::int64_t spinNs);
bool recvMessage(Transport& t, int peer, Tag tag, void* data, std::size_t bytes,
                 Deadline deadline, std::int64_t spinNs);

/// Two TCP transports of this process (ranks 0 and 1 of a world of two) over one connection
/// on 127.0.0.1; nullopt where they cannot be made here, `*why` then says why.
using TransportPair = std::array<std::unique_ptr<Transport>, 2>;
std::optional<TransportPair> tcpPairOnLoopback(Deadline deadline, std::string* why);

/// Pins the calling thread to `cpu` (-1: leaves it as it is); best effort. The probe's
/// threads are pinned for their measurement only.
void pinThread(int cpu);

/// Two TCP transports made in this process over a connection on 127.0.0.1, driven by two
/// threads pinned to `cpuA` and `cpuB` (-1: not pinned) until `until`. nullopt where the
/// transports cannot be made here or no batch finished; `*why` then says which.
std::optional<MessageCosts> measureLoopback(int cpuA, int cpuB, ProbeClock::time_point until,
                                            std::string* why);

/// A context switch: two threads pinned to `cpu` hand a word back and forth through a futex,
/// each handing over putting the other to run; half the best round trip. nullopt where no
/// batch finished by `until`.
std::optional<double> measureSwitch(int cpu, ProbeClock::time_point until);

/// A yield's hand-over: the same two threads, each waiting for its turn with sched_yield;
/// half the best round trip. nullopt where no batch finished by `until`.
std::optional<double> measureYield(int cpu, ProbeClock::time_point until);

/// The probe's phases of these (probe.h): `loopback` through measureLoopback,
/// `switch_cost` through measureSwitch and `yield_cost` through measureYield (in half the
/// switch's share), on the CPU pair `pair` (nullopt: not pinned), each in its share, skipped where `late(name)` says the probe's time ran out; a figure past what
/// a running thread takes, or a phase the options' test seam calls contended, is refused
/// (defaults kept, the probe incomplete). Writes report.model and report.notes.
void probeLibraryPaths(const ProbeOptions& options, const std::optional<std::pair<int, int>>& pair,
                       ProbeClock::duration tcpShare, ProbeClock::duration switchShare,
                       const std::function<bool(const char*)>& late, ProbeReport& report);

}  // namespace tutti::tuning
