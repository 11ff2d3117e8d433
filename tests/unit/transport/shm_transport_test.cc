// The shared-memory transport, ranks as threads of this process rendezvousing through an
// in-memory store (the segments, rings, doorbells and process_vm_readv are the real ones:
// a process can map its own memfds and read its own memory). The parameterized tests run
// twice: with rendezvous (CMA) for large messages and with everything copied through the
// rings. What every transport does (matching, order, caps, cancelling, leaving, failing) is
// in conformance_test.cc, which runs shared memory in both ways too; this file keeps what
// is shared memory's own.

#include "transport/shm/shm_transport.h"

#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

#include "base/cpus.h"
#include "base/host_props.h"
#include "transport/tag.h"
#include "unit/transport/conformance.h"
#include "unit/transport/shm_setup.h"

namespace tutti::shm {
namespace {

using test::pattern;
using test::waitFor;

class ShmTransportTest : public ::testing::TestWithParam<std::uint64_t> {
 protected:
  ShmSetup setup() const {
    ShmSetup s;
    s.cmaBytes = GetParam();
    return s;
  }
};

// Rank 0 waits for a message that rank 1 sends only once rank 0's counters show the wait
// under way (`started`), so what the wait did is known: its counters say so.
ShmTransport::WaitTimes waitForALateMessage(std::int64_t pollNs,
                                           bool (*started)(const ShmTransport::WaitTimes&),
                                           bool* coreEach) {
  ShmSetup setup;
  setup.pollNs = pollNs;
  auto ts = connectAll(2, setup);
  EXPECT_EQ(ts.size(), 2u);
  if (ts.size() != 2 || !ts[0] || !ts[1]) return {};
  *coreEach = ts[0]->coreEach();
  std::vector<std::uint8_t> in(64, 0);
  const std::vector<std::uint8_t> out = pattern(64, 3);
  std::thread sender([&] {
    const Deadline bound = Deadline::afterSeconds(30);
    while (!started(ts[0]->waitTimes()) && !bound.expired()) std::this_thread::yield();
    TransferRequest send;
    ts[1]->link(0).postSend(&send, 5, out.data(), out.size());
    EXPECT_TRUE(waitFor(*ts[1], send).ok());
  });
  TransferRequest recv;
  ts[0]->link(1).postRecv(&recv, 5, in.data(), in.size());
  EXPECT_TRUE(waitFor(*ts[0], recv).ok());
  sender.join();
  EXPECT_EQ(in, out);
  return ts[0]->waitTimes();
}

TEST(ShmWaitTimes, AWaiterWithoutAPollWindowSleepsAndCountsIt) {
  bool coreEach = false;
  const ShmTransport::WaitTimes w = waitForALateMessage(
      0, [](const ShmTransport::WaitTimes& t) { return t.sleeps >= 1; }, &coreEach);
  EXPECT_GE(w.sleeps, 1u);
  EXPECT_GT(w.sleptNs, 0);
  EXPECT_GE(w.polls, 1u);  // the test's 1 us spin came first
  EXPECT_EQ(w.yields, 0u);
  EXPECT_EQ(w.yieldedNs, 0);
}

TEST(ShmWaitTimes, AWaiterInsideItsPollWindowKeepsItsCoreAndNeverSleeps) {
  bool coreEach = false;
  const ShmTransport::WaitTimes w = waitForALateMessage(
      60'000'000'000, [](const ShmTransport::WaitTimes& t) { return t.polls + t.yields >= 1; },
      &coreEach);
  EXPECT_EQ(w.sleeps, 0u);
  EXPECT_EQ(w.sleptNs, 0);
  EXPECT_GE(w.polls, 1u);
  if (coreEach) {
    // The window extends the spin: polling all along.
    EXPECT_EQ(w.yields, 0u);
  } else {
    // More ranks than cores: the window hands the core over.
    EXPECT_GE(w.yields, 1u);
  }
}

// Pretend hosts on one machine (network namespaces, containers, TUTTI_SHM_HOST) run on the
// same CPUs: with as many ranks per host as this process has CPUs, one such host has a core
// for each rank, two of them do not. Each counting only its own ranks, they spun against
// each other (8-byte all-reduce 4.3 ms against 0.08 ms). The hosts' names hold spaces, as
// TUTTI_SHM_HOST may.
int gRanksPerHost = 0;
std::string hostOfBlock(int rank) { return "pretend  host " + std::to_string(rank / gRanksPerHost); }

TEST(ShmCores, TheRanksOfOtherHostsOnThisMachineShareItsCores) {
  const int cpus = std::min(static_cast<int>(allowedCpuList().size()), quotaCores());
  if (cpus < 2 || cpus > 16) GTEST_SKIP() << cpus << " CPUs: no host of 2 to 16 ranks fills them";
  gRanksPerHost = cpus;
  {
    auto alone = connectAll(cpus, ShmSetup{});
    ASSERT_EQ(alone.size(), static_cast<std::size_t>(cpus));
    for (auto& t : alone) EXPECT_TRUE(t && t->coreEach());
  }
  ShmSetup two;
  two.hostOf = &hostOfBlock;
  auto ts = connectAll(2 * cpus, two);
  ASSERT_EQ(ts.size(), static_cast<std::size_t>(2 * cpus));
  for (int r = 0; r < 2 * cpus; ++r) {
    ASSERT_TRUE(ts[static_cast<std::size_t>(r)]) << "rank " << r;
    EXPECT_EQ(ts[static_cast<std::size_t>(r)]->localPeers(), static_cast<std::size_t>(cpus - 1));
    EXPECT_FALSE(ts[static_cast<std::size_t>(r)]->coreEach()) << "rank " << r;
    EXPECT_FALSE(ts[static_cast<std::size_t>(r)]->twoCoresEach()) << "rank " << r;
  }
}

// Over shared memory a size mismatch fails the transport on both ranks (the receiver writes
// it into the sender's abort record), not only the receive.
TEST_P(ShmTransportTest, SizeMismatchIsAnErrorNamingThePeerOnBothRanks) {
  for (const std::size_t bytes : {std::size_t{100}, std::size_t{1} << 20}) {
    auto ts = connectAll(2, setup());
    std::vector<char> out(bytes, 'x'), in(bytes - 36);
    TransferRequest send, recv;
    ts[0]->link(1).postSend(&send, 1, out.data(), out.size());
    ts[1]->link(0).postRecv(&recv, 1, in.data(), in.size());
    Status s = waitFor(*ts[1], recv);
    EXPECT_EQ(s.code(), ErrorCode::kMismatch) << s.toString();
    EXPECT_NE(s.message().find(std::to_string(bytes) + " bytes"), std::string::npos) << s.toString();
    EXPECT_EQ(s.peerRank(), 0);
    // The sender learns it through the abort record, with the same words.
    Status other = waitFor(*ts[0], send);
    if (!other.ok()) {
      EXPECT_EQ(other.message(), s.message());
    }
    EXPECT_EQ(ts[0]->health().message(), s.message());
  }
}

// A reduction's sink for the test: dst[i] = src[i] + piece[i] (bytes, mod 256), and a count
// of how often each byte was taken.
class AddingSink final : public PieceSink {
 public:
  AddingSink(std::size_t granule, const std::vector<std::uint8_t>& src)
      : granule_(granule), src_(src), dst_(src.size(), 0), taken_(src.size(), 0) {}
  std::size_t granule() const override { return granule_; }
  void take(std::size_t offset, const char* piece, std::size_t bytes) const override {
    EXPECT_EQ(offset % granule_, 0u);
    EXPECT_EQ(bytes % granule_, 0u);
    ASSERT_LE(offset + bytes, dst_.size());
    for (std::size_t i = 0; i < bytes; ++i) {
      dst_[offset + i] = static_cast<std::uint8_t>(src_[offset + i] + static_cast<std::uint8_t>(piece[i]));
      ++taken_[offset + i];
    }
  }
  void takeInto(std::size_t offset, const char* piece, std::size_t bytes,
                char* into) const override {
    ASSERT_LE(offset + bytes, dst_.size());
    for (std::size_t i = 0; i < bytes; ++i) {
      into[i] = static_cast<char>(src_[offset + i] + static_cast<std::uint8_t>(piece[i]));
      ++taken_[offset + i];
    }
  }
  char* destination() const override { return reinterpret_cast<char*>(dst_.data()); }
  std::vector<std::uint8_t>& dst() const { return dst_; }
  std::vector<int>& taken() const { return taken_; }

