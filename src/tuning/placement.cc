// Placement: each rank's host, package, L3 group and core, from a view or a synthetic shape.
#include "tuning/placement.h"

#include <algorithm>

#include "base/cpus.h"
#include "base/macros.h"
#include "base/strings.h"
#include "topology/view.h"

namespace tutti::tuning {

namespace {

Status badShape(const std::string& what) {
  return Status(ErrorCode::kInvalidArgument, "placement: " + what);
}

// The view's hosts grouped by machine (topo::HostInfo::machine; a host without one is a
// machine of its own), in order of their first host.
std::vector<std::vector<int>> machinesOf(const topo::View& view) {
  std::vector<std::vector<int>> out;
  std::vector<std::string> names;
  for (int h = 0; h < static_cast<int>(view.hosts.size()); ++h) {
    const std::string& machine = view.hosts[static_cast<std::size_t>(h)].machine;
    const auto found = machine.empty() ? names.end() : std::find(names.begin(), names.end(), machine);
    if (found != names.end()) {
      out[static_cast<std::size_t>(found - names.begin())].push_back(h);
      continue;
    }
    names.push_back(machine);
    out.push_back({h});
  }
  return out;
}

// Each host of `view` a machine of its own.
std::vector<std::vector<int>> eachHostAlone(const topo::View& view) {
  std::vector<std::vector<int>> out;
  for (int h = 0; h < static_cast<int>(view.hosts.size()); ++h) out.push_back({h});
  return out;
}

bool holds(const std::vector<int>& hosts, int host) {
  return std::find(hosts.begin(), hosts.end(), host) != hosts.end();
}

// The cores the ranks of `hosts` (one machine's) can run on: the machine's cores, or fewer
// where the ranks' affinity masks together hold fewer CPUs (ranks bound to a part of it, or
// pretend hosts of one machine each given its own CPUs), counted in cores where it has more
// CPUs (hardware threads) than cores. 0: not known.
int usableCores(const topo::View& view, const std::vector<int>& hosts) {
  const topo::HostInfo& info = view.hosts[static_cast<std::size_t>(hosts.front())];
  std::vector<int> cpus;
  for (const topo::RankInfo& r : view.ranks) {
    if (!holds(hosts, r.host)) continue;
    std::optional<std::vector<int>> mask = parseCpuList(r.cpus);
    if (!mask || mask->empty()) return std::max(0, info.cores);  // a mask not known
    cpus.insert(cpus.end(), mask->begin(), mask->end());
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  if (cpus.empty()) return std::max(0, info.cores);
  int usable = static_cast<int>(cpus.size());
  if (info.cores > 0 && info.pus > info.cores)
    usable = std::max(1, (usable * info.cores + info.pus - 1) / info.pus);
  return info.cores > 0 ? std::min(info.cores, usable) : usable;
}

// Per rank of `view`, the core its work is bound to: where its affinity mask is one CPU
// (tutti-run binds ranks in blocks where there are more of them than CPUs), that CPU's place
// among the CPUs its machine's ranks (those of the hosts `machines` groups with its host)
// can use; -1 where it may run on several, where a mask is not known, or where the
// machine's CPUs are hardware threads rather than cores.
std::vector<int> boundCores(const topo::View& view, const std::vector<std::vector<int>>& machines) {
  std::vector<int> out(view.ranks.size(), -1);
  for (const std::vector<int>& hosts : machines) {
    const topo::HostInfo& info = view.hosts[static_cast<std::size_t>(hosts.front())];
    if (info.cores > 0 && info.pus > info.cores) continue;
    std::vector<int> cpus;
    std::vector<std::pair<std::size_t, int>> single;  // (rank index, its one CPU)
    bool known = true;
    for (std::size_t r = 0; r < view.ranks.size() && known; ++r) {
      if (!holds(hosts, view.ranks[r].host)) continue;
      std::optional<std::vector<int>> mask = parseCpuList(view.ranks[r].cpus);
      if (!mask || mask->empty()) known = false;
      if (!known) break;
      cpus.insert(cpus.end(), mask->begin(), mask->end());
      if (mask->size() == 1) single.emplace_back(r, mask->front());
    }
    if (!known) continue;
    std::sort(cpus.begin(), cpus.end());
    cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
    if (info.cores > 0 && static_cast<int>(cpus.size()) > info.cores) continue;
    for (const auto& [r, cpu] : single)
      out[r] = static_cast<int>(std::lower_bound(cpus.begin(), cpus.end(), cpu) - cpus.begin());
  }
  return out;
}

// The places of one host of `view` (its ranks in local order).
std::vector<RankPlace> hostPlaces(const topo::View& view, int host) {
  std::vector<RankPlace> out;
  const std::vector<int> bound = boundCores(view, eachHostAlone(view));
  for (std::size_t i = 0; i < view.ranks.size(); ++i) {
    const topo::RankInfo& r = view.ranks[i];
    if (r.host != host) continue;
    RankPlace p;
    p.host = host;
    p.localIndex = r.localIndex;
    p.package = r.package;
    p.l3Group = r.l3Group;
    p.boundCore = bound[i];
    out.push_back(p);
  }
  std::sort(out.begin(), out.end(),
            [](const RankPlace& a, const RankPlace& b) { return a.localIndex < b.localIndex; });
  const int cores = usableCores(view, {host});
  for (RankPlace& p : out) p.core = cores > 0 ? p.localIndex % cores : p.localIndex;
  return out;
}

}  // namespace

void Placement::finish() {
  std::vector<int> labels(places_.size());
  for (std::size_t r = 0; r < places_.size(); ++r) labels[r] = places_[r].host;
  hosts_ = std::make_shared<const HostMap>(HostMap::fromLabels(labels));
  // Hosts renumbered in order of their lowest rank, as the map does.
  for (std::size_t r = 0; r < places_.size(); ++r) {
    places_[r].host = hosts_->hostOf[r];
    places_[r].localIndex = hosts_->localIndex[r];
  }
  uniform_ = machineCount() == hostCount();
  const auto& first = hosts_->ranksOf[0];
  for (int h = 1; h < hosts_->hostCount() && uniform_; ++h) {
    const auto& ranks = hosts_->ranksOf[static_cast<std::size_t>(h)];
    if (ranks.size() != first.size() || cores(h) != cores(0)) {
      uniform_ = false;
      break;
    }
    for (std::size_t i = 0; i < ranks.size(); ++i) {
      const RankPlace& a = place(first[i]);
      const RankPlace& b = place(ranks[i]);
      if (a.package != b.package || a.l3Group != b.l3Group || a.core != b.core ||
          a.boundCore != b.boundCore) {
        uniform_ = false;
        break;
      }
    }
  }
}

Result<Placement> Placement::fromView(const topo::View& view) {
  TUTTI_RETURN_IF_ERROR(topo::check(view));
  if (view.ranks.empty()) return badShape("the view holds no rank");
  Placement out;
  out.places_.reserve(view.ranks.size());
  std::vector<int> hostCores(view.hosts.size());
  for (std::size_t h = 0; h < view.hosts.size(); ++h) hostCores[h] = usableCores(view, {static_cast<int>(h)});
  const std::vector<std::vector<int>> machines = machinesOf(view);
  const std::vector<int> bound = boundCores(view, machines);
  for (std::size_t i = 0; i < view.ranks.size(); ++i) {
    const topo::RankInfo& r = view.ranks[i];
    const int cores = hostCores[static_cast<std::size_t>(r.host)];
    RankPlace p;
    p.host = r.host;
    p.localIndex = r.localIndex;
    p.package = r.package;
    p.l3Group = r.l3Group;
    p.core = cores > 0 ? r.localIndex % cores : r.localIndex;
    p.boundCore = bound[i];
    out.places_.push_back(p);
  }
  // finish() renumbers the hosts in order of their lowest rank; their cores follow.
  std::vector<int> viewHost(view.ranks.size());
  for (std::size_t r = 0; r < view.ranks.size(); ++r) viewHost[r] = view.ranks[r].host;
  out.finish();
  out.cores_.assign(static_cast<std::size_t>(out.hostCount()), 0);
  for (std::size_t r = 0; r < view.ranks.size(); ++r)
    out.cores_[static_cast<std::size_t>(out.places_[r].host)] =
        hostCores[static_cast<std::size_t>(viewHost[r])];
  if (machines.size() < view.hosts.size()) {
    // Machines numbered in order of their first host as renumbered.
    std::vector<int> machineOfViewHost(view.hosts.size());
    for (std::size_t m = 0; m < machines.size(); ++m)
      for (const int h : machines[m]) machineOfViewHost[static_cast<std::size_t>(h)] = static_cast<int>(m);
    std::vector<int> hostMachine(static_cast<std::size_t>(out.hostCount()), -1);
    for (std::size_t r = 0; r < view.ranks.size(); ++r)
      hostMachine[static_cast<std::size_t>(out.places_[r].host)] =
          machineOfViewHost[static_cast<std::size_t>(viewHost[r])];
    std::vector<int> renumbered(machines.size(), -1);
    int next = 0;
    for (int& m : hostMachine) {
      int& to = renumbered[static_cast<std::size_t>(m)];
      if (to < 0) {
        to = next++;
        out.machineCores_.push_back(usableCores(view, machines[static_cast<std::size_t>(m)]));
      }
      m = to;
    }
    out.machineOf_ = std::move(hostMachine);
  }
  out.finish();
  return out;
}

Result<Placement> Placement::replicate(const topo::View& view, int hosts) {
  TUTTI_RETURN_IF_ERROR(topo::check(view));
  if (view.hosts.empty()) return badShape("the view holds no host");
  if (hosts < 1) return badShape(strFormat("hosts must be >= 1, got %d", hosts));
  const int viewHosts = static_cast<int>(view.hosts.size());
  std::vector<std::vector<RankPlace>> shapes;
  std::size_t total = 0;
  for (int h = 0; h < viewHosts; ++h) shapes.push_back(hostPlaces(view, h));
  for (int h = 0; h < hosts; ++h) total += shapes[static_cast<std::size_t>(h % viewHosts)].size();
  if (total > static_cast<std::size_t>(1) << 30)
    return badShape(strFormat("%zu ranks is more than the simulator takes", total));
  Placement out;
  out.places_.reserve(total);
  for (int h = 0; h < hosts; ++h) {
    for (RankPlace p : shapes[static_cast<std::size_t>(h % viewHosts)]) {
      p.host = h;
      out.places_.push_back(p);
    }
    out.cores_.push_back(usableCores(view, {h % viewHosts}));
  }
  out.finish();
  return out;
}

Result<Placement> Placement::synthetic(int ranks, int ranksPerHost, int coresPerHost) {
  HostShape shape;
  shape.cores = coresPerHost;
  return synthetic(ranks, ranksPerHost, shape);
}

Result<Placement> Placement::synthetic(int ranks, int ranksPerHost, const HostShape& shape) {
  if (ranks < 1) return badShape(strFormat("ranks must be >= 1, got %d", ranks));
  if (ranksPerHost < 1)
    return badShape(strFormat("ranks per host must be >= 1, got %d", ranksPerHost));
  if (shape.cores < 0) return badShape(strFormat("cores per host must be >= 0, got %d", shape.cores));
  if (shape.packages < 1 || shape.l3PerPackage < 1)
    return badShape(strFormat("packages (%d) and L3 groups per package (%d) must be >= 1",
                              shape.packages, shape.l3PerPackage));
  Placement out;
  out.places_.resize(static_cast<std::size_t>(ranks));
  // Ranks take the cores in order; packages and L3 groups split the cores evenly (or the
  // ranks, where the cores are not known).
  const int slots = shape.cores > 0 ? shape.cores : ranksPerHost;
  const int groups = shape.packages * shape.l3PerPackage;
  for (int r = 0; r < ranks; ++r) {
    RankPlace& p = out.places_[static_cast<std::size_t>(r)];
    p.host = r / ranksPerHost;
    p.localIndex = r % ranksPerHost;
    p.core = p.localIndex % slots;
    const int group = static_cast<int>(static_cast<long long>(p.core) * groups / slots);
    p.package = group / shape.l3PerPackage;
    p.l3Group = group;
  }
  out.cores_.assign(static_cast<std::size_t>((ranks + ranksPerHost - 1) / ranksPerHost),
                    shape.cores);
  out.finish();
  return out;
}

PathClass Placement::pathClass(int a, int b) const {
  if (a == b) return PathClass::kSameL3;
  const RankPlace& x = place(a);
  const RankPlace& y = place(b);
  if (x.host != y.host) return PathClass::kNetwork;
  if (x.package < 0 || x.package != y.package) return PathClass::kSameHost;
  if (x.l3Group < 0 || x.l3Group != y.l3Group) return PathClass::kSameSocket;
  return PathClass::kSameL3;
}

int Placement::cores(int host) const {
  return host >= 0 && static_cast<std::size_t>(host) < cores_.size()
             ? cores_[static_cast<std::size_t>(host)]
             : 0;
}

int Placement::machineOf(int host) const {
  return machineOf_.empty() ? host : machineOf_[static_cast<std::size_t>(host)];
}

int Placement::machineCount() const {
  return machineOf_.empty() ? hostCount() : static_cast<int>(machineCores_.size());
}

int Placement::machineCores(int machine) const {
  return machineOf_.empty() ? cores(machine)
         : machine >= 0 && static_cast<std::size_t>(machine) < machineCores_.size()
             ? machineCores_[static_cast<std::size_t>(machine)]
             : 0;
}

std::string Placement::describe() const {
  const int hosts = hostCount();
  std::string out = strFormat("%d rank%s on %d host%s", size(), size() == 1 ? "" : "s", hosts,
                              hosts == 1 ? "" : "s");
  if (uniform_) {
    out += strFormat(" (%zu per host", hosts_->ranksOf[0].size());
    if (cores(0) > 0) out += strFormat(", %d cores each", cores(0));
    out += ")";
  }
  const int machines = machineCount();
  if (machines < hosts) out += strFormat(" of %d machine%s", machines, machines == 1 ? "" : "s");
  return out;
}

}  // namespace tutti::tuning
