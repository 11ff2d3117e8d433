// TcpStoreServer: one thread, one epoll set, every socket non-blocking. This file has the
// connections (accepting, the handshake gate, reading, writing, serving each client's
// requests in order); the keys, values and parked requests are StoreState's
// (store_state.h).
//
// Each client has an input buffer (bounded by one maximal message, the protocol cap) and an
// output queue. Requests are served strictly in order, one at a time per client: while a
// client's GET/WAIT is parked, or while its last reply has not been fully written, its
// further input is buffered but not served. Honest clients send one request and wait for
// the reply, so this costs them nothing, and it bounds what one connection can make the
// server hold to one input message, one reply and one parked waiter. The loop sleeps until
// the earliest parked deadline.
//
// A connection is not a client until it has authenticated: until then it sits in the
// HandshakeGate (auth_gate.h), a fixed array of slots with no per-connection allocation,
// under epoll tags of its own. Only an authenticated connection gets a Client, buffers and
// a place in the request path.

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/stack.h"
#include "base/assert.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/strings.h"
#include "bootstrap/auth_gate.h"
#include "bootstrap/store_protocol.h"
#include "bootstrap/store_state.h"
#include "bootstrap/tcp_store.h"

namespace tutti {
namespace {

using storeproto::Message;
using storeproto::Opcode;

constexpr std::size_t kMaxMessageBytes = storeproto::kHeaderBytes + storeproto::kMaxPayloadBytes;
// Bytes read per readiness event: large enough for few wake-ups on a 64 MiB SET, small
// enough that one busy client does not starve the others for long.
constexpr std::size_t kReadChunk = 256 << 10;
// An idle client's input buffer is released when it grew beyond this (after a large SET).
constexpr std::size_t kKeepBufferBytes = 1 << 20;
constexpr int kMaxEvents = 64;
// Connections accepted per listener wake-up, so a connect storm cannot starve the clients.
constexpr int kMaxAcceptsPerWake = 64;

// epoll tags: the listener, the wake-up eventfd, one per handshake slot; clients have ids
// from kFirstClientId up.
constexpr std::uint64_t kListenerTag = 0;
constexpr std::uint64_t kWakeTag = 1;
constexpr std::uint64_t kFirstPendingTag = 2;
constexpr std::uint64_t kFirstClientId =
    kFirstPendingTag + static_cast<std::uint64_t>(auth::HandshakeGate::slots());

struct Client {
  std::uint64_t id = 0;
  UniqueFd fd;
  std::string peer;              // "host:port", for logs
  std::vector<std::uint8_t> in;  // received bytes; unserved ones start at inStart
  std::size_t inStart = 0;
  std::deque<std::vector<std::uint8_t>> out;  // encoded replies not yet written
  std::size_t outOffset = 0;                  // bytes of out.front() already written
  std::size_t outBytes = 0;                   // bytes queued in all of out
  std::uint64_t waiter = 0;                   // its parked GET/WAIT, or 0
  std::uint32_t events = 0;                   // current epoll interest

  std::size_t buffered() const { return in.size() - inStart; }
};

class Server final : public TcpStoreServer {
 public:
  Server(std::string host, std::uint16_t port, const Options& options, UniqueFd listener,
         UniqueFd epoll, UniqueFd wake)
      : address_{std::move(host), port},
        maxClients_(options.maxClients),
        key_(options.key),
        gate_(key_, auth::Context::store(), options.authTimeout,
              "store server on " + address_.toString(), log::kBootstrap),
        listener_(std::move(listener)),
        epoll_(std::move(epoll)),
        wake_(std::move(wake)) {}

  ~Server() override { stop(); }

  void startThread() {
    thread_ = startPrefaultedThread([this] { run(); });
  }

  HostPort address() const override { return address_; }

