#include "transport/tcp/tcp_transport.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>

#include <cerrno>

#include "base/assert.h"
#include "base/log.h"
#include "base/macros.h"
#include "base/net.h"
#include "base/strings.h"
#include "transport/tcp/establish.h"

namespace tutti::tcp {

TcpTransport::TcpTransport(int rank, int size) : rank_(rank), size_(size) {}

Result<std::unique_ptr<TcpTransport>> TcpTransport::create(Store& store,
                                                           const std::string& keyPrefix,
                                                           const Options& options) {
  TUTTI_CHECK_ARG(options.size >= 1, "world size must be at least 1, got %d", options.size);
  TUTTI_CHECK_ARG(options.rank >= 0 && options.rank < options.size,
                  "rank %d is outside the world of %d ranks", options.rank, options.size);
  TUTTI_ASSIGN_OR_RETURN(MeshSockets mesh,
                         establishMesh(store, keyPrefix, options.rank, options.size,
                                       options.commUid, options.bindHost, options.deadline));
  std::unique_ptr<TcpTransport> transport(new TcpTransport(options.rank, options.size));
  TUTTI_RETURN_IF_ERROR(
      transport->startLoop(std::move(mesh.sockets), mesh.names, options.maxUnexpectedBytes));
  return transport;
}

Status TcpTransport::startLoop(std::vector<UniqueFd> sockets, const std::vector<std::string>& names,
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
    link = std::make_unique<TcpLink>(this, peer, std::move(sockets[static_cast<std::size_t>(peer)]),
                                     names[static_cast<std::size_t>(peer)], maxUnexpectedBytes);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.ptr = link.get();
    if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, link->fd(), &ev) != 0)
      return systemError("epoll_ctl", errno);
  }
  loopThread_ = std::thread([this] { loop(); });
  return Status::Ok();
}

TcpTransport::~TcpTransport() { shutdown(Deadline::afterSeconds(5)); }

Link& TcpTransport::link(int peer) {
  TUTTI_ASSERT_CMP(peer, >=, 0);
  TUTTI_ASSERT_CMP(peer, <, size_);
  TUTTI_ASSERT_CMP(peer, !=, rank_);
  return *links_[static_cast<std::size_t>(peer)];
}

Status TcpTransport::health() const {
  if (!failed_.load(std::memory_order_acquire)) return Status();
  std::lock_guard<std::mutex> lock(healthMutex_);
  return health_;
}

void TcpTransport::reportFailure(const Status& status) {
  TUTTI_ASSERT(!status.ok());
  {
    std::lock_guard<std::mutex> lock(healthMutex_);
    if (health_.ok()) health_ = status;
  }
  failed_.store(true, std::memory_order_release);
  progress_.notify();
}

void TcpTransport::fail(const Status& status) { reportFailure(status); }

void TcpTransport::modify(int fd, std::uint32_t events, TcpLink* link) {
  epoll_event ev{};
  ev.events = events;
  ev.data.ptr = link;
  // Failure here means the fd is already gone from the set; the link is dying anyway.
  (void)epoll_ctl(epoll_.get(), EPOLL_CTL_MOD, fd, &ev);
}

void TcpTransport::unwatch(int fd) {
  if (fd >= 0 && epoll_.valid()) (void)epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, fd, nullptr);
}

void TcpTransport::loop() {
  // The loop blocks in epoll_wait without a timeout: it has nothing to do until a socket is
  // ready, and shutdown() wakes it through wakeFd_.
  constexpr int kMaxEvents = 64;
  epoll_event events[kMaxEvents];
  while (!stopping_.load(std::memory_order_acquire)) {
    int n = epoll_wait(epoll_.get(), events, kMaxEvents, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      reportFailure(systemError("epoll_wait", errno));
      return;
    }
    for (int i = 0; i < n; ++i) {
      auto* link = static_cast<TcpLink*>(events[i].data.ptr);
      if (link == nullptr) {
        std::uint64_t value;
        (void)!::read(wakeFd_.get(), &value, sizeof(value));
        continue;
      }
      if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) link->onReadable();
      if (events[i].events & EPOLLOUT) link->onWritable();
    }
  }
}

void TcpTransport::shutdown(Deadline deadline) {
  if (shutDown_) return;
  shutDown_ = true;
  if (loopThread_.joinable()) {
    for (auto& link : links_) {
      if (link) link->queueClose();
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
    stopping_.store(true, std::memory_order_release);
    std::uint64_t one = 1;
    (void)!::write(wakeFd_.get(), &one, sizeof(one));
    loopThread_.join();
  }
  for (auto& link : links_) {
    if (link) link->closeSocket();
  }
}

}  // namespace tutti::tcp
