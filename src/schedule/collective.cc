#include "schedule/collective.h"

#include <algorithm>

#include "base/macros.h"
#include "base/strings.h"

namespace tutti {
namespace {

// Counts above this are refused, so that sums of counts and offsets cannot overflow.
constexpr std::uint64_t kMaxElements = std::uint64_t{1} << 56;

std::uint64_t extent(const std::vector<std::uint64_t>& counts,
                     const std::vector<std::uint64_t>& displs) {
  std::uint64_t end = 0;
  for (std::size_t i = 0; i < counts.size() && i < displs.size(); ++i) {
    if (counts[i] > 0) end = std::max(end, displs[i] + counts[i]);
  }
  return end;
}

std::uint64_t prefix(const std::vector<std::uint64_t>& counts, int upTo) {
  std::uint64_t sum = 0;
  for (int i = 0; i < upTo; ++i) sum += counts[static_cast<std::size_t>(i)];
  return sum;
}

// `counts` and `displs` (null when the collective has none) name their arguments in the API
// (recvcounts, sdispls, ...) for the messages.
Status checkArrays(const CollectiveSpec& s, const std::vector<std::uint64_t>& counts,
                   const char* countsName, const std::vector<std::uint64_t>* displs,
                   const char* displsName) {
  const char* name = collectiveName(s.kind);
  // The C API passes a NULL array as an empty one.
  TUTTI_CHECK_ARG(!counts.empty(), "%s: %s is empty or NULL; it needs one entry per rank (%d)",
                  name, countsName, s.size);
  TUTTI_CHECK_ARG(counts.size() == static_cast<std::size_t>(s.size),
                  "%s: %s has %zu entries for %d ranks", name, countsName, counts.size(), s.size);
  if (displs != nullptr) {
    TUTTI_CHECK_ARG(!displs->empty(), "%s: %s is empty or NULL; it needs one entry per rank (%d)",
                    name, displsName, s.size);
    TUTTI_CHECK_ARG(displs->size() == counts.size(), "%s: %s has %zu entries for %d ranks", name,
                    displsName, displs->size(), s.size);
  }
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    TUTTI_CHECK_ARG(counts[i] <= kMaxElements, "%s: %s[%zu] = %llu is too large", name,
                    countsName, i, static_cast<unsigned long long>(counts[i]));
    if (displs != nullptr)
      TUTTI_CHECK_ARG((*displs)[i] <= kMaxElements, "%s: %s[%zu] = %llu is too large", name,
                      displsName, i, static_cast<unsigned long long>((*displs)[i]));
    total += counts[i];
  }
  TUTTI_CHECK_ARG(total <= kMaxElements, "%s: the %s add up to too many elements", name,
                  countsName);
  return Status::Ok();
}

// Blocks of a buffer that several ranks' data land in must not share elements: two writers
// of one element would leave either's value there (MPI forbids it too). Empty blocks take
// no room. Linear, and without allocating, when the displacements ascend (the usual
// layout); sorts a copy of the order otherwise.
Status overlapError(const CollectiveSpec& s, const std::vector<std::uint64_t>& counts,
                    const std::vector<std::uint64_t>& displs, const char* what, std::size_t a,
                    std::size_t b) {
  return Status(ErrorCode::kInvalidArgument,
                strFormat("%s: %s blocks %zu (at %llu, %llu elements) and %zu (at %llu, %llu "
                          "elements) overlap",
                          collectiveName(s.kind), what, a,
                          static_cast<unsigned long long>(displs[a]),
                          static_cast<unsigned long long>(counts[a]), b,
                          static_cast<unsigned long long>(displs[b]),
                          static_cast<unsigned long long>(counts[b])));
}

Status checkDisjoint(const CollectiveSpec& s, const std::vector<std::uint64_t>& counts,
                     const std::vector<std::uint64_t>& displs, const char* what) {
  // Non-empty blocks in rank order: when each starts at or after the one before it, only
  // neighbours can overlap.
  bool ascending = true;
  std::size_t prev = counts.size();
  for (std::size_t i = 0; i < counts.size() && ascending; ++i) {
    if (counts[i] == 0) continue;
    if (prev != counts.size()) {
      if (displs[i] < displs[prev]) {
        ascending = false;
        break;
      }
      if (displs[prev] + counts[prev] > displs[i])
        return overlapError(s, counts, displs, what, prev, i);
    }
    prev = i;
  }
  if (ascending) return Status::Ok();
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < counts.size(); ++i)
    if (counts[i] > 0) order.push_back(i);
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return displs[a] < displs[b]; });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const std::size_t a = order[k - 1];
    const std::size_t b = order[k];
    if (displs[a] + counts[a] > displs[b]) return overlapError(s, counts, displs, what, a, b);
  }
  return Status::Ok();
}

