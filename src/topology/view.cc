#include "topology/view.h"

#include <algorithm>

#include "base/cpus.h"
#include "base/strings.h"
#include "topology/host_identity.h"
#include "topology/machine.h"

namespace tutti::topo {
namespace {

// Where a rank's local indices and hosts are renumbered: hosts in order of their lowest
// rank, local indices by rank within each host.
void numberHostsByRank(View& view) {
  std::vector<int> newIndex(view.hosts.size(), -1);
  std::vector<HostInfo> hosts;
  std::vector<int> seen(view.hosts.size(), 0);
  for (RankInfo& r : view.ranks) {
    auto& index = newIndex[static_cast<std::size_t>(r.host)];
    if (index < 0) {
      index = static_cast<int>(hosts.size());
      hosts.push_back(view.hosts[static_cast<std::size_t>(r.host)]);
    }
    r.localIndex = seen[static_cast<std::size_t>(r.host)]++;
    r.host = index;
  }
  view.hosts = std::move(hosts);
}

Status placeInRange(int value, int count, std::size_t rank, const char* field) {
  if (value < -1 || (count > 0 && value >= count))
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("ranks[%zu].%s: %d is outside its host's %d (or -1: not known)", rank,
                            field, value, count));
  return Status::Ok();
}

}  // namespace

std::vector<int> View::hostOfRanks() const {
  std::vector<int> out;
  out.reserve(ranks.size());
  for (const RankInfo& r : ranks) out.push_back(r.host);
  return out;
}

std::string View::hostLabel(int host) const {
  std::string label =
      strFormat("host %d '%s'", host, hosts[static_cast<std::size_t>(host)].name.c_str());
  for (const RankInfo& r : ranks) {
    if (r.host != host) continue;
    if (!r.address.empty()) label += " at " + r.address;
    break;
  }
  return label;
}

bool sameHost(const HostInfo& a, const HostInfo& b) { return a.id == b.id && a.name == b.name; }

Status check(const View& view) {
  if (view.ranks.empty()) return Status(ErrorCode::kInvalidArgument, "ranks: the view holds no rank");
  const int hosts = static_cast<int>(view.hosts.size());
  std::vector<int> count(view.hosts.size(), 0);
  for (std::size_t r = 0; r < view.ranks.size(); ++r) {
    const RankInfo& info = view.ranks[r];
    if (info.host < 0 || info.host >= hosts)
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("ranks[%zu].host: %d is not a host (the view has %d)", r, info.host,
                              hosts));
    const HostInfo& host = view.hosts[static_cast<std::size_t>(info.host)];
    const int local = count[static_cast<std::size_t>(info.host)]++;
    if (info.localIndex != local)
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("ranks[%zu].local_index: %d, but it is rank %d of host %d's ranks "
                              "in rank order", r, info.localIndex, local, info.host));
    Status s = placeInRange(info.package, host.packages, r, "package");
    if (s.ok()) s = placeInRange(info.numaNode, host.numaNodes, r, "numa_node");
    if (s.ok()) s = placeInRange(info.l3Group, host.l3Groups, r, "l3_group");
    if (!s.ok()) return s;
  }
  for (int h = 0; h < hosts; ++h) {
    if (count[static_cast<std::size_t>(h)] == 0)
      return Status(ErrorCode::kInvalidArgument, strFormat("hosts[%d]: no rank lives on it", h));
    for (int o = 0; o < h; ++o) {
      if (sameHost(view.hosts[static_cast<std::size_t>(o)], view.hosts[static_cast<std::size_t>(h)]))
        return Status(ErrorCode::kInvalidArgument,
                      strFormat("hosts[%d]: the same host as hosts[%d] (name '%s', id '%s')", h, o,
                                view.hosts[static_cast<std::size_t>(h)].name.c_str(),
                                view.hosts[static_cast<std::size_t>(h)].id.c_str()));
    }
  }
  return Status::Ok();
}

View combine(const std::vector<View>& perRank) {
  View view;
  for (const View& one : perRank) {
    RankInfo rank = one.ranks.front();
    const HostInfo& host = one.hosts.front();
    auto it = std::find_if(view.hosts.begin(), view.hosts.end(),
                           [&](const HostInfo& h) { return sameHost(h, host); });
    if (it == view.hosts.end()) {
      view.hosts.push_back(host);
      it = view.hosts.end() - 1;
    } else {
      // Ranks of one host list the same NICs but each adds the loopback it uses (as the
      // lone loopback); the union keeps every NIC a rank names.
      for (const Nic& nic : host.nics) {
        if (std::none_of(it->nics.begin(), it->nics.end(),
                         [&](const Nic& n) { return n.name == nic.name; }))
          it->nics.push_back(nic);
      }
    }
    rank.host = static_cast<int>(it - view.hosts.begin());
    view.ranks.push_back(std::move(rank));
  }
  numberHostsByRank(view);
  return view;
}

View subView(const View& view, const std::vector<int>& members) {
  View sub;
  sub.hosts = view.hosts;
  for (const int m : members) sub.ranks.push_back(view.ranks[static_cast<std::size_t>(m)]);
  numberHostsByRank(sub);
  return sub;
}

View describeThisRank(const std::string& hostId, const std::string& address) {
  const Machine& machine = localMachine();
  HostInfo host;
  host.name = hostName();
  host.id = hostId;
  host.machine = machineIdentity();
  host.packages = static_cast<int>(machine.packages.size());
  host.numaNodes = static_cast<int>(machine.numaNodes.size());
  host.l3Groups = static_cast<int>(machine.l3Groups.size());
  host.cores = machine.cores;
  host.pus = machine.pus;
  const std::vector<InterfaceAddress> addresses = interfaceAddresses();
  host.nics = nicsFrom(addresses, "/sys/class/net");
  RankInfo rank;
  const std::vector<int> cpus = allowedCpuList();
  const Binding binding = bindingOf(machine, cpus);
  rank.package = binding.package;
  rank.numaNode = binding.numaNode;
  rank.l3Group = binding.l3Group;
  rank.cpus = formatCpuList(cpus);
  rank.address = address;
  rank.nic = interfaceOf(addresses, address);
  // The loopback a rank uses is listed even where the host has other NICs.
  if (!rank.nic.empty() &&
      std::none_of(host.nics.begin(), host.nics.end(), [&](const Nic& n) { return n.name == rank.nic; })) {
    std::vector<InterfaceAddress> used;
    for (const InterfaceAddress& a : addresses)
      if (a.name == rank.nic) used.push_back(a);
    for (Nic& nic : nicsFrom(used, "/sys/class/net")) host.nics.push_back(std::move(nic));
  }
  View view;
  view.hosts.push_back(std::move(host));
  view.ranks.push_back(std::move(rank));
  return view;
}

}  // namespace tutti::topo
