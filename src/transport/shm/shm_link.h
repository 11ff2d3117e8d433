#pragma once
// ShmLink: the two rings between this rank and one peer (shm_transport.h has the design):
// shm_link_send.cc sends, shm_link.cc receives and matches, shm_rendezvous.cc copies
// rendezvous messages between the processes.
// Every method that ends in Locked runs with the transport's mutex held and appends the
// requests it completed to `done`; the transport signals them after unlocking.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/ring_queue.h"
#include "transport/done_list.h"
#include "transport/link.h"
#include "transport/spare_pool.h"
#include "transport/shm/segment.h"

namespace tutti::shm {

class ShmTransport;

class ShmLink final : public Link {
 public:

  /// `peerSegment` is the peer's segment (this rank's outbound ring lives there), `own`
  /// this rank's (the inbound ring and the acks of this rank's rendezvous sends).
  ShmLink(ShmTransport* owner, int peer, const Segment* own, const Segment* peerSegment);

  int peer() const override { return peer_; }
  void postSend(TransferRequest* request, Tag tag, const void* data, std::size_t bytes) override;
  /// True unless the send would go by rendezvous (byRendezvous).
  bool copiesSend(Tag tag, const void* data, std::size_t bytes, bool preferCopy) const override;
  void postRecv(TransferRequest* request, Tag tag, void* data, std::size_t bytes) override;
  void cancel(TransferRequest* request) override;
  /// True when `to` is a link of the same transport that copies the send (copiesSend).
  bool canFeed(const Link& to, Tag tag, const void* data, std::size_t bytes,
               bool preferCopy) const override;
  void feed(TransferRequest* request, std::size_t bytes) override;

  /// Copies queued sends into the peer's ring while it has room. True when anything moved.
  bool pumpSendsLocked(DoneList& done);
  /// Consumes the inbound ring. True when anything moved.
  bool drainLocked(DoneList& done);
  /// Writes unclaimed pieces of this rank's rendezvous sends that the peer has started
  /// into the peer's buffer (RndvShare), then completes the sends the peer has acked.
  bool checkAcksLocked(DoneList& done);
  /// Completes the rendezvous receives whose last pieces the peer was still writing.
  bool checkHelpedLocked(DoneList& done);
  /// Starts the shared receives whose reading was deferred (readRendezvousLocked): left to
  /// the sender if they are exchanges by now, else read. Before this rank writes its own
  /// sends on the same pass, so that its decision does not see them acked already.
  bool startDeferredLocked(DoneList& done);
  /// Acks and completes helped_[id] if every piece is claimed and written (false if not,
  /// or if its reading is still deferred).
  bool finishHelpedLocked(std::size_t id, DoneList& done);
  /// True while a request on this link still needs the peer.
  bool needsPeerLocked() const;
  /// True while sends are queued or being read.
  bool sendsPendingLocked() const;
  /// The inbound ring's tail, plus one when the slot there is published: it grows when a
  /// message arrives and stays put while nothing does (a consumed message moves the tail
  /// past the slot that made it count). The waiter's spin watches it without the mutex.
  std::uint64_t arrivals() const {
    const std::uint64_t tail = in_.tail->load(std::memory_order_acquire);
    return tail + (in_.published(tail) ? 1 : 0);
  }
  /// True when the inbound ring's next slot is published and holds a message of a
  /// collective call before `call` (a collective tag): one the rank's earlier calls never
  /// read. Reads two lines of this rank's own segment; no mutex.
  bool holdsEarlierCall(Tag call) const {
    const std::uint64_t tail = in_.tail->load(std::memory_order_acquire);
    if (!in_.published(tail)) return false;
    // The sender wrote the tag before publishing, and rewrites the slot only once the tail
    // has moved past it, which only this rank does.
    return isEarlierCall(in_.header(tail)->tag, call);
  }
  /// The outbound ring's tail as the peer last published it (it only grows).
  std::uint64_t outTail() const { return out_.tail->load(std::memory_order_acquire); }
  /// Completes every pending request with `status` and forgets them.
  void failAllLocked(const Status& status, DoneList& done);

