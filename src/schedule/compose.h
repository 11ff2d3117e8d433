#pragma once
// Composing schedules (DESIGN.md 3: "composite algorithms concatenate schedules"): an
// all-reduce is a reduce-scatter followed by an all-gather, a broadcast a scatter followed
// by an all-gather, each built by its own algorithm and joined here.

#include <cstdint>
#include <vector>

#include "schedule/schedule.h"

namespace tutti {

/// Returns `first` followed by `second`, for the same rank and world. Every step of
/// `second` that had no dependency now depends on every step of `first` that no other step
/// of `first` depends on (its sinks) — through one zero-length "join" copy when there are
/// several of each, to keep the dependency count linear — so `second` starts only when
/// `first` is done with its data. Message indices of `second` continue after `first`'s, per peer, so the two phases'
/// messages never match each other. Scratch space is the larger of the two.
Schedule concatenate(Schedule first, const Schedule& second);

/// Adds `offset` elements to every region of `schedule` that lies in `buffer`: runs an
/// algorithm built for a buffer of its own on a slice of a larger one.
void offsetRegions(Schedule& schedule, BufferKind buffer, std::uint64_t offset);

/// Makes every region of `schedule` in buffer `from` refer to buffer `to` instead (e.g. an
/// all-gather phase that must read the output of the phase before it).
void remapBuffer(Schedule& schedule, BufferKind from, BufferKind to);

/// Runs a schedule built for a group of the world's ranks: `sub` was built for rank
/// `sub.rank` of a world of members.size() ranks; the result is the same steps for global
/// rank members[sub.rank] of a world of `worldSize`, every peer p renamed members[p].
/// Message indices stay valid: the group's peers map one to one onto global ones.
Schedule embed(Schedule sub, const std::vector<int>& members, int worldSize);

/// Moves every scratch region of `schedule` `base` elements up (and its scratch count
/// with it), so that it leaves [0, base) of the scratch buffer to other parts.
void shiftScratch(Schedule& schedule, std::uint64_t base);

/// Clears every step's finalization: a phase that reduces part of the contributions (an
/// intra-host reduction before the inter-host one) must not finalize what later phases
/// reduce further.
void clearFinalize(Schedule& schedule);

/// Assembles one rank's schedule from parts run one after another or side by side (the
/// phases of a hierarchical algorithm, and the pieces that pipeline them). A part waits for
/// the parts it is added `after` — each of its dependency-free steps depends on their sinks
/// (steps no other step of their part depends on), through one zero-length join copy when
/// there are several of each — and otherwise runs alongside the others. Parts are laid out
/// in the order they are added, which is the order the executor issues their steps in, so
/// the order of adding decides how parts overlap (pipelined pieces are added in waves).
/// Messages are numbered per peer in that order: the ranks of a pair must add the parts
/// they share in the same order. Each part's scratch gets its own range, except the first
/// `sharedScratch` elements, which every part addresses alike (data one part leaves for a
/// later one; the caller orders the parts that use the same elements).
class ScheduleAssembler {
 public:
  using PartId = std::size_t;
  ScheduleAssembler(int rank, int size, std::uint64_t sharedScratch = 0);

  PartId add(Schedule part, const std::vector<PartId>& after = {});

  Schedule build() &&;

 private:
  PartId append(Schedule part, const std::vector<PartId>& after);

  Schedule schedule_;
  std::vector<std::uint32_t> sends_, recvs_;  // per peer: messages numbered so far
  std::vector<bool> isSink_;                  // per step of schedule_, within its part
  struct PartRange {
    StepId begin, end;
  };
  std::vector<PartRange> parts_;
  std::uint64_t shared_ = 0;
  std::uint64_t scratchEnd_ = 0;
};

}  // namespace tutti
