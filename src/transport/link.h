#pragma once
// The transport interface (DESIGN.md 5): a Transport connects this rank to every peer of a
// communicator; a Link moves tagged byte ranges to and from one peer.
//
// Requests are owned by the caller (the executor keeps them in a pool, so nothing is
// allocated per message). A posted request is completed by the transport, possibly on its
// own thread; completion sets `state` to kDone with release ordering and then notifies the
// transport's progress signal. A request that has not completed must be cancel()ed before
// its memory or buffer goes away.
//
// Matching: a receive matches the oldest message from that peer with the same tag, and
// messages with equal tags are received in the order they were sent. A message must be
// received with exactly the length it was sent with; otherwise both requests fail with
// kMismatch naming the sizes. A receive whose stamp conflicts with the sender's fails with
// kMismatch and the sender's stamp in peerStamp, before any byte lands in its buffer; the
// send itself completes normally (the receiver reports the error and fails the transport).
// A probe (tag.h) is never matched: its stamp goes to the call checker, and it is dropped.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "base/wait.h"
#include "transport/tag.h"
#include "tutti/status.h"

namespace tutti {

/// What a collective call looks like on the wire (mismatch detection, DESIGN.md 7): every
/// message of a collective carries its sender's stamp, and a receiver whose own call has a
/// different stamp fails with kMismatch instead of receiving bytes it would misread. The
/// core packs it (core/call_stamp.h) and is the only layer that interprets it;
/// transports compare and carry it. All zero means "not checked" (point to point).
struct CallStamp {
  std::uint64_t what = 0;   // what the call is (collective, dtype, op, ...), packed by core
  std::uint64_t count = 0;  // the call's count (a hash of the counts for v-collectives)
  /// Bits of `what` this rank has not decided yet (they are 0 in `what`): a stamp with open
  /// bits agrees with any stamp that differs from it only there. Only a rank agreeing with
  /// the others on what a choice depends on sends one, and only through a flat exchange
  /// (FlatExchange) and the call checker; a message's stamp has none (links carry what and
  /// count only, and assert it).
  std::uint64_t open = 0;

  bool empty() const { return what == 0 && count == 0; }
  friend bool operator==(const CallStamp&, const CallStamp&) = default;
};

/// What one buffered unexpected message holds beyond its payload, on top of the link's own
/// entry for it: the allocator's and the queue's share. Links count entry and share against
/// their cap on unexpected bytes, so that a flood of empty or tiny messages is bounded as
/// surely as a flood of large ones (an empty message would otherwise cost nothing).
inline constexpr std::uint64_t kUnexpectedOverheadBytes = 64;

/// How often a call looks for messages earlier calls left unread (Transport::readStrays):
/// the look reads the heads of the inbound rings, which a peer may be writing for the call
/// that begins (a broadcast's leaf); that line's extra round trip cost a 2-rank 8-byte
/// reduce over shared memory a quarter of its time when every call looked. Any wait reads
/// every link anyway, and the communicator's farewell reads what is left.
inline constexpr std::uint64_t kStrayCheckCalls = 64;

/// Requests a link's queues (sends, posted receives) hold without growing: twice the
/// executor's default window (TUTTI_MAX_INFLIGHT, 16).
inline constexpr std::size_t kQueuedRequests = 32;

/// True when both stamps are set and differ outside the bits either leaves open: the two
/// ends run different calls.
inline bool stampsConflict(const CallStamp& a, const CallStamp& b) {
  if (a.empty() || b.empty()) return false;
  return ((a.what ^ b.what) & ~(a.open | b.open)) != 0 || a.count != b.count;
}

class TransferRequest;
class Link;

/// Fails `request` (a receive) because `peer` sent a message of another call, stamped
/// `remote`: records it in request->peerStamp and returns the kMismatch to complete the
/// request with. The executor, which knows how to describe calls, words the final error.
Status stampMismatch(TransferRequest* request, int peer, const std::string& peerName,
                     const CallStamp& remote);

/// Takes a received message piece by piece instead of a buffer (TransferRequest::combine):
/// a reduction that combines each piece where the link holds it saves copying the message
/// into a staging buffer first.
class PieceSink {
 public:
  virtual ~PieceSink() = default;
  /// Pieces start and end on multiples of this many bytes (a reduction's element size).
  virtual std::size_t granule() const = 0;
  /// Consumes bytes [offset, offset + bytes) of the message. Called on the thread that makes
  /// progress, while the receive is pending; pieces may come in any order, each once.
  virtual void take(std::size_t offset, const char* piece, std::size_t bytes) const = 0;
  /// As take(), but writes the result for bytes [offset, offset + bytes) at `into` instead
  /// of the destination (TransferRequest::feedsOnly: straight into a send's buffers).
  virtual void takeInto(std::size_t offset, const char* piece, std::size_t bytes,
                        char* into) const = 0;
  /// Where take() puts the result for byte 0 of the message: a link that computed a piece
  /// with takeInto for a send (TransferRequest::feeds) copies it from there to here, at
  /// the piece's offset, when the receive wants the result stored too (not feedsOnly).
  virtual char* destination() const = 0;
};

class TransferRequest {
 public:
  enum State : std::uint32_t { kIdle = 0, kPending = 1, kDone = 2 };

