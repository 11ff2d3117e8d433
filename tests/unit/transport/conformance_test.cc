// The transport conformance suite: what link.h promises of every Transport and Link, run
// over each transport, ranks as threads of this process. Each test is named after the rule
// it checks and instantiated once per entry of transportKinds() below; a new transport
// joins by adding its entry. What only one transport does (its rings, its sockets, its
// thresholds) stays in that transport's own tests.

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "base/strings.h"
#include "transport/call_checker.h"
#include "transport/hybrid/hybrid_transport.h"
#include "transport/shm/shm_transport.h"
#include "transport/loopback.h"
#include "transport/tag.h"
#include "transport/tcp/tcp_link.h"
#include "transport/tcp/tcp_transport.h"
#include "unit/transport/conformance.h"
#include "unit/transport/shm_setup.h"
#include "unit/transport/tcp_setup.h"

namespace tutti::test {
namespace {

// ---- the transports -----------------------------------------------------------------------

// Shared memory, in both of its ways for large messages: rendezvous (the receiver reads the
// sender's buffer, from 256 KiB) and everything copied through the rings.
TransportKind shmKind(const char* name, std::uint64_t cmaBytes) {
  return {name, [cmaBytes](int size, const ConnectOptions& options) {
            shm::ShmSetup setup;
            setup.cmaBytes = cmaBytes;
            setup.maxUnexpected = options.maxUnexpectedBytes;
            auto ts = shm::connectAll(size, setup);
            std::vector<shm::ShmTransport*> raw;
            Ranks ranks;
            for (auto& t : ts) {
              raw.push_back(t.get());
              ranks.transports.push_back(std::move(t));
            }
            ranks.unexpectedMessages = [raw](int r) {
              return raw[static_cast<std::size_t>(r)]->unexpectedMessages();
            };
            return ranks;
          }};
}

std::size_t tcpUnexpected(tcp::TcpTransport& t) {
  std::size_t n = 0;
  for (int peer = 0; peer < t.size(); ++peer) {
    if (peer != t.rank()) n += static_cast<tcp::TcpLink&>(t.link(peer)).unexpectedMessages();
  }
  return n;
}

// TcpStreams: three connections per pair, messages of 256 KiB or more striped across them.
TransportKind tcpKind(const char* name = "Tcp", int streams = 0) {
  return {name, [streams](int size, const ConnectOptions& options) {
            auto ts = tcp::connectAll(size, makeMemoryStore(), options.maxUnexpectedBytes,
                                      streams);
            std::vector<tcp::TcpTransport*> raw;
            Ranks ranks;
            for (auto& t : ts) {
              raw.push_back(t.get());
              ranks.transports.push_back(std::move(t));
            }
            ranks.unexpectedMessages = [raw](int r) {
              return tcpUnexpected(*raw[static_cast<std::size_t>(r)]);
            };
            return ranks;
          }};
}

// Ranks 2k and 2k+1 share a host (as the multi-process tests' "hybrid" does): shared memory
// between them, TCP to the others; a rank alone on its host is reached over TCP only, as
// the communicator does. Two-rank tests run through the hybrid over its shared-memory
// side, the tests of three and four ranks over both.
std::string hostOfPair(int rank) { return "host" + std::to_string(rank / 2); }

TransportKind hybridKind() {
  return {"Hybrid", [](int size, const ConnectOptions& options) {
            shm::ShmSetup setup;
            setup.maxUnexpected = options.maxUnexpectedBytes;
            setup.hostOf = &hostOfPair;
            auto shms = shm::connectAll(size, setup);
            auto tcps = tcp::connectAll(size, makeMemoryStore(), options.maxUnexpectedBytes);
            std::vector<shm::ShmTransport*> localRaw;
            std::vector<tcp::TcpTransport*> tcpRaw;
            Ranks ranks;
            for (int r = 0; r < size; ++r) {
              auto& local = shms[static_cast<std::size_t>(r)];
              auto& remote = tcps[static_cast<std::size_t>(r)];
              localRaw.push_back(local.get());
              tcpRaw.push_back(remote.get());
              if (local && remote)
                ranks.transports.push_back(
                    std::make_unique<HybridTransport>(std::move(local), std::move(remote)));
              else
                ranks.transports.push_back(std::move(remote));
            }
            ranks.unexpectedMessages = [localRaw, tcpRaw](int r) {
              const auto i = static_cast<std::size_t>(r);
              return (localRaw[i] ? localRaw[i]->unexpectedMessages() : 0) +
                     (tcpRaw[i] ? tcpUnexpected(*tcpRaw[i]) : 0);
            };
            return ranks;
          }};
}

std::vector<TransportKind> transportKinds() {
  return {shmKind("ShmRendezvous", 256u << 10), shmKind("ShmRingOnly", 0), tcpKind(),
          tcpKind("TcpStreams", 3), hybridKind()};
}

class Conformance : public ::testing::TestWithParam<TransportKind> {
 protected:
  Ranks connect(int size, const ConnectOptions& options = {}) {
    Ranks ranks = GetParam().connect(size, options);
    EXPECT_EQ(ranks.transports.size(), static_cast<std::size_t>(size));
    for (const auto& t : ranks.transports) EXPECT_NE(t, nullptr);
    return ranks;
  }
};

// ---- matching and ordering ----------------------------------------------------------------

TEST_P(Conformance, AllPairsExchangeMessagesOfManySizes) {
  Ranks ts = connect(4);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::vector<Transport*> ranks;
  for (auto& t : ts.transports) ranks.push_back(t.get());
  // Empty, tiny, around 4 KiB (the shm tests' ring slot), past a ring's capacity, around
  // shm's 256 KiB rendezvous threshold and several MiB. Under TSan, where every byte written
  // and compared is instrumented, the largest is 1 MiB: past the rendezvous and TCP's striping
  // thresholds (256 KiB) as 3 MiB is, in fewer pieces.
#if defined(TUTTI_TSAN)
  constexpr std::size_t kLargest = (1u << 20) + 3;
#else
  constexpr std::size_t kLargest = 3u << 20;
#endif
  EXPECT_EQ(exchangeAllPairs(ranks, {0, 1, 31, 4095, 4096, 4097, 70000, 256 << 10, kLargest}),
            "");
}

// As a call runs them: the thread that waits drives the transport (Transport::setDriving),
// and a hybrid's waiter reads the TCP sockets itself while it polls.
TEST_P(Conformance, ThreadsThatDriveTheirTransportExchangeMessagesOfManySizes) {
  Ranks ts = connect(4);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::vector<Transport*> ranks;
  for (auto& t : ts.transports) ranks.push_back(t.get());
  EXPECT_EQ(exchangeAllPairs(ranks, {0, 1, 4097, 70000, 1u << 20}, /*driven=*/true), "");
}

// A driving waiter that goes to sleep (its poll window, a few ms, spent) hands the sockets
// to the transport's own thread, which then wakes it; it takes them back when it wakes. The
// messages come after every receiver sleeps, once per round.
TEST_P(Conformance, ADrivingWaiterThatSleepsStillGetsItsMessages) {
  Ranks ts = connect(4);
  ASSERT_FALSE(::testing::Test::HasFailure());
  constexpr int kRounds = 3;
  std::vector<std::thread> threads;
  for (int r = 1; r < 4; ++r) {
    threads.emplace_back([&, r] {
      ts[r].setDriving(true);
      for (int round = 0; round < kRounds; ++round) {
        std::uint64_t got = 0;
        TransferRequest recv;
        ts[r].link(0).postRecv(&recv, 9, &got, sizeof got);
        EXPECT_TRUE(waitFor(ts[r], recv).ok());
        EXPECT_EQ(got, static_cast<std::uint64_t>(100 * round + r));
        TransferRequest ack;
        ts[r].link(0).postSend(&ack, 10, &got, sizeof got);
        EXPECT_TRUE(waitFor(ts[r], ack).ok());
      }
      ts[r].setDriving(false);
    });
  }
  ts[0].setDriving(true);
  for (int round = 0; round < kRounds; ++round) {
    // Longer than the receivers' poll window (shm's 5 ms), so that they sleep first; the
    // test passes either way.
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::vector<std::uint64_t> values(4), acks(4);
    std::vector<TransferRequest> sends(4), recvs(4);
    for (int r = 1; r < 4; ++r) {
      const auto i = static_cast<std::size_t>(r);
      values[i] = static_cast<std::uint64_t>(100 * round + r);
      ts[0].link(r).postRecv(&recvs[i], 10, &acks[i], sizeof acks[i]);
      ts[0].link(r).postSend(&sends[i], 9, &values[i], sizeof values[i]);
    }
    for (std::size_t i = 1; i < 4; ++i) {
      EXPECT_TRUE(waitFor(ts[0], sends[i]).ok());
      EXPECT_TRUE(waitFor(ts[0], recvs[i]).ok());
      EXPECT_EQ(acks[i], values[i]);
    }
  }
  ts[0].setDriving(false);
  for (auto& th : threads) th.join();
}

TEST_P(Conformance, EqualTagsAreReceivedInSendOrder) {
  Ranks ts = connect(2);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::vector<std::uint32_t> values(100);
  std::iota(values.begin(), values.end(), 0u);
  std::vector<TransferRequest> sends(values.size());
  std::vector<std::uint32_t> got(values.size(), 999);
  std::vector<TransferRequest> recvs(values.size());
  // More messages than a shm ring has slots: the sender waits for the receiver to make room.
  std::thread sender([&] {
    for (std::size_t i = 0; i < values.size(); ++i)
      ts[0].link(1).postSend(&sends[i], 7, &values[i], sizeof(std::uint32_t));
    for (auto& s : sends) EXPECT_TRUE(waitFor(ts[0], s).ok());
  });
  for (std::size_t i = 0; i < values.size(); ++i)
    ts[1].link(0).postRecv(&recvs[i], 7, &got[i], sizeof(std::uint32_t));
  for (auto& r : recvs) EXPECT_TRUE(waitFor(ts[1], r).ok());
  sender.join();
  EXPECT_EQ(got, values);
}

TEST_P(Conformance, CancelledReceiveIsNeverWritten) {
  Ranks ts = connect(2);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::vector<char> in(16, 'z');
  TransferRequest recv;
  ts[1].link(0).postRecv(&recv, 3, in.data(), in.size());
  ts[1].link(0).cancel(&recv);
  EXPECT_TRUE(recv.done());
  EXPECT_EQ(recv.status().code(), ErrorCode::kAborted);
  std::vector<char> out(16, 'a');
  TransferRequest send, again;
  ts[0].link(1).postSend(&send, 3, out.data(), out.size());
  std::vector<char> in2(16);
  ts[1].link(0).postRecv(&again, 3, in2.data(), in2.size());
  ASSERT_TRUE(waitFor(ts[1], again).ok());
  EXPECT_TRUE(waitFor(ts[0], send).ok());
  EXPECT_EQ(in, std::vector<char>(16, 'z'));
  EXPECT_EQ(in2, out);
}

// ---- calls that disagree ------------------------------------------------------------------

// Small and large (a shm rendezvous message): the receive fails with kMismatch, naming the
// sender and both lengths. (Shared memory also fails both transports: its own tests.)
TEST_P(Conformance, SizeMismatchFailsTheReceiveNamingThePeerAndBothSizes) {
  for (const std::size_t bytes : {std::size_t{100}, std::size_t{1} << 20}) {
    SCOPED_TRACE(::testing::Message() << bytes << " bytes sent");
    Ranks ts = connect(2);
    ASSERT_FALSE(::testing::Test::HasFailure());
    const std::size_t expected = bytes - 36;
    std::vector<char> out(bytes, 'x'), in(expected);
    TransferRequest send, recv;
    ts[0].link(1).postSend(&send, 1, out.data(), out.size());
    ts[1].link(0).postRecv(&recv, 1, in.data(), in.size());
    Status s = waitFor(ts[1], recv);
    EXPECT_EQ(s.code(), ErrorCode::kMismatch) << s.toString();
    EXPECT_EQ(s.peerRank(), 0);
    for (const std::string& word : {std::string("rank 0"), std::to_string(bytes),
                                    std::to_string(expected)})
      EXPECT_NE(s.message().find(word), std::string::npos) << word << ": " << s.toString();
    Status sent = waitFor(ts[0], send);
    if (!sent.ok()) {
      EXPECT_EQ(sent.code(), ErrorCode::kMismatch) << sent.toString();
    }
  }
}

// A receive whose call stamp conflicts with the sender's fails with kMismatch and the
// sender's stamp, before any byte lands in its buffer: whether it was posted before the
// message came or the message waited for it, small or large.
TEST_P(Conformance, AReceiveStampedForAnotherCallFailsBeforeAnyByteLands) {
  const CallStamp mine{0x8000000000000009ull, 1}, theirs{0x8000000000000009ull, 2};
  const Tag tag = collectiveTagBase(0, 1);
  for (const std::size_t bytes : {std::size_t{64}, std::size_t{1} << 20}) {
    for (const bool early : {false, true}) {
      SCOPED_TRACE(::testing::Message() << bytes << " bytes"
                                        << (early ? ", sent before the receive" : ""));
      Ranks ts = connect(2);
      ASSERT_FALSE(::testing::Test::HasFailure());
      const auto out = pattern(bytes, 5);
      std::vector<std::uint8_t> in(bytes, 0x5a);
      TransferRequest send, recv, markSend, markRecv;
      send.stamp = theirs;
      recv.stamp = mine;
      auto post = [&] { ts[1].link(0).postRecv(&recv, tag, in.data(), in.size()); };
      if (!early) post();
      ts[0].link(1).postSend(&send, tag, out.data(), out.size());
      if (early) {
        // A message behind it: once that one is in, the first came before its receive.
        std::uint8_t mark = 1, markIn = 0;
        ts[0].link(1).postSend(&markSend, p2pTag(0, 9), &mark, 1);
        ts[1].link(0).postRecv(&markRecv, p2pTag(0, 9), &markIn, 1);
        std::thread sender([&] { EXPECT_TRUE(waitFor(ts[0], markSend).ok()); });
        EXPECT_TRUE(waitFor(ts[1], markRecv).ok());
        sender.join();
        post();
      }
      Status s = waitFor(ts[1], recv);
      EXPECT_EQ(s.code(), ErrorCode::kMismatch) << s.toString();
      EXPECT_EQ(s.peerRank(), 0);
      EXPECT_EQ(recv.peerStamp, theirs);
      EXPECT_EQ(in, std::vector<std::uint8_t>(bytes, 0x5a)) << "bytes landed";
      // The executor then fails the transport; the sender learns of it, if it still waits.
      ts[1].fail(s);
      EXPECT_EQ(ts[1].health().code(), ErrorCode::kMismatch);
      Status sent = waitFor(ts[0], send);
      EXPECT_TRUE(send.done()) << sent.toString();
    }
  }
}

std::string describeForTest(const CallStamp& stamp, std::uint64_t seq) {
  return strFormat("call(%llu)#%llu", static_cast<unsigned long long>(stamp.count),
                   static_cast<unsigned long long>(seq));
}

// A probe (tag.h: a rank that waits long tells a peer which call it is in) is never
// received nor buffered: the link gives its stamp to the call checker and drops it. One
// that agrees with the receiver's call changes nothing; one of another call fails the
// receiver's transport with the checker's words naming both calls.
TEST_P(Conformance, AProbeGoesToTheCallCheckerAndIsNeverReceived) {
  const CallStamp mine{0x8000000000000009ull, 1}, theirs{0x8000000000000009ull, 2};
  CallChecker checker(1, &describeForTest);  // outlives the transports, as in a communicator
  Ranks ts = connect(2);
  ASSERT_FALSE(::testing::Test::HasFailure());
  ts[1].setCallChecker(&checker);
  ASSERT_TRUE(checker.begin(3, mine).ok());
  TransferRequest agreeing, conflicting, markSend, markRecv;
  agreeing.stamp = mine;
  ts[0].link(1).postSend(&agreeing, probeTag(0, 3), nullptr, 0);
  // A message behind it: once that one is in, the probe was taken.
  std::uint8_t mark = 1, markIn = 0;
  ts[0].link(1).postSend(&markSend, p2pTag(0, 9), &mark, 1);
  ts[1].link(0).postRecv(&markRecv, p2pTag(0, 9), &markIn, 1);
  std::thread sender([&] { EXPECT_TRUE(waitFor(ts[0], markSend).ok()); });
  EXPECT_TRUE(waitFor(ts[1], markRecv).ok());
  sender.join();
  EXPECT_TRUE(ts[1].health().ok()) << ts[1].health().toString();
  EXPECT_EQ(ts.unexpectedMessages(1), 0u) << "a probe was buffered";
  conflicting.stamp = theirs;
  ts[0].link(1).postSend(&conflicting, probeTag(0, 3), nullptr, 0);
  Status s = waitForFailure(ts[1]);
  EXPECT_EQ(s.code(), ErrorCode::kMismatch) << s.toString();
  EXPECT_NE(s.message().find("rank 0 called call(2)#3 while rank 1 called call(1)#3"),
            std::string::npos)
      << s.toString();
  EXPECT_EQ(s.peerRank(), 0);
}

// A rank sends to itself through its transport's loopback link (loopback.h), in every order:
// the receive first, the send first (buffered, so a blocking send before its receive does
// not wait on itself), several on one tag in order, and a length that differs.
TEST_P(Conformance, ALinkToSelfDeliversInEveryOrder) {
  Ranks ts = connect(2);
  ASSERT_FALSE(::testing::Test::HasFailure());
  Link& self = ts[1].linkTo(1);
  EXPECT_EQ(&self, &ts[1].loopback());
  EXPECT_EQ(self.peer(), 1);
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{7}, std::size_t{1} << 20}) {
    const auto out = pattern(bytes, 6);
    std::vector<std::uint8_t> in(bytes, 0);
    TransferRequest send, recv;
    self.postRecv(&recv, p2pTag(0, 1), in.data(), in.size());
    EXPECT_FALSE(recv.done());
    self.postSend(&send, p2pTag(0, 1), out.data(), out.size());
    EXPECT_TRUE(send.done() && send.status().ok() && recv.done() && recv.status().ok());
    EXPECT_EQ(in, out) << bytes << " bytes, receive first";
    std::fill(in.begin(), in.end(), 0);
    std::vector<std::uint8_t> copy = out;
    self.postSend(&send, p2pTag(0, 2), copy.data(), copy.size());
    EXPECT_TRUE(send.done() && send.status().ok()) << "a send before its receive waits";
    std::fill(copy.begin(), copy.end(), 0);  // buffered: the sender's buffer is free again
    self.postRecv(&recv, p2pTag(0, 2), in.data(), in.size());
    EXPECT_TRUE(recv.done() && recv.status().ok());
    EXPECT_EQ(in, out) << bytes << " bytes, send first";
  }
  TransferRequest sends[3], recvs[3];
  const std::uint8_t values[3] = {1, 2, 3};
  std::uint8_t got[3] = {};
  for (int k = 0; k < 3; ++k) self.postSend(&sends[k], p2pTag(0, 4), &values[k], 1);
  for (int k = 0; k < 3; ++k) self.postRecv(&recvs[k], p2pTag(0, 4), &got[k], 1);
  EXPECT_EQ(got[0] * 100 + got[1] * 10 + got[2], 123) << "one tag, in the order sent";
  std::uint8_t two[2] = {}, one = 0;
  TransferRequest longer, shorter, pending;
  self.postSend(&longer, p2pTag(0, 5), two, 2);
  self.postRecv(&shorter, p2pTag(0, 5), &one, 1);
  EXPECT_EQ(shorter.status().code(), ErrorCode::kMismatch) << shorter.status().toString();
  self.postRecv(&pending, p2pTag(0, 6), &one, 1);
  self.cancel(&pending);
  EXPECT_TRUE(pending.done());
  EXPECT_EQ(pending.status().code(), ErrorCode::kAborted);
}

