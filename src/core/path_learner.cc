#include "core/path_learner.h"

#include <algorithm>
#include <bit>

#include "base/pool_growth.h"

namespace tutti::detail {

std::uint32_t PathLearner::shapeOf(Collective kind, DataType dtype, std::uint64_t bytes,
                                   std::uint32_t algorithm) {
  const auto log2 = static_cast<std::uint32_t>(std::bit_width(bytes));  // 0..64
  return ((algorithm & 0xffu) << 24) | (static_cast<std::uint32_t>(kind) << 16) |
         (static_cast<std::uint32_t>(dtype) << 8) | log2;
}

unsigned PathLearner::waysFor(Collective kind, std::uint64_t message, bool buffersRule,
                              std::uint64_t directFrom, std::uint64_t streamedFrom) {
  const bool movesOnly = kind == Collective::kAllGather || kind == Collective::kAllToAll ||
                         kind == Collective::kBroadcast || kind == Collective::kGather ||
                         kind == Collective::kScatter;
  const bool reduces = kind == Collective::kAllReduce || kind == Collective::kReduceScatter ||
                       kind == Collective::kReduce;
  unsigned ways = 0;
  if (movesOnly && directFrom != 0 && message >= directFrom)
    ways |= bit(Way::kDirect) | bit(Way::kBuffered);
  if (streamedFrom != 0 &&
      ((movesOnly && message >= std::max(streamedFrom, kMovesStreamedFrom)) ||
       (reduces && buffersRule && message >= streamedFrom)))
    ways |= bit(Way::kBuffered) | bit(Way::kStreamed);
  return ways;
}

std::int64_t PathLearner::Samples::estimate() const {
  if (count == 0) return -1;
  std::int64_t best = ns[0];
  for (std::uint32_t i = 1; i < count; ++i) best = std::min(best, ns[i]);
  return best;
}

PathLearner::Way PathLearner::otherWay(const Shape& s, std::uint64_t cycles) {
  Way others[kWays];
  std::size_t n = 0;
  for (std::size_t w = 0; w < kWays; ++w) {
    const auto way = static_cast<Way>(w);
    if ((s.ways & bit(way)) != 0 && way != s.kept) others[n++] = way;
  }
  return n == 0 ? s.kept : others[cycles % n];
}

PathLearner::Choice PathLearner::choose(std::uint32_t shape, Way rule, unsigned ways,
                                        std::uint64_t message) {
  Shape& s = shapes_[shape];
  const std::uint64_t n = s.calls++;
  if (n == 0) {
    // Before the first decision the rule's way is the one kept, so that a shape called a
    // few times goes the way it went before there was a learner.
    s.rule = rule;
    s.kept = rule;
    s.ways = ways | bit(rule);
    s.tried = otherWay(s, 0);
    s.shortOpening = message >= kLongFrom;
    if (s.shortOpening) s.decision = kShortOpening - 1;
  }
  if (n == s.decision) return Choice{s.kept, true};
  const std::uint64_t left = s.decision - n;  // 1 for the cycle's last call
  // A short opening tries the other way once, and times it.
  const bool shortCycle = s.shortOpening && s.cycles == 0;
  const std::uint64_t tries = shortCycle ? 1 : 3;
  s.last = left <= tries ? s.tried : s.kept;
  s.counted = n != 0 && (shortCycle || left != 3);
  // A way's first call of the shape is a one-time cost, whichever call of the opening or of
  // a later cycle it falls on: the code that way runs, and the pages it touches, are
  // faulted in by it (base/pool_growth.h).
  if ((s.used & bit(s.last)) == 0) {
    s.used |= bit(s.last);
    markOneTimeCost();
  }
  return Choice{s.last, false, s.last != s.kept};
}

PathLearner::Times PathLearner::estimates(std::uint32_t shape) const {
  const auto it = shapes_.find(shape);
  Times t;
  for (std::size_t w = 0; w < kWays; ++w)
    t[w] = it == shapes_.end() ? -1 : it->second.samples[w].estimate();
  return t;
}

PathLearner::Way PathLearner::decide(std::uint32_t shape, const Times& sums, bool* changed) {
  Shape& s = shapes_[shape];
  const Way kept = s.kept, tried = s.tried;
  const std::int64_t keptNs = sums[static_cast<std::size_t>(kept)];
  const std::int64_t triedNs = sums[static_cast<std::size_t>(tried)];
  // A way without a time (its calls failed somewhere) is tried; the first decision takes
  // the faster, later ones change only for one 3% faster.
  Way best = kept;
  if (keptNs < 0)
    best = kept;
  else if (triedNs < 0)
    best = tried;
  else if (s.decided ? triedNs * 100 <= keptNs * 97 : triedNs < keptNs)
    best = tried;
  *changed = !s.decided || best != kept;
  s.decided = true;
  s.kept = best;
  const std::int64_t fast = std::max<std::int64_t>(1, best == kept ? keptNs : triedNs);
  const std::int64_t slow = best == kept ? triedNs : keptNs;
  const std::uint64_t period = slow * 4 <= fast * 5   ? kExplorePeriod
                               : slow * 2 <= fast * 3 ? kExploreFarPeriod
                                                      : kExploreFarthestPeriod;
  s.decision = s.calls - 1 + period;
  s.tried = otherWay(s, ++s.cycles);
  s.last = best;
  s.counted = false;  // the first call back from the other way
  return best;
}

void PathLearner::record(std::uint32_t shape, std::int64_t ns) {
  const auto it = shapes_.find(shape);
  if (it == shapes_.end() || !it->second.counted) return;
  Samples& w = it->second.samples[static_cast<std::size_t>(it->second.last)];
  w.ns[w.next] = ns;
  w.next = (w.next + 1) % kSamples;
  w.count = std::min(w.count + 1, kSamples);
}

PathLearner::Way PathLearner::kept(std::uint32_t shape) const {
  const auto it = shapes_.find(shape);
  return it == shapes_.end() ? Way::kDirect : it->second.kept;
}

}  // namespace tutti::detail