  bool done() const { return state.load(std::memory_order_acquire) == kDone; }
  /// Valid once done(): OK, or why the transfer failed.
  const Status& status() const { return status_; }

  // --- fields below belong to the link while the request is pending ---------------------
  std::atomic<std::uint32_t> state{kIdle};
  Status status_;
  Tag tag = 0;
  char* data = nullptr;      // send source or receive destination
  std::size_t bytes = 0;     // length of the message
  std::size_t progress = 0;  // bytes moved so far
  /// Set by the poster: the call this message belongs to (sent along with a send; a
  /// receive checks the sender's against it).
  CallStamp stamp;
  /// Set by the link when a receive fails because the sender's stamp differs: the sender's.
  CallStamp peerStamp;
  /// Set by the poster of a receive (null otherwise): a link that holds the message's bytes
  /// in memory of its own (a ring slot, a buffered early message) may hand them to this sink
  /// instead of copying them into `data`. Links that cannot ignore it.
  const PieceSink* combine = nullptr;
  /// Cleared by the poster; set by a link that handed the whole message to `combine`
  /// (`data` then holds nothing). Valid once done().
  bool combined = false;
  /// Set by the poster of a send whose receiver reduces it: a link that could let the
  /// receiver read the message in place (rendezvous) copies it through its own buffers
  /// instead, where the receiver reduces each piece as it arrives (`combine`).
  bool preferCopy = false;
  /// Set by the poster of a send (null otherwise): a local destination that should also
  /// receive the message's bytes (a schedule's copy of the same source). A link that copies
  /// the message through buffers of its own may write each piece there too, in the same
  /// pass, so the source is read once; it then sets `mirrored`. Links that
  /// cannot ignore it, and the poster copies. Must not overlap `data`. Set only where
  /// Link::copiesSend says yes: the copy then completes with the send, which must not
  /// wait for its receiver.
  char* mirror = nullptr;
  /// Set by the poster of a send: a link that copies the message into buffers of its own
  /// writes them with streaming stores (past its caches, so its reader fetches the pieces
  /// from memory rather than from this core's cache), where the message has at least the
  /// transport's streamedFrom() bytes.
  bool streamPieces = false;
  /// Cleared by the poster; set by a link that wrote the whole message to `mirror`. Valid
  /// once done().
  bool mirrored = false;
  /// Set by the poster of a receive (null otherwise) where Link::canFeed said yes: a send
  /// already posted on another link of the same transport whose source is where this
  /// receive's bytes end up (`data`, or the combine sink's destination). The link raises
  /// feeds->fedBytes as whole pieces land there and lets the send copy them at once, while
  /// they are in cache, instead of after the whole message.
  TransferRequest* feeds = nullptr;
  /// Set with `feeds` where the destination is wanted only as the send's source (a
  /// schedule's forward-only step): the link may write a piece's result straight into the
  /// send's buffers (PieceSink::takeInto) and never into the destination.
  bool feedsOnly = false;
  /// Set by the poster of a receive: the size of the whole buffer the message's destination
  /// is a part of (a schedule step's region of the call's output); 0: the message alone. A
  /// link that picks how to store bytes (past the caches, non-temporal) may count it.
  std::size_t destinationBytes = 0;
  /// Set by the poster of a send (false otherwise): its source fills in while the send is
  /// pending, through a receive (`feeds`) or Link::feed; only bytes [0, fedBytes) may be
  /// read. Such a send that has not started does not hold up the sends queued behind it.
  bool fed = false;
  std::size_t fedBytes = 0;
  /// Set by a link that feeds sends (postSend): the link the send was posted on.
  Link* postedOn = nullptr;
  TransferRequest* next = nullptr;  // intrusive queue link
};

class Link {
 public:
  virtual ~Link() = default;

