#pragma once
// Which way a call's large messages travel, learnt per call shape from the calls' own times.
//
// A large message between two processes on one host either goes through the transport's
// buffers (its sender copies it in, its receiver copies it out, piece by piece, both at once)
// or directly (read or written in place by one end: the kernel's copy, or a mapping). Which
// is faster depends on the machine and the size, and on some virtual machines changes from
// minute to minute (docs/performance.md, "Which way large messages go"). No rule fixed at
// start-up is right for all of them, so each communicator times its calls and keeps the
// faster way for each shape.
//
// The ranks decide together. Every rank makes the same calls in the same order, so a shape's
// n-th call is the same call on every rank, and the learner's schedule depends on n alone:
// the calls that try a way are the same on every rank, and at each decision the ranks add up
// their estimates (one flat exchange of a few bytes, MessageWays::agree) and so keep the
// same way. A rank that decided alone would see the other ranks' choices in its times.
//
// The calls go in cycles: a decision, calls the way kept, then three calls another way.
// Where a call may go three ways (directly, through the buffers, or through the buffers
// written past the caches: Way), the cycles take turns over the ways not kept, and each
// decision compares the kept way with the one its cycle tried.
// The first call of a way after another is not timed (it runs on caches and buffers the
// other way left behind; a shape's very first call grows pools and faults pages in). A
// decision compares the two calls before the other way's with its last two: calls next to
// each other, because a machine's speed drifts (in one traced run on the AMD VM, a shape's
// first 200 calls took up to three times as long as later ones, either way), so that a
// way's older times are not comparable. Each way's estimate is the faster of its two, as
// noise (a preemption, a late peer) only adds time. The first cycle is kOpening calls,
// starting with the rule's way. Shapes of long calls open with kShortOpening calls instead:
// one timed call of each way, the other way's first timed too, as a call many times the
// caches leaves little behind for the next (the usual opening put two or three of the five
// timed calls of a short job's 2-rank all-reduce of 256 MiB on the slower way). Later
// cycles are kExplorePeriod calls where the other way took up to 1.25 times as long,
// kExploreFarPeriod up to 1.5 times, kExploreFarthestPeriod beyond: trying the other way
// costs at most 2.3% of the time (3 calls in 32 that take 1.25 times as long), and a change
// of the machine is followed within a cycle or two (a way or two more where
// there are three). The kept way changes only for one 3% faster. Not thread-safe: the
// communicator runs one operation at a time.

#include <array>
#include <cstddef>
#include <cstdint>
#include <unordered_map>

#include "tutti/types.h"

namespace tutti::detail {

class PathLearner {
 public:
  static constexpr std::uint32_t kSamples = 2;  // per way, the last ones
  static constexpr std::uint64_t kOpening = 8;
  /// The opening of a shape whose messages are long (kLongFrom bytes or more): the rule's
  /// way (untimed, then timed), the other way once (timed), then the decision.
  static constexpr std::uint64_t kShortOpening = 4;
  static constexpr std::uint64_t kLongFrom = std::uint64_t{16} << 20;
  static constexpr std::uint64_t kExplorePeriod = 32;
  static constexpr std::uint64_t kExploreFarPeriod = 64;
  static constexpr std::uint64_t kExploreFarthestPeriod = 256;

  /// How a call's large messages travel: read or written in place by one end; through the
  /// transport's buffers; or through them with the sender's copy written past its caches
  /// (streaming stores), which its reader then fetches from memory rather than from the
  /// sender's cache.
  enum class Way : std::uint8_t { kDirect = 0, kBuffered = 1, kStreamed = 2 };
  static constexpr std::size_t kWays = 3;
  static constexpr unsigned bit(Way w) { return 1u << static_cast<unsigned>(w); }

  /// Per way (indexed by Way), in ns, -1 for none.
  using Times = std::array<std::int64_t, kWays>;

  /// A call's shape: its collective, element type, its bytes (count times the element's
  /// size) by power of two, and the algorithm that runs it (`algorithm`, below 256: its
  /// place in the registry); what every rank's call has alike (not whether it is in place,
  /// which a rooted collective's root and other ranks may differ in). One algorithm's times
  /// say nothing of another's ways: calls of one shape that take turns between algorithms
  /// (a benchmark comparing them) would otherwise mix their times in one decision.
  static std::uint32_t shapeOf(Collective kind, DataType dtype, std::uint64_t bytes,
                               std::uint32_t algorithm = 0);

