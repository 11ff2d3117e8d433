// reduce::copy, reduce::copyTwo and the streaming copy kernels: every length and alignment
// on every kernel set this CPU supports, large copies that take the non-temporal path,
// pieces of a large output, and overlapping ranges (memmove's semantics).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "reduce/kernels.h"
#include "reduce/reduce.h"

namespace tutti::reduce {
namespace {

using Bytes = std::vector<std::uint8_t>;
constexpr std::uint8_t kSentinel = 0xa5;
constexpr std::size_t kGuard = 128;

Bytes randomBytes(std::size_t n, std::uint32_t seed) {
  std::mt19937 gen(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<std::uint8_t>(gen());
  return out;
}

// Index of the first byte of `got` that differs from `want`, or -1.
long firstDifference(const std::uint8_t* got, const std::uint8_t* want, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    if (got[i] != want[i]) return static_cast<long>(i);
  }
  return -1;
}

bool guardsIntact(const Bytes& buf, std::size_t begin, std::size_t end) {
  for (std::size_t i = 0; i < begin; ++i) {
    if (buf[i] != kSentinel) return false;
  }
  for (std::size_t i = end; i < buf.size(); ++i) {
    if (buf[i] != kSentinel) return false;
  }
  return true;
}

class StreamCopyKernelTest : public ::testing::TestWithParam<detail::Isa> {
 protected:
  void SetUp() override {
    if (!detail::isaSupported(GetParam())) {
      GTEST_SKIP() << "this CPU (or OS) does not support the " << detail::isaName(GetParam())
                   << " kernels";
    }
  }
};

// Every length up to past four cache lines (the kernels' unrolled step) at every
// destination alignment within a line and two source alignments, then a few lengths of
// many steps: the bytes are the source's and nothing outside the destination is written.
// The kernel that copies into two destinations as well: both hold the source, nothing
// around either is written (the cached one's alignment moves with the streamed one's).
TEST_P(StreamCopyKernelTest, EveryLengthAndAlignmentCopiesExactly) {
  const detail::CopyFn fn = detail::streamCopyKernel(GetParam());
  const detail::CopyTwoFn two = detail::streamCopyTwoKernel(GetParam());
  ASSERT_NE(fn, nullptr);
  ASSERT_NE(two, nullptr);
  const Bytes src = randomBytes(8192 + 64, 7);
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 300; ++n) lengths.push_back(n);
  for (std::size_t n : {511, 512, 513, 1024, 4095, 4096, 4097, 8191}) lengths.push_back(n);
  for (std::size_t n : lengths) {
    for (std::size_t dstAt = 0; dstAt < 64; dstAt += (n > 300 ? 7 : 1)) {
      for (std::size_t srcAt : {0, 13}) {
        // 64-byte aligned storage for the destination, so dstAt is its line offset.
        Bytes buf(kGuard + 64 + n + kGuard + 64, kSentinel);
        Bytes other = buf, cache = buf;
        auto base = reinterpret_cast<std::uintptr_t>(buf.data() + kGuard);
        const std::size_t begin = kGuard + (64 - base % 64) % 64 + dstAt;
        const auto otherBase = reinterpret_cast<std::uintptr_t>(other.data() + kGuard);
        const std::size_t otherBegin = kGuard + (64 - otherBase % 64) % 64 + dstAt;
        const std::size_t cachedAt = kGuard + (dstAt * 5) % 64;
        fn(buf.data() + begin, src.data() + srcAt, n);
        two(cache.data() + cachedAt, other.data() + otherBegin, src.data() + srcAt, n);
        const std::string where = std::string(detail::isaName(GetParam())) + ": length " +
                                  std::to_string(n) + ", dst offset " + std::to_string(dstAt) +
                                  ", src offset " + std::to_string(srcAt);
        ASSERT_EQ(firstDifference(buf.data() + begin, src.data() + srcAt, n), -1) << where;
        ASSERT_TRUE(guardsIntact(buf, begin, begin + n)) << where << ": outside dst";
        ASSERT_EQ(firstDifference(other.data() + otherBegin, src.data() + srcAt, n), -1)
            << where << ", two destinations";
        ASSERT_EQ(firstDifference(cache.data() + cachedAt, src.data() + srcAt, n), -1) << where;
        ASSERT_TRUE(guardsIntact(other, otherBegin, otherBegin + n)) << where << ": outside dst";
        ASSERT_TRUE(guardsIntact(cache, cachedAt, cachedAt + n)) << where << ": outside cached";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIsa, StreamCopyKernelTest,
                         ::testing::Values(detail::Isa::kGeneric, detail::Isa::kAvxF16c,
                                           detail::Isa::kAvx2, detail::Isa::kAvx512,
                                           detail::Isa::kAvx512Bf16),
                         [](const ::testing::TestParamInfo<detail::Isa>& param) {
                           return std::string(detail::isaName(param.param));
                         });

// A copy above the threshold takes the streaming kernel of the best instruction set; one
// that starts off a cache line and ends mid-line still copies every byte and no other.
TEST(Copy, LargeCopyIsExact) {
  const std::size_t n = kCopyStreamingBytes + 77;
  const Bytes src = randomBytes(n + 3, 11);
  Bytes dst(n + 2 * kGuard, kSentinel);
  copy(dst.data() + kGuard + 1, src.data() + 3, n);
  EXPECT_EQ(firstDifference(dst.data() + kGuard + 1, src.data() + 3, n), -1);
  EXPECT_TRUE(guardsIntact(dst, kGuard + 1, kGuard + 1 + n));
}

// Pieces of a large output, each small: outputBytes makes them stream; the result is the
// whole source however the pieces fall on cache lines.
TEST(Copy, PiecesOfALargeOutputAreExact) {
  const std::size_t n = (std::size_t{1} << 20) + 5;
  const std::size_t piece = (std::size_t{64} << 10) + 3;
  const Bytes src = randomBytes(n, 13);
  Bytes dst(n + 2 * kGuard, kSentinel);
  for (std::size_t at = 0; at < n; at += piece) {
    copy(dst.data() + kGuard + at, src.data() + at, std::min(piece, n - at),
         std::size_t{64} << 20);
  }
  EXPECT_EQ(firstDifference(dst.data() + kGuard, src.data(), n), -1);
  EXPECT_TRUE(guardsIntact(dst, kGuard, kGuard + n));
}

// Overlapping ranges, forwards and backwards, small and above the threshold: the result is
// memmove's.
TEST(Copy, OverlappingRangesBehaveAsMemmove) {
  for (const std::size_t n : {std::size_t{1000}, kCopyStreamingBytes + 64}) {
    for (const long shift : {-100L, -1L, 1L, 100L}) {
      const Bytes original = randomBytes(n + 200, 17);
      Bytes got = original;
      Bytes want = original;
      std::uint8_t* from = got.data() + 100;
      copy(from + shift, from, n);
      std::memmove(want.data() + 100 + shift, want.data() + 100, n);
      ASSERT_EQ(firstDifference(got.data(), want.data(), got.size()), -1)
          << "length " << n << ", shift " << shift;
    }
  }
}

// copyTwo: pieces of a large output (the streaming kernel), a small one (two plain copies)
// and a destination that overlaps the source (memmove's result there): both outputs are
// the source's bytes.
TEST(CopyTwo, BothDestinationsHoldTheSource) {
  const std::size_t n = (std::size_t{1} << 20) + 5;
  const std::size_t piece = (std::size_t{64} << 10) + 3;
  const Bytes src = randomBytes(n, 19);
  Bytes dst(n + 2 * kGuard, kSentinel);
  Bytes cached(piece + 2 * kGuard, kSentinel);
  for (std::size_t at = 0; at < n; at += piece) {
    const std::size_t bytes = std::min(piece, n - at);
    copyTwo(cached.data() + kGuard, dst.data() + kGuard + at, src.data() + at, bytes,
            std::size_t{64} << 20);
    ASSERT_EQ(firstDifference(cached.data() + kGuard, src.data() + at, bytes), -1) << at;
    ASSERT_TRUE(guardsIntact(cached, kGuard, kGuard + piece));  // the last piece is short
  }
  EXPECT_EQ(firstDifference(dst.data() + kGuard, src.data(), n), -1);
  EXPECT_TRUE(guardsIntact(dst, kGuard, kGuard + n));

  Bytes small(1000 + 2 * kGuard, kSentinel), smallCached(1000, 0);
  copyTwo(smallCached.data(), small.data() + kGuard, src.data(), 1000);
  EXPECT_EQ(firstDifference(small.data() + kGuard, src.data(), 1000), -1);
  EXPECT_EQ(firstDifference(smallCached.data(), src.data(), 1000), -1);
  EXPECT_TRUE(guardsIntact(small, kGuard, kGuard + 1000));

  for (const std::size_t bytes : {std::size_t{1000}, kCopyStreamingBytes + 64}) {
    const Bytes original = randomBytes(bytes + 200, 23);
    Bytes got = original, want = original, into(bytes, 0);
    copyTwo(into.data(), got.data() + 150, got.data() + 100, bytes);
    std::memmove(want.data() + 150, want.data() + 100, bytes);
    EXPECT_EQ(firstDifference(into.data(), original.data() + 100, bytes), -1) << bytes;
    EXPECT_EQ(firstDifference(got.data(), want.data(), got.size()), -1) << bytes;
  }
}

// The threshold of non-temporal stores is the process's (the machine model's, set at
// communicator creation): below the default it makes small outputs stream, and copies and
// reductions give the same bytes either way.
TEST(Copy, TheStreamingThresholdChangesNoResult) {
  EXPECT_EQ(streamingFrom(), kCopyStreamingBytes);
  setStreamingFrom(std::size_t{64} << 10);
  const std::size_t n = (std::size_t{100} << 10) + 77;
  const Bytes src = randomBytes(n + 1, 29);
  Bytes dst(n + 2 * kGuard, kSentinel), cached(n, 0);
  copy(dst.data() + kGuard + 1, src.data() + 1, n);
  EXPECT_EQ(firstDifference(dst.data() + kGuard + 1, src.data() + 1, n), -1);
  EXPECT_TRUE(guardsIntact(dst, kGuard + 1, kGuard + 1 + n));
  copyTwo(cached.data(), dst.data() + kGuard, src.data(), n);
  EXPECT_EQ(firstDifference(cached.data(), src.data(), n), -1);
  EXPECT_EQ(firstDifference(dst.data() + kGuard, src.data(), n), -1);
  std::vector<std::int32_t> a(n / 4), b(n / 4), sum(n / 4);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<std::int32_t>(i * 7);
    b[i] = static_cast<std::int32_t>(i * 3 + 1);
  }
  combine(sum.data(), a.data(), b.data(), a.size(), DataType::kInt32, ReduceOp::kSum);
  for (std::size_t i = 0; i < a.size(); ++i) ASSERT_EQ(sum[i], a[i] + b[i]) << i;
  setStreamingFrom(kCopyStreamingBytes);
  EXPECT_EQ(streamingFrom(), kCopyStreamingBytes);
}

TEST(Copy, NothingToCopyTouchesNothing) {
  Bytes buf(64, kSentinel);
  copy(buf.data(), nullptr, 0);
  copy(buf.data(), buf.data(), 64);
  EXPECT_TRUE(guardsIntact(buf, 0, 0));
}

}  // namespace
}  // namespace tutti::reduce
