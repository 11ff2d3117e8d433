#pragma once
// The tuner of a communicator (tuning/tuner.h), set up from the configuration
// (TUTTI_TUNER, TUTTI_TUNER_PLUGIN, TUTTI_SEGMENT_BYTES), the transport and the hosts, and
// the machine's model agreed at creation. Null where the table chooses.

#include <cstdint>
#include <memory>
#include <string>

#include "schedule/collective.h"
#include "tuning/tuner.h"

namespace tutti::topo {
struct View;
}

namespace tutti::detail {

/// What create() knows for the tuner before the transport's flat exchange exists.
struct TunerInputs {
  std::string mode = "auto";  // TUTTI_TUNER: auto, model or table
  std::string pluginPath;     // TUTTI_TUNER_PLUGIN
  std::shared_ptr<const HostMap> hosts;  // null: one host
  int size = 1;
  tuning::TransportKind transport = tuning::TransportKind::kShm;
  std::uint64_t segmentBytes = 512 << 10;
  bool fixedSegment = false;  // TUTTI_SEGMENT_BYTES set
  std::size_t maxInflight = 16;
  std::shared_ptr<const tuning::MachineModel> model;  // agreed at creation; null: defaults
  /// The communicator's topology view (every rank's the same): the ranks' places. Null:
  /// a synthetic placement from the hosts.
  std::shared_ptr<const topo::View> view;
};

/// Whether `mode` lets the model choose on this communicator (auto: across hosts, and over
/// TCP on one host; the table over shared memory on one host).
bool tunerChooses(const std::string& mode, const HostMap* hosts, tuning::TransportKind transport);

/// The tuner for `inputs` with the flat exchange's room, or null where the table chooses.
std::shared_ptr<tuning::Tuner> makeTuner(const TunerInputs& inputs, std::size_t flatRoom);

}  // namespace tutti::detail
