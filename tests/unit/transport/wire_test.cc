#include "transport/tcp/wire.h"

#include <gtest/gtest.h>

#include <random>

#include "transport/tag.h"

namespace tutti::tcp {
namespace {

TEST(Wire, HeaderRoundTrip) {
  FrameHeader in{FrameType::kData, 0x1234567890abcdefULL, 4096, 7,
                 CallStamp{0x8000123456789abcULL, 1000}};
  HeaderBytes bytes = encodeHeader(in);
  auto out = decodeHeader(bytes.data(), "rank 1");
  ASSERT_TRUE(out.ok()) << out.status().toString();
  EXPECT_EQ(out->type, FrameType::kData);
  EXPECT_EQ(out->tag, in.tag);
  EXPECT_EQ(out->length, 4096u);
  EXPECT_EQ(out->aux, 7u);
  EXPECT_EQ(out->stamp, in.stamp);
}

TEST(Wire, EveryCorruptedByteIsRejected) {
  HeaderBytes good = encodeHeader(FrameHeader{FrameType::kData, 42, 100, 0, {}});
  for (std::size_t i = 0; i < kHeaderBytes; ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      HeaderBytes bad = good;
      bad[i] ^= static_cast<std::uint8_t>(1u << bit);
      auto out = decodeHeader(bad.data(), "rank 3 (10.0.0.3:1)");
      ASSERT_FALSE(out.ok()) << "byte " << i << " bit " << bit;
      EXPECT_EQ(out.status().code(), ErrorCode::kProtocolError);
      EXPECT_NE(out.status().message().find("rank 3"), std::string::npos);
    }
  }
}

TEST(Wire, RejectsWrongMagicVersionTypeAndLength) {
  HeaderBytes bytes = encodeHeader(FrameHeader{FrameType::kData, 1, 1, 0, {}});
  bytes[0] = 'G';
  EXPECT_NE(decodeHeader(bytes.data(), "p").status().message().find("magic"), std::string::npos);
  auto tooLong = encodeHeader(FrameHeader{FrameType::kData, 1, kMaxFrameBytes + 1, 0, {}});
  EXPECT_NE(decodeHeader(tooLong.data(), "p").status().message().find("exceeds"),
            std::string::npos);
  auto badHello = encodeHeader(FrameHeader{FrameType::kHello, 0, 5, 0, {}});
  EXPECT_FALSE(decodeHeader(badHello.data(), "p").ok());
  auto badClose = encodeHeader(FrameHeader{FrameType::kClose, 0, 1, 0, {}});
  EXPECT_FALSE(decodeHeader(badClose.data(), "p").ok());
  auto type = encodeHeader(FrameHeader{static_cast<FrameType>(9), 0, 0, 0, {}});
  EXPECT_NE(decodeHeader(type.data(), "p").status().message().find("frame type"),
            std::string::npos);
}

TEST(Wire, RandomBytesNeverDecode) {
  std::mt19937_64 rng(12345);
  int accepted = 0;
  for (int i = 0; i < 100000; ++i) {
    HeaderBytes bytes;
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    if (decodeHeader(bytes.data(), "fuzz").ok()) ++accepted;
  }
  EXPECT_EQ(accepted, 0);
}

TEST(Wire, HelloRoundTripAndValidation) {
  auto bytes = encodeHello(Hello{0xfeedULL, 3, 8});
  auto hello = decodeHello(bytes.data(), bytes.size(), "p");
  ASSERT_TRUE(hello.ok());
  EXPECT_EQ(hello->commUid, 0xfeedULL);
  EXPECT_EQ(hello->rank, 3u);
  EXPECT_EQ(hello->size, 8u);
  EXPECT_FALSE(decodeHello(bytes.data(), bytes.size() - 1, "p").ok());
  // Bytes 16-23: the stream's index and the pair's stream count (wire version 3).
  EXPECT_EQ(hello->stream, 0u);
  EXPECT_EQ(hello->streams, 1u);
  auto noStreams = bytes;
  noStreams[20] = 0;  // a pair of no streams
  EXPECT_FALSE(decodeHello(noStreams.data(), noStreams.size(), "p").ok());
  auto pastTheCount = bytes;
  pastTheCount[16] = 1;  // stream 1 of 1
  EXPECT_FALSE(decodeHello(pastTheCount.data(), pastTheCount.size(), "p").ok());
}

TEST(Tag, FieldsDoNotOverlap) {
  Tag a = collectiveTagBase(3, 5) + 7;
  Tag b = collectiveTagBase(3, 6) + 7;
  Tag c = collectiveTagBase(4, 5) + 7;
  EXPECT_NE(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(collectiveTagBase(0, 1u << 24), collectiveTagBase(0, 0));  // wraps
  EXPECT_NE(p2pTag(0, 5), collectiveTagBase(0, 5));
  EXPECT_NE(p2pTag(0, 5), p2pTag(0, 6));
  EXPECT_EQ(collectiveTagBase(0, 9) + kMaxMessageIndex, collectiveTagBase(0, 9) | kMaxMessageIndex);
}

}  // namespace
}  // namespace tutti::tcp
