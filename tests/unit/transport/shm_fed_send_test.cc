// Sends fed by receives over shared memory (TransferRequest::feeds): the middle rank of a
// chain 0 -> 1 -> 2 posts its send to rank 2 before the receive from rank 0 whose bytes it
// forwards, as the executor does for recvReduceSend and recvCopySend. Ranks are threads of
// this process (shm_setup.h); every byte that reaches rank 2 is checked.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "transport/tag.h"
#include "unit/transport/conformance.h"
#include "unit/transport/shm_setup.h"

namespace tutti::shm {
namespace {

using test::pattern;
using test::waitFor;

// dst[i] = src[i] + piece[i] (bytes, mod 256), counting how often each byte was computed
// and how often into the destination rather than elsewhere (takeInto).
class AddingSink final : public PieceSink {
 public:
  AddingSink(std::size_t granule, const std::vector<std::uint8_t>& src, std::uint8_t* dst)
      : granule_(granule), src_(src), dst_(dst), taken_(src.size(), 0), into_(src.size(), 0) {}
  std::size_t granule() const override { return granule_; }
  void take(std::size_t offset, const char* piece, std::size_t bytes) const override {
    compute(offset, piece, bytes, reinterpret_cast<char*>(dst_ + offset));
  }
  void takeInto(std::size_t offset, const char* piece, std::size_t bytes,
                char* into) const override {
    compute(offset, piece, bytes, into);
    for (std::size_t i = 0; i < bytes; ++i) ++into_[offset + i];
  }
  char* destination() const override { return reinterpret_cast<char*>(dst_); }
  const std::vector<int>& taken() const { return taken_; }
  const std::vector<int>& into() const { return into_; }

