#include "transport/call_checker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <latch>
#include <thread>
#include <vector>

#include "base/strings.h"
#include "transport/tag.h"

namespace tutti {
namespace {

std::string describeForTest(const CallStamp& stamp, std::uint64_t seq) {
  return strFormat("call(%llx,%llu)#%llu", static_cast<unsigned long long>(stamp.what),
                   static_cast<unsigned long long>(stamp.count),
                   static_cast<unsigned long long>(seq));
}

constexpr CallStamp kA{0x8000000000000009ull, 1024};
constexpr CallStamp kB{0x8000000000000009ull, 1000};

Tag tagOf(std::uint64_t seq, std::uint32_t index = 0) { return collectiveTagBase(0, seq) + index; }

// One thread plays both sides, so both modes must give the same answers: with the
// cross-thread handshake (TCP, hybrid) and without it (shm, arrivals on the calling thread).
class CallCheckerModes : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(, CallCheckerModes, ::testing::Values(true, false),
                         [](const ::testing::TestParamInfo<bool>& param) {
                           return param.param ? "ConcurrentArrivals" : "ArrivalsOnCallingThread";
                         });

TEST_P(CallCheckerModes, AgreeingArrivalsPassBeforeAndAfterBegin) {
  CallChecker checker(0, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  EXPECT_TRUE(checker.onArrival(1, tagOf(0), kA).ok());  // early
  EXPECT_TRUE(checker.onArrival(2, tagOf(0), kA).ok());  // early, second peer
  EXPECT_TRUE(checker.begin(0, kA).ok());
  EXPECT_TRUE(checker.onArrival(3, tagOf(0, 5), kA).ok());  // after begin
  EXPECT_TRUE(checker.begin(1, kB).ok());
  EXPECT_TRUE(checker.onArrival(1, tagOf(1), kB).ok());
}

// A rank agreeing with the others before it chooses the call's algorithm stamps the call
// with the algorithm's bits open (CallStamp::open): the messages of a rank already past the
// agreement, which carry its algorithm, agree with it; another call does not. The rule
// knows no layout: any bits may be open.
TEST_P(CallCheckerModes, AStampBeforeTheAlgorithmAgreesWithEveryAlgorithmOfTheCall) {
  constexpr std::uint64_t kAlgorithm = std::uint64_t{0xffff} << 24;
  constexpr std::uint64_t kRing = std::uint64_t{0x1234} << 24, kDirect = std::uint64_t{0x4321} << 24;
  const CallStamp ring{kA.what | kRing, kA.count}, direct{kA.what | kDirect, kA.count};
  const CallStamp before{kA.what, kA.count, kAlgorithm};
  EXPECT_FALSE(stampsConflict(before, ring));
  EXPECT_FALSE(stampsConflict(direct, before));
  EXPECT_FALSE(stampsConflict(before, before));
  EXPECT_TRUE(stampsConflict(ring, direct));
  EXPECT_TRUE(stampsConflict(before, CallStamp{kB.what | kRing, kB.count}));  // another count
  EXPECT_TRUE(stampsConflict(before, CallStamp{kA.what ^ 0x100, kA.count}));  // outside open
  EXPECT_FALSE(stampsConflict(before, CallStamp{}));  // point to point: not checked
  CallChecker checker(0, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  EXPECT_TRUE(checker.onArrival(1, tagOf(0), ring).ok());   // early
  EXPECT_TRUE(checker.begin(0, before).ok());                // the agreement
  EXPECT_TRUE(checker.onArrival(2, tagOf(0), direct).ok());  // during it
  EXPECT_FALSE(checker.onArrival(3, tagOf(0), kB).ok());     // another call
  EXPECT_TRUE(checker.begin(0, ring).ok());                  // the algorithm, chosen
}

// Both windows keep the open bits: a peer's stamp from before its choice (a flat
// exchange's contribution, seen on the side) that arrives early agrees with the call this
// rank then begins with its algorithm chosen, and one of another call does not.
TEST_P(CallCheckerModes, AnEarlyStampBeforeTheAlgorithmKeepsItsOpenBits) {
  constexpr std::uint64_t kAlgorithm = std::uint64_t{0xffff} << 24;
  const CallStamp before{kA.what, kA.count, kAlgorithm};
  const CallStamp chosen{kA.what | (std::uint64_t{0x1234} << 24), kA.count};
  CallChecker checker(0, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  EXPECT_TRUE(checker.onArrival(1, tagOf(0), before).ok());  // early, kept open
  EXPECT_TRUE(checker.begin(0, chosen).ok());
  EXPECT_TRUE(checker.onArrival(1, tagOf(1), before).ok());
  const Status s = checker.begin(1, CallStamp{kB.what | (std::uint64_t{0x1234} << 24), kB.count});
  EXPECT_EQ(s.code(), ErrorCode::kMismatch) << s.toString();
}

TEST_P(CallCheckerModes, ArrivalAfterBeginStatesBothCalls) {
  CallChecker checker(0, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  ASSERT_TRUE(checker.begin(0, kA).ok());
  Status s = checker.onArrival(3, tagOf(0), kB);
  ASSERT_EQ(s.code(), ErrorCode::kMismatch);
  EXPECT_EQ(s.peerRank(), 3);
  EXPECT_EQ(s.message(), "rank 3 called " + describeForTest(kB, 0) + " while rank 0 called " +
                             describeForTest(kA, 0));
}

TEST_P(CallCheckerModes, EarlyArrivalIsCheckedWhenTheCallBegins) {
  CallChecker checker(2, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  ASSERT_TRUE(checker.begin(0, kA).ok());
  ASSERT_TRUE(checker.onArrival(1, tagOf(1), kB).ok());  // rank 1 is one call ahead
  Status s = checker.begin(1, kA);
  ASSERT_EQ(s.code(), ErrorCode::kMismatch);
  EXPECT_EQ(s.peerRank(), 1);
  EXPECT_EQ(s.message(), "rank 1 called " + describeForTest(kB, 1) + " while rank 2 called " +
                             describeForTest(kA, 1));
}

TEST_P(CallCheckerModes, TwoPeersDisagreeingEarlyAreCaught) {
  CallChecker checker(0, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  ASSERT_TRUE(checker.onArrival(1, tagOf(0), kA).ok());
  Status s = checker.onArrival(2, tagOf(0), kB);
  ASSERT_EQ(s.code(), ErrorCode::kMismatch);
  EXPECT_NE(s.message().find("rank 2 called " + describeForTest(kB, 0)), std::string::npos);
  EXPECT_NE(s.message().find("while rank 1 called " + describeForTest(kA, 0)), std::string::npos);
}

TEST_P(CallCheckerModes, PointToPointAndUnstampedMessagesAreNotChecked) {
  CallChecker checker(0, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  ASSERT_TRUE(checker.begin(0, kA).ok());
  EXPECT_TRUE(checker.onArrival(1, p2pTag(0, 0), kB).ok());
  EXPECT_TRUE(checker.onArrival(1, tagOf(0), CallStamp{}).ok());
}

TEST_P(CallCheckerModes, CallsOutsideTheWindowAreLeftToMatching) {
  CallChecker checker(0, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  for (std::uint64_t seq = 0; seq < CallChecker::kWindow + 3; ++seq)
    ASSERT_TRUE(checker.begin(seq, kA).ok());
  // Sequence 1 was overwritten by a later call: nothing to compare with.
  EXPECT_TRUE(checker.onArrival(1, tagOf(1), kB).ok());
  // The latest ones still are.
  EXPECT_EQ(checker.onArrival(1, tagOf(CallChecker::kWindow + 2), kB).code(), ErrorCode::kMismatch);
}

TEST_P(CallCheckerModes, SequenceNumbersWrapInTags) {
  // Tags carry 24 bits of the sequence; the checker widens them around its latest call.
  CallChecker checker(0, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  const std::uint64_t base = (std::uint64_t{1} << 24) - 2;
  for (std::uint64_t seq = base; seq < base + 5; ++seq) ASSERT_TRUE(checker.begin(seq, kA).ok());
  // base + 4 = 2^24 + 2: its tag says 2.
  Status s = checker.onArrival(1, tagOf(base + 4), kB);
  ASSERT_EQ(s.code(), ErrorCode::kMismatch);
  EXPECT_NE(s.message().find(strFormat("#%llu", static_cast<unsigned long long>(base + 4))),
            std::string::npos)
      << s.message();
  // One ahead, across the wrap: early, then caught by begin.
  EXPECT_TRUE(checker.onArrival(1, tagOf(base + 5), kB).ok());
  EXPECT_EQ(checker.begin(base + 5, kA).code(), ErrorCode::kMismatch);
}

// The issuing thread begins calls while a receiving thread reports arrivals for the same
// calls: agreeing stamps never conflict, and one disagreeing call is always caught by one
// side or the other, whichever order the two threads run in.
TEST(CallChecker, ConcurrentBeginAndArrivalCatchEveryConflict) {
  constexpr std::uint64_t kCalls = 20000;
  constexpr std::uint64_t kBad = 12345;
  CallChecker checker(0, &describeForTest);
  // Each side stays within half a window of the other, as ranks do: a peer cannot run
  // more calls ahead than the collectives between them allow.
  std::atomic<std::uint64_t> arrivedUpTo{0};
  std::atomic<std::uint64_t> begunUpTo{0};
  std::atomic<int> caught{0};
  std::atomic<int> falseAlarms{0};
  std::thread issuer([&] {
    for (std::uint64_t seq = 0; seq < kCalls; ++seq) {
      while (arrivedUpTo.load() + CallChecker::kWindow / 2 < seq) std::this_thread::yield();
      Status s = checker.begin(seq, kA);
      if (!s.ok()) (seq == kBad ? caught : falseAlarms)++;
      begunUpTo.store(seq);
    }
  });
  for (std::uint64_t seq = 0; seq < kCalls; ++seq) {
    while (begunUpTo.load() + CallChecker::kWindow / 2 < seq) std::this_thread::yield();
    Status s = checker.onArrival(1, tagOf(seq), seq == kBad ? kB : kA);
    if (!s.ok()) (seq == kBad ? caught : falseAlarms)++;
    arrivedUpTo.store(seq);
  }
  issuer.join();
  EXPECT_EQ(falseAlarms.load(), 0);
  EXPECT_GE(caught.load(), 1);
}

// Two peers' conflicting messages for a call not begun yet, arriving on two threads at once
// (TCP's loop thread and a driving caller): whichever thread loses the race for the early
// entry still compares its stamp with the winner's, so every conflict is caught, by an
// arrival or by begin().
TEST(CallChecker, ConcurrentEarlyArrivalsFromTwoPeersCatchEveryConflict) {
  constexpr int kRounds = 200;
  constexpr std::uint64_t kCalls = CallChecker::kWindow;
  int missed = 0;
  for (int round = 0; round < kRounds; ++round) {
    CallChecker checker(0, &describeForTest);
    std::vector<char> caughtA(kCalls, 0), caughtB(kCalls, 0);
    std::latch start(2);
    auto arrive = [&](int peer, const CallStamp& stamp, std::vector<char>& out) {
      start.arrive_and_wait();
      for (std::uint64_t seq = 0; seq < kCalls; ++seq)
        out[seq] = !checker.onArrival(peer, tagOf(seq), stamp).ok();
    };
    std::thread a(arrive, 1, kA, std::ref(caughtA));
    std::thread b(arrive, 2, kB, std::ref(caughtB));
    a.join();
    b.join();
    for (std::uint64_t seq = 0; seq < kCalls; ++seq) {
      const bool begunCaught = !checker.begin(seq, kA).ok();
      if (!caughtA[seq] && !caughtB[seq] && !begunCaught) ++missed;
    }
  }
  EXPECT_EQ(missed, 0);
}

// At the communicator's farewell: a peer's message for a call this rank never began (the
// peer made a call this rank did not) is a mismatch naming that call; messages of calls it
// did begin are not.
TEST_P(CallCheckerModes, AMessageOfACallNeverBegunIsFoundAtTheEnd) {
  CallChecker checker(0, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  EXPECT_TRUE(checker.onArrival(1, tagOf(0), kA).ok());  // early, then begun
  EXPECT_TRUE(checker.begin(0, kA).ok());
  EXPECT_TRUE(checker.begin(1, kB).ok());
  EXPECT_TRUE(checker.unbegunCall().ok());
  EXPECT_TRUE(checker.onArrival(2, tagOf(2), kB).ok());  // call #2: never begun here
  Status s = checker.unbegunCall();
  EXPECT_EQ(s.code(), ErrorCode::kMismatch) << s.toString();
  EXPECT_EQ(s.peerRank(), 2);
  EXPECT_NE(s.message().find("rank 2 called call(8000000000000009,1000)#2, which rank 0 never "
                             "called"),
            std::string::npos)
      << s.toString();
}

}  // namespace
// After close() (the farewell), a message or probe of a call this rank never began fails as
// it arrives; one of a call it began is still checked as usual.
TEST_P(CallCheckerModes, AfterCloseAnArrivalForACallNeverBegunFailsAtOnce) {
  CallChecker checker(0, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  EXPECT_TRUE(checker.begin(0, kA).ok());
  EXPECT_TRUE(checker.close().ok());
  EXPECT_TRUE(checker.onArrival(1, tagOf(0), kA).ok());
  EXPECT_EQ(checker.onArrival(1, tagOf(0), kB).code(), ErrorCode::kMismatch);
  Status s = checker.onArrival(3, tagOf(1), kA);
  EXPECT_EQ(s.code(), ErrorCode::kMismatch) << s.toString();
  EXPECT_EQ(s.peerRank(), 3);
  EXPECT_NE(s.message().find("which rank 0 never called"), std::string::npos) << s.toString();
}

// close() itself reports a message of an unbegun call that came before it.
TEST_P(CallCheckerModes, CloseReportsAnEarlierArrivalOfACallNeverBegun) {
  CallChecker checker(0, &describeForTest);
  checker.setConcurrentArrivals(GetParam());
  EXPECT_TRUE(checker.onArrival(2, tagOf(0), kB).ok());
  EXPECT_EQ(checker.close().code(), ErrorCode::kMismatch);
}

}  // namespace tutti
