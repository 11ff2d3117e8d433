#include "core/topology_setup.h"

#include <utility>
#include <vector>

#include "base/log.h"
#include "base/macros.h"
#include "base/strings.h"
#include "bootstrap/bounded_store.h"
#include "topology/host_identity.h"
#include "topology/view_json.h"

namespace tutti::detail {
namespace {

std::vector<std::uint8_t> bytesOf(const std::string& text) {
  return std::vector<std::uint8_t>(text.begin(), text.end());
}

// A one-rank communicator needs no hwloc: its view has one host whatever the machine is,
// and most such communicators are created where nobody looks at it.
topo::View bareView(const std::string& hostId) {
  topo::View view;
  topo::HostInfo host;
  host.name = topo::hostName();
  host.id = hostId;
  view.hosts.push_back(std::move(host));
  view.ranks.emplace_back();
  return view;
}

void logView(const TopologyRequest& q, const topo::View& view, const char* source) {
  if (!log::enabled(log::Level::kInfo, log::kTopo)) return;
  const topo::RankInfo& me = view.ranks[static_cast<std::size_t>(q.rank)];
  const topo::HostInfo& host = view.hosts[static_cast<std::size_t>(me.host)];
  TUTTI_INFO(kTopo, "communicator '%s': %s (%s); rank %d on host %d '%s' as local rank %d, "
             "package %d, NUMA node %d, L3 group %d, CPUs %s, NIC %s",
             q.name.c_str(), HostMap::fromLabels(view.hostOfRanks()).toString().c_str(), source,
             q.rank, me.host, host.name.c_str(), me.localIndex, me.package, me.numaNode,
             me.l3Group, me.cpus.empty() ? "?" : me.cpus.c_str(),
             me.nic.empty() ? "?" : me.nic.c_str());
}

}  // namespace

TopologySetup::TopologySetup(TopologyRequest request, const Config& config,
                             std::shared_ptr<const topo::View> parent)
    : q_(std::move(request)),
      file_(config.topoFile),
      dumpFile_(config.topoDumpFile),
      parent_(std::move(parent)) {}

bool TopologySetup::gathers() const { return !parent_ && file_.empty() && q_.size > 1; }

Status TopologySetup::publish() {
  if (!gathers() || published_) return Status::Ok();
  const topo::View mine = topo::describeThisRank(q_.hostId, q_.address);
  TUTTI_RETURN_IF_ERROR(setBefore(*q_.store, q_.prefix + "topo/" + std::to_string(q_.rank),
                                  bytesOf(topo::toJson(mine)), q_.deadline));
  published_ = true;
  return Status::Ok();
}

Result<std::shared_ptr<const topo::View>> TopologySetup::gather() {
  TUTTI_RETURN_IF_ERROR(publish());
  const std::string combined = q_.prefix + "topo/all";
  if (q_.rank == 0) {
    std::vector<topo::View> perRank;
    perRank.reserve(static_cast<std::size_t>(q_.size));
    for (int r = 0; r < q_.size; ++r) {
      auto raw = q_.store->get(q_.prefix + "topo/" + std::to_string(r), q_.deadline);
      if (!raw.ok()) return raw.status().withContext(strFormat("waiting for rank %d's topology", r));
      auto one = topo::fromJson(std::string(raw->begin(), raw->end()));
      if (!one.ok() || one->size() != 1)
        return Status(ErrorCode::kProtocolError,
                      strFormat("rank %d published a malformed topology description: %s", r,
                                one.ok() ? "not one rank" : one.status().message().c_str()));
      perRank.push_back(std::move(one).value());
    }
    auto view = std::make_shared<topo::View>(topo::combine(perRank));
    TUTTI_RETURN_IF_ERROR(setBefore(*q_.store, combined, bytesOf(topo::toJson(*view)), q_.deadline));
    return std::shared_ptr<const topo::View>(std::move(view));
  }
  auto raw = q_.store->get(combined, q_.deadline);
  if (!raw.ok()) return raw.status().withContext("waiting for rank 0's topology view");
  auto view = topo::fromJson(std::string(raw->begin(), raw->end()));
  if (!view.ok() || view->size() != q_.size)
    return Status(ErrorCode::kProtocolError,
                  strFormat("rank 0 published a malformed topology view: %s",
                            view.ok() ? "another number of ranks" : view.status().message().c_str()));
  return std::make_shared<const topo::View>(std::move(view).value());
}

Result<std::shared_ptr<const topo::View>> TopologySetup::finish() {
  std::shared_ptr<const topo::View> view;
  const char* source = "detected";
  if (parent_) {
    view = parent_;
    source = "from the parent communicator";
  } else if (!file_.empty()) {
    auto loaded = topo::loadViewFile(file_);
    if (!loaded.ok()) return loaded.status().withContext("TUTTI_TOPO_FILE");
    if (loaded->size() != q_.size)
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("TUTTI_TOPO_FILE: topology file %s describes %d ranks, but "
                              "communicator '%s' has %d", file_.c_str(), loaded->size(),
                              q_.name.c_str(), q_.size));
    view = std::make_shared<const topo::View>(std::move(loaded).value());
    source = "from TUTTI_TOPO_FILE";
  } else if (q_.size > 1) {
    TUTTI_ASSIGN_OR_RETURN(view, gather());
  } else {
    view = std::make_shared<const topo::View>(
        dumpFile_.empty() ? bareView(q_.hostId) : topo::describeThisRank(q_.hostId, q_.address));
  }
  if (!parent_ && !dumpFile_.empty() && q_.rank == 0) {
    const Status written = topo::writeViewFile(dumpFile_, *view);
    if (!written.ok()) return written.withContext("TUTTI_TOPO_DUMP_FILE");
  }
  logView(q_, *view, source);
  return view;
}

std::shared_ptr<const HostMap> hostMapOf(const topo::View& view) {
  if (view.hosts.size() <= 1) return nullptr;
  return std::make_shared<const HostMap>(HostMap::fromLabels(view.hostOfRanks()));
}

}  // namespace tutti::detail
