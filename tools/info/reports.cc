#include "info/reports.h"

#include <algorithm>

#include "algorithms/algorithm.h"
#include "base/strings.h"

namespace tutti::info {
namespace {

std::string known(int value) { return value < 0 ? std::string("?") : std::to_string(value); }

// "2 packages", "1 package"; "? packages" for a count not known (0).
std::string plural(int n, const char* one, const char* many) {
  return (n <= 0 ? std::string("?") : std::to_string(n)) + " " + (n == 1 ? one : many);
}

// A call of `kind` on rank 0 of `ranks` ranks, large enough that no algorithm refuses it
// for its size: the v-collectives get that count from every rank.
CollectiveSpec specFor(Collective kind, int ranks, const HostMap* hosts) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.size = ranks;
  spec.rank = 0;
  spec.count = static_cast<std::uint64_t>(ranks) * 1024;
  spec.segmentCount = spec.count;
  spec.peer = ranks > 1 ? 1 : 0;
  spec.sharedMemory = hosts == nullptr;
  spec.hosts = hosts;
  const std::uint64_t per = 1024;
  for (int r = 0; r < ranks; ++r) {
    spec.counts.push_back(per);
    spec.displs.push_back(per * static_cast<std::uint64_t>(r));
  }
  spec.recvCounts = spec.counts;
  spec.recvDispls = spec.displs;
  return spec;
}

}  // namespace

std::string describeView(const topo::View& view) {
  std::string out = strFormat("%s, %s\n", plural(static_cast<int>(view.hosts.size()), "host", "hosts").c_str(),
                              plural(view.size(), "rank", "ranks").c_str());
  for (std::size_t h = 0; h < view.hosts.size(); ++h) {
    const topo::HostInfo& host = view.hosts[h];
    out += strFormat("host %zu '%s' (id %s): %s, %s, %s, %s, %s\n", h, host.name.c_str(),
                     host.id.c_str(), plural(host.packages, "package", "packages").c_str(),
                     plural(host.numaNodes, "NUMA node", "NUMA nodes").c_str(),
                     plural(host.l3Groups, "L3 group", "L3 groups").c_str(),
                     plural(host.cores, "core", "cores").c_str(),
                     plural(host.pus, "PU", "PUs").c_str());
    for (const topo::Nic& nic : host.nics) {
      out += strFormat("  NIC %s: IPv4 %s, IPv6 %s, speed %s, NUMA node %s\n", nic.name.c_str(),
                       nic.ipv4.empty() ? "-" : nic.ipv4.c_str(),
                       nic.ipv6.empty() ? "-" : nic.ipv6.c_str(),
                       nic.speedMbps < 0 ? "?" : (std::to_string(nic.speedMbps) + " Mbit/s").c_str(),
                       known(nic.numaNode).c_str());
    }
    std::string ranks;
    for (int r = 0; r < view.size(); ++r)
      if (view.ranks[static_cast<std::size_t>(r)].host == static_cast<int>(h))
        ranks += (ranks.empty() ? "" : " ") + std::to_string(r);
    out += "  ranks: " + ranks + "\n";
  }
  for (int r = 0; r < view.size(); ++r) {
    const topo::RankInfo& rank = view.ranks[static_cast<std::size_t>(r)];
    out += strFormat("rank %d: host %d, local rank %d, package %s, NUMA node %s, L3 group %s, "
                     "CPUs %s, NIC %s%s\n",
                     r, rank.host, rank.localIndex, known(rank.package).c_str(),
                     known(rank.numaNode).c_str(), known(rank.l3Group).c_str(),
                     rank.cpus.empty() ? "?" : rank.cpus.c_str(),
                     rank.nic.empty() ? "?" : rank.nic.c_str(),
                     rank.address.empty() ? "" : (" (" + rank.address + ")").c_str());
  }
  return out;
}

Result<std::string> describeAlgorithms(int ranks, int hosts) {
  if (ranks > 0 && (hosts < 1 || hosts > ranks))
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("--hosts %d: between 1 and the %d ranks", hosts, ranks));
  HostMap map;
  if (ranks > 0 && hosts > 1) {
    std::vector<int> perHost;
    for (int h = 0; h < hosts; ++h) perHost.push_back(ranks / hosts + (h < ranks % hosts ? 1 : 0));
    map = HostMap::blocks(perHost);
  }
  std::string out;
  if (ranks > 0)
    out += strFormat("for %s on %s (%s):\n", plural(ranks, "rank", "ranks").c_str(),
                     plural(hosts, "host", "hosts").c_str(),
                     hosts > 1 ? map.toString().c_str() : "shared memory");
  const auto& registry = algorithmRegistry();
  for (int k = 0; k < kNumCollectives; ++k) {
    const auto kind = static_cast<Collective>(k);
    const CollectiveSpec spec = specFor(kind, std::max(ranks, 1), hosts > 1 ? &map : nullptr);
    const AlgorithmInfo* chosen = ranks > 0 ? defaultAlgorithm(spec) : nullptr;
    out += std::string(collectiveName(kind)) + ":\n";
    for (const AlgorithmInfo& a : registry) {
      if (a.kind != kind) continue;
      out += strFormat("  %-22s %s", a.name, a.summary);
      if (ranks > 0) {
        const std::string why = a.unsupportedReason(spec);
        if (!why.empty()) out += " [does not apply: " + why + "]";
        else if (&a == chosen) out += " [applies; the default]";
        else out += " [applies]";
      }
      out += "\n";
    }
  }
  return out;
}

}  // namespace tutti::info
