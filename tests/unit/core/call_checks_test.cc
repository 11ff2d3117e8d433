// CallCheckCache: a call that repeats the last one checkCall() passed is answered from the
// cache, anything else is checked again, so that a loop of good calls followed by a bad one
// still gets the bad one's error.

#include <gtest/gtest.h>

#include <vector>

#include "core/call_checks.h"
#include "core/comm_impl.h"

namespace tutti::detail {
namespace {

constexpr int kRank = 1;
constexpr int kSize = 4;

OpRequest allreduce(const void* in, void* out, std::uint64_t count) {
  OpRequest r;
  r.spec.kind = Collective::kAllReduce;
  r.spec.count = count;
  r.spec.dtype = DataType::kFloat32;
  r.spec.op = ReduceOp::kSum;
  r.input = in;
  r.output = out;
  return r;
}

// Checks `r` the way the communicator does: the cache first, else checkCall (remembered
// when it passes). Returns the verdict and whether the cache answered.
Status check(CallCheckCache& cache, OpRequest& r, bool* reused) {
  *reused = cache.reuse(r, kRank, kSize);
  if (*reused) return Status::Ok();
  CallCheck verdict = checkCall(r, kRank, kSize);
  if (verdict.status.ok()) cache.remember(r);
  return verdict.status;
}

TEST(CallCheckCache, RepeatedCallIsReusedWithTheSameSpecAsCheckCall) {
  std::vector<float> a(8), b(8);
  CallCheckCache cache;
  bool reused = true;
  OpRequest first = allreduce(a.data(), b.data(), 8);
  ASSERT_TRUE(check(cache, first, &reused).ok());
  EXPECT_FALSE(reused);
  OpRequest again = allreduce(a.data(), b.data(), 8);
  again.spec.rank = 99;  // whatever the caller left there is overwritten, as checkCall does
  again.spec.inPlace = true;
  ASSERT_TRUE(check(cache, again, &reused).ok());
  EXPECT_TRUE(reused);
  EXPECT_EQ(again.spec.rank, kRank);
  EXPECT_EQ(again.spec.size, kSize);
  EXPECT_FALSE(again.spec.inPlace);

  // In place: the flag comes back set, from checkCall and from the cache alike.
  OpRequest inPlace = allreduce(a.data(), a.data(), 8);
  ASSERT_TRUE(check(cache, inPlace, &reused).ok());
  EXPECT_FALSE(reused);
  EXPECT_TRUE(inPlace.spec.inPlace);
  OpRequest inPlaceAgain = allreduce(a.data(), a.data(), 8);
  ASSERT_TRUE(check(cache, inPlaceAgain, &reused).ok());
  EXPECT_TRUE(reused);
  EXPECT_TRUE(inPlaceAgain.spec.inPlace);
}

TEST(CallCheckCache, AnyChangedArgumentIsCheckedAgain) {
  std::vector<float> a(16), b(16);
  CallCheckCache cache;
  bool reused = false;
  OpRequest good = allreduce(a.data(), b.data(), 8);
  ASSERT_TRUE(check(cache, good, &reused).ok());

  // Overlapping buffers that are not in place: the same shape, other pointers.
  OpRequest overlap = allreduce(a.data(), a.data() + 4, 8);
  Status s = check(cache, overlap, &reused);
  EXPECT_FALSE(reused);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("overlap"), std::string::npos) << s.message();
  // The failed call is not remembered: the good one still is.
  OpRequest goodAgain = allreduce(a.data(), b.data(), 8);
  EXPECT_TRUE(check(cache, goodAgain, &reused).ok());
  EXPECT_TRUE(reused);

  // Each field on its own makes the cache answer no.
  auto refused = [&](auto change) {
    OpRequest r = allreduce(a.data(), b.data(), 8);
    change(r);
    return !cache.reuse(r, kRank, kSize);
  };
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.kind = Collective::kBroadcast; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.count = 7; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.dtype = static_cast<DataType>(42); }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.op = ReduceOp::kMax; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.root = 2; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.peer = 3; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.tag = -1; }));
  EXPECT_TRUE(refused([&](OpRequest& r) { r.input = nullptr; }));
  EXPECT_TRUE(refused([&](OpRequest& r) { r.output = a.data(); }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.ownCount = 8; }));
  EXPECT_TRUE(refused([](OpRequest& r) { r.spec.counts = {8, 8, 8, 8}; }));

  // A bad dtype after good calls of the same shape is still refused, naming the value.
  OpRequest badType = allreduce(a.data(), b.data(), 8);
  badType.spec.dtype = static_cast<DataType>(42);
  s = check(cache, badType, &reused);
  EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(s.message().find("dtype 42"), std::string::npos) << s.message();
}

TEST(CallCheckCache, PerRankArraysAreNeverKept) {
  std::vector<float> a(16), b(16);
  CallCheckCache cache;
  bool reused = false;
  OpRequest r;
  r.spec.kind = Collective::kAllGatherV;
  r.spec.count = 0;
  r.spec.dtype = DataType::kFloat32;
  r.spec.counts = {1, 2, 3, 4};
  r.spec.displs = {0, 1, 3, 6};
  r.input = a.data();
  r.output = b.data();
  ASSERT_TRUE(check(cache, r, &reused).ok());
  OpRequest same = r;
  EXPECT_FALSE(cache.reuse(same, kRank, kSize));
  // And an unchecked cache answers nothing.
  CallCheckCache empty;
  OpRequest any = allreduce(a.data(), b.data(), 8);
  EXPECT_FALSE(empty.reuse(any, kRank, kSize));
}

}  // namespace
}  // namespace tutti::detail
