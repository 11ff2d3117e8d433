#include "tuning/sim_symmetry.h"

namespace tutti::tuning {

namespace {

// Whether rank b's schedule is rank a's with every peer relabelled by `map`: the same
// steps, sizes, message indices and dependencies (regions' places may differ).
template <typename Map>
bool sameUpTo(const Schedule& a, const Schedule& b, Map map) {
  if (a.steps.size() != b.steps.size() || a.deps != b.deps) return false;
  auto moved = [&](int peer) { return peer < 0 ? peer : map(peer); };
  for (std::size_t i = 0; i < a.steps.size(); ++i) {
    const Step& x = a.steps[i];
    const Step& y = b.steps[i];
    if (x.op != y.op || moved(x.recvPeer) != y.recvPeer || moved(x.sendPeer) != y.sendPeer ||
        x.recvIndex != y.recvIndex || x.sendIndex != y.sendIndex ||
        x.src.count != y.src.count || x.dst.count != y.dst.count || x.depBegin != y.depBegin ||
        x.depCount != y.depCount)
      return false;
  }
  return true;
}

bool powerOfTwo(int x) { return x > 0 && (x & (x - 1)) == 0; }

}  // namespace

Symmetry findSymmetry(const AlgorithmInfo& algorithm, const CollectiveSpec& base,
                      const Placement& placement, const Network& network) {
  const int n = placement.size();
  const Symmetry all{n, false};
  if (!placement.uniform() || placement.hostCount() < 2) return all;
  const int perHost = static_cast<int>(placement.hosts().ranksOf[0].size());
  int unit = perHost;
  if (network.kind == Network::Kind::kFatTree) {
    if (placement.hostCount() % network.hostsPerLeaf != 0) return all;
    unit = perHost * network.hostsPerLeaf;
  }
  if (n % unit != 0) return all;
  CollectiveSpec spec = base;
  auto schedule = [&](int rank) {
    spec.rank = rank;
    return algorithm.build(spec);
  };
  for (int period = unit; period <= n / 2; period += unit) {
    if (n % period != 0) continue;
    for (bool byXor : {false, true}) {
      if (byXor && !(powerOfTwo(period) && powerOfTwo(n))) continue;
      // Ranks at both ends and the middle of the first block, against their images in the
      // next block and the last.
      bool ok = true;
      for (int r : {0, period - 1, period / 2}) {
        const Schedule first = schedule(r);
        for (int move : {period, n - period}) {
          const int image = byXor ? r ^ move : r + move;
          const bool same =
              byXor ? sameUpTo(first, schedule(image), [&](int p) { return p ^ move; })
                    : sameUpTo(first, schedule(image), [&](int p) { return (p + move) % n; });
          if (!same) {
            ok = false;
            break;
          }
        }
        if (!ok) break;
      }
      if (ok) return Symmetry{period, byXor};
    }
  }
  return all;
}

}  // namespace tutti::tuning
