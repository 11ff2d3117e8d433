#pragma once
// Algorithms are pure functions from a CollectiveSpec to one rank's Schedule (DESIGN.md 3).
// They do no I/O. Each lives in its own file, opening with its cost and a diagram, and is
// listed in the explicit table of registry.cc.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "schedule/collective.h"
#include "schedule/schedule.h"
#include "tutti/status.h"
#include "tutti/types.h"

namespace tutti {

struct AlgorithmInfo {
  const char* name;
  Collective kind;
  /// One line on what the algorithm does (`tutti-info algorithms` lists them).
  const char* summary;
  /// Empty when the algorithm applies to `spec`; otherwise why not.
  std::string (*unsupportedReason)(const CollectiveSpec& spec);
  Schedule (*build)(const CollectiveSpec& spec);
  /// Set where the schedule is one round in which every rank sends its whole contribution
  /// to every rank that needs it, so that a transport's flat exchange
  /// (FlatExchange::flatExchange) can carry the round instead of messages: the bytes of this
  /// rank's contribution (read from the input), and this rank's output computed from every
  /// rank's contribution (indexed by rank) exactly as the schedule computes it, operands in
  /// the same order, so the same bits.
  /// Where contributions differ in size between ranks (allgatherv), flatBytes is the
  /// largest of them, the same on every rank (it decides whether the call fits the flat
  /// exchange), and flatRankBytes gives rank `rank`'s; null: every rank's is flatBytes.
  std::size_t (*flatBytes)(const CollectiveSpec& spec) = nullptr;
  void (*flatFinish)(const CollectiveSpec& spec, const char* const* contributions,
                     void* output) = nullptr;
  std::size_t (*flatRankBytes)(const CollectiveSpec& spec, int rank) = nullptr;
};

/// Every algorithm, grouped by collective.
const std::vector<AlgorithmInfo>& algorithmRegistry();

/// The algorithm tutti runs for `spec` when none is forced (defaults.cc's rule table),
/// or nullptr when none applies.
const AlgorithmInfo* defaultAlgorithm(const CollectiveSpec& spec);

/// The algorithm named `forced` (when not empty), else the default for the call. An unknown
/// name, or one that does not apply, is kInvalidArgument listing the names that do.
Result<const AlgorithmInfo*> selectAlgorithm(const CollectiveSpec& spec, std::string_view forced);

/// A forced choice as written: an algorithm's name, optionally with the segment its pipeline
/// runs at, "ring@256K" (bytes, with an optional K, M or G suffix).
struct ForcedChoice {
  std::string_view algorithm;
  /// 0: none given (the tuner's best segment for the algorithm, or the communicator's).
  std::uint64_t segmentBytes = 0;
};

/// Splits `forced` at its '@'. kInvalidArgument, quoting `forced`, for a segment that is not
/// a size from 1 byte to 1 GiB, or a name missing before the '@'.
Result<ForcedChoice> parseForcedChoice(std::string_view forced);

/// Parses TUTTI_ALGO-style overrides, "allreduce:ring,bcast:binomial" (collective names as
/// parseCollective() accepts them), into one algorithm name per collective. Names are not
/// checked here (a name that does not apply to a call is an error of that call); a segment
/// forced with one (NAME@SEGMENT) is.
Result<std::vector<std::pair<Collective, std::string>>> parseAlgorithmOverrides(std::string_view text);

// The builders, one per algorithm file.
Schedule buildDirect(const CollectiveSpec& spec);  // every collective (direct.cc)
// direct.cc's one-round all-reduce, all-gather(v), all-to-all, reduce-scatter(v) and
// barrier, carried by a flat exchange (direct_flat.cc).
std::size_t flatBytesDirect(const CollectiveSpec& spec);
void flatFinishDirect(const CollectiveSpec& spec, const char* const* contributions, void* output);
std::size_t flatRankBytesDirect(const CollectiveSpec& spec, int rank);
Schedule buildAllreduceRing(const CollectiveSpec& spec);
// Hierarchical algorithms (hierarchy.h): allreduce_hierarchical.cc, ...
Schedule buildAllreduceHierRsAg(const CollectiveSpec& spec);
Schedule buildAllreduceHierReduceBcast(const CollectiveSpec& spec);
Schedule buildBroadcastHierarchical(const CollectiveSpec& spec);
Schedule buildReduceHierarchical(const CollectiveSpec& spec);
Schedule buildAllgatherHierarchical(const CollectiveSpec& spec);  // allgather and allgatherv
Schedule buildReducescatterHierarchical(const CollectiveSpec& spec);  // and reducescatterv
Schedule buildGatherHierarchical(const CollectiveSpec& spec);   // gather and gatherv
Schedule buildScatterHierarchical(const CollectiveSpec& spec);  // scatter and scatterv
Schedule buildAlltoallHierarchical(const CollectiveSpec& spec);
// Rings and butterflies (allgather_ring.cc, reducescatter_ring.cc, allreduce_rs_ag.cc,
// allreduce_recursive_doubling.cc, allgather_recursive_doubling.cc,
// reducescatter_recursive_halving.cc, allreduce_rabenseifner.cc). The allgather builders
// take allgather and allgatherv, the reducescatter builders reducescatter and
// reducescatterv.
Schedule buildAllgatherRing(const CollectiveSpec& spec);
Schedule buildReducescatterRing(const CollectiveSpec& spec);
Schedule buildAllreduceRsAg(const CollectiveSpec& spec);
Schedule buildAllreduceDirectRsAg(const CollectiveSpec& spec);  // allreduce_rs_ag.cc
Schedule buildAllreduceRecursiveDoubling(const CollectiveSpec& spec);
Schedule buildAllgatherRecursiveDoubling(const CollectiveSpec& spec);
Schedule buildReducescatterRecursiveHalving(const CollectiveSpec& spec);
Schedule buildAllreduceRabenseifner(const CollectiveSpec& spec);
// All-to-all and Bruck (alltoall_pairwise.cc takes alltoall and alltoallv).
Schedule buildAllgatherBruck(const CollectiveSpec& spec);
Schedule buildAlltoallPairwise(const CollectiveSpec& spec);
Schedule buildAlltoallBruck(const CollectiveSpec& spec);
Schedule buildBarrierDissemination(const CollectiveSpec& spec);
Schedule buildSendDirect(const CollectiveSpec& spec);
Schedule buildRecvDirect(const CollectiveSpec& spec);
// Trees (binomial, double binary tree) and the compositions built from them.
Schedule buildBroadcastBinomial(const CollectiveSpec& spec);
Schedule buildReduceBinomial(const CollectiveSpec& spec);
Schedule buildGatherBinomial(const CollectiveSpec& spec);   // gather and gatherv
Schedule buildScatterBinomial(const CollectiveSpec& spec);  // scatter and scatterv
Schedule buildBroadcastDoubleBinaryTree(const CollectiveSpec& spec);
Schedule buildAllreduceDoubleBinaryTree(const CollectiveSpec& spec);
Schedule buildAllreduceReduceBcast(const CollectiveSpec& spec);
Schedule buildBroadcastScatterAllgather(const CollectiveSpec& spec);

}  // namespace tutti
