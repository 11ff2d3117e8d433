#include "transport/tcp/wire.h"

#include <algorithm>
#include <cstring>

#include "base/assert.h"
#include "base/strings.h"

namespace tutti::tcp {
namespace {

void put32(std::uint8_t* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
void put64(std::uint8_t* p, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<std::uint8_t>(v >> (8 * i));
}
std::uint32_t get32(const std::uint8_t* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
std::uint64_t get64(const std::uint8_t* p) {
  std::uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

std::uint32_t fnv1a(const std::uint8_t* p, std::size_t n) {
  std::uint32_t h = 2166136261u;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 16777619u;
  }
  return h;
}

Status protocolError(const std::string& peer, const std::string& what) {
  return Status(ErrorCode::kProtocolError, "bad frame from " + peer + ": " + what);
}

}  // namespace

HeaderBytes encodeHeader(const FrameHeader& header) {
  HeaderBytes out{};
  put32(&out[0], kWireMagic);
  out[4] = kWireVersion;
  out[5] = static_cast<std::uint8_t>(header.type);
  if (header.striped) {
    TUTTI_ASSERT(header.type == FrameType::kData);
    out[6] = static_cast<std::uint8_t>(kFlagStriped);
  }
  put64(&out[8], header.tag);
  put64(&out[16], header.length);
  if (header.type == FrameType::kPart) {
    put64(&out[24], header.partOffset);
    put64(&out[32], header.partTotal);
  } else {
    // A message's stamp never has open bits (CallStamp::open: only flat exchanges, which
    // TCP has none of, carry those), so the frame carries what and count alone.
    TUTTI_ASSERT(header.stamp.open == 0);
    put64(&out[24], header.stamp.what);
    put64(&out[32], header.stamp.count);
  }
  put32(&out[40], header.aux);
  put32(&out[44], fnv1a(out.data(), 44));
  return out;
}

Result<FrameHeader> decodeHeader(const std::uint8_t* bytes, const std::string& peer) {
  std::uint32_t magic = get32(bytes);
  if (magic != kWireMagic)
    return protocolError(peer, strFormat("magic 0x%08x is not tutti's (0x%08x)", magic, kWireMagic));
  if (bytes[4] != kWireVersion)
    return protocolError(peer, strFormat("wire version %u, this build speaks %u", bytes[4],
                                         kWireVersion));
  std::uint32_t check = get32(bytes + 44);
  if (check != fnv1a(bytes, 44)) return protocolError(peer, "header checksum mismatch");
  std::uint8_t type = bytes[5];
  if (type < static_cast<std::uint8_t>(FrameType::kData) ||
      type > static_cast<std::uint8_t>(FrameType::kPart))
    return protocolError(peer, strFormat("unknown frame type %u", type));
  const unsigned flags = bytes[6] | (unsigned{bytes[7]} << 8);
  if (flags != 0 && !(type == static_cast<std::uint8_t>(FrameType::kData) && flags == kFlagStriped))
    return protocolError(peer, "reserved flags are set");
  FrameHeader header;
  header.type = static_cast<FrameType>(type);
  header.striped = flags == kFlagStriped;
  header.tag = get64(bytes + 8);
  header.length = get64(bytes + 16);
  if (header.type == FrameType::kPart) {
    header.partOffset = get64(bytes + 24);
    header.partTotal = get64(bytes + 32);
    if (header.partTotal > kMaxFrameBytes || header.partOffset > header.partTotal ||
        header.length > header.partTotal - header.partOffset)
      return protocolError(peer, "part frame outside its message");
  } else {
    header.stamp.what = get64(bytes + 24);
    header.stamp.count = get64(bytes + 32);
  }
  header.aux = get32(bytes + 40);
  if (header.length > kMaxFrameBytes)
    return protocolError(peer, strFormat("declared length %llu exceeds the %llu-byte limit",
                                         static_cast<unsigned long long>(header.length),
                                         static_cast<unsigned long long>(kMaxFrameBytes)));
  if (header.type == FrameType::kHello && header.length != kHelloBytes)
    return protocolError(peer, strFormat("hello of %llu bytes (expected %zu)",
                                         static_cast<unsigned long long>(header.length),
                                         kHelloBytes));
  if (header.type == FrameType::kClose && header.length != 0)
    return protocolError(peer, "close frame with a payload");
  if (header.type == FrameType::kAbort &&
      (header.length > kMaxAbortBytes || header.aux > static_cast<std::uint32_t>(ErrorCode::kInternal) ||
       header.aux == 0))
    return protocolError(peer, "malformed abort frame");
  return header;
}

Status abortStatus(const FrameHeader& header, std::string text, int sender, int worldSize,
                   const std::string& senderName) {
  for (char& c : text) {
    if (c < 32 || c > 126) c = '?';  // the text came off the wire: keep logs printable
  }
  // An error must say what happened, even when the peer gave no reason.
  if (text.empty())
    text = strFormat("%s aborted the communicator without giving a reason", senderName.c_str());
  const int blamed = header.tag > 0 && header.tag <= static_cast<Tag>(worldSize)
                         ? static_cast<int>(header.tag - 1)
                         : sender;
  return Status(static_cast<ErrorCode>(header.aux), std::move(text), blamed);
}

PartRange stripePart(std::uint64_t bytes, int streams, int index) {
  TUTTI_ASSERT(streams >= 1 && index >= 0 && index < streams);
  const auto n = static_cast<std::uint64_t>(streams);
  const std::uint64_t share = ((bytes + n - 1) / n + 63) / 64 * 64;
  const std::uint64_t begin = std::min(bytes, share * static_cast<std::uint64_t>(index));
  const std::uint64_t end = std::min(bytes, begin + share);
  return PartRange{begin, end - begin};
}

std::array<std::uint8_t, kHelloBytes> encodeHello(const Hello& hello) {
  std::array<std::uint8_t, kHelloBytes> out{};
  put64(&out[0], hello.commUid);
  put32(&out[8], hello.rank);
  put32(&out[12], hello.size);
  put32(&out[16], hello.stream);
  put32(&out[20], hello.streams);
  return out;
}

Result<Hello> decodeHello(const std::uint8_t* bytes, std::size_t length, const std::string& peer) {
  if (length != kHelloBytes)
    return protocolError(peer, strFormat("hello of %zu bytes (expected %zu)", length, kHelloBytes));
  Hello hello;
  hello.commUid = get64(bytes);
  hello.rank = get32(bytes + 8);
  hello.size = get32(bytes + 12);
  hello.stream = get32(bytes + 16);
  hello.streams = get32(bytes + 20);
  if (hello.streams < 1 || hello.streams > static_cast<std::uint32_t>(kMaxStreams) ||
      hello.stream >= hello.streams)
    return protocolError(peer, strFormat("hello for stream %u of %u (at most %d streams)",
                                         hello.stream, hello.streams, kMaxStreams));
  return hello;
}

}  // namespace tutti::tcp
