#pragma once
// The communicator's topology view at creation (DESIGN.md 4, Hierarchy; docs/topology.md):
// gathered through the store from every rank's own description, or loaded from
// TUTTI_TOPO_FILE; dumped to TUTTI_TOPO_DUMP_FILE; and the HostMap the algorithms read.
//
// The gather costs O(n) store operations: each rank sets its description under its own key
// (publish(), called before the transport connects, so that nobody waits for it later),
// rank 0 reads them all and sets the combined view under one key, and every other rank
// reads that one key (finish()).

#include <memory>
#include <string>

#include "base/config.h"
#include "schedule/collective.h"
#include "topology/view.h"
#include "tutti/deadline.h"
#include "tutti/status.h"
#include "tutti/store.h"

namespace tutti::detail {

struct TopologyRequest {
  Store* store = nullptr;
  std::string prefix;  // the communicator's store keys
  std::string name;    // the communicator's, for messages
  int rank = 0;
  int size = 1;
  std::string hostId;   // this rank's host identity (TUTTI_SHM_HOST where set)
  std::string address;  // where this rank accepts TCP peers or reaches the store from
  Deadline deadline = Deadline::never();
};

class TopologySetup {
 public:
  /// The view comes from the ranks (gathered), from TUTTI_TOPO_FILE, or from `parent`
  /// (a split child: its ranks' part of the parent's view, given whole here).
  TopologySetup(TopologyRequest request, const Config& config,
                std::shared_ptr<const topo::View> parent);

  /// Sets this rank's description in the store, where the view is gathered.
  Status publish();
  /// The view, once every rank has published: checked against the communicator's size,
  /// dumped by rank 0 where asked (not for split children), logged at INFO/TOPO.
  Result<std::shared_ptr<const topo::View>> finish();

 private:
  bool gathers() const;
  Result<std::shared_ptr<const topo::View>> gather();

  TopologyRequest q_;
  std::string file_;      // TUTTI_TOPO_FILE
  std::string dumpFile_;  // TUTTI_TOPO_DUMP_FILE
  std::shared_ptr<const topo::View> parent_;
  bool published_ = false;
};

/// The communicator's ranks by host where `view` has more than one host; null for one.
std::shared_ptr<const HostMap> hostMapOf(const topo::View& view);

}  // namespace tutti::detail
