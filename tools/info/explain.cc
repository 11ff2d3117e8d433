// tutti-info explain (explain.h).

#include "info/explain.h"

#include "base/config.h"
#include "base/macros.h"
#include "base/strings.h"
#include "bench/collectives.h"
#include "topology/host_identity.h"
#include "topology/json.h"
#include "topology/view_json.h"
#include "tuning/model_cache.h"
#include "tuning/model_json.h"
#include "tuning/tuner.h"

namespace tutti::info {
namespace {

Result<tuning::MachineModel> modelFor(const ExplainRequest& r) {
  if (!r.modelFile.empty()) return tuning::loadModelFile(r.modelFile);
  const Result<Config>& config = Config::fromProcessEnvironment();
  if (!config.ok()) return config.status();
  auto model = tuning::processHostModel(*config, topo::hostIdentity());
  if (!model.ok()) return model.status();
  return **model;
}

Result<tuning::Placement> placementFor(const ExplainRequest& r, const tuning::MachineModel& m) {
  if (!r.topoFile.empty()) {
    auto view = topo::loadViewFile(r.topoFile);
    if (!view.ok()) return view.status();
    auto placement = r.hosts > 1 ? tuning::Placement::replicate(*view, r.hosts)
                                 : tuning::Placement::fromView(*view);
    if (placement.ok() && r.ranks > 0 && placement->size() != r.ranks)
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("--ranks %d, but %s on %d host(s) holds %d ranks", r.ranks,
                              r.topoFile.c_str(), r.hosts, placement->size()));
    return placement;
  }
  TUTTI_CHECK_ARG(r.ranks >= 1, "--ranks %d: at least 1", r.ranks);
  TUTTI_CHECK_ARG(r.hosts >= 1 && r.hosts <= r.ranks && r.ranks % r.hosts == 0,
                  "--hosts %d must divide --ranks %d", r.hosts, r.ranks);
  return tuning::Placement::synthetic(r.ranks, r.ranks / r.hosts, m.coresPerHost);
}

std::string candidateJson(const tuning::Candidate& c) {
  return strFormat("{\"algorithm\": %s, \"segment_bytes\": %llu, \"segment_matters\": %s, "
                   "\"flat\": %s, \"seconds\": %.9g}",
                   topo::json::quote(c.algorithm->name).c_str(),
                   static_cast<unsigned long long>(c.segmentBytes),
                   c.segmentMatters ? "true" : "false", c.flat ? "true" : "false", c.seconds);
}

}  // namespace

