#pragma once
// TcpLink: the connection to one peer over one TCP socket, or several (TUTTI_TCP_STREAMS).
//
// With several streams, stream 0 carries every frame as with one (headers, small messages,
// CLOSE, ABORT: their order and matching are one socket's), and a message of at least
// kStripeMinBytes is striped (wire.h): its DATA frame on stream 0 carries the first part,
// each other stream a PART frame with the next. The receiver routes the parts where the
// DATA frame's match put the message (the posted receive's buffer, at their offsets, or an
// unexpected buffer), so no part is copied twice. Any stream's failure fails the link.
//
// Sends are queued FIFO and written with sendmsg(header, payload) — first directly by the
// posting thread when the queue is empty (no thread hop on the fast path), otherwise by the
// loop thread when the socket becomes writable. All reads happen on the loop thread: a
// header is read and validated, then the payload goes straight into the matching posted
// receive, or into an "unexpected" buffer when the receive is not posted yet. Unexpected
// bytes per link are capped (TUTTI_TCP_MAX_UNEXPECTED, each message counting its entry as
// well as its payload); past the cap the link stops reading (TCP back-pressure) until a
// matching receive is posted.
//
// Locking: one mutex per link guards all of its state; the loop thread and posting threads
// take it. Completions are signalled after the lock is released.
//
// tcp_link.cc has the requests and the send side, tcp_link_read.cc the read side.

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/ring_queue.h"
#include "base/fd.h"
#include "transport/done_list.h"
#include "transport/link.h"
#include "transport/spare_pool.h"
#include "transport/tcp/wire.h"

namespace tutti::tcp {

class TcpTransport;
class TcpLink;

/// What the transport's epoll entries point to: a link's stream.
struct PollTarget {
  TcpLink* link = nullptr;
  int stream = 0;
};

/// Messages this large are striped across a link's streams (smaller ones go whole on
/// stream 0): a part of at least 128 KiB per stream keeps the extra headers and system
/// calls negligible.
inline constexpr std::size_t kStripeMinBytes = 256u << 10;

class TcpLink final : public Link {
 public:
  /// `fds`: the pair's streams, stream 0 first (at least one).
  TcpLink(TcpTransport* owner, int peer, std::vector<UniqueFd> fds, std::string peerName,
          std::uint64_t maxUnexpectedBytes);
  ~TcpLink() override;

  int peer() const override { return peer_; }
  void postSend(TransferRequest* request, Tag tag, const void* data, std::size_t bytes) override;
  void postRecv(TransferRequest* request, Tag tag, void* data, std::size_t bytes) override;
  void cancel(TransferRequest* request) override;

  /// Stream `stream`'s socket and epoll target (0 <= stream < streams()).
  int fd(int stream = 0) const;
  PollTarget* pollTarget(int stream);
  int streams() const { return 1 + static_cast<int>(extra_.size()); }
  const std::string& peerName() const { return peerName_; }

  // --- called by the transport's loop thread -------------------------------------------
  /// Handles epoll readiness `events` (EPOLLIN/OUT/HUP/ERR) for one stream's socket.
  void onEvents(int stream, std::uint32_t events);
  /// Queues a CLOSE frame (orderly goodbye) after every queued send.
  void queueClose();
  /// Queues an ABORT frame carrying `status` (text, code and the rank at fault) after every
  /// queued send; supersedes a CLOSE. Sent once per link.
  void queueAbort(const Status& status);
  /// True when nothing is left to write (or the link is dead).
  bool sendsDrained();
  /// True when the peer's kernel has acknowledged every byte written (or the socket is
  /// closed or broken): closing the socket then loses nothing of ours.
  bool writesAcknowledged();
  /// Reads and drops whatever input is available, then closes the sockets.
  void closeSocket();

  /// Gives the messages buffered before the transport had a call checker (the loop thread
  /// reads from the moment the link is up, before the communicator sets its checker) to the
  /// checker now; a conflict fails the transport as on arrival.
  void checkBufferedArrivals();