// ---- unexpected messages ------------------------------------------------------------------

// Two 2 MiB messages (point-to-point tags, which shared memory never sends by rendezvous)
// against a 1 MiB cap: the first fills the budget, the second waits with its sender until
// the receives are posted, in the other order; both arrive whole.
TEST_P(Conformance, UnexpectedBytesAreCappedByBackPressure) {
  ConnectOptions options;
  options.maxUnexpectedBytes = 1u << 20;
  Ranks ts = connect(2, options);
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto a = pattern(2u << 20, 3), b = pattern(2u << 20, 4);
  TransferRequest sendA, sendB, recvA, recvB;
  std::thread sender([&] {
    ts[0].link(1).postSend(&sendA, p2pTag(0, 1), a.data(), a.size());
    ts[0].link(1).postSend(&sendB, p2pTag(0, 2), b.data(), b.size());
    EXPECT_TRUE(waitFor(ts[0], sendA).ok());
    EXPECT_TRUE(waitFor(ts[0], sendB).ok());
  });
  std::vector<std::uint8_t> inA(a.size()), inB(b.size());
  ts[1].link(0).postRecv(&recvB, p2pTag(0, 2), inB.data(), inB.size());
  ts[1].link(0).postRecv(&recvA, p2pTag(0, 1), inA.data(), inA.size());
  EXPECT_TRUE(waitFor(ts[1], recvA).ok());
  EXPECT_TRUE(waitFor(ts[1], recvB).ok());
  sender.join();
  EXPECT_EQ(inA, a);
  EXPECT_EQ(inB, b);
}

