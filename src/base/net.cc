#include "base/net.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <thread>

#include "base/macros.h"
#include "base/strings.h"

namespace tutti {
namespace {

Result<HostPort> sockaddrToHostPort(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = {0};
  std::uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host));
    port = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host));
    port = ntohs(in6->sin6_port);
  } else {
    return Status(ErrorCode::kSystemError, strFormat("unexpected address family %d", ss.ss_family));
  }
  return HostPort{host, port};
}

Status waitFor(int fd, short events, Deadline deadline, const char* what) {
  while (true) {
    pollfd pfd{fd, events, 0};
    int rc = ::poll(&pfd, 1, deadline.pollTimeoutMs());
    if (rc > 0) return Status::Ok();
    if (rc == 0) return Status(ErrorCode::kTimeout, strFormat("timed out waiting to %s", what));
    if (errno != EINTR) return systemError("poll", errno, what);
  }
}

}  // namespace

std::string HostPort::toString() const {
  if (host.find(':') != std::string::npos) return strFormat("[%s]:%u", host.c_str(), port);
  return strFormat("%s:%u", host.c_str(), port);
}

Result<HostPort> parseHostPort(const std::string& text) {
  std::string host;
  std::string portText;
  if (!text.empty() && text[0] == '[') {
    auto close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      return Status(ErrorCode::kInvalidArgument, "bad address '" + text + "': expected [host]:port");
    host = text.substr(1, close - 1);
    portText = text.substr(close + 2);
  } else {
    auto colon = text.rfind(':');
    if (colon == std::string::npos || colon == 0)
      return Status(ErrorCode::kInvalidArgument, "bad address '" + text + "': expected host:port");
    host = text.substr(0, colon);
    portText = text.substr(colon + 1);
  }
  auto port = parseInt(portText);
  if (!port || *port <= 0 || *port > 65535)
    return Status(ErrorCode::kInvalidArgument, "bad port in address '" + text + "'");
  return HostPort{host, static_cast<std::uint16_t>(*port)};
}

Status systemError(const char* call, int err, const std::string& what) {
  if (what.empty()) return Status(ErrorCode::kSystemError, strFormat("%s: %s", call, std::strerror(err)));
  return Status(ErrorCode::kSystemError,
                strFormat("%s(%s): %s", call, what.c_str(), std::strerror(err)));
}

Status setNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL, 0);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return systemError("fcntl", errno);
  return Status::Ok();
}

Status setNoDelay(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
    return systemError("setsockopt(TCP_NODELAY)", errno);
  return Status::Ok();
}

Status setSocketBuffers(int fd, std::uint64_t bytes) {
  const int value = static_cast<int>(std::min<std::uint64_t>(bytes, 1u << 30));
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &value, sizeof(value)) < 0)
    return systemError("setsockopt(SO_SNDBUF)", errno);
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &value, sizeof(value)) < 0)
    return systemError("setsockopt(SO_RCVBUF)", errno);
  return Status::Ok();
}

Result<UniqueFd> listenTcp(const std::string& host, std::uint16_t port, int backlog) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string portText = std::to_string(port);
  const char* node = (host.empty() || host == "*") ? nullptr : host.c_str();
  int rc = getaddrinfo(node, portText.c_str(), &hints, &res);
  if (rc != 0)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("cannot resolve '%s': %s", host.c_str(), gai_strerror(rc)));
  Status last = Status(ErrorCode::kSystemError, "no usable address for " + host);
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    if (!fd.valid()) {
      last = systemError("socket", errno);
      continue;
    }
    int one = 1;
    setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0) {
      last = systemError("bind", errno, HostPort{host, port}.toString());
      continue;
    }
    if (::listen(fd.get(), backlog) != 0) {
      last = systemError("listen", errno);
      continue;
    }
    freeaddrinfo(res);
    return fd;
  }
  freeaddrinfo(res);
  return last;
}

Result<HostPort> localAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return systemError("getsockname", errno);
  return sockaddrToHostPort(ss);
}

Result<HostPort> peerAddress(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0)
    return systemError("getpeername", errno);
  return sockaddrToHostPort(ss);
}

Result<UniqueFd> connectTcp(const HostPort& target, Deadline deadline, bool retryRefused) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  std::string portText = std::to_string(target.port);
  int rc = getaddrinfo(target.host.c_str(), portText.c_str(), &hints, &res);
  if (rc != 0)
    return Status(ErrorCode::kInvalidArgument,
                  strFormat("cannot resolve '%s': %s", target.host.c_str(), gai_strerror(rc)));
  std::unique_ptr<addrinfo, void (*)(addrinfo*)> guard(res, freeaddrinfo);
  auto backoff = std::chrono::milliseconds(1);
  Status last = Status(ErrorCode::kTimeout, "no attempt made");
  do {
    bool refused = true;  // by every address of this round
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      UniqueFd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      if (!fd.valid()) return systemError("socket", errno);
      int c = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
      if (c != 0 && errno == EINPROGRESS) {
        Status s = waitFor(fd.get(), POLLOUT, deadline, ("connect to " + target.toString()).c_str());
        if (!s.ok()) return s;
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        c = err == 0 ? 0 : -1;
        errno = err;
      }
      if (c == 0) {
        Status nd = setNoDelay(fd.get());
        if (!nd.ok()) return nd;
        return fd;
      }
      const int err = errno;
      last = systemError("connect", err, target.toString());
      if (err != ECONNREFUSED && err != ENETUNREACH && err != EHOSTUNREACH &&
          err != ETIMEDOUT && err != EAGAIN)
        return last;
      if (err != ECONNREFUSED) refused = false;
    }
    if (refused && !retryRefused)
      return Status(ErrorCode::kPeerFailure, last.message());
    std::this_thread::sleep_for(std::min<Deadline::Clock::duration>(backoff, deadline.remaining()));
    backoff = std::min(backoff * 2, std::chrono::milliseconds(100));
  } while (!deadline.expired());
  return Status(ErrorCode::kTimeout,
                strFormat("could not connect to %s before the deadline (last error: %s)",
                          target.toString().c_str(), last.message().c_str()));
}