  void stop() override {
    std::lock_guard<std::mutex> lock(stopMu_);
    if (!stopping_.exchange(true)) {
      std::uint64_t one = 1;
      // The eventfd counter cannot overflow from one write, so this cannot fail.
      [[maybe_unused]] ssize_t n = ::write(wake_.get(), &one, sizeof(one));
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  // The event loop: until stop(), waits for sockets or the next parked timeout.
  void run();
  // Accepts pending connections into the handshake gate, refusing those beyond
  // maxClients_; pauses accepting while the gate is full.
  void acceptClients();
  // Advances the handshake in slot `slot`; an authenticated connection becomes a Client.
  void onPendingEvent(int slot);
  // Makes an authenticated connection a client.
  void addClient(UniqueFd fd, std::string peer);
  // Reads, writes and serves one client after epoll reported `events` on it.
  void onClientEvent(std::uint64_t id, std::uint32_t events);
  // Appends what the socket holds (up to the input bound); *closed on end of stream.
  Status readFrom(Client& c, bool* closed);
  // Writes queued replies until done or the socket is full.
  Status flush(Client& c);
  // Validates and serves the client's complete buffered requests, in order, while it may;
  // drops the client on a malformed message.
  void processInput(std::uint64_t id);
  // Executes one request: replies at once or parks it.
  void serve(Client& c, Message&& m);
  // Queues the answers state_ gave to parked requests, for drainReady().
  void deliverAnswers();
  // Flushes and resumes clients whose parked request was answered.
  void drainReady();
  void queueReply(Client& c, const Message& reply);
  // Brings the client's epoll interest in line with its buffers.
  void updateInterest(Client& c);
  // Closes a client, logging why (WARN for misbehaviour, DEBUG for a plain departure).
  void drop(std::uint64_t id, const std::string& reason, bool warn);
  void setListenerWatched(bool watched);
  // epoll_wait timeout: until the earliest parked deadline or handshake event, or -1
  // (stop() wakes the loop).
  int nextTimeoutMs() const;

  Client* find(std::uint64_t id) {
    auto it = clients_.find(id);
    return it == clients_.end() ? nullptr : it->second.get();
  }

  const HostPort address_;
  const int maxClients_;
  const auth::Key key_;
  auth::HandshakeGate gate_;  // connections that have not authenticated yet
  UniqueFd listener_;
  UniqueFd epoll_;
  UniqueFd wake_;
  std::thread thread_;
  std::mutex stopMu_;  // serialises concurrent stop() calls around the join
  std::atomic<bool> stopping_{false};

  // Loop-thread state: touched only by run() and what it calls.
  bool listenerWatched_ = true;
  bool gateFull_ = false;  // accepting paused until the gate has room
  std::uint64_t nextClientId_ = kFirstClientId;
  std::unordered_map<std::uint64_t, std::unique_ptr<Client>> clients_;
  detail::StoreState state_;
  std::vector<std::uint64_t> ready_;  // clients whose parked request was just answered
};

void Server::run() {
  epoll_event events[kMaxEvents];
  while (!stopping_.load(std::memory_order_acquire)) {
    // Without parked timeouts the loop sleeps until a socket or stop() (the eventfd) wakes it.
    const int timeoutMs = nextTimeoutMs();
    threadSettled();
    int n = ::epoll_wait(epoll_.get(), events, kMaxEvents, timeoutMs);
    if (n < 0) {
      int err = errno;
      if (err == EINTR) continue;
      TUTTI_ERROR(kBootstrap, "store server on %s: epoll_wait failed: %s; no longer serving",
                  address_.toString().c_str(), std::strerror(err));
      break;
    }
    for (int i = 0; i < n; ++i) {
      std::uint64_t tag = events[i].data.u64;
      if (tag == kWakeTag) continue;  // stop(): the loop condition sees it
      if (tag == kListenerTag)
        acceptClients();
      else if (tag < kFirstClientId)
        onPendingEvent(static_cast<int>(tag - kFirstPendingTag));
      else
        onClientEvent(tag, events[i].events);
    }
    gate_.expire();
    // The gate may have room again (a slot timed out, or the oldest became evictable).
    if (gateFull_) acceptClients();
    state_.expire();
    deliverAnswers();
    drainReady();
  }
  // Closing every connection fails the clients' pending requests with a closed connection.
  TUTTI_DEBUG(kBootstrap, "store server on %s stopping with %zu clients",
              address_.toString().c_str(), clients_.size());
  state_.cancelAll();
  clients_.clear();
  gate_.closeAll();
  listener_.reset();
}

int Server::nextTimeoutMs() const {
  const Deadline next = Deadline::earliest(gate_.nextDue(), state_.nextDeadline());
  if (next.isNever()) return -1;
  auto left = next.at() - Deadline::Clock::now();
  if (left <= Deadline::Clock::duration::zero()) return 0;
  auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
  return static_cast<int>(std::min<long long>(ms, INT_MAX));
}

void Server::setListenerWatched(bool watched) {
  if (watched == listenerWatched_ || !listener_.valid()) return;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerTag;
  int rc = ::epoll_ctl(epoll_.get(), watched ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, listener_.get(), &ev);
  if (rc == 0) listenerWatched_ = watched;
}

void Server::acceptClients() {
  for (int i = 0; i < kMaxAcceptsPerWake; ++i) {
    if (!gate_.makeRoom()) {
      // Every handshake slot is young: new connections wait in the kernel's backlog until
      // one frees up or may be evicted (the loop's timeout is gate_.nextDue()).
      gateFull_ = true;
      setListenerWatched(false);
      return;
    }
    if (gateFull_) {
      gateFull_ = false;
      setListenerWatched(true);
    }
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      int err = errno;
      if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR || err == ECONNABORTED) return;
      // Out of descriptors or memory: stop watching the listener (it would stay readable and
      // spin the loop) until a client leaves; pending connections wait in the backlog.
      TUTTI_WARN(kBootstrap,
                 "store server on %s: accept failed (%s) with %zu clients; pausing accepts",
                 address_.toString().c_str(), std::strerror(err), clients_.size());
      setListenerWatched(false);
      return;
    }
    UniqueFd sock(fd);
    if (clients_.size() >= static_cast<std::size_t>(maxClients_)) {
      Result<HostPort> peer = peerAddress(fd);
      TUTTI_WARN(kBootstrap,
                 "store server on %s: refusing connection from %s: already serving %zu clients "
                 "(the limit)",
                 address_.toString().c_str(),
                 peer.ok() ? peer->toString().c_str() : "unknown peer", clients_.size());
      continue;  // `sock` closes it
    }
    int slot = gate_.admit(std::move(sock));
    if (slot < 0) continue;  // closed and logged
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = kFirstPendingTag + static_cast<std::uint64_t>(slot);
    if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, gate_.fd(slot), &ev) != 0)
      gate_.drop(slot, "the store server could not watch it (epoll_ctl failed)");
  }
}

