#include "core/call_planner.h"

#include <algorithm>
#include <span>
#include <tuple>

#include "base/macros.h"
#include "base/pool_growth.h"
#include "base/strings.h"
#include "core/call_stamp.h"
#include "schedule/verifier.h"

namespace tutti::detail {
namespace {

// Bound on cached plans per communicator: 64 shapes of up to three contenders each (a shape
// learning among the tuner's contenders has a plan per contender). A workload with more
// distinct shapes simply rebuilds (building is cheap next to running); each build is marked
// as the cache's growth (base/pool_growth.h), as a learning shape may switch back to a
// contender whose plan was dropped meanwhile.
constexpr std::size_t kMaxCachedPlans = 192;
// Bound on shapes learning their contenders; past it they start over.
constexpr std::size_t kMaxLearntShapes = 256;

// A key's or a probe's fields in one form, so that both order alike.
struct ShapeView {
  const CallKey& call;
  const AlgorithmInfo* algorithm;
  std::uint64_t segmentCount;
  std::array<std::span<const std::uint64_t>, 4> arrays;
};

bool viewLess(const ShapeView& a, const ShapeView& b) {
  if (a.call != b.call) return a.call < b.call;
  if (a.algorithm != b.algorithm) return std::less<>()(a.algorithm, b.algorithm);
  if (a.segmentCount != b.segmentCount) return a.segmentCount < b.segmentCount;
  for (std::size_t i = 0; i < a.arrays.size(); ++i) {
    const auto& x = a.arrays[i];
    const auto& y = b.arrays[i];
    if (!std::equal(x.begin(), x.end(), y.begin(), y.end()))
      return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end());
  }
  return false;
}

}  // namespace

bool CallPlanner::PlanLess::operator()(const PlanKey& a, const PlanKey& b) const {
  return viewLess(
      {a.call, a.algorithm, a.segmentCount, {a.counts, a.displs, a.recvCounts, a.recvDispls}},
      {b.call, b.algorithm, b.segmentCount, {b.counts, b.displs, b.recvCounts, b.recvDispls}});
}
bool CallPlanner::PlanLess::operator()(const PlanKey& a, const PlanProbe& b) const {
  const CollectiveSpec& s = *b.spec;
  return viewLess(
      {a.call, a.algorithm, a.segmentCount, {a.counts, a.displs, a.recvCounts, a.recvDispls}},
      {s, b.algorithm, b.segmentCount, {s.counts, s.displs, s.recvCounts, s.recvDispls}});
}
bool CallPlanner::PlanLess::operator()(const PlanProbe& a, const PlanKey& b) const {
  const CollectiveSpec& s = *a.spec;
  return viewLess(
      {s, a.algorithm, a.segmentCount, {s.counts, s.displs, s.recvCounts, s.recvDispls}},
      {b.call, b.algorithm, b.segmentCount, {b.counts, b.displs, b.recvCounts, b.recvDispls}});
}

CallPlanner::CallPlanner(Setup setup) : setup_(std::move(setup)) {
  for (int t = 0; t < kNumDataTypes; ++t)
    segmentCounts_[static_cast<std::size_t>(t)] = std::max<std::uint64_t>(
        1, setup_.segmentBytes / dataTypeSize(static_cast<DataType>(t)));
}

CallCheck CallPlanner::check(OpRequest& r) const {
  CallCheck verdict = checkCall(r, setup_.rank, setup_.size);
  // A valid dtype indexes the table (checkCall checked it first).
  if (verdict.status.ok())
    r.spec.segmentCount = segmentCounts_[static_cast<std::size_t>(r.spec.dtype)];
  r.spec.sharedMemory = setup_.sharedMemory;
  r.spec.hosts = setup_.hosts.get();
  return verdict;
}

void CallPlanner::remember(OpRequest& r) {
  if (r.ownCount || !r.withoutArrays()) return;
  issued_.generation = ++generations_;
  issued_.arguments = r.spec;
  issued_.arguments.inPlace = false;
  issued_.tag = r.tag;
  issued_.input = r.input;
  issued_.output = r.output;
  issued_.inPlace = r.spec.inPlace;
  r.memo = issued_.generation;
}

