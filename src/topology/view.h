#pragma once
// The topology view of a communicator (DESIGN.md 4, Hierarchy): its hosts, and for each rank
// its host, its place among the host's ranks, where its CPUs sit (package, NUMA node, L3
// group) and the NIC its traffic leaves through. Built at creation from every rank's own
// description (describeThisRank), or loaded from a file (view_json.h); the algorithms see
// the part of it they need as a HostMap (schedule/collective.h), which core derives.

#include <string>
#include <vector>

#include "topology/nics.h"
#include "tutti/status.h"

namespace tutti::topo {

struct HostInfo {
  std::string name;  // the host name
  std::string id;    // hostIdentity(), or TUTTI_SHM_HOST where set: equal ids share memory
  // machineIdentity(): hosts with the same (non-empty) machine run on its CPUs, as pretend
  // hosts in network namespaces or containers of one machine do; empty: a machine its own.
  std::string machine;
  // What hwloc found; 0: not known.
  int packages = 0;
  int numaNodes = 0;
  int l3Groups = 0;
  int cores = 0;
  int pus = 0;
  std::vector<Nic> nics;
};

struct RankInfo {
  int host = 0;        // index into View::hosts
  int localIndex = 0;  // its place among its host's ranks, by rank
  // The package, NUMA node and L3 group holding all its CPUs; -1: several, or not known.
  int package = -1;
  int numaNode = -1;
  int l3Group = -1;
  std::string cpus;     // its affinity mask, as a CPU list ("0-3,8"); empty: not known
  std::string nic;      // the interface holding `address`; empty: none found
  std::string address;  // where it accepts TCP peers, or reaches the store from
};

struct View {
  std::vector<HostInfo> hosts;
  std::vector<RankInfo> ranks;  // indexed by rank

  int size() const { return static_cast<int>(ranks.size()); }
  /// Per rank: its host's index.
  std::vector<int> hostOfRanks() const;
  /// Host `host` as messages name it: "host 1 'node-b' at 10.0.0.2", the address of its
  /// lowest rank where known (pretend hosts of one machine share a name, not an address).
  std::string hostLabel(int host) const;
};

/// Hosts are the same when both their identity and their name are.
bool sameHost(const HostInfo& a, const HostInfo& b);

/// Checks what a view must hold: every rank's host exists, every host holds a rank, no two
/// hosts are the same, local indices count each host's ranks in rank order, and places lie
/// within their host's counts (where known). kInvalidArgument naming the field otherwise.
Status check(const View& view);

/// The communicator's view from its ranks' own descriptions (each one host and one rank,
/// indexed by rank): equal hosts merged, numbered in order of their lowest rank.
View combine(const std::vector<View>& perRank);

/// The view of the ranks `members` of `view` (their ranks in `view`, in their new order):
/// what a split child sees. Hosts without members are dropped.
View subView(const View& view, const std::vector<int>& members);

/// This rank's description, as combine() takes it: its host (`hostId`, the name, what hwloc
/// and the system list), its CPUs and where they sit, and the NIC holding `address`.
View describeThisRank(const std::string& hostId, const std::string& address);

}  // namespace tutti::topo
