// What a call runs and how it is found again: the algorithm chosen for its shape
// (chooseAlgorithm, which keeps the last answer), its plan (planFor: the schedule and stamp,
// cached by shape), and blocking calls repeated in a loop (runRepeated).
//
// A repeat: after a call succeeded, the communicator keeps what was decided for it
// (repeated_); a next call that checkCache_ finds identical, with the same forced algorithm
// and no worker thread, skips validate(), chooseAlgorithm() and planFor() and runs the kept
// plan, through the flat exchange or the executor. Those three are pure functions of the
// call (and of the communicator, which does not change under it), so the repeat runs what
// the full path would run; what differs per call (the sequence number, the deadline, the
// flight recorder's record, the transport's health) is done as the full path does it. A
// small call's time on one host is mostly such bookkeeping: 1 rank, 8 bytes, all-reduce 66
// ns before, 47 after; broadcast 55 and 38 (docs/performance.md).

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <tuple>
#include <string>
#include <vector>

#include "core/call_describer.h"
#include "core/call_stamp.h"
#include "core/comm_impl.h"

namespace tutti::detail {

namespace {

// Bound on cached schedules per communicator; a workload with more distinct shapes simply
// rebuilds (building is cheap next to running).
constexpr std::size_t kMaxCachedSchedules = 64;

// Equal arrays; two empty ones (every collective but the v-ones) without a call.
bool sameArray(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  return a.size() == b.size() && (a.empty() || a == b);
}

// True when `key` (a cache key) describes calls of `spec`'s shape run with `algorithm`,
// compared field by field so that a hit builds nothing.
template <typename Key>
bool sameShape(const Key& key, const CollectiveSpec& spec, const AlgorithmInfo* algorithm) {
  return std::get<7>(key) == algorithm && std::get<0>(key) == static_cast<int>(spec.kind) &&
         std::get<1>(key) == spec.count && std::get<2>(key) == static_cast<int>(spec.dtype) &&
         std::get<3>(key) == static_cast<int>(spec.op) && std::get<4>(key) == spec.inPlace &&
         std::get<5>(key) == spec.peer && std::get<6>(key) == spec.root &&
         sameArray(std::get<8>(key), spec.counts) && sameArray(std::get<9>(key), spec.displs) &&
         sameArray(std::get<10>(key), spec.recvCounts) &&
         sameArray(std::get<11>(key), spec.recvDispls);
}

// A key's or a probe's fields in one form, so that both order alike.
struct ShapeView {
  std::tuple<int, std::uint64_t, int, int, bool, int, int, const AlgorithmInfo*> scalars;
  std::array<std::span<const std::uint64_t>, 4> arrays;
};

template <typename Key>
ShapeView viewOf(const Key& k) {
  return ShapeView{{std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k),
                    std::get<4>(k), std::get<5>(k), std::get<6>(k), std::get<7>(k)},
                   {std::get<8>(k), std::get<9>(k), std::get<10>(k), std::get<11>(k)}};
}

ShapeView viewOf(const CollectiveSpec& spec, const AlgorithmInfo* algorithm) {
  return ShapeView{{static_cast<int>(spec.kind), spec.count, static_cast<int>(spec.dtype),
                    static_cast<int>(spec.op), spec.inPlace, spec.peer, spec.root, algorithm},
                   {spec.counts, spec.displs, spec.recvCounts, spec.recvDispls}};
}

bool viewLess(const ShapeView& a, const ShapeView& b) {
  if (a.scalars != b.scalars) return a.scalars < b.scalars;
  for (std::size_t i = 0; i < a.arrays.size(); ++i) {
    const auto& x = a.arrays[i];
    const auto& y = b.arrays[i];
    if (!std::equal(x.begin(), x.end(), y.begin(), y.end()))
      return std::lexicographical_compare(x.begin(), x.end(), y.begin(), y.end());
  }
  return false;
}

}  // namespace

bool CommImpl::CacheLess::operator()(const CacheKey& a, const CacheKey& b) const {
  return viewLess(viewOf(a), viewOf(b));
}
bool CommImpl::CacheLess::operator()(const CacheKey& a, const CacheProbe& b) const {
  return viewLess(viewOf(a), viewOf(*b.spec, b.algorithm));
}
bool CommImpl::CacheLess::operator()(const CacheProbe& a, const CacheKey& b) const {
  return viewLess(viewOf(*a.spec, a.algorithm), viewOf(b));
}

