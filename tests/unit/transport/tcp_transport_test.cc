// The TCP transport over real loopback sockets, ranks as threads rendezvousing through an
// in-memory store, and a peer played by hand over a socket pair. What every transport does
// (matching, order, caps, cancelling, leaving, failing) is in conformance_test.cc; this
// file keeps what is TCP's own: establishment, the wire, aborts as frames.

#include "transport/tcp/tcp_transport.h"

#include <gtest/gtest.h>

#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "base/net.h"
#include "transport/tcp/establish.h"
#include "transport/call_checker.h"
#include "transport/tag.h"
#include "transport/tcp/tcp_link.h"
#include "transport/tcp/wire.h"
#include "unit/transport/conformance.h"
#include "unit/transport/tcp_setup.h"

namespace tutti::tcp {
namespace {

using test::waitFor;

// Over TCP a rank that leaves fails only what waits for it (conformance_test.cc checks the
// receive's error): the other ranks still talk, and the transport stays healthy.
TEST(TcpTransport, PeerThatLeavesLeavesTheOthersLinked) {
  auto ts = connectAll(3, makeMemoryStore());
  std::vector<char> in(8);
  TransferRequest recv;
  ts[0]->link(2).postRecv(&recv, 9, in.data(), in.size());
  ts[2]->shutdown(Deadline::afterSeconds(5));
  Status s = waitFor(*ts[0], recv);
  EXPECT_EQ(s.code(), ErrorCode::kPeerFailure) << s.toString();
  EXPECT_EQ(s.peerRank(), 2);
  EXPECT_NE(s.message().find("left the communicator"), std::string::npos) << s.toString();
  // Rank 1 is unaffected and can still talk to rank 0.
  char x = 'q', y = 0;
  TransferRequest a, b;
  ts[1]->link(0).postSend(&a, 1, &x, 1);
  ts[0]->link(1).postRecv(&b, 1, &y, 1);
  ASSERT_TRUE(waitFor(*ts[0], b).ok());
  EXPECT_EQ(y, 'q');
  EXPECT_TRUE(ts[0]->health().ok()) << ts[0]->health().toString();
}

TEST(TcpTransport, StrangerConnectionsAreRefusedDuringEstablishment) {
  auto store = makeMemoryStore();
  std::unique_ptr<TcpTransport> t0, t1;
  std::thread rank0([&] {
    TcpTransport::Options o;
    o.rank = 0;
    o.size = 2;
    o.commUid = kUid;
    o.deadline = Deadline::afterSeconds(30);
    auto t = TcpTransport::create(*store, "s/", o);
    ASSERT_TRUE(t.ok()) << t.status().toString();
    t0 = std::move(t).value();
  });
  auto addr = store->get("s/addr/0", Deadline::afterSeconds(30));
  ASSERT_TRUE(addr.ok());
  auto hp = parsePublishedAddress(std::string(addr->begin(), addr->end()));
  ASSERT_TRUE(hp.ok());
  {  // garbage
    auto fd = connectTcp(hp->address, Deadline::afterSeconds(10));
    ASSERT_TRUE(fd.ok());
    const char junk[64] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_TRUE(writeFull(fd->get(), junk, sizeof(junk), Deadline::afterSeconds(5)).ok());
  }
  {  // a well-formed hello, without the authentication that must come first (tcp_auth_test.cc
     // has the strangers that authenticate)
    auto fd = connectTcp(hp->address, Deadline::afterSeconds(10));
    ASSERT_TRUE(fd.ok());
    auto header = encodeHeader(FrameHeader{FrameType::kHello, 0, kHelloBytes, 0, {}});
    auto hello = encodeHello(Hello{kUid + 1, 1, 2});
    ASSERT_TRUE(writeFull(fd->get(), header.data(), header.size(), Deadline::afterSeconds(5)).ok());
    ASSERT_TRUE(writeFull(fd->get(), hello.data(), hello.size(), Deadline::afterSeconds(5)).ok());
  }
  std::thread rank1([&] {
    TcpTransport::Options o;
    o.rank = 1;
    o.size = 2;
    o.commUid = kUid;
    o.deadline = Deadline::afterSeconds(30);
    auto t = TcpTransport::create(*store, "s/", o);
    ASSERT_TRUE(t.ok()) << t.status().toString();
    t1 = std::move(t).value();
  });
  rank0.join();
  rank1.join();
  ASSERT_TRUE(t0 && t1);
  int v = 77, w = 0;
  TransferRequest a, b;
  t1->link(0).postSend(&a, 1, &v, sizeof(v));
  t0->link(1).postRecv(&b, 1, &w, sizeof(w));
  ASSERT_TRUE(waitFor(*t0, b).ok());
  EXPECT_EQ(w, 77);
}

}  // namespace
}  // namespace tutti::tcp

