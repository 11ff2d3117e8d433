#pragma once
// The tuner (DESIGN.md 4, Choosing an algorithm): for a call shape, every applicable
// algorithm, and each segment size where the algorithm's schedule depends on it, priced by
// the simulator (simulate.h) over the machine's model, fastest first; the fastest runs. The
// decision is kept per shape, so a repeated call pays for it once.
//
// Every rank must choose alike or the ranks would not meet: the model's parameters are
// agreed at the communicator's creation, and the ranking is a pure function of them and of
// the shape (no timing; ties go to the registry's order, then to the smaller segment).
// Collectives whose arrays are each rank's own (alltoallv) cannot be priced alike on every
// rank from one rank's arguments; they, and a world of one rank, keep the old table's
// choice (defaults.cc).

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "algorithms/algorithm.h"
#include "tuning/model.h"
#include "tuning/network.h"
#include "tuning/placement.h"
#include "tuning/simulate.h"

namespace tutti::tuning {

class TunerPlugin;

/// How the ranks of one host reach each other (TUTTI_TRANSPORT): shared memory, TCP
/// (loopback on one host), or shared memory on a host and TCP between hosts.
enum class TransportKind : std::uint8_t { kShm, kTcp, kHybrid };
const char* transportKindName(TransportKind kind);

/// One way to run a call: an algorithm with a segment, and its predicted time.
struct Candidate {
  const AlgorithmInfo* algorithm = nullptr;
  /// The pipelining segment in bytes (spec.segmentCount x the element size). Where the
  /// algorithm's schedule does not depend on it, the communicator's default, and
  /// segmentMatters is false.
  std::uint64_t segmentBytes = 0;
  bool segmentMatters = false;
  /// Carried by the transport's flat exchange rather than by messages (priced as such).
  bool flat = false;
  double seconds = 0;
};

/// What the tuner decided for a shape: the candidate chosen and the ranking behind it.
struct Decision {
  Candidate chosen;
  /// Every candidate, fastest first (the built-in order, whoever chose).
  std::vector<Candidate> ranking;
  /// Who chose: "model", "table" (shapes the model does not price), or "plugin NAME".
  std::string by = "model";
};

struct TunerSetup {
  MachineModel model;
  Placement placement;
  Network network;
  SimOptions sim;
  TransportKind transport = TransportKind::kShm;
  /// The communicator's segment (TUTTI_SEGMENT_BYTES or its one-host share), in bytes.
  std::uint64_t defaultSegmentBytes = 512 << 10;
  /// TUTTI_SEGMENT_BYTES was set: the tuner does not choose segments.
  bool fixedSegment = false;
  /// The segments tried where they matter, in bytes, ascending.
  std::vector<std::uint64_t> segmentCandidates = {64 << 10, 128 << 10, 256 << 10, 512 << 10,
                                                  1 << 20};
  /// Bytes one rank may contribute to the transport's flat exchange (0: none); the
  /// simulator prices a call that fits it as the flat exchange (SimOptions::flatRoom).
  std::size_t flatRoom = 0;
  /// A forced choice predicted this many times slower than the best is logged (INFO).
  double slowForcedRatio = 1.5;
  /// The contenders of a choice (Tuner::contenders): the best candidate of each other
  /// algorithm predicted within this many times the chosen one's time, at most
  /// maxContenders in all, the choice among them.
  double contenderRatio = 1.5;
  std::size_t maxContenders = 3;
};

/// The model as the ranks of `setup` see it: on one host over TCP, the host's paths cost
/// what the network's do (loopback TCP rather than shared memory); over TCP, a waiting rank
/// sleeps rather than yields (yieldCost is switchCost).
MachineModel effectiveModel(const TunerSetup& setup);

/// Every candidate for `spec` (its rank and in-place flag are ignored: every rank is priced,
/// out of place, since ranks may differ in both and must still choose alike), fastest first,
/// ties by registry order and then the smaller segment. kNotSupported where the shape is
/// not priced by the model (rankable() false), or none applies.
Result<std::vector<Candidate>> rankCandidates(const CollectiveSpec& spec, const TunerSetup& setup);

/// Whether the model prices `spec` alike on every rank (not alltoallv, send/recv, one rank).
bool rankable(const CollectiveSpec& spec);

/// The contenders of `decision` (Tuner::contenders): its choice, then the best candidate of
/// each other algorithm within setup.contenderRatio of its time, at most maxContenders;
/// the choice alone where a plugin or the table chose, and for a collective with a root
/// (whose ranks' times in a loop of calls do not measure its pace).
std::vector<Candidate> contendersOf(const Decision& decision, const TunerSetup& setup);

/// "ring/256K 1.23 ms" for logs and tutti-info explain.
std::string describe(const Candidate& candidate);

/// What runs: an algorithm and its segment in bytes.
struct Choice {
  const AlgorithmInfo* algorithm = nullptr;
  std::uint64_t segmentBytes = 0;
  /// The model's prediction of a call's time (0 where it has none).
  double seconds = 0;
};

/// The tuner of one communicator. Its cache is shared by the thread running calls and the
/// threads asking questions (Communicator::algorithmFor), so it is locked; only a call of a
/// new shape reaches it (the planner remembers the last call's plan).
class Tuner {
 public:
  explicit Tuner(TunerSetup setup);
  ~Tuner();

