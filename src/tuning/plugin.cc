// Loading a tuner plugin and checking its answers (plugin.h).

#include "tuning/plugin.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "base/log.h"
#include "base/strings.h"

namespace tutti::tuning {
namespace {

// TUTTI_SEGMENT_BYTES's range: a segment outside it is nonsense.
constexpr std::uint64_t kMaxSegmentBytes = std::uint64_t{1} << 30;

tutti_tuner_context_v1 contextOf(const TunerSetup& setup) {
  tutti_tuner_context_v1 c{};
  c.ranks = setup.placement.size();
  c.hosts = setup.placement.hostCount();
  if (c.hosts > 0)
    for (const auto& ranks : setup.placement.hosts().ranksOf)
      c.ranksPerHost = std::max(c.ranksPerHost, static_cast<int>(ranks.size()));
  const MachineModel model = effectiveModel(setup);
  c.coresPerHost = model.coresPerHost;
  c.transport = transportKindName(setup.transport);
  static_assert(kNumPathClasses == TUTTI_TUNER_NUM_PATHS);
  static_assert(kNumDataTypes <= TUTTI_TUNER_NUM_DTYPES);
  for (int p = 0; p < kNumPathClasses; ++p) {
    const LinkCost& l = model.path(static_cast<PathClass>(p));
    c.alpha[p] = l.alpha;
    c.beta[p] = l.beta;
    c.overhead[p] = l.overhead;
  }
  for (int t = 0; t < kNumDataTypes; ++t) c.gamma[t] = model.gamma[static_cast<std::size_t>(t)];
  c.copyBeta = model.copyBeta;
  c.hostMemoryBandwidth = model.hostMemoryBandwidth;
  c.nicBandwidth = model.nicBandwidth;
  return c;
}

}  // namespace

Result<std::shared_ptr<TunerPlugin>> TunerPlugin::open(const std::string& path,
                                                       const TunerSetup& setup) {
  std::shared_ptr<TunerPlugin> p(new TunerPlugin());
  p->path_ = path;
  p->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (p->handle_ == nullptr) {
    const char* why = dlerror();
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("tuner plugin '%s' does not load: %s", path.c_str(), why ? why : "?"));
  }
  dlerror();
  p->api_ = static_cast<const tutti_tuner_plugin_v1*>(dlsym(p->handle_, TUTTI_TUNER_PLUGIN_SYMBOL));
  if (p->api_ == nullptr)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("tuner plugin '%s' lacks the symbol %s", path.c_str(),
                            TUTTI_TUNER_PLUGIN_SYMBOL));
  if (p->api_->version != TUTTI_TUNER_PLUGIN_VERSION)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("tuner plugin '%s' has version %d, tutti speaks %d", path.c_str(),
                            p->api_->version, TUTTI_TUNER_PLUGIN_VERSION));
  if (p->api_->init == nullptr || p->api_->getChoice == nullptr || p->api_->destroy == nullptr)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("tuner plugin '%s' lacks a callback (%s is null)", path.c_str(),
                            p->api_->init == nullptr        ? "init"
                            : p->api_->getChoice == nullptr ? "getChoice"
                                                            : "destroy"));
  p->name_ = p->api_->name != nullptr && *p->api_->name != '\0' ? p->api_->name : path;
  const tutti_tuner_context_v1 context = contextOf(setup);
  const int rc = p->api_->init(&context, &p->state_);
  if (rc != 0)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("tuner plugin '%s': init failed (%d)", p->name_.c_str(), rc));
  p->initialized_ = true;
  return p;
}

std::shared_ptr<TunerPlugin> TunerPlugin::load(const std::string& path, const TunerSetup& setup) {
  auto p = open(path, setup);
  if (p.ok()) {
    TUTTI_INFO(kTune, "tuner plugin '%s' loaded from %s", (*p)->name().c_str(), path.c_str());
    return *p;
  }
  TUTTI_WARN(kTune, "%s; refused, the built-in tuner chooses", p.status().message().c_str());
  return nullptr;
}

TunerPlugin::~TunerPlugin() {
  if (initialized_) api_->destroy(state_);
  if (handle_ != nullptr) dlclose(handle_);
}