namespace tutti::tcp {
namespace {

// Rank 0's transport with a link to "rank 1", whose other end the test drives by hand.
struct RawPeer {
  std::unique_ptr<TcpTransport> transport;
  UniqueFd raw;
};

RawPeer transportWithRawPeer() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
  std::vector<UniqueFd> sockets;
  sockets.emplace_back();
  sockets.emplace_back(sv[0]);
  auto t = TcpTransport::adopt(0, 2, std::move(sockets), {"", "rank 1 (test)"}, 1u << 20);
  EXPECT_TRUE(t.ok()) << t.status().toString();
  return RawPeer{std::move(t).value(), UniqueFd(sv[1])};
}

Status waitForFailure(Transport& t) {
  Deadline deadline = Deadline::afterSeconds(30);
  while (t.health().ok() && !deadline.expired()) {
    auto seen = t.progressSignal().snapshot();
    if (!t.health().ok()) break;
    t.progressSignal().waitChange(seen, Deadline::earliest(deadline, Deadline::afterSeconds(1)), 0);
  }
  return t.health();
}

TEST(TcpTransportFaults, GarbageOnAnEstablishedLinkIsAProtocolErrorNamingThePeer) {
  RawPeer p = transportWithRawPeer();
  std::vector<char> in(8);
  TransferRequest recv;
  p.transport->link(1).postRecv(&recv, 1, in.data(), in.size());
  const char junk[] = "this is not a tutti frame, just bytes on the wire";
  ASSERT_TRUE(writeFull(p.raw.get(), junk, sizeof(junk), Deadline::afterSeconds(5)).ok());
  Status s = waitFor(*p.transport, recv);
  EXPECT_EQ(s.code(), ErrorCode::kProtocolError) << s.toString();
  EXPECT_NE(s.message().find("rank 1 (test)"), std::string::npos) << s.toString();
  EXPECT_EQ(s.peerRank(), 1);
  EXPECT_EQ(waitForFailure(*p.transport).code(), ErrorCode::kProtocolError);
}

// Ranks set up with different TUTTI_TCP_STREAMS: both fail at creation, each naming the
// other's setting and its own, instead of waiting for connections that never come.
TEST(TcpStreams, RanksWithDifferentStreamCountsBothFailSayingSo) {
  auto store = makeMemoryStore();
  Result<std::unique_ptr<TcpTransport>> results[2] = {Status(ErrorCode::kInternal, "not run"),
                                                      Status(ErrorCode::kInternal, "not run")};
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      TcpTransport::Options o;
      o.rank = r;
      o.size = 2;
      o.commUid = kUid;
      o.streams = r == 0 ? 2 : 4;
      o.deadline = Deadline::afterSeconds(30);
      results[r] = TcpTransport::create(*store, "m/", o);
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    const Status s = results[r].status();
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << "rank " << r << ": " << s.toString();
    const std::string text = r == 0 ? "rank 1 runs with TUTTI_TCP_STREAMS=4 and this rank with 2"
                                    : "rank 0 runs with TUTTI_TCP_STREAMS=2 and this rank with 4";
    EXPECT_NE(s.message().find(text), std::string::npos) << "rank " << r << ": " << s.toString();
  }
}

// Rank 0's transport with a link of `streams` connections to "rank 1", whose other ends
// the test drives by hand.
struct RawStreams {
  std::unique_ptr<TcpTransport> transport;
  std::vector<UniqueFd> raw;
};

RawStreams transportWithRawStreams(int streams) {
  std::vector<std::vector<UniqueFd>> sockets(2);
  RawStreams out;
  for (int i = 0; i < streams; ++i) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv), 0);
    sockets[1].emplace_back(sv[0]);
    out.raw.emplace_back(sv[1]);
  }
  auto t = TcpTransport::adopt(0, 2, std::move(sockets), {"", "rank 1 (test)"}, 1u << 20);
  EXPECT_TRUE(t.ok()) << t.status().toString();
  out.transport = std::move(t).value();
  return out;
}

