// The explicit table of algorithms (STYLE.md 3.3): no self-registration through static
// initialisers. For each collective the first applicable entry is the default until the
// tuner exists.

#include <string>

#include "algorithms/algorithm.h"
#include "base/strings.h"

namespace tutti {
namespace {

std::string always(const CollectiveSpec&) { return {}; }

std::string p2pPeerValid(const CollectiveSpec& spec) {
  if (spec.peer < 0 || spec.peer >= spec.size || spec.peer == spec.rank)
    return strFormat("peer %d is not another rank of this %d-rank communicator", spec.peer,
                     spec.size);
  return {};
}

}  // namespace

const std::vector<AlgorithmInfo>& algorithmRegistry() {
  static const std::vector<AlgorithmInfo> registry = {
      {"ring", Collective::kAllReduce,
       "reduce-scatter ring + all-gather ring, pipelined in segments; bandwidth-optimal",
       always, buildAllreduceRing},
      {"dissemination", Collective::kBarrier,
       "ceil(log2 n) rounds of empty messages to rank r+2^k", always, buildBarrierDissemination},
      {"direct", Collective::kSend, "one message to the peer", p2pPeerValid, buildSendDirect},
      {"direct", Collective::kRecv, "one message from the peer", p2pPeerValid, buildRecvDirect},
  };
  return registry;
}

Result<const AlgorithmInfo*> selectAlgorithm(const CollectiveSpec& spec, std::string_view forced) {
  std::string applicable;
  std::string reasons;
  const AlgorithmInfo* chosen = nullptr;
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.kind != spec.kind) continue;
    std::string why = info.unsupportedReason(spec);
    if (!why.empty()) {
      if (!forced.empty() && forced == info.name)
        return Status(ErrorCode::kInvalidArgument,
                      strFormat("algorithm '%s' does not apply to this %s: %s", info.name,
                                collectiveName(spec.kind), why.c_str()));
      reasons += strFormat("; %s: %s", info.name, why.c_str());
      continue;
    }
    applicable += applicable.empty() ? info.name : std::string(", ") + info.name;
    if (chosen == nullptr && (forced.empty() || forced == info.name)) chosen = &info;
  }
  if (chosen != nullptr) return chosen;
  if (!forced.empty())
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("no algorithm '%.*s' for %s; algorithms that apply: %s",
                            static_cast<int>(forced.size()), forced.data(),
                            collectiveName(spec.kind),
                            applicable.empty() ? "none" : applicable.c_str()));
  return Status(ErrorCode::kNotSupported,
                strFormat("no algorithm applies to this %s%s", collectiveName(spec.kind),
                          reasons.c_str()));
}

}  // namespace tutti
