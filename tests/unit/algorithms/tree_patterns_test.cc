// The tree patterns' rank maths (src/algorithms/patterns/): every world size 1..1024 and
// several roots. Each tree must be a spanning tree rooted at the root (one parent per rank
// but the root, children that name their parent, every rank reached exactly once), with the
// depth and shape the algorithms' cost comments rely on.

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "algorithms/patterns/binomial_tree.h"
#include "algorithms/patterns/double_binary_tree.h"

namespace tutti {
namespace {

std::vector<int> rootsFor(int n) {
  std::vector<int> roots = {0};
  if (n > 1) roots.push_back(n - 1);
  if (n > 2) roots.push_back(n / 2);
  if (n > 5) roots.push_back(3);
  return roots;
}

// Walks a tree given by `children` from `root`; returns the depth of each rank (-1 when not
// reached) and fails the test when a rank is reached twice.
template <typename ChildrenFn>
std::vector<int> walk(int n, int root, ChildrenFn children) {
  std::vector<int> depth(static_cast<std::size_t>(n), -1);
  std::vector<int> queue = {root};
  depth[static_cast<std::size_t>(root)] = 0;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    const int r = queue[i];
    for (int c : children(r)) {
      EXPECT_EQ(depth[static_cast<std::size_t>(c)], -1)
          << "n=" << n << " rank " << c << " reached twice";
      if (depth[static_cast<std::size_t>(c)] != -1) continue;
      depth[static_cast<std::size_t>(c)] = depth[static_cast<std::size_t>(r)] + 1;
      queue.push_back(c);
    }
  }
  return depth;
}

static_assert(ceilLog2(1) == 0 && ceilLog2(2) == 1 && ceilLog2(5) == 3 && ceilLog2(1024) == 10);
static_assert(floorLog2(1) == 0 && floorLog2(5) == 2 && floorLog2(1024) == 10);
static_assert(binomialParent(5, 0, 8) == 4 && binomialParent(0, 0, 8) == -1);
static_assert(binomialChild(0, 0, 6, 0) == 4 && binomialChildCount(0, 0, 6) == 3);
static_assert(dbtLinks(0, 0, 7, 0).children[0] == 4 && dbtLinks(4, 0, 7, 0).childCount == 2);

TEST(BinomialTree, IsASpanningTreeOfDepthCeilLog2Rounds) {
  for (int n = 1; n <= 1024; ++n) {
    for (int root : rootsFor(n)) {
      auto children = [&](int r) {
        std::vector<int> out;
        for (int i = 0; i < binomialChildCount(r, root, n); ++i)
          out.push_back(binomialChild(r, root, n, i));
        return out;
      };
      int edges = 0, maxRound = -1;
      for (int r = 0; r < n; ++r) {
        const int parent = binomialParent(r, root, n);
        if (r == root) {
          ASSERT_EQ(parent, -1);
          ASSERT_EQ(binomialChildCount(r, root, n), ceilLog2(n)) << "n=" << n;
        } else {
          ASSERT_TRUE(parent >= 0 && parent < n) << "n=" << n << " rank " << r;
          const auto siblings = children(parent);
          ASSERT_EQ(std::count(siblings.begin(), siblings.end(), r), 1)
              << "n=" << n << " root " << root << ": parent " << parent << " of " << r;
          ++edges;
          // A rank receives after its parent, in the round the pattern says.
          const int round = binomialReceiveRound(r, root, n);
          EXPECT_GT(round, binomialReceiveRound(parent, root, n));
          maxRound = std::max(maxRound, round);
        }
        // Children: parents agree, farthest first, subtrees contiguous and adding up.
        int size = 1;
        int previous = n;  // relative rank of the previous child
        int nextRelative = relativeRank(r, root, n) + 1;
        const auto kids = children(r);
        for (auto it = kids.rbegin(); it != kids.rend(); ++it) {  // smallest first
          ASSERT_EQ(binomialParent(*it, root, n), r);
          ASSERT_EQ(relativeRank(*it, root, n), nextRelative) << "n=" << n << " rank " << r;
          nextRelative += binomialSubtreeSize(*it, root, n);
          size += binomialSubtreeSize(*it, root, n);
        }
        for (int c : kids) {
          EXPECT_LT(relativeRank(c, root, n), previous);
          previous = relativeRank(c, root, n);
        }
        ASSERT_EQ(binomialSubtreeSize(r, root, n), size) << "n=" << n << " rank " << r;
      }
      EXPECT_EQ(edges, n - 1);
      EXPECT_EQ(maxRound + 1, ceilLog2(n)) << "n=" << n << ": broadcast rounds";
      const auto depth = walk(n, root, children);
      const int height = *std::max_element(depth.begin(), depth.end());
      EXPECT_EQ(std::count(depth.begin(), depth.end(), -1), 0) << "n=" << n;
      // The height is floor(log2 n): ceil(log2 n) exactly for powers of two.
      EXPECT_EQ(height, floorLog2(n)) << "n=" << n;
      EXPECT_LE(height, ceilLog2(n));
    }
  }
}

TEST(DoubleBinaryTree, PositionsFormOneBinaryTreeWithEvenInteriorPositions) {
  for (int n = 1; n <= 1024; ++n) {
    for (int p = 0; p < n; ++p) {
      int kids[2] = {-1, -1};
      const int count = positionChildren(p, n, kids);
      ASSERT_LE(count, 2);
      for (int i = 0; i < count; ++i) ASSERT_EQ(positionParent(kids[i], n), p) << "n=" << n;
      if (p == 0)
        EXPECT_EQ(count, n > 1 ? 1 : 0);
      else
        EXPECT_EQ(count > 0, p % 2 == 0) << "n=" << n << " position " << p;
    }
  }
}

TEST(DoubleBinaryTree, BothTreesSpanFromTheRootAndShareTheLoad) {
  for (int n = 1; n <= 1024; ++n) {
    for (int root : rootsFor(n)) {
      std::vector<int> interior(static_cast<std::size_t>(n), 0);
      for (int t = 0; t < 2; ++t) {
        int edges = 0;
        for (int r = 0; r < n; ++r) {
          ASSERT_EQ(dbtRankAt(dbtPosition(r, root, n, t), root, n, t), r);
          const TreeLinks links = dbtLinks(r, root, n, t);
          if (r == root) {
            ASSERT_EQ(links.parent, -1);
            ASSERT_EQ(links.childCount, n > 1 ? 1 : 0);
          } else {
            ASSERT_TRUE(links.parent >= 0 && links.parent < n);
            const TreeLinks up = dbtLinks(links.parent, root, n, t);
            ASSERT_TRUE(up.children[0] == r || up.children[1] == r)
                << "n=" << n << " tree " << t << " rank " << r;
            ++edges;
          }
          if (links.childCount > 0) ++interior[static_cast<std::size_t>(r)];
        }
        EXPECT_EQ(edges, n - 1);
        const auto depth = walk(n, root, [&](int r) {
          const TreeLinks l = dbtLinks(r, root, n, t);
          return std::vector<int>(l.children, l.children + l.childCount);
        });
        EXPECT_EQ(std::count(depth.begin(), depth.end(), -1), 0) << "n=" << n << " tree " << t;
        EXPECT_LE(*std::max_element(depth.begin(), depth.end()), ceilLog2(n)) << "n=" << n;
      }
      // Interior in at most one tree (the root excepted); a leaf in both: none for odd n,
      // one rank for even n (relative rank 1).
      int leafInBoth = 0;
      for (int r = 0; r < n; ++r) {
        if (r == root) continue;
        EXPECT_LE(interior[static_cast<std::size_t>(r)], 1) << "n=" << n << " rank " << r;
        if (interior[static_cast<std::size_t>(r)] == 0) ++leafInBoth;
      }
      EXPECT_EQ(leafInBoth, n >= 2 && n % 2 == 0 ? 1 : 0) << "n=" << n;
    }
  }
}

}  // namespace
}  // namespace tutti
