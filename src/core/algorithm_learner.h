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
// The schedule of a shape with k contenders: an opening of kTries calls per contender in
// the model's order (the first of each untimed: it builds the plan and faults in what the
// contender touches), then a decision, which runs the fastest. Then cycles: the kept
// contender, and its cycle's last kTries calls another contender in turn (the first
// untimed); the next decision compares the two timed calls of the kept contender before
// them with the tried one's (only those calls are timed). Each estimate is the faster of two
// (noise only adds time). The
// first cycle lasts kExplorePeriod calls (a contender's first calls of a shape may still
// map buffers or fault in pages after its untimed one, so the opening's verdict is checked
// soon); later ones kExplorePeriod calls where the slower of the two took up to 1.25 times
// as long, kExploreFarPeriod up to 1.5, kExploreFarthestPeriod beyond: trying costs at most
// 1.2% of the calls' time (2 calls in 64 that take 1.25 times as long, one untimed that
// may). The kept contender changes only for one 3% faster. Not thread-safe: the
// communicator runs one operation at a time.

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
  /// Calls per try of a contender: the first untimed.
  static constexpr std::uint64_t kTries = 3;
  static constexpr std::uint64_t kExplorePeriod = 64;
  static constexpr std::uint64_t kExploreFarPeriod = 128;
  static constexpr std::uint64_t kExploreFarthestPeriod = 512;

  /// Per contender (indexed as given), in ns, -1 for none.
  using Times = std::array<std::int64_t, kMaxContenders>;

  /// One shape's contenders and schedule. `names` are what the planner runs for each
  /// (NAME@SEGMENT, as a forced choice), the model's choice first.
  class Shape {
   public:
    explicit Shape(std::vector<std::string> names);
    const std::vector<std::string>& names() const { return names_; }
    /// Any thread may read these two (Communicator::algorithmFor).
    std::size_t kept() const { return kept_.load(std::memory_order_relaxed); }
    bool decided() const { return decided_.load(std::memory_order_relaxed); }

   private:
    friend class AlgorithmLearner;
    struct Samples {
      std::array<std::int64_t, 2> ns{};
      std::uint32_t count = 0;
      std::uint32_t next = 0;
      std::int64_t estimate() const;
    };
    std::vector<std::string> names_;
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
  /// The call chosen last for `shape` took `ns` (a call that failed is not recorded).
  static void record(Shape& shape, std::int64_t ns);
};

}  // namespace tutti::detail