void Server::onPendingEvent(int slot) {
  if (gate_.onReadable(slot) != auth::HandshakeGate::Progress::kAccepted) return;
  // The slot's tag is about to be reused; the socket is watched under its client id instead.
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, gate_.fd(slot), nullptr);
  std::string peer;
  UniqueFd fd = gate_.release(slot, &peer);
  if (clients_.size() >= static_cast<std::size_t>(maxClients_)) {
    TUTTI_WARN(kBootstrap,
               "store server on %s: refusing client %s: already serving %zu clients (the limit)",
               address_.toString().c_str(), peer.c_str(), clients_.size());
    return;  // `fd` closes it
  }
  addClient(std::move(fd), std::move(peer));
}

void Server::addClient(UniqueFd fd, std::string peer) {
  (void)setNoDelay(fd.get());  // latency only; a failure changes nothing else
  auto c = std::make_unique<Client>();
  c->id = nextClientId_++;
  c->fd = std::move(fd);
  c->peer = std::move(peer);
  updateInterest(*c);
  if (c->events == 0) return;  // epoll_ctl failed and was logged; `c` closes the socket
  TUTTI_DEBUG(kBootstrap, "store server: client %s connected and authenticated", c->peer.c_str());
  clients_.emplace(c->id, std::move(c));
}

void Server::updateInterest(Client& c) {
  // Always watch for hang-up; read while the input bound allows; write while output waits.
  std::uint32_t want = EPOLLRDHUP;
  if (c.buffered() < kMaxMessageBytes) want |= EPOLLIN;
  if (c.outBytes > 0) want |= EPOLLOUT;
  if (want == c.events) return;
  epoll_event ev{};
  ev.events = want;
  ev.data.u64 = c.id;
  int rc =
      ::epoll_ctl(epoll_.get(), c.events == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, c.fd.get(), &ev);
  if (rc != 0) {
    // Only ENOMEM/ENOSPC can get here for a valid socket. A new client is then refused
    // (acceptClients sees events == 0); an existing one keeps its old interest, which at
    // worst stalls it until its own deadline.
    int err = errno;
    TUTTI_WARN(kBootstrap, "store server: epoll_ctl for client %s failed: %s", c.peer.c_str(),
               std::strerror(err));
    return;
  }
  c.events = want;
}