  /// Unexpected messages buffered now, and whether reading stopped at the cap on them
  /// (tests, diagnostics).
  std::size_t unexpectedMessages();
  bool readsPaused();

  /// The ABORT frame carrying `status` (tag: the rank at fault + 1, or 0).
  static std::vector<std::uint8_t> abortFrame(const Status& status);

 private:
  struct Unexpected {
    Tag tag = 0;
    CallStamp stamp;
    std::vector<char> data;  // its first `length` bytes (SparePool keeps it larger)
    std::size_t length = 0;
    std::size_t received = 0;
    TransferRequest* claimedBy = nullptr;  // a receive posted while the payload streams in
  };
  // Charged per buffered message against the cap, besides its payload.
  static constexpr std::uint64_t kEntryBytes = sizeof(Unexpected) + kUnexpectedOverheadBytes;
  // Bytes read at a time from a frame nobody takes, or from a socket being closed.
  static constexpr std::size_t kDiscardChunk = 64u << 10;
  enum class ReadState {
    kHeader,
    kPayloadToRequest,
    kPayloadToUnexpected,
    kDiscard,
    kPaused,
    kAbortPayload
  };

  // A part of a striped message on an extra stream: to write (request: the send, data its
  // bytes or null for zeros) or to read (request or unexpected: where it goes; neither:
  // dropped).
  struct Part {
    TransferRequest* request = nullptr;
    Unexpected* unexpected = nullptr;
    const char* data = nullptr;
    Tag tag = 0;
    std::uint64_t offset = 0;
    std::uint64_t length = 0;
    std::uint64_t total = 0;
    std::uint64_t progress = 0;  // bytes written (header included) or payload read
    HeaderBytes header{};        // sends
  };
  // Stream 1.. of the link: PART frames only.
  struct Stream {
    PollTarget target;
    UniqueFd fd;
    RingQueue<Part> sends;
    RingQueue<Part> expected;  // parts to read, in the order of their DATA frames
    HeaderBytes readHeader{};
    std::size_t headerGot = 0;
    FrameHeader held;           // the PART header read (headerGot == kHeaderBytes)
    bool eof = false;           // ended at a frame boundary with nothing expected
    std::uint32_t interest = 0;
  };

