// The tuner's ranking and its cache (tuner.h).

#include "tuning/tuner.h"

#include <algorithm>

#include "base/log.h"
#include "base/strings.h"
#include "tuning/plugin.h"

namespace tutti::tuning {
namespace {

// Bound on the decisions kept; a workload with more distinct shapes decides again.
constexpr std::size_t kMaxDecisions = 256;

std::string formatSeconds(double s) {
  if (s < 1e-3) return strFormat("%.1f us", s * 1e6);
  if (s < 1) return strFormat("%.2f ms", s * 1e3);
  return strFormat("%.3f s", s);
}

std::string formatBytes(std::uint64_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return strFormat("%lluM", static_cast<unsigned long long>(b >> 20));
  if (b >= 1024 && b % 1024 == 0) return strFormat("%lluK", static_cast<unsigned long long>(b >> 10));
  return strFormat("%llu", static_cast<unsigned long long>(b));
}

// Whether `algorithm`'s schedule on `spec` changes with the segment: rank 0's schedule
// built with the smallest and the largest candidate has a different number of steps.
bool segmentMatters(const AlgorithmInfo& algorithm, CollectiveSpec spec,
                    const std::vector<std::uint64_t>& candidates) {
  if (candidates.size() < 2) return false;
  const std::uint64_t elem = dataTypeSize(spec.dtype);
  spec.rank = 0;
  spec.segmentCount = std::max<std::uint64_t>(1, candidates.front() / elem);
  const std::size_t small = algorithm.build(spec).steps.size();
  spec.segmentCount = std::max<std::uint64_t>(1, candidates.back() / elem);
  return algorithm.build(spec).steps.size() != small;
}

std::uint64_t bytesOf(std::uint64_t segmentCount, DataType dtype) {
  return segmentCount * dataTypeSize(dtype);
}

}  // namespace

const char* transportKindName(TransportKind kind) {
  switch (kind) {
    case TransportKind::kShm: return "shm";
    case TransportKind::kTcp: return "tcp";
    case TransportKind::kHybrid: return "hybrid";
  }
  return "?";
}

MachineModel effectiveModel(const TunerSetup& setup) {
  MachineModel m = setup.model;
  if (setup.transport == TransportKind::kTcp) {
    // TCP between the ranks of one host goes through the kernel's loopback (its own
    // measured costs; the network's where a model file has none); no NIC is crossed. A
    // host path's beta is a message's two copies one after the other (the simulator gives
    // each end half); the loopback probe times a stream, whose two kernels work at once,
    // so the sender's end, which does the protocol's work as well as its copy and sets
    // the stream's pace, takes the stream's time. The receiver's end only copies out of
    // the kernel, as the kernel's copy between processes does (kernel_copy_ratio times a
    // memcpy). Over 2 AMD vCPUs: a 2-rank exchange of 4 MiB (direct all-reduce) 1.54 ms,
    // 1.4 times a one-way 4 MiB (broadcast, 1.0-1.1 ms), where both ends alike made it 2.
    LinkCost loopback = m.loopback;
    const bool known = loopback.alpha > 0 || loopback.beta > 0 || loopback.overhead > 0;
    const double stream = loopback.beta;
    loopback.beta *= 2;
    if (m.kernelCopyRatio > 0 && m.copyBeta > 0)
      loopback.recvBeta = std::min(stream, m.kernelCopyRatio * m.copyBeta);
    for (int c = 0; c < static_cast<int>(PathClass::kNetwork); ++c) {
      m.paths[static_cast<std::size_t>(c)] = known ? loopback : m.path(PathClass::kNetwork);
      // TcpLink takes no combine sink: a message is reduced once it is whole.
      m.paths[static_cast<std::size_t>(c)].reducesWhole = true;
    }
    m.kernelCopyRatio = 0;  // no copy between processes: each kernel copies
    // A rank waiting on TCP sleeps in epoll (with more ranks than cores it does not spin):
    // it runs again through a wake-up, not another rank's yield.
    m.yieldCost = m.switchCost;
  }
  return m;
}

bool rankable(const CollectiveSpec& spec) {
  return spec.size > 1 && !isPointToPoint(spec.kind) && spec.kind != Collective::kAllToAllV;
}

std::string describe(const Candidate& c) {
  std::string name = c.algorithm != nullptr ? c.algorithm->name : "?";
  if (c.flat) name += " (flat)";
  if (c.segmentMatters) name += "/" + formatBytes(c.segmentBytes);
  return name + " " + formatSeconds(c.seconds);
}

Result<std::vector<Candidate>> rankCandidates(const CollectiveSpec& given, const TunerSetup& setup) {
  if (!rankable(given))
    return Status(ErrorCode::kNotSupported,
                  strFormat("the model does not price %s on %d rank(s)", collectiveName(given.kind),
                            given.size));
  const MachineModel model = effectiveModel(setup);
  CollectiveSpec spec = given;
  spec.rank = 0;
  // A root may call in place where the other ranks do not (or the reverse): priced out of
  // place on every rank, so that all rank alike.
  spec.inPlace = false;
  const std::uint64_t elem = dataTypeSize(spec.dtype);
  std::vector<std::uint64_t> segments = setup.segmentCandidates;
  if (setup.fixedSegment || segments.empty()) segments = {setup.defaultSegmentBytes};
  SimOptions options = setup.sim;
  options.flatRoom = setup.flatRoom;
  std::vector<Candidate> out;
  std::string failures;
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.kind != spec.kind || !info.unsupportedReason(spec).empty()) continue;
    spec.segmentCount = std::max<std::uint64_t>(1, setup.defaultSegmentBytes / elem);
    // Carried by the flat exchange (as the planner decides it): one round, no segments.
    const bool flat = info.flatBytes != nullptr && setup.flatRoom > 0 &&
                      setup.placement.hostCount() == 1 && info.flatBytes(spec) <= setup.flatRoom;
    const bool matters = !flat && !setup.fixedSegment && segmentMatters(info, spec, segments);
    const std::vector<std::uint64_t> tried =
        matters ? segments : std::vector<std::uint64_t>{setup.defaultSegmentBytes};
    for (std::uint64_t bytes : tried) {
      spec.segmentCount = std::max<std::uint64_t>(1, bytes / elem);
      auto p = predict(info, spec, model, setup.placement, setup.network, options);
      if (!p.ok()) {
        failures += strFormat("; %s: %s", info.name, p.status().message().c_str());
        break;
      }
      out.push_back({&info, bytesOf(spec.segmentCount, spec.dtype), matters, flat, p->seconds});
    }
  }
  if (!failures.empty() && !out.empty())
    TUTTI_WARN(kTune, "%s of %llu x %s: not priced, so not chosen%s", collectiveName(spec.kind),
               static_cast<unsigned long long>(spec.count), dataTypeName(spec.dtype),
               failures.c_str());
  if (out.empty())
    return Status(ErrorCode::kNotSupported,
                  strFormat("no algorithm could be priced for this %s%s", collectiveName(spec.kind),
                            failures.c_str()));
  // Registry order, then segments ascending, is the order built: a stable sort keeps it
  // among equal predictions, so every rank breaks ties alike.
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.seconds < b.seconds; });
  return out;
}

