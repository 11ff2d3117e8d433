#pragma once
// The network between hosts, for the simulator (simulate.h): which resources a message
// between two hosts crosses, and each resource's bandwidth. A resource carries one message's
// bytes at a time at its bandwidth (messages queue on it in the order they reach it), and a
// message streams through its resources cut-through: it cannot finish on one before the one
// before it.
//
//   flat                         full bisection: each host one NIC (egress and ingress)
//   fat-tree:hosts-per-leaf=K,oversub=R[,nic-gbps=B][,hop-us=L]
//                                hosts in leaf switches of K; each leaf's uplinks carry
//                                K x NIC / R (R:1 oversubscription) each way; a message
//                                between leaves crosses its source leaf's uplink and its
//                                destination leaf's downlink, and adds 2 L of latency
//   rail:rails=R[,nic-gbps=B][,spine-oversub=S][,hop-us=L]
//                                R NICs per host; the rank of local index l uses NIC
//                                l % R (rail l % R); same-rail messages cross only the two
//                                NICs, cross-rail ones also the spine of the source's rail,
//                                which carries hosts x NIC / S
//   FILE                         a JSON file with the same fields: {"kind": "fat-tree",
//                                "hosts_per_leaf": 4, "oversub": 2, "nic_gbps": 100, ...}
//
// nic-gbps (Gbit/s) overrides the model's nicBandwidth; unset, the model's applies (and
// where that is 0 as well, a NIC adds no contention: the network path's beta alone).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/status.h"

namespace tutti::tuning {

struct Network {
  enum class Kind : std::uint8_t { kFlat, kFatTree, kRail };

  Kind kind = Kind::kFlat;
  int hostsPerLeaf = 0;       // fat-tree
  double oversub = 1;         // fat-tree: leaf uplinks; rail: the spine
  int rails = 1;              // rail
  double nicBandwidth = 0;    // bytes/s per NIC; 0: the model's nicBandwidth
  double hopLatency = 0;      // seconds per switch hop beyond the leaf (added to alpha)

  static Network flat() { return Network{}; }
  /// "flat", "fat-tree:..." or "rail:..." as above; kInvalidArgument naming the problem.
  static Result<Network> parse(std::string_view text);
  /// A JSON file as above.
  static Result<Network> load(const std::string& path);
  /// parse() for the keywords, load() for anything else (a file name).
  static Result<Network> fromArgument(const std::string& text);

  /// The text parse() takes back.
  std::string describe() const;
};

}  // namespace tutti::tuning