// Empty messages nobody receives yet: each one buffered holds memory though it carries no
// byte, so the receiver stops taking them at the cap as it does for large messages
// (kUnexpectedOverheadBytes each at least); every one arrives once the receives are posted.
TEST_P(Conformance, EmptyUnexpectedMessagesCountAgainstTheCap) {
  ConnectOptions options;
  options.maxUnexpectedBytes = 16u << 10;
  Ranks ts = connect(2, options);
  ASSERT_FALSE(::testing::Test::HasFailure());
  constexpr std::size_t kMessages = 2000;
  std::vector<TransferRequest> sends(kMessages), recvs(kMessages);
  std::thread sender([&] {
    for (auto& send : sends) ts[0].link(1).postSend(&send, p2pTag(0, 1), nullptr, 0);
    for (auto& send : sends) EXPECT_TRUE(waitFor(ts[0], send).ok());
  });
  // Rank 1 makes progress (a transport without a thread of its own takes messages only
  // then) for 300 passes and until some message is in; the cap must hold throughout.
  std::size_t most = 0;
  const Deadline bound = Deadline::afterSeconds(30);
  for (int pass = 0; (pass < 300 || most == 0) && !bound.expired(); ++pass) {
    auto seen = ts[1].progressSignal().snapshot();
    ts[1].waitForProgress(seen, Deadline::afterSeconds(0.001), 0);
    most = std::max(most, ts.unexpectedMessages(1));
  }
  EXPECT_GT(most, 0u);
  EXPECT_LE(most, options.maxUnexpectedBytes / kUnexpectedOverheadBytes);
  for (auto& recv : recvs) ts[1].link(0).postRecv(&recv, p2pTag(0, 1), nullptr, 0);
  for (auto& recv : recvs) EXPECT_TRUE(waitFor(ts[1], recv).ok());
  sender.join();
  EXPECT_EQ(ts.unexpectedMessages(1), 0u);
}

