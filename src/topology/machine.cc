#include "topology/machine.h"

#include <hwloc.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "base/log.h"

namespace tutti::topo {
namespace {

std::vector<int> cpusOf(hwloc_const_bitmap_t set) {
  std::vector<int> cpus;
  if (set == nullptr) return cpus;
  for (int cpu = hwloc_bitmap_first(set); cpu != -1; cpu = hwloc_bitmap_next(set, cpu))
    cpus.push_back(cpu);
  return cpus;
}

std::vector<std::vector<int>> groupsOf(hwloc_topology_t topology, hwloc_obj_type_t type) {
  std::vector<std::vector<int>> groups;
  const int n = hwloc_get_nbobjs_by_type(topology, type);
  for (int i = 0; i < n; ++i) {
    hwloc_obj_t obj = hwloc_get_obj_by_type(topology, type, static_cast<unsigned>(i));
    if (obj == nullptr) continue;
    std::vector<int> cpus = cpusOf(obj->cpuset);
    if (!cpus.empty()) groups.push_back(std::move(cpus));
  }
  return groups;
}

// hwloc loads its plugins (OpenCL, GL, PCI, libxml2, and the libraries they link) when the
// first topology is created, before any filter applies: measured, 80-120 ms of a 4-rank
// communicator's creation on a 2-core machine, against 10-15 ms without them, for objects
// (I/O devices) this layer never reads. The environment variable is hwloc's only way to
// skip them; it is set only where the user has not, once, before hwloc reads it.
void skipHwlocPlugins() {
  setenv("HWLOC_PLUGINS_BLACKLIST",
         "hwloc_opencl,hwloc_gl,hwloc_pci,hwloc_xml_libxml,hwloc_cuda,hwloc_nvml,hwloc_rsmi,"
         "hwloc_levelzero",
         0);
}

Machine detect() {
  Machine machine;
  skipHwlocPlugins();
  hwloc_topology_t topology = nullptr;
  if (hwloc_topology_init(&topology) != 0) {
    machine.error = "hwloc_topology_init failed";
    return machine;
  }
  // Only CPUs, caches and memory: PCI and other I/O objects cost most of a load.
  hwloc_topology_set_io_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_NONE);
  hwloc_topology_set_icache_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (hwloc_topology_load(topology) != 0) {
    machine.error = "hwloc_topology_load failed";
  } else {
    machine.packages = groupsOf(topology, HWLOC_OBJ_PACKAGE);
    machine.numaNodes = groupsOf(topology, HWLOC_OBJ_NUMANODE);
    machine.l3Groups = groupsOf(topology, HWLOC_OBJ_L3CACHE);
    machine.cores = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_CORE);
    machine.pus = hwloc_get_nbobjs_by_type(topology, HWLOC_OBJ_PU);
  }
  hwloc_topology_destroy(topology);
  return machine;
}

// The index of the group holding every CPU of `cpus`, or -1.
int groupHolding(const std::vector<std::vector<int>>& groups, const std::vector<int>& cpus) {
  if (cpus.empty()) return -1;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (std::includes(groups[g].begin(), groups[g].end(), cpus.begin(), cpus.end()))
      return static_cast<int>(g);
  }
  return -1;
}

}  // namespace

const Machine& localMachine() {
  static std::once_flag once;
  static Machine machine;
  std::call_once(once, [] {
    const auto start = std::chrono::steady_clock::now();
    machine = detect();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (!machine.error.empty()) {
      TUTTI_WARN(kTopo, "topology not detected (%s): packages, NUMA nodes and caches unknown",
                 machine.error.c_str());
    } else {
      TUTTI_DEBUG(kTopo, "hwloc: %zu packages, %zu NUMA nodes, %zu L3 groups, %d cores, %d PUs "
                  "in %.1f ms", machine.packages.size(), machine.numaNodes.size(),
                  machine.l3Groups.size(), machine.cores, machine.pus, ms);
    }
  });
  return machine;
}

Binding bindingOf(const Machine& machine, const std::vector<int>& cpus) {
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  Binding b;
  b.package = groupHolding(machine.packages, sorted);
  b.numaNode = groupHolding(machine.numaNodes, sorted);
  b.l3Group = groupHolding(machine.l3Groups, sorted);
  return b;
}

}  // namespace tutti::topo
