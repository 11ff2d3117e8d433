#pragma once
// CallChecker: the calls this rank has begun, so that a message can be checked against the
// call it belongs to when it *arrives*, not only when a receive matches it (mismatch
// detection, DESIGN.md 7). Matching alone misses calls whose messages are never received:
// with different broadcast roots on two ranks, each root only sends, and the stray message
// would sit unread while both ranks report success.
//
// Two windows of kWindow sequence numbers:
// - history: the stamps of the last calls this rank began (written by the issuing thread);
// - early:   the first stamp that arrived for a call this rank has not begun yet (written by
//            whichever thread receives), checked when the rank begins that call.
// A message is checked on arrival when its call was begun, else when it is begun; both
// sides publish before they look at the other (sequentially consistent store, then load), so at least one of
// them sees the other's record. Messages of calls more than kWindow behind are not checked
// at arrival (they still are when matched).
//
// Lock-free; the arrival side never blocks the issuing thread.
//
// The handshake costs a full fence on each side (a locked instruction on x86, tens of ns
// when stores to the peers' shared lines are still pending). It is only needed when
// arrivals are checked on another thread than the one that begins calls (TCP's loop
// thread). A transport whose arrivals are only ever processed by the threads that run the
// calls (shm: by the caller, while it waits) says so, and the checker then uses plain
// release/acquire order: one thread at a time, handed over through the communicator's queue
// lock, sees everything in program order.

#include <array>
#include <atomic>
#include <cstdint>
#include <string>

#include "transport/link.h"
#include "transport/tag.h"
#include "tutti/status.h"

namespace tutti {

class CallChecker {
 public:
  /// Names a call from its stamp and full sequence number, as errors show it.
  using Describer = std::string (*)(const CallStamp& stamp, std::uint64_t seq);

  static constexpr std::size_t kWindow = 64;
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0} - 1;
  static constexpr std::uint64_t kBusy = ~std::uint64_t{0};

  CallChecker(int rank, Describer describe) : rank_(rank), describe_(describe) {}

  /// False when every onArrival() runs on a thread that is running this communicator's
  /// calls (never concurrently with begin()); the checker then skips the fences and the
  /// compare-and-swap. True (the default) is always correct. Set before the first call.
  void setConcurrentArrivals(bool concurrent) { concurrent_ = concurrent; }

  /// Called by the issuing thread before the first message of collective call `seq`.
  /// kMismatch stating both calls when a peer's message for `seq` arrived earlier with
  /// another stamp.
  Status begin(std::uint64_t seq, const CallStamp& stamp);

  /// Called by a transport when the first piece of a message from `peer` arrives, on any
  /// thread. kMismatch stating both calls when it conflicts with this rank's call (or with
  /// an earlier peer's message for the same call); OK when it agrees or cannot be checked
  /// yet. Point-to-point messages are always OK.
  Status onArrival(int peer, Tag tag, const CallStamp& stamp);

  /// Once this rank makes no more calls (its communicator's farewell, executor/farewell.h):
  /// kMismatch naming the call when a peer's message arrived for a call this rank never
  /// began (the peer made a call this rank did not); OK otherwise. Any thread.
  Status unbegunCall() const;
  /// Called once this rank makes no more calls (its communicator's farewell,
  /// executor/farewell.h): unbegunCall(), and from now on onArrival() fails a message (or a
  /// probe) of a call this rank never began at once, so that a peer still waiting in a call
  /// learns of the mismatch without waiting for its deadline. Issuing thread.
  Status close();

 private:
  struct Entry {
    // The full sequence number; kEmpty before the first write, kBusy while being written.
    std::atomic<std::uint64_t> seq{kEmpty};
    std::atomic<std::uint64_t> what{0};
    std::atomic<std::uint64_t> count{0};
    // A stamp before its call's algorithm is chosen (a flat exchange's) has open bits, and
    // both windows may hold one: it must agree with the same call's chosen stamp.
    std::atomic<std::uint64_t> open{0};
    std::atomic<std::int64_t> peer{-1};  // early entries: who sent it
  };

  // Reads `e` if it holds sequence `seq`; false when it holds another or is being written.
  static bool read(const Entry& e, std::uint64_t seq, CallStamp* stamp, int* peer);
  // Writes the early entry `e` for `seq`; false, writing nothing, when another thread is
  // writing it.
  bool writeEarly(Entry& e, std::uint64_t seq, const CallStamp& stamp, int from) const;
  Status conflict(int peer, std::uint64_t seq, const CallStamp& theirs, int otherRank,
                  const CallStamp& other) const;
  // Checks an arrival for `seq` against the history; OK when the call is not in it.
  Status checkHistory(int peer, std::uint64_t seq, const CallStamp& stamp) const;
  // kMismatch: `peer` sent a message of call `seq`, which this rank never began.
  Status neverCalled(int peer, std::uint64_t seq, const CallStamp& stamp) const;
  // The full sequence number of a 24-bit tag sequence, given the latest begun call.
  std::uint64_t widen(std::uint64_t seq24, std::uint64_t latest) const;

  const int rank_;
  const Describer describe_;
  bool concurrent_ = true;
  /// 1 + the sequence number of the latest call begun (0: none yet).
  std::atomic<std::uint64_t> begun_{0};
  std::atomic<bool> closed_{false};  // close() ran: no call will begin any more
  std::array<Entry, kWindow> history_;
  std::array<Entry, kWindow> early_;
};

}  // namespace tutti
