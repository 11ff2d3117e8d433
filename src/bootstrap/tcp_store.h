#pragma once
// The TCP store: a server (run by tutti-run, or by rank 0 under other launchers) and a
// client implementing Store. The wire protocol is in store_protocol.h.

#include <chrono>
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
  /// Fails with the listen error (kSystemError naming bind/listen and the address) or
  /// kInvalidArgument for a host that does not resolve. Malformed client messages never
  /// reach the caller: such a client is logged at WARN and disconnected.
  static Result<std::unique_ptr<TcpStoreServer>> start(const std::string& host, std::uint16_t port);
  /// As above, serving at most `maxClients` (>= 1) connections at once (tests use a small one).
  static Result<std::unique_ptr<TcpStoreServer>> start(const std::string& host, std::uint16_t port,
                                                       int maxClients);
  /// Destroying the server stops it (the implementation's destructor calls stop()).
  virtual ~TcpStoreServer() = default;

  /// The address clients connect to (the bound port; host as given to start(), or the
  /// loopback address when host was "").
  virtual HostPort address() const = 0;

  /// Stops serving and joins the thread; idempotent and safe to call from any thread but
  /// the server's own. Every connection is closed, so pending client waits fail with
  /// kPeerFailure; the stored keys are discarded.
  virtual void stop() = 0;
};

/// A Store over one TCP connection. Thread-safe: one request is in flight at a time (a
/// mutex is held across each request and its reply, so a long get() delays other threads'
/// calls on the same client). Every call is bounded: get() and wait() by their deadline,
/// set() and add() by the operation timeout given to connect(), and set() through
/// detail::setBefore() (bounded_store.h) by the deadline given there. get() and wait() send the
/// time left to the server, which answers TIMEOUT naming the keys still missing; the client
/// itself gives up kReplyGrace after the deadline, so a server that never answers still
/// yields kTimeout. After a local timeout or a malformed reply the connection is closed
/// (the stream may be out of step) and the next call reconnects. Errors: kPeerFailure
/// ("store at host:port closed the connection"), kTimeout, kProtocolError for a reply that
/// does not decode or does not match the request, and the server's own error for an add()
/// on a non-integer value (kInvalidArgument).
class TcpStoreClient : public Store {
 public:
  /// set() and add() deadline when connect() is not given one; the TUTTI_TIMEOUT default.
  static constexpr std::chrono::milliseconds kDefaultOperationTimeout{300'000};
  /// How long past a get()/wait() deadline the client still waits for the server's own
  /// TIMEOUT reply, which names the missing keys and keeps the connection usable.
  static constexpr std::chrono::milliseconds kReplyGrace{500};

  /// Connects to a server, retrying until `deadline` while it is not yet listening
  /// (kTimeout naming the address if it never does).
  static Result<std::shared_ptr<TcpStoreClient>> connect(const HostPort& server, Deadline deadline);
  /// As above, with the deadline applied to each set() and add() (and to reconnecting).
  static Result<std::shared_ptr<TcpStoreClient>> connect(
      const HostPort& server, Deadline deadline, std::chrono::milliseconds operationTimeout);

  /// The local address of the connection to the server: the interface that routes to the
  /// store host, which is where this rank should accept its peers by default.
  virtual HostPort localAddress() const = 0;
};

}  // namespace tutti
