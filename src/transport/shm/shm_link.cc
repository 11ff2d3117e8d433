// A shared-memory link's receive side and bookkeeping: draining the inbound ring, matching
// a message to its posted receive (or buffering it as unexpected, within the caps and the
// run-ahead allowance), probes and arrivals to the call checker, pieces forwarded straight
// into a fed send, cancel and failure. The send side is shm_link_send.cc's; rendezvous
// messages (copied between the processes directly) are shm_rendezvous.cc's.

#include "transport/shm/shm_link.h"

#include <algorithm>
#include <cstring>

#include "base/assert.h"
#include "base/log.h"
#include "base/pool_growth.h"
#include "base/strings.h"
#include "transport/call_checker.h"
#include "transport/shm/shm_transport.h"

namespace tutti::shm {

ShmLink::ShmLink(ShmTransport* owner, int peer, const Segment* own, const Segment* peerSegment)
    : owner_(owner),
      peer_(peer),
      own_(own),
      peerSegment_(peerSegment),
      out_(peerSegment->ringFrom(owner->rank())),
      in_(own->ringFrom(peer)),
      slotBytes_(owner->layout_.slotBytes) {
  // A transport is built fresh for every communicator: both counters start at zero.
  outTail_ = out_.tail->load(std::memory_order_acquire);
  outHead_ = outTail_;
  inTail_ = in_.tail->load(std::memory_order_acquire);
  // Room for an executor's window of requests and more, so that how many happen to be
  // pending at once never makes a call allocate.
  sendQueue_.reserve(kQueuedRequests);
  posted_.reserve(kQueuedRequests);
}

std::string ShmLink::describe(Tag tag) const {
  return strFormat("message with tag 0x%llx from rank %d", static_cast<unsigned long long>(tag),
                   peer_);
}

std::string ShmLink::describePeer() const { return strFormat("rank %d", peer_); }

// ---- forwarding: a received piece straight into a fed send's slot ------------------------

bool ShmLink::forwardLocked(const SlotView& h, const char* src, DoneList& done) {
  TransferRequest* send = streamTo_->feeds;
  // A piece goes into the send's next slot: reduced there and then, unless the step wants
  // it only for the send (feedsOnly), copied from there into the destination; or copied
  // into the slot and the destination at once.
  const bool reduces = streamTo_->combine != nullptr;
  if (send == nullptr || (reduces && !streamCombine_)) return false;
  auto* to = static_cast<ShmLink*>(send->postedOn);
  char* into = to->forwardSlotLocked(send, h.offset, h.chunkBytes);
  if (into == nullptr) return false;
  // The send goes from the ring, not from dst: this step does not read dst back.
  if (reduces) {
    streamTo_->combine->takeInto(h.offset, src, h.chunkBytes, into);
    if (!streamTo_->feedsOnly) {
      owner_->options_.copy(streamTo_->combine->destination() + h.offset, into, h.chunkBytes,
                            copyExtent(h, false));
    }
  } else {
    // One pass over the piece for both copies, where a memcpy into the ring and then a copy
    // into dst read it twice: 16 MiB all-reduce on 2 cores 1.05x faster at 4 ranks, 1.06x
    // at 8 (scripts/ab_latency.sh -s, 11 rounds, Intel VM).
    owner_->options_.copyTwo(into, streamTo_->data + h.offset, src, h.chunkBytes,
                             copyExtent(h, false));
  }
  to->publishForwardLocked(send, h.chunkBytes, done);
  return true;
}

std::size_t ShmLink::copyExtent(const SlotView& h, bool readBack) const {
  // A destination that a fed send reads next counts as the message alone; any other, the
  // outputs of every rank on the host (TransferRequest::destinationBytes): where together
  // they pass the caches, the copy's non-temporal threshold writes them past.
  if (readBack) return h.msgBytes;
  const std::size_t ranks = owner_->localPeers() + 1;
  return std::max<std::size_t>(h.msgBytes, streamTo_->destinationBytes * ranks);
}

void ShmLink::fedLocked(TransferRequest* receive, std::size_t bytes, DoneList& done) {
  TransferRequest* send = receive->feeds;
  if (send->done() || bytes <= send->fedBytes) return;
  send->fedBytes = bytes;
  static_cast<ShmLink*>(send->postedOn)->pumpSendsLocked(done);
}

// ---- receiving ----------------------------------------------------------------------------

bool ShmLink::checkSizeLocked(TransferRequest* request, std::uint64_t bytes, DoneList& done) {
  if (request->bytes == bytes) return true;
  owner_->failLocked(
      Status(ErrorCode::kMismatch,
             strFormat("rank %d sent %llu bytes under tag 0x%llx where rank %d expected %zu",
                       peer_, static_cast<unsigned long long>(bytes),
                       static_cast<unsigned long long>(request->tag), owner_->rank(),
                       request->bytes),
             peer_),
      done);
  return false;
}

void ShmLink::deliverLocked(TransferRequest* request, const char* bytes, std::size_t count) {
  if (request->combine != nullptr) {
    if (count > 0) request->combine->take(0, bytes, count);
    request->combined = true;
  } else if (count > 0) {
    std::memcpy(request->data, bytes, count);
  }
}

void ShmLink::postRecv(TransferRequest* request, Tag tag, void* data, std::size_t bytes) {
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(owner_->mutex_);
    if (isCollectiveTag(tag)) owner_->noteCallLocked(tag);
    request->tag = tag;
    request->data = static_cast<char*>(data);
    request->bytes = bytes;
    request->progress = 0;
    request->state.store(TransferRequest::kPending, std::memory_order_relaxed);
    auto it = std::find_if(unexpected_.begin(), unexpected_.end(), [&](const auto& u) {
      return u->tag == tag && u->claimedBy == nullptr;
    });
    if (owner_->failed_) {
      completeLocked(request, owner_->health_, done);
    } else if (it == unexpected_.end()) {
      posted_.push_back(request);
      deferReads_ = true;
      drainLocked(done);
      deferReads_ = false;
    } else if (stampsConflict((*it)->stamp, request->stamp)) {
      // The executor words the error and fails the transport; the message stays unread.
      completeLocked(request, stampMismatch(request, peer_, describePeer(), (*it)->stamp), done);
    } else if (!checkSizeLocked(request, (*it)->bytes, done)) {
      completeLocked(request, owner_->health_, done);
    } else {
      Unexpected& u = **it;
      if (u.rendezvous) {
        const Offer offer = u.offer;
        recycleLocked(it);
        deferReads_ = true;
        readRendezvousLocked(request, offer, done);
        deferReads_ = false;
      } else if (u.received < u.bytes) {
        u.claimedBy = request;  // completed when its last piece arrives
      } else {
        deliverLocked(request, u.data.data(), u.bytes);
        unexpectedBytes_ -= u.bytes;
        recycleLocked(it);
        completeLocked(request, Status::Ok(), done);
        drainLocked(done);  // room may have been waiting for
      }
    }
  }
  owner_->finish(done);
}

