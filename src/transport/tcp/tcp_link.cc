#include "transport/tcp/tcp_link.h"

#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/assert.h"
#include "base/log.h"
#include "base/strings.h"
#include "transport/call_checker.h"
#include "transport/tcp/tcp_transport.h"

namespace tutti::tcp {
namespace {

// Most bytes read from one link per readiness event, so one busy peer cannot starve the
// others on the loop thread.
constexpr std::size_t kReadBudgetBytes = 8u << 20;
constexpr std::size_t kDiscardChunk = 64u << 10;

}  // namespace

TcpLink::TcpLink(TcpTransport* owner, int peer, UniqueFd fd, std::string peerName,
                 std::uint64_t maxUnexpectedBytes)
    : owner_(owner),
      peer_(peer),
      fd_(std::move(fd)),
      peerName_(std::move(peerName)),
      maxUnexpectedBytes_(maxUnexpectedBytes) {
  TUTTI_ASSERT(owner_ != nullptr);
  TUTTI_ASSERT(fd_.valid());
  interest_ = EPOLLIN;
  // Room for an executor's window of requests and more, so that how many happen to be
  // pending at once never makes a call allocate.
  sendQueue_.reserve(kQueuedRequests);
  posted_.reserve(kQueuedRequests);
}

TcpLink::~TcpLink() = default;

void TcpLink::completeLocked(TransferRequest* request, Status status, DoneList& done) {
  request->status_ = std::move(status);
  request->state.store(TransferRequest::kDone, std::memory_order_release);
  done.add(request);
}

void TcpLink::finish(DoneList& done, const Status& failure) {
  if (!failure.ok()) owner_->reportFailure(failure);
  if (!done.empty() || !failure.ok()) owner_->notifyProgress();
}

void TcpLink::failLocked(const Status& status, DoneList& done) {
  if (!failure_.ok()) return;
  failure_ = status;
  TUTTI_INFO(kTcp, "link to %s failed: %s", peerName_.c_str(), status.toString().c_str());
  for (TransferRequest* r : sendQueue_) {
    if (r != orphan_.get()) completeLocked(r, status, done);
  }
  sendQueue_.clear();
  orphan_.reset();
  for (TransferRequest* r : posted_) completeLocked(r, status, done);
  posted_.clear();
  if (readTarget_ != nullptr) completeLocked(readTarget_, status, done);
  readTarget_ = nullptr;
  for (auto& u : unexpected_) {
    if (u->claimedBy != nullptr) completeLocked(u->claimedBy, status, done);
  }
  unexpected_.clear();
  unexpectedBytes_ = 0;
  owner_->unwatch(fd_.get());
  interest_ = 0;
}

void TcpLink::updateInterestLocked() {
  if (!failure_.ok() || !fd_.valid()) return;
  std::uint32_t want = 0;
  if (!eof_ && readState_ != ReadState::kPaused) want |= EPOLLIN;
  if (!sendQueue_.empty() || (controlQueued_ && !controlSent_)) want |= EPOLLOUT;
  if (want != interest_) {
    interest_ = want;
    owner_->modify(fd_.get(), want, this);
  }
}

// ---- sending ------------------------------------------------------------------------------

void TcpLink::postSend(TransferRequest* request, Tag tag, const void* data, std::size_t bytes) {
  TUTTI_ASSERT(request != nullptr);
  TUTTI_ASSERT(data != nullptr || bytes == 0);
  DoneList done;
  Status failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    request->state.store(TransferRequest::kPending, std::memory_order_relaxed);
    request->status_ = Status();
    request->tag = tag;
    request->data = const_cast<char*>(static_cast<const char*>(data));
    request->bytes = bytes;
    request->progress = 0;
    if (!failure_.ok()) {
      completeLocked(request, failure_, done);
    } else if (peerClosed_) {
      completeLocked(request,
                     Status(ErrorCode::kPeerFailure,
                            strFormat("cannot send to %s: it has left the communicator",
                                      peerName_.c_str()),
                            peer_),
                     done);
    } else {
      sendQueue_.push_back(request);
      if (sendQueue_.size() == 1) trySendLocked(done);  // fast path: write from this thread
      if (!failure_.ok()) failure = failure_;
      updateInterestLocked();
    }
  }
  finish(done, failure);
}

