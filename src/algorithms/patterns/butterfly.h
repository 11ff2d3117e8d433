#pragma once
// Butterfly rank maths for recursive doubling and recursive halving, with non-power-of-two
// worlds folded onto a power-of-two core. Pure and constexpr; unit-tested.
//
// Folding (the classic scheme of Thakur, Rabenseifner and Gropp, with the extra ranks at the
// top): p is the largest power of two <= n. Ranks 0..p-1 form the *core* and keep their
// numbers, so a schedule built for a world of p ranks runs unchanged on the core. Each
// *extra* rank e = p + i (0 <= i < n - p) is paired with core rank i: it hands its data to
// i before the butterfly and gets its result back from i after it.
//
//   n = 6, p = 4:   core 0 1 2 3      extra 4 -> 0, 5 -> 1
//
// Rounds: in round k (0 <= k < log2 p) recursive doubling pairs core rank r with r XOR 2^k;
// before that round r holds the data of the 2^k core ranks of its aligned group
// [r & ~(2^k - 1), +2^k), after it the 2^(k+1) ranks of the next larger group. Recursive
// halving runs the other way: in round k the partner is r XOR (p >> (k+1)), and r is
// responsible for the aligned range of p >> k core ranks containing it before the round,
// keeping the half that contains r.

namespace tutti::butterfly {

/// A half-open range of core ranks [begin, end).
struct RankRange {
  int begin = 0;
  int end = 0;
  constexpr bool operator==(const RankRange&) const = default;
};

/// The largest power of two <= size (size >= 1): the core of the fold.
constexpr int coreSize(int size) {
  int p = 1;
  while (p <= size / 2) p *= 2;
  return p;
}

/// log2 of coreSize(size): the number of butterfly rounds.
constexpr int rounds(int size) {
  int k = 0;
  while ((2 << k) <= size) ++k;
  return k;
}

/// True when rank is an extra rank, folded onto a core rank.
constexpr bool isExtra(int rank, int size) { return rank >= coreSize(size); }

/// The fold partner: for an extra rank the core rank it hands its data to, for a core rank
/// the extra rank folded onto it, or -1 when it has none.
constexpr int foldPartner(int rank, int size) {
  const int p = coreSize(size);
  if (rank >= p) return rank - p;
  return rank + p < size ? rank + p : -1;
}

/// Recursive doubling partner of core rank `rank` in round k: rank XOR 2^k.
constexpr int doublingPartner(int rank, int round) { return rank ^ (1 << round); }

/// The aligned group of core ranks whose data `rank` holds before recursive doubling round
/// k: [rank & ~(2^k - 1), + 2^k).
constexpr RankRange doublingHeld(int rank, int round) {
  const int begin = rank & ~((1 << round) - 1);
  return {begin, begin + (1 << round)};
}

/// Recursive halving partner in round k, for a core of p ranks: rank XOR (p >> (k+1)).
constexpr int halvingPartner(int rank, int core, int round) { return rank ^ (core >> (round + 1)); }

/// The aligned range of core ranks `rank` is responsible for before recursive halving round
/// k (p >> k of them); after the last round (k = log2 p) it is {rank} alone.
constexpr RankRange halvingRange(int rank, int core, int round) {
  const int width = core >> round;
  const int begin = rank & ~(width - 1);
  return {begin, begin + width};
}

}  // namespace tutti::butterfly