  /// The peer's rank in the communicator.
  virtual int peer() const = 0;

  /// Starts sending `bytes` bytes at `data` under `tag`. Never blocks. The buffer must stay
  /// valid and unchanged until the request is done or cancelled.
  virtual void postSend(TransferRequest* request, Tag tag, const void* data,
                        std::size_t bytes) = 0;

  /// Whether a send of `bytes` at `data` under `tag` (TransferRequest::preferCopy as given)
  /// would be copied whole into this link's own buffers, so that it completes without its
  /// receive being posted (given room) and writes TransferRequest::mirror. False by default.
  virtual bool copiesSend(Tag /*tag*/, const void* /*data*/, std::size_t /*bytes*/,
                          bool /*preferCopy*/) const {
    return false;
  }

  /// Whether a receive on this link may feed (TransferRequest::feeds) a send of `bytes` at
  /// `data` under `tag` posted on `to`: both links move bytes under one lock and the send
  /// would be copied through its link's buffers (copiesSend). False by default.
  virtual bool canFeed(const Link& /*to*/, Tag /*tag*/, const void* /*data*/,
                       std::size_t /*bytes*/, bool /*preferCopy*/) const {
    return false;
  }

  /// Bytes [0, bytes) of the fed send `request`, pending on this link, are in its source
  /// now (its poster computed them): the link may copy them. Any thread.
  virtual void feed(TransferRequest* /*request*/, std::size_t /*bytes*/) {}

  /// Starts receiving a message with `tag` of exactly `bytes` bytes into `data`. Never blocks.
  virtual void postRecv(TransferRequest* request, Tag tag, void* data, std::size_t bytes) = 0;

  /// Withdraws a pending request. On return the link no longer touches the request or its
  /// buffer. Cancelling a send that is partly on the wire breaks the link (the stream can no
  /// longer be framed), which fails the communicator. No-op for completed requests.
  virtual void cancel(TransferRequest* request) = 0;
};

/// Told whenever a transport signals progress (completions, failure), from whichever
/// thread made it. Lets one transport's waiter sleep on another's wake-up (HybridTransport).
class ProgressHook {
 public:
  virtual ~ProgressHook() = default;
  virtual void onProgress() = 0;
};

/// Another transport whose progress a waiter makes as it waits on its own (HybridTransport:
/// the TCP side, driven by the thread that waits on the shared-memory side). The waiter
/// looks at it without blocking while it polls, and hands it back to a thread of its own
/// while it sleeps.
class WaitPartner {
 public:
  virtual ~WaitPartner() = default;
  /// One look for progress, without blocking; what completes signals as it always does.
  virtual void poll() = 0;
  /// The waiter is about to sleep: true where it held the partner and handed it to the
  /// partner's own thread, to be taken back by afterSleep(true).
  virtual bool beforeSleep() = 0;
  virtual void afterSleep(bool handedOver) = 0;
};

class CallChecker;
class TransportExtension;

class LoopbackLink;

class Transport {
 public:
  Transport();
  virtual ~Transport();