// Bytes that are no PART frame on a stream other than the first: a kProtocolError naming
// the peer, as on the first, even while nothing is expected there.
TEST(TcpStreams, GarbageOnAnExtraStreamIsAProtocolErrorNamingThePeer) {
  RawStreams p = transportWithRawStreams(3);
  std::vector<char> in(8);
  TransferRequest recv;
  p.transport->link(1).postRecv(&recv, 1, in.data(), in.size());
  const char junk[64] = "not a part frame, only bytes on the second connection";
  ASSERT_TRUE(writeFull(p.raw[2].get(), junk, sizeof(junk), Deadline::afterSeconds(5)).ok());
  Status s = waitFor(*p.transport, recv);
  EXPECT_EQ(s.code(), ErrorCode::kProtocolError) << s.toString();
  EXPECT_NE(s.message().find("rank 1 (test) (stream 2)"), std::string::npos) << s.toString();
  EXPECT_EQ(s.peerRank(), 1);
}

// A well-formed part that is not the one due (another offset): a kProtocolError too.
TEST(TcpStreams, APartOtherThanTheOneDueIsAProtocolError) {
  RawStreams p = transportWithRawStreams(2);
  const std::size_t bytes = 1u << 20;
  std::vector<char> in(bytes);
  TransferRequest recv;
  p.transport->link(1).postRecv(&recv, 5, in.data(), in.size());
  FrameHeader data{FrameType::kData, 5, bytes, 0, {}};
  data.striped = true;
  const HeaderBytes dataHeader = encodeHeader(data);
  ASSERT_TRUE(writeFull(p.raw[0].get(), dataHeader.data(), dataHeader.size(),
                        Deadline::afterSeconds(5)).ok());
  FrameHeader part{FrameType::kPart, 5, 100, 0, {}};
  part.partOffset = 1000;  // the part due starts at stripePart(bytes, 2, 1).offset
  part.partTotal = bytes;
  const HeaderBytes partHeader = encodeHeader(part);
  ASSERT_TRUE(writeFull(p.raw[1].get(), partHeader.data(), partHeader.size(),
                        Deadline::afterSeconds(5)).ok());
  Status s = waitFor(*p.transport, recv);
  EXPECT_EQ(s.code(), ErrorCode::kProtocolError) << s.toString();
  EXPECT_NE(s.message().find("where the part at"), std::string::npos) << s.toString();
}

// The peer's connections close while a striped message is half read: the receive fails
// naming the peer, whichever stream notices first.
TEST(TcpStreams, APeerGoneMidMessageFailsTheReceiveNamingIt) {
  RawStreams p = transportWithRawStreams(2);
  const std::size_t bytes = 1u << 20;
  std::vector<char> in(bytes);
  TransferRequest recv;
  p.transport->link(1).postRecv(&recv, 5, in.data(), in.size());
  FrameHeader data{FrameType::kData, 5, bytes, 0, {}};
  data.striped = true;
  const HeaderBytes dataHeader = encodeHeader(data);
  ASSERT_TRUE(writeFull(p.raw[0].get(), dataHeader.data(), dataHeader.size(),
                        Deadline::afterSeconds(5)).ok());
  std::vector<char> some(1000, 'x');
  ASSERT_TRUE(writeFull(p.raw[0].get(), some.data(), some.size(), Deadline::afterSeconds(5)).ok());
  p.raw.clear();  // the peer dies
  Status s = waitFor(*p.transport, recv);
  EXPECT_EQ(s.code(), ErrorCode::kPeerFailure) << s.toString();
  EXPECT_EQ(s.peerRank(), 1);
  EXPECT_NE(s.message().find("rank 1 (test)"), std::string::npos) << s.toString();
}

