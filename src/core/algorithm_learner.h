#pragma once
// Which of the model's close contenders a call shape runs, learnt from the calls' own times.
//
// The tuner ranks every algorithm by the machine model's prediction (tuning/tuner.h). Where
// the best few are predicted close, what separates them is what the model leaves out (how
// a pipelined segment stays in cache, how a sleeping rank wakes on a shared core), and the
// model's order is then right about as often as not: on the 2-vCPU VM, in one launch per
// cell, the model's pick was within 10% of the best forced algorithm in 12 of 24 one-host
// all-reduce cells, while the best was among its three closest contenders in all but one
// (docs/performance.md, Regret). So where the tuner finds contenders predicted within
// TunerSetup::contenderRatio of its choice, the communicator tries each for a few calls,
// keeps the fastest, and later tries the others now and then, as the path learner does for
// the way of large messages (path_learner.h, whose scheme this follows).
//
// The ranks decide together: every rank makes the same calls in the same order, so a
// shape's n-th call is the same call everywhere, and the schedule below depends on n alone;
// at a decision the ranks add up their estimates (one exchange of a few bytes: through the
// transport's flat exchange where the ranks share a host, else an all-gather of them on the
// call's own tags, CallRunner::agree) and so keep the same contender.
//
// The schedule of a shape with k contenders: an opening of a warm-up (a try's calls of the
// model's choice, none timed) and a try per contender in the model's order, then a
// decision, which runs the fastest. The warm-up takes the shape's first calls, which touch
// its buffers for the first time: in the regret grid's launches a try that came first
// measured up to 1.8 times its contender's steady time at 4 and 64 MiB, and the opening then
// kept a slower one (at 64 KiB on 4 ranks over tcp, the first try's reduce_bcast measured
// 250 us against its steady 176, and rabenseifner, 253, was kept until the first cycle's
// check). A try is U + T calls: U untimed
// (the first builds the plan and faults in what the contender touches; the next let the
// ranks settle into its rhythm), then T timed. Then cycles: the kept contender, and its
// cycle's last U + T calls try another contender in turn; the next decision compares the
// kept contender's T calls before the try with the tried one's T (only those calls are
// timed).
//
// T is set by the model's prediction of a call's time: as many calls as take about
// kTryBudgetNs, between kMinTimed and kMaxTimed; U is 1 + T / 8. One call says little where
// calls are short: on a host with more ranks than cores a call of 50 us takes anything
// from 30 to 170 us, as the ranks happen to be scheduled. Each estimate is a rank's mean
// over its T calls, each clipped at kClip times their median first: a rank descheduled for
// milliseconds counts as a slow call, not as a hundred. The mean, not the fastest call: in
// a loop a rank is always inside a call, so its calls' mean is the loop's period, while the
// fastest call favours an algorithm whose ranks take turns at waiting (the faster of two
// calls, as this learner first kept, switched between two contenders of 8-byte all-reduce
// on 2x2 pretend hosts six times in one launch; the mean of 32 keeps one). A call whose
// messages tried a way their own learner does not keep (path_learner.h: in the first calls
// of each algorithm, and now and then) is left out: its time says little of the algorithm's.
//
// The first cycle lasts kExplorePeriod tries (a contender's first calls of a shape may
// still map buffers or fault in pages after its untimed one, so the opening's verdict is
// checked soon); later ones kExplorePeriod tries where the slower of the two took up to
// 1.25 times as long, kExploreFarPeriod up to 1.5, kExploreFarthestPeriod beyond: trying
// costs at most 1.2% of the calls' time (a try in 21 that takes 1.25 times as long, its
// untimed call that may). The kept contender changes only for one 3% faster. Not
// thread-safe: the communicator runs one operation at a time.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tutti::detail {

