#include "tuning/sim_machines.h"

#include <algorithm>
#include <limits>

namespace tutti::tuning {

SimMachines simMachines(const MachineModel& model, const Placement& placement,
                        const Network& network, const CollectiveSpec& spec, int period,
                        const std::vector<double>& touchedBytes) {
  SimMachines out;
  out.gamma = model.gamma[static_cast<std::size_t>(spec.dtype)];
  const int hosts = placement.place(period - 1).host + 1;
  int machines = 0;  // machines are numbered by their first host: a later host's may be lower
  for (int h = 0; h < hosts; ++h) machines = std::max(machines, placement.machineOf(h) + 1);
  const int defaultCores = std::max(1, model.coresPerHost);
  out.machineRanks.assign(static_cast<std::size_t>(machines), {});
  for (int h = 0; h < hosts; ++h) {
    const std::vector<int>& ranks = placement.hosts().ranksOf[static_cast<std::size_t>(h)];
    std::vector<int>& to = out.machineRanks[static_cast<std::size_t>(placement.machineOf(h))];
    to.insert(to.end(), ranks.begin(), ranks.end());
  }
  out.cores.resize(static_cast<std::size_t>(machines));
  out.oversubscribed.assign(static_cast<std::size_t>(machines), false);
  out.bound.assign(static_cast<std::size_t>(machines), true);
  for (int m = 0; m < machines; ++m) {
    const std::size_t i = static_cast<std::size_t>(m);
    const int c = placement.machineCores(m) > 0 ? placement.machineCores(m) : defaultCores;
    out.cores[i].assign(static_cast<std::size_t>(c), 0.0);
    out.oversubscribed[i] = out.machineRanks[i].size() > out.cores[i].size();
    for (const int r : out.machineRanks[i]) {
      const int core = placement.place(r).boundCore;
      if (core < 0 || core >= c) out.bound[i] = false;
    }
  }
  // The memory bus: at the caches' rate while what the ranks of a host touch of their
  // buffers fits in its last-level cache, at memory's beyond.
  double footprint = 0;
  for (const int r : out.machineRanks[0])
    if (r >= 0 && static_cast<std::size_t>(r) < touchedBytes.size())
      footprint += touchedBytes[static_cast<std::size_t>(r)];
  const bool cached = model.llcBytes > 0 && model.cacheBandwidth > 0 &&
                      footprint <= static_cast<double>(model.llcBytes);
  Fifo memory;
  const double bus = cached ? model.cacheBandwidth : model.hostMemoryBandwidth;
  if (bus > 0) memory.bandwidth = bus;
  out.memory.assign(static_cast<std::size_t>(machines), memory);
  // Past the cache (where the model knows its size), one core copies at its share of the
  // memory's rate (hostMemoryBandwidth is what up to 4 cores copy at once): a message on
  // the host, a copy and a reduction slow down alike.
  out.copyBeta = model.copyBeta;
  if (!cached && model.llcBytes > 0 && model.hostMemoryBandwidth > 0) {
    const int threads = std::max(1, std::min(4, model.coresPerHost));
    out.hostBeta = threads / model.hostMemoryBandwidth;
    if (model.copyBeta > 0 && out.hostBeta > model.copyBeta) {
      out.gamma *= out.hostBeta / model.copyBeta;
      out.copyBeta = out.hostBeta;
    }
  }
  // The bus counts bytes copied; a reduced byte costs what gamma is to a copy.
  out.reduceCopies = model.copyBeta > 0 && out.gamma > 0 ? out.gamma / out.copyBeta : 1;
  // A NIC's bandwidth: the network's, the model's, or else the network path's own.
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double nic = network.nicBandwidth > 0 ? network.nicBandwidth : model.nicBandwidth;
  const double beta = model.path(PathClass::kNetwork).beta;
  if (nic <= 0) nic = beta > 0 ? 1 / beta : kInf;
  const std::size_t ports = static_cast<std::size_t>(hosts) * static_cast<std::size_t>(network.rails);
  Fifo port{nic, 0};
  out.networkBeta = beta;
  if (model.nicBurstBytes > 0) {
    // A shaped link: a message alone passes at the line's rate while the bucket lasts.
    port.burst = static_cast<double>(model.nicBurstBytes);
    port.line = model.nicLineBandwidth > nic ? model.nicLineBandwidth : kInf;
    port.tokens = port.burst;
    out.networkBeta = 1 / port.line;
  }
  out.nicOut.assign(ports, port);
  out.nicIn.assign(ports, port);
  if (network.kind == Network::Kind::kRail && network.oversub > 1)
    out.spine.assign(ports, Fifo{nic / network.oversub, 0});
  if (network.kind == Network::Kind::kFatTree) {
    const int leaves = (hosts - 1) / network.hostsPerLeaf + 1;
    const double up = network.hostsPerLeaf * nic / network.oversub;
    out.leafUp.assign(static_cast<std::size_t>(leaves), Fifo{up, 0});
    out.leafDown.assign(static_cast<std::size_t>(leaves), Fifo{up, 0});
  }
  return out;
}

}  // namespace tutti::tuning
