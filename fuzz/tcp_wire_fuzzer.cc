// Fuzz target: the TCP wire codec (src/transport/tcp/wire.h).
//
// The input is read as a stream of frames, the way a socket delivers them: a kHeaderBytes
// (48-byte, wire version 2) header, then its payload. A HELLO's 24-byte payload goes through
// decodeHello (as establish.cc's readHello does); other payloads are skipped: the link copies
// them into a buffer sized from the validated header (an ABORT's, at most kMaxAbortBytes, is
// kept as text). Whatever decodes must encode back to the very same bytes: the format has no
// redundant encodings (flags and reserved bytes must be zero, the checksum is a function of
// the rest), so a difference means the decoder accepted something the encoder cannot produce.
// A DATA frame's call stamp is carried as it came: any value decodes, and only the receiver
// compares it with its own call.
//
// The link's own read state machine (TcpLink::readLocked) is not a pure function: it
// reads its socket under the link's mutex, owned by a transport with an epoll thread, so it
// is left to tests/unit/transport/tcp_transport_test.cc (garbage on an established link).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "base/assert.h"
#include "transport/tcp/wire.h"

namespace {

using tutti::ErrorCode;
using namespace tutti::tcp;

// Every refusal must be a protocol error that names the peer, never another code.
void checkRefusal(const tutti::Status& status, const std::string& peer) {
  TUTTI_ASSERT(status.code() == ErrorCode::kProtocolError);
  TUTTI_ASSERT(status.message().find(peer) != std::string::npos);
}

// The invariants decodeHeader promises to the link, which relies on them to size buffers.
void checkHeader(const FrameHeader& h, const std::uint8_t* bytes) {
  TUTTI_ASSERT(h.length <= kMaxFrameBytes);
  if (h.type == FrameType::kHello) TUTTI_ASSERT(h.length == kHelloBytes);
  if (h.type == FrameType::kClose) TUTTI_ASSERT(h.length == 0);
  if (h.type == FrameType::kAbort) {
    TUTTI_ASSERT(h.length <= kMaxAbortBytes);
    TUTTI_ASSERT(h.aux != 0 && h.aux <= static_cast<std::uint32_t>(ErrorCode::kInternal));
  }
  const HeaderBytes again = encodeHeader(h);
  TUTTI_ASSERT(std::memcmp(again.data(), bytes, kHeaderBytes) == 0);
}

void checkHello(const std::uint8_t* bytes, std::size_t length, const std::string& peer) {
  tutti::Result<Hello> hello = decodeHello(bytes, length, peer);
  if (!hello.ok()) {
    checkRefusal(hello.status(), peer);
    return;
  }
  TUTTI_ASSERT(length == kHelloBytes);
  const auto again = encodeHello(*hello);
  TUTTI_ASSERT(std::memcmp(again.data(), bytes, kHelloBytes) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string peer = "rank 1 (fuzz)";
  // A bare HELLO payload as well, at whatever length the input has: decodeHello is also
  // called with lengths other than 24 by anyone who reads a declared length first.
  checkHello(data, size, peer);
  // Bounded by the input: every pass consumes at least a header.
  std::size_t at = 0;
  while (size - at >= kHeaderBytes) {
    const std::uint8_t* bytes = data + at;
    at += kHeaderBytes;
    tutti::Result<FrameHeader> header = decodeHeader(bytes, peer);
    if (!header.ok()) {
      checkRefusal(header.status(), peer);
      break;  // the link fails on the first bad header: nothing after it is read
    }
    checkHeader(*header, bytes);
    const std::size_t left = size - at;
    if (header->type == FrameType::kHello) {
      if (left < kHelloBytes) break;
      checkHello(data + at, kHelloBytes, peer);
    }
    at += static_cast<std::size_t>(std::min<std::uint64_t>(header->length, left));
  }
  return 0;
}
