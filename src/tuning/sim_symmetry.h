#pragma once
// The symmetry the simulator's fast path uses (simulate.cc): a group of relabellings of the
// ranks that maps the schedules onto each other, so that ranks [0, period) stand for all.

#include <cstdint>

#include "algorithms/algorithm.h"
#include "tuning/network.h"
#include "tuning/placement.h"

namespace tutti::tuning {

// The relabelling group of a run: ranks [0, period) stand for all.
struct Symmetry {
  int period = 0;
  bool byXor = false;  // r -> r ^ kP; else r -> r + kP (mod n)
  // The image of rank p under the element that maps q to q % period.
  int image(int p, int q, int n) const {
    const int move = q - q % period;
    return byXor ? p ^ move : (p - move + n) % n;
  }
  // What a message's two ends keep under the group: p - q (mod n) or p ^ q ...
  std::uint32_t relation(int p, int q, int n) const {
    return static_cast<std::uint32_t>(byXor ? p ^ q : (p - q + n) % n);
  }
  // ... and the sender from the receiver and that relation.
  int sender(int receiver, std::uint32_t relation, int n) const {
    return byXor ? receiver ^ static_cast<int>(relation)
                 : static_cast<int>((static_cast<std::uint32_t>(receiver) + relation) %
                                    static_cast<std::uint32_t>(n));
  }
};

// The smallest block of ranks (whole hosts, and whole leaf switches on a fat tree) whose
// translations, or XORs, map the schedules onto each other, among the divisors of n and
// checked on a few ranks against their images; n (every rank) where none is found.
Symmetry findSymmetry(const AlgorithmInfo& algorithm, const CollectiveSpec& base,
                      const Placement& placement, const Network& network);

}  // namespace tutti::tuning