Result<std::string> explainCall(const ExplainRequest& r) {
  auto kind = parseCollective(r.collective);
  TUTTI_CHECK_ARG(kind.has_value(), "unknown collective '%s'", r.collective.c_str());
  auto bytes = parseBytes(r.size);
  TUTTI_CHECK_ARG(bytes.has_value(), "size '%s' is not a byte count (64, 4K, 64M)", r.size.c_str());
  auto dtype = parseDataType(r.dtype);
  TUTTI_CHECK_ARG(dtype.has_value(), "unknown data type '%s'", r.dtype.c_str());
  TUTTI_ASSIGN_OR_RETURN(tuning::MachineModel model, modelFor(r));
  tuning::TunerSetup setup;
  setup.model = model;
  TUTTI_ASSIGN_OR_RETURN(setup.placement, placementFor(r, model));
  TUTTI_ASSIGN_OR_RETURN(setup.network, tuning::Network::fromArgument(r.network));
  const bool acrossHosts = setup.placement.hostCount() > 1;
  const std::string transport = !r.transport.empty() ? r.transport : acrossHosts ? "hybrid" : "shm";
  if (transport == "shm") {
    TUTTI_CHECK_ARG(!acrossHosts, "--transport shm: the ranks span %d hosts",
                    setup.placement.hostCount());
    setup.transport = tuning::TransportKind::kShm;
  } else if (transport == "tcp") {
    setup.transport = tuning::TransportKind::kTcp;
  } else if (transport == "hybrid") {
    setup.transport = tuning::TransportKind::kHybrid;
  } else {
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("--transport '%s': shm, tcp or hybrid", transport.c_str()));
  }
  TUTTI_CHECK_ARG(r.segmentBytes >= 1, "--segment: at least 1 byte");
  setup.defaultSegmentBytes = r.segmentBytes;
  setup.fixedSegment = r.fixedSegment;
  setup.flatRoom = setup.transport == tuning::TransportKind::kShm ? r.flatRoom : 0;

  CollectiveSpec spec;
  spec.kind = *kind;
  spec.dtype = *dtype;
  spec.size = setup.placement.size();
  // The call tutti-bench makes for a row of this size (the larger of a rank's input and
  // output), so that a prediction compares with its measurement: an all-gather of 64M on 8
  // ranks contributes 8M a rank.
  spec.count = bench::collectiveCounts(spec.kind, *bytes / dataTypeSize(*dtype), spec.size).param;
  spec.segmentCount = std::max<std::uint64_t>(1, r.segmentBytes / dataTypeSize(*dtype));
  spec.sharedMemory = setup.transport == tuning::TransportKind::kShm;
  spec.hosts = acrossHosts ? &setup.placement.hosts() : nullptr;
  if (spec.kind == Collective::kBarrier) spec.count = 0;
  TUTTI_RETURN_IF_ERROR(validateSharedArgs(spec));

  tuning::Tuner tuner(setup);
  TUTTI_ASSIGN_OR_RETURN(tuning::Decision decision, tuner.explain(spec));
  const AlgorithmInfo* table = defaultAlgorithm(spec);
  const std::vector<tuning::Candidate> contenders = tuning::contendersOf(decision, setup);
  if (r.json) {
    std::string tried;
    for (const tuning::Candidate& c : contenders)
      tried += (tried.empty() ? "" : ", ") + candidateJson(c);
    std::string ranking;
    for (const tuning::Candidate& c : decision.ranking)
      ranking += (ranking.empty() ? "" : ", ") + candidateJson(c);
    return strFormat(
        "{\"collective\": %s, \"bytes\": %llu, \"count\": %llu, \"dtype\": %s, "
        "\"ranks\": %d, \"hosts\": %d, \"transport\": %s, \"network\": %s, \"model\": %s, "
        "\"segment_bytes\": %llu, \"fixed_segment\": %s, \"flat_room\": %zu, "
        "\"ranking\": [%s], \"chosen\": %s, \"contenders\": [%s], \"by\": %s, \"table\": %s}\n",
        topo::json::quote(collectiveName(spec.kind)).c_str(), static_cast<unsigned long long>(*bytes),
        static_cast<unsigned long long>(spec.count), topo::json::quote(dataTypeName(spec.dtype)).c_str(),
        spec.size, setup.placement.hostCount(), topo::json::quote(transport).c_str(),
        topo::json::quote(setup.network.describe()).c_str(), topo::json::quote(model.origin).c_str(),
        static_cast<unsigned long long>(setup.defaultSegmentBytes),
        setup.fixedSegment ? "true" : "false", setup.flatRoom, ranking.c_str(),
        candidateJson(decision.chosen).c_str(), tried.c_str(), topo::json::quote(decision.by).c_str(),
        table != nullptr ? topo::json::quote(table->name).c_str() : "null");
  }
  std::string out = strFormat("%s of %llu bytes (%llu x %s) on %s, %s, network %s\nmodel: %s\n",
                              collectiveName(spec.kind), static_cast<unsigned long long>(*bytes),
                              static_cast<unsigned long long>(spec.count), dataTypeName(spec.dtype),
                              setup.placement.describe().c_str(), transport.c_str(),
                              setup.network.describe().c_str(), model.origin.c_str());
  if (decision.ranking.empty()) {
    out += strFormat("the model does not price this call: the table's %s runs\n",
                     decision.chosen.algorithm->name);
    return out;
  }
  const double best = decision.ranking.front().seconds;
  out += strFormat("%4s  %-28s %14s %8s\n", "#", "algorithm/segment", "predicted", "x best");
  int i = 0;
  for (const tuning::Candidate& c : decision.ranking) {
    std::string name = c.algorithm->name;
    if (c.flat) name += " (flat)";
    if (c.segmentMatters) name += strFormat("/%lluK", static_cast<unsigned long long>(c.segmentBytes >> 10));
    out += strFormat("%4d  %-28s %11.1f us %8.2f\n", ++i, name.c_str(), c.seconds * 1e6,
                     best > 0 ? c.seconds / best : 1.0);
  }
  out += strFormat("chosen: %s (by %s); the old table (TUTTI_TUNER=table) runs %s\n",
                   tuning::describe(decision.chosen).c_str(), decision.by.c_str(),
                   table != nullptr ? table->name : "none");
  if (contenders.size() > 1) {
    std::string names;
    for (const tuning::Candidate& c : contenders)
      names += (names.empty() ? "" : ", ") + tuning::describe(c);
    out += strFormat("contenders (where the ranks share a host, each runs a few of the first calls "
                     "and the fastest is kept; TUTTI_TUNER_LEARN): %s\n",
                     names.c_str());
  }
  return out;
}

}  // namespace tutti::info
