// The read side of a TCP link: frames off the socket on the loop thread (or a driving
// thread), a header at a time, validated; a DATA payload straight into its matching posted
// receive or into an unexpected buffer, probes and unmatched messages to the call checker,
// back-pressure past the cap, CLOSE and ABORT frames. The request queues, the send side and
// failure are tcp_link.cc's.

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/assert.h"
#include "base/log.h"
#include "base/pool_growth.h"
#include "base/strings.h"
#include "transport/call_checker.h"
#include "transport/tcp/tcp_link.h"
#include "transport/tcp/tcp_transport.h"

namespace tutti::tcp {
namespace {

// Most bytes read from one link per readiness event, so one busy peer cannot starve the
// others on the loop thread.
constexpr std::size_t kReadBudgetBytes = 8u << 20;

// A stream's read that found its end (n == 0) or an error in the middle of a message.
Status closedMidMessage(const std::string& peerName, int peer, int index, ssize_t n) {
  return Status(ErrorCode::kPeerFailure,
                strFormat("%s closed stream %d of its connection in the middle of a message (%s): "
                          "the peer process died or was killed",
                          peerName.c_str(), index, n == 0 ? "EOF" : std::strerror(errno)),
                peer);
}

}  // namespace

bool TcpLink::arrivalConflictsLocked(const FrameHeader& header) {
  CallChecker* checker = owner_->callChecker();
  if (checker == nullptr) return false;
  Status conflict = checker->onArrival(peer_, header.tag, header.stamp);
  if (conflict.ok()) return false;
  // The transport fails with the conflict once the lock is released.
  if (callConflict_.ok()) callConflict_ = std::move(conflict);
  return true;
}

void TcpLink::startPayloadLocked(const FrameHeader& header, DoneList& done) {
  if (isProbeTag(header.tag)) {
    // Checked, then dropped: no receive takes a probe.
    static std::atomic<bool> taken{false};
    markFirstTime(taken);  // code no call runs until a peer waits long (pool_growth.h)
    (void)arrivalConflictsLocked(header);
    discardPayloadLocked(header);
    return;
  }
  auto it = std::find_if(posted_.begin(), posted_.end(),
                         [&](TransferRequest* r) { return r->tag == header.tag; });
  if (it != posted_.end()) {
    TransferRequest* request = *it;
    posted_.erase(it);
    Status refused;
    if (stampsConflict(header.stamp, request->stamp)) {
      refused = stampMismatch(request, peer_, peerName_, header.stamp);
    } else if (request->bytes != header.length) {
      refused = Status(ErrorCode::kMismatch,
                       strFormat("%s sent a %llu-byte message but this rank expected %zu bytes "
                                 "(tag 0x%llx): the ranks called different operations or counts",
                                 peerName_.c_str(), static_cast<unsigned long long>(header.length),
                                 request->bytes, static_cast<unsigned long long>(header.tag)),
                       peer_);
    }
    if (!refused.ok()) {
      completeLocked(request, std::move(refused), done);
      discardPayloadLocked(header);
      return;
    }
    if (header.length == 0) {
      completeLocked(request, Status(), done);
      readState_ = ReadState::kHeader;
      return;
    }
    readTarget_ = request;
    readPos_ = 0;
    readEnd_ = firstPartBytes(header.length);
    expectPartsLocked(header, request, nullptr);
    readState_ = readEnd_ > 0 ? ReadState::kPayloadToRequest : ReadState::kHeader;
    return;
  }
  // Unexpected: nobody may ever receive it (another call here), so the checker looks at it
  // now. A message that matched a receive was checked against that receive's stamp above,
  // which is this rank's call for the same sequence number; the checker would repeat it.
  if (arrivalConflictsLocked(header)) {
    discardPayloadLocked(header);  // dropped unread
    return;
  }
  // Payloads and entries both count: empty messages are held to the cap too.
  if (unexpectedBytes_ + header.length + (unexpected_.size() + 1) * kEntryBytes >
      maxUnexpectedBytes_) {
    // Back-pressure: stop reading this socket until a matching receive is posted.
    pausedHeader_ = header;
    readState_ = ReadState::kPaused;
    TUTTI_DEBUG(kTcp, "pausing reads from %s: %llu unexpected bytes buffered", peerName_.c_str(),
                static_cast<unsigned long long>(unexpectedBytes_));
    return;
  }
  std::unique_ptr<Unexpected> entry = spare_.take(header.length);
  entry->tag = header.tag;
  entry->stamp = header.stamp;
  entry->length = header.length;
  unexpectedBytes_ += header.length;
  readUnexpected_ = entry.get();
  readPos_ = 0;
  readEnd_ = firstPartBytes(header.length);
  expectPartsLocked(header, nullptr, entry.get());
  pushEarly(unexpected_, std::move(entry));
  readState_ = readEnd_ > 0 ? ReadState::kPayloadToUnexpected : ReadState::kHeader;
}

void TcpLink::discardPayloadLocked(const FrameHeader& header) {
  discardLeft_ = firstPartBytes(header.length);
  expectPartsLocked(header, nullptr, nullptr);
  readState_ = discardLeft_ > 0 ? ReadState::kDiscard : ReadState::kHeader;
}

void TcpLink::expectPartsLocked(const FrameHeader& header, TransferRequest* request,
                                Unexpected* unexpected) {
  if (!stripedBytes(header.length)) return;
  for (int i = 1; i < streams(); ++i) {
    const PartRange range = stripePart(header.length, streams(), i);
    Part part;
    part.request = request;
    part.unexpected = unexpected;
    part.tag = header.tag;
    part.offset = range.offset;
    part.length = range.length;
    part.total = header.length;
    extra_[static_cast<std::size_t>(i - 1)]->expected.push_back(part);
  }
  // The streams' reading resumes with their interest (updateInterestLocked), or, for one
  // that ended, fails the link there (readStreamLocked): the peer left mid-message.
}

void TcpLink::receivedLocked(TransferRequest* request, Unexpected* u, std::size_t got,
                             DoneList& done) {
  if (got == 0) return;  // an empty part: the message completes with its last byte
  if (request != nullptr) {
    request->progress += got;
    if (request->progress == request->bytes) completeLocked(request, Status(), done);
    return;
  }
  if (u == nullptr) return;
  u->received += got;
  if (u->received < u->length || u->claimedBy == nullptr) return;
  TransferRequest* r = u->claimedBy;
  std::memcpy(r->data, u->data.data(), u->length);
  unexpectedBytes_ -= u->length;
  recycleLocked(std::find_if(unexpected_.begin(), unexpected_.end(),
                             [&](const auto& e) { return e.get() == u; }));
  completeLocked(r, Status(), done);
}

void TcpLink::handleHeaderLocked(const FrameHeader& header, DoneList& done) {
  switch (header.type) {
    case FrameType::kData:
      // The two ends stripe the same messages (the same rule, the same stream count): a
      // frame that says otherwise would leave the streams out of step.
      if (header.striped != stripedBytes(header.length)) {
        const Status bad(ErrorCode::kProtocolError,
                         strFormat("bad frame from %s: a %llu-byte message %s striped over %d "
                                   "stream%s",
                                   peerName_.c_str(),
                                   static_cast<unsigned long long>(header.length),
                                   header.striped ? "marked" : "not marked", streams(),
                                   streams() == 1 ? "" : "s"),
                         peer_);
        abortNowLocked(bad);
        failLocked(bad, done);
        return;
      }
      startPayloadLocked(header, done);
      return;
    case FrameType::kClose: {
      peerClosed_ = true;
      Status left(ErrorCode::kPeerFailure,
                  strFormat("%s left the communicator while this rank still expected a "
                            "message from it",
                            peerName_.c_str()),
                  peer_);
      for (TransferRequest* r : posted_) completeLocked(r, left, done);
      posted_.clear();
      return;
    }
    case FrameType::kAbort:
      abortHeader_ = header;
      abortText_.assign(header.length, '\0');  // bounded by kMaxAbortBytes (decodeHeader)
      abortGot_ = 0;
      if (header.length == 0) finishAbortLocked(done);
      else readState_ = ReadState::kAbortPayload;
      return;
    case FrameType::kHello:
    case FrameType::kPart:
      failLocked(Status(ErrorCode::kProtocolError,
                        strFormat("%s sent a %s frame on an established connection's stream 0",
                                  peerName_.c_str(),
                                  header.type == FrameType::kHello ? "hello" : "part"),
                        peer_),
                 done);
      return;
  }
}

void TcpLink::finishAbortLocked(DoneList& done) {
  readState_ = ReadState::kHeader;
  peerClosed_ = true;  // it will send nothing more
  // The text is the root cause as the first rank to see it worded it; relaying it
  // unchanged keeps the message from growing a "rank X aborted: " per hop.
  Status reason = abortStatus(abortHeader_, abortText_, peer_, owner_->size(), peerName_);
  TUTTI_INFO(kTcp, "%s aborted the communicator: %s", peerName_.c_str(), reason.message().c_str());
  failLocked(reason, done);
}

bool TcpLink::readPayloadLocked(DoneList& done) {
  char* dst = nullptr;
  std::size_t want = 0;
  char discard[kDiscardChunk];
  if (readState_ == ReadState::kPayloadToRequest) {
    dst = readTarget_->data + readPos_;
    want = readEnd_ - readPos_;
  } else if (readState_ == ReadState::kPayloadToUnexpected) {
    dst = readUnexpected_->data.data() + readPos_;
    want = readEnd_ - readPos_;
  } else if (readState_ == ReadState::kAbortPayload) {
    dst = abortText_.data() + abortGot_;
    want = abortText_.size() - abortGot_;
  } else {
    TUTTI_ASSERT(readState_ == ReadState::kDiscard);
    dst = discard;
    want = static_cast<std::size_t>(std::min<std::uint64_t>(discardLeft_, kDiscardChunk));
  }
  ssize_t n = ::recv(fd_.get(), dst, want, MSG_DONTWAIT);
  if (n <= 0) {
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return false;
    failLocked(Status(ErrorCode::kPeerFailure,
                      strFormat("%s closed the connection in the middle of a message (%s): the "
                                "peer process died or was killed",
                                peerName_.c_str(), n == 0 ? "EOF" : std::strerror(errno)),
                      peer_),
               done);
    return false;
  }
  auto got = static_cast<std::size_t>(n);
  if (readState_ == ReadState::kPayloadToRequest ||
      readState_ == ReadState::kPayloadToUnexpected) {
    // The other parts of a striped message may land before or after this one: whichever
    // completes the message (receivedLocked) completes it.
    readPos_ += got;
    TransferRequest* request = readTarget_;
    Unexpected* u = readState_ == ReadState::kPayloadToUnexpected ? readUnexpected_ : nullptr;
    if (readPos_ == readEnd_) {
      readTarget_ = nullptr;
      readUnexpected_ = nullptr;
      readState_ = ReadState::kHeader;
    }
    receivedLocked(request, u, got, done);
  } else if (readState_ == ReadState::kAbortPayload) {
    abortGot_ += got;
    if (abortGot_ == abortText_.size()) finishAbortLocked(done);
  } else {
    discardLeft_ -= got;
    if (discardLeft_ == 0) readState_ = ReadState::kHeader;
  }
  return true;
}

void TcpLink::readLocked(DoneList& done) {
  std::size_t budget = kReadBudgetBytes;
  // A call conflict ends the reading for good: the transport fails with it (once the lock
  // is released) before a later frame completes a receive, so that the call under way fails
  // rather than returning as if nothing was wrong (shared memory fails at once, under its
  // lock).
  while (failure_.ok() && callConflict_.ok() && !eof_ && budget > 0) {
    if (readState_ == ReadState::kPaused) {
      // Reads are off; only look for a dead peer (error or EOF) without consuming data.
      int err = 0;
      socklen_t len = sizeof(err);
      char probe;
      getsockopt(fd_.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0 || ::recv(fd_.get(), &probe, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
        failLocked(Status(ErrorCode::kPeerFailure,
                          strFormat("%s closed the connection: the peer process died or was "
                                    "killed",
                                    peerName_.c_str()),
                          peer_),
                   done);
      }
      break;
    }
    if (readState_ != ReadState::kHeader) {
      if (!readPayloadLocked(done)) break;
      budget -= std::min<std::size_t>(budget, 64u << 10);
      continue;
    }
    ssize_t n = ::recv(fd_.get(), readHeader_.data() + headerGot_, kHeaderBytes - headerGot_,
                       MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n < 0 && errno == EINTR) continue;
    if (n == 0 && headerGot_ == 0 && peerClosed_) {
      eof_ = true;  // an orderly goodbye: CLOSE, then EOF
      owner_->unwatch(fd_.get());
      interest_ = 0;
      break;
    }
    if (n <= 0) {
      failLocked(Status(ErrorCode::kPeerFailure,
                        strFormat("%s closed the connection without leaving the communicator "
                                  "(%s): the peer process exited or was killed",
                                  peerName_.c_str(), n == 0 ? "EOF" : std::strerror(errno)),
                        peer_),
                 done);
      break;
    }
    headerGot_ += static_cast<std::size_t>(n);
    if (headerGot_ < kHeaderBytes) continue;
    headerGot_ = 0;
    Result<FrameHeader> header = decodeHeader(readHeader_.data(), peerName_);
    if (!header.ok()) {
      const Status bad(header.status().code(), header.status().message(), peer_);
      abortNowLocked(bad);  // the peer learns why from this rank, not from others' relays
      failLocked(bad, done);
      break;
    }
    handleHeaderLocked(*header, done);
  }
}

void TcpLink::readStreamLocked(int index, Stream& s, DoneList& done) {
  std::size_t budget = kReadBudgetBytes;
  char discard[kDiscardChunk];
  while (failure_.ok() && !s.eof && budget > 0) {
    if (s.headerGot < kHeaderBytes) {
      ssize_t n = ::recv(s.fd.get(), s.readHeader.data() + s.headerGot,
                         kHeaderBytes - s.headerGot, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && errno == EINTR) continue;
      if (n == 0 && s.headerGot == 0 && s.expected.empty()) {
        // Between parts: the peer closed, in order or not; stream 0 tells which (its CLOSE,
        // ABORT or EOF). A part expected later fails the link below.
        s.eof = true;
        owner_->unwatch(s.fd.get());
        s.interest = 0;
        break;
      }
      if (n <= 0) {
        failLocked(closedMidMessage(peerName_, peer_, index, n), done);
        break;
      }
      s.headerGot += static_cast<std::size_t>(n);
      if (s.headerGot < kHeaderBytes) continue;
      const std::string who = strFormat("%s (stream %d)", peerName_.c_str(), index);
      Result<FrameHeader> header = decodeHeader(s.readHeader.data(), who);
      Status bad;
      if (!header.ok()) bad = Status(header.status().code(), header.status().message(), peer_);
      else if (header->type != FrameType::kPart)
        bad = Status(ErrorCode::kProtocolError,
                     strFormat("%s sent a frame of type %u where only parts may come", who.c_str(),
                               static_cast<unsigned>(header->type)),
                     peer_);
      if (!bad.ok()) {
        abortNowLocked(bad);
        failLocked(bad, done);
        break;
      }
      s.held = *header;
    }
    if (s.expected.empty()) break;  // waits for its DATA frame on stream 0
    Part& part = s.expected.front();
    if (part.progress == 0 && (s.held.tag != part.tag || s.held.partOffset != part.offset ||
                               s.held.length != part.length || s.held.partTotal != part.total)) {
      const Status bad(ErrorCode::kProtocolError,
                       strFormat("bad frame from %s (stream %d): a part of bytes [%llu, +%llu) "
                                 "of a %llu-byte message with tag 0x%llx where the part at %llu "
                                 "of message 0x%llx was due",
                                 peerName_.c_str(), index,
                                 static_cast<unsigned long long>(s.held.partOffset),
                                 static_cast<unsigned long long>(s.held.length),
                                 static_cast<unsigned long long>(s.held.partTotal),
                                 static_cast<unsigned long long>(s.held.tag),
                                 static_cast<unsigned long long>(part.offset),
                                 static_cast<unsigned long long>(part.tag)),
                       peer_);
      abortNowLocked(bad);
      failLocked(bad, done);
      break;
    }
    std::size_t got = 0;
    if (part.progress < part.length) {
      const std::uint64_t left = part.length - part.progress;
      char* dst = discard;
      std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(left, kDiscardChunk));
      if (part.request != nullptr) {
        dst = part.request->data + part.offset + part.progress;
        want = static_cast<std::size_t>(left);
      } else if (part.unexpected != nullptr) {
        dst = part.unexpected->data.data() + part.offset + part.progress;
        want = static_cast<std::size_t>(left);
      }
      ssize_t n = ::recv(s.fd.get(), dst, want, MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failLocked(closedMidMessage(peerName_, peer_, index, n), done);
        break;
      }
      got = static_cast<std::size_t>(n);
      part.progress += got;
      budget -= std::min<std::size_t>(budget, got);
    }
    const Part finished = part;
    if (finished.progress == finished.length) {
      s.expected.pop_front();
      s.headerGot = 0;
    }
    receivedLocked(finished.request, finished.unexpected, got, done);
  }
  // A stream that ended between parts while its peer still owes one: the peer is gone.
  if (failure_.ok() && s.eof && !s.expected.empty())
    failLocked(Status(ErrorCode::kPeerFailure,
                      strFormat("%s closed stream %d of its connection while a part of a message "
                                "was still due on it: the peer process died or was killed",
                                peerName_.c_str(), index),
                      peer_),
               done);
}

}  // namespace tutti::tcp