  // Everything *Locked() runs with mutex_ held and appends finished requests to `done`.
  bool stripedBytes(std::uint64_t bytes) const {
    return !extra_.empty() && bytes >= kStripeMinBytes;
  }
  // Bytes of a message's DATA frame payload (all of it, or its first part when striped).
  std::uint64_t firstPartBytes(std::uint64_t bytes) const {
    return stripedBytes(bytes) ? stripePart(bytes, streams(), 0).length : bytes;
  }
  // Queues the other parts of `request` (whose DATA frame started) on the extra streams.
  void queuePartsLocked(TransferRequest* request, DoneList& done);
  // Whether `request` (a send) still has a frame or part to write on any stream.
  bool sendPendingLocked(const TransferRequest* request) const;
  void trySendStreamLocked(Stream& s, DoneList& done);
  void readStreamLocked(int index, Stream& s, DoneList& done);
  // Tells each extra stream where the next part of the striped message of `header` goes
  // (`request`, `unexpected`, or neither: dropped).
  void expectPartsLocked(const FrameHeader& header, TransferRequest* request,
                         Unexpected* unexpected);
  // Bytes [got] of a message arrived (on any stream) for `request` / `unexpected`:
  // completes it when whole.
  void receivedLocked(TransferRequest* request, Unexpected* unexpected, std::size_t got,
                      DoneList& done);
  // Starts dropping the payload of `header` (refused, a probe, a conflict).
  void discardPayloadLocked(const FrameHeader& header);
  void trySendLocked(DoneList& done);
  /// Why a write failed with `error`: what the peer's last frames say (read first), else
  /// the failed write.
  Status sendErrorLocked(int error, DoneList& done);
  void handleHeaderLocked(const FrameHeader& header, DoneList& done);
  void readLocked(DoneList& done);  // reads frames until EAGAIN, failure or the budget
  bool readPayloadLocked(DoneList& done);  // false when the socket has no more data
  void startPayloadLocked(const FrameHeader& header, DoneList& done);
  /// Gives a message no receive matched (or a probe, tag.h) to the call checker; true, the
  /// conflict kept in callConflict_, when it conflicts with this rank's call.
  bool arrivalConflictsLocked(const FrameHeader& header);
  void failLocked(const Status& status, DoneList& done);
  void completeLocked(TransferRequest* request, Status status, DoneList& done);
  void updateInterestLocked();
  /// Removes unexpected_[it] and keeps its record (and buffer) for the next one.
  void recycleLocked(RingQueue<std::unique_ptr<Unexpected>>::iterator it);
  void queueControlLocked(std::vector<std::uint8_t> frame, DoneList& done);
  /// Before failing the link on bytes from the peer that do not parse: writes an ABORT with
  /// `status` at once, best effort, when no frame is half written (the peer's reading
  /// direction is intact, and it is the rank most in need of the reason; the transport's
  /// own ABORTs skip a failed link).
  void abortNowLocked(const Status& status);
  void finishAbortLocked(DoneList& done);
  void finish(DoneList& done, const Status& failure);
  // The failure to report once unlocked: the link's, else a call conflict (once).
  Status failureToReportLocked();

  TcpTransport* owner_;
  const int peer_;
  UniqueFd fd_;  // stream 0
  PollTarget target_;
  std::vector<std::unique_ptr<Stream>> extra_;  // streams 1..
  const std::string peerName_;
  const std::uint64_t maxUnexpectedBytes_;

  std::mutex mutex_;
  // send side
  RingQueue<TransferRequest*> sendQueue_;
  HeaderBytes sendHeader_{};
  // A send cancelled part-way keeps its place on the wire: the rest of its bytes go out as
  // zeros from this stand-in, so the stream stays framed and an ABORT can still follow.
  std::unique_ptr<TransferRequest> orphan_;
  // The one control frame (CLOSE or ABORT) this link sends, after the queued data.
  std::vector<std::uint8_t> control_;
  std::size_t controlProgress_ = 0;
  bool controlQueued_ = false;
  bool controlSent_ = false;
  // receive side
  RingQueue<TransferRequest*> posted_;
  RingQueue<std::unique_ptr<Unexpected>> unexpected_;
  SparePool<Unexpected> spare_;  // finished records, buffers kept
  std::uint64_t unexpectedBytes_ = 0;
  ReadState readState_ = ReadState::kHeader;
  HeaderBytes readHeader_{};
  std::size_t headerGot_ = 0;
  FrameHeader pausedHeader_;
  TransferRequest* readTarget_ = nullptr;
  Unexpected* readUnexpected_ = nullptr;
  // Where stream 0's payload being read lies in its message: [readPos_, readEnd_).
  std::uint64_t readPos_ = 0;
  std::uint64_t readEnd_ = 0;
  std::uint64_t discardLeft_ = 0;
  FrameHeader abortHeader_;
  std::string abortText_;
  std::size_t abortGot_ = 0;
  // lifecycle
  bool peerClosed_ = false;  // the peer sent CLOSE: it left on purpose
  bool eof_ = false;
  Status failure_;           // set once the link is dead
  // A message that conflicts with this rank's call (CallChecker): fails the whole
  // transport, which must happen after the link's mutex is released (reported once,
  // conflictReported_). It stays set: the link reads nothing more meanwhile.
  Status callConflict_;
  bool conflictReported_ = false;
  std::uint32_t interest_ = 0;
};

}  // namespace tutti::tcp
