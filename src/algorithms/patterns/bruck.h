#pragma once
// Rank maths of Bruck's algorithms (Bruck, Ho, Kipnis, Upfal, Weathersby, "Efficient
// algorithms for all-to-all communications in multiport message-passing systems", 1997):
// ceil(log2 n) rounds for any n, round k at distance 2^k. Pure and constexpr; the
// algorithm files (allgather_bruck.cc, alltoall_bruck.cc) turn these into steps.
//
// Both algorithms work on a *staging array* of n slots per rank, indexed relative to the
// rank, so that every rank runs the same pattern shifted by its own rank:
//
//   allgather: slot i of rank r holds block (r + i) mod n. Before round k the rank holds
//              slots [0, 2^k); in round k it sends slots [0, b_k) to r - 2^k and receives
//              r + 2^k's slots [0, b_k) into its slots [2^k, 2^k + b_k), with
//              b_k = min(2^k, n - 2^k). After the last round it holds [0, n).
//   alltoall:  slot i of rank r first holds the block r sends to (r + i) mod n. In round k
//              every slot whose index has bit k set moves to rank r + 2^k, into the same
//              slot. A block that starts at rank s in slot i therefore travels the binary
//              digits of i and ends at rank s + i, still in slot i: afterwards slot i of
//              rank r holds the block rank (r - i) mod n sent to r.

#include <cstdint>

namespace tutti::bruck {

/// Rounds of both algorithms: ceil(log2 n), 0 for n = 1.
constexpr int rounds(int n) {
  int k = 0;
  while ((std::int64_t{1} << k) < n) ++k;
  return k;
}

/// The distance of round k: 2^k.
constexpr int distance(int k) { return 1 << k; }

/// (a mod n) in [0, n) for any int a (the peers below wrap around in both directions).
constexpr int wrap(std::int64_t a, int n) {
  std::int64_t m = a % n;
  return static_cast<int>(m < 0 ? m + n : m);
}

// ---- allgather ----

/// Blocks (slots) exchanged in round k of the allgather, each way: min(2^k, n - 2^k).
constexpr int allgatherBlocks(int n, int k) {
  int d = distance(k);
  return d < n - d ? d : n - d;
}
/// The rank r sends to in round k of the allgather: (r - 2^k) mod n.
constexpr int allgatherSendPeer(int n, int r, int k) {
  return wrap(std::int64_t{r} - distance(k), n);
}
/// The rank r receives from in round k of the allgather: (r + 2^k) mod n.
constexpr int allgatherRecvPeer(int n, int r, int k) {
  return wrap(std::int64_t{r} + distance(k), n);
}

// ---- alltoall ----

/// True when slot `slot` moves in round k of the alltoall (bit k of the slot index is set).
constexpr bool alltoallMoves(int k, int slot) { return ((slot >> k) & 1) != 0; }

/// A run of consecutive slots [first, first + length).
struct SlotRun {
  int first = 0;
  int length = 0;
};

/// The slots that move in round k form runs of 2^k consecutive slots starting at
/// j * 2^(k+1) + 2^k (the last run may be cut short by n): how many runs there are.
constexpr int alltoallRunCount(int n, int k) {
  const std::int64_t period = std::int64_t{2} << k;
  return static_cast<int>((n - distance(k) + period - 1) / period);
}

/// Run j of round k (j < alltoallRunCount(n, k)).
constexpr SlotRun alltoallRun(int n, int k, int j) {
  const std::int64_t first = j * (std::int64_t{2} << k) + distance(k);
  const std::int64_t end = first + distance(k) < n ? first + distance(k) : n;
  return {static_cast<int>(first), static_cast<int>(end - first)};
}

/// Slots that move in round k, each way: never more than floor(n / 2), so a send and a
/// receive buffer of floor(n / 2) blocks each fit side by side in n blocks.
constexpr int alltoallBlocks(int n, int k) {
  int total = 0;
  for (int j = 0; j < alltoallRunCount(n, k); ++j) total += alltoallRun(n, k, j).length;
  return total;
}

/// The rank r sends to in round k of the alltoall: (r + 2^k) mod n.
constexpr int alltoallSendPeer(int n, int r, int k) {
  return wrap(std::int64_t{r} + distance(k), n);
}
/// The rank r receives from in round k of the alltoall: (r - 2^k) mod n.
constexpr int alltoallRecvPeer(int n, int r, int k) {
  return wrap(std::int64_t{r} - distance(k), n);
}

/// The input block rank r places in slot i before the rounds: the one for rank (r + i) mod n.
constexpr int alltoallInputBlock(int n, int r, int slot) { return wrap(std::int64_t{r} + slot, n); }
/// The output block slot i of rank r fills after the rounds: the one from rank (r - i) mod n.
constexpr int alltoallOutputBlock(int n, int r, int slot) {
  return wrap(std::int64_t{r} - slot, n);
}

}  // namespace tutti::bruck