std::string_view CallPlanner::forcedAlgorithm(std::string_view requested, Collective kind) const {
  if (!requested.empty()) return requested;
  return setup_.forced[static_cast<std::size_t>(kind)];
}

const CallPlan* CallPlanner::plan(const OpRequest& r, std::string_view requested,
                                  Status* error) {
  const CollectiveSpec& spec = r.spec;
  const std::string_view forced = forcedAlgorithm(requested, spec.kind);
  // selectAlgorithm() and the plan are pure functions of the call: a call of the last one's
  // shape (and arrays: none) gets its answers.
  if (last_.valid && spec.sharedBuffers == last_.sharedBuffers && r.withoutArrays() &&
      static_cast<const CallKey&>(spec) == last_.shape && forced == last_.forced) {
    last_.memo = r.memo;
    if (requested != last_.requested) last_.requested.assign(requested.data(), requested.size());
    return &last_.plan;
  }
  auto choice = choose(spec, forced);
  if (!choice.ok()) {
    *error = choice.status();
    return nullptr;
  }
  const AlgorithmInfo& algorithm = *choice->algorithm;
  last_.plan.algorithm = &algorithm;
  last_.plan.plan = &planFor(spec, algorithm, choice->segmentCount);
  last_.plan.flatBytes = flatBytesFor(spec, algorithm);
  // Kept for the next call, unless the v-collectives' arrays would need comparing.
  last_.valid = r.withoutArrays();
  last_.memo = last_.valid ? r.memo : 0;
  last_.shape = spec;
  last_.sharedBuffers = spec.sharedBuffers;
  last_.forced.assign(forced.data(), forced.size());
  last_.requested.assign(requested.data(), requested.size());
  return &last_.plan;
}

AlgorithmLearner::Shape* CallPlanner::learning(const OpRequest& r) {
  const CollectiveSpec& spec = r.spec;
  // A loop repeating one call finds its shape without a look.
  if (r.memo != 0 && r.memo == learnMemo_ && spec.sharedBuffers == learnShared_)
    return learnShape_;
  if (!setup_.learnsContenders || setup_.tuner == nullptr || !r.withoutArrays() || r.ownCount ||
      !forcedAlgorithm({}, spec.kind).empty() || !tuning::rankable(spec))
    return nullptr;
  CallKey call = spec;
  call.inPlace = false;
  auto key = std::make_pair(call, spec.sharedBuffers);
  auto it = learning_.find(key);
  if (it == learning_.end()) {
    std::lock_guard<std::mutex> lock(learnMutex_);
    if (learning_.size() >= kMaxLearntShapes) learning_.clear();
    std::unique_ptr<AlgorithmLearner::Shape> shape;
    const std::vector<tuning::Choice> contenders = setup_.tuner->contenders(spec);
    if (contenders.size() >= 2) {
      std::vector<std::string> names;
      for (const tuning::Choice& c : contenders)
        names.push_back(strFormat("%s@%llu", c.algorithm->name,
                                  static_cast<unsigned long long>(c.segmentBytes)));
      // Tries as long as the model's choice is predicted to take (the same on every rank).
      shape = std::make_unique<AlgorithmLearner::Shape>(
          std::move(names), AlgorithmLearner::timedCallsFor(contenders.front().seconds * 1e9));
    }
    it = learning_.emplace(std::move(key), std::move(shape)).first;
  }
  learnMemo_ = r.memo;
  learnShared_ = spec.sharedBuffers;
  learnShape_ = it->second.get();
  return learnShape_;
}