const CommImpl::Plan& CommImpl::planFor(const CollectiveSpec& spec,
                                        const AlgorithmInfo& algorithm) {
  if (lastPlan_ != nullptr && sameShape(*lastKey_, spec, &algorithm)) return *lastPlan_;
  // Found without building a key: a key copies the v-collectives' arrays.
  auto it = cache_.find(CacheProbe{&spec, &algorithm});
  if (it == cache_.end()) {
    CacheKey key{static_cast<int>(spec.kind), spec.count, static_cast<int>(spec.dtype),
                 static_cast<int>(spec.op), spec.inPlace, spec.peer, spec.root, &algorithm,
                 spec.counts, spec.displs, spec.recvCounts, spec.recvDispls};
    // Not while point-to-point calls are in flight together: they hold their plans.
    if (cache_.size() >= kMaxCachedSchedules && !p2pGroupActive_) cache_.clear();
    it = cache_.emplace(std::move(key), Plan{algorithm.build(spec), stampFor(spec, algorithm)})
             .first;
  }
  // Map nodes stay put until cleared, and clearing happens only just above.
  lastKey_ = &it->first;
  lastPlan_ = &it->second;
  return it->second;
}

bool CommImpl::LastChoice::matches(const CollectiveSpec& spec, std::string_view asked) const {
  return algorithm != nullptr && spec.kind == kind && spec.count == count &&
         spec.dtype == dtype && spec.op == op && spec.root == root && spec.peer == peer &&
         spec.inPlace == inPlace && spec.segmentCount == segmentCount &&
         spec.sharedMemory == sharedMemory && spec.sharedBuffers == sharedBuffers &&
         spec.counts.empty() && spec.displs.empty() && spec.recvCounts.empty() &&
         spec.recvDispls.empty() && asked == forced;
}

Result<const AlgorithmInfo*> CommImpl::chooseAlgorithm(const CollectiveSpec& spec,
                                                       std::string_view forced) {
  // selectAlgorithm() is pure: a call repeating the previous one's shape gets its answer.
  if (lastChoice_.matches(spec, forced)) return lastChoice_.algorithm;
  auto algorithm = selectAlgorithm(spec, forced);
  if (!algorithm.ok()) return algorithm;
  LastChoice& c = lastChoice_;
  const bool arrays = !spec.counts.empty() || !spec.displs.empty() ||
                      !spec.recvCounts.empty() || !spec.recvDispls.empty();
  c.algorithm = arrays ? nullptr : *algorithm;  // v-collectives: not kept
  c.kind = spec.kind;
  c.count = spec.count;
  c.dtype = spec.dtype;
  c.op = spec.op;
  c.root = spec.root;
  c.peer = spec.peer;
  c.inPlace = spec.inPlace;
  c.segmentCount = spec.segmentCount;
  c.sharedMemory = spec.sharedMemory;
  c.sharedBuffers = spec.sharedBuffers;
  c.forced.assign(forced.data(), forced.size());
  return algorithm;
}

void CommImpl::keepRepeated(const OpRequest& r, const CallOptions& options) {
  Repeated& k = repeated_;
  k.valid = false;
  const CollectiveSpec& s = r.spec;
  // chooseAlgorithm() and planFor() kept this very call's answers, and validate() the call
  // itself in checkCache_ (calls with per-rank arrays or a stated own count are kept by
  // neither, so they are not repeated here). A large all-reduce on one host agrees on its
  // buffers with the other ranks first, on every call.
  const AlgorithmInfo* algorithm = lastChoice_.algorithm;
  if (algorithm == nullptr || lastPlan_ == nullptr || r.ownCount.has_value() ||
      choiceNeedsBuffers(s))
    return;
  k.algorithm = algorithm;
  k.plan = lastPlan_;
  k.flatBytes = flatBytesFor(s, *algorithm);
  if (k.forced != options.algorithm) k.forced = options.algorithm;
  k.valid = true;
}

Status CommImpl::runRepeated(OpRequest& r, const CallOptions& options) {
  const Repeated& k = repeated_;
  // prepare()'s sequence number and deadline; then execute() and runSchedule() with their
  // answers for the call repeated.
  prepare(r, options);
  const CallDescriber what(*this, r, k.algorithm->name);
  const FlightRecorder::Handle op = recorder_.begin(summarize(r, k.algorithm->name), r.issued);
  ExecReport report;
  const Status health = transport_->health();
  const bool refused = !health.ok();
  Status status = refused ? refusal(what, health)
                          : runPlan(r, *k.algorithm, *k.plan, k.flatBytes, what, &report);
  recorder_.end(op, status.code());
  if (status.ok()) return status;
  repeated_.valid = false;
  return failed(r, what, status, report, refused);
}

}  // namespace tutti::detail
