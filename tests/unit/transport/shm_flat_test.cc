// The shared-memory transport's flat exchange (shm/flat.cc): every rank's contribution read
// in place, its two slots reused across many calls, stamps compared, and every way a wait
// can end (a peer's failure, the deadline) ending it with the rank it waited for.

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "shm_setup.h"

namespace tutti::shm {
namespace {

CallStamp stampOf(std::uint64_t what) { return CallStamp{what, 1}; }

// One flat exchange of rank `rank` for call `seq` (index `index`): its contribution is
// `bytes` bytes of (rank, seq, i) patterns. Returns the status; on success checks every
// rank's contribution.
Status exchange(ShmTransport& t, std::uint64_t index, std::uint64_t seq, std::size_t bytes,
                CallStamp stamp, Deadline deadline, FlatStop* stop, std::string* wrong) {
  std::vector<char> data(bytes);
  for (std::size_t i = 0; i < bytes; ++i) data[i] = static_cast<char>(t.rank() * 31 + seq * 7 + i);
  FlatCall call;
  call.index = index;
  call.seq = seq;
  call.stamp = stamp;
  call.data = data.data();
  call.bytes = bytes;
  call.deadline = deadline;
  call.spinNs = 0;  // the threads share this machine's two cores with the others
  std::vector<const char*> views(static_cast<std::size_t>(t.size()), nullptr);
  Status s = t.flatExchange(call, views.data(), stop);
  if (!s.ok()) return s;
  for (int r = 0; r < t.size() && wrong->empty(); ++r)
    for (std::size_t i = 0; i < bytes; ++i)
      if (views[static_cast<std::size_t>(r)][i] != static_cast<char>(r * 31 + seq * 7 + i)) {
        *wrong = "call " + std::to_string(seq) + ": rank " + std::to_string(r) + " byte " +
                 std::to_string(i) + " wrong on rank " + std::to_string(t.rank());
        break;
      }
  return s;
}

TEST(ShmFlat, EveryRankSeesEveryContributionAcrossManyCalls) {
  for (int size : {2, 3, 5}) {
    auto ts = connectAll(size, {});
    ASSERT_EQ(ts[0]->flatBytes(), kFlatBytes);
    std::vector<std::string> wrong(static_cast<std::size_t>(size));
    std::vector<Status> errors(static_cast<std::size_t>(size));
    std::vector<std::thread> threads;
    for (int r = 0; r < size; ++r)
      threads.emplace_back([&, r] {
        // Sequence numbers with gaps (calls that went by messages in between); sizes from
        // empty (a barrier) to the whole slot.
        for (std::uint64_t k = 0; k < 300 && errors[r].ok() && wrong[r].empty(); ++k) {
          const std::size_t bytes = (k * 97) % (kFlatBytes + 1);
          FlatStop stop;
          errors[r] = exchange(*ts[r], k, 3 * k + 1, bytes, stampOf(bytes + 1),
                               Deadline::afterSeconds(60), &stop, &wrong[r]);
        }
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < size; ++r) {
      EXPECT_TRUE(errors[r].ok()) << "size " << size << " rank " << r << ": " << errors[r].toString();
      EXPECT_TRUE(wrong[r].empty()) << wrong[r];
    }
  }
}

TEST(ShmFlat, AnotherStampForTheSameCallIsAMismatchNamingTheRank) {
  auto ts = connectAll(2, {});
  std::vector<Status> errors(2);
  std::vector<FlatStop> stops(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      std::string wrong;
      errors[r] = exchange(*ts[r], 0, 5, 8, stampOf(r == 0 ? 10 : 11), Deadline::afterSeconds(60),
                           &stops[r], &wrong);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r].code(), ErrorCode::kMismatch) << errors[r].toString();
    EXPECT_EQ(stops[r].peer, 1 - r);
    EXPECT_EQ(stops[r].peerStamp, stampOf(r == 0 ? 11 : 10));
  }
}

TEST(ShmFlat, AContributionOfAnotherSizeIsAProtocolError) {
  auto ts = connectAll(2, {});
  std::vector<Status> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)
    threads.emplace_back([&, r] {
      std::string wrong;
      FlatStop stop;
      errors[r] = exchange(*ts[r], 0, 0, r == 0 ? 8 : 16, stampOf(1), Deadline::afterSeconds(60),
                           &stop, &wrong);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r].code(), ErrorCode::kProtocolError) << errors[r].toString();
    EXPECT_EQ(errors[r].peerRank(), 1 - r);
  }
}

TEST(ShmFlat, AMissingRankEndsTheWaitAtTheDeadlineNamingIt) {
  auto ts = connectAll(3, {});
  std::vector<Status> errors(2);
  std::vector<FlatStop> stops(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r)  // rank 2 never contributes
    threads.emplace_back([&, r] {
      std::string wrong;
      errors[r] = exchange(*ts[r], 0, 0, 8, stampOf(1), Deadline::afterSeconds(0.3), &stops[r], &wrong);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r].code(), ErrorCode::kTimeout) << errors[r].toString();
    EXPECT_EQ(errors[r].peerRank(), 2);
    EXPECT_EQ(stops[r].peer, 2);
  }
}

TEST(ShmFlat, APeersFailureEndsTheWaitWithTheFailure) {
  auto ts = connectAll(2, {});
  Status error;
  FlatStop stop;
  std::thread waiter([&] {
    std::string wrong;
    error = exchange(*ts[0], 0, 0, 8, stampOf(1), Deadline::afterSeconds(60), &stop, &wrong);
  });
  // Rank 1 fails instead of contributing, whether rank 0 is still spinning or asleep.
  ts[1]->fail(Status(ErrorCode::kAborted, "rank 1 gave up", 1));
  waiter.join();
  EXPECT_EQ(error.code(), ErrorCode::kAborted) << error.toString();
  EXPECT_NE(error.message().find("rank 1 gave up"), std::string::npos) << error.toString();
  EXPECT_EQ(stop.peer, 1);
}

}  // namespace
}  // namespace tutti::shm