void Server::onClientEvent(std::uint64_t id, std::uint32_t events) {
  Client* c = find(id);
  if (c == nullptr) return;  // dropped earlier in this batch
  if (events & EPOLLIN) {
    bool closed = false;
    Status s = readFrom(*c, &closed);
    if (!s.ok()) return drop(id, s.message(), false);
    if (closed) {
      std::size_t left = c->buffered();
      return drop(
          id,
          left == 0
              ? "closed the connection"
              : strFormat("closed the connection with %zu bytes of an incomplete message", left),
          false);
    }
  } else if (events & (EPOLLHUP | EPOLLRDHUP | EPOLLERR)) {
    return drop(id, "hung up", false);
  }
  if (events & EPOLLOUT) {
    Status s = flush(*c);
    if (!s.ok()) return drop(id, s.message(), false);
  }
  processInput(id);
}

Status Server::readFrom(Client& c, bool* closed) {
  std::size_t room = kMaxMessageBytes - c.buffered();
  if (room == 0) return Status::Ok();
  std::size_t want = std::min(kReadChunk, room);
  std::size_t old = c.in.size();
  c.in.resize(old + want);
  ssize_t n = ::recv(c.fd.get(), c.in.data() + old, want, 0);
  int err = errno;
  c.in.resize(old + (n > 0 ? static_cast<std::size_t>(n) : 0));
  if (n > 0) return Status::Ok();
  if (n == 0) {
    *closed = true;
    return Status::Ok();
  }
  if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR) return Status::Ok();
  return systemError("recv", err, c.peer);
}

Status Server::flush(Client& c) {
  while (!c.out.empty()) {
    const std::vector<std::uint8_t>& front = c.out.front();
    ssize_t n =
        ::send(c.fd.get(), front.data() + c.outOffset, front.size() - c.outOffset, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      if (errno == EINTR) continue;
      return systemError("send", errno, c.peer);
    }
    c.outOffset += static_cast<std::size_t>(n);
    c.outBytes -= static_cast<std::size_t>(n);
    if (c.outOffset == front.size()) {
      c.out.pop_front();
      c.outOffset = 0;
    }
  }
  updateInterest(c);
  return Status::Ok();
}

void Server::processInput(std::uint64_t id) {
  Client* c = find(id);
  if (c == nullptr) return;
  while (c->buffered() >= storeproto::kHeaderBytes) {
    std::span<const std::uint8_t> bytes(c->in.data() + c->inStart, c->buffered());
    // The header is checked as soon as it arrives, even when the client must wait its turn,
    // so garbage is caught before a single byte more of it is buffered.
    Result<storeproto::Header> header = storeproto::decodeHeader(bytes);
    if (!header.ok()) return drop(id, header.status().message(), true);
    if (!storeproto::isRequest(header->opcode))
      return drop(id,
                  strFormat("store protocol: sent reply opcode %s where a request belongs",
                            storeproto::opcodeName(header->opcode)),
                  true);
    if (c->waiter != 0 || c->outBytes > 0) break;  // served in order, one at a time
    std::size_t total = storeproto::kHeaderBytes + header->payloadBytes;
    if (bytes.size() < total) break;
    Result<Message> m = storeproto::decodePayload(
        *header, bytes.subspan(storeproto::kHeaderBytes, header->payloadBytes));
    if (!m.ok()) return drop(id, m.status().message(), true);
    c->inStart += total;
    serve(*c, std::move(m).value());
    Status s = flush(*c);
    if (!s.ok()) return drop(id, s.message(), false);
  }
  if (c->inStart == c->in.size()) {
    c->in.clear();
    c->inStart = 0;
    if (c->in.capacity() > kKeepBufferBytes) c->in.shrink_to_fit();
  } else if (c->inStart > c->in.size() / 2) {
    c->in.erase(c->in.begin(), c->in.begin() + static_cast<std::ptrdiff_t>(c->inStart));
    c->inStart = 0;
  }
  updateInterest(*c);
}

