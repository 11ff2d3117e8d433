#include "core/path_learner.h"

#include <algorithm>
#include <bit>

namespace tutti::detail {

std::uint32_t PathLearner::shapeOf(Collective kind, DataType dtype, std::uint64_t bytes) {
  const auto log2 = static_cast<std::uint32_t>(std::bit_width(bytes));  // 0..64
  return (static_cast<std::uint32_t>(kind) << 16) | (static_cast<std::uint32_t>(dtype) << 8) |
         log2;
}

std::int64_t PathLearner::Way::estimate() const {
  if (count == 0) return -1;
  std::int64_t best = ns[0];
  for (std::uint32_t i = 1; i < count; ++i) best = std::min(best, ns[i]);
  return best;
}

PathLearner::Choice PathLearner::choose(std::uint32_t shape, bool rule) {
  Shape& s = shapes_[shape];
  const std::uint64_t n = s.calls++;
  if (n == s.decision) return Choice{false, true};
  // Before the first decision the rule's way is the one kept, so that a shape called a few
  // times goes the way it went before there was a learner.
  const bool kept = s.kept >= 0 ? s.kept == 1 : rule;
  const std::uint64_t left = s.decision - n;  // 1 for the cycle's last call
  s.last = kept != (left <= 3);
  s.counted = left != 3 && n != 0;
  return Choice{s.last, false};
}

PathLearner::Times PathLearner::estimates(std::uint32_t shape) const {
  const auto it = shapes_.find(shape);
  if (it == shapes_.end()) return Times{-1, -1};
  return Times{it->second.ways[0].estimate(), it->second.ways[1].estimate()};
}

bool PathLearner::decide(std::uint32_t shape, const Times& sums, bool* changed) {
  Shape& s = shapes_[shape];
  const std::int64_t direct = sums[0], buffered = sums[1];
  // A way without a time (its calls failed somewhere) is tried.
  bool best = direct < 0 ? false : buffered < 0 ? true : buffered < direct;
  if (s.kept >= 0 && direct >= 0 && buffered >= 0) {
    const std::int64_t kept = s.kept == 1 ? buffered : direct;
    const std::int64_t other = s.kept == 1 ? direct : buffered;
    if (other * 100 > kept * 97) best = s.kept == 1;  // not 3% faster: keep
  }
  *changed = s.kept != (best ? 1 : 0);
  s.kept = best ? 1 : 0;
  const std::int64_t fast = std::max<std::int64_t>(1, best ? buffered : direct);
  const std::int64_t slow = best ? direct : buffered;
  const std::uint64_t period = slow * 4 <= fast * 5   ? kExplorePeriod
                               : slow * 2 <= fast * 3 ? kExploreFarPeriod
                                                      : kExploreFarthestPeriod;
  s.decision = s.calls - 1 + period;
  s.last = best;
  s.counted = false;  // the first call back from the other way
  return best;
}

void PathLearner::record(std::uint32_t shape, std::int64_t ns) {
  const auto it = shapes_.find(shape);
  if (it == shapes_.end() || !it->second.counted) return;
  Way& w = it->second.ways[it->second.last ? 1 : 0];
  w.ns[w.next] = ns;
  w.next = (w.next + 1) % kSamples;
  w.count = std::min(w.count + 1, kSamples);
}

bool PathLearner::keepsBuffered(std::uint32_t shape) const {
  const auto it = shapes_.find(shape);
  return it != shapes_.end() && it->second.kept == 1;
}

}  // namespace tutti::detail
