#pragma once
// Where each rank of a simulated (or real) communicator sits: its host, its place among the
// host's ranks, its package, L3 group and core; the path class between two ranks
// (model.h's PathClass) follows from it. The simulator (simulate.h) prices each message by
// its pair's class and charges CPU work to the host's cores.
//
// Built from a topology view (a live communicator's, or a TUTTI_TOPO_DUMP_FILE file whose
// hosts are replicated to a cluster of any size), or from a synthetic shape: N ranks, K per
// host, in consecutive blocks. hosts() is the HostMap the hierarchical algorithms read.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "schedule/collective.h"
#include "tuning/model.h"
#include "tutti/status.h"

namespace tutti::topo {
struct View;
}

namespace tutti::tuning {

/// One rank's place. package and l3Group are numbered within the host; -1: not known
/// (treated as "another package" / "another L3 group" than any other rank's).
struct RankPlace {
  int host = 0;
  int localIndex = 0;  // its place among its host's ranks, by rank
  int package = 0;
  int l3Group = 0;
  int core = 0;  // the core its work runs on when the host has cores to spare
  /// The core (0 to the host's cores - 1) its work is bound to, where its affinity mask is
  /// one CPU (tutti-run binds ranks in blocks when there are more than CPUs); -1: any of
  /// the host's cores.
  int boundCore = -1;
};

/// A synthetic host's inside: how many packages, and L3 groups per package, its cores are
/// split into (ranks are spread over them in local order, like cores).
struct HostShape {
  int cores = 1;
  int packages = 1;
  int l3PerPackage = 1;
};

struct Placement {
  /// From a view: its hosts' places as the view gives them (a place not known counts as
  /// apart from every other rank); a host's cores are its cores, or fewer where its ranks'
  /// affinity masks together hold fewer (0 where the view does not know: the model's
  /// coresPerHost applies).
  static Result<Placement> fromView(const topo::View& view);
  /// The view's hosts repeated `hosts` times (host h is the view's host h % view hosts,
  /// with ranks in consecutive blocks): what a cluster of such hosts would be.
  static Result<Placement> replicate(const topo::View& view, int hosts);
  /// `ranks` ranks, `ranksPerHost` per host in consecutive blocks (the last host may hold
  /// fewer), each host with `coresPerHost` cores (0: the model's coresPerHost applies).
  static Result<Placement> synthetic(int ranks, int ranksPerHost, int coresPerHost);
  static Result<Placement> synthetic(int ranks, int ranksPerHost, const HostShape& shape);

  int size() const { return static_cast<int>(places_.size()); }
  int hostCount() const { return hosts_ ? hosts_->hostCount() : 0; }
  const RankPlace& place(int rank) const { return places_[static_cast<std::size_t>(rank)]; }
  /// The class of the path from a to b (a == b: kSameL3).
  PathClass pathClass(int a, int b) const;
  /// The ranks by host, as CollectiveSpec::hosts takes it (owned here: keep the placement
  /// alive while a spec points at it).
  const HostMap& hosts() const { return *hosts_; }
  /// Cores of `host` (0: not known; the model's coresPerHost applies).
  int cores(int host) const;
  /// The machine `host` runs on, numbered from 0 in order of their first host. Hosts of one
  /// machine (pretend hosts in network namespaces or containers: topo::HostInfo::machine)
  /// share its cores; from a synthetic shape or a replicated view each host is a machine.
  int machineOf(int host) const;
  int machineCount() const;
  /// Cores of `machine`: what its hosts' ranks' masks hold together (0: not known). A
  /// rank's boundCore is its place among these.
  int machineCores(int machine) const;
  /// True when every host holds the same number of ranks, and the same places in the same
  /// local order, and is a machine of its own (the symmetry the simulator's fast path relies
  /// on between hosts).
  bool uniform() const { return uniform_; }
  /// "16 ranks on 2 hosts (8 per host, 4 cores each)".
  std::string describe() const;

 private:
  std::vector<RankPlace> places_;
  std::vector<int> cores_;  // per host
  // Per host its machine, per machine its cores; empty: each host a machine of its own.
  std::vector<int> machineOf_;
  std::vector<int> machineCores_;
  std::shared_ptr<const HostMap> hosts_;  // shared: copies stay cheap and valid
  bool uniform_ = false;

  void finish();  // hosts_ and uniform_ from places_
};

}  // namespace tutti::tuning