void ShmLink::recycleLocked(RingQueue<std::unique_ptr<Unexpected>>::iterator it) {
  std::unique_ptr<Unexpected> u = std::move(*it);
  unexpected_.erase(it);
  spare_.give(std::move(u), owner_->options_.maxUnexpectedBytes);
}

bool ShmLink::awaitsPointToPointLocked() const {
  return std::any_of(posted_.begin(), posted_.end(),
                     [](const TransferRequest* r) { return isP2pTag(r->tag); });
}

bool ShmLink::postedForLocked(Tag tag) const {
  return std::any_of(posted_.begin(), posted_.end(),
                     [&](const TransferRequest* r) { return r->tag == tag; });
}

bool ShmLink::arrivalAgreesLocked(const SlotView& h, DoneList& done) {
  CallChecker* checker = owner_->callChecker();
  if (checker == nullptr) return true;
  Status conflict = checker->onArrival(peer_, h.tag, h.stamp);
  if (conflict.ok()) return true;
  owner_->failLocked(conflict, done);
  return false;
}

void ShmLink::dropMessageLocked(const SlotView& h) {
  streamTo_ = nullptr;
  streamUnexpected_ = nullptr;
  streaming_ = h.kind == SlotKind::kData;
}

bool ShmLink::takeProbeLocked(const SlotView& h, DoneList& done) {
  static std::atomic<bool> taken{false};
  markFirstTime(taken);  // code no call runs until a peer waits long (pool_growth.h)
  if (!arrivalAgreesLocked(h, done)) return false;
  dropMessageLocked(h);  // its one empty piece is consumed as a message nobody receives
  return true;
}

