#include "transport/tcp/tcp_transport.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <cerrno>

#include "base/assert.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/net.h"
#include "base/stack.h"
#include "base/strings.h"
#include "transport/tcp/establish.h"
#include "transport/tcp/wire.h"
#include "tutti/types.h"

namespace tutti::tcp {

// A schedule step may send a whole buffer as one message, so every buffer a call may take
// must fit in one frame.
static_assert(kMaxBufferBytes <= kMaxFrameBytes, "a call's buffer must fit in one TCP frame");

TcpTransport::TcpTransport(int rank, int size) : rank_(rank), size_(size) {}

Result<std::unique_ptr<TcpTransport>> TcpTransport::create(Store& store,
                                                           const std::string& keyPrefix,
                                                           const Options& options) {
  TUTTI_CHECK_ARG(options.size >= 1, "world size must be at least 1, got %d", options.size);
  TUTTI_CHECK_ARG(options.rank >= 0 && options.rank < options.size,
                  "rank %d is outside the world of %d ranks", options.rank, options.size);
  MeshParams params;
  params.rank = options.rank;
  params.size = options.size;
  params.commUid = options.commUid;
  params.bindHost = options.bindHost;
  params.key = &options.key;
  params.authTimeout = options.authTimeout;
  params.streams = options.streams;
  params.socketBufferBytes = options.socketBufferBytes;
  TUTTI_ASSIGN_OR_RETURN(MeshSockets mesh,
                         establishMesh(store, keyPrefix, params, options.deadline));
  std::vector<std::vector<UniqueFd>> streams(mesh.sockets.size());
  for (std::size_t peer = 0; peer < streams.size(); ++peer) {
    if (!mesh.sockets[peer].valid()) continue;
    streams[peer].push_back(std::move(mesh.sockets[peer]));
    for (UniqueFd& fd : mesh.extra[peer]) streams[peer].push_back(std::move(fd));
  }
  return adopt(options.rank, options.size, std::move(streams), mesh.names,
               options.maxUnexpectedBytes);
}

Result<std::unique_ptr<TcpTransport>> TcpTransport::adopt(int rank, int size,
                                                          std::vector<UniqueFd> sockets,
                                                          const std::vector<std::string>& names,
                                                          std::uint64_t maxUnexpectedBytes) {
  std::vector<std::vector<UniqueFd>> streams(sockets.size());
  for (std::size_t peer = 0; peer < sockets.size(); ++peer) {
    if (sockets[peer].valid()) streams[peer].push_back(std::move(sockets[peer]));
  }
  return adopt(rank, size, std::move(streams), names, maxUnexpectedBytes);
}

Result<std::unique_ptr<TcpTransport>> TcpTransport::adopt(
    int rank, int size, std::vector<std::vector<UniqueFd>> streams,
    const std::vector<std::string>& names, std::uint64_t maxUnexpectedBytes) {
  TUTTI_CHECK_ARG(streams.size() == static_cast<std::size_t>(size) && names.size() == streams.size(),
                  "need one socket and one name per rank (%d), got %zu and %zu", size,
                  streams.size(), names.size());
  for (int peer = 0; peer < size; ++peer) {
    const auto& fds = streams[static_cast<std::size_t>(peer)];
    const bool valid = !fds.empty() && std::all_of(fds.begin(), fds.end(),
                                                   [](const UniqueFd& fd) { return fd.valid(); });
    TUTTI_CHECK_ARG(valid == (peer != rank), "socket of rank %d is %s", peer,
                    peer == rank ? "set for self" : "missing");
  }
  std::unique_ptr<TcpTransport> transport(new TcpTransport(rank, size));
  TUTTI_RETURN_IF_ERROR(transport->startLoop(std::move(streams), names, maxUnexpectedBytes));
  return transport;
}

Status TcpTransport::startLoop(std::vector<std::vector<UniqueFd>> streams,
                               const std::vector<std::string>& names,
                               std::uint64_t maxUnexpectedBytes) {
  epoll_.reset(epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) return systemError("epoll_create1", errno);
  wakeFd_.reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wakeFd_.valid()) return systemError("eventfd", errno);
  epoll_event wake{};
  wake.events = EPOLLIN;
  wake.data.ptr = nullptr;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wakeFd_.get(), &wake) != 0)
    return systemError("epoll_ctl", errno);
  links_.resize(static_cast<std::size_t>(size_));
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    auto& link = links_[static_cast<std::size_t>(peer)];
    link = std::make_unique<TcpLink>(this, peer, std::move(streams[static_cast<std::size_t>(peer)]),
                                     names[static_cast<std::size_t>(peer)], maxUnexpectedBytes);
    for (int stream = 0; stream < link->streams(); ++stream) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.ptr = link->pollTarget(stream);
      if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, link->fd(stream), &ev) != 0)
        return systemError("epoll_ctl", errno);
    }
  }
  loopThread_ = startPrefaultedThread([this] { loop(); });
  return Status::Ok();
}