Result<UniqueFd> acceptTcp(int listenFd) {
  int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
      return UniqueFd();
    return systemError("accept", errno);
  }
  UniqueFd out(fd);
  (void)setNoDelay(fd);
  return out;
}

Status writeFull(int fd, const void* data, std::size_t len, Deadline deadline) {
  const char* p = static_cast<const char*>(data);
  while (len > 0) {
    ssize_t n = ::send(fd, p, len, MSG_NOSIGNAL);
    if (n > 0) {
      p += n;
      len -= static_cast<std::size_t>(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      Status s = waitFor(fd, POLLOUT, deadline, "send");
      if (!s.ok()) return s;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (errno == EPIPE || errno == ECONNRESET)
      return Status(ErrorCode::kPeerFailure, strFormat("connection closed by peer: %s", std::strerror(errno)));
    return systemError("send", errno);
  }
  return Status::Ok();
}

Status readFull(int fd, void* data, std::size_t len, Deadline deadline) {
  char* p = static_cast<char*>(data);
  std::size_t got = 0;
  while (got < len) {
    ssize_t n = ::recv(fd, p + got, len - got, 0);
    if (n > 0) {
      got += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0)
      return Status(ErrorCode::kPeerFailure,
                    strFormat("connection closed by peer after %zu of %zu bytes", got, len));
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      Status s = waitFor(fd, POLLIN, deadline, "receive");
      if (!s.ok()) return s;
      continue;
    }
    if (errno == EINTR) continue;
    if (errno == ECONNRESET)
      return Status(ErrorCode::kPeerFailure, "connection reset by peer");
    return systemError("recv", errno);
  }
  return Status::Ok();
}

Result<std::vector<NetInterface>> listInterfaces() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return systemError("getifaddrs", errno);
  std::unique_ptr<ifaddrs, void (*)(ifaddrs*)> owner(list, ::freeifaddrs);
  std::vector<NetInterface> out;
  for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr || (i->ifa_flags & IFF_UP) == 0) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    if (family == AF_INET6 &&
        IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<const sockaddr_in6*>(i->ifa_addr)->sin6_addr))
      continue;  // needs a scope id to be reached: not an address to publish
    char host[NI_MAXHOST];
    const socklen_t length = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (::getnameinfo(i->ifa_addr, length, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) != 0)
      continue;
    out.push_back(NetInterface{i->ifa_name, host});
  }
  return out;
}

bool InterfaceFilter::allows(std::string_view name) const {
  bool listed = false;
  for (const std::string& n : names) {
    if (exact ? name == n : name.substr(0, n.size()) == n) listed = true;
  }
  return listed != exclude;
}

Result<InterfaceFilter> parseInterfaceFilter(std::string_view spec) {
  InterfaceFilter filter;
  std::string_view rest = spec;
  if (!rest.empty() && rest.front() == '^') {
    filter.exclude = true;
    rest.remove_prefix(1);
  }
  if (!rest.empty() && rest.front() == '=') {
    filter.exact = true;
    rest.remove_prefix(1);
  }
  while (true) {
    const std::size_t comma = rest.find(',');
    const std::string_view name = rest.substr(0, comma);
    if (name.empty())
      return Status(ErrorCode::kInvalidArgument,
                    strFormat("TUTTI_SOCKET_IFNAME='%.*s' has an empty interface name (expected "
                              "a comma-separated list such as eth,ib, ^docker,lo or =eth0)",
                              static_cast<int>(spec.size()), spec.data()));
    filter.names.emplace_back(name);
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return filter;
}

Result<std::string> chooseInterfaceAddress(std::string_view spec,
                                           const std::vector<NetInterface>& interfaces) {
  TUTTI_ASSIGN_OR_RETURN(InterfaceFilter filter, parseInterfaceFilter(spec));
  const NetInterface* v6 = nullptr;
  for (const NetInterface& i : interfaces) {
    if (!filter.allows(i.name)) continue;
    if (i.address.find(':') == std::string::npos) return i.address;
    if (v6 == nullptr) v6 = &i;
  }
  if (v6 != nullptr) return v6->address;
  std::string listed;
  for (const NetInterface& i : interfaces)
    listed += (listed.empty() ? "" : ", ") + i.name + " " + i.address;
  return Status(ErrorCode::kInvalidArgument,
                strFormat("TUTTI_SOCKET_IFNAME='%.*s' matches none of this host's interfaces (%s)",
                          static_cast<int>(spec.size()), spec.data(),
                          listed.empty() ? "none is up" : listed.c_str()));
}

}  // namespace tutti
