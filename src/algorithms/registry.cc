// The explicit table of algorithms (STYLE.md 3.3): no self-registration through static
// initialisers. For each collective the first applicable entry is the default until the
// tuner exists.

#include <optional>
#include <string>

#include "algorithms/algorithm.h"
#include "algorithms/hierarchy.h"
#include "base/strings.h"

namespace tutti {
namespace {

std::string always(const CollectiveSpec&) { return {}; }

std::string p2pPeerValid(const CollectiveSpec& spec) {
  if (spec.peer < 0 || spec.peer >= spec.size)
    return strFormat("peer %d is not a rank of this %d-rank communicator", spec.peer, spec.size);
  return {};
}

}  // namespace

const std::vector<AlgorithmInfo>& algorithmRegistry() {
  // Defaults are chosen by the rules of defaults.cc, not by the order here.
  static const std::vector<AlgorithmInfo> registry = {
      {"ring", Collective::kAllReduce,
       "reduce-scatter ring + all-gather ring, pipelined in segments; bandwidth-optimal",
       always, buildAllreduceRing},
      {"direct", Collective::kAllReduce, "every rank sends its input to every other", always,
       buildDirect, flatBytesDirect, flatFinishDirect},
      {"double_binary_tree", Collective::kAllReduce,
       "reduce up and broadcast down two binary trees, each carrying half; pipelined", always,
       buildAllreduceDoubleBinaryTree},
      {"reduce_bcast", Collective::kAllReduce,
       "binomial reduce to rank 0, then binomial broadcast from it; 2 log2 n latency", always,
       buildAllreduceReduceBcast},
      {"rs_ag", Collective::kAllReduce,
       "ring reduce-scatter then ring all-gather, unfused (a pipeline bubble between them)",
       always, buildAllreduceRsAg},
      {"direct_rs_ag", Collective::kAllReduce,
       "direct reduce-scatter (each rank reduces its chunk from every rank) then direct "
       "all-gather; one round each",
       always, buildAllreduceDirectRsAg},
      {"recursive_doubling", Collective::kAllReduce,
       "log2 n rounds exchanging the whole vector with rank r^2^k; non-powers of two fold",
       always, buildAllreduceRecursiveDoubling},
      {"rabenseifner", Collective::kAllReduce,
       "recursive-halving reduce-scatter + recursive-doubling all-gather; log latency, "
       "ring bandwidth",
       always, buildAllreduceRabenseifner},
      {"hier_rs_ag", Collective::kAllReduce,
       "hosts reduce-scatter, columns all-reduce their chunk across hosts, hosts all-gather; "
       "pipelined",
       hierarchyUnsupported, buildAllreduceHierRsAg},
      {"hier_reduce_bcast", Collective::kAllReduce,
       "hosts reduce to a leader, leaders all-reduce across hosts, leaders broadcast",
       hierarchyUnsupported, buildAllreduceHierReduceBcast},
      {"dissemination", Collective::kBarrier,
       "ceil(log2 n) rounds of empty messages to rank r+2^k", always, buildBarrierDissemination},
      {"direct", Collective::kBarrier, "every rank messages every other", always, buildDirect,
       flatBytesDirect, flatFinishDirect},
      {"direct", Collective::kBroadcast, "the root sends to every rank", always, buildDirect},
      {"hierarchical", Collective::kBroadcast,
       "the root to one leader per host across hosts, each leader on its host; pipelined",
       hierarchyUnsupported, buildBroadcastHierarchical},
      {"binomial", Collective::kBroadcast,
       "binomial tree from the root, pipelined in segments; ceil(log2 n) rounds", always,
       buildBroadcastBinomial},
      {"double_binary_tree", Collective::kBroadcast,
       "two binary trees from the root, each carrying half; pipelined", always,
       buildBroadcastDoubleBinaryTree},
      {"scatter_allgather", Collective::kBroadcast,
       "binomial scatter of n chunks, then ring all-gather; ~2N per link for large N", always,
       buildBroadcastScatterAllgather},
      {"hierarchical", Collective::kReduce,
       "hosts reduce to a leader, the leaders reduce to the root across hosts; pipelined",
       hierarchyUnsupported, buildReduceHierarchical},
      {"direct", Collective::kReduce, "every rank sends to the root, which reduces in rank order",
       always, buildDirect},
      {"binomial", Collective::kReduce,
       "binomial tree to the root, children combined in a fixed order; pipelined", always,
       buildReduceBinomial},
      {"hierarchical", Collective::kGather,
       "each host packs its blocks at a leader, one message per host to the root",
       hierarchyUnsupported, buildGatherHierarchical},
      {"direct", Collective::kGather, "every rank sends its block to the root", always,
       buildDirect},
      {"binomial", Collective::kGather, "binomial tree: each rank sends its subtree's blocks",
       always, buildGatherBinomial},
      {"hierarchical", Collective::kGatherV,
       "each host packs its blocks at a leader, one message per host to the root",
       hierarchyUnsupported, buildGatherHierarchical},
      {"direct", Collective::kGatherV, "every rank sends its block to the root", always,
       buildDirect},
      {"binomial", Collective::kGatherV, "binomial tree: each rank sends its subtree's blocks",
       always, buildGatherBinomial},
      {"hierarchical", Collective::kScatter,
       "the root sends one pack per host to its leader, which hands it out",
       hierarchyUnsupported, buildScatterHierarchical},
      {"direct", Collective::kScatter, "the root sends every rank its block", always, buildDirect},
      {"binomial", Collective::kScatter, "binomial tree: each rank receives its subtree's blocks",
       always, buildScatterBinomial},
      {"hierarchical", Collective::kScatterV,
       "the root sends one pack per host to its leader, which hands it out",
       hierarchyUnsupported, buildScatterHierarchical},
      {"direct", Collective::kScatterV, "the root sends every rank its block", always,
       buildDirect},
      {"binomial", Collective::kScatterV,
       "binomial tree: each rank receives its subtree's blocks", always, buildScatterBinomial},
      {"direct", Collective::kAllGather, "every rank sends its block to every other", always,
       buildDirect, flatBytesDirect, flatFinishDirect},
      {"hierarchical", Collective::kAllGather,
       "columns (local rank i of every host) all-gather across hosts, then each rank shares "
       "what it holds on its host",
       hierarchyUnsupported, buildAllgatherHierarchical},
      {"ring", Collective::kAllGather, "each block travels the ring once, pipelined in segments",
       always, buildAllgatherRing},
      {"recursive_doubling", Collective::kAllGather,
       "log2 n rounds, blocks held double each round; non-powers of two fold", always,
       buildAllgatherRecursiveDoubling},
      {"bruck", Collective::kAllGather,
       "ceil(log2 n) rounds doubling the gathered run, then a local rotation; latency-optimal",
       always, buildAllgatherBruck},
      {"direct", Collective::kAllGatherV, "every rank sends its block to every other", always,
       buildDirect, flatBytesDirect, flatFinishDirect, flatRankBytesDirect},
      {"hierarchical", Collective::kAllGatherV,
       "columns (local rank i of every host) all-gather across hosts, then each rank shares "
       "what it holds on its host",
       hierarchyUnsupported, buildAllgatherHierarchical},
      {"ring", Collective::kAllGatherV, "each block travels the ring once, pipelined in segments",
       always, buildAllgatherRing},
      {"recursive_doubling", Collective::kAllGatherV,
       "log2 n rounds, blocks held double each round (one message per contiguous run)", always,
       buildAllgatherRecursiveDoubling},
      {"direct", Collective::kReduceScatter,
       "every rank sends each block to its owner, which reduces in rank order", always,
       buildDirect, flatBytesDirect, flatFinishDirect},
      {"hierarchical", Collective::kReduceScatter,
       "each host sums the blocks its ranks carry, then columns reduce-scatter across hosts",
       hierarchyUnsupported, buildReducescatterHierarchical},
      {"ring", Collective::kReduceScatter,
       "partial sums travel the ring once, pipelined in segments", always,
       buildReducescatterRing},
      {"recursive_halving", Collective::kReduceScatter,
       "log2 n rounds exchanging halves of the blocks; non-powers of two fold", always,
       buildReducescatterRecursiveHalving},
      {"direct", Collective::kReduceScatterV,
       "every rank sends each block to its owner, which reduces in rank order", always,
       buildDirect, flatBytesDirect, flatFinishDirect},
      {"hierarchical", Collective::kReduceScatterV,
       "each host sums the blocks its ranks carry, then columns reduce-scatter across hosts",
       hierarchyUnsupported, buildReducescatterHierarchical},
      {"ring", Collective::kReduceScatterV,
       "partial sums travel the ring once, pipelined in segments", always,
       buildReducescatterRing},
      {"recursive_halving", Collective::kReduceScatterV,
       "log2 n rounds exchanging halves of the blocks; non-powers of two fold", always,
       buildReducescatterRecursiveHalving},
      {"hierarchical", Collective::kAllToAll,
       "one message per host pair: ranks pack their blocks at an aggregator per destination "
       "host, whose receiver hands them out",
       hierarchyUnsupported, buildAlltoallHierarchical},
      {"direct", Collective::kAllToAll, "one message per pair of ranks", always, buildDirect,
       flatBytesDirect, flatFinishDirect},
      {"pairwise", Collective::kAllToAll,
       "n-1 rounds, round k sends to r+k and receives from r-k; one stream per rank at a time",
       always, buildAlltoallPairwise},
      {"bruck", Collective::kAllToAll,
       "ceil(log2 n) rounds moving the blocks whose distance has bit k set; small messages",
       always, buildAlltoallBruck},
      {"direct", Collective::kAllToAllV, "one message per pair of ranks", always, buildDirect},
      {"pairwise", Collective::kAllToAllV,
       "n-1 rounds, round k sends to r+k and receives from r-k; one stream per rank at a time",
       always, buildAlltoallPairwise},
      {"direct", Collective::kSend, "one message to the peer", p2pPeerValid, buildDirect},
      {"direct", Collective::kRecv, "one message from the peer", p2pPeerValid, buildDirect},
  };
  return registry;
}

Result<std::vector<std::pair<Collective, std::string>>> parseAlgorithmOverrides(
    std::string_view text) {
  std::vector<std::pair<Collective, std::string>> out;
  for (const std::string& item : splitString(text, ',')) {
    std::string_view entry = trim(item);
    if (entry.empty()) continue;
    auto colon = entry.find(':');
    if (colon == std::string_view::npos)
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("algorithm override '%.*s' is not collective:algorithm",
                              static_cast<int>(entry.size()), entry.data()));
    std::string_view kindText = trim(entry.substr(0, colon));
    std::string_view name = trim(entry.substr(colon + 1));
    auto kind = parseCollective(kindText);
    if (!kind)
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("algorithm override '%.*s': unknown collective '%.*s'",
                              static_cast<int>(entry.size()), entry.data(),
                              static_cast<int>(kindText.size()), kindText.data()));
    if (name.empty())
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("algorithm override '%.*s' names no algorithm",
                              static_cast<int>(entry.size()), entry.data()));
    // A segment forced with the name must be one (the name itself is checked per call).
    if (auto forced = parseForcedChoice(name); !forced.ok())
      return forced.status().withContext(
          strFormat("algorithm override '%.*s'", static_cast<int>(entry.size()), entry.data()));
    out.emplace_back(*kind, std::string(name));
  }
  return out;
}

