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
// kMismatch naming the sizes.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "base/wait.h"
#include "transport/tag.h"
#include "tutti/status.h"

namespace tutti {

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

class Transport {
 public:
  virtual ~Transport() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  /// The link to `peer` (0 <= peer < size, peer != rank). Valid for the transport's lifetime.
  virtual Link& link(int peer) = 0;

  /// Notified after any request completes and when the transport fails.
  virtual WaitSignal& progressSignal() = 0;

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
};

}  // namespace tutti