// Every buffer of the call fits in kMaxBufferBytes. `elements` is at most 2^57 (bounded by
// the count checks before), so the products below cannot overflow.
Status checkBufferBytes(const CollectiveSpec& s, std::uint64_t elements) {
  const std::uint64_t size = dataTypeSize(s.dtype);
  TUTTI_CHECK_ARG(elements <= kMaxBufferBytes / size,
                  "%s: a buffer of this call would hold %llu %s elements (%llu bytes), above "
                  "the %llu bytes one buffer may hold (kMaxBufferBytes)",
                  collectiveName(s.kind), static_cast<unsigned long long>(elements),
                  dataTypeName(s.dtype), static_cast<unsigned long long>(elements * size),
                  static_cast<unsigned long long>(kMaxBufferBytes));
  return Status::Ok();
}

}  // namespace

bool isReduction(Collective kind) {
  return kind == Collective::kAllReduce || kind == Collective::kReduce ||
         kind == Collective::kReduceScatter || kind == Collective::kReduceScatterV;
}

bool isRooted(Collective kind) {
  return kind == Collective::kBroadcast || kind == Collective::kReduce ||
         kind == Collective::kGather || kind == Collective::kScatter ||
         kind == Collective::kGatherV || kind == Collective::kScatterV;
}

namespace {

// bufferLayout() of the collectives whose every rank passes one count.
BufferLayout fixedCountLayout(const CollectiveSpec& s) {
  BufferLayout l;
  const auto n = static_cast<std::uint64_t>(s.size);
  const bool root = s.rank == s.root;
  const auto r = static_cast<std::size_t>(s.rank);
  switch (s.kind) {
    case Collective::kAllReduce:
      l.inputCount = l.outputCount = s.count;
      if (s.inPlace) l.inputInOutputAt = 0;
      break;
    case Collective::kBroadcast:
      l.inputCount = root ? s.count : 0;
      l.outputCount = s.count;
      if (s.inPlace && root) l.inputInOutputAt = 0;
      break;
    case Collective::kReduce:
      l.inputCount = s.count;
      l.outputCount = root ? s.count : 0;
      if (s.inPlace && root) l.inputInOutputAt = 0;
      break;
    case Collective::kAllGather:
      l.inputCount = s.count;
      l.outputCount = n * s.count;
      if (s.inPlace) l.inputInOutputAt = r * s.count;
      break;
    case Collective::kReduceScatter:
      l.inputCount = n * s.count;
      l.outputCount = s.count;
      if (s.inPlace) l.outputInInputAt = r * s.count;
      break;
    case Collective::kGather:
      l.inputCount = s.count;
      l.outputCount = root ? n * s.count : 0;
      if (s.inPlace && root) l.inputInOutputAt = r * s.count;
      break;
    case Collective::kScatter:
      l.inputCount = root ? n * s.count : 0;
      l.outputCount = s.count;
      if (s.inPlace && root) l.outputInInputAt = r * s.count;
      break;
    case Collective::kAllToAll:
      l.inputCount = l.outputCount = n * s.count;
      if (s.inPlace) l.inputInOutputAt = 0;
      break;
    case Collective::kBarrier:
      break;
    case Collective::kSend:
      l.inputCount = s.count;
      break;
    case Collective::kRecv:
      l.outputCount = s.count;
      break;
    default:  // the other kind of collective (bufferLayout)
      break;
  }
  return l;
}

// bufferLayout() of the collectives with per-rank counts and displacements.
BufferLayout perRankCountLayout(const CollectiveSpec& s) {
  BufferLayout l;
  const bool root = s.rank == s.root;
  const auto r = static_cast<std::size_t>(s.rank);
  switch (s.kind) {
    case Collective::kGatherV:
      l.inputCount = s.counts.empty() ? 0 : s.counts[r];
      l.outputCount = root ? extent(s.counts, s.displs) : 0;
      if (s.inPlace && root) l.inputInOutputAt = s.displs[r];
      break;
    case Collective::kScatterV:
      l.inputCount = root ? extent(s.counts, s.displs) : 0;
      l.outputCount = s.counts.empty() ? 0 : s.counts[r];
      if (s.inPlace && root) l.outputInInputAt = s.displs[r];
      break;
    case Collective::kAllGatherV:
      l.inputCount = s.counts.empty() ? 0 : s.counts[r];
      l.outputCount = extent(s.counts, s.displs);
      if (s.inPlace) l.inputInOutputAt = s.displs[r];
      break;
    case Collective::kReduceScatterV:
      l.inputCount = prefix(s.counts, s.size);
      l.outputCount = s.counts.empty() ? 0 : s.counts[r];
      if (s.inPlace) l.outputInInputAt = prefix(s.counts, s.rank);
      break;
    case Collective::kAllToAllV:
      l.inputCount = extent(s.counts, s.displs);
      l.outputCount = extent(s.recvCounts, s.recvDispls);
      if (s.inPlace) l.inputInOutputAt = 0;
      break;
    default:  // the other kind of collective (bufferLayout)
      break;
  }
  return l;
}

}  // namespace

