// A shared-memory link's send side: queued sends copied into the peer's ring a piece at a
// time (or a whole message described in one slot, for rendezvous), fed sends whose source
// fills in while they are pending, the slots a forwarded piece goes into, and the acks
// that complete rendezvous sends. Receiving and matching are shm_link.cc's, rendezvous
// copies shm_rendezvous.cc's.

#include <algorithm>
#include <cstring>
#include <limits>

#include "base/assert.h"
#include "transport/shm/shm_link.h"
#include "transport/shm/shm_transport.h"

namespace tutti::shm {

void ShmLink::postSend(TransferRequest* request, Tag tag, const void* data, std::size_t bytes) {
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(owner_->mutex_);
    request->tag = tag;
    request->data = const_cast<char*>(static_cast<const char*>(data));
    request->bytes = bytes;
    request->progress = 0;
    request->postedOn = this;
    request->state.store(TransferRequest::kPending, std::memory_order_relaxed);
    if (owner_->failed_) {
      completeLocked(request, owner_->health_, done);
    } else {
      sendQueue_.push_back(request);
      pumpSendsLocked(done);
    }
  }
  owner_->finish(done);
}

bool ShmLink::roomLocked() {
  if (outHead_ - outTail_ < out_.count) return true;
  // Read only when the last value read says the ring is full: reading it pulls its cache
  // line over from the receiver, which writes it for every slot it frees.
  outTail_ = out_.tail->load(std::memory_order_seq_cst);  // see wakeIfSleeping
  return outHead_ - outTail_ < out_.count;
}

bool ShmLink::sendRendezvousLocked(TransferRequest* request, const BufferRef& buffer) {
  std::size_t id = 0;
  while (id < kRndvSlots && rndvInflight_[id] != nullptr) ++id;
  if (id == kRndvSlots) return false;  // wait for acks
  if (!roomLocked()) return false;
  SlotHeader* h = out_.header(outHead_);
  h->tag = request->tag;
  h->msgBytes = request->bytes;
  h->offset = 0;
  h->chunkBytes = 0;
  h->kind = SlotKind::kRndv;
  h->remoteAddr = reinterpret_cast<std::uint64_t>(request->data);
  h->buffer = buffer;
  h->rndvId = static_cast<std::uint16_t>(id);
  h->setStamp(request->stamp);
  h->rndvSeq = ++rndvSeq_;
  rndvInflight_[id] = request;
  ++rndvCount_;
  rndvSeqs_[id] = h->rndvSeq;
  h->seq.store(++outHead_, std::memory_order_seq_cst);  // publishes; see wakeIfSleeping
  return true;
}

std::size_t ShmLink::pieceBytes(std::uint64_t msgBytes) const {
  // A piece is copied in by the sender while the receiver copies out or reduces the one
  // before: small pieces pipeline a mid-size message, large ones cost fewer publications
  // per byte. Powers of two, so every piece but the last holds whole elements. Two pieces
  // per message at least (with 256 KiB slots, between 2 ranks): alternating runs against
  // 16 (scripts/ab_latency.sh -r 11, 2 ranks), all-gather and all-to-all 1 MiB 0.91-0.92;
  // -r 5: gather 1 MiB 0.86, broadcast 256 KiB 0.92, reduce-scatter 1 MiB 0.95,
  // all-reduce 1 MiB 0.98, 512 KiB 0.95; level (within the noise, 0.95-1.06) at 512 KiB
  // and 4 MiB, where the pieces are the same. With slots of 32 KiB (more ranks) nothing
  // changes.
  constexpr std::size_t kSmallPiece = 32u << 10;
  constexpr std::uint64_t kPiecesPerMessage = 2;
  if (slotBytes_ <= kSmallPiece) return slotBytes_;
  std::size_t piece = kSmallPiece;
  while (piece * 2 <= slotBytes_ && piece * 2 * kPiecesPerMessage <= msgBytes) piece *= 2;
  return piece;
}

SlotHeader* ShmLink::pieceHeaderLocked(const TransferRequest* request, std::size_t chunk) {
  SlotHeader* h = out_.header(outHead_);
  h->tag = request->tag;
  h->msgBytes = request->bytes;
  h->chunkBytes = static_cast<std::uint32_t>(chunk);
  h->kind = SlotKind::kData;
  if (request->progress == 0) h->setStamp(request->stamp);
  return h;
}