void TcpLink::trySendLocked(DoneList& done) {
  // Source of the padding that completes an orphaned (cancelled part-way) message.
  static const char kZeros[64 << 10] = {};
  while (failure_.ok()) {
    iovec iov[2];
    int iovCount = 0;
    TransferRequest* front = sendQueue_.empty() ? nullptr : sendQueue_.front();
    std::size_t total = 0;
    if (front != nullptr) {
      if (front->progress == 0) {
        sendHeader_ = encodeHeader(
            FrameHeader{FrameType::kData, front->tag, front->bytes, 0, front->stamp});
      }
      const std::size_t progress = front->progress;
      total = kHeaderBytes + front->bytes;
      if (progress < kHeaderBytes)
        iov[iovCount++] = {sendHeader_.data() + progress, kHeaderBytes - progress};
      const std::size_t payloadDone = progress < kHeaderBytes ? 0 : progress - kHeaderBytes;
      const std::size_t payloadLeft = front->bytes - payloadDone;
      if (payloadLeft > 0) {
        if (front->data != nullptr)
          iov[iovCount++] = {front->data + payloadDone, payloadLeft};
        else
          iov[iovCount++] = {const_cast<char*>(kZeros), std::min(payloadLeft, sizeof(kZeros))};
      }
    } else if (controlQueued_ && !controlSent_) {
      iov[iovCount++] = {control_.data() + controlProgress_, control_.size() - controlProgress_};
    } else {
      return;
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(iovCount);
    ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      Status sendError(ErrorCode::kPeerFailure,
                       strFormat("sending to %s failed: %s (the peer process died?)",
                                 peerName_.c_str(), std::strerror(errno)),
                       peer_);
      // A peer that failed usually said why before it went (an ABORT naming the rank at
      // fault): read its last frames first, so we blame the culprit, not the messenger.
      if (readState_ != ReadState::kPaused) readLocked(done);
      // Those frames may show a call conflict instead (the reading stops there, before the
      // peer's ABORT): that mismatch is why the peer left.
      if (!callConflict_.ok() && !conflictReported_)
        sendError = callConflict_;
      else if (peerClosed_ && failure_.ok())
        sendError = Status(ErrorCode::kPeerFailure,
                           strFormat("cannot send to %s: it has left the communicator",
                                     peerName_.c_str()),
                           peer_);
      failLocked(sendError, done);  // no-op when reading already failed the link
      return;
    }
    auto written = static_cast<std::size_t>(n);
    if (front != nullptr) {
      front->progress += written;
      if (front->progress == total) {
        sendQueue_.pop_front();
        if (front == orphan_.get()) orphan_.reset();
        else completeLocked(front, Status(), done);
      }
    } else {
      controlProgress_ += written;
      if (controlProgress_ == control_.size()) controlSent_ = true;
    }
  }
}

void TcpLink::queueControlLocked(std::vector<std::uint8_t> frame, DoneList& done) {
  control_ = std::move(frame);
  controlProgress_ = 0;
  controlQueued_ = true;
  if (sendQueue_.empty()) trySendLocked(done);
  updateInterestLocked();
}

void TcpLink::queueClose() {
  DoneList done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (controlQueued_ || !failure_.ok() || !fd_.valid()) return;
    auto header = encodeHeader(FrameHeader{FrameType::kClose, 0, 0, 0, {}});
    queueControlLocked(std::vector<std::uint8_t>(header.begin(), header.end()), done);
  }
  // A failure while saying goodbye is not worth reporting: this rank is leaving anyway.
  finish(done, Status());
}

std::vector<std::uint8_t> TcpLink::abortFrame(const Status& status) {
  std::string text = status.message().substr(0, kMaxAbortBytes);
  Tag blamed = status.peerRank() >= 0 ? static_cast<Tag>(status.peerRank()) + 1 : 0;
  auto header = encodeHeader(FrameHeader{FrameType::kAbort, blamed, text.size(),
                                         static_cast<std::uint32_t>(status.code()), {}});
  std::vector<std::uint8_t> frame(header.begin(), header.end());
  frame.resize(kHeaderBytes + text.size());
  std::copy(text.begin(), text.end(), frame.begin() + static_cast<std::ptrdiff_t>(kHeaderBytes));
  return frame;
}

void TcpLink::abortNowLocked(const Status& status) {
  if (!failure_.ok() || !fd_.valid() || peerClosed_ || controlQueued_) return;
  if (!sendQueue_.empty() && sendQueue_.front()->progress > 0) return;  // mid-frame
  const std::vector<std::uint8_t> frame = abortFrame(status);
  // Small enough for the socket's buffer; a short write leaves the peer a cut frame, which
  // it reads as the connection's end, as it would without this.
  (void)!::send(fd_.get(), frame.data(), frame.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  controlQueued_ = true;  // nothing more goes out on this link
  controlSent_ = true;
}

void TcpLink::queueAbort(const Status& status) {
  TUTTI_ASSERT(!status.ok());
  DoneList done;
  Status failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (controlQueued_ || !failure_.ok() || !fd_.valid() || peerClosed_) return;
    queueControlLocked(abortFrame(status), done);
    failure = failureToReportLocked();
  }
  finish(done, failure);
}

