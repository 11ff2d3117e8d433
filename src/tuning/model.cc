// The model's names and its defaults: what the tuner uses where nothing was measured.
#include "tuning/model.h"

namespace tutti::tuning {

const char* pathClassName(PathClass path) {
  switch (path) {
    case PathClass::kSameL3: return "same_l3";
    case PathClass::kSameSocket: return "same_socket";
    case PathClass::kSameHost: return "same_host";
    case PathClass::kNetwork: return "network";
  }
  return "?";
}

std::optional<PathClass> parsePathClass(std::string_view name) {
  for (int c = 0; c < kNumPathClasses; ++c)
    if (name == pathClassName(static_cast<PathClass>(c))) return static_cast<PathClass>(c);
  return std::nullopt;
}

// A small two-socket server of the 2020s, as a round figure per parameter, so that a
// model nobody measured still orders the algorithms sensibly: a few hundred nanoseconds
// through shared memory, more across L3 groups and packages; ~10 GB/s per shared-memory
// stream, ~40 GB/s of memory per host; a 10 Gbit/s NIC with ~25 us across the network
// (a TCP round trip through two kernels); a reduction a little slower than a copy.
MachineModel defaults() {
  MachineModel m;
  m.paths[static_cast<int>(PathClass::kSameL3)] = {4e-7, 1.0 / 10e9, 2e-7};
  m.paths[static_cast<int>(PathClass::kSameSocket)] = {7e-7, 1.0 / 8e9, 2e-7};
  m.paths[static_cast<int>(PathClass::kSameHost)] = {1.2e-6, 1.0 / 6e9, 2e-7};
  m.paths[static_cast<int>(PathClass::kNetwork)] = {kDefaultNetworkAlpha, 1.0 / 1.25e9, 2e-6};
  for (int t = 0; t < kNumDataTypes; ++t) m.gamma[static_cast<std::size_t>(t)] = 1.0 / 8e9;
  // The half types are widened to float32 and rounded back element by element.
  m.gamma[static_cast<int>(DataType::kFloat16)] = 1.0 / 3e9;
  m.gamma[static_cast<int>(DataType::kBFloat16)] = 1.0 / 3e9;
  m.copyBeta = 1.0 / 10e9;
  m.hostMemoryBandwidth = 40e9;
  m.nicBandwidth = 1.25e9;
  m.coresPerHost = 1;
  m.flatAlpha = 1e-6;
  m.flatBeta = 1.0 / 10e9;
  // The library's path per message end (an executor step over shared memory measured on a
  // 2-vCPU EPYC VM: ~0.5 us a round where the cache line's trip is 0.2), a context switch,
  // a yield handing a core over (~1 us), a 32 MiB L3, caches ~4x memory;
  // loopback TCP ~10 us one way, ~2 GB/s a stream, ~3 us of CPU per end.
  m.messageOverhead = 1.5e-7;
  m.switchCost = 3e-6;
  m.yieldCost = 1e-6;
  m.llcBytes = 32u << 20;
  m.cacheBandwidth = 160e9;
  m.loopback = {4e-6, 1.0 / 2e9, 3e-6};
  m.origin = "defaults";
  return m;
}

}  // namespace tutti::tuning
