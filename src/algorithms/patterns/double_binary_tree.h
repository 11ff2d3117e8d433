#pragma once
// Double binary tree (Sanders, Speck and Träff; NCCL's trees): two binary trees over the
// same n ranks, each carrying half of the data, built so that a rank that is interior
// (forwards data) in one tree is a leaf in the other. Each rank then sends and receives
// about as much as in one tree, but the tree's depth stays log2 n. Pure rank maths.
//
// One tree over *positions* 0..n-1, rooted at position 0. Position p > 0 with lowest set
// bit b has a left child p - b/2 and a right child p + h for the largest h in b/2, b/4,
// ..., 1 with p + h < n; the root's single child is the largest power of two below n.
// Even positions (>= 2) always have a left child and odd positions never have children,
// so a position is interior exactly when it is even.
//
//   n = 7, positions:       0
//                           |
//                           4
//                         /   \      (left, right)
//                        2     6
//                       / \   /
//                      1   3 5
//
// Tree 0 places rank r at position v = (r - root) mod n. Tree 1 places it at sigma(v), a
// permutation that fixes 0 (both trees are rooted at `root`) and moves every other rank
// from an odd to an even position or back:
//   n odd:  sigma(v) = n - v            (v >= 1)
//   n even: sigma(v) = v - 1 (v >= 2),  sigma(1) = n - 1
// So every non-root rank is interior in at most one tree, and for even n exactly one
// (relative rank 1) is a leaf in both. The root has one child in each tree.

namespace tutti {

/// Neighbours of one rank in one tree, as absolute ranks (-1: none).
struct TreeLinks {
  int parent = -1;
  int children[2] = {-1, -1};
  int childCount = 0;
};

namespace detail {

/// Lowest set bit of p > 0; for the root position, the smallest power of two >= n.
constexpr int positionSpan(int p, int n) {
  if (p != 0) return p & -p;
  int span = 1;
  while (span < n) span *= 2;
  return span;
}

/// The tree-1 permutation sigma on relative ranks, and its inverse.
constexpr int sigma(int v, int n) {
  if (v == 0) return 0;
  if (n % 2 == 1) return n - v;
  return v == 1 ? n - 1 : v - 1;
}
constexpr int sigmaInverse(int p, int n) {
  if (p == 0) return 0;
  if (n % 2 == 1) return n - p;
  return p == n - 1 ? 1 : p + 1;
}

}  // namespace detail

/// The position of `rank` in tree `tree` (0 or 1) rooted at `root`.
constexpr int dbtPosition(int rank, int root, int n, int tree) {
  const int v = ((rank - root) % n + n) % n;
  return tree == 0 ? v : detail::sigma(v, n);
}

/// The rank at `position` in tree `tree` rooted at `root` (inverse of dbtPosition).
constexpr int dbtRankAt(int position, int root, int n, int tree) {
  const int v = tree == 0 ? position : detail::sigmaInverse(position, n);
  return (v + root) % n;
}

/// The parent of position p (-1 for the root). A position whose bit above b is clear
/// hangs left of p + b; otherwise, or when p + b is past the end, it hangs right of p - b.
constexpr int positionParent(int p, int n) {
  if (p == 0) return -1;
  const int b = p & -p;
  if ((p & (2 * b)) == 0 && p + b < n) return p + b;
  return p - b;
}

/// The children of position p, left first; returns how many (0..2) through `out`.
constexpr int positionChildren(int p, int n, int out[2]) {
  const int span = detail::positionSpan(p, n);
  int count = 0;
  if (p != 0 && span >= 2) out[count++] = p - span / 2;
  for (int h = span / 2; h >= 1; h /= 2) {
    if (p + h < n) {
      out[count++] = p + h;
      break;
    }
  }
  return count;
}

/// Parent and children of `rank` in tree `tree` (0 or 1), both trees rooted at `root`.
constexpr TreeLinks dbtLinks(int rank, int root, int n, int tree) {
  TreeLinks links;
  const int p = dbtPosition(rank, root, n, tree);
  const int up = positionParent(p, n);
  links.parent = up < 0 ? -1 : dbtRankAt(up, root, n, tree);
  int kids[2] = {-1, -1};
  links.childCount = positionChildren(p, n, kids);
  for (int i = 0; i < links.childCount; ++i) links.children[i] = dbtRankAt(kids[i], root, n, tree);
  return links;
}

}  // namespace tutti
