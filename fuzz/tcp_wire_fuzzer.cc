// Fuzz target: the TCP wire format (src/transport/tcp/wire.h) and the link that reads it
// (src/transport/tcp/tcp_link.cc).
//
// Every input is first read as a stream of frames, the way a socket delivers them: a
// kHeaderBytes (48-byte, wire version 3) header, then its payload. A HELLO's 24-byte payload
// goes through decodeHello (as establish.cc's readHello does); other payloads are skipped.
// Whatever decodes must encode back to the very same bytes: the format has no redundant
// encodings (flags and reserved bytes must be zero, the checksum is a function of the
// rest), so a difference means the decoder accepted something the encoder cannot produce.
// A DATA frame's call stamp is carried as it came: any value decodes, and only the receiver
// compares it with its own call.
//
// An input whose first byte is odd then drives the real link as well: a 2-rank
// TcpTransport adopts one end of a socketpair (TcpTransport::adopt: a link as it is once
// established and authenticated) and this target plays rank 1 on the other end. The input
// chooses the receives rank 0 posts (tag, size, call stamp), then the bytes rank 1 sends,
// after which rank 1 shuts its side. Every receive must end as the link's rules say
// (expectLink() below walks the stream by them): the payload of the first DATA frame with
// its tag, kMismatch for another size or call, the peer's failure for an ABORT, kPeerFailure
// for a CLOSE or an end of stream, kProtocolError for a bad header, a HELLO, a PART or a striped DATA frame; or no end at
// all once unexpected messages pass the link's cap and it stops reading (back-pressure).

#include <sys/socket.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/assert.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/net.h"
#include "fuzz_input.h"
#include "transport/tcp/tcp_transport.h"
#include "transport/tcp/wire.h"

