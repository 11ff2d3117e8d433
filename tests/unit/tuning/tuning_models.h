#pragma once
// Machine models and tuner setups for the tuning tests: round numbers, with a fast or a
// slow network, so that the clear-cut shapes win by wide margins.

#include <string>

#include "tuning/tuner.h"

namespace tutti::tuning::test {

/// Shared memory on the host (1 us, 5 GB/s), a 10 Gbit/s network (20 us) with one NIC per
/// host; 8 cores per host.
inline MachineModel fastModel() {
  MachineModel m;
  for (int c = 0; c < 3; ++c) m.paths[static_cast<std::size_t>(c)] = {1e-6, 1.0 / 5e9, 0.5e-6};
  m.paths[3] = {20e-6, 1.0 / 1.25e9, 2e-6};
  m.gamma.fill(1.0 / 4e9);
  m.copyBeta = 1.0 / 8e9;
  m.nicBandwidth = 1.25e9;
  m.coresPerHost = 8;
  m.flatAlpha = 0.3e-6;
  m.flatBeta = 1.0 / 20e9;
  return m;
}

/// fastModel() with a 1 Gbit/s network of 50 us.
inline MachineModel slowNetworkModel() {
  MachineModel m = fastModel();
  m.paths[3] = {50e-6, 1.0 / 0.125e9, 2e-6};
  m.nicBandwidth = 0.125e9;
  return m;
}

inline TunerSetup setupFor(const MachineModel& model, int ranks, int perHost,
                           TransportKind transport, std::size_t flatRoom = 0) {
  TunerSetup s;
  s.model = model;
  s.placement = *Placement::synthetic(ranks, perHost, model.coresPerHost);
  s.network = Network::flat();
  s.transport = transport;
  s.flatRoom = flatRoom;
  return s;
}

/// An all-reduce (or `kind`) of `bytes` float32 per rank on rank `rank` of `setup`'s world.
inline CollectiveSpec specFor(const TunerSetup& setup, std::uint64_t bytes,
                              Collective kind = Collective::kAllReduce, int rank = 0) {
  CollectiveSpec spec;
  spec.kind = kind;
  spec.dtype = DataType::kFloat32;
  spec.count = bytes / 4;
  spec.size = setup.placement.size();
  spec.rank = rank;
  spec.segmentCount = setup.defaultSegmentBytes / 4;
  spec.sharedMemory = setup.transport == TransportKind::kShm;
  spec.hosts = setup.placement.hostCount() > 1 ? &setup.placement.hosts() : nullptr;
  return spec;
}

}  // namespace tutti::tuning::test
