// The communicator's tuner from its configuration (tuner_setup.h).

#include "core/tuner_setup.h"

#include <algorithm>

#include "topology/view.h"
#include "tuning/plugin.h"

namespace tutti::detail {

bool tunerChooses(const std::string& mode, const HostMap* hosts, tuning::TransportKind transport) {
  if (mode == "model") return true;
  if (mode == "table") return false;
  // auto: the table's rules were measured over shared memory, and there they hold against
  // the model; over TCP, on one host as across hosts, the model does better
  // (docs/performance.md, The tuner against the table).
  return transport == tuning::TransportKind::kTcp || (hosts != nullptr && hosts->hostCount() > 1);
}

std::shared_ptr<tuning::Tuner> makeTuner(const TunerInputs& in, std::size_t flatRoom) {
  if (in.size < 2 || !tunerChooses(in.mode, in.hosts.get(), in.transport)) return nullptr;
  tuning::TunerSetup setup;
  setup.model = in.model != nullptr ? *in.model : tuning::defaults();
  // The ranks per host as the communicator has them; uneven hosts are priced as blocks
  // of the largest (every rank builds the same placement from the same map).
  int perHost = in.size;
  if (in.hosts != nullptr) {
    perHost = 0;
    for (const auto& ranks : in.hosts->ranksOf) perHost = std::max(perHost, static_cast<int>(ranks.size()));
  }
  auto placement = in.view != nullptr
                       ? tuning::Placement::fromView(*in.view)
                       : tuning::Placement::synthetic(in.size, perHost, setup.model.coresPerHost);
  if (placement.ok() && placement->size() != in.size)
    placement = Status(ErrorCode::kInternal, "the view's ranks are not the communicator's");
  if (!placement.ok() && in.view != nullptr)
    placement = tuning::Placement::synthetic(in.size, perHost, setup.model.coresPerHost);
  if (!placement.ok()) return nullptr;  // cannot happen for size >= 2: the table chooses
  setup.placement = std::move(*placement);
  setup.network = tuning::Network::flat();
  setup.sim.maxInflight = static_cast<int>(in.maxInflight);
  setup.transport = in.transport;
  setup.defaultSegmentBytes = in.segmentBytes;
  setup.fixedSegment = in.fixedSegment;
  setup.flatRoom = flatRoom;
  auto tuner = std::make_shared<tuning::Tuner>(setup);
  if (!in.pluginPath.empty()) tuner->setPlugin(tuning::TunerPlugin::load(in.pluginPath, setup));
  return tuner;
}

}  // namespace tutti::detail
