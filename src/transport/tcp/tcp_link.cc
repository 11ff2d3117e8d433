// A TCP link's request side: posting sends and receives (a receive matches a buffered
// unexpected message first), writing DATA frames from the send queue, the one control
// frame (CLOSE or ABORT) a link sends, cancelling, and failing the link. Reading frames off
// the socket is tcp_link_read.cc's.

#include "transport/tcp/tcp_link.h"

#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "base/assert.h"
#include "base/log.h"
#include "base/strings.h"
#include "transport/tcp/tcp_transport.h"

namespace tutti::tcp {

TcpLink::TcpLink(TcpTransport* owner, int peer, std::vector<UniqueFd> fds, std::string peerName,
                 std::uint64_t maxUnexpectedBytes)
    : owner_(owner),
      peer_(peer),
      target_{this, 0},
      peerName_(std::move(peerName)),
      maxUnexpectedBytes_(maxUnexpectedBytes) {
  TUTTI_ASSERT(owner_ != nullptr);
  TUTTI_ASSERT(!fds.empty());
  fd_ = std::move(fds[0]);
  TUTTI_ASSERT(fd_.valid());
  interest_ = EPOLLIN;
  // Room for an executor's window of requests and more, so that how many happen to be
  // pending at once never makes a call allocate.
  sendQueue_.reserve(kQueuedRequests);
  posted_.reserve(kQueuedRequests);
  for (std::size_t i = 1; i < fds.size(); ++i) {
    auto stream = std::make_unique<Stream>();
    stream->target = PollTarget{this, static_cast<int>(i)};
    stream->fd = std::move(fds[i]);
    TUTTI_ASSERT(stream->fd.valid());
    stream->interest = EPOLLIN;
    stream->sends.reserve(kQueuedRequests);
    stream->expected.reserve(kQueuedRequests);
    extra_.push_back(std::move(stream));
  }
}

int TcpLink::fd(int stream) const {
  return stream == 0 ? fd_.get() : extra_[static_cast<std::size_t>(stream - 1)]->fd.get();
}

PollTarget* TcpLink::pollTarget(int stream) {
  return stream == 0 ? &target_ : &extra_[static_cast<std::size_t>(stream - 1)]->target;
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
  // Requests whose other parts were still under way on the extra streams.
  for (auto& stream : extra_) {
    for (RingQueue<Part>* parts : {&stream->sends, &stream->expected}) {
      for (Part& part : *parts) {
        if (part.request != nullptr && !part.request->done())
          completeLocked(part.request, status, done);
      }
      parts->clear();
    }
    owner_->unwatch(stream->fd.get());
    stream->interest = 0;
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
    owner_->modify(fd_.get(), want, &target_);
  }
  for (auto& s : extra_) {
    std::uint32_t wants = 0;
    // A PART header read waits for its DATA frame's match (expected) before more is read.
    if (!s->eof && (s->headerGot < kHeaderBytes || !s->expected.empty())) wants |= EPOLLIN;
    if (!s->sends.empty()) wants |= EPOLLOUT;
    if (wants != s->interest) {
      s->interest = wants;
      owner_->modify(s->fd.get(), wants, &s->target);
    }
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
        FrameHeader header{FrameType::kData, front->tag, front->bytes, 0, front->stamp};
        header.striped = stripedBytes(front->bytes);
        sendHeader_ = encodeHeader(header);
      }
      const std::size_t progress = front->progress;
      const std::size_t frameBytes = firstPartBytes(front->bytes);
      total = kHeaderBytes + frameBytes;
      if (progress < kHeaderBytes)
        iov[iovCount++] = {sendHeader_.data() + progress, kHeaderBytes - progress};
      const std::size_t payloadDone = progress < kHeaderBytes ? 0 : progress - kHeaderBytes;
      const std::size_t payloadLeft = frameBytes - payloadDone;
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
      failLocked(sendErrorLocked(errno, done), done);  // no-op when reading already failed it
      return;
    }
    auto written = static_cast<std::size_t>(n);
    if (front != nullptr) {
      // The DATA frame started: its other parts may go now (never before, wire.h).
      if (front->progress == 0 && written > 0 && front != orphan_.get() &&
          stripedBytes(front->bytes)) {
        queuePartsLocked(front, done);
        // An extra stream's write can fail the link (the peer died): failLocked() then
        // completed `front` and emptied the queue, so nothing here is ours any more.
        if (!failure_.ok()) return;
      }
      front->progress += written;
      if (front->progress == total) {
        sendQueue_.pop_front();
        if (front == orphan_.get()) orphan_.reset();
        else if (!sendPendingLocked(front)) completeLocked(front, Status(), done);
      }
    } else {
      controlProgress_ += written;
      if (controlProgress_ == control_.size()) controlSent_ = true;
    }
  }
}

void TcpLink::queuePartsLocked(TransferRequest* request, DoneList& done) {
  // Stops where a stream's write failed the link: failLocked() completed the request and
  // emptied every stream's queue, and a part queued after that would outlive its request.
  for (int i = 1; i < streams() && failure_.ok(); ++i) {
    Stream& s = *extra_[static_cast<std::size_t>(i - 1)];
    const PartRange range = stripePart(request->bytes, streams(), i);
    Part part;
    part.request = request;
    part.data = request->data + range.offset;
    part.tag = request->tag;
    part.offset = range.offset;
    part.length = range.length;
    part.total = request->bytes;
    FrameHeader header{FrameType::kPart, request->tag, range.length, 0, {}};
    header.partOffset = range.offset;
    header.partTotal = request->bytes;
    part.header = encodeHeader(header);
    s.sends.push_back(part);
    if (s.sends.size() == 1) trySendStreamLocked(s, done);
  }
}

