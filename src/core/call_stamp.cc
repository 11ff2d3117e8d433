#include "core/call_stamp.h"


#include <vector>

#include "base/strings.h"
#include "tutti/build_config.h"

namespace tutti::detail {
namespace {

constexpr int kRootBits = 22;  // bit 62 stays clear
constexpr std::uint64_t kRootMask = (std::uint64_t{1} << kRootBits) - 1;
constexpr std::uint64_t kSetBit = std::uint64_t{1} << 63;
constexpr std::uint64_t kAlgorithmBits = std::uint64_t{0xffff} << 24;

// A 16-bit id per algorithm that does not depend on the registry's order: FNV-1a of the
// name, folded. Names are unique per collective and the collective is stamped too.
std::uint16_t nameId(const char* name) {
  std::uint32_t h = 2166136261u;
  for (const char* p = name; *p != '\0'; ++p) {
    h ^= static_cast<unsigned char>(*p);
    h *= 16777619u;
  }
  return static_cast<std::uint16_t>(h ^ (h >> 16));
}

// Ids of the registry's entries by index, computed once.
const std::vector<std::uint16_t>& registryIds() {
  static const std::vector<std::uint16_t> ids = [] {
    std::vector<std::uint16_t> out;
    for (const AlgorithmInfo& info : algorithmRegistry()) out.push_back(nameId(info.name));
    return out;
  }();
  return ids;
}

std::uint16_t algorithmId(const AlgorithmInfo& algorithm) {
  const auto& registry = algorithmRegistry();
  if (&algorithm >= registry.data() && &algorithm < registry.data() + registry.size())
    return registryIds()[static_cast<std::size_t>(&algorithm - registry.data())];
  return nameId(algorithm.name);
}

std::uint64_t hashArrays(const CollectiveSpec& spec) {
  std::uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::uint64_t v) {
    h ^= v;
    h *= 1099511628211ull;
  };
  for (std::uint64_t c : spec.counts) mix(c);
  mix(~std::uint64_t{0});  // separates counts from displacements
  for (std::uint64_t d : spec.displs) mix(d);
  return h;
}

bool hasCountArrays(Collective kind) {
  return kind == Collective::kGatherV || kind == Collective::kScatterV ||
         kind == Collective::kAllGatherV || kind == Collective::kReduceScatterV;
}

}  // namespace

CallStamp stampFor(const CollectiveSpec& spec, const AlgorithmInfo& algorithm) {
  // An empty stamp is never checked: TUTTI_CALL_STAMPS=OFF builds measure the cost this way.
  if (!TUTTI_CALL_STAMPS || spec.kind == Collective::kSend || spec.kind == Collective::kRecv)
    return CallStamp{};
  std::uint64_t what = kSetBit | static_cast<std::uint64_t>(spec.kind) |
                       (static_cast<std::uint64_t>(spec.dtype) << 8) |
                       (static_cast<std::uint64_t>(algorithmId(algorithm)) << 24);
  if (isReduction(spec.kind)) what |= static_cast<std::uint64_t>(spec.op) << 16;
  if (isRooted(spec.kind)) what |= (static_cast<std::uint64_t>(spec.root) & kRootMask) << 40;
  std::uint64_t count = spec.count;
  if (hasCountArrays(spec.kind)) count = hashArrays(spec);
  if (spec.kind == Collective::kAllToAllV) count = 0;
  return CallStamp{what, count};
}

CallStamp stampBeforeChoice(const CollectiveSpec& spec) {
  // Any registry entry of the collective: its id is cleared and left open.
  CallStamp stamp = stampFor(spec, algorithmRegistry().front());
  if (stamp.empty()) return stamp;
  stamp.what &= ~kAlgorithmBits;
  stamp.open = kAlgorithmBits;
  return stamp;
}

std::string describeStamp(const CallStamp& stamp, std::uint64_t seq) {
  const auto kindValue = static_cast<unsigned>(stamp.what & 0xff);
  const auto dtypeValue = static_cast<unsigned>((stamp.what >> 8) & 0xff);
  const auto opValue = static_cast<unsigned>((stamp.what >> 16) & 0xff);
  const auto id = static_cast<std::uint16_t>((stamp.what >> 24) & 0xffff);
  const auto root = static_cast<int>((stamp.what >> 40) & kRootMask);
  if (kindValue >= static_cast<unsigned>(kNumCollectives))
    return strFormat("an unknown collective (%u) #%llu", kindValue,
                     static_cast<unsigned long long>(seq));
  const auto kind = static_cast<Collective>(kindValue);
  std::string algorithm = strFormat("algorithm id 0x%04x", id);
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.kind == kind && nameId(info.name) == id) algorithm = info.name;
  }
  if (stamp.open != 0) algorithm = "algorithm not chosen yet";
  if (kind == Collective::kBarrier)
    return strFormat("barrier #%llu", static_cast<unsigned long long>(seq));
  std::string text = strFormat("%s #%llu (", collectiveName(kind), static_cast<unsigned long long>(seq));
  if (hasCountArrays(kind))
    text += strFormat("per-rank counts hashing to 0x%016llx", static_cast<unsigned long long>(stamp.count));
  else if (kind == Collective::kAllToAllV)
    text += "per-rank counts";
  else
    text += strFormat("count %llu", static_cast<unsigned long long>(stamp.count));
  if (dtypeValue < static_cast<unsigned>(kNumDataTypes))
    text += strFormat(" %s", dataTypeName(static_cast<DataType>(dtypeValue)));
  else
    text += strFormat(" dtype %u", dtypeValue);
  if (isReduction(kind)) {
    if (opValue < static_cast<unsigned>(kNumReduceOps))
      text += strFormat(" %s", reduceOpName(static_cast<ReduceOp>(opValue)));
    else
      text += strFormat(" op %u", opValue);
  }
  if (isRooted(kind)) text += strFormat(" root %d", root);
  return text + ", " + algorithm + ")";
}

std::optional<std::uint64_t> countArraysHash(const CollectiveSpec& spec) {
  if (!hasCountArrays(spec.kind)) return std::nullopt;
  return hashArrays(spec);
}

}  // namespace tutti::detail