// Returns true once the whole message is in the ring.
bool ShmLink::sendEagerLocked(TransferRequest* request) {
  while (true) {
    if (!roomLocked()) return false;
    const std::size_t chunk =
        std::min<std::size_t>(pieceBytes(request->bytes), request->bytes - request->progress);
    if (request->fed && request->progress + chunk > request->fedBytes) return false;
    SlotHeader* h = pieceHeaderLocked(request, chunk);
    if (request->bytes <= kInlineBytes) {
      // The whole message in the header's first line: the second is left alone.
      if (chunk > 0) std::memcpy(h->inlineData, request->data, chunk);
    } else {
      h->offset = request->progress;
      char* slot = out_.payload(outHead_);
      const char* from = request->data + request->progress;
      const std::uint64_t streamFrom = owner_->streamedFrom();
      if (request->streamPieces && streamFrom != 0 && request->bytes >= streamFrom) {
        // Past the caches (TransferRequest::streamPieces): the copy routine streams what it
        // is told is part of a large output.
        constexpr std::size_t kLarge = std::numeric_limits<std::size_t>::max();
        owner_->options_.copy(slot, from, chunk, kLarge);
        if (request->mirror != nullptr)
          owner_->options_.copy(request->mirror + request->progress, from, chunk,
                                request->bytes);
      } else if (request->mirror != nullptr) {
        // One pass over the source writes the slot and the mirror, and the piece is published
        // after both. Copying the slot, publishing, then writing the mirror from cache took
        // 1.33 times as long for a 2-rank all-gather of 64 MiB (streaming mirror, AMD EPYC
        // VM), and copying both before publishing 1.18; at 1 and 8 MiB (two memcpys
        // either way) 0.99 and 0.96 of the time.
        owner_->options_.copyTwo(slot, request->mirror + request->progress, from, chunk,
                                 request->bytes);
      } else {
        std::memcpy(slot, from, chunk);
      }
    }
    h->seq.store(++outHead_, std::memory_order_seq_cst);  // publishes; see wakeIfSleeping
    if (request->mirror != nullptr && chunk > 0 && request->bytes <= kInlineBytes)
      std::memcpy(request->mirror, request->data, chunk);
    // The next slot's header: the receiver read it a lap ago, so its line is shared; ask
    // for it exclusive now rather than wait on the invalidation when publishing into it.
    prefetchForWrite(out_.header(outHead_));
    request->progress += chunk;
    if (request->progress >= request->bytes) {
      request->mirrored = request->mirror != nullptr;
      return true;
    }
  }
}

bool ShmLink::byRendezvous(Tag tag, const void* data, std::size_t bytes, bool preferCopy,
                           BufferRef* buffer) const {
  const ShmTransport::Options& o = owner_->options_;
  const std::uint64_t cma = owner_->cmaFrom_ == 0 ? UINT64_MAX : owner_->cmaFrom_;
  const std::uint64_t mapped = o.mappedBytes == 0 ? UINT64_MAX : o.mappedBytes;
  if (!isCollectiveTag(tag) || bytes < std::min(cma, mapped) || !owner_->rendezvousTo(peer_))
    return false;
  *buffer = findUserBuffer(data, bytes);
  return buffer->valid() ? bytes >= mapped : bytes >= cma && !preferCopy;
}

bool ShmLink::copiesSend(Tag tag, const void* data, std::size_t bytes, bool preferCopy) const {
  BufferRef buffer;
  return !byRendezvous(tag, data, bytes, preferCopy, &buffer);
}

bool ShmLink::firstPieceFedLocked(const TransferRequest* request) const {
  return !request->fed ||
         request->fedBytes >= std::min<std::size_t>(pieceBytes(request->bytes), request->bytes);
}

void ShmLink::finishSendLocked(TransferRequest* request, DoneList& done) {
  auto it = std::find(sendQueue_.begin(), sendQueue_.end(), request);
  TUTTI_ASSERT(it != sendQueue_.end());
  sendQueue_.erase(it);
  completeLocked(request, Status::Ok(), done);
}