  /// Bytes of unexpected messages buffered here now. Needs the transport's mutex.
  std::uint64_t unexpectedBytesLocked() const { return unexpectedBytes_; }
  /// Unexpected messages buffered here now (rendezvous offers included). Needs the mutex.
  std::size_t unexpectedMessagesLocked() const { return unexpected_.size(); }
 private:
  /// A rendezvous message as its slot describes it: where it lies in the sender.
  struct Offer {
    std::uint64_t remoteAddr = 0;
    std::uint64_t rndvId = 0;
    std::uint64_t rndvSeq = 0;
    BufferRef buffer;  // the memAlloc buffer around remoteAddr, if any
  };
  struct Unexpected {
    Tag tag = 0;
    CallStamp stamp;
    std::uint64_t bytes = 0;
    std::vector<char> data;        // eager: the payload, filled as pieces arrive
    std::uint64_t received = 0;
    bool rendezvous = false;       // the message waits in the sender's memory
    Offer offer;                   // rendezvous: where
    TransferRequest* claimedBy = nullptr;  // a receive posted while pieces still arrive
  };

  // Charged per buffered message against the cap, besides its payload.
  static constexpr std::uint64_t kEntryBytes = sizeof(Unexpected) + kUnexpectedOverheadBytes;

  void completeLocked(TransferRequest* request, Status status, DoneList& done) {
    request->status_ = std::move(status);
    request->state.store(TransferRequest::kDone, std::memory_order_release);
    done.add(request);
  }
  /// Starts a message whose first slot is `h`: to a posted receive or an unexpected buffer.
  /// False when it must wait (unexpected space exhausted) or the transport failed.
  bool startMessageLocked(const SlotView& h, DoneList& done);
  /// Starts the message of `h` into the posted receive `it` matched (or refuses it there).
  inline bool startMatchedLocked(const SlotView& h, RingQueue<TransferRequest*>::iterator it,
                                 DoneList& done);
  /// Whether the message of `h`, which no receive wants yet, may be buffered now: within
  /// the cap on unexpected bytes and the run-ahead allowance (Options::runAheadBytes).
  bool mayBufferLocked(const SlotView& h) const;
  /// Gives the stamp of `h` (a message no receive matched, or a probe) to the call
  /// checker; false when it conflicts (the transport has failed).
  bool arrivalAgreesLocked(const SlotView& h, DoneList& done);
  /// The message of `h` goes nowhere: its pieces are consumed and dropped.
  void dropMessageLocked(const SlotView& h);
  /// Takes the probe (tag.h) whose slot is `h`: its stamp to the call checker, then
  /// dropped. False when it conflicts (the transport has failed).
  bool takeProbeLocked(const SlotView& h, DoneList& done);
  /// Takes the piece of slot `h` (kData) into the message under way. False when it is
  /// malformed (the transport has failed).
  inline bool takePieceLocked(const SlotView& h, DoneList& done);
  /// After the last piece of the message under way: completes its receive, or a receive
  /// that claimed its buffer meanwhile.
  void endMessageLocked(const SlotView& h, DoneList& done);
  /// True when a receive for `tag` is posted.
  bool postedForLocked(Tag tag) const;
  /// Reads a rendezvous message whose receive reduces it a piece at a time through the
  /// transport's bounce buffer, handing each piece to `request->combine`. The peer does not
  /// help: its writes would land unreduced.
  void readCombiningLocked(TransferRequest* request, const Offer& offer, DoneList& done);
  /// Starts a rendezvous message into `request`: a single piece is read and acked at
  /// once; a larger one is shared (RndvShare) and kept in helped_, its pieces read now, on
  /// the next pass when found while posting the receive (deferReads_), or left to the
  /// sender in an exchange (exchangingLocked). checkHelpedLocked acks it once all are in.
  void readRendezvousLocked(TransferRequest* request, const Offer& offer, DoneList& done);
  /// True when this rank is sending to the peer too (a rendezvous send not yet acked) and
  /// the peer writes a message of `bytes` into this rank (leavesExchangeToSender).
  bool exchangingLocked(std::uint64_t bytes) const;
  /// Claims and reads pieces of helped_[id] until none are left. On failure fails the
  /// transport and completes the receive (removed from helped_). True if it read any.
  bool readClaimsLocked(std::size_t id, DoneList& done);
  /// Acks rendezvous message `rndvId` and completes its receive, unless a peer's abort
  /// arrived meanwhile (the peer's pieces may then be missing).
  void finishRendezvousLocked(TransferRequest* request, std::uint64_t rndvId,
                              std::uint64_t rndvSeq, bool helped, DoneList& done);
  /// Writes what this rank may claim of its rendezvous send `id` into the peer's buffer.
  bool helpLocked(std::size_t id, DoneList& done);
  /// Receiver side, on failure: claims every piece left so the peer writes no more, then
  /// waits (bounded) until the pieces it is writing are done, so that the buffer does not
  /// change after its request completes.
  void closeShareLocked(std::size_t rndvId, std::uint64_t chunks);
  /// Copies `bytes` between `local` and `remote` in the peer: through this process's
  /// mapping of the peer's memAlloc buffer `buffer` when there is one (memcpy), else with
  /// process_vm_readv (`read`) or process_vm_writev. The error names the peer (dead:
  /// deathOf) or the system call.
  Status copyWithPeer(bool read, char* local, std::uint64_t remote, std::size_t bytes,
                      std::size_t msgBytes, const BufferRef& buffer) const;
  /// Where `bytes` at `remote` in the peer's buffer `buffer` are mapped here; null: not.
  const char* mappedPeer(const BufferRef& buffer, std::uint64_t remote, std::size_t bytes) const;
  bool checkSizeLocked(TransferRequest* request, std::uint64_t bytes, DoneList& done);
  /// Hands a whole buffered message to `request`: to its combine sink when it has one
  /// (marking it combined), else copied into its buffer.
  static void deliverLocked(TransferRequest* request, const char* bytes, std::size_t count);
  /// True when a point-to-point receive is posted here and not yet matched.
  bool awaitsPointToPointLocked() const;
  /// Removes `it` from unexpected_, keeping its buffer for reuse.
  void recycleLocked(RingQueue<std::unique_ptr<Unexpected>>::iterator it);
  /// True when the outbound ring has a free slot.
  bool roomLocked();
  /// The header of the next outbound slot, written for the next piece (`chunk` bytes) of
  /// `request`, all but its offset and payload.
  SlotHeader* pieceHeaderLocked(const TransferRequest* request, std::size_t chunk);
  /// False for a fed send whose first piece is not in its source yet.
  bool firstPieceFedLocked(const TransferRequest* request) const;
  /// Takes a finished send off the queue and completes it.
  void finishSendLocked(TransferRequest* request, DoneList& done);
  /// Called after a piece of a receive landed where its fed send reads it: raises the
  /// send's fedBytes to `bytes` and copies what its ring has room for.
  void fedLocked(TransferRequest* receive, std::size_t bytes, DoneList& done);
  /// Reduces or copies the arriving piece `h` of streamTo_ (bytes at `src`) straight into a
  /// slot of its fed send's ring, where that send can take it as its next piece now, and
  /// into the receive's destination unless only the send wants it
  /// (TransferRequest::feedsOnly): a reduced piece from the slot, a copied one in the same
  /// pass (Options::copyTwo). False: the piece must land in the destination first.
  bool forwardLocked(const SlotView& h, const char* src, DoneList& done);
  /// The extent that picks the stores of piece h's copy into the receive's destination
  /// (the copy's outputBytes): the message, or the host's outputs unless `readBack`.
  std::size_t copyExtent(const SlotView& h, bool readBack) const;
  /// Send side of forwardLocked: the payload of the free slot that piece `offset` of
  /// `send` (`chunk` bytes) would fill next, its header written; null if it cannot now.
  char* forwardSlotLocked(TransferRequest* send, std::size_t offset, std::size_t chunk);
  /// Publishes the slot forwardSlotLocked gave out, filled, as `send`'s next piece.
  void publishForwardLocked(TransferRequest* send, std::size_t chunk, DoneList& done);
  /// `buffer`: the memAlloc buffer holding the message, if any.
  bool sendRendezvousLocked(TransferRequest* request, const BufferRef& buffer);
  bool sendEagerLocked(TransferRequest* request);
  /// Whether a collective send of `bytes` at `data` is left for the receiver to read in
  /// place (rendezvous) rather than copied through the ring; `*buffer`: the memAlloc buffer
  /// holding it, if any. A function of the message and of settings fixed at creation.
  bool byRendezvous(Tag tag, const void* data, std::size_t bytes, bool preferCopy,
                    BufferRef* buffer) const;
  /// Payload bytes per slot for a message of `msgBytes` through the ring: 32 KiB, doubled
  /// up to the slot's size while the message still fills 2 pieces.
  std::size_t pieceBytes(std::uint64_t msgBytes) const;
  std::string describe(Tag tag) const;
  /// "rank 3", as errors name the peer.
  std::string describePeer() const;

