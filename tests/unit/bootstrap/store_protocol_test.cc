// The store wire codec: round trips, and every way a message can be cut, corrupted or lie
// about its lengths rejected with kProtocolError, never a crash and never a large allocation.

#include "bootstrap/store_protocol.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>
#include <string>
#include <vector>

#include "common/replaced_new.h"

// Counts the largest single allocation while `gTrackAllocations` is set, so a test can
// show that the decoder never allocates what a hostile length field declares.
namespace {
std::atomic<bool> gTrackAllocations{false};
std::atomic<std::size_t> gLargestAllocation{0};
}  // namespace

// These replace the global allocation functions for the whole test binary; malloc/free
// pair up correctly, which GCC's heuristic cannot see through the replacement.
#if TUTTI_TEST_REPLACES_NEW
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(std::size_t size) {
  if (gTrackAllocations.load(std::memory_order_relaxed)) {
    std::size_t seen = gLargestAllocation.load(std::memory_order_relaxed);
    while (size > seen && !gLargestAllocation.compare_exchange_weak(seen, size)) {
    }
  }
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
#pragma GCC diagnostic pop
#endif

namespace tutti::storeproto {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes bytesOf(const std::string& s) { return Bytes(s.begin(), s.end()); }

// One message of every opcode, with fields that make each length and value distinct.
std::vector<Message> samples() {
  return {
      Message::set(1, "rank/3/address", bytesOf("10.0.0.3:4000")),
      Message::set(2, "", {}),
      Message::get(3, "rank/0/address", 1500),
      Message::get(4, "k", kNoTimeout),
      Message::add(5, "barrier/count", -7),
      Message::add(6, "counter", INT64_MIN),
      Message::wait(7, {"a", "bb", "ccc"}, 250),
      Message::wait(8, {}, 0),
      Message::ok(9),
      Message::valueReply(10, bytesOf(std::string("\0\1\2binary\xff", 10))),
      Message::intReply(11, INT64_MAX),
      Message::timeoutReply(12, {"missing/1", "missing/2"}),
      Message::errorReply(0xfffffffeu, ErrorCode::kInvalidArgument, "value 'x' is not an integer"),
  };
}

void expectSame(const Message& a, const Message& b) {
  EXPECT_EQ(a.opcode, b.opcode);
  EXPECT_EQ(a.requestId, b.requestId);
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.value, b.value);
  EXPECT_EQ(a.keys, b.keys);
  EXPECT_EQ(a.integer, b.integer);
  EXPECT_EQ(a.errorCode, b.errorCode);
  EXPECT_EQ(a.text, b.text);
  if (a.opcode == Opcode::kGet || a.opcode == Opcode::kWait) {
    EXPECT_EQ(a.timeoutMs, b.timeoutMs);
  }
}

Bytes encoded(const Message& m) {
  Result<Bytes> bytes = encode(m);
  EXPECT_TRUE(bytes.ok()) << bytes.status().toString();
  return bytes.ok() ? *bytes : Bytes{};
}

void putU32(Bytes* b, std::size_t at, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) (*b)[at + i] = static_cast<std::uint8_t>(v >> (24 - 8 * i));
}

void expectProtocolError(const Result<Message>& r, const std::string& mentions) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kProtocolError) << r.status().toString();
  EXPECT_NE(r.status().message().find(mentions), std::string::npos) << r.status().message();
}

TEST(StoreProtocol, EveryMessageTypeRoundTrips) {
  for (const Message& m : samples()) {
    SCOPED_TRACE(opcodeName(m.opcode));
    Bytes bytes = encoded(m);
    ASSERT_GE(bytes.size(), kHeaderBytes);
    EXPECT_EQ(bytes[0], 'T');
    EXPECT_EQ(bytes[4], kVersion);
    Result<Message> back = decode(bytes);
    ASSERT_TRUE(back.ok()) << back.status().toString();
    expectSame(m, *back);
  }
}

TEST(StoreProtocol, HeaderLayoutIsBigEndianAndFixed) {
  Bytes bytes = encoded(Message::get(0x01020304u, "key", 0x0a0b0c0du));
  Bytes expected = {'T', 'S', 'T', 'R', 1, 0x02, 0,   0,   1,   2,    3,    4,    0,   0,
                    0,   11,  0,   0,   0, 3,    'k', 'e', 'y', 0x0a, 0x0b, 0x0c, 0x0d};
  EXPECT_EQ(bytes, expected);
}

TEST(StoreProtocol, EveryTruncationIsRejected) {
  for (const Message& m : samples()) {
    SCOPED_TRACE(opcodeName(m.opcode));
    Bytes bytes = encoded(m);
    for (std::size_t len = 0; len < bytes.size(); ++len) {
      Result<Message> r = decode(std::span<const std::uint8_t>(bytes.data(), len));
      expectProtocolError(r, "truncated");
    }
  }
}