bool ShmLink::pumpSendsLocked(DoneList& done) {
  bool moved = false;
  // A message's pieces follow each other in the ring: one that is half-way goes on first.
  if (outStream_ != nullptr) {
    TransferRequest* request = outStream_;
    const std::size_t before = request->progress;
    const bool whole = sendEagerLocked(request);
    moved = request->progress != before;
    if (whole) {
      outStream_ = nullptr;
      finishSendLocked(request, done);  // the bytes are in the ring
    }
  }
  std::size_t i = 0;
  while (outStream_ == nullptr && i < sendQueue_.size()) {
    TransferRequest* request = sendQueue_[i];
    // A fed send waits for its first piece without holding up the sends behind it: they
    // may be what the peers need to produce it.
    if (!firstPieceFedLocked(request)) {
      ++i;
      continue;
    }
    // A user's point-to-point send must complete without its receive (it may be queued
    // behind that send on the peer, as in a ring of send-then-receive): those are always
    // copied. A collective's schedule is verified to progress with no buffering at all,
    // so its large messages may wait for their receive.
    //
    // A send from a memAlloc buffer goes by rendezvous from mappedBytes (lower than cmaBytes)
    // and even when it prefers a copy (its receiver reduces it): the receiver reads or
    // reduces it straight from its mapping, one pass over the data where the ring takes two.
    // A fed send is never sent by rendezvous (canFeed).
    BufferRef buffer;
    const bool rendezvous = !request->fed &&
                            byRendezvous(request->tag, request->data, request->bytes,
                                         request->preferCopy, &buffer);
    if (rendezvous) {
      if (!sendRendezvousLocked(request, buffer)) break;
      sendQueue_.erase(RingQueue<TransferRequest*>::const_iterator(&sendQueue_, i));
      moved = true;
      continue;
    }
    const std::uint64_t headBefore = outHead_;
    const bool whole = sendEagerLocked(request);
    moved = moved || outHead_ != headBefore;
    if (!whole) {
      if (request->progress > 0) outStream_ = request;
      break;
    }
    finishSendLocked(request, done);  // the bytes are in the ring
  }
  if (moved) peerSegment_->wakeIfSleeping();  // its spin watches the slots
  return moved;
}

bool ShmLink::canFeed(const Link& to, Tag tag, const void* data, std::size_t bytes,
                      bool preferCopy) const {
  const auto* link = dynamic_cast<const ShmLink*>(&to);
  return link != nullptr && link->owner_ == owner_ && isCollectiveTag(tag) &&
         link->copiesSend(tag, data, bytes, preferCopy);
}

void ShmLink::feed(TransferRequest* request, std::size_t bytes) {
  DoneList done;
  {
    std::lock_guard<SpinLock> lock(owner_->mutex_);
    if (!request->done() && bytes > request->fedBytes) {
      request->fedBytes = bytes;
      pumpSendsLocked(done);
    }
  }
  owner_->finish(done);
}

char* ShmLink::forwardSlotLocked(TransferRequest* send, std::size_t offset, std::size_t chunk) {
  // The piece must be the send's next, cut as the send would cut it, with nothing else
  // half-way through the ring and a slot free.
  if (send->done() || send->progress != offset || send->bytes <= kInlineBytes ||
      (outStream_ != send && outStream_ != nullptr) ||
      chunk != std::min<std::size_t>(pieceBytes(send->bytes), send->bytes - send->progress) ||
      !roomLocked())
    return nullptr;
  pieceHeaderLocked(send, chunk)->offset = send->progress;
  return out_.payload(outHead_);
}

void ShmLink::publishForwardLocked(TransferRequest* send, std::size_t chunk, DoneList& done) {
  SlotHeader* h = out_.header(outHead_);
  h->seq.store(++outHead_, std::memory_order_seq_cst);  // publishes; see wakeIfSleeping
  prefetchForWrite(out_.header(outHead_));
  send->progress += chunk;
  send->fedBytes = send->progress;  // what was forwarded counts as fed
  if (send->progress >= send->bytes) {
    if (outStream_ == send) outStream_ = nullptr;
    finishSendLocked(send, done);
  } else {
    outStream_ = send;
  }
  peerSegment_->wakeIfSleeping();
}

bool ShmLink::checkAcksLocked(DoneList& done) {
  if (rndvCount_ == 0) return false;
  bool moved = false;
  const bool helps = owner_->helpsWrite(peer_);
  for (std::size_t id = 0; id < kRndvSlots && !owner_->failed_; ++id) {
    TransferRequest* request = rndvInflight_[id];
    if (request == nullptr) continue;
    if (helps && helpLocked(id, done)) moved = true;
    if (owner_->failed_) break;
    if (own_->ack(peer_, id).load(std::memory_order_acquire) != rndvSeqs_[id]) continue;
    rndvInflight_[id] = nullptr;
    --rndvCount_;
    completeLocked(request, Status::Ok(), done);
    moved = true;
  }
  return moved;
}

}  // namespace tutti::shm