class AlgorithmLearner {
 public:
  /// At most this many contenders per shape (the tuner's, model's order).
  static constexpr std::size_t kMaxContenders = 4;
  /// Timed calls per try: as many as take kTryBudgetNs by the model, within these bounds.
  static constexpr std::uint32_t kMinTimed = 2;
  static constexpr std::uint32_t kMaxTimed = 32;
  static constexpr double kTryBudgetNs = 8e6;
  /// A timed call counts for at most this many times the median of its try.
  static constexpr std::int64_t kClip = 3;
  /// Cycles, in tries (of kMinTimed + 1 calls: 63, 129 and 513 calls).
  static constexpr std::uint64_t kExplorePeriod = 21;
  static constexpr std::uint64_t kExploreFarPeriod = 43;
  static constexpr std::uint64_t kExploreFarthestPeriod = 171;

  /// The timed calls of a try where the model predicts a call of `predictedNs`.
  static std::uint32_t timedCallsFor(double predictedNs);

  /// Per contender (indexed as given), in ns, -1 for none.
  using Times = std::array<std::int64_t, kMaxContenders>;

  /// One shape's contenders and schedule. `names` are what the planner runs for each
  /// (NAME@SEGMENT, as a forced choice), the model's choice first.
  class Shape {
   public:
    /// `timed`: the timed calls of each try (timedCallsFor).
    explicit Shape(std::vector<std::string> names, std::uint32_t timed = kMinTimed);
    const std::vector<std::string>& names() const { return names_; }
    /// The calls of a try: its untimed ones, then its timed ones.
    std::uint64_t tryCalls() const { return untimed_ + timed_; }
    /// The opening's calls: the warm-up and a try of each contender.
    std::uint64_t openingCalls() const { return warmup_ + tryCalls() * names_.size(); }
    std::uint32_t timedCalls() const { return timed_; }
    /// Any thread may read these two (Communicator::algorithmFor).
    std::size_t kept() const { return kept_.load(std::memory_order_relaxed); }
    bool decided() const { return decided_.load(std::memory_order_relaxed); }

   private:
    friend class AlgorithmLearner;
    struct Samples {
      std::array<std::int64_t, kMaxTimed> ns{};
      std::uint32_t count = 0;
      std::int64_t estimate() const;
    };
    std::vector<std::string> names_;
    std::uint32_t timed_ = kMinTimed;
    std::uint32_t untimed_ = 1;
    std::uint64_t warmup_ = 0;    // the opening's first calls, none timed
    std::uint64_t calls_ = 0;     // chosen so far; the one in flight is calls_ - 1
    std::uint64_t decision_ = 0;  // the call of the next decision
    std::uint64_t cycles_ = 0;    // decisions so far: which contender a cycle tries
    std::atomic<std::size_t> kept_{0};
    std::size_t tried_ = 0;
    std::size_t last_ = 0;        // the contender of the call in flight
    bool counted_ = false;        // whether its time is kept
    std::atomic<bool> decided_{false};
    unsigned used_ = 0;           // contenders called so far (bits)
    std::array<Samples, kMaxContenders> samples_{};
  };

  struct Pick {
    std::size_t contender = 0;  // this call's, an index into Shape::names()
    bool decides = false;       // a decision: the contender comes from decide()
    /// Whether record() keeps this call's time: the caller need not time the others (a
    /// call of 8 bytes takes a few hundred ns, of which reading a clock twice is a tenth).
    bool timed = false;
  };
  /// This call of `shape`. Where a decision was due and decide() was not called, every
  /// later call is a decision until it is.
  static Pick choose(Shape& shape);
  /// This rank's estimates for `shape` (what a decision adds up).
  static Times estimates(const Shape& shape);
  /// A decision from the sum of every rank's estimates (-1 where any rank has none): the
  /// same on every rank. Returns this call's contender; sets *changed where the kept one is
  /// new (the first decision, and each change).
  static std::size_t decide(Shape& shape, const Times& sums, bool* changed);
  /// The call chosen last for `shape` took `ns` (a call that failed, or whose messages
  /// tried a way not kept, is not recorded).
  static void record(Shape& shape, std::int64_t ns);
};

}  // namespace tutti::detail