// The header declares exactly the bytes given, but they stop inside a field: the field
// reader, not the outer length check, must catch it.
TEST(StoreProtocol, PayloadsCutInsideAFieldAreRejected) {
  for (const Message& m : samples()) {
    SCOPED_TRACE(opcodeName(m.opcode));
    Bytes bytes = encoded(m);
    std::size_t payload = bytes.size() - kHeaderBytes;
    for (std::size_t cut = 0; cut < payload; ++cut) {
      Bytes shorter(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(kHeaderBytes + cut));
      putU32(&shorter, 12, static_cast<std::uint32_t>(cut));
      expectProtocolError(decode(shorter), "truncated");
    }
  }
}

TEST(StoreProtocol, TrailingBytesAreRejected) {
  for (const Message& m : samples()) {
    SCOPED_TRACE(opcodeName(m.opcode));
    Bytes bytes = encoded(m);
    bytes.push_back(0);
    expectProtocolError(decode(bytes), "trailing");  // beyond the declared length
    putU32(&bytes, 12, static_cast<std::uint32_t>(bytes.size() - kHeaderBytes));
    expectProtocolError(decode(bytes), "trailing");  // inside it, after the last field
  }
}

TEST(StoreProtocol, CorruptedHeadersAreRejected) {
  const Bytes good = encoded(Message::set(1, "k", bytesOf("v")));
  for (int i = 0; i < 4; ++i) {
    Bytes b = good;
    b[i] ^= 0x20;
    expectProtocolError(decode(b), "bad magic");
  }
  for (std::uint8_t version : {0, 2, 255}) {
    Bytes b = good;
    b[4] = version;
    expectProtocolError(decode(b), "unsupported version");
  }
  for (std::uint8_t opcode : {0x00, 0x05, 0x42, 0x80, 0x86, 0xff}) {
    Bytes b = good;
    b[5] = opcode;
    expectProtocolError(decode(b), "unknown opcode");
  }
  for (int i : {6, 7}) {
    Bytes b = good;
    b[i] = 1;
    expectProtocolError(decode(b), "reserved flags");
  }
  Bytes b = good;
  putU32(&b, 12, static_cast<std::uint32_t>(kMaxPayloadBytes + 1));
  expectProtocolError(decode(b), "above the cap");
  putU32(&b, 12, 0xffffffffu);
  Result<Header> h = decodeHeader(b);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), ErrorCode::kProtocolError);
}

TEST(StoreProtocol, HeaderWithPayloadAtTheCapIsAccepted) {
  Bytes b = encoded(Message::ok(1));
  putU32(&b, 12, static_cast<std::uint32_t>(kMaxPayloadBytes));
  Result<Header> h = decodeHeader(b);
  ASSERT_TRUE(h.ok()) << h.status().toString();
  EXPECT_EQ(h->payloadBytes, kMaxPayloadBytes);
  EXPECT_EQ(h->opcode, Opcode::kOk);
}

TEST(StoreProtocol, FieldLengthsAboveTheirBoundsAreRejected) {
  // A SET whose key claims one byte more than a key may hold.
  Bytes b = encoded(Message::set(1, "k", bytesOf("v")));
  putU32(&b, kHeaderBytes, static_cast<std::uint32_t>(Store::kMaxKeyBytes + 1));
  expectProtocolError(decode(b), "key length");
  // A WAIT claiming more keys than a wait may name.
  b = encoded(Message::wait(1, {"k"}, 5));
  putU32(&b, kHeaderBytes, static_cast<std::uint32_t>(Store::kMaxKeysPerWait + 1));
  expectProtocolError(decode(b), "key count");
  // An ERROR whose text claims more than kMaxErrorBytes.
  b = encoded(Message::errorReply(1, ErrorCode::kTimeout, "x"));
  putU32(&b, kHeaderBytes + 1, static_cast<std::uint32_t>(kMaxErrorBytes + 1));
  expectProtocolError(decode(b), "message length");
  // An ERROR carrying a code outside ErrorCode, or kOk.
  for (std::uint8_t code : {0, 11, 200}) {
    b = encoded(Message::errorReply(1, ErrorCode::kTimeout, "x"));
    b[kHeaderBytes] = code;
    expectProtocolError(decode(b), "error code");
  }
}

