#pragma once
// Composing schedules (DESIGN.md 3: "composite algorithms concatenate schedules"): an
// all-reduce is a reduce-scatter followed by an all-gather, a broadcast a scatter followed
// by an all-gather, each built by its own algorithm and joined here.

#include <cstdint>

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

}  // namespace tutti
