#pragma once
// What a host is, as far as the one-host thresholds need to know: its caches, as sysfs
// describes them for a set of CPUs, and what the kernel's copy between processes costs
// against memcpy. Each is read or measured once per process. The rules that turn them into
// thresholds are stated here and in their users; why each rule follows from measurements
// on which machines is docs/host-rules.md.

#include <cstdint>
#include <string>
#include <vector>

namespace tutti {

/// One CPU's L2 and L3 as its cache/index* directories in sysfs list them.
struct CpuCaches {
  int cpu = -1;
  std::uint64_t l2Bytes = 0;  // 0: none listed
  std::uint64_t l3Bytes = 0;  // 0: none listed
  std::string l3Cpus;         // the L3's shared_cpu_list: equal text, the same L3
};

/// Every CPU under `root` (cpu0, cpu1, ... with their cache/index*/{level,type,size,
/// shared_cpu_list}), by CPU number; a CPU without cache directories is listed with zeros.
/// A CPU whose L2 a CPU read before shares is not read again.
std::vector<CpuCaches> readCpuCaches(const std::string& root);

/// This host's: readCpuCaches("/sys/devices/system/cpu"), once per process.
const std::vector<CpuCaches>& hostCpuCaches();

/// What the caches of a set of CPUs (the ranks' affinity masks together) look like.
struct CacheProps {
  std::uint64_t l2Bytes = 0;  // the smallest L2 among them; 0: not known
  std::uint64_t l3Bytes = 0;  // the smallest L3 among them; 0: not known
  bool l3Shared = false;      // one L3 holds them all
};

/// From `caches` (readCpuCaches), for `cpus`; every listed CPU where `cpus` is empty. CPUs
/// not in `caches` are left out.
CacheProps cachePropsOf(const std::vector<CpuCaches>& caches, std::vector<int> cpus);

/// process_vm_readv's time over memcpy's for the same 256 KiB within this process (the
/// best of 16 alternating tries each), in hundredths as ranks publish it: measured on the
/// first call (a few ms), then remembered. 0 where the kernel's copy fails here.
double kernelCopyRatio();

/// The kernel's copy is costly where it takes more than this many times memcpy's time:
/// more than the two copies a message makes through a shared-memory ring.
inline constexpr double kCostlyKernelCopyRatio = 2.5;
/// `hostRatio`: the highest kernelCopyRatio() of a host's ranks; 0 (not known) is not costly.
inline bool kernelCopyCostly(double hostRatio) { return hostRatio > kCostlyKernelCopyRatio; }

/// On one host with more than 2 ranks, a ring algorithm's segment is by default the
/// shared-memory ring's bytes divided by this: half where the kernel's copy is costly, an
/// eighth elsewhere, each as measured on hosts of its kind (docs/host-rules.md).
inline std::uint64_t oneHostRingShare(double hostRatio) {
  return kernelCopyCostly(hostRatio) ? 2 : 8;
}

}  // namespace tutti
