#include "schedule/collective.h"

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

Status checkArrays(const CollectiveSpec& s, const std::vector<std::uint64_t>& counts,
                   const std::vector<std::uint64_t>* displs, const char* what) {
  TUTTI_CHECK_ARG(counts.size() == static_cast<std::size_t>(s.size),
                  "%s: %s has %zu entries for %d ranks", collectiveName(s.kind), what,
                  counts.size(), s.size);
  if (displs != nullptr)
    TUTTI_CHECK_ARG(displs->size() == counts.size(), "%s: %zu displacements for %zu counts",
                    collectiveName(s.kind), displs->size(), counts.size());
  std::uint64_t total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    TUTTI_CHECK_ARG(counts[i] <= kMaxElements, "%s: %s[%zu] = %llu is too large",
                    collectiveName(s.kind), what, i, static_cast<unsigned long long>(counts[i]));
    if (displs != nullptr)
      TUTTI_CHECK_ARG((*displs)[i] <= kMaxElements, "%s: displacement %zu is too large",
                      collectiveName(s.kind), i);
    total += counts[i];
  }
  TUTTI_CHECK_ARG(total <= kMaxElements, "%s: the %s add up to too many elements",
                  collectiveName(s.kind), what);
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

BufferLayout bufferLayout(const CollectiveSpec& s) {
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
    case Collective::kBarrier:
      break;
    case Collective::kSend:
      l.inputCount = s.count;
      break;
    case Collective::kRecv:
      l.outputCount = s.count;
      break;
  }
  return l;
}

Status validateSpec(const CollectiveSpec& s) {
  TUTTI_CHECK_ARG(s.size >= 1, "world size %d", s.size);
  TUTTI_CHECK_ARG(s.rank >= 0 && s.rank < s.size, "rank %d outside a world of %d", s.rank, s.size);
  TUTTI_CHECK_ARG(isValid(s.dtype), "unknown data type %d", static_cast<int>(s.dtype));
  TUTTI_CHECK_ARG(isValid(s.op), "unknown reduction operator %d", static_cast<int>(s.op));
  TUTTI_CHECK_ARG(s.segmentCount >= 1, "segment of %llu elements",
                  static_cast<unsigned long long>(s.segmentCount));
  TUTTI_CHECK_ARG(s.count <= kMaxElements / static_cast<std::uint64_t>(s.size),
                  "%s: count %llu is too large", collectiveName(s.kind),
                  static_cast<unsigned long long>(s.count));
  if (isRooted(s.kind))
    TUTTI_CHECK_ARG(s.root >= 0 && s.root < s.size, "%s: root %d is not a rank of this %d-rank communicator",
                    collectiveName(s.kind), s.root, s.size);
  if (s.kind == Collective::kSend || s.kind == Collective::kRecv)
    TUTTI_CHECK_ARG(s.peer >= 0 && s.peer < s.size && s.peer != s.rank,
                    "%s: peer %d is not another rank of this %d-rank communicator",
                    collectiveName(s.kind), s.peer, s.size);
  switch (s.kind) {
    case Collective::kGatherV:
    case Collective::kScatterV:
    case Collective::kAllGatherV:
      return checkArrays(s, s.counts, &s.displs, "counts");
    case Collective::kReduceScatterV:
      return checkArrays(s, s.counts, nullptr, "counts");
    case Collective::kAllToAllV:
      TUTTI_RETURN_IF_ERROR(checkArrays(s, s.counts, &s.displs, "send counts"));
      TUTTI_RETURN_IF_ERROR(checkArrays(s, s.recvCounts, &s.recvDispls, "receive counts"));
      TUTTI_CHECK_ARG(!s.inPlace || (s.counts == s.recvCounts && s.displs == s.recvDispls),
                      "alltoallv in place needs the same counts and displacements for sending "
                      "and receiving");
      return Status::Ok();
    default:
      return Status::Ok();
  }
}

}  // namespace tutti
