// Buffers from memAlloc (transport/shm/user_buffers.h): the allocator's contract, and
// rendezvous messages from and into them copied through the peer's mapping instead of the
// kernel's copy, whichever end copies, with every byte checked; a freed buffer's mapping
// is dropped and never confused with a later buffer under the same descriptor number.

#include "transport/shm/user_buffers.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "transport/link.h"
#include "tutti/memory.h"
#include "unit/transport/conformance.h"
#include "unit/transport/shm_setup.h"

namespace tutti::shm {
namespace {

using test::pattern;
using test::waitFor;

TEST(UserBuffers, AllocationsArePageAlignedZeroedAndFoundByAnyRangeInside) {
  Result<void*> a = memAlloc(10000);
  ASSERT_TRUE(a.ok()) << a.status().toString();
  auto* p = static_cast<unsigned char*>(a.value());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % 4096, 0u);
  EXPECT_TRUE(std::all_of(p, p + 10000, [](unsigned char c) { return c == 0; }));
  std::memset(p, 7, 10000);  // writable throughout
  const BufferRef whole = findUserBuffer(p, 10000);
  ASSERT_TRUE(whole.valid());
  EXPECT_EQ(whole.base, reinterpret_cast<std::uint64_t>(p));
  EXPECT_EQ(whole.bytes, 3u * 4096);  // whole pages
  EXPECT_TRUE(findUserBuffer(p + 100, 3 * 4096 - 100).valid());
  EXPECT_FALSE(findUserBuffer(p + 100, 3 * 4096 - 99).valid()) << "runs past the end";
  EXPECT_FALSE(findUserBuffer(p - 1, 2).valid()) << "starts before it";
  std::vector<char> heap(100);
  EXPECT_FALSE(findUserBuffer(heap.data(), heap.size()).valid());
  EXPECT_TRUE(memFree(p).ok());
  EXPECT_FALSE(findUserBuffer(p, 1).valid()) << "found after being freed";
}

TEST(UserBuffers, BadArgumentsAreRefusedNamingTheProblem) {
  Result<void*> none = memAlloc(0);
  EXPECT_EQ(none.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(none.status().message().find("0 bytes"), std::string::npos);
  EXPECT_EQ(memAlloc(std::size_t{1} << 62).status().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(memFree(nullptr).ok());
  std::vector<char> heap(64);
  Status foreign = memFree(heap.data());
  EXPECT_EQ(foreign.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(foreign.message().find("not a buffer memAlloc returned"), std::string::npos);
  Result<void*> a = memAlloc(1);
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(memFree(a.value()).ok());
  EXPECT_EQ(memFree(a.value()).code(), ErrorCode::kInvalidArgument) << "freed twice";
  // Inside a buffer is not the buffer.
  Result<void*> b = memAlloc(8192);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(memFree(static_cast<char*>(b.value()) + 4096).code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(memFree(b.value()).ok());
}

TEST(UserBuffers, PeerMappingsRefuseRangesOutsideTheRefAndForeignDescriptors) {
  Result<void*> a = memAlloc(4 * 4096);
  ASSERT_TRUE(a.ok());
  auto* p = static_cast<char*>(a.value());
  std::memset(p, 3, 4 * 4096);
  const BufferRef ref = findUserBuffer(p, 1);
  PeerBuffers maps;
  char* local = maps.translate(getpid(), ref, ref.base + 4096, 4096);
  ASSERT_NE(local, nullptr);
  EXPECT_NE(local, p + 4096) << "a mapping of its own";
  EXPECT_EQ(local[0], 3);
  p[4096] = 9;  // the same memory
  EXPECT_EQ(local[0], 9);
  EXPECT_EQ(maps.translate(getpid(), ref, ref.base + 4096, 3 * 4096 + 1), nullptr);
  EXPECT_EQ(maps.translate(getpid(), ref, ref.base - 1, 1), nullptr);
  BufferRef wrongInode = ref;
  wrongInode.inode += 1;
  EXPECT_EQ(maps.translate(getpid(), wrongInode, ref.base, 1), nullptr);
  EXPECT_EQ(maps.size(), 1u);
  maps.dropFreed();
  EXPECT_EQ(maps.size(), 1u) << "dropped while still allocated";
  // A descriptor that is not that memfd (standard input) is never mapped.
  BufferRef notOurs = ref;
  notOurs.fd = 0;
  PeerBuffers fresh;
  EXPECT_EQ(fresh.translate(getpid(), notOurs, ref.base, 1), nullptr);
  EXPECT_EQ(fresh.size(), 0u);
  EXPECT_TRUE(memFree(p).ok());
  // Freed by its owner: the mapping goes at the next sweep.
  maps.dropFreed();
  EXPECT_EQ(maps.size(), 0u);
}

// A buffer from memAlloc, or from the heap, holding `bytes`.
struct Buffer {
  Buffer(std::size_t bytes, bool shared) : shared_(shared) {
    if (shared_) {
      Result<void*> r = memAlloc(bytes);
      EXPECT_TRUE(r.ok()) << r.status().toString();
      data_ = static_cast<std::uint8_t*>(r.ok() ? r.value() : nullptr);
    } else {
      heap_.assign(bytes, 0);
      data_ = heap_.data();
    }
  }
  ~Buffer() {
    if (shared_) {
      EXPECT_TRUE(memFree(data_).ok());
    }
  }
  std::uint8_t* data() const { return data_; }

 private:
  bool shared_;
  std::vector<std::uint8_t> heap_;
  std::uint8_t* data_ = nullptr;
};

// One message of `bytes` from rank 0's buffer to rank 1's, every byte checked. Returns ""
// or what went wrong.
std::string sendOnce(std::vector<std::unique_ptr<ShmTransport>>& ts, const Buffer& out,
                     const Buffer& in, std::size_t bytes, int seed) {
  const std::vector<std::uint8_t> payload = pattern(bytes, seed);
  std::memcpy(out.data(), payload.data(), bytes);
  std::memset(in.data(), 0, bytes);
  TransferRequest send, recv;
  std::string sendError;
  std::thread sender([&] {
    ts[0]->link(1).postSend(&send, 40 + seed, out.data(), bytes);
    Status s = waitFor(*ts[0], send);
    if (!s.ok()) sendError = "send: " + s.toString();
  });
  ts[1]->link(0).postRecv(&recv, 40 + seed, in.data(), bytes);
  Status s = waitFor(*ts[1], recv);
  sender.join();
  if (!s.ok()) return "receive: " + s.toString();
  if (!sendError.empty()) return sendError;
  if (std::memcmp(in.data(), payload.data(), bytes) != 0) return "the bytes differ";
  return "";
}

class UserBufferTransfer : public ::testing::TestWithParam<bool> {};

TEST_P(UserBufferTransfer, LargeMessagesGoThroughTheMappingWhicheverSideIsShared) {
  ShmSetup setup;
  setup.cmaShare = GetParam();  // with the sender writing pieces into the receiver, or not
  auto ts = connectAll(2, setup);
  ASSERT_EQ(ts.size(), 2u);
  const std::size_t bytes = (5u << 20) + 4093;  // many shared pieces, the last one short
  int seed = 0;
  for (const bool sendShared : {false, true}) {
    for (const bool recvShared : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "send buffer " << (sendShared ? "memAlloc" : "heap")
                                        << ", receive buffer "
                                        << (recvShared ? "memAlloc" : "heap"));
      Buffer out(bytes, sendShared), in(bytes, recvShared);
      const std::uint64_t before0 = ts[0]->mappedBytes(), before1 = ts[1]->mappedBytes();
      for (int round = 0; round < 3; ++round)
        ASSERT_EQ(sendOnce(ts, out, in, bytes, ++seed), "");
      const std::uint64_t read = ts[1]->mappedBytes() - before1;
      const std::uint64_t written = ts[0]->mappedBytes() - before0;
      // The receiver reads a shared send buffer through its mapping; a helping sender
      // writes into a shared receive buffer through its own. How the pieces split between
      // the two ends depends on timing (either may claim them all), so only the sums are
      // fixed: where both buffers are shared every byte went through a mapping, and where
      // the sender does not help the receiver read it all.
      if (!sendShared) {
        EXPECT_EQ(read, 0u);
      }
      if (!recvShared || !GetParam()) {
        EXPECT_EQ(written, 0u);
      }
      if (sendShared && (recvShared || !GetParam())) {
        EXPECT_EQ(read + written, 3 * bytes);
      }
      EXPECT_LE(read + written, 3 * bytes);
    }
  }
}

TEST(UserBufferTransfer, MidSizeMessagesFromMemAllocAreReadThroughTheMapping) {
  // Below the rendezvous threshold of heap buffers (cmaBytes) but above mappedBytes.
  ShmSetup setup;
  auto ts = connectAll(2, setup);
  const std::size_t bytes = 20000;
  for (const bool shared : {false, true}) {
    Buffer out(bytes, shared), in(bytes, false);
    const std::uint64_t before = ts[1]->mappedBytes();
    ASSERT_EQ(sendOnce(ts, out, in, bytes, shared ? 1 : 2), "");
    EXPECT_EQ(ts[1]->mappedBytes() - before, shared ? bytes : 0u) << shared;
  }
}

// TUTTI_SHM_CMA_BYTES=0 turns off the kernel's copy for heap buffers only: a message from
// a memAlloc buffer is still read through the mapping.
TEST(UserBufferTransfer, WithoutCmaMemAllocMessagesAreStillReadThroughTheMapping) {
  ShmSetup setup;
  setup.cmaBytes = 0;
  auto ts = connectAll(2, setup);
  const std::size_t bytes = (1u << 20) + 12;
  for (const bool shared : {true, false}) {
    Buffer out(bytes, shared), in(bytes, false);
    const std::uint64_t before = ts[1]->mappedBytes();
    ASSERT_EQ(sendOnce(ts, out, in, bytes, shared ? 6 : 7), "");
    EXPECT_EQ(ts[1]->mappedBytes() - before, shared ? bytes : 0u) << shared;
  }
}

// What the copy hook (ShmTransport::Options::copy) was given: every byte a receiver takes
// out of the ring or through a mapping goes through it, with the whole message's size.
std::atomic<std::uint64_t> hookedBytes{0};
std::atomic<std::uint64_t> hookedCalls{0};
std::atomic<std::uint64_t> hookedWrongSize{0};
std::atomic<std::uint64_t> hookedMessageBytes{0};
void countingCopy(void* dst, const void* src, std::size_t bytes, std::size_t messageBytes) {
  hookedBytes += bytes;
  hookedCalls += 1;
  if (messageBytes != hookedMessageBytes.load()) hookedWrongSize += 1;
  std::memcpy(dst, src, bytes);
}

TEST(UserBufferTransfer, RingPiecesAndMappedReadsGoThroughTheCopyHook) {
  ShmSetup setup;
  setup.copy = &countingCopy;
  auto ts = connectAll(2, setup);
  // A heap message under cmaBytes crosses the ring (4 KiB slots: many pieces); one from a
  // memAlloc buffer above mappedBytes is read through the mapping.
  for (const bool shared : {false, true}) {
    const std::size_t bytes = shared ? 20000 : 100000;
    hookedBytes = 0;
    hookedCalls = 0;
    hookedWrongSize = 0;
    hookedMessageBytes = bytes;
    Buffer out(bytes, shared), in(bytes, false);
    ASSERT_EQ(sendOnce(ts, out, in, bytes, shared ? 3 : 4), "");
    EXPECT_EQ(hookedBytes.load(), bytes) << shared;
    EXPECT_GE(hookedCalls.load(), shared ? 1u : bytes / 4096) << shared;
    EXPECT_EQ(hookedWrongSize.load(), 0u) << "the hook was not told the message's size";
  }
}

// The largest piece the hook was given.
std::atomic<std::uint64_t> hookedLargestPiece{0};
void measuringCopy(void* dst, const void* src, std::size_t bytes, std::size_t messageBytes) {
  if (bytes > hookedLargestPiece.load()) hookedLargestPiece = bytes;
  countingCopy(dst, src, bytes, messageBytes);
}

// With large slots (the default between 2 ranks), a mid-size message still crosses the ring
// in two pieces at least (32 KiB doubled while two fit), pipelined; a large one fills whole
// slots.
TEST(UserBufferTransfer, PiecesGrowWithTheMessageUpToTheSlot) {
  ShmSetup setup;
  setup.copy = &measuringCopy;
  setup.slotBytes = ShmTransport::kTwoRankSlotBytes;
  setup.cmaBytes = 0;  // every message through the ring
  auto ts = connectAll(2, setup);
  const std::pair<std::size_t, std::size_t> cases[] = {
      {100000, 32u << 10},      {200000, 64u << 10},       {300000, 128u << 10},
      {(1u << 20) + 8, 256u << 10}, {8u << 20, 256u << 10}};
  for (const auto& [bytes, piece] : cases) {
    hookedBytes = 0;
    hookedCalls = 0;
    hookedWrongSize = 0;
    hookedLargestPiece = 0;
    hookedMessageBytes = bytes;
    Buffer out(bytes, false), in(bytes, false);
    ASSERT_EQ(sendOnce(ts, out, in, bytes, 5), "") << bytes;
    EXPECT_EQ(hookedBytes.load(), bytes);
    EXPECT_EQ(hookedLargestPiece.load(), piece) << bytes;
    EXPECT_EQ(hookedCalls.load(), (bytes + piece - 1) / piece) << bytes;
    EXPECT_EQ(hookedWrongSize.load(), 0u);
  }
}

// A two-way exchange of one-piece messages (past the heap rendezvous threshold, below one
// shared piece) from heap buffers: into memAlloc buffers each sender writes its message
// through its mapping of the destination (a memcpy where the receiver's read would be the
// kernel's copy), into heap buffers each receiver reads it. Both offers are out before
// either receive is posted, so each message finds its receiver sending too (an exchange,
// where the host gives every rank a core: leavesExchangeToSender). Every byte checked.
TEST(UserBufferTransfer, OnePieceExchangesFromTheHeapAreWrittenIntoMemAllocBuffers) {
  ShmSetup setup;
  setup.cmaBytes = 16 << 10;
  auto ts = connectAll(2, setup);
  ASSERT_EQ(ts.size(), 2u);
  const std::size_t bytes = 20000;
  std::vector<std::string> errors(2);
  BothOffersOut bothOut;
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      ShmTransport& t = *ts[static_cast<std::size_t>(r)];
      const int peer = 1 - r;
      int seed = 0, exchanges = 0;
      for (int round = 0; round < 4 && errors[r].empty(); ++round) {
        const bool intoShared = round % 2 == 0;
        const std::vector<std::uint8_t> out = pattern(bytes, ++seed * 2 + r);
        Buffer in(bytes, intoShared);
        TransferRequest send, recv;
        const std::uint64_t before = t.mappedBytes();
        t.link(peer).postSend(&send, 11, out.data(), out.size());
        const std::string what = std::string(intoShared ? "into memAlloc" : "into the heap");
        if (!bothOut.sent(++exchanges)) {
          errors[r] = what + ": the peer's send never came";
          break;
        }
        t.link(peer).postRecv(&recv, 11, in.data(), bytes);
        Status s = waitFor(t, send);
        if (s.ok()) s = waitFor(t, recv);
        if (!s.ok()) {
          errors[r] = what + ": " + s.toString();
          break;
        }
        const std::vector<std::uint8_t> expect = pattern(bytes, seed * 2 + peer);
        if (std::memcmp(in.data(), expect.data(), bytes) != 0) {
          errors[r] = what + ": the bytes differ";
          break;
        }
        const std::uint64_t mapped = t.mappedBytes() - before;
        const bool exchange = ts[static_cast<std::size_t>(peer)]->leavesExchangeToSender(r, bytes);
        const std::uint64_t want = intoShared && exchange ? bytes : 0;
        if (mapped != want) {
          errors[r] = what + ": this rank copied " + std::to_string(mapped) +
                      " bytes through a mapping, expected " + std::to_string(want);
          break;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

INSTANTIATE_TEST_SUITE_P(Share, UserBufferTransfer, ::testing::Values(true, false),
                         [](const auto& param) {
                           return param.param ? std::string("SenderHelps")
                                              : std::string("ReceiverReads");
                         });

// Adds what arrives into `dst`, element = byte.
class AddingSink final : public PieceSink {
 public:
  explicit AddingSink(std::vector<std::uint8_t>& dst) : dst_(dst) {}
  std::size_t granule() const override { return 1; }
  void take(std::size_t offset, const char* piece, std::size_t bytes) const override {
    for (std::size_t i = 0; i < bytes; ++i)
      dst_[offset + i] = static_cast<std::uint8_t>(dst_[offset + i] + static_cast<std::uint8_t>(piece[i]));
  }
  void takeInto(std::size_t offset, const char* piece, std::size_t bytes,
                char* into) const override {
    for (std::size_t i = 0; i < bytes; ++i)
      into[i] = static_cast<char>(dst_[offset + i] + static_cast<std::uint8_t>(piece[i]));
  }
  char* destination() const override { return reinterpret_cast<char*>(dst_.data()); }

 private:
  std::vector<std::uint8_t>& dst_;
};

// A send whose receiver reduces it prefers a copy through the ring (preferCopy), except from
// a memAlloc buffer: the receiver then reduces it straight from its mapping.
class UserBufferReduce : public ::testing::TestWithParam<bool> {};

TEST_P(UserBufferReduce, ReducedMessagesAreReadFromTheMappingInPlace) {
  const bool shared = GetParam();
  auto ts = connectAll(2, ShmSetup{});
  const std::size_t bytes = (1u << 20) + 7;
  Buffer out(bytes, shared);
  const std::vector<std::uint8_t> payload = pattern(bytes, 5), mine = pattern(bytes, 6);
  std::memcpy(out.data(), payload.data(), bytes);
  std::vector<std::uint8_t> dst = mine, untouched(bytes, 0x5a);
  AddingSink sink(dst);
  TransferRequest send, recv;
  recv.combine = &sink;
  send.preferCopy = true;
  std::thread sender([&] {
    ts[0]->link(1).postSend(&send, 9, out.data(), bytes);
    EXPECT_TRUE(waitFor(*ts[0], send).ok());
  });
  ts[1]->link(0).postRecv(&recv, 9, untouched.data(), bytes);
  ASSERT_TRUE(waitFor(*ts[1], recv).ok()) << recv.status().toString();
  sender.join();
  ASSERT_TRUE(recv.combined);
  for (std::size_t i = 0; i < bytes; ++i)
    ASSERT_EQ(dst[i], static_cast<std::uint8_t>(mine[i] + payload[i])) << "byte " << i;
  EXPECT_EQ(untouched, std::vector<std::uint8_t>(bytes, 0x5a));
  EXPECT_EQ(ts[1]->mappedBytes(), shared ? bytes : 0u);
}

INSTANTIATE_TEST_SUITE_P(Send, UserBufferReduce, ::testing::Values(true, false),
                         [](const auto& param) {
                           return param.param ? std::string("FromMemAlloc")
                                              : std::string("FromHeap");
                         });

TEST(UserBufferTransfer, FreedBuffersAreUnmappedAndNeverConfusedWithNewOnes) {
  ShmSetup setup;
  setup.cmaShare = false;  // the receiver reads every byte
  auto ts = connectAll(2, setup);
  const std::size_t bytes = 1u << 20;
  Buffer in(bytes, false);
  // Each buffer is freed before the next is allocated: the next usually gets the same
  // descriptor number and often the same address, but is other memory.
  for (int i = 0; i < 40; ++i) {
    Buffer out(bytes, true);
    ASSERT_EQ(sendOnce(ts, out, in, bytes, i), "") << "buffer " << i;
  }
  EXPECT_EQ(ts[1]->mappedBytes(), 40u * bytes);
  // Stale mappings are dropped when the next buffer of the same process is mapped: one is
  // left (the last), not forty.
  EXPECT_LE(ts[1]->mappedBuffers(), 1u);
}

}  // namespace
}  // namespace tutti::shm