namespace {

using tutti::ErrorCode;
using tutti::fuzz::FuzzInput;
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

// The input as a stream of frames, through the pure decoders.
void decodeStream(const std::uint8_t* data, std::size_t size) {
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
}

// --- the link ------------------------------------------------------------------------------

using tutti::CallStamp;
using tutti::Deadline;
using tutti::TransferRequest;
using Bytes = std::vector<std::uint8_t>;

// Unexpected bytes rank 0's link buffers before it stops reading: small, so that inputs of a
// few kilobytes reach the back-pressure path.
constexpr std::uint64_t kMaxUnexpected = 4096;

struct Receive {
  tutti::Tag tag = 0;
  Bytes buffer;
  CallStamp stamp;
  TransferRequest request;
};

// How a receive must end.
struct Expected {
  enum Kind { kData, kFailure, kStuck, kStuckOrPeerFailure } kind = kFailure;
  Bytes data;                                // kData: the payload
  ErrorCode code = ErrorCode::kPeerFailure;  // kFailure: the status code
};

// Walks `stream` by the link's rules and says how each receive (posted in this order before
// any byte arrived) must end.
std::vector<Expected> expectLink(std::span<const std::uint8_t> stream,
                                 const std::deque<std::unique_ptr<Receive>>& receives) {
  std::vector<Expected> out(receives.size());
  std::vector<std::size_t> posted;  // receives not matched yet, in posting order
  for (std::size_t i = 0; i < receives.size(); ++i) posted.push_back(i);
  auto failAll = [&](ErrorCode code, Expected::Kind kind = Expected::kFailure) {
    for (std::size_t i : posted) out[i] = Expected{kind, {}, code};
    posted.clear();
  };
  bool peerClosed = false;
  std::uint64_t unexpected = 0;
  std::size_t at = 0;
  while (true) {
    const std::size_t left = stream.size() - at;
    if (left < kHeaderBytes) {
      // End of stream: after a CLOSE and between frames, a goodbye; otherwise a death.
      if (left > 0 || !peerClosed) failAll(ErrorCode::kPeerFailure);
      return out;
    }
    tutti::Result<FrameHeader> header = decodeHeader(stream.data() + at, "rank 1");
    at += kHeaderBytes;
    if (!header.ok()) {
      failAll(ErrorCode::kProtocolError);
      return out;
    }
    const std::size_t present = std::min<std::uint64_t>(header->length, stream.size() - at);
    const bool whole = present == header->length;
    switch (header->type) {
      case FrameType::kHello:
      case FrameType::kPart:  // a one-stream link has no stream for parts
        failAll(ErrorCode::kProtocolError);
        return out;
      case FrameType::kClose:
        failAll(ErrorCode::kPeerFailure);
        peerClosed = true;
        continue;
      case FrameType::kAbort:
        failAll(whole ? static_cast<ErrorCode>(header->aux) : ErrorCode::kPeerFailure);
        return out;
      case FrameType::kData:
        if (header->striped) {  // nothing is striped over one stream
          failAll(ErrorCode::kProtocolError);
          return out;
        }
        break;
    }
    auto match = std::find_if(posted.begin(), posted.end(),
                              [&](std::size_t i) { return receives[i]->tag == header->tag; });
    if (match == posted.end()) {
      if (header->length > 0 && unexpected + header->length > kMaxUnexpected) {
        // Paused for good (nothing more is posted). With bytes still queued, reading stays
        // off; with none, the link may or may not see the end of stream, by timing.
        failAll(ErrorCode::kPeerFailure,
                left > kHeaderBytes ? Expected::kStuck : Expected::kStuckOrPeerFailure);
        return out;
      }
      unexpected += header->length;
    } else {
      const std::size_t i = *match;
      posted.erase(match);
      const bool conflict = tutti::stampsConflict(header->stamp, receives[i]->stamp);
      if (conflict || header->length != receives[i]->buffer.size()) {
        out[i] = Expected{Expected::kFailure, {}, ErrorCode::kMismatch};
      } else if (whole) {
        out[i] = Expected{Expected::kData,
                          Bytes(stream.begin() + static_cast<std::ptrdiff_t>(at),
                                stream.begin() + static_cast<std::ptrdiff_t>(at + present)),
                          ErrorCode::kOk};
      } else {
        out[i] = Expected{Expected::kFailure, {}, ErrorCode::kPeerFailure};
      }
    }
    if (!whole) {
      failAll(ErrorCode::kPeerFailure);  // the stream ends in the middle of a payload
      return out;
    }
    at += present;
  }
}

// Waits (bounded: a hang is a failure the fuzzer reports) until `r` is done.
void waitDone(tutti::Transport& transport, const TransferRequest& r) {
  const Deadline deadline = Deadline::afterSeconds(60);
  while (!r.done()) {
    const auto seen = transport.progressSignal().snapshot();
    if (r.done()) break;
    TUTTI_ASSERT(!deadline.expired());
    transport.waitForProgress(seen, deadline, 1000);
  }
}

void checkEnding(const Receive& r, const Expected& e) {
  switch (e.kind) {
    case Expected::kData:
      TUTTI_ASSERT(r.request.done() && r.request.status().ok());
      TUTTI_ASSERT(r.buffer == e.data);
      return;
    case Expected::kFailure:
      TUTTI_ASSERT(r.request.done() && r.request.status().code() == e.code);
      TUTTI_ASSERT(!r.request.status().message().empty());
      return;
    case Expected::kStuck:
      TUTTI_ASSERT(!r.request.done());
      return;
    case Expected::kStuckOrPeerFailure:
      if (r.request.done()) TUTTI_ASSERT(r.request.status().code() == ErrorCode::kPeerFailure);
      return;
  }
}

void driveLink(FuzzInput& in) {
  std::deque<std::unique_ptr<Receive>> receives(in.u8() % 9);
  for (auto& r : receives) {
    r = std::make_unique<Receive>();
    r->tag = in.u8() % 4;
    r->buffer.resize(in.u8());
    if (in.flag()) r->stamp = CallStamp{(std::uint64_t{1} << 63) | in.u8(), in.u8()};
  }
  const std::span<const std::uint8_t> stream = in.rest();
  const std::vector<Expected> expected = expectLink(stream, receives);

  int sv[2];
  TUTTI_ASSERT(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
  tutti::UniqueFd raw(sv[1]);
  std::vector<tutti::UniqueFd> sockets;
  sockets.emplace_back();
  sockets.emplace_back(sv[0]);
  auto transport =
      TcpTransport::adopt(0, 2, std::move(sockets), {"", "rank 1 (fuzz)"}, kMaxUnexpected);
  TUTTI_ASSERT(transport.ok());
  tutti::Link& link = (*transport)->link(1);
  for (auto& r : receives) {
    r->request.stamp = r->stamp;
    link.postRecv(&r->request, r->tag, r->buffer.data(), r->buffer.size());
  }
  // A few kilobytes: they fit in the socket whether or not the link reads them.
  TUTTI_ASSERT(
      tutti::writeFull(raw.get(), stream.data(), stream.size(), Deadline::afterSeconds(60)).ok());
  ::shutdown(raw.get(), SHUT_WR);
  for (std::size_t i = 0; i < receives.size(); ++i) {
    if (expected[i].kind == Expected::kData || expected[i].kind == Expected::kFailure)
      waitDone(**transport, receives[i]->request);
  }
  for (std::size_t i = 0; i < receives.size(); ++i) checkEnding(*receives[i], expected[i]);
  for (auto& r : receives) link.cancel(&r->request);  // the stuck ones
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The link logs its failures at INFO and WARN; thousands a second would drown the output.
  static const bool quiet = tutti::log::configure("ERROR", "ALL", "");
  TUTTI_ASSERT(quiet);
  decodeStream(data, size);
  if (size > 0 && (data[0] & 1) != 0) {
    FuzzInput in(std::span<const std::uint8_t>(data, size).subspan(1));
    driveLink(in);
  }
  return 0;
}
