// HandshakeGate and HandshakeClient: the handshake of auth.h on non-blocking sockets.
//
// Nothing here allocates per connection before it authenticates: a slot is a fixed array
// inside the gate, the peer's address is formatted into the slot with inet_ntop, and the
// challenge and verdict are sent straight from the stack (40 bytes always fit in a new
// socket's send buffer, so a send that does not take them whole means a broken connection).

#include "bootstrap/auth_gate.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/assert.h"
#include "base/macros.h"
#include "base/net.h"
#include "base/strings.h"

namespace tutti::auth {
namespace {

// "host:port" of the socket's peer into `out`, without allocating.
void formatPeer(int fd, char (&out)[64]) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  char host[INET6_ADDRSTRLEN] = "unknown address";
  unsigned port = 0;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) {
    if (ss.ss_family == AF_INET) {
      const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
      ::inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
      port = ntohs(in->sin_port);
    } else if (ss.ss_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
      ::inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
      port = ntohs(in6->sin6_port);
    }
  }
  std::snprintf(out, sizeof(out), std::strchr(host, ':') ? "[%s]:%u" : "%s:%u", host, port);
}

// Sends a whole small message at once; false when the socket did not take all of it.
bool sendSmall(int fd, const std::uint8_t* data, std::size_t len) {
  ssize_t n;
  do {
    n = ::send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(len);
}

}  // namespace

// --- HandshakeGate -------------------------------------------------------------------------

HandshakeGate::HandshakeGate(const Key& key, const Context& context,
                             std::chrono::milliseconds timeout, std::string listenerName,
                             log::Subsys subsys)
    : key_(&key),
      context_(context),
      timeout_(timeout),
      listenerName_(std::move(listenerName)),
      subsys_(subsys) {}

void HandshakeGate::clear(Slot& slot) {
  TUTTI_ASSERT(slot.state != State::kFree);
  slot.fd.reset();
  slot.state = State::kFree;
  slot.got = 0;
  --used_;
}

void HandshakeGate::refuse(Slot& slot, const char* reason) {
  ++refusals_;
  lastRefusal_ = strFormat("%s: %s", slot.peer, reason);
  if (refusals_ <= kRefusalsLogged) {
    if (log::enabled(log::Level::kWarn, subsys_))
      log::write(log::Level::kWarn, subsys_, __FILE__, __LINE__, "%s: refused connection from %s",
                 listenerName_.c_str(), lastRefusal_.c_str());
  } else if (refusals_ % kRefusalLogInterval == 0) {
    if (log::enabled(log::Level::kWarn, subsys_))
      log::write(log::Level::kWarn, subsys_, __FILE__, __LINE__,
                 "%s: %llu connections refused so far (the first %llu were logged one by one); "
                 "latest from %s",
                 listenerName_.c_str(), static_cast<unsigned long long>(refusals_),
                 static_cast<unsigned long long>(kRefusalsLogged), lastRefusal_.c_str());
  }
  clear(slot);
}

bool HandshakeGate::makeRoom() {
  if (used_ < slots_.size()) return true;
  Slot* oldest = nullptr;
  for (Slot& s : slots_) {
    if (s.state == State::kAwaitingResponse && (oldest == nullptr || s.admitted < oldest->admitted))
      oldest = &s;
  }
  // Accepted slots are released by the caller at once, so a full gate holds pending ones.
  TUTTI_ASSERT(oldest != nullptr);
  if (Deadline::Clock::now() - oldest->admitted < kEvictableAfter) return false;
  refuse(*oldest, "closed unauthenticated to make room: every handshake slot was taken");
  return true;
}

int HandshakeGate::admit(UniqueFd fd) {
  TUTTI_ASSERT(fd.valid());
  TUTTI_ASSERT_CMP(used_, <, slots_.size());  // makeRoom() first
  int index = 0;
  while (slots_[static_cast<std::size_t>(index)].state != State::kFree) ++index;
  Slot& slot = slots_[static_cast<std::size_t>(index)];
  slot.fd = std::move(fd);
  slot.state = State::kAwaitingResponse;
  slot.got = 0;
  slot.admitted = Deadline::Clock::now();
  formatPeer(slot.fd.get(), slot.peer);
  ++used_;
  Result<Nonce> nonce = randomNonce();
  if (!nonce.ok()) {
    refuse(slot, "no random nonce for its challenge (RAND_bytes failed)");
    return -1;
  }
  slot.nonce = *nonce;
  const ChallengeBytes challenge = ServerHandshake(*key_, context_, slot.nonce).challenge();
  if (!sendSmall(slot.fd.get(), challenge.data(), challenge.size())) {
    refuse(slot, "the challenge could not be sent (connection already broken)");
    return -1;
  }
  return index;
}