TEST(StoreProtocol, LyingLengthsAreNotAllocated) {
  if (!TUTTI_TEST_REPLACES_NEW) GTEST_SKIP() << "allocations are not counted here (replaced_new.h)";
  // Each message is a few dozen bytes but declares a field of up to 64 MiB or 64 Ki keys.
  std::vector<Bytes> liars;
  Bytes b = encoded(Message::set(1, "k", bytesOf("v")));
  putU32(&b, kHeaderBytes + 4 + 1, static_cast<std::uint32_t>(Store::kMaxValueBytes));
  liars.push_back(b);
  b = encoded(Message::valueReply(1, bytesOf("v")));
  putU32(&b, kHeaderBytes, static_cast<std::uint32_t>(Store::kMaxValueBytes));
  liars.push_back(b);
  b = encoded(Message::wait(1, {"k"}, 5));
  putU32(&b, kHeaderBytes, static_cast<std::uint32_t>(Store::kMaxKeysPerWait));
  liars.push_back(b);
  b = encoded(Message::timeoutReply(1, {"k"}));
  putU32(&b, kHeaderBytes, static_cast<std::uint32_t>(Store::kMaxKeysPerWait));
  liars.push_back(b);
  for (const Bytes& liar : liars) {
    gLargestAllocation = 0;
    gTrackAllocations = true;
    Result<Message> r = decode(liar);
    gTrackAllocations = false;
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), ErrorCode::kProtocolError) << r.status().toString();
    EXPECT_LT(gLargestAllocation.load(), 4096u) << r.status().message();
  }
}

TEST(StoreProtocol, EncoderEnforcesTheBounds) {
  Result<Bytes> r = encode(Message::get(1, std::string(Store::kMaxKeyBytes + 1, 'k'), 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  r = encode(Message::wait(1, std::vector<std::string>(Store::kMaxKeysPerWait + 1), 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  // Within the count and key bounds, yet above the payload cap in total.
  std::size_t count = kMaxPayloadBytes / Store::kMaxKeyBytes + 1;
  r = encode(
      Message::wait(1, std::vector<std::string>(count, std::string(Store::kMaxKeyBytes, 'k')), 0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("cap"), std::string::npos) << r.status().message();
  r = encode(Message::errorReply(1, ErrorCode::kOk, "not an error"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ErrorCode::kInvalidArgument);
  // A failed encode appends nothing to the caller's buffer.
  Bytes out = {1, 2, 3};
  EXPECT_FALSE(encode(Message::get(1, std::string(Store::kMaxKeyBytes + 1, 'k'), 0), &out).ok());
  EXPECT_EQ(out, (Bytes{1, 2, 3}));
}

TEST(StoreProtocol, LargestValueAndKeyRoundTrip) {
  Message m =
      Message::set(1, std::string(Store::kMaxKeyBytes, 'k'), Bytes(Store::kMaxValueBytes, 0x5a));
  Bytes bytes = encoded(m);
  EXPECT_LE(bytes.size() - kHeaderBytes, kMaxPayloadBytes);
  Result<Message> back = decode(bytes);
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(back->key, m.key);
  EXPECT_EQ(back->value.size(), Store::kMaxValueBytes);
}

TEST(StoreProtocol, LongErrorTextIsCut) {
  Bytes bytes =
      encoded(Message::errorReply(1, ErrorCode::kInternal, std::string(3 * kMaxErrorBytes, 'e')));
  Result<Message> back = decode(bytes);
  ASSERT_TRUE(back.ok()) << back.status().toString();
  EXPECT_EQ(back->text.size(), kMaxErrorBytes);
}

// Random bytes, and valid messages with random bytes flipped, must decode to either a
// message or kProtocolError; what decodes must encode back to the very same bytes.
TEST(StoreProtocol, FuzzedInputNeverCrashes) {
  std::mt19937 rng(20240611);
  std::vector<Message> seeds = samples();
  int decoded = 0;
  for (int i = 0; i < 6000; ++i) {
    Bytes input;
    if (i % 2 == 0) {
      input.resize(rng() % 80);
      for (auto& byte : input) byte = static_cast<std::uint8_t>(rng());
      if (i % 4 == 0 && input.size() >= 6) {
        // Give half of them a plausible prefix so the payload decoders get exercised.
        std::copy(std::begin(kMagic), std::end(kMagic), input.begin());
        input[4] = kVersion;
      }
    } else {
      input = encoded(seeds[rng() % seeds.size()]);
      int flips = 1 + static_cast<int>(rng() % 3);
      for (int f = 0; f < flips; ++f)
        input[rng() % input.size()] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
      if (rng() % 4 == 0) input.resize(rng() % (input.size() + 1));
    }
    Result<Message> r = decode(input);
    if (r.ok()) {
      ++decoded;
      EXPECT_EQ(encoded(*r), input);
    } else {
      EXPECT_EQ(r.status().code(), ErrorCode::kProtocolError) << r.status().toString();
    }
  }
  // Flipping a byte of a key or value keeps the message valid, so some must decode.
  EXPECT_GT(decoded, 0);
}

}  // namespace
}  // namespace tutti::storeproto