bool ShmLink::startMessageLocked(const SlotView& h, DoneList& done) {
  if (isProbeTag(h.tag)) return takeProbeLocked(h, done);
  auto it = std::find_if(posted_.begin(), posted_.end(),
                    [&](const TransferRequest* r) { return r->tag == h.tag; });
  if (it != posted_.end()) return startMatchedLocked(h, it, done);
  // Unexpected: nobody may ever receive it (another call here), so the checker looks at it
  // now. A message that matched a receive was checked against that receive's stamp, which
  // is this rank's call for the same sequence number; the checker would repeat it.
  if (!arrivalAgreesLocked(h, done)) return false;
  if (h.kind == SlotKind::kRndv) {
    std::unique_ptr<Unexpected> u = spare_.take(0);
    u->tag = h.tag;
    u->stamp = h.stamp;
    u->bytes = h.msgBytes;
    u->rendezvous = true;
    u->offer = Offer{h.remoteAddr, h.rndvId, h.rndvSeq, h.buffer};
    pushEarly(unexpected_, std::move(u));
    return true;
  }
  if (!mayBufferLocked(h)) return false;
  std::unique_ptr<Unexpected> u = spare_.take(h.msgBytes);
  u->tag = h.tag;
  u->stamp = h.stamp;
  u->bytes = h.msgBytes;
  unexpectedBytes_ += h.msgBytes;
  streamUnexpected_ = u.get();
  streamTo_ = nullptr;
  streaming_ = true;
  pushEarly(unexpected_, std::move(u));
  return true;
}

bool ShmLink::startMatchedLocked(const SlotView& h, RingQueue<TransferRequest*>::iterator it,
                                 DoneList& done) {
  TransferRequest* request = *it;
  if (stampsConflict(h.stamp, request->stamp)) {
    // Refused before a byte lands in the receiver's buffer; the pieces that follow are
    // dropped (a rendezvous send is never acknowledged: its sender learns of the failure).
    posted_.erase(it);
    completeLocked(request, stampMismatch(request, peer_, describePeer(), h.stamp), done);
    dropMessageLocked(h);
    return true;
  }
  if (!checkSizeLocked(request, h.msgBytes, done)) return false;
  // Usually the oldest receive: popping it is cheaper than a general erase.
  if (it == posted_.begin())
    posted_.pop_front();
  else
    posted_.erase(it);
  if (h.kind == SlotKind::kRndv) {
    readRendezvousLocked(request, Offer{h.remoteAddr, h.rndvId, h.rndvSeq, h.buffer}, done);
    return !owner_->failed_;
  }
  streamTo_ = request;
  // Pieces start at multiples of the slot size and end there or at the message's end (a
  // multiple of the granule, being the receive's length): whole elements when the slot
  // holds whole elements.
  streamCombine_ = request->combine != nullptr && slotBytes_ % request->combine->granule() == 0;
  streamUnexpected_ = nullptr;
  streaming_ = true;
  return true;
}

bool ShmLink::mayBufferLocked(const SlotView& h) const {
  // Past the cap the ring is left full: the sender waits until receives are posted. Payloads
  // and entries both count (empty messages are held to the cap too); the first message is
  // always let in, as a message larger than the cap must be.
  if (unexpectedBytes_ + h.msgBytes + unexpected_.size() * kEntryBytes + kEntryBytes >
          owner_->options_.maxUnexpectedBytes &&
      !unexpected_.empty())
    return false;
  // Past the run-ahead allowance, a message of a collective call later than the last one
  // this rank has posted a receive for waits in the ring too: the sender (a reduce's leaf,
  // which sends and leaves) stops there instead of filling buffers that miss the cache.
  // It is let in when this rank posts a receive of that call, or any point-to-point
  // receive from this peer (which may sit behind it). No deadlock: one communicator runs
  // its calls in the same order on every rank, so whatever this rank's current call still
  // waits for was sent before the held message, by ranks in calls no later than this one.
  const std::uint64_t runAhead = owner_->options_.runAheadBytes;
  const std::uint64_t runAheadCount = owner_->options_.runAheadMessages;
  const bool pastAllowance =
      (runAhead > 0 && unexpectedBytes_ > 0 && unexpectedBytes_ + h.msgBytes > runAhead) ||
      (runAheadCount > 0 && unexpected_.size() >= runAheadCount);
  return !(pastAllowance && owner_->hasCall_ && isEarlierCall(owner_->lastCall_, h.tag) &&
           !awaitsPointToPointLocked());
}