TcpTransport::~TcpTransport() { shutdown(Deadline::afterSeconds(5)); }

Link& TcpTransport::link(int peer) {
  TUTTI_ASSERT_CMP(peer, >=, 0);
  TUTTI_ASSERT_CMP(peer, <, size_);
  TUTTI_ASSERT_CMP(peer, !=, rank_);
  return *links_[static_cast<std::size_t>(peer)];
}

void TcpTransport::setCallChecker(CallChecker* checker) {
  // Stored first: an arrival handled after a link's scan below sees it (the link's mutex
  // orders the two), one handled before is in the scanned queue.
  Transport::setCallChecker(checker);
  if (checker == nullptr) return;
  for (auto& link : links_) {
    if (link) link->checkBufferedArrivals();
  }
}

Status TcpTransport::health() const {
  if (!failed_.load(std::memory_order_acquire)) return Status();
  std::lock_guard<std::mutex> lock(healthMutex_);
  return health_;
}

void TcpTransport::reportFailure(const Status& status) {
  TUTTI_ASSERT(!status.ok());
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(healthMutex_);
    first = health_.ok();
    if (first) health_ = status;
  }
  failed_.store(true, std::memory_order_release);
  if (first) {
    // The abort protocol: the first rank to see a fault tells the others, so they fail now
    // (naming the original culprit) instead of each waiting out its own deadline.
    TUTTI_INFO(kTcp, "communicator failed, telling every peer: %s", status.toString().c_str());
    for (auto& link : links_) {
      if (link) link->queueAbort(status);
    }
  }
  notifyProgress();
}

void TcpTransport::fail(const Status& status) { reportFailure(status); }

void TcpTransport::modify(int fd, std::uint32_t events, PollTarget* target) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = target;
  // Failure here means the fd is already gone from the set; the link is dying anyway.
  (void)epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev);
}