TEST(TcpStreams, AutoCountFollowsThePairsHostsAndTheWorldSize) {
  EXPECT_EQ(pairStreams(3, 0, "10.0.0.1", "10.0.0.2", 2), 3);  // explicit wins
  EXPECT_EQ(pairStreams(0, 2, "10.0.0.1", "10.0.0.1", 2), 2);
  EXPECT_EQ(pairStreams(0, 0, "127.0.0.1", "127.0.0.1", 2), 1);  // one host
  EXPECT_EQ(pairStreams(0, 0, "10.0.0.1", "10.0.0.1", 2), 1);
  EXPECT_EQ(pairStreams(0, 0, "10.0.0.1", "10.0.0.2", 2), kRemoteStreams);
  EXPECT_EQ(pairStreams(0, 0, "10.0.0.1", "10.0.0.2", 257), 2);  // 512 connections at most
  EXPECT_EQ(pairStreams(0, 0, "10.0.0.1", "10.0.0.2", 4096), 1);
}

TEST(TcpWire, StripePartsCoverTheMessageInOrder) {
  for (const std::uint64_t bytes : {std::uint64_t{256} << 10, std::uint64_t{1} << 20,
                                    (std::uint64_t{3} << 20) + 7}) {
    for (int streams = 1; streams <= kMaxStreams; ++streams) {
      std::uint64_t next = 0;
      for (int i = 0; i < streams; ++i) {
        const PartRange part = stripePart(bytes, streams, i);
        EXPECT_EQ(part.offset, next) << bytes << " " << streams << " " << i;
        next += part.length;
      }
      EXPECT_EQ(next, bytes) << bytes << " " << streams;
    }
  }
}

TEST(TcpWire, PartHeaderRoundTripsAndOneOutsideItsMessageIsRefused) {
  FrameHeader part{FrameType::kPart, 9, 100, 0, {}};
  part.partOffset = 50;
  part.partTotal = 150;
  auto decoded = decodeHeader(encodeHeader(part).data(), "peer");
  ASSERT_TRUE(decoded.ok()) << decoded.status().toString();
  EXPECT_EQ(decoded->partOffset, 50u);
  EXPECT_EQ(decoded->partTotal, 150u);
  EXPECT_EQ(decoded->length, 100u);
  part.partTotal = 149;
  EXPECT_EQ(decodeHeader(encodeHeader(part).data(), "peer").status().code(),
            ErrorCode::kProtocolError);
}

std::string describeForTest(const CallStamp&, std::uint64_t seq) {
  return "call #" + std::to_string(seq);
}

// A frame of an earlier call stamped otherwise than this rank ran it (a mismatch the checker
// finds on arrival), then, in the same read, the frame a posted receive of the current call
// waits for: the transport fails with the mismatch, and the receive stays pending (the
// executor's next look at the transport's health fails the call). Reading stops at the
// conflict; before, the later frame completed the receive in the same pass, and a call
// could return OK with the communicator failing under it.
TEST(TcpTransportFaults, ACallConflictFailsTheReceiveALaterFrameWouldComplete) {
  CallChecker checker(0, &describeForTest);  // outlives the transport
  checker.setConcurrentArrivals(true);        // arrivals on the transport's thread
  RawPeer p = transportWithRawPeer();
  p.transport->setCallChecker(&checker);
  const CallStamp mine{0x8000000000000009ull, 1}, theirs{0x8000000000000109ull, 1};
  ASSERT_TRUE(checker.begin(5, mine).ok());
  ASSERT_TRUE(checker.begin(6, mine).ok());
  std::int32_t in = 0;
  TransferRequest recv;
  recv.stamp = mine;
  p.transport->link(1).postRecv(&recv, collectiveTagBase(0, 6), &in, sizeof(in));
  std::vector<std::uint8_t> wire;
  for (const auto& [seq, stamp] : {std::pair{5, theirs}, std::pair{6, mine}}) {
    auto header = encodeHeader(FrameHeader{FrameType::kData,
                                           collectiveTagBase(0, static_cast<std::uint64_t>(seq)),
                                           sizeof(std::int32_t), 0, stamp});
    wire.insert(wire.end(), header.begin(), header.end());
    const std::int32_t payload = 42;
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&payload);
    wire.insert(wire.end(), bytes, bytes + sizeof(payload));
  }
  ASSERT_TRUE(writeFull(p.raw.get(), wire.data(), wire.size(), Deadline::afterSeconds(5)).ok());
  const Status failure = waitForFailure(*p.transport);
  EXPECT_EQ(failure.code(), ErrorCode::kMismatch) << failure.toString();
  EXPECT_NE(failure.message().find("call #5"), std::string::npos) << failure.toString();
  EXPECT_FALSE(recv.done()) << recv.status().toString();
  EXPECT_EQ(in, 0);
  p.transport->link(1).cancel(&recv);
}

