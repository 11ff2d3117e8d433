#pragma once
// TcpTransport: a full mesh of TCP connections between the ranks of a communicator, driven
// by one epoll loop thread.
//
// Establishment (create): every rank listens on an ephemeral port of the bind address (that
// interface only) and publishes host:port in the store; it then (1) connects to every lower
// rank, (2) runs every handshake at once in one poll loop: it authenticates to each lower
// rank (auth.h) and sends it a HELLO, and it challenges each connection to its listener,
// checks the HELLO of those that authenticate (communicator id, rank, size) and answers with
// its own, (3) reads the answers of the lower ranks. No phase waits on a later phase of
// another rank, so establishment cannot deadlock. Strangers (no or wrong key, replays, bad
// bytes, silence) are refused before a byte of theirs is read as a HELLO, logged, and
// dropped; at most auth::kMaxPendingHandshakes of them are held at once. The listener is
// closed afterwards.
//
// Why a full mesh: when a process dies, every rank holds a socket to it and sees the EOF at
// once, so every rank's pending operation fails naming the dead rank (DESIGN.md 7) even if
// the algorithm never talks to it directly.

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/fd.h"
#include "bootstrap/auth.h"
#include "transport/link.h"
#include "transport/tcp/tcp_link.h"
#include "tutti/store.h"

namespace tutti::tcp {

class TcpTransport final : public Transport {
 public:
  struct Options {
    int rank = 0;
    int size = 1;
    /// Identifies the communicator; connections carrying another id are refused.
    std::uint64_t commUid = 0;
    /// Address to listen on and publish (numeric or resolvable host).
    std::string bindHost = "127.0.0.1";
    /// Connections per peer (TUTTI_TCP_STREAMS; 0: auto, establish.h).
    int streams = 0;
    /// SO_SNDBUF and SO_RCVBUF of every connection (TUTTI_SOCKET_BUFFER_BYTES; 0: the
    /// kernel's autotuning).
    std::uint64_t socketBufferBytes = 0;
    /// The job key every connection proves in both directions. A default Key is the
    /// no-secret key: it authenticates nothing.
    auth::Key key;
    /// How long a connection to our listener has to authenticate (TUTTI_AUTH_TIMEOUT).
    std::chrono::milliseconds authTimeout{5000};
    std::uint64_t maxUnexpectedBytes = 64u << 20;
    /// Bounds the whole establishment.
    Deadline deadline = Deadline::afterSeconds(60);
  };

  /// Connects to every peer through `store` (keys "<keyPrefix>addr/<rank>") and starts the
  /// loop thread. Blocks until all links are up or the deadline passes (kTimeout naming the
  /// ranks that never connected).
  static Result<std::unique_ptr<TcpTransport>> create(Store& store, const std::string& keyPrefix,
                                                      const Options& options);
  /// Builds a transport over sockets that are already connected and checked (indexed by
  /// peer rank, invalid for self) and starts the loop thread. create() uses it after
  /// establishment; tests use it with socket pairs to play a misbehaving peer.
  static Result<std::unique_ptr<TcpTransport>> adopt(int rank, int size,
                                                     std::vector<UniqueFd> sockets,
                                                     const std::vector<std::string>& names,
                                                     std::uint64_t maxUnexpectedBytes);
  /// As above with several streams per peer (streams[peer][0] first; empty for self).
  static Result<std::unique_ptr<TcpTransport>> adopt(int rank, int size,
                                                     std::vector<std::vector<UniqueFd>> streams,
                                                     const std::vector<std::string>& names,
                                                     std::uint64_t maxUnexpectedBytes);
  ~TcpTransport() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Link& link(int peer) override;
  WaitSignal& progressSignal() override { return progress_; }
  void setDriving(bool driving) override;
  bool waitForProgress(std::uint32_t seen, Deadline deadline, std::int64_t spinNs) override;
  void interruptWait() override { notifyProgress(); }
  Status health() const override;
  void fail(const Status& status) override;
  void shutdown(Deadline deadline) override;
  /// Also checks what arrived before (TcpLink::checkBufferedArrivals): the loop thread
  /// reads from the start.
  void setCallChecker(CallChecker* checker) override;

  // --- for TcpLink ------------------------------------------------------------------------
  /// Records the first failure, tells every peer (ABORT frames naming the rank at fault)
  /// and wakes waiters. Later failures are ignored.
  void reportFailure(const Status& status);
  void modify(int fd, std::uint32_t events, PollTarget* target);
  /// Signals that requests completed (or the transport failed). When another thread is
  /// driving and may be blocked in epoll_wait, it is woken too: epoll wakes only one waiter
  /// per event, so a completion made on the loop thread would otherwise go unnoticed by the
  /// driver until its next event.
  void notifyProgress();
  /// Also tells `hook` (which must outlive the transport's traffic) of every progress.
  void setProgressHook(ProgressHook* hook) { hook_.store(hook, std::memory_order_release); }
  /// One look at the sockets without blocking and the handling of what is ready, by a
  /// thread that waits on another transport (HybridTransport).
  void pollNow() { pollOnce(0); }
  /// Where the calling thread drives this transport: stops driving it and wakes the loop
  /// thread at once (setDriving(false) lets it nap for up to 10 ms), so that a driver about
  /// to sleep elsewhere leaves the sockets served. False where this thread was not driving.
  bool handToLoop();
  void unwatch(int fd);

 private:
  TcpTransport(int rank, int size);
  Status startLoop(std::vector<std::vector<UniqueFd>> streams,
                   const std::vector<std::string>& names, std::uint64_t maxUnexpectedBytes);
  void loop();
  /// One epoll_wait of at most `timeoutMs` (0: poll) and the handling of its events.
  void pollOnce(int timeoutMs);

  const int rank_;
  const int size_;
  std::vector<std::unique_ptr<TcpLink>> links_;  // indexed by peer rank; null for self
  UniqueFd epoll_;
  UniqueFd wakeFd_;  // eventfd that interrupts epoll_wait for shutdown
  std::thread loopThread_;
  std::atomic<bool> stopping_{false};
  std::atomic<bool> failed_{false};
  std::atomic<std::uint32_t> drivers_{0};     // threads currently driving (0 or 1)
  std::atomic<ProgressHook*> hook_{nullptr};
  mutable std::mutex healthMutex_;
  Status health_;
  WaitSignal progress_;
  bool shutDown_ = false;
};

}  // namespace tutti::tcp