bool ShmLink::drainLocked(DoneList& done) {
  bool moved = false;
  const std::size_t doneBefore = done.size();
  while (!owner_->failed_ && in_.published(inTail_)) {
    const SlotView h = in_.read(inTail_);
    if (h.kind != SlotKind::kData && h.kind != SlotKind::kRndv) {
      owner_->failLocked(Status(ErrorCode::kProtocolError,
                                strFormat("rank %d's ring holds a slot of unknown kind %u", peer_,
                                          static_cast<unsigned>(h.kind)),
                                peer_),
                         done);
      break;
    }
    const bool first = h.kind == SlotKind::kRndv || h.offset == 0;
    if (first && !streaming_) {
      // A receive completed in this pass: its poster usually posts the next one as soon as
      // the pass ends, so a message that nobody waits for yet stays in the ring until then
      // instead of being copied into a buffer and out again. The next pass takes it either
      // way (buffered if still unexpected), so nothing waits on it for more than a pass.
      if (done.size() > doneBefore && !postedForLocked(h.tag)) break;
      if (!startMessageLocked(h, done)) break;
    }
    if (h.kind == SlotKind::kData && !takePieceLocked(h, done)) break;
    in_.tail->store(++inTail_, std::memory_order_seq_cst);  // see wakeIfSleeping
    moved = true;
  }
  if (moved) peerSegment_->wakeIfSleeping();  // the sender may be waiting for room
  return moved;
}

bool ShmLink::takePieceLocked(const SlotView& h, DoneList& done) {
  if (h.chunkBytes > slotBytes_ || h.offset + h.chunkBytes > h.msgBytes) {
    owner_->failLocked(Status(ErrorCode::kProtocolError,
                              strFormat("rank %d's ring holds a malformed piece of a %s",
                                        peer_, describe(h.tag).c_str()),
                              peer_),
                       done);
    return false;
  }
  const char* src = h.data;
  if (streamTo_ != nullptr && h.chunkBytes > 0 && forwardLocked(h, src, done)) {
    // Reduced straight into the fed send's slot.
  } else if (streamTo_ != nullptr && h.chunkBytes > 0) {
    if (streamCombine_)
      streamTo_->combine->take(h.offset, src, h.chunkBytes);
    else
      owner_->options_.copy(streamTo_->data + h.offset, src, h.chunkBytes,
                            copyExtent(h, streamTo_->feeds != nullptr));
    // Where the piece landed where its fed send reads (not a staging buffer), the send
    // copies it on while it is in cache.
    if (streamTo_->feeds != nullptr && (streamCombine_ || streamTo_->combine == nullptr))
      fedLocked(streamTo_, h.offset + h.chunkBytes, done);
  } else if (streamUnexpected_ != nullptr && h.chunkBytes > 0) {
    std::memcpy(streamUnexpected_->data.data() + h.offset, src, h.chunkBytes);
  }
  if (h.offset + h.chunkBytes >= h.msgBytes)
    endMessageLocked(h, done);
  else if (streamUnexpected_ != nullptr)
    streamUnexpected_->received = h.offset + h.chunkBytes;
  return true;
}

void ShmLink::endMessageLocked(const SlotView& h, DoneList& done) {
  if (streamTo_ != nullptr) {
    streamTo_->combined = streamCombine_;
    completeLocked(streamTo_, Status::Ok(), done);
  }
  if (streamUnexpected_ != nullptr) {
    streamUnexpected_->received = h.msgBytes;
    TransferRequest* claimed = streamUnexpected_->claimedBy;
    if (claimed != nullptr) {
      deliverLocked(claimed, streamUnexpected_->data.data(), h.msgBytes);
      unexpectedBytes_ -= h.msgBytes;
      auto it = std::find_if(unexpected_.begin(), unexpected_.end(),
                             [&](const auto& u) { return u.get() == streamUnexpected_; });
      recycleLocked(it);
      completeLocked(claimed, Status::Ok(), done);
    }
  }
  streamTo_ = nullptr;
  streamUnexpected_ = nullptr;
  streaming_ = false;
}