// ---- leaving and failing ------------------------------------------------------------------

TEST_P(Conformance, PeerThatLeavesFailsPendingReceivesNamingIt) {
  Ranks ts = connect(3);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::vector<char> in(8);
  TransferRequest recv;
  ts[0].link(2).postRecv(&recv, 9, in.data(), in.size());
  ts[2].shutdown(Deadline::afterSeconds(5));
  Status s = waitFor(ts[0], recv);
  EXPECT_EQ(s.code(), ErrorCode::kPeerFailure) << s.toString();
  EXPECT_EQ(s.peerRank(), 2);
  EXPECT_NE(s.message().find("rank 2"), std::string::npos) << s.toString();
  EXPECT_NE(s.message().find("left the communicator"), std::string::npos) << s.toString();
}

TEST_P(Conformance, MessagesSentBeforeLeavingStillArrive) {
  Ranks ts = connect(2);
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto data = pattern(100000, 9);
  TransferRequest send, recv;
  ts[1].link(0).postSend(&send, p2pTag(0, 5), data.data(), data.size());
  // A shm ring holds less than the message: shutdown flushes the rest as rank 0 drains.
  std::thread leaver([&] { ts[1].shutdown(Deadline::afterSeconds(20)); });
  std::vector<std::uint8_t> in(data.size());
  ts[0].link(1).postRecv(&recv, p2pTag(0, 5), in.data(), in.size());
  EXPECT_TRUE(waitFor(ts[0], recv).ok()) << recv.status().toString();
  leaver.join();
  EXPECT_EQ(in, data);
  EXPECT_TRUE(send.done());
}

