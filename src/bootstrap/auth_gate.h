#pragma once
// The authentication handshake (auth.h) over non-blocking sockets: HandshakeGate holds a
// listener's connections until they authenticate, HandshakeClient runs the connecting side.
//
// A listener must survive strangers: random bytes, wrong secrets, replays, and floods of
// connections that never say anything. The gate therefore
//   - reads at most kResponseBytes from a connection before it authenticates, into a buffer
//     inside a fixed array of kMaxPendingHandshakes slots: a stranger costs no allocation;
//   - closes a connection that has not authenticated within its timeout;
//   - when every slot is taken, closes the oldest pending connection once it has had
//     kEvictableAfter to answer, and until then leaves new connections in the kernel's
//     accept backlog (the caller stops accepting), so that idle connections cannot lock
//     honest peers out, and a burst of honest peers does not evict itself;
//   - logs every refusal at WARN with the remote address and the reason, the first
//     kRefusalsLogged individually and then every kRefusalLogInterval-th, so a flood cannot
//     flood the log as well.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/fd.h"
#include "base/log.h"
#include "bootstrap/auth.h"
#include "tutti/deadline.h"

namespace tutti::auth {

/// Connections one listener holds before they authenticate.
inline constexpr std::size_t kMaxPendingHandshakes = 64;
/// How long a pending connection is safe from eviction: an honest peer answers a challenge
/// within a scheduling delay, far below this; an idle one has had its chance by then.
inline constexpr std::chrono::milliseconds kEvictableAfter{250};
/// Refusals logged one by one; after that, one summary line per kRefusalLogInterval.
inline constexpr std::uint64_t kRefusalsLogged = 32;
inline constexpr std::uint64_t kRefusalLogInterval = 256;

/// A listener's connections that have not authenticated yet. Not thread-safe: one thread
/// (the listener's) drives it. Every call is non-blocking.
class HandshakeGate {
 public:
  /// What onReadable() found.
  enum class Progress {
    kPending,   ///< more bytes are due
    kAccepted,  ///< authenticated: take the socket with release()
    kClosed,    ///< refused or gone (logged and closed); the slot is free
  };

  /// `key` must outlive the gate. `timeout` bounds each handshake; `listenerName` names the
  /// listener in log lines ("store server on 10.0.0.1:29500"), logged under `subsys`.
  HandshakeGate(const Key& key, const Context& context, std::chrono::milliseconds timeout,
                std::string listenerName, log::Subsys subsys);
  HandshakeGate(const HandshakeGate&) = delete;
  HandshakeGate& operator=(const HandshakeGate&) = delete;

  /// Whether a connection may be accepted now: true when a slot is free, after closing the
  /// oldest pending connection if it has had kEvictableAfter. False otherwise: the caller
  /// leaves new connections in the backlog and asks again at nextDue().
  bool makeRoom();
  /// Takes a just-accepted non-blocking socket into a free slot (call makeRoom() first) and
  /// sends it the challenge. Returns the slot, or -1 when the socket was closed instead
  /// (the challenge could not be sent, or no random nonce; logged).
  int admit(UniqueFd fd);
  /// Reads what the slot's socket holds and, once the whole response is in, answers it.
  /// A free slot (a stale readiness event) reads as kClosed.
  Progress onReadable(int slot);
  /// Closes a pending connection for the caller's own reason (logged as a refusal).
  void drop(int slot, const char* reason);
  /// Takes an accepted connection out of its slot, freeing the slot; `*peer` receives the
  /// remote address ("10.0.0.2:41234").
  UniqueFd release(int slot, std::string* peer);
  /// Closes the pending connections whose timeout has passed (logged).
  void expire();
  /// Closes every connection still in a slot, without logging: the listener is going away.
  void closeAll();
  /// The next moment expire() or makeRoom() has something to do; never() when none.
  Deadline nextDue() const;

  /// The slot's socket, or -1 when the slot is free.
  int fd(int slot) const;
  static constexpr int slots() { return static_cast<int>(kMaxPendingHandshakes); }
  /// Connections waiting in slots.
  std::size_t pending() const { return used_; }
  /// Connections refused so far (wrong secret, bad bytes, silence, eviction).
  std::uint64_t refusals() const { return refusals_; }
  /// Why the latest one was refused, with its address ("" when none was).
  const std::string& lastRefusal() const { return lastRefusal_; }

 private:
  enum class State : std::uint8_t { kFree, kAwaitingResponse, kAccepted };
  struct Slot {
    State state = State::kFree;
    UniqueFd fd;
    Nonce nonce{};
    std::array<std::uint8_t, kResponseBytes> in{};
    std::size_t got = 0;
    Deadline::Clock::time_point admitted{};
    char peer[64] = {0};  // "host:port", filled at admission without allocating
  };

  // Closes the slot's connection and logs why (rate-limited).
  void refuse(Slot& slot, const char* reason);
  // Closes the slot's connection, if any, and marks it free.
  void clear(Slot& slot);

  const Key* key_;
  const Context context_;
  const std::chrono::milliseconds timeout_;
  const std::string listenerName_;
  const log::Subsys subsys_;
  std::array<Slot, kMaxPendingHandshakes> slots_;
  std::size_t used_ = 0;
  std::uint64_t refusals_ = 0;
  std::string lastRefusal_;
};

/// The connecting side of one handshake over a non-blocking socket. Holds a pointer to
/// `key`, which must outlive it.
class HandshakeClient {
 public:
  /// Draws the client nonce. kSystemError when the random generator fails.
  static Result<HandshakeClient> create(int fd, const Key& key, const Context& context);

  /// Reads what the socket holds, answering the challenge once it is complete. Returns true
  /// once the server has accepted and proved it holds the secret; false while bytes are
  /// due. Errors: kProtocolError (refused, a server without the secret, bytes that are not
  /// a handshake); kPeerFailure when the server closed the connection before its verdict
  /// (it was busy or this side was slow: a new connection may succeed); kSystemError.
  Result<bool> onReadable();
  int fd() const { return fd_; }

 private:
  HandshakeClient(int fd, const Key& key, const Context& context, const Nonce& nonce)
      : fd_(fd), handshake_(key, context, nonce) {}

  int fd_;
  ClientHandshake handshake_;
  std::array<std::uint8_t, kChallengeBytes> in_{};  // challenge, then verdict
  std::size_t got_ = 0;
  bool responded_ = false;
};

/// Runs the connecting side to its end on a non-blocking socket `fd`: OK when the server
/// accepted and proved itself. Errors as HandshakeClient::onReadable(), and kTimeout at
/// `deadline`.
Status authenticateToServer(int fd, const Key& key, const Context& context, Deadline deadline);

}  // namespace tutti::auth