// ---- bookkeeping --------------------------------------------------------------------------

void ShmLink::cancel(TransferRequest* request) {
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(owner_->mutex_);
    if (request->done()) return;
    auto posted = std::find(posted_.begin(), posted_.end(), request);
    if (posted != posted_.end()) posted_.erase(posted);
    if (streamTo_ == request) streamTo_ = nullptr;  // the rest of it is dropped
    for (std::size_t id = 0; id < kRndvSlots; ++id) {
      if (helped_[id].request != request) continue;
      // Read, but the peer may still be writing its pieces: stop it, then fail (the message
      // was taken, so the sender would wait for an ack that never comes).
      closeShareLocked(id, helped_[id].chunks);
      helped_[id].request = nullptr;
      --helpedCount_;
      owner_->failLocked(Status(ErrorCode::kAborted,
                                strFormat("a receive from rank %d was cancelled while the "
                                          "rank wrote into it", peer_)),
                         done);
    }
    for (auto& u : unexpected_) {
      if (u->claimedBy == request) u->claimedBy = nullptr;
    }
    if (outStream_ == request) outStream_ = nullptr;
    auto queued = std::find(sendQueue_.begin(), sendQueue_.end(), request);
    if (queued != sendQueue_.end()) {
      const bool begun = request->progress > 0;
      sendQueue_.erase(queued);
      // Part of it is in the ring: the peer would take what follows for the rest.
      if (begun)
        owner_->failLocked(Status(ErrorCode::kAborted,
                                  strFormat("a send to rank %d was cancelled half-way", peer_)),
                           done);
    }
    for (std::size_t id = 0; id < kRndvSlots; ++id) {
      if (rndvInflight_[id] != request) continue;
      rndvInflight_[id] = nullptr;
      --rndvCount_;
      // The peer may be reading the buffer right now; only a failed transport makes that
      // harmless (its operation fails too).
      owner_->failLocked(Status(ErrorCode::kAborted,
                                strFormat("a send to rank %d was cancelled while it could be "
                                          "reading it", peer_)),
                         done);
    }
    if (!request->done()) completeLocked(request, Status(ErrorCode::kAborted, "transfer cancelled"), done);
  }
  owner_->finish(done);
}

bool ShmLink::needsPeerLocked() const {
  return !posted_.empty() || streaming_ || sendsPendingLocked() || helpedCount_ > 0 ||
         std::any_of(unexpected_.begin(), unexpected_.end(),
                     [](const auto& u) { return u->claimedBy != nullptr; });
}

bool ShmLink::sendsPendingLocked() const {
  return !sendQueue_.empty() || rndvCount_ > 0;
}

void ShmLink::failAllLocked(const Status& status, DoneList& done) {
  for (TransferRequest* r : sendQueue_) completeLocked(r, status, done);
  sendQueue_.clear();
  outStream_ = nullptr;
  for (TransferRequest*& r : rndvInflight_) {
    if (r != nullptr) completeLocked(r, status, done);
    r = nullptr;
  }
  rndvCount_ = 0;
  for (std::size_t id = 0; id < kRndvSlots; ++id) {
    Helped& h = helped_[id];
    if (h.request == nullptr) continue;
    closeShareLocked(id, h.chunks);
    completeLocked(h.request, status, done);
    h.request = nullptr;
  }
  helpedCount_ = 0;
  for (TransferRequest* r : posted_) completeLocked(r, status, done);
  posted_.clear();
  if (streamTo_ != nullptr) completeLocked(streamTo_, status, done);
  streamTo_ = nullptr;
  for (auto& u : unexpected_) {
    if (u->claimedBy != nullptr) completeLocked(u->claimedBy, status, done);
    u->claimedBy = nullptr;
  }
}

}  // namespace tutti::shm