bool TcpLink::sendsDrained() {
  std::lock_guard<std::mutex> lock(mutex_);
  return !failure_.ok() || !fd_.valid() || (sendQueue_.empty() && (!controlQueued_ || controlSent_));
}

// ---- receiving ----------------------------------------------------------------------------

void TcpLink::postRecv(TransferRequest* request, Tag tag, void* data, std::size_t bytes) {
  TUTTI_ASSERT(request != nullptr);
  TUTTI_ASSERT(data != nullptr || bytes == 0);
  DoneList done;
  Status failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    request->state.store(TransferRequest::kPending, std::memory_order_relaxed);
    request->status_ = Status();
    request->tag = tag;
    request->data = static_cast<char*>(data);
    request->bytes = bytes;
    request->progress = 0;
    if (!failure_.ok()) {
      completeLocked(request, failure_, done);
    } else {
      auto it = std::find_if(unexpected_.begin(), unexpected_.end(), [&](const auto& u) {
        return u->tag == tag && u->claimedBy == nullptr;
      });
      if (it != unexpected_.end()) {
        Unexpected& u = **it;
        if (stampsConflict(u.stamp, request->stamp)) {
          completeLocked(request, stampMismatch(request, peer_, peerName_, u.stamp), done);
        } else if (u.length != bytes) {
          completeLocked(request,
                         Status(ErrorCode::kMismatch,
                                strFormat("%s sent a %zu-byte message but this rank expected %zu "
                                          "bytes (tag 0x%llx): the ranks called different "
                                          "operations or counts",
                                          peerName_.c_str(), u.length, bytes,
                                          static_cast<unsigned long long>(tag)),
                                peer_),
                         done);
        } else if (u.received == u.length) {
          if (bytes > 0) std::memcpy(data, u.data.data(), bytes);
          unexpectedBytes_ -= u.length;
          recycleLocked(it);
          completeLocked(request, Status(), done);
        } else {
          u.claimedBy = request;  // completes when the rest of the payload arrives
        }
      } else if (peerClosed_) {
        completeLocked(request,
                       Status(ErrorCode::kPeerFailure,
                              strFormat("%s left the communicator while this rank still "
                                        "expected a message from it",
                                        peerName_.c_str()),
                              peer_),
                       done);
      } else {
        posted_.push_back(request);
        if (readState_ == ReadState::kPaused && pausedHeader_.tag == tag) {
          readState_ = ReadState::kHeader;
          startPayloadLocked(pausedHeader_, done);
        }
      }
    }
    failure = failureToReportLocked();
    updateInterestLocked();
  }
  finish(done, failure);
}

Status TcpLink::failureToReportLocked() {
  if (!failure_.ok()) return failure_;
  if (callConflict_.ok() || conflictReported_) return Status();
  conflictReported_ = true;
  return callConflict_;
}

void TcpLink::checkBufferedArrivals() {
  DoneList done;
  Status failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& u : unexpected_) {
      FrameHeader header;
      header.tag = u->tag;
      header.stamp = u->stamp;
      if (arrivalConflictsLocked(header)) break;
    }
    if (readState_ == ReadState::kPaused) (void)arrivalConflictsLocked(pausedHeader_);
    failure = failureToReportLocked();
  }
  finish(done, failure);
}

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
    (void)arrivalConflictsLocked(header);
    discardLeft_ = header.length;
    readState_ = discardLeft_ > 0 ? ReadState::kDiscard : ReadState::kHeader;
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
      discardLeft_ = header.length;
      readState_ = discardLeft_ > 0 ? ReadState::kDiscard : ReadState::kHeader;
      return;
    }
    if (header.length == 0) {
      completeLocked(request, Status(), done);
      readState_ = ReadState::kHeader;
      return;
    }
    readTarget_ = request;
    readState_ = ReadState::kPayloadToRequest;
    return;
  }
  // Unexpected: nobody may ever receive it (another call here), so the checker looks at it
  // now. A message that matched a receive was checked against that receive's stamp above,
  // which is this rank's call for the same sequence number; the checker would repeat it.
  if (arrivalConflictsLocked(header)) {
    discardLeft_ = header.length;  // dropped unread
    readState_ = discardLeft_ > 0 ? ReadState::kDiscard : ReadState::kHeader;
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
  pushEarly(unexpected_, std::move(entry));
  readState_ = header.length > 0 ? ReadState::kPayloadToUnexpected : ReadState::kHeader;
}

