#pragma once
// Growth of the pools that fill up to what a pattern of calls needs (issue 4: nothing
// allocated, mapped or faulted in on the path of a call, once warm).
//
// Some one-time costs fall on whichever call happens to need them first, and timing
// decides which: buffers for messages that arrive before their receives (how many arrive
// early varies from run to run), mappings of peers' memAlloc buffers (made by the side
// that first touches them, sender or receiver as the race goes). Each pool grows to the
// most it ever needed and stays there. The same goes for the first call of a shape to take
// a way the path learner tries (core/path_learner.h): it faults in the code that way runs,
// on a call the learner's schedule picks. Every such growth or first call is marked here,
// process-wide, so that a test of the steady state can tell a window of calls in which
// none happened (and which must then allocate, map and fault nothing) from one in which
// one did.

#include <atomic>
#include <cstdint>

namespace tutti {

namespace detail {
inline std::atomic<std::uint64_t> gPoolGrowths{0};
inline std::atomic<std::uint64_t> gPoolGrowing{0};
}  // namespace detail

/// Growths finished so far in this process, and growths under way. A window of time
/// saw none if, read after it, `done` equals its value read before and `underWay` is 0
/// (a growth begun before the window and still running shows as under way).
struct PoolGrowth {
  std::uint64_t done = 0;
  std::uint64_t underWay = 0;
};

inline PoolGrowth poolGrowth() {
  return PoolGrowth{detail::gPoolGrowths.load(), detail::gPoolGrowing.load()};
}

/// Marks a one-time cost that ends before the caller's call does (a first call of a way).
inline void markOneTimeCost() { detail::gPoolGrowths.fetch_add(1); }

/// Marks a one-time cost the first time this process takes a way that only timing leads
/// to (a probe's arrival, tag.h: a peer waited long); `taken` is that way's flag.
inline void markFirstTime(std::atomic<bool>& taken) {
  if (!taken.load(std::memory_order_relaxed) && !taken.exchange(true)) markOneTimeCost();
}

/// Marks one growth (its allocations, mappings and first touches), from construction to
/// destruction.
class GrowingPool {
 public:
  GrowingPool() { detail::gPoolGrowing.fetch_add(1); }
  ~GrowingPool() {
    detail::gPoolGrowths.fetch_add(1);
    detail::gPoolGrowing.fetch_sub(1);
  }
  GrowingPool(const GrowingPool&) = delete;
  GrowingPool& operator=(const GrowingPool&) = delete;
};

}  // namespace tutti