  ShmTransport* owner_;
  const int peer_;
  const Segment* own_;
  const Segment* peerSegment_;
  Ring out_;  // in the peer's segment
  Ring in_;   // in this rank's segment
  std::uint32_t slotBytes_ = 0;
  // send side
  RingQueue<TransferRequest*> sendQueue_;
  // The send whose pieces are in the ring up to its progress, not yet all: nothing else
  // goes into the ring before its last piece (null: none is half-way).
  TransferRequest* outStream_ = nullptr;
  std::uint64_t outHead_ = 0;
  std::uint64_t outTail_ = 0;  // the ring's tail as last read (it only grows)
  std::array<TransferRequest*, kRndvSlots> rndvInflight_{};
  std::array<std::uint64_t, kRndvSlots> rndvSeqs_{};
  std::uint64_t rndvSeq_ = 0;
  std::size_t rndvCount_ = 0;  // non-null entries of rndvInflight_
  // Rendezvous receives read to the end whose peer is still writing pieces, by rndvId.
  /// A shared rendezvous receive (RndvShare) not yet complete: pieces still to claim
  /// (`reads`: this rank reads its claims on its next pass) or that the sender is writing.
  struct Helped {
    TransferRequest* request = nullptr;
    std::uint64_t rndvSeq = 0;
    std::uint64_t chunks = 0;
    std::uint64_t remoteAddr = 0;  // the message in the sender's address space
    BufferRef buffer;              // the sender's memAlloc buffer holding it, if any
    bool reads = false;
  };
  std::array<Helped, kRndvSlots> helped_{};
  std::size_t helpedCount_ = 0;  // non-null requests in helped_
  bool deferReads_ = false;      // while postRecv matches: reads wait for the next pass
  // receive side
  RingQueue<TransferRequest*> posted_;
  RingQueue<std::unique_ptr<Unexpected>> unexpected_;
  std::uint64_t unexpectedBytes_ = 0;
  SparePool<Unexpected> spare_;  // finished records, buffers kept
  std::uint64_t inTail_ = 0;
  // The eager message whose pieces are arriving: into a request, an unexpected buffer, or
  // nowhere (its receive was cancelled).
  TransferRequest* streamTo_ = nullptr;
  bool streamCombine_ = false;  // streamTo_'s pieces go to its combine sink
  Unexpected* streamUnexpected_ = nullptr;
  bool streaming_ = false;
};

}  // namespace tutti::shm