Result<Candidate> TunerPlugin::ask(const CollectiveSpec& spec, const TunerSetup& setup,
                                   const std::vector<Candidate>& ranking) {
  std::vector<tutti_tuner_candidate_v1> candidates;
  candidates.reserve(ranking.size());
  for (const Candidate& c : ranking)
    candidates.push_back({c.algorithm->name, c.segmentBytes, c.segmentMatters ? 1 : 0, c.seconds});
  tutti_tuner_shape_v1 shape{};
  shape.collective = collectiveName(spec.kind);
  shape.count = spec.count;
  shape.dtype = dataTypeName(spec.dtype);
  shape.elementSize = static_cast<int>(dataTypeSize(spec.dtype));
  shape.bytes = spec.count * dataTypeSize(spec.dtype);
  shape.ranks = spec.size;
  shape.hosts = setup.placement.hostCount();
  shape.sharedBuffers = spec.sharedBuffers ? 1 : 0;
  tutti_tuner_choice_v1 choice{-1, nullptr, 0};
  const int rc = api_->getChoice(state_, &shape, candidates.data(),
                                 static_cast<int>(candidates.size()), &choice);
  const char* what = collectiveName(spec.kind);
  if (rc != 0)
    return Status(ErrorCode::kInvalidArgument, strFormat("getChoice failed (%d)", rc));
  Candidate chosen;
  if (choice.index >= 0) {
    if (choice.index >= static_cast<int>(ranking.size()))
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("candidate %d of %zu does not exist", choice.index, ranking.size()));
    chosen = ranking[static_cast<std::size_t>(choice.index)];
  } else {
    if (choice.algorithm == nullptr)
      return Status(ErrorCode::kInvalidArgument, "it named neither a candidate nor an algorithm");
    const std::string_view name = choice.algorithm;
    const AlgorithmInfo* known = nullptr;
    for (const AlgorithmInfo& info : algorithmRegistry()) {
      if (info.kind == spec.kind && name == info.name) known = &info;
    }
    if (known == nullptr)
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("unknown %s algorithm '%s'", what, choice.algorithm));
    const std::string why = known->unsupportedReason(spec);
    if (!why.empty())
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("%s '%s' does not apply: %s", what, choice.algorithm, why.c_str()));
    // Its best priced segment, or the default where it was not priced.
    auto it = std::find_if(ranking.begin(), ranking.end(),
                           [&](const Candidate& c) { return c.algorithm == known; });
    if (it != ranking.end()) {
      chosen = *it;
    } else {
      chosen.algorithm = known;
      chosen.segmentBytes = setup.defaultSegmentBytes;
    }
  }
  if (choice.segmentBytes != 0) {
    const std::uint64_t elem = dataTypeSize(spec.dtype);
    if (choice.segmentBytes < elem || choice.segmentBytes > kMaxSegmentBytes)
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("segment of %llu bytes is outside [%llu, 1 GiB]",
                              static_cast<unsigned long long>(choice.segmentBytes),
                              static_cast<unsigned long long>(elem)));
    // Where the schedule ignores the segment, so does the choice.
    if (chosen.segmentMatters) {
      chosen.segmentBytes = choice.segmentBytes;
      auto same = std::find_if(ranking.begin(), ranking.end(), [&](const Candidate& c) {
        return c.algorithm == chosen.algorithm && c.segmentBytes == choice.segmentBytes;
      });
      if (same != ranking.end()) chosen.seconds = same->seconds;  // else the priced one's
    }
  }
  return chosen;
}

std::optional<Candidate> TunerPlugin::choose(const CollectiveSpec& spec, const TunerSetup& setup,
                                             const std::vector<Candidate>& ranking) {
  auto chosen = ask(spec, setup, ranking);
  if (chosen.ok()) return *chosen;
  TUTTI_WARN(kTune, "tuner plugin '%s' on %s of %llu x %s: %s; refused, the built-in choice stands",
             name_.c_str(), collectiveName(spec.kind), static_cast<unsigned long long>(spec.count),
             dataTypeName(spec.dtype), chosen.status().message().c_str());
  return std::nullopt;
}

}  // namespace tutti::tuning
