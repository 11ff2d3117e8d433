#pragma once
// Tags: 64-bit message labels that keep concurrent operations from matching each other's
// messages (Gloo's Slot idea). Layout, most significant bits first:
//
//   collective:  [63:62]=0  [61:48] comm id  [47:24] operation sequence  [23:0] message index
//   p2p:         [63:62]=1  [61:48] comm id  [47:16] user tag            [15:0] zero
//   setup:       [63:62]=2  [61:0] index
//
// The message index is the k-th message between an ordered pair of ranks within one
// operation; schedules assign it so that sender and receiver agree (see schedule.h). The
// last index, kProbeIndex, marks a probe (probeTag). Sequences wrap after 2^24 operations,
// far longer than any message can stay pending.

#include <cstdint>

namespace tutti {

using Tag = std::uint64_t;

inline constexpr std::uint32_t kMaxCommId = (1u << 14) - 1;
inline constexpr std::uint32_t kMaxMessageIndex = (1u << 24) - 1;

/// Base tag of collective operation `seq` on communicator `commId`; add the message index.
constexpr Tag collectiveTagBase(std::uint32_t commId, std::uint64_t seq) {
  return (static_cast<Tag>(commId & kMaxCommId) << 48) | ((seq & 0xffffffu) << 24);
}

/// The message index of a probe: above any a schedule assigns.
inline constexpr std::uint32_t kProbeIndex = kMaxMessageIndex;

/// The first message index of what the ranks exchange to agree on something before a
/// call's own messages (core/call_runner.h, CallRunner::agree): far above any index a
/// schedule assigns, below kProbeIndex.
inline constexpr std::uint32_t kAgreementIndex = kMaxMessageIndex - (1u << 16);

/// Tag of a probe: an empty message by which a rank that has waited long in collective
/// call `seq` tells a peer it waits for which call it is in (the message's stamp). No
/// receive ever matches it: the peer's link checks the stamp against the peer's own call of
/// that number (CallChecker::onArrival) and drops it. Two ranks that wait on each other in
/// calls that differ only in their roots learn so at once, where no message of either
/// call would ever cross.
constexpr Tag probeTag(std::uint32_t commId, std::uint64_t seq) {
  return collectiveTagBase(commId, seq) + kProbeIndex;
}

/// Tag of a point-to-point message with user tag `userTag` (non-negative int).
constexpr Tag p2pTag(std::uint32_t commId, std::uint32_t userTag) {
  return (Tag{1} << 62) | (static_cast<Tag>(commId & kMaxCommId) << 48) |
         (static_cast<Tag>(userTag) << 16);
}

/// Tag of message `index` of what a communicator's creation exchanges on its own transport
/// before its first call (the network probe, tuning/probe_network.h): apart from every
/// collective and point-to-point tag, and every such message is received before creation
/// ends.
constexpr Tag setupTag(std::uint32_t index) { return (Tag{2} << 62) | index; }

/// True for the tags p2pTag() makes.
constexpr bool isP2pTag(Tag tag) { return (tag >> 62) == 1; }

/// True for the tags of a collective call's messages (collectiveTagBase, probeTag): not a
/// point-to-point message's, nor one of creation's (setupTag).
constexpr bool isCollectiveTag(Tag tag) { return (tag >> 62) == 0; }

/// True for the tags probeTag() makes.
constexpr bool isProbeTag(Tag tag) {
  return isCollectiveTag(tag) && (tag & kMaxMessageIndex) == kProbeIndex;
}

/// True when collective tags `earlier` and `later` belong to two operations of one
/// communicator and `earlier`'s was issued first (sequences compared modulo their wrap).
constexpr bool isEarlierCall(Tag earlier, Tag later) {
  if (!isCollectiveTag(earlier) || !isCollectiveTag(later) || (earlier >> 48) != (later >> 48))
    return false;
  const std::uint64_t ahead = ((later >> 24) - (earlier >> 24)) & 0xffffffu;
  return ahead != 0 && ahead < (1u << 23);
}

}  // namespace tutti