Result<ForcedChoice> parseForcedChoice(std::string_view forced) {
  ForcedChoice out;
  const std::size_t at = forced.find('@');
  out.algorithm = forced.substr(0, at);
  if (at == std::string_view::npos) return out;
  const std::string_view segment = forced.substr(at + 1);
  const std::optional<std::uint64_t> bytes = parseBytes(segment);
  constexpr std::uint64_t kMostSegment = 1ull << 30;
  if (out.algorithm.empty() || !bytes || *bytes == 0 || *bytes > kMostSegment) {
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("forced algorithm '%.*s': expected NAME or NAME@SEGMENT, the segment "
                            "from 1 byte to 1G (e.g. ring@256K)",
                            static_cast<int>(forced.size()), forced.data()));
  }
  out.segmentBytes = *bytes;
  return out;
}

Result<const AlgorithmInfo*> selectAlgorithm(const CollectiveSpec& spec, std::string_view forced) {
  // Every call comes through here: the answer first, the explanations only when needed.
  if (forced.empty()) {
    if (const AlgorithmInfo* chosen = defaultAlgorithm(spec)) return chosen;
  } else {
    for (const AlgorithmInfo& info : algorithmRegistry()) {
      if (info.kind == spec.kind && forced == info.name && info.unsupportedReason(spec).empty())
        return &info;
    }
  }
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
    if (chosen == nullptr && !forced.empty() && forced == info.name) chosen = &info;
  }
  if (forced.empty()) chosen = defaultAlgorithm(spec);
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