Result<CallPlanner::Chosen> CallPlanner::choose(const CollectiveSpec& spec,
                                                std::string_view forced) const {
  const std::uint64_t elem = dataTypeSize(spec.dtype);
  Chosen choice{nullptr, spec.segmentCount};
  // Shapes the model does not price (send/recv, all-to-allv, one rank) skip the tuner.
  const bool tuned = setup_.tuner != nullptr && tuning::rankable(spec);
  if (!tuned || !forced.empty()) {
    auto named = parseForcedChoice(forced);
    if (!named.ok()) return named.status();
    auto algorithm = selectAlgorithm(spec, named->algorithm);
    if (!algorithm.ok()) return algorithm.status();
    choice.algorithm = *algorithm;
    // A forced choice runs with the segment forced with it ("ring@256K"), else with the one
    // the model finds best for it, and is logged where the model predicts it slow.
    if (named->segmentBytes > 0)
      choice.segmentCount = std::max<std::uint64_t>(1, named->segmentBytes / elem);
    else if (tuned)
      choice.segmentCount =
          std::max<std::uint64_t>(1, setup_.tuner->checkForced(spec, **algorithm) / elem);
    return choice;
  }
  Status error;
  const tuning::Choice model = setup_.tuner->choose(spec, &error);
  if (model.algorithm == nullptr) return error;
  choice.algorithm = model.algorithm;
  choice.segmentCount = std::max<std::uint64_t>(1, model.segmentBytes / elem);
  return choice;
}

const Plan& CallPlanner::planFor(const CollectiveSpec& given, const AlgorithmInfo& algorithm,
                                 std::uint64_t segmentCount) {
  // Found without building a key: a key copies the v-collectives' arrays.
  auto it = plans_.find(PlanProbe{&given, &algorithm, segmentCount});
  if (it != plans_.end()) return it->second;
  // A new shape: built with the segment chosen, from a copy where it is not the spec's.
  CollectiveSpec copy;
  if (segmentCount != given.segmentCount) {
    copy = given;
    copy.segmentCount = segmentCount;
  }
  const CollectiveSpec& spec = segmentCount != given.segmentCount ? copy : given;
  // Not while plans are held; a clear forgets the last call's plan with the rest.
  if (plans_.size() >= kMaxCachedPlans && !held_) {
    plans_.clear();
    last_.valid = false;
    last_.memo = 0;
  }
  PlanKey key{spec,        &algorithm,      spec.segmentCount, spec.counts,
              spec.displs, spec.recvCounts, spec.recvDispls};
  markOneTimeCost();
  return plans_.emplace(std::move(key), Plan{algorithm.build(spec), stampFor(spec, algorithm)})
      .first->second;
}

std::size_t CallPlanner::flatBytesFor(const CollectiveSpec& spec,
                                      const AlgorithmInfo& algorithm) const {
  if (algorithm.flatBytes == nullptr || setup_.flatRoom == 0) return kNotFlat;
  const std::size_t bytes = algorithm.flatBytes(spec);
  return bytes <= setup_.flatRoom ? bytes : kNotFlat;
}

// --- questions answered without running the call ------------------------------------------

CollectiveSpec CallPlanner::representativeSpec(const CallShape& call, int rank) const {
  // The v-collectives with `count` elements per rank, packed in rank order.
  CollectiveSpec spec;
  spec.sharedMemory = setup_.sharedMemory;
  spec.hosts = setup_.hosts.get();
  spec.kind = call.kind;
  spec.rank = rank;
  spec.size = setup_.size;
  spec.count = call.count;
  spec.dtype = call.dtype;
  spec.op = call.op;
  spec.root = call.root;
  spec.inPlace = call.inPlace;
  spec.peer = (rank + 1) % setup_.size;
  spec.segmentCount = std::max<std::uint64_t>(1, setup_.segmentBytes / dataTypeSize(call.dtype));
  spec.sharedBuffers = call.sharedBuffers && needsBuffers(spec);  // as agreed in a call
  const auto ranks = static_cast<std::size_t>(setup_.size);
  if (call.kind == Collective::kGatherV || call.kind == Collective::kScatterV ||
      call.kind == Collective::kAllGatherV || call.kind == Collective::kReduceScatterV ||
      call.kind == Collective::kAllToAllV) {
    spec.counts.assign(ranks, call.count);
    spec.displs.resize(ranks);
    for (std::size_t i = 0; i < ranks; ++i) spec.displs[i] = i * call.count;
    if (call.kind == Collective::kAllToAllV) {
      spec.recvCounts = spec.counts;
      spec.recvDispls = spec.displs;
    }
  }
  return spec;
}