void TcpLink::recycleLocked(RingQueue<std::unique_ptr<Unexpected>>::iterator it) {
  std::unique_ptr<Unexpected> u = std::move(*it);
  unexpected_.erase(it);
  spare_.give(std::move(u), maxUnexpectedBytes_);
}

std::size_t TcpLink::unexpectedMessages() {
  std::lock_guard<std::mutex> lock(mutex_);
  return unexpected_.size();
}

bool TcpLink::readsPaused() {
  std::lock_guard<std::mutex> lock(mutex_);
  return readState_ == ReadState::kPaused;
}

void TcpLink::handleHeaderLocked(const FrameHeader& header, DoneList& done) {
  switch (header.type) {
    case FrameType::kData:
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
      failLocked(Status(ErrorCode::kProtocolError,
                        strFormat("%s sent a hello frame on an established connection",
                                  peerName_.c_str()),
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
    dst = readTarget_->data + readTarget_->progress;
    want = readTarget_->bytes - readTarget_->progress;
  } else if (readState_ == ReadState::kPayloadToUnexpected) {
    dst = readUnexpected_->data.data() + readUnexpected_->received;
    want = readUnexpected_->length - readUnexpected_->received;
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
  if (readState_ == ReadState::kPayloadToRequest) {
    readTarget_->progress += got;
    if (readTarget_->progress == readTarget_->bytes) {
      completeLocked(readTarget_, Status(), done);
      readTarget_ = nullptr;
      readState_ = ReadState::kHeader;
    }
  } else if (readState_ == ReadState::kPayloadToUnexpected) {
    Unexpected* u = readUnexpected_;
    u->received += got;
    if (u->received == u->length) {
      readUnexpected_ = nullptr;
      readState_ = ReadState::kHeader;
      if (u->claimedBy != nullptr) {
        TransferRequest* r = u->claimedBy;
        std::memcpy(r->data, u->data.data(), u->length);
        unexpectedBytes_ -= u->length;
        recycleLocked(std::find_if(unexpected_.begin(), unexpected_.end(),
                                   [&](const auto& e) { return e.get() == u; }));
        completeLocked(r, Status(), done);
      }
    }
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

void TcpLink::onEvents(std::uint32_t events) {
  DoneList done;
  Status failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!fd_.valid() || !failure_.ok()) return;
    if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) readLocked(done);
    if ((events & EPOLLOUT) && failure_.ok()) trySendLocked(done);
    failure = failureToReportLocked();
    updateInterestLocked();
  }
  finish(done, failure);
}

void TcpLink::cancel(TransferRequest* request) {
  DoneList done;
  Status failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (request->done()) return;
    Status cancelled(ErrorCode::kAborted, "transfer cancelled");
    auto posted = std::find(posted_.begin(), posted_.end(), request);
    if (posted != posted_.end()) posted_.erase(posted);
    if (readTarget_ == request) {
      discardLeft_ = request->bytes - request->progress;
      readTarget_ = nullptr;
      readState_ = discardLeft_ > 0 ? ReadState::kDiscard : ReadState::kHeader;
    }
    for (auto& u : unexpected_) {
      if (u->claimedBy == request) u->claimedBy = nullptr;
    }
    auto queued = std::find(sendQueue_.begin(), sendQueue_.end(), request);
    if (queued != sendQueue_.end()) {
      if (queued == sendQueue_.begin() && request->progress > 0) {
        // Part of it is on the wire: finish the frame with zeros from a stand-in so the
        // stream stays framed (the peer's operation fails anyway: an ABORT follows).
        TUTTI_ASSERT(orphan_ == nullptr);
        orphan_ = std::make_unique<TransferRequest>();
        orphan_->tag = request->tag;
        orphan_->bytes = request->bytes;
        orphan_->progress = request->progress;
        orphan_->data = nullptr;
        *queued = orphan_.get();
      } else {
        sendQueue_.erase(queued);
      }
    }
    completeLocked(request, cancelled, done);
    failure = failureToReportLocked();
    updateInterestLocked();
  }
  finish(done, Status());
  (void)failure;
}

void TcpLink::closeSocket() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fd_.valid()) return;
  owner_->unwatch(fd_.get());
  // Drain input we will never read, so that close() sends FIN rather than RST (an RST
  // could destroy our CLOSE frame before the peer reads it). Bounded: at most 64 reads.
  char sink[kDiscardChunk];
  for (int i = 0; i < 64; ++i) {
    ssize_t n = ::recv(fd_.get(), sink, sizeof(sink), MSG_DONTWAIT);
    if (n <= 0) break;
  }
  fd_.reset();
}

}  // namespace tutti::tcp