// The loop thread reads from the moment the link is up, before the communicator sets its
// call checker: a frame of another call that came in that gap waits unmatched (a broadcast
// root's, which no receive will take). It is checked when the checker is set, and the
// transport fails with the mismatch (seen as a silent pass in the roots tests over TCP).
TEST(TcpTransportFaults, AFrameThatCameBeforeTheCheckerIsCheckedWhenItIsSet) {
  CallChecker checker(0, &describeForTest);  // outlives the transport
  checker.setConcurrentArrivals(true);
  RawPeer p = transportWithRawPeer();
  const CallStamp mine{0x8000000000000009ull, 1}, theirs{0x8000000000000109ull, 1};
  auto header = encodeHeader(
      FrameHeader{FrameType::kData, collectiveTagBase(0, 0), sizeof(std::int32_t), 0, theirs});
  std::vector<std::uint8_t> wire(header.begin(), header.end());
  wire.resize(header.size() + sizeof(std::int32_t), 7);
  ASSERT_TRUE(writeFull(p.raw.get(), wire.data(), wire.size(), Deadline::afterSeconds(5)).ok());
  auto& link = static_cast<TcpLink&>(p.transport->link(1));
  const Deadline bound = Deadline::afterSeconds(30);
  while (link.unexpectedMessages() == 0 && !bound.expired())
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(link.unexpectedMessages(), 1u);
  EXPECT_TRUE(p.transport->health().ok());
  ASSERT_TRUE(checker.begin(0, mine).ok());
  p.transport->setCallChecker(&checker);
  const Status failure = waitForFailure(*p.transport);
  EXPECT_EQ(failure.code(), ErrorCode::kMismatch) << failure.toString();
  EXPECT_NE(failure.message().find("call #0"), std::string::npos) << failure.toString();
}

// A peer that left over a mismatch: its frames (one of another call, then its ABORT) wait
// unread, and this rank's next send to it fails with a broken pipe. The send reads those
// last frames for the reason; the reading stops at the conflicting frame, so the link must
// fail with that mismatch, not with the broken pipe (seen in CI under ASan: a rank blamed a
// broken pipe). This thread drives the transport, so that it, not the loop thread, reads
// those frames when its send fails; the loop thread takes a first frame and then naps.
TEST(TcpTransportFaults, ASendToAPeerThatLeftOverAConflictFailsWithTheConflict) {
  CallChecker checker(0, &describeForTest);  // outlives the transport
  checker.setConcurrentArrivals(true);
  RawPeer p = transportWithRawPeer();
  p.transport->setCallChecker(&checker);
  const CallStamp mine{0x8000000000000009ull, 1}, theirs{0x8000000000000109ull, 1};
  auto frame = [](std::uint64_t seq, const CallStamp& stamp) {
    auto header = encodeHeader(FrameHeader{FrameType::kData, collectiveTagBase(0, seq),
                                           sizeof(std::int32_t), 0, stamp});
    std::vector<std::uint8_t> bytes(header.begin(), header.end());
    bytes.resize(header.size() + sizeof(std::int32_t), 7);
    return bytes;
  };
  ASSERT_TRUE(checker.begin(5, mine).ok());
  p.transport->setDriving(true);
  std::int32_t first = 0;
  TransferRequest warm;
  warm.stamp = mine;
  p.transport->link(1).postRecv(&warm, collectiveTagBase(0, 5), &first, sizeof(first));
  std::vector<std::uint8_t> wire = frame(5, mine);
  ASSERT_TRUE(writeFull(p.raw.get(), wire.data(), wire.size(), Deadline::afterSeconds(5)).ok());
  ASSERT_TRUE(waitFor(*p.transport, warm).ok());
  // Whoever read it, the loop thread now naps while this thread drives (a nap it may not
  // have begun yet only makes the loop thread the reader below: the test still passes).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(checker.begin(6, mine).ok());
  wire = frame(6, theirs);
  const Status why(ErrorCode::kMismatch, "rank 1 called something else", 1);
  const std::vector<std::uint8_t> abort = TcpLink::abortFrame(why);
  wire.insert(wire.end(), abort.begin(), abort.end());
  ASSERT_TRUE(writeFull(p.raw.get(), wire.data(), wire.size(), Deadline::afterSeconds(5)).ok());
  p.raw.reset();  // the peer is gone
  std::int32_t payload = 1;
  TransferRequest send;
  send.stamp = mine;
  p.transport->link(1).postSend(&send, collectiveTagBase(0, 7), &payload, sizeof(payload));
  const Status failure = waitForFailure(*p.transport);
  p.transport->setDriving(false);
  EXPECT_EQ(failure.code(), ErrorCode::kMismatch) << failure.toString();
  EXPECT_NE(failure.message().find("call #6"), std::string::npos) << failure.toString();
}

