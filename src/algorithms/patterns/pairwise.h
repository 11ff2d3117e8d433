#pragma once
// Rank maths of the pairwise exchange (alltoall_pairwise.cc): n - 1 rounds; in round k
// (1 <= k < n) rank r sends to (r + k) mod n and receives from (r - k) mod n. Each round is
// a permutation (a cyclic shift by k), so every rank sends one message and receives one per
// round, whatever n is; over the n - 1 rounds every ordered pair of distinct ranks meets once.

namespace tutti::pairwise {

/// Rounds of the exchange: n - 1 (none for n = 1).
constexpr int rounds(int n) { return n - 1; }

/// The rank r sends to in round k: (r + k) mod n (k in [1, n)).
constexpr int sendPeer(int n, int r, int k) { return (r + k) % n; }
/// The rank r receives from in round k: (r - k) mod n.
constexpr int recvPeer(int n, int r, int k) { return (r + n - k) % n; }

/// The round in which rank r sends block b (b != r): the k with (r + k) mod n = b.
constexpr int sendRound(int n, int r, int b) { return (b - r + n) % n; }

/// In place, the block received in round k lands where block (r - k) mod n still waits to be
/// sent, which happens in round n - k. When that round is not earlier (2k <= n) the received
/// block must wait in scratch space; otherwise its place is already free.
constexpr bool inPlaceNeedsScratch(int n, int k) { return 2 * k <= n; }

}  // namespace tutti::pairwise
