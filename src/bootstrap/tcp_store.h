#pragma once
// The TCP store: a server (run by tutti-run, or by rank 0 under other launchers) and a
// client implementing Store. The wire protocol is in store_protocol.h.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "base/net.h"
#include "bootstrap/auth.h"
#include "tutti/store.h"

namespace tutti {

class TcpStoreServer {
 public:
  /// Most clients served at once; further connections are refused (closed at once).
  static constexpr int kMaxClients = 4096;

  /// How a server is run.
  struct Options {
    /// The job key every client must prove it holds (auth.h) before its first request is
    /// read. A default Key is the no-secret key: it authenticates nothing.
    auth::Key key;
    /// Most authenticated clients served at once (>= 1; tests use a small one).
    int maxClients = kMaxClients;
    /// How long a new connection has to authenticate (TUTTI_AUTH_TIMEOUT).
    std::chrono::milliseconds authTimeout{5000};
  };

  /// Starts serving on host:port in a background thread, bound to that address only.
  /// Port 0 picks an ephemeral port; host "" or "*" binds every interface (only when the
  /// caller asks for it explicitly). Every connection must complete the authentication
  /// handshake with options.key before anything it sends is read as a request; the
  /// unauthenticated ones are held in a bounded HandshakeGate (auth_gate.h).
  /// Fails with the listen error (kSystemError naming bind/listen and the address) or
  /// kInvalidArgument for a host that does not resolve or bad options. Strangers and
  /// malformed client messages never reach the caller: such a client is logged at WARN and
  /// disconnected.
  static Result<std::unique_ptr<TcpStoreServer>> start(const std::string& host, std::uint16_t port,
                                                       const Options& options);
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
/// set() and add() by the operation timeout given to connect(), and through
/// detail::setBefore() and detail::addBefore() (bounded_store.h) by the deadline given
/// there. get() and wait() send the time left to the server, which answers TIMEOUT naming
/// the keys still missing; the client itself gives up kReplyGrace after the deadline, so a
/// server that never answers still yields kTimeout. After a local timeout or a malformed
/// reply the connection is closed (the stream may be out of step) and the next call
/// reconnects. A reconnection the server refuses fails at once: having listened, the
/// server's process is gone. Errors: kPeerFailure ("store at host:port closed the
/// connection", "the store at host:port (served by rank 0) is gone: connection refused"),
/// kTimeout, kProtocolError for a reply that does not decode or does not match the
/// request, and the server's own error for an add() on a non-integer value
/// (kInvalidArgument).
class TcpStoreClient : public Store {
 public:
  /// set() and add() deadline when connect() is not given one; the TUTTI_TIMEOUT default.
  static constexpr std::chrono::milliseconds kDefaultOperationTimeout{300'000};
  /// How long past a get()/wait() deadline the client still waits for the server's own
  /// TIMEOUT reply, which names the missing keys and keeps the connection usable.
  static constexpr std::chrono::milliseconds kReplyGrace{500};

  /// Connects to a server and authenticates with `key` (the server must hold the same),
  /// retrying until `deadline` while it is not yet listening or closes the connection
  /// before its verdict (all its handshake slots busy). `operationTimeout` bounds each
  /// set() and add() (and reconnecting). `servedBy` names who serves the store ("rank 0",
  /// "tutti-run"; empty: unknown) in the error of a store gone. Errors: kTimeout naming the address if it never
  /// answers; kProtocolError when the server refuses this process's key ("... refused this
  /// process's authentication: the two do not hold the same job secret") or cannot prove
  /// it holds the key itself.
  static Result<std::shared_ptr<TcpStoreClient>> connect(
      const HostPort& server, const auth::Key& key, Deadline deadline,
      std::chrono::milliseconds operationTimeout = kDefaultOperationTimeout,
      const std::string& servedBy = "");

  /// The local address of the connection to the server: the interface that routes to the
  /// store host, which is where this rank should accept its peers by default.
  virtual HostPort localAddress() const = 0;
};

}  // namespace tutti