// The rank that reads garbage tells the sender why at once, on the very link the garbage
// came in on (its other direction is intact): an ABORT blaming the sender. Without it the
// sender learnt the reason only from other ranks' relays, racing the culprit link's EOF, and
// could blame the rank that found its garbage (seen in CI, GarbageInAPeerStream).
TEST(TcpTransportFaults, GarbageIsAnsweredWithAnAbortOnTheSameLink) {
  RawPeer p = transportWithRawPeer();
  std::vector<std::uint8_t> junk(kHeaderBytes, 0xA5);
  ASSERT_TRUE(writeFull(p.raw.get(), junk.data(), junk.size(), Deadline::afterSeconds(5)).ok());
  EXPECT_EQ(waitForFailure(*p.transport).code(), ErrorCode::kProtocolError);
  HeaderBytes bytes{};
  ASSERT_TRUE(readFull(p.raw.get(), bytes.data(), bytes.size(), Deadline::afterSeconds(30)).ok());
  Result<FrameHeader> header = decodeHeader(bytes.data(), "rank 0");
  ASSERT_TRUE(header.ok()) << header.status().toString();
  EXPECT_EQ(header->type, FrameType::kAbort);
  EXPECT_EQ(header->tag, 2u);  // rank 1 (the sender of the garbage) + 1
  std::string text(header->length, '\0');
  ASSERT_TRUE(readFull(p.raw.get(), text.data(), text.size(), Deadline::afterSeconds(30)).ok());
  EXPECT_NE(text.find("bad frame from rank 1 (test)"), std::string::npos) << text;
}

TEST(TcpTransportFaults, AbortFrameFailsTheTransportBlamingTheNamedRank) {
  RawPeer p = transportWithRawPeer();
  const std::string text = "rank 7 (somewhere) closed the connection";
  // tag = rank at fault + 1; but this world has 2 ranks, so rank 7 is out of range and the
  // messenger (rank 1) is blamed instead.
  auto header = encodeHeader(FrameHeader{FrameType::kAbort, 8, text.size(),
                                         static_cast<std::uint32_t>(ErrorCode::kPeerFailure), {}});
  ASSERT_TRUE(writeFull(p.raw.get(), header.data(), header.size(), Deadline::afterSeconds(5)).ok());
  ASSERT_TRUE(writeFull(p.raw.get(), text.data(), text.size(), Deadline::afterSeconds(5)).ok());
  Status s = waitForFailure(*p.transport);
  EXPECT_EQ(s.code(), ErrorCode::kPeerFailure);
  EXPECT_EQ(s.message(), text);
  EXPECT_EQ(s.peerRank(), 1);
}

TEST(TcpTransportFaults, AbortFrameNamesTheCulpritRankWithinTheWorld) {
  RawPeer p = transportWithRawPeer();
  const std::string text = "rank 0 timed out";
  auto header = encodeHeader(FrameHeader{FrameType::kAbort, 1, text.size(),
                                         static_cast<std::uint32_t>(ErrorCode::kTimeout), {}});
  ASSERT_TRUE(writeFull(p.raw.get(), header.data(), header.size(), Deadline::afterSeconds(5)).ok());
  ASSERT_TRUE(writeFull(p.raw.get(), text.data(), text.size(), Deadline::afterSeconds(5)).ok());
  Status s = waitForFailure(*p.transport);
  EXPECT_EQ(s.code(), ErrorCode::kTimeout);
  EXPECT_EQ(s.peerRank(), 0);
}