bool TcpLink::sendPendingLocked(const TransferRequest* request) const {
  if (std::find(sendQueue_.begin(), sendQueue_.end(), request) != sendQueue_.end()) return true;
  for (const auto& s : extra_) {
    for (const Part& part : s->sends) {
      if (part.request == request) return true;
    }
  }
  return false;
}

void TcpLink::trySendStreamLocked(Stream& s, DoneList& done) {
  static const char kZeros[64 << 10] = {};
  while (failure_.ok() && !s.sends.empty()) {
    Part& part = s.sends.front();
    iovec iov[2];
    int iovCount = 0;
    if (part.progress < kHeaderBytes)
      iov[iovCount++] = {part.header.data() + part.progress, kHeaderBytes - part.progress};
    const std::uint64_t payloadDone = part.progress < kHeaderBytes ? 0 : part.progress - kHeaderBytes;
    const std::uint64_t payloadLeft = part.length - payloadDone;
    if (payloadLeft > 0) {
      if (part.data != nullptr)
        iov[iovCount++] = {const_cast<char*>(part.data) + payloadDone, payloadLeft};
      else
        iov[iovCount++] = {const_cast<char*>(kZeros),
                           std::min<std::uint64_t>(payloadLeft, sizeof(kZeros))};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(iovCount);
    ssize_t n = ::sendmsg(s.fd.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      failLocked(sendErrorLocked(errno, done), done);
      return;
    }
    part.progress += static_cast<std::uint64_t>(n);
    if (part.progress == kHeaderBytes + part.length) {
      TransferRequest* request = part.request;
      s.sends.pop_front();
      if (request != nullptr && !sendPendingLocked(request)) completeLocked(request, Status(), done);
    }
  }
}

Status TcpLink::sendErrorLocked(int error, DoneList& done) {
  Status sendError(ErrorCode::kPeerFailure,
                   strFormat("sending to %s failed: %s (the peer process died?)",
                             peerName_.c_str(), std::strerror(error)),
                   peer_);
  // A peer that failed usually said why before it went (an ABORT naming the rank at
  // fault): read its last frames first, so we blame the culprit, not the messenger.
  if (readState_ != ReadState::kPaused) readLocked(done);
  // Those frames may show a call conflict instead (the reading stops there, before the
  // peer's ABORT): that mismatch is why the peer left. Also when another thread read it
  // (the loop thread): it reports the conflict only once it has released the lock, and
  // the broken pipe must not reach the transport first.
  if (!callConflict_.ok()) return callConflict_;
  if (peerClosed_ && failure_.ok())
    return Status(ErrorCode::kPeerFailure,
                  strFormat("cannot send to %s: it has left the communicator", peerName_.c_str()),
                  peer_);
  return sendError;
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
  if (!failure_.ok() || !fd_.valid()) return true;
  for (const auto& s : extra_) {
    if (!s->sends.empty()) return false;
  }
  return sendQueue_.empty() && (!controlQueued_ || controlSent_);
}

bool TcpLink::writesAcknowledged() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fd_.valid()) return true;
  for (int stream = 0; stream < streams(); ++stream) {
    // A connection that is over (reset, or closed both ways) delivers nothing more; its
    // unacknowledged count stays where it stopped.
    tcp_info info{};
    socklen_t length = sizeof(info);
    if (::getsockopt(fd(stream), IPPROTO_TCP, TCP_INFO, &info, &length) != 0 ||
        info.tcpi_state == TCP_CLOSE)
      continue;
    int unacknowledged = 0;
    if (::ioctl(fd(stream), SIOCOUTQ, &unacknowledged) != 0) continue;
    if (unacknowledged != 0) return false;
  }
  return true;
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

void TcpLink::onEvents(int stream, std::uint32_t events) {
  DoneList done;
  Status failure;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!fd_.valid() || !failure_.ok()) return;
    if (stream > 0) {
      Stream& s = *extra_[static_cast<std::size_t>(stream - 1)];
      if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) readStreamLocked(stream, s, done);
      if ((events & EPOLLOUT) && failure_.ok()) trySendStreamLocked(s, done);
    } else {
      if (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) readLocked(done);
      if ((events & EPOLLOUT) && failure_.ok()) trySendLocked(done);
    }
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
      discardLeft_ = readEnd_ - readPos_;
      readTarget_ = nullptr;
      readState_ = discardLeft_ > 0 ? ReadState::kDiscard : ReadState::kHeader;
    }
    for (auto& u : unexpected_) {
      if (u->claimedBy == request) u->claimedBy = nullptr;
    }
    // Parts of it still to come on the extra streams are read and dropped; parts of it
    // still to go were committed with its DATA frame: they go out as zeros.
    for (auto& s : extra_) {
      for (Part& part : s->expected) {
        if (part.request == request) part.request = nullptr;
      }
      for (Part& part : s->sends) {
        if (part.request == request) {
          part.request = nullptr;
          part.data = nullptr;
        }
      }
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
  char sink[kDiscardChunk];
  for (int stream = streams() - 1; stream >= 0; --stream) {
    const int socket = fd(stream);
    owner_->unwatch(socket);
    // Drain input we will never read, so that close() sends FIN rather than RST (an RST
    // could destroy our CLOSE frame before the peer reads it). Bounded: at most 64 reads.
    for (int i = 0; i < 64; ++i) {
      ssize_t n = ::recv(socket, sink, sizeof(sink), MSG_DONTWAIT);
      if (n <= 0) break;
    }
  }
  for (auto& s : extra_) s->fd.reset();
  fd_.reset();
}

}  // namespace tutti::tcp
