// Sub-communicators from split(color, key), with rank orders that differ from the parent's
// (UCC's "reverse" and "odd_even" teams): catches every "assumed rank == world rank" bug.
// Collectives on the children are checked element by element like the world's.

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "base/strings.h"
#include "common/collective_check.h"
#include "common/threads.h"

namespace tutti::test {
namespace {

// A few collectives on `comm`, each checked.
std::string exercise(Communicator& comm) {
  std::string out;
  for (Collective kind : {Collective::kAllReduce, Collective::kBroadcast, Collective::kAllGather,
                          Collective::kReduceScatter, Collective::kGatherV, Collective::kAllToAll,
                          Collective::kBarrier}) {
    CollectiveCase c;
    c.kind = kind;
    c.count = 37;
    c.dtype = DataType::kInt32;
    c.op = ReduceOp::kSum;
    c.root = comm.size() - 1;
    out += runAndCheck(comm, c);
    c.inPlace = true;
    out += runAndCheck(comm, c);
  }
  return out;
}

TEST(Split, ReversedOrderMakesRankNMinusOneTheNewRankZero) {
  auto failures = runRanks(5, [&](int rank, Communicator& world) -> std::string {
    auto child = world.split(0, -rank);
    if (!child.ok()) return "split: " + child.status().toString();
    if (!child->has_value()) return "no communicator for color 0";
    Communicator& c = **child;
    if (c.size() != 5 || c.rank() != 4 - rank)
      return strFormat("got rank %d of %d, expected %d of 5", c.rank(), c.size(), 4 - rank);
    return exercise(c);
  });
  EXPECT_EQ(joinFailures(failures), "");
}

TEST(Split, OddAndEvenGroupsWorkIndependently) {
  auto failures = runRanks(7, [&](int rank, Communicator& world) -> std::string {
    auto child = world.split(rank % 2, rank);
    if (!child.ok()) return "split: " + child.status().toString();
    Communicator& c = **child;
    const int expectedSize = rank % 2 == 0 ? 4 : 3;
    if (c.size() != expectedSize || c.rank() != rank / 2)
      return strFormat("got rank %d of %d", c.rank(), c.size());
    std::string out = exercise(c);
    // The parent still works after the split, and a child of the child too.
    out += exercise(world);
    auto grandchild = c.split(c.rank() == 0 ? Communicator::kNoColor : 1, 0);
    if (!grandchild.ok()) return out + "nested split: " + grandchild.status().toString();
    if (c.rank() == 0) {
      if (grandchild->has_value()) out += "kNoColor gave a communicator\n";
    } else {
      out += exercise(**grandchild);
    }
    return out;
  });
  EXPECT_EQ(joinFailures(failures), "");
}

TEST(Split, EqualKeysKeepParentOrderAndSingletonsWork) {
  auto failures = runRanks(4, [&](int rank, Communicator& world) -> std::string {
    // Colors 0,0,1,2: a pair and two singleton communicators.
    const int color = rank < 2 ? 0 : rank - 1;
    auto child = world.split(color, 7);
    if (!child.ok()) return "split: " + child.status().toString();
    Communicator& c = **child;
    const int expectedRank = rank < 2 ? rank : 0;
    if (c.rank() != expectedRank) return strFormat("rank %d, expected %d", c.rank(), expectedRank);
    return exercise(c);
  });
  EXPECT_EQ(joinFailures(failures), "");
}

}  // namespace
}  // namespace tutti::test
