// Default algorithm per call until the tuner exists (DESIGN.md 4): a table of rules, read top
// to bottom; the first rule whose collective, size range and world range match, and whose
// algorithm applies to the call, wins. No rule matching falls back to the registry's order.
// Sizes are the bytes one rank contributes (count x element size; for v-collectives the
// sum of the counts). The thresholds are TCP-era choices (alpha about 30 us, beta about
// 1 GB/s per link on this machine class): latency-bound algorithms (log n rounds) below a
// few tens of KiB, bandwidth-optimal ones (ring, pairwise, pipelined trees) above.

#include <cstdint>
#include <limits>

#include "algorithms/algorithm.h"

namespace tutti {
namespace {

constexpr std::uint64_t kAny = std::numeric_limits<std::uint64_t>::max();

constexpr int kAnyRanks = std::numeric_limits<int>::max();

struct Rule {
  Collective kind;
  std::uint64_t maxBytes;  // rule applies to calls of at most this many bytes per rank
  int maxRanks;            // ... in worlds of at most this many ranks
  const char* algorithm;
};

// Order matters: the first applicable rule wins.
constexpr Rule kRules[] = {
    // One round of n-1 tiny messages beats 2(n-1) ring steps in small worlds.
    {Collective::kAllReduce, 4096, 8, "direct"},
    {Collective::kAllReduce, kAny, kAnyRanks, "ring"},
    {Collective::kBarrier, kAny, kAnyRanks, "dissemination"},
};

std::uint64_t bytesOf(const CollectiveSpec& spec) {
  std::uint64_t count = spec.count;
  if (!spec.counts.empty()) {
    count = 0;
    for (std::uint64_t c : spec.counts) count += c;
  }
  return count * dataTypeSize(spec.dtype);
}

const AlgorithmInfo* findApplicable(const CollectiveSpec& spec, const char* name) {
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.kind == spec.kind && std::string_view(info.name) == name &&
        info.unsupportedReason(spec).empty())
      return &info;
  }
  return nullptr;
}

}  // namespace

const AlgorithmInfo* defaultAlgorithm(const CollectiveSpec& spec) {
  // One rank needs no communication: the flat algorithm is a local copy.
  if (spec.size == 1) {
    if (const AlgorithmInfo* direct = findApplicable(spec, "direct")) return direct;
  }
  const std::uint64_t bytes = bytesOf(spec);
  for (const Rule& rule : kRules) {
    if (rule.kind != spec.kind || bytes > rule.maxBytes || spec.size > rule.maxRanks) continue;
    if (const AlgorithmInfo* info = findApplicable(spec, rule.algorithm)) return info;
  }
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.kind == spec.kind && info.unsupportedReason(spec).empty()) return &info;
  }
  return nullptr;
}

}  // namespace tutti
