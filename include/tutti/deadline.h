#pragma once
/// \file
/// Deadline: an absolute point on the steady clock by which a blocking call must return.
// Every blocking API in tutti takes one (STYLE.md 3.5, "deadlines everywhere").

#include <algorithm>
#include <chrono>
#include <climits>
#include <ctime>

namespace tutti {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  /// A deadline `d` from now. Negative durations are already expired.
  template <typename Rep, typename Period>
  static Deadline after(std::chrono::duration<Rep, Period> d) {
    return Deadline(Clock::now() + std::chrono::duration_cast<Clock::duration>(d));
  }
  static Deadline afterSeconds(double seconds) {
    if (seconds <= 0) return Deadline(Clock::now());
    if (seconds > 1e9) return never();
    return after(std::chrono::duration<double>(seconds));
  }
  /// The deadline at time point `at` of Clock (for a caller that has read the clock
  /// already, or a cheaper clock on the same time base).
  static Deadline at(Clock::time_point at) { return Deadline(at); }
  /// No deadline; only for waits that are bounded by other means (documented at the call).
  static Deadline never() { return Deadline(Clock::time_point::max()); }

  bool isNever() const { return at_ == Clock::time_point::max(); }
  bool expired() const { return !isNever() && Clock::now() >= at_; }
  Clock::time_point at() const { return at_; }

  Clock::duration remaining() const {
    if (isNever()) return Clock::duration::max();
    return std::max(at_ - Clock::now(), Clock::duration::zero());
  }

  /// Milliseconds for poll()/epoll_wait(): -1 for never, rounded up, capped at INT_MAX.
  int pollTimeoutMs() const {
    if (isNever()) return -1;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(remaining()).count();
    return static_cast<int>(std::min<long long>(ms, INT_MAX));
  }

  /// The earlier of two deadlines.
  static Deadline earliest(Deadline a, Deadline b) { return a.at_ <= b.at_ ? a : b; }

  double remainingSeconds() const {
    return std::chrono::duration<double>(remaining()).count();
  }

 private:
  explicit Deadline(Clock::time_point at) : at_(at) {}
  Clock::time_point at_;
};

}  // namespace tutti