BufferLayout bufferLayout(const CollectiveSpec& s) {
  switch (s.kind) {
    case Collective::kGatherV:
    case Collective::kScatterV:
    case Collective::kAllGatherV:
    case Collective::kReduceScatterV:
    case Collective::kAllToAllV:
      return perRankCountLayout(s);
    default:
      return fixedCountLayout(s);
  }
}

std::uint64_t largestBufferCount(const CollectiveSpec& s) {
  const auto n = static_cast<std::uint64_t>(s.size);
  switch (s.kind) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kGather:
    case Collective::kScatter:
    case Collective::kAllToAll:
      return n * s.count;
    case Collective::kGatherV:
    case Collective::kScatterV:
    case Collective::kAllGatherV:
      return extent(s.counts, s.displs);
    case Collective::kReduceScatterV:
      return prefix(s.counts, s.size);
    case Collective::kAllToAllV:
      return std::max(extent(s.counts, s.displs), extent(s.recvCounts, s.recvDispls));
    case Collective::kBarrier:
      return 0;
    default:
      return s.count;
  }
}

Status validateSharedArgs(const CollectiveSpec& s) {
  const char* name = collectiveName(s.kind);
  TUTTI_CHECK_ARG(s.size >= 1, "world size %d", s.size);
  TUTTI_CHECK_ARG(s.rank >= 0 && s.rank < s.size, "rank %d outside a world of %d", s.rank, s.size);
  TUTTI_CHECK_ARG(isValid(s.dtype), "%s: dtype %d is not a DataType (0 to %d)", name,
                  static_cast<int>(s.dtype), kNumDataTypes - 1);
  TUTTI_CHECK_ARG(isValid(s.op), "%s: op %d is not a ReduceOp (0 to %d)", name,
                  static_cast<int>(s.op), kNumReduceOps - 1);
  TUTTI_CHECK_ARG(s.segmentCount >= 1, "segment of %llu elements",
                  static_cast<unsigned long long>(s.segmentCount));
  TUTTI_CHECK_ARG(s.count <= kMaxElements / static_cast<std::uint64_t>(s.size),
                  "%s: count %llu is too large (at most 2^56 elements over the %d ranks)", name,
                  static_cast<unsigned long long>(s.count), s.size);
  if (isRooted(s.kind))
    TUTTI_CHECK_ARG(s.root >= 0 && s.root < s.size,
                    "%s: root %d is not a rank of this %d-rank communicator", name, s.root,
                    s.size);
  switch (s.kind) {
    case Collective::kGatherV:
    case Collective::kAllGatherV:
      TUTTI_RETURN_IF_ERROR(checkArrays(s, s.counts, "recvcounts", &s.displs, "displs"));
      TUTTI_RETURN_IF_ERROR(checkDisjoint(s, s.counts, s.displs, "the receive buffer's"));
      break;
    case Collective::kScatterV:  // blocks that are only read may overlap
      TUTTI_RETURN_IF_ERROR(checkArrays(s, s.counts, "sendcounts", &s.displs, "displs"));
      break;
    case Collective::kReduceScatterV:
      TUTTI_RETURN_IF_ERROR(checkArrays(s, s.counts, "recvcounts", nullptr, nullptr));
      break;
    case Collective::kAllToAllV:
      return Status::Ok();  // its arrays are this rank's own (validateOwnArgs)
    default:
      break;
  }
  return checkBufferBytes(s, largestBufferCount(s));
}

