#pragma once
// Binomial tree over n ranks rooted at any root: pure rank maths, no I/O.
//
// Ranks are renumbered relative to the root, v = (rank - root) mod n, so the root is v = 0.
// The parent of v > 0 is v with its lowest set bit cleared; the children of v are v + 2^k
// for every 2^k below v's lowest set bit (below n for the root) with v + 2^k < n. This is
// the tree MPICH and Open MPI use; it works for any n, not only powers of two.
//
// Two properties the algorithms rely on:
//  - the subtree of v is the contiguous run of relative ranks [v, v + subtreeSize(v)), so a
//    gather or scatter moves a whole subtree's blocks as one message;
//  - when every node sends to its children farthest first (v + 2^k for decreasing k: the
//    child whose subtree needs the most rounds), one message per round, child v + 2^k
//    receives in round ceil(log2 n) - 1 - k: a broadcast takes ceil(log2 n) rounds. The
//    tree's height (edges from the root to the deepest leaf) is floor(log2 n).
//
//   n = 6, root 0 (relative ranks; the round in which a node receives in brackets):
//
//        0
//      / | \     (farthest child first)
//     4  2  1          4 [0]   2 [1]   1 [2]
//     |  |
//     5  3             5 [2]   3 [2]

namespace tutti {

/// The rank's number relative to the root, in [0, n).
constexpr int relativeRank(int rank, int root, int n) { return ((rank - root) % n + n) % n; }

/// The inverse of relativeRank().
constexpr int absoluteRank(int relative, int root, int n) { return (relative + root) % n; }

/// ceil(log2 n): rounds of a binomial broadcast, 0 for n = 1.
constexpr int ceilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

/// floor(log2 n) for n >= 1.
constexpr int floorLog2(int n) {
  int k = 0;
  while ((2 << k) <= n) ++k;
  return k;
}

/// The power of two that bounds v's subtree: v's lowest set bit, or for the root the
/// smallest power of two >= n. The subtree of v lies in [v, v + span).
constexpr int binomialSpan(int relative, int n) {
  return relative == 0 ? (1 << ceilLog2(n)) : (relative & -relative);
}

/// Number of ranks in the subtree of `rank` (itself included).
constexpr int binomialSubtreeSize(int rank, int root, int n) {
  const int v = relativeRank(rank, root, n);
  const int span = binomialSpan(v, n);
  return span < n - v ? span : n - v;
}

/// The parent of `rank`, or -1 for the root.
constexpr int binomialParent(int rank, int root, int n) {
  const int v = relativeRank(rank, root, n);
  return v == 0 ? -1 : absoluteRank(v & (v - 1), root, n);
}

/// The offset of v's largest child: the largest power of two below v's span with
/// v + offset < n, or 0 when v is a leaf.
constexpr int binomialTopChildOffset(int relative, int n) {
  int offset = binomialSpan(relative, n) / 2;
  while (offset > 0 && relative + offset >= n) offset /= 2;
  return offset;
}

/// Number of children of `rank`.
constexpr int binomialChildCount(int rank, int root, int n) {
  int top = binomialTopChildOffset(relativeRank(rank, root, n), n);
  return top == 0 ? 0 : floorLog2(top) + 1;
}

/// The i-th child of `rank`, 0 <= i < binomialChildCount(): farthest first (child 0 is
/// v + the top offset, the last child is v + 1, a leaf). Subtree sizes do not always
/// decrease along this order: a far child's subtree is cut short by n.
constexpr int binomialChild(int rank, int root, int n, int i) {
  const int v = relativeRank(rank, root, n);
  return absoluteRank(v + (binomialTopChildOffset(v, n) >> i), root, n);
}

/// The round in which `rank` receives from its parent in a broadcast that sends to
/// children farthest first (one send per round), or -1 for the root.
constexpr int binomialReceiveRound(int rank, int root, int n) {
  const int v = relativeRank(rank, root, n);
  return v == 0 ? -1 : ceilLog2(n) - 1 - floorLog2(v & -v);
}

}  // namespace tutti