 private:
  void compute(std::size_t offset, const char* piece, std::size_t bytes, char* out) const {
    EXPECT_EQ(offset % granule_, 0u);
    EXPECT_EQ(bytes % granule_, 0u);
    ASSERT_LE(offset + bytes, src_.size());
    for (std::size_t i = 0; i < bytes; ++i) {
      out[i] = static_cast<char>(src_[offset + i] + static_cast<std::uint8_t>(piece[i]));
      ++taken_[offset + i];
    }
  }
  std::size_t granule_;
  const std::vector<std::uint8_t>& src_;
  std::uint8_t* dst_;
  mutable std::vector<int> taken_;
  mutable std::vector<int> into_;
};

struct ChainCase {
  std::size_t bytes;
  bool reduce;       // the middle rank reduces (recvReduceSend) or copies (recvCopySend)
  bool forwardOnly;  // its destination is wanted only as the send's source
  bool lateSink;     // rank 2 posts its receive only after rank 1's receive is done
};

// Rank 0 sends `payload`; rank 1 receives it (adding `src` when reducing) and forwards the
// result to rank 2 through a send fed by the receive. Returns what rank 2 received; *mid
// is rank 1's destination afterwards, *sink its sink's counts.
std::vector<std::uint8_t> runChain(const ChainCase& c, bool* fed, std::vector<std::uint8_t>* mid,
                                   std::vector<int>* taken, std::vector<int>* into) {
  ShmSetup setup;
  setup.cmaBytes = 0;  // every message through the rings, as a reduction's prefers
  auto ts = connectAll(3, setup);
  const Tag inTag = collectiveTagBase(0, 1), outTag = collectiveTagBase(0, 1) + 1;
  const auto payload = pattern(c.bytes, 3), src = pattern(c.bytes, 4);
  std::vector<std::uint8_t> dst(c.bytes, 0x5a), staging(c.bytes), last(c.bytes, 0);
  AddingSink sink(4, src, dst.data());
  TransferRequest send0, recv1, send1, recv2;
  Link& in = ts[1]->link(0);
  Link& out = ts[1]->link(2);
  *fed = in.canFeed(out, outTag, dst.data(), c.bytes, c.reduce);
  EXPECT_TRUE(*fed);
  send1.fed = true;
  send1.fedBytes = 0;
  send1.preferCopy = c.reduce;
  recv1.feeds = &send1;
  recv1.feedsOnly = c.forwardOnly;
  recv1.combine = c.reduce ? &sink : nullptr;
  out.postSend(&send1, outTag, dst.data(), c.bytes);
  in.postRecv(&recv1, inTag, c.reduce ? staging.data() : dst.data(), c.bytes);
  if (!c.lateSink) ts[2]->link(1).postRecv(&recv2, outTag, last.data(), c.bytes);
  std::thread first([&] {
    send0.preferCopy = c.reduce;
    ts[0]->link(1).postSend(&send0, inTag, payload.data(), c.bytes);
    EXPECT_TRUE(waitFor(*ts[0], send0).ok());
  });
  std::thread end;
  if (!c.lateSink)
    end = std::thread([&] { EXPECT_TRUE(waitFor(*ts[2], recv2).ok()); });
  EXPECT_TRUE(waitFor(*ts[1], recv1).ok()) << recv1.status().toString();
  if (c.reduce && !recv1.combined) {  // the executor's fallback: reduce from staging
    sink.take(0, reinterpret_cast<const char*>(staging.data()), c.bytes);
  }
  if (send1.fedBytes < c.bytes) out.feed(&send1, c.bytes);
  if (c.lateSink) {
    ts[2]->link(1).postRecv(&recv2, outTag, last.data(), c.bytes);
    end = std::thread([&] { EXPECT_TRUE(waitFor(*ts[2], recv2).ok()); });
  }
  EXPECT_TRUE(waitFor(*ts[1], send1).ok()) << send1.status().toString();
  first.join();
  end.join();
  *mid = dst;
  *taken = sink.taken();
  *into = sink.into();
  return last;
}

class ShmFedSend : public ::testing::TestWithParam<ChainCase> {};

TEST_P(ShmFedSend, ForwardsEveryByteOnceAndStoresWhatIsWanted) {
  const ChainCase c = GetParam();
  bool fed = false;
  std::vector<std::uint8_t> mid;
  std::vector<int> taken, into;
  const std::vector<std::uint8_t> got = runChain(c, &fed, &mid, &taken, &into);
  const auto payload = pattern(c.bytes, 3), src = pattern(c.bytes, 4);
  std::vector<std::uint8_t> expected = payload;
  if (c.reduce)
    for (std::size_t i = 0; i < c.bytes; ++i)
      expected[i] = static_cast<std::uint8_t>(src[i] + payload[i]);
  EXPECT_EQ(got, expected) << "what rank 2 received";
  if (c.reduce) {
    EXPECT_EQ(taken, std::vector<int>(c.bytes, 1)) << "each byte reduced once";
  }
  if (!c.forwardOnly) {
    EXPECT_EQ(mid, expected) << "rank 1's destination";
  }
  if (c.reduce && c.bytes > kInlineBytes && c.bytes <= 16 * 4096) {
    // The message fits rank 1's empty ring to rank 2 (16 slots), whenever rank 2 takes
    // it: every piece is reduced straight into that ring (and copied from there into the
    // destination where it is wanted), none reduced into the destination first.
    EXPECT_EQ(into, std::vector<int>(c.bytes, 1));
    if (c.forwardOnly) {
      EXPECT_EQ(mid, std::vector<std::uint8_t>(c.bytes, 0x5a));
    }
  } else if (c.forwardOnly) {
    // A header's inline bytes, or pieces that found the ring full, go through the
    // destination: each byte is where the send read it from.
    for (std::size_t i = 0; i < c.bytes; ++i)
      ASSERT_TRUE(into[i] == 1 || mid[i] == expected[i]) << "byte " << i;
  }
}

// Test slots hold 4096 bytes: 12 bytes goes inline in a header, 3 * 4096 + 12 spans four
// slots, 40 KiB more slots than the ring has (16), 1 MiB wraps it many times.
INSTANTIATE_TEST_SUITE_P(
    Chains, ShmFedSend,
    ::testing::Values(ChainCase{12, true, true, false}, ChainCase{3 * 4096 + 12, true, true, false},
                      ChainCase{40 << 10, true, true, false}, ChainCase{1 << 20, true, true, false},
                      ChainCase{1 << 20, true, true, true}, ChainCase{1 << 20, true, false, false},
                      ChainCase{40 << 10, true, false, true}, ChainCase{1 << 20, false, false, false},
                      ChainCase{3 * 4096 + 12, false, false, true}));

// The shm transport moves bytes only on its callers' threads: a message already in the
// ring when its receive is posted is taken in that call, piece by piece, and each piece is
// handed on as it lands, so the fed send is whole in the next ring when postRecv returns.
TEST(ShmFedSendQueue, PiecesAreHandedOnAsTheyLandNotWhenTheReceiveEnds) {
  for (const bool reduce : {false, true}) {
    for (const bool forwardOnly : {false, true}) {
      if (forwardOnly && !reduce) continue;
      SCOPED_TRACE(::testing::Message() << (reduce ? "reduce" : "copy")
                                        << (forwardOnly ? ", forward only" : ""));
      ShmSetup setup;
      setup.cmaBytes = 0;
      auto ts = connectAll(3, setup);
      const std::size_t bytes = 40 << 10;  // 10 slots: all in the ring at once
      const auto payload = pattern(bytes, 8), src = pattern(bytes, 9);
      std::vector<std::uint8_t> dst(bytes, 0), staging(bytes), last(bytes, 0);
      AddingSink sink(4, src, dst.data());
      const Tag inTag = collectiveTagBase(0, 3), outTag = collectiveTagBase(0, 3) + 1;
      TransferRequest send0, recv1, send1, recv2;
      ts[0]->link(1).postSend(&send0, inTag, payload.data(), bytes);
      ASSERT_TRUE(send0.done()) << "the whole message is in the ring";
      send1.fed = true;
      send1.fedBytes = 0;
      recv1.feeds = &send1;
      recv1.feedsOnly = forwardOnly;
      recv1.combine = reduce ? &sink : nullptr;
      ts[1]->link(2).postSend(&send1, outTag, dst.data(), bytes);
      EXPECT_FALSE(send1.done());
      ts[1]->link(0).postRecv(&recv1, inTag, reduce ? staging.data() : dst.data(), bytes);
      ASSERT_TRUE(recv1.done());
      EXPECT_TRUE(send1.done()) << "pieces were not handed on as they landed";
      EXPECT_EQ(send1.fedBytes, bytes);
      if (!send1.done()) ts[1]->link(2).feed(&send1, bytes);  // the executor's fallback
      ts[2]->link(1).postRecv(&recv2, outTag, last.data(), bytes);
      ASSERT_TRUE(waitFor(*ts[2], recv2).ok());
      std::vector<std::uint8_t> expected = payload;
      if (reduce)
        for (std::size_t i = 0; i < bytes; ++i)
          expected[i] = static_cast<std::uint8_t>(src[i] + payload[i]);
      EXPECT_EQ(last, expected);
    }
  }
}

TEST(ShmFedSendQueue, AnUnfedSendDoesNotHoldUpTheSendsBehindIt) {
  ShmSetup setup;
  setup.cmaBytes = 0;
  auto ts = connectAll(2, setup);
  const auto a = pattern(20000, 5), b = pattern(20000, 6);
  std::vector<std::uint8_t> source(a.size(), 0), inA(a.size()), inB(b.size());
  TransferRequest fedSend, plainSend, recvA, recvB;
  fedSend.fed = true;
  fedSend.fedBytes = 0;
  const Tag tagA = collectiveTagBase(0, 1), tagB = collectiveTagBase(0, 1) + 1;
  ts[0]->link(1).postSend(&fedSend, tagA, source.data(), source.size());
  ts[0]->link(1).postSend(&plainSend, tagB, b.data(), b.size());
  ts[1]->link(0).postRecv(&recvB, tagB, inB.data(), inB.size());
  std::thread receiver([&] { EXPECT_TRUE(waitFor(*ts[1], recvB).ok()); });
  // Joined before any assertion returns: a failure ends the test, not the program.
  const bool sent = waitFor(*ts[0], plainSend).ok();
  receiver.join();
  ASSERT_TRUE(sent) << "held up behind a send not fed yet";
  EXPECT_EQ(inB, b);
  EXPECT_FALSE(fedSend.done());
  // Fed now, from a source filled meanwhile: it goes, with what the source holds now.
  std::memcpy(source.data(), a.data(), a.size());
  ts[0]->link(1).feed(&fedSend, source.size());
  ts[1]->link(0).postRecv(&recvA, tagA, inA.data(), inA.size());
  std::thread receiverA([&] { EXPECT_TRUE(waitFor(*ts[1], recvA).ok()); });
  const bool fedSent = waitFor(*ts[0], fedSend).ok();
  receiverA.join();
  ASSERT_TRUE(fedSent);
  EXPECT_EQ(inA, a);
}

TEST(ShmFedSendQueue, OnlyLinksOfOneSharedMemoryTransportFeedEachOther) {
  ShmSetup setup;
  setup.cmaBytes = 0;
  auto one = connectAll(3, setup);
  const Tag tag = collectiveTagBase(0, 1);
  std::vector<char> buffer(1 << 20);
  EXPECT_TRUE(one[1]->link(0).canFeed(one[1]->link(2), tag, buffer.data(), buffer.size(), true));
  // Point-to-point messages are never fed: their order between tags is the user's.
  EXPECT_FALSE(one[1]->link(0).canFeed(one[1]->link(2), p2pTag(0, 1), buffer.data(),
                                       buffer.size(), true));
  // A send the receiver would read in place (rendezvous) has no pieces to feed.
  setup.cmaBytes = 64 << 10;
  auto cma = connectAll(3, setup);
  EXPECT_FALSE(cma[1]->link(0).canFeed(cma[1]->link(2), tag, buffer.data(), buffer.size(), false));
  EXPECT_TRUE(cma[1]->link(0).canFeed(cma[1]->link(2), tag, buffer.data(), 1000, false));
}

// The extents (the last argument) the copy hook, ShmTransport::Options::copy, was given.
std::mutex extentsMutex;
std::vector<std::size_t> extents;
void recordingCopy(void* dst, const void* src, std::size_t bytes, std::size_t extent) {
  {
    std::lock_guard<std::mutex> lock(extentsMutex);
    extents.push_back(extent);
  }
  std::memcpy(dst, src, bytes);
}
// Forwarded copies come through Options::copyTwo: their extents go to the same list and
// are counted apart as well.
int copiesTwo = 0;
void recordingCopyTwo(void* cached, void* dst, const void* src, std::size_t bytes,
                      std::size_t extent) {
  {
    std::lock_guard<std::mutex> lock(extentsMutex);
    ++copiesTwo;
  }
  std::memcpy(cached, src, bytes);
  recordingCopy(dst, src, bytes, extent);
}
std::vector<std::size_t> takeExtents() {
  std::lock_guard<std::mutex> lock(extentsMutex);
  return std::exchange(extents, {});
}

// Rank 0 sends `payload` on its own thread while rank 1 waits for `recv`, already posted.
void receiveFromRank0(const std::vector<std::unique_ptr<ShmTransport>>& ts, TransferRequest* send,
                      Tag tag, const std::vector<std::uint8_t>& payload, TransferRequest* recv) {
  std::thread sender([&] {
    ts[0]->link(1).postSend(send, tag, payload.data(), payload.size());
    EXPECT_TRUE(waitFor(*ts[0], *send).ok());
  });
  EXPECT_TRUE(waitFor(*ts[1], *recv).ok());
  sender.join();
}

// A piece copied out of the ring into a receive's destination picks its stores by the
// outputs of every rank on the host (destinationBytes times the ranks), so that outputs
// that together pass the caches are written past them; where a fed send reads the piece
// back from the destination (it found the next ring full), by the message alone. A piece
// forwarded as it arrives is copied into the next ring and the destination in one pass.
TEST(ShmFedSendQueue, CopiesIntoADestinationCountTheHostsOutputsUnlessReadBack) {
  ShmSetup setup;
  setup.cmaBytes = 0;
  setup.copy = &recordingCopy;
  setup.copyTwo = &recordingCopyTwo;
  auto ts = connectAll(3, setup);
  const std::size_t bytes = 1 << 20, output = 8u << 20, host = 3 * output;
  const auto payload = pattern(bytes, 11);
  takeExtents();
  {  // A receive that nothing reads back.
    const Tag tag = collectiveTagBase(0, 5);
    std::vector<std::uint8_t> in(bytes, 0);
    TransferRequest send, recv;
    recv.destinationBytes = output;
    ts[1]->link(0).postRecv(&recv, tag, in.data(), bytes);
    receiveFromRank0(ts, &send, tag, payload, &recv);
    EXPECT_EQ(in, payload);
    const auto got = takeExtents();
    EXPECT_FALSE(got.empty());
    EXPECT_EQ(std::count(got.begin(), got.end(), host), static_cast<long>(got.size()));
  }
  {  // A copy forwarded to rank 2, which takes it late: the ring to it (16 slots of 4 KiB)
     // holds the first pieces, the others wait in the destination for room.
    const Tag inTag = collectiveTagBase(0, 6), outTag = collectiveTagBase(0, 6) + 1;
    std::vector<std::uint8_t> mid(bytes, 0), last(bytes, 0);
    TransferRequest send0, recv1, send1, recv2;
    send1.fed = true;
    send1.fedBytes = 0;
    recv1.feeds = &send1;
    recv1.destinationBytes = output;
    ts[1]->link(2).postSend(&send1, outTag, mid.data(), bytes);
    ts[1]->link(0).postRecv(&recv1, inTag, mid.data(), bytes);
    receiveFromRank0(ts, &send0, inTag, payload, &recv1);
    const auto got = takeExtents();
    const auto wide = std::count(got.begin(), got.end(), host);
    const auto narrow = std::count(got.begin(), got.end(), bytes);
    EXPECT_GE(wide, 1) << "no piece was forwarded";
    {
      std::lock_guard<std::mutex> lock(extentsMutex);
      EXPECT_EQ(copiesTwo, wide) << "a forwarded piece was not copied in one pass";
    }
    EXPECT_GE(narrow, 1) << "a piece the send reads back was written past the caches";
    EXPECT_EQ(wide + narrow, static_cast<long>(got.size()));
    EXPECT_EQ(mid, payload);
    ts[2]->link(1).postRecv(&recv2, outTag, last.data(), bytes);
    std::thread end([&] { EXPECT_TRUE(waitFor(*ts[2], recv2).ok()); });
    const bool sent = waitFor(*ts[1], send1).ok();
    end.join();
    EXPECT_TRUE(sent);
    EXPECT_EQ(last, payload);
  }
}

}  // namespace
}  // namespace tutti::shm