void TcpTransport::unwatch(int fd) {
  if (fd >= 0 && epoll_.valid()) (void)epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

void TcpTransport::pollOnce(int timeoutMs) {
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  threadSettled();  // the loop thread's first wait (base/stack.h)
  int n = epoll_wait(epoll_.get(), events, kMaxEvents, timeoutMs);
  if (n < 0) {
    if (errno != EINTR) reportFailure(systemError("epoll_wait", errno));
    return;
  }
  for (int i = 0; i < n; ++i) {
    auto* target = static_cast<PollTarget*>(events[i].data.ptr);
    if (target == nullptr) {
      std::uint64_t value;
      (void)!::read(wakeFd_.get(), &value, sizeof(value));
      continue;
    }
    // Two threads may briefly both poll (the loop thread and a driver); the link's mutex
    // makes handling the same readiness twice harmless (the second read finds nothing).
    target->link->onEvents(target->stream, events[i].events);
  }
}

namespace {
// The transport the calling thread is driving, if any.
thread_local const TcpTransport* tDriving = nullptr;
}  // namespace

void TcpTransport::notifyProgress() {
  progress_.notify();
  if (ProgressHook* hook = hook_.load(std::memory_order_acquire)) hook->onProgress();
  if (drivers_.load(std::memory_order_acquire) > 0 && tDriving != this) {
    std::uint64_t one = 1;
    (void)!::write(wakeFd_.get(), &one, sizeof(one));
  }
}

void TcpTransport::setDriving(bool driving) {
  tDriving = driving ? this : nullptr;
  if (driving) drivers_.fetch_add(1, std::memory_order_acq_rel);
  else drivers_.fetch_sub(1, std::memory_order_acq_rel);
  // No wake-up when driving ends: the loop thread re-checks within kLoopNapMs, which keeps
  // back-to-back calls from waking it for nothing.
}

bool TcpTransport::handToLoop() {
  if (tDriving != this) return false;
  setDriving(false);
  futexWakeAll(&drivers_);
  return true;
}

bool TcpTransport::waitForProgress(std::uint32_t seen, Deadline deadline, std::int64_t spinNs) {
  const auto spinUntil = Deadline::Clock::now() + std::chrono::nanoseconds(spinNs);
  do {
    if (progress_.snapshot() != seen) return true;
    pollOnce(0);
  } while (Deadline::Clock::now() < spinUntil);
  if (progress_.snapshot() != seen) return true;
  // Block in the kernel until a socket is ready; capped so that a failure reported by
  // another thread (fail(), abort) is noticed promptly.
  constexpr int kMaxBlockMs = 100;
  int timeout = deadline.pollTimeoutMs();
  pollOnce(timeout < 0 ? kMaxBlockMs : std::min(timeout, kMaxBlockMs));
  return progress_.snapshot() != seen || !deadline.expired();
}

void TcpTransport::loop() {
  // The loop thread moves bytes whenever no call is driving progress itself: between calls
  // (draining sends, noticing a dead peer) and for waiters that do not drive. It blocks in
  // epoll_wait without a timeout: shutdown() wakes it through wakeFd_.
  constexpr auto kLoopNapMs = std::chrono::milliseconds(10);
  while (!stopping_.load(std::memory_order_acquire)) {
    std::uint32_t drivers = drivers_.load(std::memory_order_acquire);
    if (drivers > 0) {
      threadSettled();
      futexWait(&drivers_, drivers, Deadline::after(kLoopNapMs));
      continue;
    }
    pollOnce(-1);
  }
}

void TcpTransport::shutdown(Deadline deadline) {
  if (shutDown_) return;
  shutDown_ = true;
  if (loopThread_.joinable()) {
    // A failed communicator says why it leaves (ABORT with its first failure), never a
    // plain goodbye: reportFailure() may still be queueing its ABORTs on another thread, and
    // a CLOSE slipped in first would make peers blame this rank instead of the culprit.
    // Both calls are idempotent per link; the first control frame queued wins.
    const Status failure = health();
    for (auto& link : links_) {
      if (!link) continue;
      if (failure.ok()) link->queueClose();
      else link->queueAbort(failure);
    }
    // Let the loop thread flush queued sends and the CLOSE frames, within the deadline.
    while (!deadline.expired()) {
      auto seen = progress_.snapshot();
      bool drained = true;
      for (auto& link : links_) {
        if (link && !link->sendsDrained()) drained = false;
      }
      if (drained) break;
      progress_.waitChange(seen, Deadline::earliest(deadline, Deadline::afterSeconds(0.01)), 0);
    }
    // A failed transport then waits until the peers' kernels have every byte: a socket
    // closed with input unread sends a reset, and a reset throws away what this side had
    // not yet delivered. That would be the ABORT saying why this rank leaves, queued behind
    // a long message the peer is still reading (a root of another call's, say), and the
    // peer would report a lost connection instead of the cause. Bounded by the deadline (a
    // peer that no longer reads); a peer's delayed acknowledgement can take tens of ms, so
    // a plain goodbye does not wait for it.
    for (bool acknowledged = failure.ok(); !acknowledged && !deadline.expired();) {
      acknowledged = true;
      for (auto& link : links_) {
        if (link && !link->writesAcknowledged()) acknowledged = false;
      }
      if (!acknowledged) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    stopping_.store(true, std::memory_order_release);
    futexWakeAll(&drivers_);
    std::uint64_t one = 1;
    (void)!::write(wakeFd_.get(), &one, sizeof(one));
    loopThread_.join();
  }
  for (auto& link : links_) {
    if (link) link->closeSocket();
  }
}

}  // namespace tutti::tcp