// An abort without text (found by fuzz/tcp_wire_fuzzer.cc) must still give an error that
// says what happened, not an empty message.
TEST(TcpTransportFaults, AbortFrameWithoutTextSaysWhoAborted) {
  RawPeer p = transportWithRawPeer();
  auto header = encodeHeader(
      FrameHeader{FrameType::kAbort, 0, 0, static_cast<std::uint32_t>(ErrorCode::kInternal), {}});
  ASSERT_TRUE(writeFull(p.raw.get(), header.data(), header.size(), Deadline::afterSeconds(5)).ok());
  Status s = waitForFailure(*p.transport);
  EXPECT_EQ(s.code(), ErrorCode::kInternal);
  EXPECT_EQ(s.message(), "rank 1 (test) aborted the communicator without giving a reason");
  EXPECT_EQ(s.peerRank(), 1);
}

TEST(TcpTransportFaults, FailureIsBroadcastAsAnAbortFrame) {
  RawPeer p = transportWithRawPeer();
  p.transport->fail(Status(ErrorCode::kTimeout, "allreduce #3 timed out waiting for rank 1", 1));
  HeaderBytes header{};
  ASSERT_TRUE(readFull(p.raw.get(), header.data(), header.size(), Deadline::afterSeconds(10)).ok());
  auto h = decodeHeader(header.data(), "transport");
  ASSERT_TRUE(h.ok()) << h.status().toString();
  EXPECT_EQ(h->type, FrameType::kAbort);
  EXPECT_EQ(h->tag, 2u);  // rank 1 + 1
  EXPECT_EQ(h->aux, static_cast<std::uint32_t>(ErrorCode::kTimeout));
  std::string text(h->length, '\0');
  ASSERT_TRUE(readFull(p.raw.get(), text.data(), text.size(), Deadline::afterSeconds(10)).ok());
  EXPECT_EQ(text, "allreduce #3 timed out waiting for rank 1");
}

TEST(TcpTransportFaults, AFailedTransportLeavesWithAnAbortNeverAClose) {
  RawPeer p = transportWithRawPeer();
  p.transport->fail(Status(ErrorCode::kPeerFailure, "rank 7 died", 1));
  p.transport->shutdown(Deadline::afterSeconds(10));
  // Exactly one control frame, the ABORT, then EOF.
  HeaderBytes header{};
  ASSERT_TRUE(readFull(p.raw.get(), header.data(), header.size(), Deadline::afterSeconds(10)).ok());
  auto h = decodeHeader(header.data(), "transport");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->type, FrameType::kAbort);
  std::string text(h->length, '\0');
  ASSERT_TRUE(readFull(p.raw.get(), text.data(), text.size(), Deadline::afterSeconds(10)).ok());
  char byte;
  Status eof = readFull(p.raw.get(), &byte, 1, Deadline::afterSeconds(10));
  EXPECT_EQ(eof.code(), ErrorCode::kPeerFailure) << "expected EOF after the abort, got " << eof.toString();
}

TEST(TcpTransportFaults, SendCancelledPartWayIsPaddedSoTheStreamStaysFramed) {
  RawPeer p = transportWithRawPeer();
  // 8 MiB cannot fit in the socket buffer: the send is part-way when cancelled.
  std::vector<char> big(8u << 20, 'x');
  TransferRequest send;
  p.transport->link(1).postSend(&send, 42, big.data(), big.size());
  p.transport->link(1).cancel(&send);
  EXPECT_TRUE(send.done());
  std::fill(big.begin(), big.end(), 'y');  // the caller may reuse its buffer at once
  p.transport->fail(Status(ErrorCode::kAborted, "aborted by the test"));
  // The peer reads one whole data frame (x... then zeros, never 'y'), then the abort.
  HeaderBytes header{};
  ASSERT_TRUE(readFull(p.raw.get(), header.data(), header.size(), Deadline::afterSeconds(10)).ok());
  auto h = decodeHeader(header.data(), "transport");
  ASSERT_TRUE(h.ok());
  ASSERT_EQ(h->type, FrameType::kData);
  ASSERT_EQ(h->length, big.size());
  std::vector<char> payload(big.size());
  ASSERT_TRUE(readFull(p.raw.get(), payload.data(), payload.size(), Deadline::afterSeconds(30)).ok());
  EXPECT_EQ(std::count(payload.begin(), payload.end(), 'y'), 0);
  ASSERT_TRUE(readFull(p.raw.get(), header.data(), header.size(), Deadline::afterSeconds(10)).ok());
  auto a = decodeHeader(header.data(), "transport");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->type, FrameType::kAbort);
}

}  // namespace
}  // namespace tutti::tcp
