#include "bench/collectives.h"

#include "base/assert.h"
#include "base/strings.h"
#include "bench/data.h"

namespace tutti::bench {
namespace {

// ---- all-reduce: every rank ends with op over all ranks' inputs, index by index. Input
// and output have the same count, and in place they are the same buffer, so one
// expectation serves both placements.

void allReduceInput(void* input, const Counts& counts, const DataContext& context) {
  fillInput(input, counts.send, context.rank, context.nranks, context.dtype, context.op);
}

void allReduceExpected(void* expected, const Counts& counts, const DataContext& context) {
  fillExpectedAllReduce(expected, counts.recv, context.nranks, context.dtype, context.op);
}

Status allReduceRun(BenchComm& comm, const CallArgs& call, const std::string& algorithm) {
  return comm.allreduce(call.send, call.recv, call.count, call.dtype, call.op, algorithm);
}

// The table. A new collective is one more entry here: its fill and expectation functions
// (data.h has the value generator they share), a run function calling its BenchComm method,
// and nothing in the driver.
constexpr std::array<CollectiveEntry, 1> kTable{{
    {{"allreduce", "all_reduce", "all-reduce"},
     Collective::kAllReduce,
     /*reduces=*/true,
     /*rooted=*/false,
     allReduceInput,
     allReduceExpected,
     allReduceRun},
}};

}  // namespace

// nccl-tests' getCollByteCount rules: a row of `count` elements is the larger buffer of the
// call, and collectives that give each rank a slot of it round it down to n slots.
Counts collectiveCounts(Collective kind, std::size_t count, int nranks) {
  TUTTI_ASSERT_CMP(nranks, >=, 1);
  const auto n = static_cast<std::size_t>(nranks);
  const std::size_t perRank = count / n;
  switch (kind) {
    case Collective::kAllGather:
    case Collective::kGather:
    case Collective::kAllGatherV:
    case Collective::kGatherV:
      // Each rank contributes count / n; in place, its input is its slot of the output.
      return Counts{perRank, perRank * n, perRank, perRank, 0};
    case Collective::kReduceScatter:
    case Collective::kScatter:
    case Collective::kReduceScatterV:
    case Collective::kScatterV:
      // The input holds n slots of count / n; in place, each rank's output is its slot.
      return Counts{perRank * n, perRank, perRank, 0, perRank};
    case Collective::kAllToAll:
    case Collective::kAllToAllV:
      return Counts{perRank * n, perRank * n, perRank, 0, 0};
    case Collective::kBarrier:
      return Counts{};  // moves no data whatever the size
    case Collective::kAllReduce:
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSend:
    case Collective::kRecv:
      return Counts{count, count, count, 0, 0};
  }
  TUTTI_ASSERT(false);
  return Counts{};
}

std::size_t rowBytes(const Counts& counts, std::size_t typeSize) {
  return (counts.send > counts.recv ? counts.send : counts.recv) * typeSize;
}

double algorithmBytes(Collective kind, const Counts& counts, std::size_t typeSize, int nranks) {
  // In double: the product can pass 2^64 for large rank counts, and only a rate is wanted.
  const double perCall = static_cast<double>(counts.param) * static_cast<double>(typeSize);
  switch (kind) {
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
    case Collective::kGather:
    case Collective::kScatter:
    case Collective::kAllGatherV:
    case Collective::kReduceScatterV:
    case Collective::kAllToAllV:
    case Collective::kGatherV:
    case Collective::kScatterV:
      return perCall * nranks;
    case Collective::kBarrier:
      return 0;
    default:
      return perCall;
  }
}

double algorithmBandwidth(double bytes, double seconds) {
  return seconds > 0 ? bytes / seconds / 1e9 : 0.0;
}

// The factor turns algbw into the bandwidth each rank's link needed, so one number can be
// compared with the hardware's across rank counts (nccl-tests doc/PERFORMANCE.md).
double busBandwidthFactor(Collective kind, int nranks) {
  TUTTI_ASSERT_CMP(nranks, >=, 1);
  const double n = nranks;
  switch (kind) {
    case Collective::kAllReduce:
      // A reduce-scatter then an all-gather: each sends (n-1)/n of the data.
      return 2.0 * (n - 1) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
    case Collective::kGather:
    case Collective::kScatter:
    case Collective::kAllGatherV:
    case Collective::kReduceScatterV:
    case Collective::kAllToAllV:
    case Collective::kGatherV:
    case Collective::kScatterV:
      return (n - 1) / n;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSend:
    case Collective::kRecv:
      // All data leaves (or reaches) one rank, whose link is the bottleneck.
      return 1.0;
    case Collective::kBarrier:
      return 0.0;
  }
  TUTTI_ASSERT(false);
  return 0.0;
}

std::span<const CollectiveEntry> collectiveTable() { return kTable; }

Result<const CollectiveEntry*> findCollective(std::string_view name) {
  for (const CollectiveEntry& entry : kTable) {
    for (std::string_view candidate : entry.names) {
      if (!candidate.empty() && candidate == name) return &entry;
    }
  }
  return Status(ErrorCode::kInvalidArgument,
                strFormat("unknown collective '%.*s'; known collectives: %s",
                          static_cast<int>(name.size()), name.data(),
                          knownCollectives().c_str()));
}

std::string knownCollectives() {
  std::string out;
  for (const CollectiveEntry& entry : kTable) {
    if (!out.empty()) out += ", ";
    out += entry.name();
    std::string aliases;
    for (std::size_t i = 1; i < entry.names.size(); ++i) {
      if (entry.names[i].empty()) continue;
      if (!aliases.empty()) aliases += ", ";
      aliases += entry.names[i];
    }
    if (!aliases.empty()) out += " (" + aliases + ")";
  }
  return out;
}

}  // namespace tutti::bench