  /// From now on, every collective message is checked against `checker` when it arrives
  /// (see call_checker.h); a conflict fails the transport with the checker's kMismatch.
  /// Null: not checked. The checker must outlive the transport. Any thread.
  virtual void setCallChecker(CallChecker* checker) {
    checker_.store(checker, std::memory_order_release);
  }
  /// The checker set, or null. Any thread.
  CallChecker* callChecker() const { return checker_.load(std::memory_order_acquire); }
  /// True when this transport checks arrivals (CallChecker::onArrival) only on the threads
  /// that run the communicator's calls, never on a thread of its own; the checker can then
  /// skip its cross-thread handshake (CallChecker::setConcurrentArrivals).
  virtual bool arrivalsOnCallingThreads() const { return false; }

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// The link to `peer` (0 <= peer < size, peer != rank). Valid for the transport's lifetime.
  virtual Link& link(int peer) = 0;
  /// The link from this rank to itself (a point-to-point send to self): a LoopbackLink
  /// (loopback.h), the same for every transport, made on first use. Valid for the
  /// transport's lifetime.
  Link& loopback();
  /// link(peer) for another rank, loopback() for this one.
  Link& linkTo(int peer) { return peer == rank() ? loopback() : link(peer); }

  /// Notified after any request completes and when the transport fails.
  virtual WaitSignal& progressSignal() = 0;

  /// Called by the driving thread as collective call `seq` begins, for every
  /// kStrayCheckCalls-th call: reads what peers sent for earlier calls and left unread, so
  /// that the call checker (CallChecker::onArrival) sees it although no wait may come to
  /// read it: a broadcast root's message to a rank that took another root, which that
  /// rank's call never received. A conflict fails the transport. Cheap when nothing is
  /// there. Transports whose own thread reads every arrival need nothing here.
  virtual void readStrays(std::uint64_t seq) { (void)seq; }

  /// Marks the calling thread as the one driving progress (true) or not (false). While a
  /// thread drives, waitForProgress() moves bytes on that thread, so a message costs one
  /// wake-up instead of two (background thread, then waiter); the transport's own thread
  /// stands back. Calls nest per transport; only one thread at a time may drive.
  virtual void setDriving(bool driving) = 0;

  /// Called by the driving thread: makes progress until progressSignal() differs from
  /// `seen` or the deadline passes, spinning (polling without blocking) for about `spinNs`
  /// before it blocks. May return early; callers re-check their condition. Returns false
  /// only when the deadline has passed.
  virtual bool waitForProgress(std::uint32_t seen, Deadline deadline, std::int64_t spinNs) = 0;

  /// The optional capability named `name` (an extension's kName, extensions.h), or null
  /// where this transport lacks it. Core asks for what it can use and works without any:
  /// a transport implements the members above and nothing else until it has the mechanism.
  virtual TransportExtension* extension(std::string_view name) {
    (void)name;
    return nullptr;
  }
  /// extension(T::kName) as a T.
  template <typename T>
  T* find() {
    return static_cast<T*>(extension(T::kName));
  }

  /// Makes a waitForProgress() on another thread return soon: that thread has been given
  /// more to do (a call queued behind the ones it drives). Any thread.
  virtual void interruptWait() = 0;

  /// OK while healthy; after a peer failure or protocol error, the first such error (it
  /// names the peer). Requests pending at that moment complete with errors too.
  virtual Status health() const = 0;

  /// Marks the transport failed with `status` (first failure wins) and fails every pending
  /// request. Used by the executor on timeouts and by abort().
  virtual void fail(const Status& status) = 0;

  /// Tells every peer this rank is leaving, flushes queued sends (bounded by `deadline`) and
  /// releases sockets and threads. Peers that later wait on this rank get kPeerFailure
  /// saying it left. Idempotent.
  virtual void shutdown(Deadline deadline) = 0;

 private:
  std::atomic<CallChecker*> checker_{nullptr};
  std::once_flag loopbackMade_;
  std::unique_ptr<LoopbackLink> loopback_;
};

}  // namespace tutti