Status validateOwnArgs(const CollectiveSpec& s) {
  if (s.kind == Collective::kSend || s.kind == Collective::kRecv) {
    TUTTI_CHECK_ARG(s.peer >= 0 && s.peer < s.size,
                    "%s: peer %d is not a rank of this %d-rank communicator",
                    collectiveName(s.kind), s.peer, s.size);
  }
  if (s.kind != Collective::kAllToAllV) return Status::Ok();
  TUTTI_RETURN_IF_ERROR(checkArrays(s, s.counts, "sendcounts", &s.displs, "sdispls"));
  TUTTI_RETURN_IF_ERROR(checkArrays(s, s.recvCounts, "recvcounts", &s.recvDispls, "rdispls"));
  TUTTI_RETURN_IF_ERROR(checkDisjoint(s, s.recvCounts, s.recvDispls, "the receive buffer's"));
  TUTTI_RETURN_IF_ERROR(validateInPlaceArgs(s));
  return checkBufferBytes(s, largestBufferCount(s));
}

Status validateInPlaceArgs(const CollectiveSpec& s) {
  TUTTI_CHECK_ARG(!s.inPlace || s.kind != Collective::kAllToAllV ||
                      (s.counts == s.recvCounts && s.displs == s.recvDispls),
                  "alltoallv in place needs the same counts and displacements for sending "
                  "and receiving");
  return Status::Ok();
}

Status validateSpec(const CollectiveSpec& s) {
  TUTTI_RETURN_IF_ERROR(validateSharedArgs(s));
  return validateOwnArgs(s);
}

std::uint64_t CallKey::bytes() const { return count * dataTypeSize(dtype); }

bool HostMap::even() const {
  for (const auto& ranks : ranksOf)
    if (ranks.size() != ranksOf.front().size()) return false;
  return true;
}

HostMap HostMap::fromLabels(const std::vector<int>& labels) {
  HostMap map;
  map.hostOf.resize(labels.size());
  map.localIndex.resize(labels.size());
  std::vector<int> seen;  // labels in order of first appearance
  for (std::size_t r = 0; r < labels.size(); ++r) {
    const auto it = std::find(seen.begin(), seen.end(), labels[r]);
    const int host = static_cast<int>(it - seen.begin());
    if (it == seen.end()) {
      seen.push_back(labels[r]);
      map.ranksOf.emplace_back();
    }
    map.hostOf[r] = host;
    map.localIndex[r] = static_cast<int>(map.ranksOf[static_cast<std::size_t>(host)].size());
    map.ranksOf[static_cast<std::size_t>(host)].push_back(static_cast<int>(r));
  }
  return map;
}

HostMap HostMap::blocks(const std::vector<int>& perHost) {
  std::vector<int> labels;
  for (std::size_t h = 0; h < perHost.size(); ++h)
    labels.insert(labels.end(), static_cast<std::size_t>(perHost[h]), static_cast<int>(h));
  return fromLabels(labels);
}

std::string HostMap::toString() const {
  std::string out = strFormat("%d host%s:", hostCount(), hostCount() == 1 ? "" : "s");
  for (std::size_t h = 0; h < ranksOf.size(); ++h) {
    const auto& ranks = ranksOf[h];
    if (ranksOf.size() > 6 && h == 3) {
      out += strFormat(" ... (%zu more)", ranksOf.size() - 6);
      h = ranksOf.size() - 4;  // the loop steps to the last three
      continue;
    }
    out += " {";
    for (std::size_t i = 0; i < ranks.size(); ++i)
      out += (i == 0 ? "" : ",") + std::to_string(ranks[i]);
    out += "}";
  }
  return out;
}

}  // namespace tutti
