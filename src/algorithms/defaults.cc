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
  int minRanks = 1;        // ... and at least this many
  bool sharedMemoryOnly = false;  // ... and only where every rank shares memory (one host)
  bool sharedBuffersOnly = false;  // ... and every rank's buffers come from memAlloc
  bool acrossHostsOnly = false;    // ... and only where the ranks span hosts (a host map)
};

// Order matters: the first applicable rule wins. Evidence: bench/algorithms_tcp.sh on this
// 2-core machine (4 and 8 ranks, oversubscribed, TCP loopback; medians of 3 runs), which
// favours few rounds; the rules for larger worlds follow the alpha-beta costs in each
// algorithm's header. `maxBytes` is what one rank contributes (for allgather and alltoall
// one block).
constexpr Rule kRules[] = {
    // Across hosts (the spec carries a host map of two or more hosts; elsewhere these
    // rules are skipped without asking the algorithms, so that one-host calls pay nothing
    // for them, and the ones below decide): the hierarchical algorithms, which
    // send each byte across a host's link once where flat ones cross host boundaries on
    // every step (DESIGN.md 4). All-reduce: reduce + broadcast through one leader per host
    // while one message per level is what counts, the reduce-scatter form above. The
    // threshold is the tuner's to refine (issue 39).
    {Collective::kAllReduce, 64 << 10, kAnyRanks, "hier_reduce_bcast", 1, false, false, true},
    {Collective::kAllReduce, kAny, kAnyRanks, "hier_rs_ag", 1, false, false, true},
    {Collective::kBroadcast, kAny, kAnyRanks, "hierarchical", 1, false, false, true},
    {Collective::kReduce, kAny, kAnyRanks, "hierarchical", 1, false, false, true},
    {Collective::kAllGather, kAny, kAnyRanks, "hierarchical", 1, false, false, true},
    {Collective::kAllGatherV, kAny, kAnyRanks, "hierarchical", 1, false, false, true},
    {Collective::kReduceScatter, kAny, kAnyRanks, "hierarchical", 1, false, false, true},
    {Collective::kReduceScatterV, kAny, kAnyRanks, "hierarchical", 1, false, false, true},
    {Collective::kGather, kAny, kAnyRanks, "hierarchical", 1, false, false, true},
    {Collective::kGatherV, kAny, kAnyRanks, "hierarchical", 1, false, false, true},
    {Collective::kScatter, kAny, kAnyRanks, "hierarchical", 1, false, false, true},
    {Collective::kScatterV, kAny, kAnyRanks, "hierarchical", 1, false, false, true},
    {Collective::kAllToAll, kAny, kAnyRanks, "hierarchical", 1, false, false, true},
    // all-reduce: log-round exchanges for small vectors (8 ranks, 1 KiB: recursive doubling
    // 275 us, reduce_bcast 339, ring 1126), reduce + broadcast in the middle (64 KiB:
    // 186/526 us vs ring 346/1075), bandwidth-optimal ones for large (4 MiB, 4 ranks: ring
    // 10.8 ms; 8 ranks: Rabenseifner 19.9 ms vs ring 27.0).
    // A few hundred bytes in 3 ranks: one round of direct sends, where recursive doubling
    // folds the third rank in and out (8 bytes, alternating runs of scripts/ab_latency.sh:
    // 0.81 and 0.87 of recursive doubling's time over shared memory, 0.78 over TCP). At 4
    // ranks on 2 cores direct was slower (1.03-1.06 over shared memory), at 8 more so
    // (1.10-1.17), and at 2 recursive doubling is one exchange with fewer steps.
    // Every rank on one host, up to 992 bytes (FlatSlot's room, shm/segment.h): direct's one
    // round carried by the flat exchange (FlatExchange::flatExchange: each rank writes its input
    // once, every rank reads every input in place). Alternating runs (scripts/ab_latency.sh,
    // 8 and 960 bytes, time against recursive doubling's): 2 ranks 0.59 and 0.90, 3 ranks
    // on 2 cores 0.62 (8 bytes), 4 ranks 0.52 and 0.60, 8 ranks 0.78 and 0.66; against
    // Open MPI in the same runs: 2 ranks 0.76, 4 ranks 0.56, 8 ranks 0.85 (8 bytes). Every
    // rank reads every other's line, so the rule stops at 32 ranks, past what was measured
    // (8) but where log2 n rounds still cost more than n reads issued together.
    {Collective::kAllReduce, 992, 32, "direct", 2, true},
    // Since the slots hold 8 KiB (kFlatBytes): alternating runs, time against the defaults
    // before (recursive doubling or the ring): 2 ranks 2 KiB 0.83, 4 KiB 0.98, 8 KiB 0.95;
    // 4 ranks 4 KiB 0.79, 8 KiB 0.74; 8 ranks 2 KiB 0.66, 8 KiB 0.78. Not measured past 8.
    {Collective::kAllReduce, 8 << 10, 8, "direct", 2, true},
    {Collective::kAllReduce, 256, 3, "direct", 3},
    {Collective::kAllReduce, 4096, kAnyRanks, "recursive_doubling"},
    // 2 and 4 ranks on one host, past the flat exchange: reduce + broadcast (a TCP-era
    // choice) sends the whole vector one way and back, where over shared memory both
    // directions copy at once. Alternating runs (scripts/ab_latency.sh -r 5..8, TUTTI_ALGO,
    // time against reduce_bcast's): 2 ranks 8 KiB recursive doubling 0.53 (ring 0.67),
    // 16 KiB 0.41 (ring 0.40), 32 KiB 0.62 (ring 0.65), 64 KiB ring 0.76 (recursive
    // doubling 0.81), 128 KiB ring 0.83 (Rabenseifner 0.78); 4 ranks on 2 cores, recursive
    // doubling: 8 KiB 0.77, 16 KiB 0.98, 32 KiB 0.91. At 8 ranks reduce + broadcast stays
    // ahead (16 KiB: recursive doubling 1.13, ring 2.80; 64 KiB: Rabenseifner 0.99).
    {Collective::kAllReduce, 32 << 10, 2, "recursive_doubling", 2, true},
    // On the AMD EPYC machine (1 MiB L2), bench/algorithms_shm.sh and then alternating
    // runs (scripts/ab_latency.sh -r 7, TUTTI_ALGO), time against the ring's: 2 ranks
    // Rabenseifner 1 MiB 1.00, 2 MiB 0.67-0.77, 4 MiB 0.63; past 1 MiB the ring's 512 KiB
    // segments and both directions' staging no longer fit the L2 where Rabenseifner's one
    // exchange of each half is read and reduced once.
    {Collective::kAllReduce, 1 << 20, 2, "ring", 2, true},
    // Between 1 and 4 MiB on 2 ranks, where the halves go through the rings (prefersCopy),
    // the direct pair (each half sent whole and reduced by its owner, then sent back) beats
    // Rabenseifner's segmented exchange of the same halves. Intel VM, alternating runs
    // (scripts/ab_latency.sh -s -r 9, TUTTI_ALGO), time against Rabenseifner's: 1 MiB 0.95
    // (the ring stays there), 1.5 MiB 0.87, 2 MiB 0.82, 3 MiB 0.80, 4 MiB 0.71-0.78;
    // past it, by rendezvous, 5 MiB 1.09, 6 MiB 0.93 then 1.04 (11 rounds), 8 MiB 1.05,
    // 16 MiB 0.97, 64 MiB 1.01. From memAlloc buffers level (2 MiB 1.00, 4 MiB 0.97). At
    // 4 ranks no such window (1 MiB 1.01, 2 MiB 0.87, 4 MiB 1.48). Not measured on AMD.
    {Collective::kAllReduce, 4 << 20, 2, "direct_rs_ag", 2, true},
    {Collective::kAllReduce, kAny, 2, "rabenseifner", 2, true},
    // 8 ranks on 2 cores (AMD EPYC, time against reduce + broadcast's): recursive doubling
    // 16 KiB 0.74, 32 KiB 0.83; at 64 KiB reduce + broadcast is ahead again (1.11).
    {Collective::kAllReduce, 32 << 10, 4, "recursive_doubling", 4, true},
    {Collective::kAllReduce, 32 << 10, 8, "recursive_doubling", 8, true},
    {Collective::kAllReduce, 128 << 10, kAnyRanks, "reduce_bcast"},
    // 3 to 8 ranks on one host whose buffers all come from memAlloc (agreed per call from
    // 1 MiB, FlatExchangeRunner::agreeOnBuffers): every rank reduces its chunk reading every peer's input in
    // place, then copies every other chunk from its owner. Alternating runs, memAlloc
    // buffers, time against the default's (ring): 4 ranks 1 MiB 0.69, 16 MiB 0.80, 64 MiB
    // 0.94; 8 ranks 1 MiB 0.55, 4 MiB 0.50, 16 MiB 0.67, 64 MiB 0.59; 2 ranks 1.12-1.18
    // (Rabenseifner already reads its half in place there).
    {Collective::kAllReduce, kAny, 8, "direct_rs_ag", 3, true, true},
    // 4 ranks on 2 cores from the heap (AMD EPYC, alternating runs, time against the
    // default before): Rabenseifner 256 KiB 0.81 (reduce + broadcast's 0.90), 512 KiB 0.95,
    // 1 MiB 0.78, 2 MiB 0.92; 4 MiB 1.08, where the ring stays.
    {Collective::kAllReduce, 2 << 20, 4, "rabenseifner", 4, true},
    // Two ranks above 4 MiB (one host: above 1 MiB, the rule further up; measured on the
    // Intel machine first, where the reduced half goes by rendezvous, comm_impl.cc's
    // prefersCopy): Rabenseifner is one exchange of each half, reduced as it is read, then
    // one of the results; the ring cuts the same into 512 KiB segments. Alternating runs
    // over shared memory (medians of 3-5): 64 MiB 22.0 ms against the ring's 24.6,
    // 256 MiB 85 against 118; 16 MiB level. The whole half in one message is what lets
    // the reduction stream its output (kernels_simd.h).
    {Collective::kAllReduce, 4 << 20, 4, "ring"},
    {Collective::kAllReduce, kAny, 2, "rabenseifner"},
    {Collective::kAllReduce, kAny, 4, "ring"},
    // More than 4 ranks on one host, above 2 MiB: the ring. Alternating runs over shared
    // memory, 8 ranks on 2 cores (scripts/ab_latency.sh -r 5, TUTTI_ALGO), Rabenseifner's
    // time over the ring's: 1 MiB 0.83, 4 MiB 1.21, 16 MiB 1.18, 64 MiB 1.58. Each ring step
    // moves one block to one neighbour; Rabenseifner's halving rounds move half the vector
    // to one partner and back, which oversubscribed cores copy at once. Over TCP the rules
    // above hold (4 MiB, 8 ranks: Rabenseifner 19.9 ms, ring 27.0).
    {Collective::kAllReduce, 2 << 20, kAnyRanks, "rabenseifner", 5, true},
    {Collective::kAllReduce, kAny, kAnyRanks, "ring", 5, true},
    {Collective::kAllReduce, kAny, kAnyRanks, "rabenseifner"},
    // all-gather: recursive doubling won at every size measured (8 ranks, 4 MiB: 8.7 ms vs
    // direct 10.2, ring 11.5); the pipelined ring takes over for very large blocks.
    // One host, blocks up to 992 bytes: the flat exchange, as for all-reduce (alternating
    // runs, time against recursive doubling's: 2 ranks 2 and 240-byte blocks 0.53 and 0.58,
    // 4 ranks 60-byte blocks 0.62, 8 ranks 120-byte blocks 0.52).
    {Collective::kAllGather, 992, 32, "direct", 2, true},
    // Blocks up to 8 KiB (kFlatBytes), against recursive doubling: 2 ranks 2 KiB blocks
    // 0.82, 4 KiB 0.73; 4 ranks 4 KiB 0.71, 8 KiB 0.83; 8 ranks 2 KiB 0.69, 8 KiB 0.55.
    {Collective::kAllGather, 8 << 10, 8, "direct", 2, true},
    {Collective::kAllGather, 4 << 20, kAnyRanks, "recursive_doubling"},
    // Two ranks sharing memory: one exchange of the whole block, read in place, beats the
    // ring's 512 KiB segments at every size (alternating, time over the ring's: 16 MiB
    // 0.95, 64 MiB 0.91, 256 MiB 0.86); over TCP the ring's pipelining wins (64 MiB: 1.19).
    {Collective::kAllGather, kAny, 2, "recursive_doubling", 2, true},
    {Collective::kAllGather, kAny, kAnyRanks, "ring"},
    // allgatherv on one host, up to 8 KiB in all (so every block fits the flat slot, however
    // the counts are spread): the flat exchange, each rank publishing its own block. Equal
    // float blocks, alternating runs, time against recursive doubling's (medians of 3):
    // 2 ranks 64 B and 1 KiB blocks 0.59 and 0.62; 4 ranks 64 B 0.96, 1 KiB 0.66; 8 ranks
    // 64 B 0.81, 1 KiB 0.63.
    {Collective::kAllGatherV, 8 << 10, 8, "direct", 2, true},
    {Collective::kAllGatherV, 4 << 20, kAnyRanks, "recursive_doubling"},
    {Collective::kAllGatherV, kAny, 2, "recursive_doubling", 2, true},
    {Collective::kAllGatherV, kAny, kAnyRanks, "ring"},
    // reduce-scatter: recursive halving won at every size (8 ranks: 256 us, 506 us, 14.5 ms).
    // One host, while every rank's whole input fits a flat slot (kFlatBytes: blocks of 4 KiB
    // at 2 ranks, 2 KiB at 3-4, 1 KiB at 5-8): direct as a flat exchange, each rank reducing
    // its block of every rank's published input (alternating runs, time against recursive
    // halving, per rank's input: 2 ranks 64 B 0.66, 1 KiB 0.76, 8 KiB 0.71; 4 ranks 256 B
    // 0.61, 1 KiB 0.68, 8 KiB 0.72; 8 ranks 1 KiB 0.80, 8 KiB 0.79).
    {Collective::kReduceScatter, 4 << 10, 2, "direct", 2, true},
    {Collective::kReduceScatter, 2 << 10, 4, "direct", 3, true},
    {Collective::kReduceScatter, 1 << 10, 8, "direct", 5, true},
    {Collective::kReduceScatter, kAny, kAnyRanks, "recursive_halving"},
    // reduce-scatterv sizes are the whole input (the sum of the counts): flat while it fits
    // the slot (alternating runs, uneven blocks, time against recursive halving: 2 ranks
    // 64 B 0.62, 1 KiB 0.58, 8 KiB 0.72; 4 ranks 0.57, 0.68, 0.99; 8 ranks 0.61, 0.65, 0.67).
    {Collective::kReduceScatterV, 8 << 10, 8, "direct", 2, true},
    {Collective::kReduceScatterV, kAny, kAnyRanks, "recursive_halving"},
    // Rooted collectives: in small worlds the root talking to everyone directly is as fast
    // or faster (8 ranks: broadcast 1 KiB direct 46 us, binomial 84); trees for larger
    // worlds, the pipelined double binary tree for large broadcasts, and the binomial
    // reduce/gather once the root's link is the bottleneck (reduce 4 MiB: 7.7 vs 14.5 ms).
    // scatter_allgather (van de Geijn) is no default: on this machine it never beat these
    // (8 ranks, 16 MiB, medians of 3: 43.8 ms against direct 46.7, binomial 47.8, double
    // binary tree 52.1, all within run-to-run noise; 64 KiB: 636 us against binomial 123),
    // and where links rather than cores bound it, the double binary tree's root also
    // sends only N with log n latency instead of n - 1.
    {Collective::kBroadcast, kAny, 8, "direct"},
    {Collective::kBroadcast, 64 << 10, kAnyRanks, "binomial"},
    {Collective::kBroadcast, kAny, kAnyRanks, "double_binary_tree"},
    // One host, 4 to 8 ranks on 2 cores: the binomial tree spreads the reductions over the
    // ranks where the direct root reduces every input itself (AMD EPYC, alternating runs,
    // time against direct's: 4 ranks 1 KiB 0.96, 16 KiB 0.30, 64 KiB 0.32; 8 ranks 0.67,
    // 0.27, 0.24; 3 ranks 16 KiB 1.02).
    {Collective::kReduce, kAny, 8, "binomial", 4, true},
    {Collective::kReduce, 64 << 10, 8, "direct"},
    {Collective::kReduce, kAny, kAnyRanks, "binomial"},
    {Collective::kGather, 1 << 20, 8, "direct"},
    {Collective::kGather, kAny, kAnyRanks, "binomial"},
    {Collective::kGatherV, 1 << 20, 8, "direct"},
    {Collective::kGatherV, kAny, kAnyRanks, "binomial"},
    {Collective::kScatter, kAny, 8, "direct"},
    {Collective::kScatter, kAny, kAnyRanks, "binomial"},
    {Collective::kScatterV, kAny, 8, "direct"},
    {Collective::kScatterV, kAny, kAnyRanks, "binomial"},
    // all-to-all: Bruck's log n rounds for small blocks (8 ranks, 128 B blocks: 315 us vs
    // direct 457), pairwise exchange for large (4 MiB: 10.4 ms vs Bruck 30.4).
    // One host, 4 to 8 ranks on 2 cores: every block posted at once, where Bruck's and the
    // pairwise rounds each wait for a peer to be scheduled (AMD EPYC, alternating runs,
    // time against the default before, per block): 4 ranks 16 B 0.75, 512 B 0.60, 8 KiB
    // 0.84, 64 KiB 0.82, 128 KiB 0.95, 1 MiB 1.17; 8 ranks 8 B 0.60, 64 B 0.69, 128 B 0.63,
    // 8 KiB 0.56, 64 KiB 0.75, 128 KiB 1.02, 512 KiB 1.08. Two ranks: level (0.87-1.10).
    // Up to kFlatBytes of send buffer per rank the direct exchange is flat (every rank
    // publishes its send buffer, each takes its block of every other): 2 ranks, against the
    // default before (Bruck, pairwise), 16 B blocks 0.52, 512 B 0.42, 4 KiB 0.63; 4 and 8
    // ranks, against direct by messages, 0.83-0.93 and 0.70 (8 ranks, 128 B blocks); 3
    // ranks, against Bruck and pairwise, 16 B blocks 0.45, 256 B 0.48, 2 KiB 0.88.
    {Collective::kAllToAll, 4 << 10, 2, "direct", 2, true},
    {Collective::kAllToAll, 2 << 10, 3, "direct", 3, true},
    {Collective::kAllToAll, 64 << 10, 8, "direct", 4, true},
    {Collective::kAllToAll, 512, kAnyRanks, "bruck"},
    {Collective::kAllToAll, kAny, kAnyRanks, "pairwise"},
    {Collective::kAllToAllV, kAny, kAnyRanks, "pairwise"},
    // One host: a flat exchange of nothing (against dissemination: 2 ranks 0.74, 4 on 2
    // cores 0.59, 8 on 2 cores 0.51).
    {Collective::kBarrier, kAny, 32, "direct", 2, true},
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
  const bool acrossHosts = spec.hosts != nullptr && spec.hosts->hostCount() > 1;
  for (const Rule& rule : kRules) {
    if (rule.kind != spec.kind || bytes > rule.maxBytes || spec.size > rule.maxRanks ||
        spec.size < rule.minRanks || (rule.sharedMemoryOnly && !spec.sharedMemory) ||
        (rule.sharedBuffersOnly && !spec.sharedBuffers) || (rule.acrossHostsOnly && !acrossHosts))
      continue;
    if (const AlgorithmInfo* info = findApplicable(spec, rule.algorithm)) return info;
  }
  for (const AlgorithmInfo& info : algorithmRegistry()) {
    if (info.kind == spec.kind && info.unsupportedReason(spec).empty()) return &info;
  }
  return nullptr;
}

}  // namespace tutti