  /// Below 4 MiB a message that is only moved does not stream (waysFor).
  static constexpr std::uint64_t kMovesStreamedFrom = std::uint64_t{4} << 20;
  /// The ways (bits of Way) a call of `kind` whose largest message is `message` bytes may
  /// learn among: none, or two at least. `buffersRule` is whether its rule sends it through
  /// the buffers; `directFrom` and `streamedFrom` are the transport's sizes (0: never).
  /// - Directly or through the buffers: the collectives that only move data (all-gather,
  ///   all-to-all, broadcast, gather, scatter), from directFrom. A reduction keeps its
  ///   rule there: its two ways differ by more than a copy does (who reduces, from where);
  ///   tried against the rule, learning took 1.02-1.10 of its time (all-reduce 2 ranks 64
  ///   MiB, 4 ranks 16 MiB, 44 to 65 calls), paying for the tries and winning nothing.
  /// - Through the buffers, cached or streamed: the reductions that go through the buffers
  ///   (all-reduce, reduce-scatter, reduce) from streamedFrom, and the collectives that
  ///   only move data from streamedFrom or kMovesStreamedFrom, the larger. Where the two
  ///   vCPUs of the AMD EPYC VM sit on cores far apart, a message through the rings takes
  ///   2-3 times as long as where they share a cache, and streaming its pieces undoes most
  ///   of that: a 2-rank reduce-scatter of 1 MiB took 60 us learning to stream against
  ///   128 through the rings, a 4 MiB all-reduce 473-516 against 919-1078, in rounds
  ///   where near cores gave 40 and 455 either way (docs/performance.md). A message that
  ///   is only moved has the kernel's copy for those minutes already, which streaming did
  ///   not beat below 4 MiB (1 MiB all-gather and all-to-all: 63-70 us against 62-71), so
  ///   there a third way would only cost its tries.
  static unsigned waysFor(Collective kind, std::uint64_t message, bool buffersRule,
                          std::uint64_t directFrom, std::uint64_t streamedFrom);

  struct Choice {
    Way way = Way::kDirect;  // this call's way
    bool decides = false;    // a decision: the way comes from decide(), with every rank's estimates
    bool trying = false;     // the call tries a way other than the one kept
  };
  /// This call of `shape`. `rule` is what the call's shape alone says (prefersCopy); the
  /// learner opens with it. `ways` (bits of Way, two at least, the rule's among them) are
  /// the ways the call may take: the same for every call of the shape, as its first call
  /// gave them. `message`: the call's largest message in bytes, the same on every rank
  /// (from kLongFrom the opening is kShortOpening calls), as the first call gave it.
  Choice choose(std::uint32_t shape, Way rule, unsigned ways, std::uint64_t message = 0);
  /// This rank's estimates for `shape` (what a decision adds up).
  Times estimates(std::uint32_t shape) const;
  /// A decision from the sum of every rank's estimates (a way is -1 where any rank has no
  /// time for it): the same on every rank. Returns this call's way; sets *changed when the
  /// kept way is new (the first decision, and each change).
  Way decide(std::uint32_t shape, const Times& sums, bool* changed);
  /// The call chosen last for `shape` took `ns`. A call that failed is not recorded.
  void record(std::uint32_t shape, std::int64_t ns);

  /// The way `shape` keeps (the rule's before its first decision, kDirect for a shape never
  /// called).
  Way kept(std::uint32_t shape) const;

 private:
  struct Samples {
    std::array<std::int64_t, kSamples> ns{};
    std::uint32_t count = 0;  // samples kept, at most kSamples; the next goes at next
    std::uint32_t next = 0;
    std::int64_t estimate() const;
  };
  struct Shape {
    std::uint64_t calls = 0;     // chosen so far; the one in flight is calls - 1
    std::uint64_t decision = kOpening - 1;  // the call of the next decision
    std::uint64_t cycles = 0;    // decisions so far: which other way the cycle tries
    unsigned ways = 0;           // the ways allowed (bits of Way)
    unsigned used = 0;           // the ways called so far (bits of Way)
    Way rule = Way::kDirect;
    Way last = Way::kDirect;     // the way chosen for the call in flight
    Way tried = Way::kDirect;    // the other way this cycle tries
    bool counted = false;        // whether its time is kept
    bool shortOpening = false;   // the first cycle is kShortOpening calls
    bool decided = false;        // whether kept came from a decision (else: the rule's)
    Way kept = Way::kDirect;
    Samples samples[kWays];
  };
  // The way a cycle tries after `cycles` decisions: the allowed ways other than kept, in turn.
  static Way otherWay(const Shape& s, std::uint64_t cycles);
  std::unordered_map<std::uint32_t, Shape> shapes_;
};

}  // namespace tutti::detail