 private:
  std::size_t granule_;
  const std::vector<std::uint8_t>& src_;
  mutable std::vector<std::uint8_t> dst_;
  mutable std::vector<int> taken_;
};

TEST_P(ShmTransportTest, CombiningReceivesTakeEveryPieceOnceOrFallBackToTheBuffer) {
  auto ts = connectAll(2, setup());
  // Sizes around the test's 4096-byte slot, several slots, and one above the rendezvous
  // threshold (read with process_vm_readv a bounce buffer at a time, 128 KiB: three pieces,
  // the last one short). Granule 3 divides neither the slot nor the bounce buffer: streamed
  // and rendezvous messages go to the buffer, a message that arrived whole before its
  // receive still goes to the sink.
  for (const std::size_t granule : {std::size_t{1}, std::size_t{4}, std::size_t{3}}) {
    for (const std::size_t size : {std::size_t{0}, std::size_t{12}, std::size_t{4092},
                                   std::size_t{3 * 4096 + 12}, std::size_t{300 * 1024}}) {
      for (const bool early : {false, true}) {
        SCOPED_TRACE(::testing::Message() << "granule " << granule << ", size " << size
                                          << (early ? ", sent before the receive" : ""));
        const auto payload = pattern(size, 11), src = pattern(size, 12);
        std::vector<std::uint8_t> buffer(size, 0x5a);
        AddingSink sink(granule, src);
        TransferRequest send, recv, markSend, markRecv;
        recv.combine = &sink;
        const Tag tag = 500 + size;
        auto post = [&] { ts[1]->link(0).postRecv(&recv, tag, buffer.data(), size); };
        if (!early) post();
        ts[0]->link(1).postSend(&send, tag, payload.data(), size);
        std::uint8_t mark = 1, markIn = 0;
        if (early) {
          // A second message behind it: once that one is in, the first was taken off the
          // ring before its receive existed (buffered, or left in the sender's memory).
          ts[0]->link(1).postSend(&markSend, 99, &mark, 1);
        }
        std::thread sender([&] {
          EXPECT_TRUE(waitFor(*ts[0], send).ok());
          if (early) {
            EXPECT_TRUE(waitFor(*ts[0], markSend).ok());
          }
        });
        if (early) {
          ts[1]->link(0).postRecv(&markRecv, 99, &markIn, 1);
          ASSERT_TRUE(waitFor(*ts[1], markRecv).ok());
          post();
        }
        ASSERT_TRUE(waitFor(*ts[1], recv).ok()) << recv.status().toString();
        sender.join();
        std::vector<std::uint8_t> expected(size);
        for (std::size_t i = 0; i < size; ++i)
          expected[i] = static_cast<std::uint8_t>(src[i] + payload[i]);
        if (recv.combined) {
          EXPECT_EQ(sink.dst(), expected);
          EXPECT_EQ(sink.taken(), std::vector<int>(size, 1));
          EXPECT_EQ(buffer, std::vector<std::uint8_t>(size, 0x5a)) << "combined, yet written";
        } else {
          EXPECT_EQ(buffer, payload);
          EXPECT_EQ(sink.taken(), std::vector<int>(size, 0)) << "not combined, yet taken";
        }
        // When the link combines: a message buffered whole before its receive always; one
        // streamed into a posted receive when the granule divides the slot; one read with
        // process_vm_readv when the granule divides the bounce buffer, early or not.
        const bool rendezvous = GetParam() != 0 && size >= 256 * 1024;
        const bool streamable = 4096 % granule == 0;
        EXPECT_EQ(recv.combined,
                  rendezvous ? (128 * 1024) % granule == 0 : early || streamable);
      }
    }
  }
}

TEST_P(ShmTransportTest, MessageBehindACompletedReceiveWaitsInTheRingForItsOwn) {
  auto ts = connectAll(2, setup());
  // Two messages wholly in the ring before any receive (posting a send copies what fits).
  const auto a = pattern(3000, 21), b = pattern(3000, 22);
  TransferRequest sendA, sendB, recvA, recvB;
  ts[0]->link(1).postSend(&sendA, 41, a.data(), a.size());
  ts[0]->link(1).postSend(&sendB, 42, b.data(), b.size());
  ASSERT_TRUE(sendA.done() && sendB.done());
  // Receiving the first completes it in the pass of its post; the second, whose receive
  // comes right after, must not be copied into a buffer meanwhile. A sink whose granule
  // does not divide the slot tells the two apart: it takes only a buffered message.
  std::vector<std::uint8_t> inA(a.size()), inB(b.size(), 0);
  const std::vector<std::uint8_t> zeros(b.size(), 0);
  AddingSink sink(3, zeros);
  recvB.combine = &sink;
  ts[1]->link(0).postRecv(&recvA, 41, inA.data(), inA.size());
  ASSERT_TRUE(waitFor(*ts[1], recvA).ok());
  ts[1]->link(0).postRecv(&recvB, 42, inB.data(), inB.size());
  ASSERT_TRUE(waitFor(*ts[1], recvB).ok());
  EXPECT_EQ(inA, a);
  EXPECT_FALSE(recvB.combined) << "the second message was buffered before its receive";
  EXPECT_EQ(inB, b);
}

TEST_P(ShmTransportTest, SendThatPrefersCopyIsReducedAsItArrivesWhateverItsSize) {
  auto ts = connectAll(2, setup());
  // Above the rendezvous threshold: without preferCopy the receiver would read it in place
  // (into the buffer, not combined); with it the message streams through the ring.
  const auto payload = pattern(300 * 1024, 31), src = pattern(300 * 1024, 32);
  std::vector<std::uint8_t> buffer(payload.size(), 0x5a);
  AddingSink sink(4, src);
  TransferRequest send, recv;
  send.preferCopy = true;
  recv.combine = &sink;
  ts[1]->link(0).postRecv(&recv, 77, buffer.data(), buffer.size());
  std::thread sender([&] {
    ts[0]->link(1).postSend(&send, 77, payload.data(), payload.size());
    EXPECT_TRUE(waitFor(*ts[0], send).ok());
  });
  ASSERT_TRUE(waitFor(*ts[1], recv).ok()) << recv.status().toString();
  sender.join();
  EXPECT_TRUE(recv.combined);
  std::vector<std::uint8_t> expected(payload.size());
  for (std::size_t i = 0; i < payload.size(); ++i)
    expected[i] = static_cast<std::uint8_t>(src[i] + payload[i]);
  EXPECT_EQ(sink.dst(), expected);
  EXPECT_EQ(sink.taken(), std::vector<int>(payload.size(), 1));
  EXPECT_EQ(buffer, std::vector<std::uint8_t>(payload.size(), 0x5a));
}

// A send with a mirror: a message that crosses the ring is also written to the mirror,
// piece by piece, and says so; one read in place by its receiver (rendezvous) is not, and
// leaves the mirror to its poster; copiesSend tells the two apart in advance (a
// point-to-point send is always copied). Inline, several pieces, and past the threshold.
TEST_P(ShmTransportTest, ASendThroughTheRingAlsoWritesItsMirror) {
  auto ts = connectAll(2, setup());
  for (const std::size_t bytes : {std::size_t{8}, std::size_t{100000}, std::size_t{1} << 20}) {
    const auto out = pattern(bytes, 7);
    std::vector<std::uint8_t> in(bytes), mirror(bytes, 0);
    TransferRequest send, recv;
    send.mirror = reinterpret_cast<char*>(mirror.data());
    send.mirrored = false;
    ts[1]->link(0).postRecv(&recv, collectiveTagBase(0, 1), in.data(), bytes);
    ts[0]->link(1).postSend(&send, collectiveTagBase(0, 1), out.data(), bytes);
    std::thread receiver([&] { EXPECT_TRUE(waitFor(*ts[1], recv).ok()); });
    ASSERT_TRUE(waitFor(*ts[0], send).ok()) << bytes;
    receiver.join();
    EXPECT_EQ(in, out) << bytes;
    const bool rendezvous = GetParam() != 0 && bytes >= GetParam();
    EXPECT_EQ(send.mirrored, !rendezvous) << bytes;
    // Asked beforehand, the link says which (the executor mirrors only those it copies).
    EXPECT_EQ(ts[0]->link(1).copiesSend(collectiveTagBase(0, 1), out.data(), bytes, false),
              !rendezvous)
        << bytes;
    EXPECT_TRUE(ts[0]->link(1).copiesSend(p2pTag(0, 1), out.data(), bytes, false)) << bytes;
    if (send.mirrored)
      EXPECT_EQ(mirror, out) << bytes;
    else
      EXPECT_EQ(mirror, std::vector<std::uint8_t>(bytes, 0)) << bytes;
  }
}

// Rank 1 sends 32 messages of `bytes` for calls 2..33 and then a point-to-point message,
// while rank 0 is in call 1 (a receive from rank 2 posted). Rank 0 buffers at most `most`
// bytes of them, until it posts the point-to-point receive, which lets every one in; then
// each arrives whole in its own call.
void expectLaterCallsWaitInTheRing(const ShmSetup& s, std::size_t bytes, std::uint64_t most) {
  auto ts = connectAll(3, s);
  constexpr int kCalls = 32;
  std::vector<std::vector<std::uint8_t>> out;
  for (int k = 0; k < kCalls; ++k) out.push_back(pattern(bytes, 10 + k));
  auto p2pOut = pattern(1000, 99);
  std::vector<TransferRequest> sends(kCalls);
  TransferRequest p2pSend;
  std::thread sender([&] {
    for (int k = 0; k < kCalls; ++k)
      ts[1]->link(0).postSend(&sends[k], collectiveTagBase(0, 2 + k), out[k].data(), bytes);
    ts[1]->link(0).postSend(&p2pSend, p2pTag(0, 4), p2pOut.data(), p2pOut.size());
    for (auto& send : sends) EXPECT_TRUE(waitFor(*ts[1], send).ok());
    EXPECT_TRUE(waitFor(*ts[1], p2pSend).ok());
  });
  std::vector<std::uint8_t> call1(8), call1Out = pattern(8, 1);
  TransferRequest recvCall1;
  ts[0]->link(2).postRecv(&recvCall1, collectiveTagBase(0, 1), call1.data(), call1.size());
  std::uint64_t buffered = 0;
  for (int i = 0; i < 300; ++i) {
    auto seen = ts[0]->progressSignal().snapshot();
    ts[0]->waitForProgress(seen, Deadline::afterSeconds(0.001), 0);
    buffered = std::max(buffered, ts[0]->unexpectedBytes());
  }
  EXPECT_LE(buffered, most);
  EXPECT_GT(buffered, 0u);  // the allowance itself was let in
  std::vector<std::uint8_t> p2pIn(p2pOut.size());
  TransferRequest p2pRecv;
  ts[0]->link(1).postRecv(&p2pRecv, p2pTag(0, 4), p2pIn.data(), p2pIn.size());
  ASSERT_TRUE(waitFor(*ts[0], p2pRecv).ok());
  EXPECT_EQ(p2pIn, p2pOut);
  TransferRequest sendCall1;
  ts[2]->link(0).postSend(&sendCall1, collectiveTagBase(0, 1), call1Out.data(), call1Out.size());
  ASSERT_TRUE(waitFor(*ts[0], recvCall1).ok());
  EXPECT_TRUE(waitFor(*ts[2], sendCall1).ok());
  EXPECT_EQ(call1, call1Out);
  std::vector<std::vector<std::uint8_t>> in(kCalls, std::vector<std::uint8_t>(bytes));
  std::vector<TransferRequest> recvs(kCalls);
  for (int k = 0; k < kCalls; ++k) {
    ts[0]->link(1).postRecv(&recvs[k], collectiveTagBase(0, 2 + k), in[k].data(), bytes);
    ASSERT_TRUE(waitFor(*ts[0], recvs[k]).ok()) << k;
    EXPECT_EQ(in[k], out[k]) << k;
  }
  sender.join();
}

// The allowance in bytes: at most 64 KiB plus one message of 32 KiB.
TEST_P(ShmTransportTest, LaterCallsWaitInTheRingWhileTheReceiverIsInAnEarlierOne) {
  ShmSetup s = setup();
  s.runAhead = 64u << 10;
  constexpr std::size_t kBytes = 32u << 10;
  expectLaterCallsWaitInTheRing(s, kBytes, s.runAhead + kBytes);
}

// The allowance in messages: tiny messages cost per message, so 4 of them at most, with no
// limit in bytes.
TEST_P(ShmTransportTest, LaterCallsWaitInTheRingPastTheAllowanceInMessages) {
  ShmSetup s = setup();
  s.runAhead = 0;
  s.runAheadMessages = 4;
  expectLaterCallsWaitInTheRing(s, 8, 4 * 8);
}

// Over shared memory a failure completes every pending request on every rank with the
// failure's words and culprit (each rank reads it from its abort record), and a failed
// transport refuses new requests at once. (conformance_test.cc checks what every transport
// does: every rank's health names the failure.)
TEST_P(ShmTransportTest, FailureReachesEveryRankWithTheSameWordsAndCulprit) {
  auto ts = connectAll(4, setup());
  std::vector<char> in(8);
  std::vector<TransferRequest> recvs(3);
  ts[0]->link(1).postRecv(&recvs[0], 1, in.data(), in.size());
  ts[2]->link(3).postRecv(&recvs[1], 1, in.data(), in.size());
  ts[3]->link(2).postRecv(&recvs[2], 1, in.data(), in.size());
  ts[1]->fail(Status(ErrorCode::kTimeout, "allreduce #4 timed out waiting for rank 3", 3));
  const int waiter[] = {0, 2, 3};
  for (std::size_t i = 0; i < recvs.size(); ++i) {
    Status s = waitFor(*ts[static_cast<std::size_t>(waiter[i])], recvs[i]);
    EXPECT_EQ(s.code(), ErrorCode::kTimeout) << s.toString();
    EXPECT_EQ(s.message(), "allreduce #4 timed out waiting for rank 3");
    EXPECT_EQ(s.peerRank(), 3);
  }
  // A failed transport refuses new requests at once.
  TransferRequest late;
  ts[0]->link(2).postSend(&late, 1, in.data(), in.size());
  EXPECT_TRUE(late.done());
  EXPECT_EQ(late.status().code(), ErrorCode::kTimeout);
}

}  // namespace

// An abort record as a peer writes it, one step at a time: what a writer descheduled
// between its peers, or halfway through one record, leaves behind.
struct ShmTransportProbe {
  /// `from` writes `status` into `to`'s record only, as its first peer of several.
  static void writeAbort(ShmTransport& from, int to, const Status& status) {
    from.writeAbortTo(to, status);
  }
  /// `t`'s record is being written (state 1) by a peer that has not finished.
  static void beginAbortRecord(ShmTransport& t) {
    t.own_.control().abortState.store(1, std::memory_order_release);
  }
  /// ... and is now complete: `status` written by `from`.
  static void endAbortRecord(ShmTransport& t, int from, const Status& status) {
    Control& c = t.own_.control();
    c.abortCode = static_cast<std::int32_t>(status.code());
    c.abortPeer = status.peerRank();
    c.abortFrom = from;
    std::snprintf(c.abortText, kAbortTextBytes, "%s", status.message().c_str());
    c.abortState.store(2, std::memory_order_release);
    t.own_.ring();
  }
};

namespace {

// Rank 2's abort reached rank 0 only; rank 0's call was refused on it without a progress
// pass (health() reports it), and rank 0 leaves. Rank 1, which needed rank 0, must learn
// of rank 2's failure from rank 0, not blame rank 0 for leaving.
TEST_P(ShmTransportTest, RankThatLeavesOnAPeersAbortPassesTheAbortOn) {
  auto ts = connectAll(3, setup());
  std::vector<char> in(8);
  TransferRequest recv;
  ts[1]->link(0).postRecv(&recv, 9, in.data(), in.size());
  const Status culprit(ErrorCode::kAborted, "rank 2 passed an invalid argument", 2);
  ShmTransportProbe::writeAbort(*ts[2], 0, culprit);
  EXPECT_EQ(ts[0]->health().message(), culprit.message());
  ts[0]->shutdown(Deadline::afterSeconds(5));
  Status s = waitFor(*ts[1], recv);
  EXPECT_EQ(s.code(), ErrorCode::kAborted) << s.toString();
  EXPECT_EQ(s.message(), culprit.message());
  EXPECT_EQ(s.peerRank(), 2);
}

// A rank left while a peer was halfway through writing an abort record here: the record,
// once complete, names the cause; the departure alone is not taken for it meanwhile.
TEST_P(ShmTransportTest, DepartureWaitsForAnAbortRecordBeingWritten) {
  auto ts = connectAll(3, setup());
  std::vector<char> in(8);
  TransferRequest recv;
  ts[1]->link(0).postRecv(&recv, 9, in.data(), in.size());
  ShmTransportProbe::beginAbortRecord(*ts[1]);
  ts[0]->shutdown(Deadline::afterSeconds(5));
  for (int pass = 0; pass < 20; ++pass)
    ts[1]->waitForProgress(ts[1]->progressSignal().snapshot(), Deadline::afterSeconds(0.01), 0);
  EXPECT_FALSE(recv.done()) << recv.status().toString();
  const Status culprit(ErrorCode::kTimeout, "allreduce #3 timed out waiting for rank 2", 2);
  ShmTransportProbe::endAbortRecord(*ts[1], 2, culprit);
  Status s = waitFor(*ts[1], recv);
  EXPECT_EQ(s.code(), ErrorCode::kTimeout) << s.toString();
  EXPECT_EQ(s.message(), culprit.message());
  EXPECT_EQ(s.peerRank(), 2);
}

INSTANTIATE_TEST_SUITE_P(Modes, ShmTransportTest, ::testing::Values(256u << 10, 0u),
                         [](const auto& param) {
                           return param.param == 0 ? std::string("RingOnly") : std::string("Rendezvous");
                         });

// Large rendezvous messages, with and without the sender writing pieces of them into the
// receiver (RndvShare): sizes that are no multiple of a piece or a page, both ways at once
// (both ends read and write) and one way (the sender only waits, so it claims as much as
// it can), back to back under one tag so that the share records are reused. Every byte
// must arrive, whichever end copied it.
class ShmShareTest : public ::testing::TestWithParam<bool> {};

std::string exchangeLarge(ShmTransport& t, int peer, bool sends, bool receives, int seed,
                          std::size_t bytes) {
  const int self = t.rank();
  std::vector<std::uint8_t> out = pattern(bytes, seed * 2 + self);
  std::vector<std::uint8_t> in(bytes, 0);
  TransferRequest send, recv;
  if (sends) t.link(peer).postSend(&send, 5, out.data(), out.size());
  if (receives) t.link(peer).postRecv(&recv, 5, in.data(), in.size());
  if (sends) {
    Status s = waitFor(t, send);
    if (!s.ok()) return "send: " + s.toString();
  }
  if (!receives) return "";
  Status s = waitFor(t, recv);
  if (!s.ok()) return "receive: " + s.toString();
  const std::vector<std::uint8_t> expect = pattern(bytes, seed * 2 + peer);
  auto wrong = std::mismatch(in.begin(), in.end(), expect.begin());
  if (wrong.first == in.end()) return "";
  return "byte " + std::to_string(wrong.first - in.begin()) + " of " + std::to_string(bytes) +
         " is wrong";
}

TEST_P(ShmShareTest, LargeMessagesArriveWholeWhoeverCopiesThem) {
  ShmSetup setup;
  setup.cmaShare = GetParam();
  auto ts = connectAll(2, setup);
  ASSERT_EQ(ts.size(), 2u);
#if defined(TUTTI_TSAN) || defined(TUTTI_ASAN)
  // Under the sanitizers every byte copied and compared is instrumented: the 17 MiB message
  // and the repeats took a minute per case under TSan (20 s under ASan), for the same sharing
  // and copying paths the smaller messages take (the release run keeps them).
  const std::vector<std::size_t> sizes = {(256u << 10) + 4093, (1u << 20) + 13, 3u << 20};
  const int rounds = 1;
#else
  const std::vector<std::size_t> sizes = {(256u << 10) + 4093, (1u << 20) + 13, 3u << 20,
                                          (17u << 20) + 5};
  const int rounds = 3;
#endif
  std::vector<std::string> errors(2);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      int seed = 0;
      for (int round = 0; round < rounds && errors[r].empty(); ++round) {
        for (std::size_t bytes : sizes) {
          // Both ways, then rank 0 to rank 1 only.
          errors[r] = exchangeLarge(*ts[r], 1 - r, true, true, ++seed, bytes);
          if (errors[r].empty())
            errors[r] = exchangeLarge(*ts[r], 1 - r, r == 0, r == 1, ++seed, bytes);
          if (!errors[r].empty()) break;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

// Two-way exchanges of large messages, in the executor's order (the receive first, then the
// send: who copies depends on timing) and with both offers out before either receive is
// posted (then each message that may be left to its sender, leavesExchangeToSender, is
// written by it, whole). Every byte arrives either way.
TEST_P(ShmShareTest, ExchangedMessagesArriveWholeAndSmallOnesAreWrittenByTheirSenders) {
  ShmSetup setup;
  setup.cmaShare = GetParam();
  auto ts = connectAll(2, setup);
  ASSERT_EQ(ts.size(), 2u);
  const std::vector<std::size_t> sizes = {(256u << 10) + 4093, 512u << 10, (1u << 20) + 13,
                                          (3u << 20) + 1};
  std::vector<std::string> errors(2);
  BothOffersOut bothOut;
  // Each order three times; under TSan (instrumented copies, 15 s per case) each order once.
#if defined(TUTTI_TSAN)
  constexpr int kRounds = 2;
#else
  constexpr int kRounds = 6;
#endif
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      ShmTransport& t = *ts[static_cast<std::size_t>(r)];
      const int peer = 1 - r;
      int seed = 0, exchanges = 0;
      for (int round = 0; round < kRounds && errors[r].empty(); ++round) {
        const bool sendsFirst = round % 2 == 1;
        for (std::size_t bytes : sizes) {
          const std::vector<std::uint8_t> out = pattern(bytes, ++seed * 2 + r);
          std::vector<std::uint8_t> in(bytes, 0);
          TransferRequest send, recv;
          const std::uint64_t before = t.writtenBytes();
          if (sendsFirst) {
            t.link(peer).postSend(&send, 9, out.data(), out.size());
            if (!bothOut.sent(++exchanges)) {
              errors[r] = std::to_string(bytes) + " bytes: the peer's send never came";
              break;
            }
            t.link(peer).postRecv(&recv, 9, in.data(), in.size());
          } else {
            t.link(peer).postRecv(&recv, 9, in.data(), in.size());
            t.link(peer).postSend(&send, 9, out.data(), out.size());
          }
          Status s = waitFor(t, send);
          if (s.ok()) s = waitFor(t, recv);
          if (!s.ok()) {
            errors[r] = std::to_string(bytes) + " bytes: " + s.toString();
            break;
          }
          if (in != pattern(bytes, seed * 2 + peer)) {
            errors[r] = std::to_string(bytes) + " bytes arrived wrong";
            break;
          }
          const std::uint64_t written = t.writtenBytes() - before;
          if (sendsFirst && ts[static_cast<std::size_t>(peer)]->leavesExchangeToSender(r, bytes) &&
              written != bytes) {
            errors[r] = std::to_string(bytes) + "-byte exchange: this rank wrote " +
                        std::to_string(written) + " bytes of its message";
            break;
          }
          if (!GetParam() && written != 0) {
            errors[r] = "a sender that does not share wrote " + std::to_string(written);
            break;
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

// The size up to which a two-way exchange is left to its senders: as set, none when set to
// 0, and by default autoExchangeBytes() over the host's kernel copy and the ranks' L2. Like
// any exchange, only where every rank of the host has a core: a 1-byte message tells
// whether that holds here.
TEST(ShmExchangeLimit, IsAsSetOrFollowsTheHost) {
  auto limitOf = [](std::optional<std::uint64_t> set) {
    ShmSetup setup;
    setup.exchangeMaxBytes = set;
    return connectAll(2, setup);
  };
  {
    auto ts = limitOf(std::uint64_t{1} << 20);
    ASSERT_EQ(ts.size(), 2u);
    const bool exchanges = ts[0]->leavesExchangeToSender(1, 1);
    EXPECT_EQ(ts[0]->leavesExchangeToSender(1, 1u << 20), exchanges);
    EXPECT_EQ(ts[1]->leavesExchangeToSender(0, 1u << 20), exchanges);
    EXPECT_FALSE(ts[0]->leavesExchangeToSender(1, (1u << 20) + 1));
  }
  {
    auto ts = limitOf(std::uint64_t{0});
    ASSERT_EQ(ts.size(), 2u);
    EXPECT_FALSE(ts[0]->leavesExchangeToSender(1, 1));
    EXPECT_FALSE(ts[1]->leavesExchangeToSender(0, 1));
  }
  auto ts = limitOf(std::nullopt);
  ASSERT_EQ(ts.size(), 2u);
  const bool exchanges = ts[0]->leavesExchangeToSender(1, 1);
  // Both ranks are this process: their masks are its mask.
  const std::uint64_t l2 = cachePropsOf(hostCpuCaches(), allowedCpuList()).l2Bytes;
  const std::uint64_t limit = ShmTransport::autoExchangeBytes(ts[0]->hostKernelCopyRatio(), l2);
  if (limit == UINT64_MAX) {
    EXPECT_EQ(ts[0]->leavesExchangeToSender(1, std::uint64_t{1} << 40), exchanges);
  } else {
    EXPECT_EQ(ts[0]->leavesExchangeToSender(1, limit), exchanges);
    EXPECT_FALSE(ts[0]->leavesExchangeToSender(1, limit + 1));
  }
}

// The automatic exchange limit: none where the kernel's copy is costly, else a quarter of
// the L2 (512K where the L2 is not known).
TEST(ShmExchangeLimit, AutomaticIsNoneWhereTheKernelsCopyIsCostlyElseAQuarterOfTheL2) {
  const double costly = kCostlyKernelCopyRatio + 0.01;
  EXPECT_EQ(ShmTransport::autoExchangeBytes(costly, 2u << 20), UINT64_MAX);
  EXPECT_EQ(ShmTransport::autoExchangeBytes(8.0, 1u << 20), UINT64_MAX);
  EXPECT_EQ(ShmTransport::autoExchangeBytes(kCostlyKernelCopyRatio, 2u << 20), 512u << 10);
  EXPECT_EQ(ShmTransport::autoExchangeBytes(1.8, 1u << 20), 256u << 10);
  EXPECT_EQ(ShmTransport::autoExchangeBytes(1.8, 0), 512u << 10);
  EXPECT_EQ(ShmTransport::autoExchangeBytes(0.0, 2u << 20), 512u << 10);  // not measured
}

// The bounce buffer of reductions read by rendezvous: the largest power of two at most an
// eighth of the L2, within 32 KiB to 1 MiB; 128 KiB where the L2 is not known.
TEST(ShmBounceBuffer, IsAnEighthOfTheL2) {
  EXPECT_EQ(ShmTransport::autoBounceBytes(1u << 20), 128u << 10);             // AMD EPYC VMs
  EXPECT_EQ(ShmTransport::autoBounceBytes(1280u << 10), 128u << 10);          // Ice Lake, 1.25 MiB
  EXPECT_EQ(ShmTransport::autoBounceBytes(2u << 20), 256u << 10);             // 2 MiB L2
  EXPECT_EQ(ShmTransport::autoBounceBytes(0), 128u << 10);                    // not known
  EXPECT_EQ(ShmTransport::autoBounceBytes(0), ShmTransport::kBounceBytesUnknownL2);
  EXPECT_EQ(ShmTransport::autoBounceBytes(128u << 10), 32u << 10);            // at least 32 KiB
  EXPECT_EQ(ShmTransport::autoBounceBytes(std::uint64_t{32} << 20), 1u << 20);  // at most 1 MiB
}

// The rendezvous threshold of heap buffers: as set (one for hosts where every rank has a
// core, one for the others), never when 0, and the automatic one when asked: never where
// the kernel's copy is slow against memcpy, else 256K with a core each and 2M without where
// it is costly, and 16K and 256K where it is not.
TEST(ShmCmaThreshold, AutomaticIsNeverWhereTheKernelsCopyIsSlowElseByItsCost) {
  const double slow = ShmTransport::kSlowKernelCopyRatio;
  const double costly = kCostlyKernelCopyRatio;
  for (const bool coreEach : {true, false}) {
    EXPECT_EQ(ShmTransport::autoCmaBytes(coreEach, slow * 1.01), 0u);
    EXPECT_EQ(ShmTransport::autoCmaBytes(coreEach, 50.0), 0u);
    const std::uint64_t dear = coreEach ? 256u << 10 : 2u << 20;
    const std::uint64_t cheap = coreEach ? 16u << 10 : 256u << 10;
    EXPECT_EQ(ShmTransport::autoCmaBytes(coreEach, slow), dear);
    EXPECT_EQ(ShmTransport::autoCmaBytes(coreEach, 3.2), dear);
    EXPECT_EQ(ShmTransport::autoCmaBytes(coreEach, costly + 0.01), dear);
    EXPECT_EQ(ShmTransport::autoCmaBytes(coreEach, costly), cheap);
    EXPECT_EQ(ShmTransport::autoCmaBytes(coreEach, 1.8), cheap);
    EXPECT_EQ(ShmTransport::autoCmaBytes(coreEach, 0.0), cheap);  // not measured
  }
}

// Where the calls learn their way (TUTTI_MESSAGE_PATH=learn), a slow kernel's copy keeps the
// automatic threshold of a costly one and says it is slow (directSlow), so that only the
// calls that learn try it; without learning it is never, as above. Set thresholds are as
// set either way.
TEST(ShmCmaThreshold, ASlowKernelsCopyStaysForCallsThatLearn) {
  const double slow = ShmTransport::kSlowKernelCopyRatio * 2;
  for (const bool coreEach : {true, false}) {
    const std::uint64_t costly = ShmTransport::autoCmaBytes(coreEach, 3.2);
    const std::uint64_t cheap = ShmTransport::autoCmaBytes(coreEach, 1.5);
    ShmTransport::Options o;
    o.cmaAuto = true;
    for (const bool learns : {true, false}) {
      o.learnsPath = learns;
      const auto fast = ShmTransport::directMoves(o, coreEach, 1.5);
      EXPECT_EQ(fast.from, cheap);
      EXPECT_FALSE(fast.slow);
      EXPECT_EQ(ShmTransport::directMoves(o, coreEach, 3.2).from, costly);
      const auto slowOnes = ShmTransport::directMoves(o, coreEach, slow);
      EXPECT_EQ(slowOnes.from, learns ? costly : 0u);
      EXPECT_EQ(slowOnes.slow, learns);
    }
    o.cmaBytes = 0;  // never, learning or not
    EXPECT_EQ(ShmTransport::directMoves(o, coreEach, slow).from, 0u);
    EXPECT_FALSE(ShmTransport::directMoves(o, coreEach, slow).slow);
    o.cmaAuto = false;
    o.cmaBytes = 100000;
    o.cmaBytesWithCores = 5000;
    EXPECT_EQ(ShmTransport::directMoves(o, coreEach, slow).from, coreEach ? 5000u : 100000u);
    EXPECT_FALSE(ShmTransport::directMoves(o, coreEach, slow).slow);
  }
}

TEST(ShmCmaThreshold, IsAsSetOrFollowsTheHostAndTheCores) {
  const bool coreEach = usableCores() >= 2;
  {
    ShmSetup setup;
    setup.cmaAuto = true;
    auto ts = connectAll(2, setup);
    ASSERT_EQ(ts.size(), 2u);
    // Both ranks (here in one process, so with the same measurement) decide on the host's.
    EXPECT_EQ(ts[0]->hostKernelCopyRatio(), ts[1]->hostKernelCopyRatio());
    EXPECT_EQ(ts[0]->hostKernelCopyRatio(), kernelCopyRatio());
    const std::uint64_t expect =
        ShmTransport::autoCmaBytes(coreEach, ts[0]->hostKernelCopyRatio());
    EXPECT_EQ(ts[0]->cmaFrom(), expect);
    EXPECT_EQ(ts[1]->cmaFrom(), expect);
  }
  {
    ShmSetup setup;
    setup.cmaBytes = 100000;
    auto ts = connectAll(2, setup);  // shm_setup passes cmaBytes for both kinds of host
    ASSERT_EQ(ts.size(), 2u);
    EXPECT_EQ(ts[0]->cmaFrom(), 100000u);
    // Measured all the same: the exchange limit and the ring segments follow it.
    EXPECT_EQ(ts[0]->hostKernelCopyRatio(), kernelCopyRatio());
  }
  {
    ShmSetup setup;
    setup.cmaBytes = 0;
    setup.cmaAuto = true;  // 0 is never, automatic or not
    auto ts = connectAll(2, setup);
    ASSERT_EQ(ts.size(), 2u);
    EXPECT_EQ(ts[0]->cmaFrom(), 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Share, ShmShareTest, ::testing::Values(true, false),
                         [](const auto& param) {
                           return param.param ? std::string("SenderHelps") : std::string("ReceiverReads");
                         });

std::size_t entriesOf(const char* directory) {
  std::size_t n = 0;
  if (DIR* d = opendir(directory)) {
    while (readdir(d) != nullptr) ++n;
    closedir(d);
  }
  return n;
}

// The names in `directory` that mention tutti: other programs on this machine (an MPI
// benchmark run alongside) create and remove their own files in /dev/shm meanwhile.
std::size_t tuttiNamesIn(const char* directory) {
  std::size_t n = 0;
  if (DIR* d = opendir(directory)) {
    while (const dirent* e = readdir(d)) {
      if (std::string_view(e->d_name).find("tutti") != std::string_view::npos) ++n;
    }
    closedir(d);
  }
  return n;
}

// Segments are memfds: nothing named is left behind, and no descriptor outlives its
// transport, over many cycles.
TEST(ShmTransportResources, NothingIsLeftAfterManyCreateDestroyCycles) {
  const std::size_t shmBefore = tuttiNamesIn("/dev/shm");
  {
    auto warm = connectAll(2, ShmSetup{});  // the first cycle may open long-lived descriptors
    for (auto& t : warm) t->shutdown(Deadline::afterSeconds(5));
  }
  const std::size_t fdsBefore = entriesOf("/proc/self/fd");
  for (int cycle = 0; cycle < 50; ++cycle) {
    auto ts = connectAll(3, ShmSetup{});
    ASSERT_EQ(ts.size(), 3u);
    for (auto& t : ts) t->shutdown(Deadline::afterSeconds(5));
  }
  EXPECT_EQ(entriesOf("/proc/self/fd"), fdsBefore);
  EXPECT_EQ(tuttiNamesIn("/dev/shm"), shmBefore);
}

}  // namespace
}  // namespace tutti::shm
