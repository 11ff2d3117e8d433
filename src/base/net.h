#pragma once
// Socket helpers shared by the store and the TCP transport: addresses, listening on an
// ephemeral port, connecting with a deadline, and whole-buffer I/O bounded by a deadline.
// Errors name the system call, errno and the remote address.

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tutti/deadline.h"
#include "base/fd.h"
#include "tutti/status.h"

namespace tutti {

struct HostPort {
  std::string host;
  std::uint16_t port = 0;
  /// "host:port", with brackets around IPv6 hosts.
  std::string toString() const;
};

/// Parses "host:port" or "[v6addr]:port".
Result<HostPort> parseHostPort(const std::string& text);

/// Status for a failed system call: "connect(10.0.0.2:4000): Connection refused".
Status systemError(const char* call, int err, const std::string& what = "");

/// Listens on host:port (port 0 = ephemeral); "" or "*" binds every interface. The socket
/// is non-blocking and close-on-exec.
Result<UniqueFd> listenTcp(const std::string& host, std::uint16_t port, int backlog = 1024);

/// The local address a socket is bound to (numeric host).
Result<HostPort> localAddress(int fd);
/// The peer address of a connected socket (numeric host).
Result<HostPort> peerAddress(int fd);

/// Connects to `target`, retrying refused or unreachable attempts until `deadline` (the
/// server may not be listening yet). Returns a non-blocking, close-on-exec socket with
/// TCP_NODELAY set. With `retryRefused` false, a target refusing the connection on every
/// address is kPeerFailure at once: for a server known to have listened, whose process is
/// then gone.
Result<UniqueFd> connectTcp(const HostPort& target, Deadline deadline, bool retryRefused = true);

/// Accepts one pending connection on a non-blocking listener; returns an invalid fd when
/// none is pending. The accepted socket is non-blocking with TCP_NODELAY.
Result<UniqueFd> acceptTcp(int listenFd);

/// Writes/reads exactly `len` bytes on a non-blocking socket, waiting with poll() until
/// `deadline`. A peer that closes mid-read gives kPeerFailure; a deadline gives kTimeout.
Status writeFull(int fd, const void* data, std::size_t len, Deadline deadline);
Status readFull(int fd, void* data, std::size_t len, Deadline deadline);

Status setNonBlocking(int fd);
Status setNoDelay(int fd);
/// Sets SO_SNDBUF and SO_RCVBUF to `bytes` (the kernel doubles it for its bookkeeping, and
/// caps it at net.core.wmem_max/rmem_max); this turns the kernel's autotuning off for the
/// socket.
Status setSocketBuffers(int fd, std::uint64_t bytes);

/// A network interface's address: "eth0" and "10.0.0.2" (numeric; IPv4 or IPv6).
struct NetInterface {
  std::string name;
  std::string address;
};

/// This host's interfaces that are up, one entry per address (getifaddrs' order), IPv6
/// link-local addresses left out.
Result<std::vector<NetInterface>> listInterfaces();

/// Which interfaces a TUTTI_SOCKET_IFNAME value (NCCL_SOCKET_IFNAME's syntax) allows: a
/// comma-separated list of name prefixes ("eth,ib"); "^" before it excludes the names
/// instead ("^docker,lo"); "=" (after any "^") makes them exact names ("=eth0", "^=docker0").
struct InterfaceFilter {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;
  bool allows(std::string_view name) const;
};
/// kInvalidArgument for an empty list or an empty name in it.
Result<InterfaceFilter> parseInterfaceFilter(std::string_view spec);

/// The address of the first of `interfaces` that `spec` allows, an IPv4 one before any IPv6
/// one. kInvalidArgument naming the value and listing the interfaces when none matches.
Result<std::string> chooseInterfaceAddress(std::string_view spec,
                                           const std::vector<NetInterface>& interfaces);

}  // namespace tutti
