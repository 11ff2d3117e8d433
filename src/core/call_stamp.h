#pragma once
// Packing a collective call into the CallStamp its messages carry (mismatch detection,
// DESIGN.md 7), and naming the call a peer's stamp describes.
//
//   what  [63] set  [62] clear  [61:40] root (rooted collectives)  [39:24] algorithm id
//         [23:16] op (reductions)  [15:8] dtype  [7:0] collective
//   count the call's count; for gatherv/scatterv/allgatherv/reducescatterv a hash of the
//         counts and displacements (every rank must pass the same arrays); 0 for alltoallv,
//         whose counts differ by rank (its message lengths are checked instead)
//   open  0; the algorithm id's bits [39:24] before the algorithm is chosen
//         (stampBeforeChoice: those bits are then 0 in `what`)
//
// Fields that do not define the call are left out, so ranks that legitimately differ in
// them still agree: the op of a non-reduction, the root of an unrooted collective, the
// in-place flag.

#include <cstdint>
#include <optional>
#include <string>

#include "algorithms/algorithm.h"
#include "transport/link.h"

namespace tutti::detail {

/// The stamp of `spec` run with `algorithm` (a registry entry). Point to point: empty.
CallStamp stampFor(const CollectiveSpec& spec, const AlgorithmInfo& algorithm);
/// The stamp of `spec` before its algorithm is chosen: the algorithm id's bits are open
/// (CallStamp::open), so it conflicts only with stamps of another call.
CallStamp stampBeforeChoice(const CollectiveSpec& spec);

/// The call as CallDescriber::describe() words it ("allreduce #12 (count 1000 float32 sum,
/// ring)"), `seq` being the sequence number. Fields that are out of range (a peer built
/// from other sources) are shown as numbers.
std::string describeStamp(const CallStamp& stamp, std::uint64_t seq);

/// What a stamp carries of a call's per-rank counts and displacements (gatherv, scatterv,
/// allgatherv, reducescatterv), so that an error can name this rank's call as a peer's
/// stamp names the peer's; nullopt for other collectives.
std::optional<std::uint64_t> countArraysHash(const CollectiveSpec& spec);

}  // namespace tutti::detail