Tuner::Tuner(TunerSetup setup) : setup_(std::move(setup)) {}
Tuner::~Tuner() = default;

bool Tuner::KeyLess::less(const View& a, const View& b) {
  if (a.call != b.call) return a.call < b.call;
  if (a.sharedBuffers != b.sharedBuffers) return a.sharedBuffers < b.sharedBuffers;
  if (a.forced != b.forced) return std::less<>()(a.forced, b.forced);
  return std::lexicographical_compare(a.counts.begin(), a.counts.end(), b.counts.begin(),
                                      b.counts.end());
}

Result<Decision> Tuner::decideNow(const CollectiveSpec& spec, bool log) const {
  Decision d;
  auto ranking = rankCandidates(spec, setup_);
  if (!ranking.ok()) {
    // The table's choice: shapes the model does not price, or none could be priced.
    const AlgorithmInfo* table = defaultAlgorithm(spec);
    if (table == nullptr) {
      auto selected = selectAlgorithm(spec, "");
      return selected.ok() ? Status(ErrorCode::kInternal, "no algorithm") : selected.status();
    }
    if (log && rankable(spec))
      TUTTI_WARN(kTune, "%s of %llu x %s: %s; the table's %s runs", collectiveName(spec.kind),
                 static_cast<unsigned long long>(spec.count), dataTypeName(spec.dtype),
                 ranking.status().message().c_str(), table->name);
    d.chosen.algorithm = table;
    d.chosen.segmentBytes = setup_.defaultSegmentBytes;
    d.by = "table";
    return d;
  }
  d.ranking = std::move(*ranking);
  d.chosen = d.ranking.front();
  if (plugin_ != nullptr) {
    auto pick = log ? plugin_->choose(spec, setup_, d.ranking) : [&]() -> std::optional<Candidate> {
      auto asked = plugin_->ask(spec, setup_, d.ranking);
      if (asked.ok()) return *asked;
      return std::nullopt;
    }();
    if (pick) {
      d.chosen = *pick;
      d.by = "plugin " + plugin_->name();
    }
  }
  if (log) {
    // The runner-up: the best candidate of another algorithm than the one chosen.
    const Candidate* second = nullptr;
    for (const Candidate& c : d.ranking) {
      if (c.algorithm != d.chosen.algorithm) {
        second = &c;
        break;
      }
    }
    TUTTI_INFO(kTune, "%s %llu x %s on %d ranks (%d hosts, %s%s): %s chose %s%s%s",
               collectiveName(spec.kind), static_cast<unsigned long long>(spec.count),
               dataTypeName(spec.dtype), spec.size, setup_.placement.hostCount(),
               transportKindName(setup_.transport), spec.sharedBuffers ? ", shared buffers" : "",
               d.by.c_str(), describe(d.chosen).c_str(), second ? "; runner-up " : "",
               second ? describe(*second).c_str() : "");
  }
  return d;
}

