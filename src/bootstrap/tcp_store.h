#pragma once
// The TCP store: a server (run by tutti-run, or by rank 0 under other launchers) and a
// client implementing Store. The wire protocol is in store_protocol.h.

#include <cstdint>
#include <memory>
#include <string>

#include "base/net.h"
#include "tutti/store.h"

namespace tutti {

class TcpStoreServer {
 public:
  /// Most clients served at once; further connections are refused (closed at once).
  static constexpr int kMaxClients = 4096;

  /// Starts serving on host:port in a background thread. Port 0 picks an ephemeral port;
  /// host "" binds every interface.
  static Result<std::unique_ptr<TcpStoreServer>> start(const std::string& host,
                                                       std::uint16_t port);
  virtual ~TcpStoreServer() = default;

  /// The address clients connect to (the bound port; host as given to start(), or the
  /// loopback address when host was "").
  virtual HostPort address() const = 0;

  /// Stops serving and joins the thread; idempotent. Pending client waits fail.
  virtual void stop() = 0;
};

class TcpStoreClient : public Store {
 public:
  /// Connects to a server, retrying until `deadline` while it is not yet listening.
  static Result<std::shared_ptr<TcpStoreClient>> connect(const HostPort& server,
                                                         Deadline deadline);

  /// The local address of the connection to the server: the interface that routes to the
  /// store host, which is where this rank should accept its peers by default.
  virtual HostPort localAddress() const = 0;
};

}  // namespace tutti
