#pragma once
// What one host is made of, as hwloc finds it: packages (sockets), NUMA nodes, L3 groups,
// cores and hardware threads (PUs), each group as the CPUs (OS numbers) it holds; and where
// a set of CPUs (a rank's affinity mask) sits among them. The hwloc topology is loaded
// once per process (a few ms) and kept only as these lists.

#include <string>
#include <vector>

namespace tutti::topo {

struct Machine {
  std::vector<std::vector<int>> packages;   // each: its CPUs, ascending
  std::vector<std::vector<int>> numaNodes;  // NUMA nodes with CPUs
  std::vector<std::vector<int>> l3Groups;   // the CPUs that share one L3
  int cores = 0;
  int pus = 0;
  /// Why detection failed (the lists are then empty); empty when it worked.
  std::string error;
};

/// This host's, detected with hwloc on the first call, then remembered.
const Machine& localMachine();

/// Where `cpus` sit: the index of the package, NUMA node and L3 group that holds them all,
/// or -1 where they span several or none is known (an empty mask).
struct Binding {
  int package = -1;
  int numaNode = -1;
  int l3Group = -1;
};
Binding bindingOf(const Machine& machine, const std::vector<int>& cpus);

}  // namespace tutti::topo