  /// The choice for `spec`'s shape, from the cache or decided now (then logged at INFO
  /// under TUNE: chosen, its prediction, the runner-up's). Shapes the model does not price
  /// get the table's algorithm. algorithm null, with *error set, where none applies.
  Choice choose(const CollectiveSpec& spec, Status* error);

  /// The whole decision for `spec`, made now without the cache or a log line
  /// (tutti-info explain, tests).
  Result<Decision> explain(const CollectiveSpec& spec) const;

  /// For a choice forced on `spec`: logs once per shape at INFO when `forced` is predicted
  /// more than slowForcedRatio times slower than the best, with both predictions; and
  /// returns the segment (bytes) the forced algorithm runs best with, or the default.
  std::uint64_t checkForced(const CollectiveSpec& spec, const AlgorithmInfo& forced);

  /// What a communicator whose ranks can agree on measured times tries for `spec`'s shape
  /// (core/algorithm_learner.h): the model's choice first, then the best candidate of each
  /// other algorithm predicted within contenderRatio of it, fastest first, at most
  /// maxContenders. One entry (the choice) where none is close, where a plugin or the table
  /// chose, or where the shape is not priced; none where nothing applies. From the cache,
  /// as choose() decides.
  std::vector<Choice> contenders(const CollectiveSpec& spec);

  /// Installs a plugin that chooses among the ranked candidates (plugin.h).
  void setPlugin(std::shared_ptr<TunerPlugin> plugin) { plugin_ = std::move(plugin); }

  const TunerSetup& setup() const { return setup_; }

 private:
  // A shape: the call, whether its buffers are shared, the v-collectives' (shared) counts
  // and, for the forced check, the algorithm forced. Looked up through a View, so that a
  // call with counts finds its entry without copying them.
  struct Key {
    CallKey call;
    bool sharedBuffers = false;
    std::vector<std::uint64_t> counts;
    const AlgorithmInfo* forced = nullptr;
  };
  struct View {
    CallKey call;  // in place cleared: it may differ between ranks (rankCandidates)
    bool sharedBuffers;
    std::span<const std::uint64_t> counts;
    const AlgorithmInfo* forced;
  };
  struct KeyLess {
    using is_transparent = void;
    static View view(const Key& k) { return {k.call, k.sharedBuffers, k.counts, k.forced}; }
    static bool less(const View& a, const View& b);
    bool operator()(const Key& a, const Key& b) const { return less(view(a), view(b)); }
    bool operator()(const Key& a, const View& b) const { return less(view(a), b); }
    bool operator()(const View& a, const Key& b) const { return less(a, view(b)); }
  };
  static View viewOf(const CollectiveSpec& spec, const AlgorithmInfo* forced) {
    View v{spec, spec.sharedBuffers, spec.counts, forced};
    v.call.inPlace = false;
    return v;
  }
  static Key keyOf(const View& v) {
    return {v.call, v.sharedBuffers, {v.counts.begin(), v.counts.end()}, v.forced};
  }

  // explain(), and the forced check's view of the ranking: the decision of a new shape.
  Result<Decision> decideNow(const CollectiveSpec& spec, bool log) const;

  const TunerSetup setup_;
  std::shared_ptr<TunerPlugin> plugin_;
  std::mutex mutex_;
  // A shape's decision: the choice, and its contenders (contenders()).
  struct Entry {
    Choice choice;
    std::vector<Choice> contenders;
  };
  const Entry* entryFor(const CollectiveSpec& spec, Status* error);
  std::map<Key, Entry, KeyLess> choices_;
  // Shapes whose forced algorithm was already checked (logged at most once each): the
  // forced algorithm's segment.
  std::map<Key, std::uint64_t, KeyLess> forced_;
};

}  // namespace tutti::tuning
