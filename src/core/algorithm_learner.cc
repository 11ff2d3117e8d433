#include "core/algorithm_learner.h"

#include <algorithm>
#include <cmath>

#include "base/pool_growth.h"

namespace tutti::detail {

std::uint32_t AlgorithmLearner::timedCallsFor(double predictedNs) {
  if (!(predictedNs > 0)) return kMinTimed;
  const double calls = std::round(kTryBudgetNs / predictedNs);
  if (calls >= kMaxTimed) return kMaxTimed;
  return std::max(kMinTimed, static_cast<std::uint32_t>(calls));
}

AlgorithmLearner::Shape::Shape(std::vector<std::string> names, std::uint32_t timed)
    : names_(std::move(names)),
      timed_(std::clamp(timed, kMinTimed, kMaxTimed)),
      untimed_(1 + timed_ / 8) {
  if (names_.size() > kMaxContenders) names_.resize(kMaxContenders);
  // The opening: the warm-up, a try of each contender, then the decision.
  warmup_ = names_.size() > 1 ? tryCalls() : 0;
  decision_ = openingCalls();
  tried_ = names_.size() > 1 ? 1 : 0;
}

std::int64_t AlgorithmLearner::Shape::Samples::estimate() const {
  if (count == 0) return -1;
  // The mean, each call clipped at kClip times the median (of an even count, the middle
  // two's mean).
  std::array<std::int64_t, kMaxTimed> sorted{};
  std::copy(ns.begin(), ns.begin() + count, sorted.begin());
  std::sort(sorted.begin(), sorted.begin() + count);
  const std::int64_t median = (sorted[(count - 1) / 2] + sorted[count / 2]) / 2;
  std::int64_t sum = 0;
  for (std::uint32_t i = 0; i < count; ++i) sum += std::min(sorted[i], kClip * median);
  return sum / count;
}

AlgorithmLearner::Pick AlgorithmLearner::choose(Shape& s) {
  const std::uint64_t n = s.calls_++;
  // A decision the caller could not make (a failed communicator does not agree) is asked
  // for again by the next call.
  if (n >= s.decision_) return Pick{s.kept(), true};
  const std::uint64_t tries = s.tryCalls();
  bool opens = false;
  if (!s.decided_ && n < s.warmup_) {
    // The warm-up: the model's choice, untimed.
    s.last_ = 0;
    s.counted_ = false;
  } else if (!s.decided_) {
    // The tries: contender m / tries, its first untimed_ calls untimed.
    const std::uint64_t m = n - s.warmup_;
    s.last_ = static_cast<std::size_t>(m / tries);
    s.counted_ = m % tries >= s.untimed_;
    opens = m % tries == s.untimed_;
  } else {
    const std::uint64_t left = s.decision_ - n;  // 1 for the cycle's last call
    const bool trying = left <= tries;
    s.last_ = trying ? s.tried_ : s.kept();
    // The try's timed calls (its last), and the kept contender's as many before the try:
    // what the next decision compares.
    s.counted_ = left <= (trying ? s.timed_ : tries + s.timed_);
    opens = left == (trying ? s.timed_ : tries + s.timed_);
  }
  // A try's first timed call (and the kept contender's before a try) starts its
  // contender's estimate afresh.
  if (opens) s.samples_[s.last_].count = 0;
  // A contender's first call of the shape builds its plan and faults in what it touches
  // (base/pool_growth.h).
  const unsigned bit = 1u << s.last_;
  if ((s.used_ & bit) == 0) {
    s.used_ |= bit;
    markOneTimeCost();
  }
  return Pick{s.last_, false, s.counted_};
}

AlgorithmLearner::Times AlgorithmLearner::estimates(const Shape& s) {
  Times t;
  t.fill(-1);
  for (std::size_t c = 0; c < s.names_.size(); ++c) t[c] = s.samples_[c].estimate();
  return t;
}

std::size_t AlgorithmLearner::decide(Shape& s, const Times& sums, bool* changed) {
  const std::size_t k = s.names_.size();
  std::size_t best = s.kept_;
  if (!s.decided_) {
    // The opening: the fastest timed contender, ties to the model's order.
    std::int64_t bestNs = -1;
    for (std::size_t c = 0; c < k; ++c) {
      if (sums[c] >= 0 && (bestNs < 0 || sums[c] < bestNs)) {
        best = c;
        bestNs = sums[c];
      }
    }
  } else {
    const std::int64_t keptNs = sums[s.kept_];
    const std::int64_t triedNs = sums[s.tried_];
    // A contender without a time (every timed call of its try left out) is not kept, and
    // one kept without a time stays: nothing was measured against it.
    if (keptNs >= 0 && triedNs >= 0 && triedNs * 100 <= keptNs * 97) best = s.tried_;
  }
  // How long until the next try: by how much slower the slower of the two compared was
  // (the opening: the runner-up).
  std::int64_t fast = sums[best], slow = -1;
  if (!s.decided_) {
    for (std::size_t c = 0; c < k; ++c)
      if (c != best && sums[c] >= 0 && (slow < 0 || sums[c] < slow)) slow = sums[c];
  } else {
    slow = sums[best == s.kept() ? s.tried_ : s.kept()];
  }
  fast = std::max<std::int64_t>(1, fast);
  // The opening's verdict is checked a cycle later whatever it found: a contender's first
  // calls of a shape may still fault in pages or map buffers after its untimed one.
  const std::uint64_t period = s.tryCalls() *
                               (!s.decided_ || slow < 0 || slow * 4 <= fast * 5 ? kExplorePeriod
                                : slow * 2 <= fast * 3                           ? kExploreFarPeriod
                                                                      : kExploreFarthestPeriod);
  *changed = !s.decided_ || best != s.kept_;
  s.decided_ = true;
  s.kept_ = best;
  s.decision_ = s.calls_ - 1 + period;
  ++s.cycles_;
  // The next cycle tries the contenders other than the kept one in turn.
  if (k > 1) {
    const std::size_t other = static_cast<std::size_t>((s.cycles_ - 1) % (k - 1));
    s.tried_ = other < best ? other : other + 1;
  }
  s.last_ = best;
  s.counted_ = false;  // the first call back from the others
  return best;
}

void AlgorithmLearner::record(Shape& s, std::int64_t ns) {
  if (!s.counted_) return;
  Shape::Samples& w = s.samples_[s.last_];
  if (w.count < w.ns.size()) w.ns[w.count++] = ns;
}

}  // namespace tutti::detail
