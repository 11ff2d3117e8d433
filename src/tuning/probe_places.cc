// Where the probe measures (probe_places.h): the host's CPUs, a pair of them for each class
// of path, and the fastest NIC.
#include "tuning/probe_places.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <thread>

#include "base/cpus.h"
#include "topology/nics.h"
#include "tuning/probe.h"

namespace tutti::tuning {
namespace {

// The position of each allowed CPU: its package and L3 group (-1: not known).
struct Place {
  int cpu;
  int package;
  int l3;
};

int groupOf(const std::vector<std::vector<int>>& groups, int cpu) {
  for (std::size_t g = 0; g < groups.size(); ++g)
    if (std::find(groups[g].begin(), groups[g].end(), cpu) != groups[g].end()) return static_cast<int>(g);
  return -1;
}

}  // namespace

std::vector<int> hostCpus(const topo::Machine& machine) {
  std::vector<int> cpus;
  for (const auto& package : machine.packages) cpus.insert(cpus.end(), package.begin(), package.end());
  std::sort(cpus.begin(), cpus.end());
  std::vector<int> reachable;
  if (!cpus.empty() && cpus.back() < CPU_SETSIZE) {
    std::thread([&] {
      cpu_set_t set;
      CPU_ZERO(&set);
      for (const int cpu : cpus) CPU_SET(cpu, &set);
      if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) return;
      CPU_ZERO(&set);
      if (pthread_getaffinity_np(pthread_self(), sizeof(set), &set) != 0) return;
      for (const int cpu : cpus)
        if (CPU_ISSET(cpu, &set)) reachable.push_back(cpu);
    }).join();
  }
  return reachable.empty() ? allowedCpuList() : reachable;
}

std::pair<double, std::string> fastestNic() {
  std::pair<double, std::string> best{0, ""};
  for (const topo::Nic& nic : topo::hostNics()) {
    if (nic.loopback || nic.speedMbps <= 0) continue;
    const double bytes = nic.speedMbps * 1e6 / 8;
    if (bytes > best.first) best = {bytes, nic.name};
  }
  return best;
}

std::array<std::optional<std::pair<int, int>>, 3> cpuPairsByClass(const topo::Machine& machine,
                                                                  const std::vector<int>& allowed) {
  std::array<std::optional<std::pair<int, int>>, 3> pairs;
  if (allowed.empty()) return pairs;
  const bool described = machine.error.empty() && !machine.packages.empty();
  std::vector<Place> places;
  for (const int cpu : allowed)
    places.push_back({cpu, described ? groupOf(machine.packages, cpu) : 0,
                      described && !machine.l3Groups.empty() ? groupOf(machine.l3Groups, cpu) : 0});
  for (std::size_t i = 0; i < places.size(); ++i) {
    for (std::size_t j = i + 1; j < places.size(); ++j) {
      const Place& a = places[i];
      const Place& b = places[j];
      int c = 2;  // other packages
      if (a.package == b.package) c = a.l3 == b.l3 ? 0 : 1;
      if (!pairs[static_cast<std::size_t>(c)]) pairs[static_cast<std::size_t>(c)] = {{a.cpu, b.cpu}};
    }
  }
  if (places.size() == 1) pairs[0] = {{places[0].cpu, places[0].cpu}};
  return pairs;
}

}  // namespace tutti::tuning
