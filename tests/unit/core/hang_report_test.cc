// The hang report's pieces: a position's encoding (round trip, junk rejected), the summary's
// wording and blame for each way ranks can stand, and the exchange through real stores,
// including one that never answers.

#include "core/hang_report.h"

#include <gtest/gtest.h>

#include <poll.h>

#include <atomic>
#include <thread>

#include "base/fd.h"
#include "base/net.h"
#include "bootstrap/auth.h"
#include "bootstrap/tcp_store.h"

namespace tutti::detail {
namespace {

HangPosition at(std::uint64_t seq, const std::string& call, const std::string& waiting = "") {
  HangPosition p;
  p.seq = seq;
  p.call = call;
  p.waitingOn = waiting;
  p.totalSteps = waiting.empty() ? 0 : 2;
  return p;
}

HangPosition p2p(std::uint64_t collectivesBefore, const std::string& call) {
  HangPosition p = at(collectivesBefore, call, "data from rank 0 (step 0)");
  p.collective = false;
  return p;
}

const char kAllreduce[] = "allreduce #5 (count 1024 float32 sum, ring)";

HangView viewOf(int self, std::vector<std::optional<HangPosition>> positions) {
  HangView v;
  v.self = self;
  v.positions = std::move(positions);
  v.waitedSec = 3;
  return v;
}

TEST(HangPosition, RoundTripsThroughItsEncoding) {
  HangPosition p = at(17, kAllreduce, "data from rank 3 (step 0), rank 1 to accept data (step 2)");
  p.late = true;
  p.completedSteps = 1;
  auto back = decodeHangPosition(encodeHangPosition(p));
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->collective);
  EXPECT_EQ(back->seq, 17u);
  EXPECT_TRUE(back->late);
  EXPECT_EQ(back->call, kAllreduce);
  EXPECT_EQ(back->waitingOn, p.waitingOn);
  EXPECT_EQ(back->completedSteps, 1u);
  EXPECT_EQ(back->totalSteps, 2u);
  auto point = decodeHangPosition(encodeHangPosition(p2p(3, "recv from rank 0 (tag 7, count 4 int32)")));
  ASSERT_TRUE(point.has_value());
  EXPECT_FALSE(point->collective);
  EXPECT_EQ(point->seq, 3u);
}

TEST(HangPosition, LongTextsAreCutAndNewlinesCannotForgeFields) {
  // Built by appending: GCC 12 at -O1 misreads string(n, c) + "..." as out of bounds
  // (-Warray-bounds on the moved temporary; GCC bug 105651).
  std::string call(1000, 'c');
  call += "\nforged";
  HangPosition p = at(1, call, std::string(1000, 'w'));
  auto back = decodeHangPosition(encodeHangPosition(p));
  ASSERT_TRUE(back.has_value());
  EXPECT_LT(back->call.size(), 300u);
  EXPECT_LT(back->waitingOn.size(), 400u);
  EXPECT_EQ(back->call.find('\n'), std::string::npos);
}

TEST(HangPosition, JunkIsRejected) {
  auto bytes = [](const std::string& s) { return std::vector<std::uint8_t>(s.begin(), s.end()); };
  EXPECT_FALSE(decodeHangPosition(bytes("")).has_value());
  EXPECT_FALSE(decodeHangPosition(bytes("hello")).has_value());
  EXPECT_FALSE(decodeHangPosition(bytes("tutti-hang-1\ncollective\n5\n0\n0\n0\ncall")).has_value());
  EXPECT_FALSE(decodeHangPosition(bytes("tutti-hang-9\ncollective\n5\n0\n0\n0\ncall\n")).has_value());
  EXPECT_FALSE(decodeHangPosition(bytes("tutti-hang-1\nsomething\n5\n0\n0\n0\ncall\n")).has_value());
  EXPECT_FALSE(decodeHangPosition(bytes("tutti-hang-1\ncollective\n-5\n0\n0\n0\ncall\n")).has_value());
  EXPECT_FALSE(decodeHangPosition(bytes("tutti-hang-1\ncollective\n5\n2\n0\n0\ncall\n")).has_value());
  EXPECT_FALSE(decodeHangPosition(bytes("tutti-hang-1\ncollective\n5\n0\nx\n0\ncall\n")).has_value());
  EXPECT_FALSE(decodeHangPosition(bytes("tutti-hang-1\ncollective\n5\n0\n0\n0\n\n")).has_value());
  EXPECT_TRUE(decodeHangPosition(bytes("tutti-hang-1\ncollective\n5\n0\n0\n0\ncall\n")).has_value());
}

TEST(SummarizeHang, NamesTheRankThatDidNotReport) {
  auto view = viewOf(0, {at(5, kAllreduce, "data from rank 3 (step 0)"),
                         at(5, kAllreduce, "data from rank 3 (step 1)"), at(5, kAllreduce), std::nullopt});
  int blame = -5;
  const std::string text = summarizeHang(view, &blame);
  EXPECT_EQ(text,
            "hang report: reached allreduce #5: ranks 0-2 (rank 0: 0 of 2 steps done, waiting for "
            "data from rank 3 (step 0); rank 1: 0 of 2 steps done, waiting for data from rank 3 "
            "(step 1)); did not report within 3 s (stopped, dead, or outside any tutti call): rank 3");
  EXPECT_EQ(blame, 3);
}

TEST(SummarizeHang, RanksThatDidNotReportAreNamedWithTheirHosts) {
  // Ranks 2-3 (a host cut off) and 5 (another host's) are missing.
  auto view = viewOf(0, {at(5, kAllreduce), at(5, kAllreduce), std::nullopt, std::nullopt,
                         at(5, kAllreduce), std::nullopt});
  view.hosts = {"host 0 'a' at 10.0.0.1", "host 0 'a' at 10.0.0.1", "host 1 'b' at 10.0.0.2",
                "host 1 'b' at 10.0.0.2", "host 2 'c' at 10.0.0.3", "host 2 'c' at 10.0.0.3"};
  int blame = -5;
  const std::string text = summarizeHang(view, &blame);
  EXPECT_NE(text.find("did not report within 3 s (stopped, dead, or outside any tutti call): "
                      "ranks 2-3 on host 1 'b' at 10.0.0.2, rank 5 on host 2 'c' at 10.0.0.3"),
            std::string::npos)
      << text;
  EXPECT_EQ(blame, Status::kNoRank);
}

TEST(SummarizeHang, NamesOtherCallsEarlierLaterAndPointToPoint) {
  auto view = viewOf(1, {at(4, "barrier #4"), at(5, kAllreduce), at(6, "allgather #6 (count 1 int8, ring)"),
                         p2p(5, "recv from rank 0 (tag 7, count 4 int32)"),
                         p2p(6, "send to rank 1 (tag 2, count 1 int8)"), at(5, kAllreduce)});
  int blame = -5;
  const std::string text = summarizeHang(view, &blame);
  EXPECT_NE(text.find("reached allreduce #5: ranks 1,5"), std::string::npos) << text;
  EXPECT_NE(text.find("in barrier #4, an earlier call: rank 0"), std::string::npos) << text;
  EXPECT_NE(text.find("in allgather #6 (count 1 int8, ring), a later call: rank 2"), std::string::npos) << text;
  EXPECT_NE(text.find("in recv from rank 0 (tag 7, count 4 int32), not yet at allreduce #5: rank 3 "
                      "(rank 3: 0 of 2 steps done, waiting for data from rank 0 (step 0))"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("in send to rank 1 (tag 2, count 1 int8), already past allreduce #5: rank 4"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("did not report"), std::string::npos) << text;
  EXPECT_EQ(blame, Status::kNoRank);  // four ranks elsewhere: no single culprit
}

TEST(SummarizeHang, FromAPointToPointCallOthersAreNamedByTheirCall) {
  auto view = viewOf(2, {at(3, kAllreduce), at(3, kAllreduce), p2p(3, "recv from rank 0 (tag 7, count 4 int32)")});
  int blame = -5;
  const std::string text = summarizeHang(view, &blame);
  EXPECT_EQ(text.rfind("hang report: in recv from rank 0 (tag 7, count 4 int32): rank 2 (rank 2: ", 0), 0u)
      << text;
  EXPECT_NE(text.find("; in allreduce #5 (count 1024 float32 sum, ring): ranks 0-1"), std::string::npos) << text;
  EXPECT_EQ(blame, Status::kNoRank);
}

TEST(SummarizeHang, ALateRankIsToldItCameLate) {
  HangPosition late = at(5, kAllreduce);
  late.late = true;
  auto view = viewOf(2, {at(5, kAllreduce, "data from rank 2 (step 0)"), at(5, kAllreduce), late});
  int blame = -5;
  const std::string text = summarizeHang(view, &blame);
  EXPECT_EQ(text.rfind("hang report: reached allreduce #5 after the communicator had failed: rank 2; "
                       "reached allreduce #5: ranks 0-1",
                       0),
            0u)
      << text;
  EXPECT_EQ(blame, Status::kNoRank);  // the others were in this call too
  // Seen from rank 0, the late rank is the one that was not there in time.
  view.self = 0;
  summarizeHang(view, &blame);
  EXPECT_EQ(blame, 2);
}

TEST(SummarizeHang, WaitingDetailsAreCappedAndCounted) {
  std::vector<std::optional<HangPosition>> positions;
  for (int r = 0; r < 12; ++r) positions.push_back(at(5, kAllreduce, "data from rank 12 (step 0)"));
  positions.push_back(std::nullopt);
  int blame = -5;
  const std::string text = summarizeHang(viewOf(0, positions), &blame);
  EXPECT_NE(text.find("rank 7: 0 of 2 steps done"), std::string::npos) << text;
  EXPECT_EQ(text.find("rank 8: 0 of 2 steps done"), std::string::npos) << text;
  EXPECT_NE(text.find("4 more ranks were waiting too"), std::string::npos) << text;
  EXPECT_EQ(blame, 12);
}

TEST(SummarizeHang, UnreadAndUnreadableRanksAreNotBlamed) {
  auto view = viewOf(0, {at(5, kAllreduce), std::nullopt, std::nullopt, std::nullopt});
  view.unreadable = {1};
  view.unread = {2};
  view.storeError = Status(ErrorCode::kPeerFailure, "store at 1.2.3.4:5 closed the connection");
  int blame = -5;
  const std::string text = summarizeHang(view, &blame);
  EXPECT_NE(text.find("posted something unreadable: rank 1"), std::string::npos) << text;
  EXPECT_NE(text.find("not known (store at 1.2.3.4:5 closed the connection): rank 2"), std::string::npos) << text;
  EXPECT_NE(text.find("did not report within 3 s (stopped, dead, or outside any tutti call): rank 3"),
            std::string::npos)
      << text;
  EXPECT_EQ(blame, Status::kNoRank);
}

TEST(SummarizeHang, WithoutThisRanksOwnPostTheStoreIsBlamed) {
  auto view = viewOf(0, {std::nullopt, std::nullopt});
  view.storeError = Status(ErrorCode::kTimeout, "store at 1.2.3.4:5 did not answer SET");
  int blame = -5;
  EXPECT_EQ(summarizeHang(view, &blame),
            "hang report: this rank could not post where it was (store at 1.2.3.4:5 did not answer SET)");
  EXPECT_EQ(blame, Status::kNoRank);
}

TEST(ExchangeHangPositions, EveryRankSeesEveryPostAndAnAbsentRankIsMissing) {
  auto store = makeMemoryStore();
  const Deadline outer = Deadline::afterSeconds(60);
  // Ranks 0-2 post; rank 3 never does. Each waits 200 ms for it.
  std::vector<HangView> views(3);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.emplace_back([&, r] {
      views[static_cast<std::size_t>(r)] = exchangeHangPositions(
          *store, "tutti/world/0/", r, 4, at(5, kAllreduce), Deadline::after(std::chrono::milliseconds(200)));
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 3; ++r) {
    const HangView& v = views[static_cast<std::size_t>(r)];
    EXPECT_TRUE(v.storeError.ok()) << v.storeError.toString();
    // A rank that finished waiting before another posted may miss it; rank 3 is always missing.
    EXPECT_TRUE(v.positions[static_cast<std::size_t>(r)].has_value());
    EXPECT_FALSE(v.positions[3].has_value());
    EXPECT_TRUE(v.unread.empty());
  }
  // Once all have posted, a late reader waits for no one.
  ASSERT_TRUE(store->set("tutti/world/0/hang/3", encodeHangPosition(at(4, "barrier #4"))).ok());
  HangView late = exchangeHangPositions(*store, "tutti/world/0/", 0, 4, at(5, kAllreduce), Deadline::afterSeconds(60));
  for (int r = 0; r < 4; ++r) EXPECT_TRUE(late.positions[static_cast<std::size_t>(r)].has_value()) << r;
  EXPECT_EQ(late.positions[3]->call, "barrier #4");
  EXPECT_FALSE(outer.expired());
}

TEST(ExchangeHangPositions, AStoreThatNeverAnswersCostsOnlyTheWait) {
  // A store that authenticates the client and then never answers: a stopped rank serving
  // the store looks like this once connected.
  auto listener = listenTcp("127.0.0.1", 0);
  ASSERT_TRUE(listener.ok()) << listener.status().toString();
  auto address = localAddress(listener->get());
  ASSERT_TRUE(address.ok());
  std::atomic<bool> done{false};
  std::thread silentServer([&] {
    UniqueFd fd;
    const Deadline until = Deadline::afterSeconds(30);
    while (!fd.valid() && !until.expired()) {
      pollfd p{listener->get(), POLLIN, 0};
      if (::poll(&p, 1, 100) > 0) {
        auto accepted = acceptTcp(listener->get());
        if (accepted.ok()) fd = std::move(accepted).value();
      }
    }
    if (!fd.valid()) return;
    auto nonce = auth::randomNonce();
    if (!nonce.ok()) return;
    const auth::Key key;  // the handshake keeps a pointer to it
    auth::ServerHandshake handshake(key, auth::Context::store(), *nonce);
    const auth::ChallengeBytes challenge = handshake.challenge();
    if (!writeFull(fd.get(), challenge.data(), challenge.size(), until).ok()) return;
    auth::ResponseBytes response{};
    if (!readFull(fd.get(), response.data(), response.size(), until).ok()) return;
    auth::VerdictBytes verdict{};
    (void)handshake.answer(response, &verdict);
    (void)writeFull(fd.get(), verdict.data(), verdict.size(), until);
    while (!done.load() && !until.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  ScopeExit stopServer([&] {
    done.store(true);
    silentServer.join();
  });
  auto client = TcpStoreClient::connect(*address, auth::Key(), Deadline::afterSeconds(30),
                                        std::chrono::seconds(300));
  ASSERT_TRUE(client.ok()) << client.status().toString();
  const Deadline outer = Deadline::afterSeconds(60);
  HangView v = exchangeHangPositions(**client, "tutti/world/0/", 1, 3, at(5, kAllreduce),
                                     Deadline::after(std::chrono::milliseconds(200)));
  EXPECT_FALSE(outer.expired());
  EXPECT_EQ(v.storeError.code(), ErrorCode::kTimeout) << v.storeError.toString();
  int blame = -5;
  const std::string text = summarizeHang(v, &blame);
  EXPECT_NE(text.find("this rank could not post where it was (store at "), std::string::npos) << text;
  EXPECT_EQ(blame, Status::kNoRank);
}

}  // namespace
}  // namespace tutti::detail