Result<Decision> Tuner::explain(const CollectiveSpec& spec) const { return decideNow(spec, false); }

std::vector<Candidate> contendersOf(const Decision& d, const TunerSetup& setup) {
  std::vector<Candidate> out{d.chosen};
  // Only the model's own choice has contenders: a plugin's or the table's stands.
  if (d.by != "model") return out;
  // Nor a call with a root: in a loop of them the root runs ahead and its receivers find
  // their messages waiting, so a rank's time in a call says little of the loop's pace, and
  // the learner kept whichever contender a decision's synchronisation happened to favour
  // (broadcast of 8 B on 8 ranks over tcp: binomial measured 101 us against direct's 44 at
  // the second decision, direct kept, the loop at 65 us a call against binomial's 35). In
  // the regret grid the model's own choices came within 10% of the best in 52 of 64 cells
  // with a root, the tuner measuring its contenders in 37.
  if (d.chosen.algorithm != nullptr && isRooted(d.chosen.algorithm->kind)) return out;
  const double within = setup.contenderRatio * d.chosen.seconds;
  for (const Candidate& c : d.ranking) {
    if (out.size() >= setup.maxContenders || c.seconds > within) break;
    const bool seen = std::any_of(out.begin(), out.end(),
                                  [&](const Candidate& k) { return k.algorithm == c.algorithm; });
    if (!seen) out.push_back(c);
  }
  return out;
}

const Tuner::Entry* Tuner::entryFor(const CollectiveSpec& spec, Status* error) {
  const View view = viewOf(spec, nullptr);
  auto it = choices_.find(view);
  if (it != choices_.end()) return &it->second;
  if (choices_.size() >= kMaxDecisions) choices_.clear();
  auto d = decideNow(spec, true);
  if (!d.ok()) {
    *error = d.status();
    return nullptr;
  }
  Entry entry;
  entry.choice = Choice{d->chosen.algorithm, d->chosen.segmentBytes, d->chosen.seconds};
  for (const Candidate& c : contendersOf(*d, setup_))
    entry.contenders.push_back(Choice{c.algorithm, c.segmentBytes, c.seconds});
  return &choices_.emplace(keyOf(view), std::move(entry)).first->second;
}

Choice Tuner::choose(const CollectiveSpec& spec, Status* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Entry* entry = entryFor(spec, error);
  return entry != nullptr ? entry->choice : Choice{};
}

std::vector<Choice> Tuner::contenders(const CollectiveSpec& spec) {
  std::lock_guard<std::mutex> lock(mutex_);
  Status error;
  const Entry* entry = entryFor(spec, &error);
  return entry != nullptr ? entry->contenders : std::vector<Choice>{};
}

std::uint64_t Tuner::checkForced(const CollectiveSpec& spec, const AlgorithmInfo& forced) {
  std::lock_guard<std::mutex> lock(mutex_);
  const View view = viewOf(spec, &forced);
  auto it = forced_.find(view);
  if (it != forced_.end()) return it->second;
  if (forced_.size() >= kMaxDecisions) forced_.clear();
  std::uint64_t segment = setup_.defaultSegmentBytes;
  auto ranking = rankable(spec) ? rankCandidates(spec, setup_)
                                : Result<std::vector<Candidate>>(Status(ErrorCode::kNotSupported, ""));
  if (ranking.ok()) {
    // The ranking is fastest first: the forced algorithm's first entry is its best segment.
    auto mine = std::find_if(ranking->begin(), ranking->end(),
                             [&](const Candidate& c) { return c.algorithm == &forced; });
    if (mine != ranking->end()) {
      segment = mine->segmentBytes;
      const Candidate& best = ranking->front();
      if (mine->seconds > setup_.slowForcedRatio * best.seconds)
        TUTTI_INFO(kTune, "%s %llu x %s on %d ranks: forced %s is predicted %.1fx slower than %s",
                   collectiveName(spec.kind), static_cast<unsigned long long>(spec.count),
                   dataTypeName(spec.dtype), spec.size, describe(*mine).c_str(),
                   best.seconds > 0 ? mine->seconds / best.seconds : 0.0, describe(best).c_str());
    }
  }
  forced_.emplace(keyOf(view), segment);
  return segment;
}

}  // namespace tutti::tuning