void Server::serve(Client& c, Message&& m) {
  TUTTI_ASSERT_CMP(c.waiter, ==, 0u);
  std::uint64_t waiter = 0;
  std::optional<Message> reply = state_.serve(c.id, std::move(m), &waiter);
  if (reply)
    queueReply(c, *reply);
  else
    c.waiter = waiter;
  deliverAnswers();
}

void Server::deliverAnswers() {
  for (detail::StoreState::Answer& a : state_.takeAnswers()) {
    Client* c = find(a.clientId);
    TUTTI_ASSERT(c != nullptr && c->waiter == a.waiterId);  // drop() cancels a client's waiter
    c->waiter = 0;
    queueReply(*c, a.reply);
    ready_.push_back(a.clientId);
  }
}

void Server::drainReady() {
  // Serving a woken client may wake others; each round serves buffered input only (nothing
  // is read here), so the rounds end once that input is used up.
  while (!ready_.empty()) {
    std::vector<std::uint64_t> batch = std::move(ready_);
    ready_.clear();
    for (std::uint64_t id : batch) {
      Client* c = find(id);
      if (c == nullptr) continue;
      Status s = flush(*c);
      if (!s.ok()) {
        drop(id, s.message(), false);
        continue;
      }
      processInput(id);
    }
  }
}

void Server::queueReply(Client& c, const Message& reply) {
  std::vector<std::uint8_t> bytes;
  // Replies are built from validated requests and stored values, so they are within bounds.
  Status s = storeproto::encode(reply, &bytes);
  TUTTI_ASSERT(s.ok());
  c.outBytes += bytes.size();
  c.out.push_back(std::move(bytes));
}

void Server::drop(std::uint64_t id, const std::string& reason, bool warn) {
  auto it = clients_.find(id);
  if (it == clients_.end()) return;
  Client& c = *it->second;
  if (warn) {
    TUTTI_WARN(kBootstrap, "store server on %s: disconnecting client %s: %s",
               address_.toString().c_str(), c.peer.c_str(), reason.c_str());
  } else {
    TUTTI_DEBUG(kBootstrap, "store server: client %s left: %s", c.peer.c_str(), reason.c_str());
  }
  if (c.waiter != 0) state_.cancel(c.waiter);
  if (c.events != 0) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, c.fd.get(), nullptr);
  clients_.erase(it);
  setListenerWatched(true);  // a descriptor is free again if accepts were paused
}

}  // namespace

Result<std::unique_ptr<TcpStoreServer>> TcpStoreServer::start(const std::string& host,
                                                              std::uint16_t port,
                                                              const Options& options) {
  TUTTI_CHECK_ARG(options.maxClients >= 1, "store server needs maxClients >= 1, got %d",
                  options.maxClients);
  TUTTI_CHECK_ARG(options.authTimeout.count() > 0,
                  "store server needs a positive authentication timeout, got %lld ms",
                  static_cast<long long>(options.authTimeout.count()));
  TUTTI_ASSIGN_OR_RETURN(UniqueFd listener, listenTcp(host, port));
  TUTTI_ASSIGN_OR_RETURN(HostPort bound, localAddress(listener.get()));
  UniqueFd epoll(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll.valid()) return systemError("epoll_create1", errno);
  UniqueFd wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake.valid()) return systemError("eventfd", errno);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenerTag;
  if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, listener.get(), &ev) != 0)
    return systemError("epoll_ctl", errno, "store listener");
  ev.data.u64 = kWakeTag;
  if (::epoll_ctl(epoll.get(), EPOLL_CTL_ADD, wake.get(), &ev) != 0)
    return systemError("epoll_ctl", errno, "store wake-up eventfd");
  std::string shownHost = (host.empty() || host == "*") ? "127.0.0.1" : host;
  auto server = std::make_unique<Server>(shownHost, bound.port, options, std::move(listener),
                                         std::move(epoll), std::move(wake));
  server->startThread();
  TUTTI_INFO(kBootstrap, "store server listening on %s (bound %s)%s",
             server->address().toString().c_str(), bound.toString().c_str(),
             options.key.isSecret() ? "" : " without a job secret");
  return std::unique_ptr<TcpStoreServer>(std::move(server));
}

}  // namespace tutti
