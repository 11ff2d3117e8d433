#pragma once
// What the hierarchical algorithms share (DESIGN.md 4, Hierarchy): the groups of ranks a
// communicator's host map defines, the spec of a phase run by one group, and the building
// of that phase by the group's flat default algorithm, embedded into the world.
//
// Groups, for a map of H hosts where host h holds L_h ranks (uneven allowed):
//   host group of h      its ranks, ascending (the intra-host phases run there)
//   column c             one rank of every host: ranksOf[h][c % L_h]; for c < min L_h that
//                        is local rank c everywhere (the inter-host phases run there)
// Local rank i of host h serves every column c with c % L_h == i, so a host with fewer
// ranks than another serves several columns on some ranks.

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/block_layout.h"
#include "schedule/collective.h"
#include "schedule/compose.h"
#include "schedule/schedule.h"

namespace tutti {

/// Empty when `spec` carries a host map of its world with at least two hosts; otherwise
/// why a hierarchical algorithm does not apply.
std::string hierarchyUnsupported(const CollectiveSpec& spec);

/// True for the hierarchical entries of the registry (they apply only with a host map).
bool isHierarchical(const struct AlgorithmInfo& info);

/// This rank's place in the host map.
struct HostPlace {
  const HostMap* map = nullptr;
  int host = 0;   // this rank's host
  int local = 0;  // its index among the host's ranks

  explicit HostPlace(const CollectiveSpec& spec);
  int hosts() const { return map->hostCount(); }
  const std::vector<int>& ranksOf(int h) const { return map->ranksOf[static_cast<std::size_t>(h)]; }
  int localSize(int h) const { return static_cast<int>(ranksOf(h).size()); }
  /// The fewest and most ranks any host holds.
  int minLocal() const;
  int maxLocal() const;
  /// The rank leading host h in a rooted collective: the root on its own host, the first
  /// rank elsewhere.
  int leader(int h, int root) const {
    return h == map->hostOf[static_cast<std::size_t>(root)] ? root : ranksOf(h)[0];
  }
  /// The rank of host h serving column c.
  int columnRank(int h, int c) const { return ranksOf(h)[static_cast<std::size_t>(c % localSize(h))]; }
  /// Column c's ranks, host by host.
  std::vector<int> column(int c) const;
  /// The columns local rank j of host h serves: c < maxLocal() with c % L_h == j.
  std::vector<int> columnsServed(int h, int j) const;
  /// The ranks whose blocks local rank j of host h carries between the levels: for each
  /// column it serves (ascending), local rank c of every host that has one (host order).
  std::vector<int> blocksServed(int h, int j) const;
};

/// A phase run by `members` (global ranks, ascending or in the order the phase numbers
/// them) on member `index`: `whole`'s dtype, op and segment, the given kind, count and
/// placement, no host map, and `sharedMemory` as the group's links are.
CollectiveSpec groupSpec(const CollectiveSpec& whole, Collective kind, std::uint64_t count,
                         int groupSize, int index, bool inPlace, bool sharedMemory);

/// Builds `phase` (a group spec) with the flat algorithm tutti would choose for it by
/// default, for the group's member `phase.rank`, and embeds it into the world (compose.h).
Schedule buildGroupPhase(const CollectiveSpec& phase, const std::vector<int>& members,
                         int worldSize);

/// The world's ranks host by host (each host's in ascending order), where `spec` carries
/// a host map whose hosts are not already blocks of consecutive ranks; empty otherwise. A
/// flat ring built over this order crosses each host boundary once each way.
std::vector<int> ringOrderByHost(const CollectiveSpec& spec);

/// A schedule with no steps for `spec`'s rank and world.
Schedule emptySchedule(const CollectiveSpec& spec);

/// Index of `rank` in `members`, or -1.
int indexIn(const std::vector<int>& members, int rank);

/// How many pieces a pipelined hierarchical algorithm cuts `count` elements of `spec` into:
/// pieces of at least a segment, at most 4.
int pipelinePieces(const CollectiveSpec& spec, std::uint64_t count);

/// The phases of the piece [offset, offset + count) of a pipelined algorithm's vector.
using PieceBuilder = std::vector<Schedule> (*)(const CollectiveSpec& spec, const HostPlace& place,
                                               std::uint64_t offset, std::uint64_t count);

/// Cuts spec's vector into pipelinePieces() pieces, builds each with `piece` and assembles
/// them (assemblePipeline, with `sharedScratch`).
Schedule buildInPieces(const CollectiveSpec& spec, PieceBuilder piece,
                       std::uint64_t sharedScratch = 0);

/// Piece `piece` of `pieces` of every rank's block: rank q's block cut as partOffset and
/// partCount cut a vector (the pipelined all-gather and reduce-scatter cut each rank's
/// block, not the buffer, so that every piece has a part of every block).
RankBlocks blockPieces(const RankBlocks& blocks, std::uint64_t pieces, std::uint64_t piece);

/// `parts` (each empty or for spec's rank and world) as one schedule whose parts run side
/// by side, each with scratch of its own above the first `sharedScratch` elements: one phase
/// of a pipelined piece made of several groups' phases (a rank serving several columns).
Schedule sideBySide(const CollectiveSpec& spec, std::vector<Schedule> parts,
                    std::uint64_t sharedScratch = 0);

/// One rank's schedule from pieces that each run the same phases one after another
/// (pieces[p][k]: phase k of piece p, possibly empty on this rank): phase k of a piece
/// waits for its last non-empty phase before k, and the pieces overlap in waves (wave w
/// lays out phase w - p of piece p, earliest piece first), so that piece p + 1's first
/// phase runs while piece p's second does. Every rank lays out the same waves, so the
/// messages of a pair are numbered alike. The first `sharedScratch` elements of scratch are
/// what the phases hand on to each other (ScheduleAssembler); each phase's own scratch lies
/// above them.
Schedule assemblePipeline(const CollectiveSpec& spec, std::vector<std::vector<Schedule>> pieces,
                          std::uint64_t sharedScratch = 0);

}  // namespace tutti
