#pragma once
// Where the probe measures (probe.h): the CPUs of this host a thread of this process may run
// on, and the fastest NIC. cpuPairsByClass (probe.h) picks a pair of those CPUs per class.

#include <string>
#include <utility>
#include <vector>

#include "topology/machine.h"

namespace tutti::tuning {

/// The CPUs this host gives its ranks, as far as a thread of this process may run on them:
/// the machine's CPUs (hwloc) within this process's cpuset, whatever its affinity mask says
/// (tutti-run binds each rank to one CPU, and the probe is about the host, not the rank).
/// Found by asking a new thread's affinity for them all and reading what it got; the
/// process's mask where that fails.
std::vector<int> hostCpus(const topo::Machine& machine);

/// The fastest NIC other than loopback that reports a speed, in bytes/s, and its name;
/// {0, ""} where none does.
std::pair<double, std::string> fastestNic();

}  // namespace tutti::tuning