HandshakeGate::Progress HandshakeGate::onReadable(int index) {
  TUTTI_ASSERT(index >= 0 && index < slots());
  Slot& slot = slots_[static_cast<std::size_t>(index)];
  if (slot.state == State::kAccepted) return Progress::kAccepted;
  if (slot.state != State::kAwaitingResponse) return Progress::kClosed;
  // Exactly the response's bytes: anything the peer sends after it stays in the socket for
  // whoever takes the connection.
  ssize_t n;
  do {
    n = ::recv(slot.fd.get(), slot.in.data() + slot.got, slot.in.size() - slot.got, 0);
  } while (n < 0 && errno == EINTR);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Progress::kPending;
  if (n <= 0) {
    refuse(slot, n == 0 ? "closed the connection before authenticating"
                        : "connection broken before authenticating");
    return Progress::kClosed;
  }
  slot.got += static_cast<std::size_t>(n);
  if (slot.got < slot.in.size()) return Progress::kPending;
  VerdictBytes verdict{};
  Status judged = ServerHandshake(*key_, context_, slot.nonce).answer(slot.in, &verdict);
  const bool sent = sendSmall(slot.fd.get(), verdict.data(), verdict.size());
  if (!judged.ok()) {
    refuse(slot, judged.message().c_str());
    return Progress::kClosed;
  }
  if (!sent) {
    refuse(slot, "authenticated, but the verdict could not be sent (connection broken)");
    return Progress::kClosed;
  }
  slot.state = State::kAccepted;
  return Progress::kAccepted;
}

void HandshakeGate::drop(int index, const char* reason) {
  TUTTI_ASSERT(index >= 0 && index < slots());
  Slot& slot = slots_[static_cast<std::size_t>(index)];
  if (slot.state != State::kFree) refuse(slot, reason);
}

UniqueFd HandshakeGate::release(int index, std::string* peer) {
  TUTTI_ASSERT(index >= 0 && index < slots());
  Slot& slot = slots_[static_cast<std::size_t>(index)];
  TUTTI_ASSERT(slot.state == State::kAccepted);
  if (peer != nullptr) *peer = slot.peer;
  UniqueFd fd = std::move(slot.fd);
  slot.state = State::kFree;
  slot.got = 0;
  --used_;
  return fd;
}

void HandshakeGate::expire() {
  const auto now = Deadline::Clock::now();
  for (Slot& slot : slots_) {
    if (slot.state == State::kAwaitingResponse && now - slot.admitted >= timeout_) {
      const std::string reason =
          strFormat("did not authenticate within %.3g s (%zu of %zu response bytes received)",
                    std::chrono::duration<double>(timeout_).count(), slot.got, kResponseBytes);
      refuse(slot, reason.c_str());
    }
  }
}

void HandshakeGate::closeAll() {
  for (Slot& slot : slots_) {
    if (slot.state != State::kFree) clear(slot);
  }
}

Deadline HandshakeGate::nextDue() const {
  Deadline due = Deadline::never();
  const bool full = used_ == slots_.size();
  for (const Slot& slot : slots_) {
    if (slot.state != State::kAwaitingResponse) continue;
    const auto since = slot.admitted - Deadline::Clock::now();
    due = Deadline::earliest(due, Deadline::after(since + timeout_));
    if (full) due = Deadline::earliest(due, Deadline::after(since + kEvictableAfter));
  }
  return due;
}

int HandshakeGate::fd(int index) const {
  TUTTI_ASSERT(index >= 0 && index < slots());
  return slots_[static_cast<std::size_t>(index)].fd.get();
}

// --- HandshakeClient -----------------------------------------------------------------------

Result<HandshakeClient> HandshakeClient::create(int fd, const Key& key, const Context& context) {
  TUTTI_ASSIGN_OR_RETURN(Nonce nonce, randomNonce());
  return HandshakeClient(fd, key, context, nonce);
}

Result<bool> HandshakeClient::onReadable() {
  // The challenge and the verdict are both kChallengeBytes long; one buffer serves both.
  static_assert(kVerdictBytes == kChallengeBytes, "one buffer for both server messages");
  while (true) {
    ssize_t n = ::recv(fd_, in_.data() + got_, in_.size() - got_, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return false;
    if (n == 0 || (n < 0 && (errno == ECONNRESET || errno == EPIPE)))
      return Status(ErrorCode::kPeerFailure,
                    strFormat("closed the connection %s (busy, or this process was too slow to "
                              "answer)",
                              responded_ ? "before its verdict" : "before its challenge"));
    if (n < 0) return systemError("recv", errno, "authentication");
    got_ += static_cast<std::size_t>(n);
    if (got_ < in_.size()) continue;
    got_ = 0;
    if (responded_) {
      TUTTI_RETURN_IF_ERROR(handshake_.check(in_));
      return true;
    }
    TUTTI_ASSIGN_OR_RETURN(ResponseBytes response, handshake_.respond(in_));
    // The server waits for these 72 bytes before it sends anything more, so they always
    // fit in the socket's send buffer.
    if (!sendSmall(fd_, response.data(), response.size()))
      return Status(ErrorCode::kPeerFailure,
                    "closed the connection before this process could answer its challenge");
    responded_ = true;
  }
}

Status authenticateToServer(int fd, const Key& key, const Context& context, Deadline deadline) {
  TUTTI_ASSIGN_OR_RETURN(HandshakeClient client, HandshakeClient::create(fd, key, context));
  while (true) {
    TUTTI_ASSIGN_OR_RETURN(bool done, client.onReadable());
    if (done) return Status::Ok();
    pollfd pfd{fd, POLLIN, 0};
    int rc = ::poll(&pfd, 1, deadline.pollTimeoutMs());
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) return systemError("poll", errno, "authentication");
    if (rc == 0)
      return Status(ErrorCode::kTimeout,
                    "did not complete the authentication handshake before the deadline");
  }
}

}  // namespace tutti::auth