Result<std::string> CallPlanner::algorithmFor(Collective kind, std::size_t count, DataType dtype,
                                              const std::string& forced,
                                              bool sharedBuffers) const {
  CallShape call;
  call.kind = kind;
  call.count = count;
  call.dtype = dtype;
  call.sharedBuffers = sharedBuffers;
  const CollectiveSpec spec = representativeSpec(call, setup_.rank);
  TUTTI_RETURN_IF_ERROR(validateSpec(spec));
  const std::string_view named = forcedAlgorithm(forced, kind);
  if (named.empty()) {
    // What a shape learning its contenders keeps, once it decided.
    std::lock_guard<std::mutex> lock(learnMutex_);
    for (const auto& [key, shape] : learning_) {
      if (shape == nullptr || !shape->decided() || key.first.kind != kind ||
          key.first.count != count || key.first.dtype != dtype || key.second != spec.sharedBuffers)
        continue;
      const std::string& name = shape->names()[shape->kept()];
      return name.substr(0, name.find('@'));
    }
  }
  auto choice = choose(spec, named);
  if (!choice.ok()) return choice.status();
  return std::string(choice->algorithm->name);
}

Status CallPlanner::verifyCall(const CallShape& call, const std::string& forced) const {
  const int n = setup_.size;
  const bool p2p = isPointToPoint(call.kind);
  TUTTI_CHECK_ARG(!p2p || n >= 2, "%s: a world of one rank has no peer to verify against",
                  collectiveName(call.kind));
  // The arguments every rank shares are checked once here, each rank's whole spec by the
  // verifier; an algorithm is never asked about a call it cannot take.
  TUTTI_RETURN_IF_ERROR(validateSharedArgs(representativeSpec(call, 0)));
  std::vector<CollectiveSpec> specs;
  std::vector<Schedule> schedules;
  specs.reserve(static_cast<std::size_t>(n));
  schedules.reserve(static_cast<std::size_t>(n));
  const char* name = nullptr;
  for (int q = 0; q < n; ++q) {
    CollectiveSpec spec = representativeSpec(call, q);
    if (p2p) {
      // Pairs (0 -> 1, 2 -> 3, ...); the last rank of an odd world takes no part.
      const bool sender = q % 2 == 0;
      const int partner = sender ? q + 1 : q - 1;
      spec.kind = sender ? Collective::kSend : Collective::kRecv;
      spec.peer = partner < n ? partner : -1;
      spec.inPlace = false;
      if (spec.peer < 0) {
        spec.count = 0;
        Schedule idle;
        idle.rank = q;
        idle.size = n;
        specs.push_back(std::move(spec));
        schedules.push_back(std::move(idle));
        continue;
      }
    }
    auto choice = choose(spec, forcedAlgorithm(forced, spec.kind));
    if (!choice.ok()) return choice.status();
    const AlgorithmInfo* algorithm = choice->algorithm;
    // Every rank must pick the same algorithm for the same call, or they would not meet.
    if (name != nullptr && !p2p && std::string_view(name) != algorithm->name) {
      return Status(ErrorCode::kInternal,
                    strFormat("%s: rank %d would run %s but rank 0 %s", collectiveName(call.kind),
                              q, algorithm->name, name));
    }
    name = algorithm->name;
    spec.segmentCount = choice->segmentCount;
    schedules.push_back(algorithm->build(spec));
    specs.push_back(std::move(spec));
  }
  VerifyOptions options;
  options.maxInflight = setup_.maxInflight;
  Status status = verifySchedules(specs, schedules, options);
  if (!status.ok() && name != nullptr) return status.withContext(name);
  return status;
}

}  // namespace tutti::detail
