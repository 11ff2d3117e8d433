#pragma once
// The CPUs a process may use, and whether the ranks of a host each have one of their own.
//
// The CPU time a process's control group may use: containers and batch systems (Docker's
// --cpus, Kubernetes CPU limits, systemd's CPUQuota, Slurm with cgroup task plugins) often
// cap it with a quota while the affinity mask still lists every core of the machine. A
// rank that counts cores from the mask alone believes it has a core to spin on where it
// has a fraction of one (FEATURES.md §5: oversubscription from the quota, the affinity and
// the ranks per node).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tutti {

/// The quota of this process's control group and every group above it, in cores (quota
/// divided by period; the smallest along the way), or nullopt where none is set or none
/// can be read. Reads cgroup v2 (`cpu.max`) and v1 (`cpu.cfs_quota_us`,
/// `cpu.cfs_period_us`), finding the hierarchy's mount in /proc/self/mountinfo and the
/// process's group in /proc/self/cgroup. `root` is prepended to every path read (tests
/// pass a directory that stands in for /).
std::optional<double> cgroupCpuLimit(const std::string& root = "");

/// The whole cores a quota of `limit` cores gives to ranks that each need one: at least
/// 1; a fraction counts as a core only from 0.9 of one (1.5 gives 1, 1.9 gives 2).
int coresOfQuota(double limit);

/// The cores the quota of this process's group gives (coresOfQuota of cgroupCpuLimit(),
/// read once per process), or a very large number where no quota is set.
int quotaCores();

/// The CPUs in this process's affinity mask, ascending; empty if it cannot be read.
std::vector<int> allowedCpuList();

/// A list of CPU numbers in the kernel's cpulist form ("0-3,8,10-11"; "" for none), and back.
/// parseCpuList takes what formatCpuList writes and the kernel's own files; nullopt for
/// anything else (a number out of [0, 65535], a range that runs backwards, stray text).
std::string formatCpuList(const std::vector<int>& cpus);
std::optional<std::vector<int>> parseCpuList(std::string_view text);

/// A mask as one space-free field of a record ranks publish to each other (shared memory's
/// segment info, the TCP-only host record): formatCpuList, or "-" for an empty (unknown)
/// mask; parseMaskField reads it back, nullopt for anything else.
std::string formatMaskField(const std::vector<int>& cpus);
std::optional<std::vector<int>> parseMaskField(std::string_view text);

/// Whether ranks with these affinity masks can each have `perRank` CPUs to itself, no CPU
/// given to two ranks, and all of them together no more than `quotaCores`: a matching of
/// ranks to CPUs. Ranks bound one to a core (mpirun --bind-to core, srun --cpu-bind=cores)
/// each have one; ranks that all list the same two CPUs have one each only if they are two.
/// An empty mask (not known) counts as no CPU.
bool eachRankHasCores(const std::vector<std::vector<int>>& masks, int perRank, int quotaCores);

}  // namespace tutti