// One rank fails (a timeout it blames on rank 3): every rank's transport fails with the
// same words and culprit, and a pending receive that completes, completes with them. (Shared
// memory completes every pending request at once: its own tests.)
TEST_P(Conformance, FailureReachesEveryRankWithTheSameWordsAndCulprit) {
  Ranks ts = connect(4);
  ASSERT_FALSE(::testing::Test::HasFailure());
  std::vector<char> in(8);
  std::vector<TransferRequest> recvs(3);
  const int waiter[] = {0, 2, 3}, from[] = {1, 3, 2};
  for (std::size_t i = 0; i < recvs.size(); ++i)
    ts[waiter[i]].link(from[i]).postRecv(&recvs[i], 1, in.data(), in.size());
  const std::string words = "allreduce #4 timed out waiting for rank 3";
  ts[1].fail(Status(ErrorCode::kTimeout, words, 3));
  for (int r = 0; r < 4; ++r) {
    Status s = waitForFailure(ts[r]);
    EXPECT_EQ(s.code(), ErrorCode::kTimeout) << "rank " << r << ": " << s.toString();
    EXPECT_EQ(s.message(), words) << "rank " << r;
    EXPECT_EQ(s.peerRank(), 3) << "rank " << r;
  }
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    TransferRequest& recv = recvs[i];
    if (!recv.done()) {  // still pending: health() told the rank
      ts[waiter[i]].link(from[i]).cancel(&recv);
      continue;
    }
    EXPECT_EQ(recv.status().code(), ErrorCode::kTimeout) << "rank " << waiter[i];
    EXPECT_EQ(recv.status().message(), words) << "rank " << waiter[i];
    EXPECT_EQ(recv.status().peerRank(), 3) << "rank " << waiter[i];
  }
}

INSTANTIATE_TEST_SUITE_P(Transports, Conformance, ::testing::ValuesIn(transportKinds()),
                         [](const ::testing::TestParamInfo<TransportKind>& param) {
                           return param.param.name;
                         });

}  // namespace
}  // namespace tutti::test
