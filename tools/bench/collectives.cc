#include "bench/collectives.h"

#include "base/assert.h"
#include "base/macros.h"
#include "base/strings.h"
#include "bench/data.h"

namespace tutti::bench {
namespace {

// Every entry's functions follow the definitions in schedule/collective.h, with n ranks,
// rank q and k = counts.param. Reductions take data.h's exact inputs for their operator;
// data movement takes movementValue(), so every output element names the rank and index it
// came from. In place, an output that lies over the input needs no separate expectation:
// the definitions give the same result.

std::size_t rankIndex(int rank) { return static_cast<std::size_t>(rank); }

unsigned char* block(void* buffer, std::size_t index, std::size_t count, DataType dtype) {
  return static_cast<unsigned char*>(buffer) + index * count * dataTypeSize(dtype);
}

// ---- reductions

void reductionInput(void* input, const Counts& counts, const DataContext& c) {
  fillInput(input, counts.send, c.rank, c.nranks, c.dtype, c.op);
}

// allreduce: out_q[j] = op_r in_r[j].
std::size_t allReduceExpected(void* expected, const Counts& counts, const DataContext& c) {
  fillExpectedAllReduce(expected, counts.recv, c.nranks, c.dtype, c.op);
  return counts.recv;
}

Status allReduceRun(BenchComm& comm, const CallArgs& call, const std::string& algorithm) {
  return comm.allreduce(call.send, call.recv, call.count, call.dtype, call.op, algorithm);
}

// reduce: out_root[j] = op_r in_r[j]; other ranks' outputs are unspecified.
std::size_t reduceExpected(void* expected, const Counts& counts, const DataContext& c) {
  if (c.rank != c.root) return 0;
  fillExpectedAllReduce(expected, counts.recv, c.nranks, c.dtype, c.op);
  return counts.recv;
}

Status reduceRun(BenchComm& comm, const CallArgs& call, const std::string& algorithm) {
  return comm.reduce(call.send, call.recv, call.count, call.dtype, call.op, call.root,
                     algorithm);
}

// reducescatter: out_q[j] = op_r in_r[q*k + j].
std::size_t reduceScatterExpected(void* expected, const Counts& counts, const DataContext& c) {
  fillExpectedAllReduce(expected, counts.recv, c.nranks, c.dtype, c.op,
                        rankIndex(c.rank) * counts.param);
  return counts.recv;
}

Status reduceScatterRun(BenchComm& comm, const CallArgs& call, const std::string& algorithm) {
  return comm.reduceScatter(call.send, call.recv, call.count, call.dtype, call.op, algorithm);
}

// ---- data movement

void movementInput(void* input, const Counts& counts, const DataContext& c) {
  fillMovement(input, counts.send, c.dtype, c.rank, 0, c.nranks);
}

// broadcast: out_q[j] = in_root[j].
std::size_t broadcastExpected(void* expected, const Counts& counts, const DataContext& c) {
  fillMovement(expected, counts.recv, c.dtype, c.root, 0, c.nranks);
  return counts.recv;
}

Status broadcastRun(BenchComm& comm, const CallArgs& call, const std::string& algorithm) {
  return comm.broadcast(call.send, call.recv, call.count, call.dtype, call.root, algorithm);
}

// Block b of a gathered buffer is rank b's input.
void fillGathered(void* expected, const Counts& counts, const DataContext& c) {
  for (int b = 0; b < c.nranks; ++b) {
    fillMovement(block(expected, rankIndex(b), counts.param, c.dtype), counts.param, c.dtype, b,
                 0, c.nranks);
  }
}

// allgather: out_q[b*k + j] = in_b[j].
std::size_t allGatherExpected(void* expected, const Counts& counts, const DataContext& c) {
  fillGathered(expected, counts, c);
  return counts.recv;
}

Status allGatherRun(BenchComm& comm, const CallArgs& call, const std::string& algorithm) {
  return comm.allgather(call.send, call.recv, call.count, call.dtype, algorithm);
}

// gather: out_root[b*k + j] = in_b[j]; other ranks' outputs are unspecified.
std::size_t gatherExpected(void* expected, const Counts& counts, const DataContext& c) {
  if (c.rank != c.root) return 0;
  fillGathered(expected, counts, c);
  return counts.recv;
}

Status gatherRun(BenchComm& comm, const CallArgs& call, const std::string& algorithm) {
  return comm.gather(call.send, call.recv, call.count, call.dtype, call.root, algorithm);
}

// scatter: out_q[j] = in_root[q*k + j].
std::size_t scatterExpected(void* expected, const Counts& counts, const DataContext& c) {
  fillMovement(expected, counts.recv, c.dtype, c.root, rankIndex(c.rank) * counts.param,
               c.nranks);
  return counts.recv;
}

Status scatterRun(BenchComm& comm, const CallArgs& call, const std::string& algorithm) {
  return comm.scatter(call.send, call.recv, call.count, call.dtype, call.root, algorithm);
}

// alltoall: out_q[b*k + j] = in_b[q*k + j].
std::size_t allToAllExpected(void* expected, const Counts& counts, const DataContext& c) {
  for (int b = 0; b < c.nranks; ++b) {
    fillMovement(block(expected, rankIndex(b), counts.param, c.dtype), counts.param, c.dtype, b,
                 rankIndex(c.rank) * counts.param, c.nranks);
  }
  return counts.recv;
}

Status allToAllRun(BenchComm& comm, const CallArgs& call, const std::string& algorithm) {
  return comm.alltoall(call.send, call.recv, call.count, call.dtype, algorithm);
}

// sendrecv (nccl-tests'): every rank sends to q+1 and receives from q-1, so
// out_q[j] = in_{q-1}[j]; one rank sends to itself.
int previousRank(const DataContext& c) { return (c.rank + c.nranks - 1) % c.nranks; }

std::size_t sendRecvExpected(void* expected, const Counts& counts, const DataContext& c) {
  fillMovement(expected, counts.recv, c.dtype, previousRank(c), 0, c.nranks);
  return counts.recv;
}

Status sendRecvRun(BenchComm& comm, const CallArgs& call, const std::string& algorithm) {
  const int next = (comm.rank() + 1) % comm.size();
  const int previous = (comm.rank() + comm.size() - 1) % comm.size();
  return comm.sendRecv(call.send, call.recv, call.count, call.dtype, next, previous, algorithm);
}

// ---- barrier: no data, nothing to check beyond the call's status.

void noInput(void*, const Counts&, const DataContext&) {}

std::size_t nothingExpected(void*, const Counts&, const DataContext&) { return 0; }

Status barrierRun(BenchComm& comm, const CallArgs&, const std::string& algorithm) {
  return comm.barrier(algorithm);
}

// The table, in the order "all" runs it. A new collective is one more entry here: its fill
// and expectation functions (data.h has the value generators they share), a run function
// calling its BenchComm method, and nothing in the driver.
//                                       reduces rooted sized  inPlace
constexpr std::array<CollectiveEntry, 10> kTable{{
    {{"allreduce", "all_reduce", "all-reduce"}, Collective::kAllReduce,
     true, false, true, true, reductionInput, allReduceExpected, allReduceRun},
    {{"allgather", "all_gather", "all-gather"}, Collective::kAllGather,
     false, false, true, true, movementInput, allGatherExpected, allGatherRun},
    {{"reducescatter", "reduce_scatter", "reduce-scatter"}, Collective::kReduceScatter,
     true, false, true, true, reductionInput, reduceScatterExpected, reduceScatterRun},
    {{"broadcast", "bcast", ""}, Collective::kBroadcast,
     false, true, true, true, movementInput, broadcastExpected, broadcastRun},
    {{"reduce", "", ""}, Collective::kReduce,
     true, true, true, true, reductionInput, reduceExpected, reduceRun},
    {{"gather", "", ""}, Collective::kGather,
     false, true, true, true, movementInput, gatherExpected, gatherRun},
    {{"scatter", "", ""}, Collective::kScatter,
     false, true, true, true, movementInput, scatterExpected, scatterRun},
    {{"alltoall", "all_to_all", "all-to-all"}, Collective::kAllToAll,
     false, false, true, true, movementInput, allToAllExpected, allToAllRun},
    {{"sendrecv", "send_recv", "send-recv"}, Collective::kSend,
     false, false, true, false, movementInput, sendRecvExpected, sendRecvRun},
    {{"barrier", "", ""}, Collective::kBarrier,
     false, false, false, false, noInput, nothingExpected, barrierRun},
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
                strFormat("unknown collective '%.*s'; known collectives: %s, or all",
                          static_cast<int>(name.size()), name.data(),
                          knownCollectives().c_str()));
}

Result<std::vector<const CollectiveEntry*>> selectCollectives(std::string_view name) {
  std::vector<const CollectiveEntry*> out;
  if (name == "all") {
    for (const CollectiveEntry& entry : kTable) out.push_back(&entry);
    return out;
  }
  TUTTI_ASSIGN_OR_RETURN(const CollectiveEntry* entry, findCollective(name));
  out.push_back(entry);
  return out;
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
